//! `POST /v1/find-model` over stand-ins of the two hubs (answering as their documented APIs
//! do, from the evaluation set's catalogue): a workflow's files, one file, and refusals.

mod common;

use std::sync::Arc;

use axum::http::StatusCode;
use ferret::backends::{CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig};
use ferret::jobs::find_model::ModelSource;
use ferret::Ferret;
use ferret_server::{router, AppState, Limits};
use ferret_test_support::hubs::{HubCatalogue, HubStandIn};
use serde_json::{json, Value};
use tower::ServiceExt;
use wiremock::MockServer;

use common::{post, read_json};

fn catalogue() -> Arc<HubCatalogue> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/find-model-eval/catalogue.json"
    );
    Arc::new(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

async fn hubs() -> (MockServer, MockServer) {
    let catalogue = catalogue();
    let civitai = HubStandIn::new(ModelSource::Civitai, catalogue.clone());
    let hub = HubStandIn::new(ModelSource::HuggingFace, catalogue);
    (civitai.start().await, hub.start().await)
}

fn app(civitai: &MockServer, hub: &MockServer) -> axum::Router {
    let ferret = Ferret::builder()
        .backend(Arc::new(
            CivitaiBackend::new(CivitaiConfig {
                base_url: civitai.uri(),
                ..CivitaiConfig::with_key(None)
            })
            .unwrap(),
        ))
        .backend(Arc::new(
            HuggingFaceBackend::new(HuggingFaceConfig {
                base_url: hub.uri(),
                requests_per_minute: std::num::NonZeroU32::new(10_000),
                ..HuggingFaceConfig::with_token(None)
            })
            .unwrap(),
        ))
        .build()
        .unwrap();
    router(AppState::new(ferret, Limits::default()))
}

async fn ask(app: axum::Router, body: Value) -> (StatusCode, Value) {
    let response = app
        .oneshot(post("/v1/find-model", body.to_string()))
        .await
        .unwrap();
    let status = response.status();
    (status, read_json(response).await)
}

#[tokio::test]
async fn a_workflows_files_come_back_in_its_order_its_checkpoint_giving_the_base() {
    let (civitai, hub) = hubs().await;
    let workflow = json!({
        "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "10": {"class_type": "LoraLoader", "inputs": {"lora_name": "add-detail-xl.safetensors", "model": ["4", 0], "clip": ["4", 1]}},
        "11": {"class_type": "LoraLoader", "inputs": {"lora_name": "my_character_v3.safetensors", "model": ["10", 0], "clip": ["10", 1]}}
    });
    let (status, reply) = ask(app(&civitai, &hub), json!({"workflow": workflow})).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["base_model"], "SDXL");
    let files = reply["files"].as_array().unwrap();
    let names: Vec<&str> = files
        .iter()
        .map(|f| f["file_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "sd_xl_base_1.0.safetensors",
            "add-detail-xl.safetensors",
            "my_character_v3.safetensors"
        ]
    );
    assert_eq!(files[0]["status"], "FOUND");
    assert_eq!(
        files[0]["result"]["candidates"][0]["name"],
        "stabilityai/stable-diffusion-xl-base-1.0"
    );
    assert_eq!(files[1]["status"], "FOUND");
    assert_eq!(files[1]["node_id"], "10");
    assert_eq!(files[2]["status"], "UNCERTAIN");
}

#[tokio::test]
async fn one_file_by_name_and_the_refusals_name_their_field() {
    let (civitai, hub) = hubs().await;
    let (status, reply) = ask(
        app(&civitai, &hub),
        json!({"file_name": "4xUltrasharp_4xUltrasharpV10.pt", "model_type": "upscaler"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["files"][0]["status"], "FOUND");
    for (body, field) in [
        (json!({"workflow": {"nodes": 3}}), "workflow"),
        (
            json!({"workflow": {"1": {"class_type": "KSampler", "inputs": {}}}}),
            "workflow",
        ),
        (json!({"file_name": "../etc/passwd"}), "file_name"),
        (json!({"sha256": "abc"}), "sha256"),
        (json!({}), "file_name"),
        (
            json!({"workflow": {}, "file_name": "x.safetensors"}),
            "workflow",
        ),
    ] {
        let (status, reply) = ask(app(&civitai, &hub), body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {reply}");
        assert_eq!(reply["error"]["field"], field, "{body}: {reply}");
    }
}

#[tokio::test]
async fn a_file_no_hub_would_answer_for_is_unsearched_naming_the_hubs() {
    // Both hubs past their rate limit: every call is a 429 with a long Retry-After.
    let throttled = |source| {
        HubStandIn::new(source, catalogue()).with_rate_limit(0, std::time::Duration::from_secs(300))
    };
    let civitai = throttled(ModelSource::Civitai).start().await;
    let hub = throttled(ModelSource::HuggingFace).start().await;
    let (status, reply) = ask(
        app(&civitai, &hub),
        json!({"file_name": "add-detail-xl.safetensors", "model_type": "lora"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let file = &reply["files"][0];
    assert_eq!(file["status"], "UNSEARCHED", "{reply}");
    let failures = file["failures"].to_string();
    assert!(
        failures.contains("civitai") && failures.contains("huggingface"),
        "{failures}"
    );
}
