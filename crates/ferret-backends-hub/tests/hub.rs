//! The hub backends against a local mock server: the requests they send (parameters, token,
//! pagination by `Link` header and by cursor, lookup by hash) and what they make of the answers,
//! files lacking sizes or hashes included. The finder's behaviour over both hubs, faults
//! included, is the facade's `find_model` fixture test.

use std::time::Duration;

use ferret_backends_hub::{
    ApiKey, CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig, ModelFile,
    ModelSource, ModelType,
};
use ferret_core::{
    hash_query, BackendErrorKind, Gate, SearchBackend, SearchOptions, SearchRequest,
};
use serde_json::json;
use wiremock::matchers::{header, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "hf_test_token_5c1d";

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        limit: 20,
        filters: Default::default(),
        options: SearchOptions::default(),
        text_for: None,
    }
}

fn files(hits: &[ferret_core::Hit]) -> Vec<ModelFile> {
    hits.iter()
        .map(|h| ModelFile::from_hit(h).expect("a hub hit carries its file"))
        .collect()
}

fn hub(server: &MockServer, token: Option<ApiKey>) -> HuggingFaceBackend {
    HuggingFaceBackend::new(HuggingFaceConfig {
        base_url: server.uri(),
        timeout: Duration::from_secs(5),
        ..HuggingFaceConfig::with_token(token)
    })
    .unwrap()
}

fn civitai(server: &MockServer) -> CivitaiBackend {
    CivitaiBackend::new(CivitaiConfig {
        base_url: server.uri(),
        timeout: Duration::from_secs(5),
        ..CivitaiConfig::with_key(None)
    })
    .unwrap()
}

#[tokio::test]
async fn the_hub_is_searched_with_its_parameters_and_the_token_and_follows_link_pages() {
    let server = MockServer::start().await;
    let next = format!(
        "<{}/api/models?search=sdxl+vae&cursor=Mg>; rel=\"next\"",
        server.uri()
    );
    Mock::given(method("GET"))
        .and(path("/api/models"))
        .and(query_param("cursor", "Mg"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": "org/second", "tags": ["lora", "base_model:adapter:stabilityai/stable-diffusion-xl-base-1.0"],
             "siblings": [{"rfilename": "second.safetensors"}]}
        ])))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/models"))
        .and(query_param("search", "sdxl vae"))
        .and(query_param("sort", "downloads"))
        .and(query_param("direction", "-1"))
        .and(query_param("limit", "20"))
        .and(query_param("full", "true"))
        .and(query_param_is_missing("cursor"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("link", next.as_str())
                .set_body_json(json!([
                    {"id": "madebyollin/sdxl-vae-fp16-fix", "gated": false, "tags": ["diffusers"],
                     "siblings": [{"rfilename": "README.md"}, {"rfilename": "sdxl_vae.safetensors"},
                                  {"rfilename": "vae/diffusion_pytorch_model.bin"}]}
                ])),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/models/madebyollin/sdxl-vae-fp16-fix/tree/main"))
        .and(query_param("recursive", "true"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"type": "file", "path": "README.md", "size": 2411},
            {"type": "file", "path": "sdxl_vae.safetensors", "size": 334641164,
             "lfs": {"oid": "1B909373B28F2137098B0FD9DBC6F97F8410854F31F84DDC9FA04B077B0ACE2C", "size": 334641164}},
            {"type": "file", "path": "vae/diffusion_pytorch_model.bin"},
            {"type": "directory", "path": "vae"}
        ])))
        .mount(&server)
        .await;
    let token = ApiKey::new(TOKEN, "HF_TOKEN");
    let backend = hub(&server, Some(token));
    let hits = backend.search(&request("sdxl vae")).await.unwrap();
    let found = files(&hits);
    let names: Vec<&str> = found.iter().map(|f| f.file_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sdxl_vae.safetensors",
            "diffusion_pytorch_model.bin",
            "second.safetensors"
        ]
    );
    let vae = &found[0];
    assert_eq!(vae.size_bytes, Some(334641164));
    assert_eq!(
        vae.sha256.as_deref(),
        Some("1b909373b28f2137098b0fd9dbc6f97f8410854f31f84ddc9fa04b077b0ace2c")
    );
    assert_eq!(vae.model_type, Some(ModelType::Vae));
    assert_eq!(
        vae.download_url.as_deref(),
        Some(
            format!(
                "{}/madebyollin/sdxl-vae-fp16-fix/resolve/main/sdxl_vae.safetensors",
                server.uri()
            )
            .as_str()
        )
    );
    // A file the list gives without size or hash keeps neither, and its folder names its type.
    assert_eq!(
        (found[1].size_bytes, found[1].sha256.as_deref()),
        (None, None)
    );
    assert_eq!(
        found[1].path.as_deref(),
        Some("vae/diffusion_pytorch_model.bin")
    );
    // The second page's repository: a LoRA, for the base model its tags name.
    assert_eq!(found[2].model_type, Some(ModelType::Lora));
    assert_eq!(
        found[2].base_model.as_deref(),
        Some("stabilityai/stable-diffusion-xl-base-1.0")
    );
    // Each file has an address of its own, so no two are taken for one result.
    let mut addresses: Vec<_> = hits.iter().map(|h| h.url.clone()).collect();
    addresses.dedup();
    assert_eq!(addresses.len(), hits.len());
    assert!(
        !format!("{backend:?}").contains(TOKEN),
        "the token stays secret"
    );
}

#[tokio::test]
async fn a_gated_repository_keeps_its_file_names_and_says_what_it_needs() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": "black-forest-labs/FLUX.1-dev", "gated": "auto", "siblings": [{"rfilename": "flux1-dev.safetensors"}]},
            {"id": "org/approved-only", "gated": "manual", "siblings": [{"rfilename": "x.gguf"}]}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/models/black-forest-labs/FLUX.1-dev/tree/main"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("x-error-code", "GatedRepo")
                .set_body_string("{\"error\": \"Access to model is restricted.\"}"),
        )
        .mount(&server)
        .await;
    let found = files(
        &hub(&server, None)
            .search(&request("flux1-dev"))
            .await
            .unwrap(),
    );
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].gate, Some(Gate::AcceptLicence));
    assert_eq!(found[0].size_bytes, None);
    assert_eq!(found[1].gate, Some(Gate::OwnerApproval));
}

#[tokio::test]
async fn the_hub_answers_a_rate_limit_with_its_ratelimit_header_wait() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("ratelimit", "\"api\";r=0;t=42"))
        .mount(&server)
        .await;
    let error = hub(&server, None).search(&request("x")).await.unwrap_err();
    assert_eq!(error.kind, BackendErrorKind::RateLimited);
    assert_eq!(
        error.retry,
        ferret_core::RetryClass::RateLimited {
            retry_after: Some(Duration::from_secs(42))
        }
    );
    // The Hub has no lookup by hash: such a query asks it nothing.
    let none = hub(&server, None)
        .search(&request(&hash_query(&"a".repeat(64))))
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn civitai_is_searched_by_query_and_type_and_follows_its_cursor() {
    let server = MockServer::start().await;
    let version = |id: u64, name: &str, file: serde_json::Value| {
        json!({"id": id, "modelId": 1, "name": name, "baseModel": "SDXL 1.0", "files": [file],
               "downloadUrl": format!("https://civitai.com/api/download/models/{id}")})
    };
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .and(query_param("cursor", "2|99"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "items": [{"id": 2, "name": "Second", "type": "LORA", "modelVersions": [
                version(20, "v2", json!({"name": "second.safetensors"}))]}],
            "metadata": {}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .and(query_param("query", "detail tweaker"))
        .and(query_param("types", "LORA"))
        // A LoRA loader loads LoCon and DoRA files too.
        .and(query_param("types", "LoCon"))
        .and(query_param("types", "DoRA"))
        .and(query_param("limit", "20"))
        .and(query_param_is_missing("page"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "items": [{"id": 1, "name": "Detail Tweaker XL", "type": "LORA", "modelVersions": [
                version(10, "v1.0", json!({"name": "add-detail-xl.safetensors", "sizeKB": 223101.6,
                    "hashes": {"SHA256": "0D9BD1B873A7863E128E0B8D2AB9F4AD0F1FA2A0A7F1E12B6E0A4C7AC9F5A0B1"},
                    "downloadUrl": "https://civitai.com/api/download/models/10?type=Model&format=SafeTensor"})),
                version(11, "v0.9", json!({"name": "notes.txt"}))]}],
            "metadata": {"nextCursor": "2|99"}
        })))
        .mount(&server)
        .await;
    let mut asked = request("detail tweaker");
    asked.options.model_type = Some(ModelType::Lora);
    let found = files(&civitai(&server).search(&asked).await.unwrap());
    let names: Vec<&str> = found.iter().map(|f| f.file_name.as_str()).collect();
    assert_eq!(names, ["add-detail-xl.safetensors", "second.safetensors"]);
    let lora = &found[0];
    assert_eq!(lora.source, ModelSource::Civitai);
    assert_eq!(lora.model_type, Some(ModelType::Lora));
    assert_eq!(lora.base_model.as_deref(), Some("SDXL 1.0"));
    assert_eq!(lora.size_bytes, Some(228456038));
    assert_eq!(
        lora.sha256.as_deref(),
        Some("0d9bd1b873a7863e128e0b8d2ab9f4ad0f1fa2a0a7f1e12b6e0a4c7ac9f5a0b1")
    );
    assert_eq!(
        lora.page_url.as_deref(),
        Some("https://civitai.com/models/1?modelVersionId=10")
    );
    // A file listed without size or hash keeps neither; the version's download stands in.
    assert_eq!(
        (found[1].size_bytes, found[1].sha256.as_deref()),
        (None, None)
    );
    assert_eq!(
        found[1].download_url.as_deref(),
        Some("https://civitai.com/api/download/models/20")
    );
}

#[tokio::test]
async fn civitai_looks_a_file_up_by_hash_and_an_unknown_hash_finds_nothing() {
    let server = MockServer::start().await;
    let known = "ab".repeat(32);
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/model-versions/by-hash/{known}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 348913, "modelId": 133005, "name": "V9", "baseModel": "SDXL Lightning",
            "model": {"name": "Juggernaut XL", "type": "Checkpoint"},
            "files": [
                {"name": "juggernautXL_v9.safetensors", "sizeKB": 6775451.3, "hashes": {"SHA256": known.to_uppercase()}},
                {"name": "juggernautXL_v9_fp16.safetensors", "sizeKB": 3000000.0, "hashes": {"SHA256": "cd".repeat(32)}}
            ]
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!(
            "/api/v1/model-versions/by-hash/{}",
            "ef".repeat(32)
        )))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"error": "Model not found"})))
        .mount(&server)
        .await;
    let backend = civitai(&server);
    let found = files(&backend.search(&request(&hash_query(&known))).await.unwrap());
    assert_eq!(found.len(), 1, "only the file with the hash");
    assert_eq!(found[0].file_name, "juggernautXL_v9.safetensors");
    assert_eq!(found[0].model_type, Some(ModelType::Checkpoint));
    assert_eq!(found[0].model_name, "Juggernaut XL (V9)");
    let none = backend
        .search(&request(&hash_query(&"ef".repeat(32))))
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn odd_file_names_are_escaped_and_a_next_page_elsewhere_is_not_followed() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/models"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(
                    "link",
                    "<https://elsewhere.example/api/models?cursor=x>; rel=\"next\"",
                )
                .set_body_json(json!([
                    {"id": "org/merges", "siblings": [{"rfilename": "50%_merge #2.safetensors"}]}
                ])),
        )
        .expect(1)
        .mount(&server)
        .await;
    let found = files(&hub(&server, None).search(&request("merge")).await.unwrap());
    assert_eq!(found[0].file_name, "50%_merge #2.safetensors");
    assert_eq!(
        found[0].download_url.as_deref(),
        Some(
            format!(
                "{}/org/merges/resolve/main/50%25_merge%20%232.safetensors",
                server.uri()
            )
            .as_str()
        )
    );
}

#[test]
fn a_token_doubles_the_hubs_request_limit_unless_the_config_sets_one() {
    let per_minute = |token: Option<ApiKey>, set: Option<u32>| {
        let mut config = HuggingFaceConfig::with_token(token);
        config.file_lists = 0;
        config.requests_per_minute = set.and_then(std::num::NonZeroU32::new);
        HuggingFaceBackend::new(config)
            .unwrap()
            .calls_per_minute()
            .get()
    };
    assert_eq!(per_minute(None, None), 100);
    assert_eq!(per_minute(Some(ApiKey::new("hf_x", "HF_TOKEN")), None), 200);
    assert_eq!(
        per_minute(Some(ApiKey::new("hf_x", "HF_TOKEN")), Some(40)),
        40
    );
}
