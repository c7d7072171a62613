//! The hubs themselves, only when `FERRET_LIVE_HUB=1` is set (this machine cannot reach them):
//! a search on each finds model files with download addresses, and Civitai's lookup by hash
//! finds the file it was given the hash of. Tokens come from `HF_TOKEN` and `CIVITAI_API_KEY`
//! when set.

use ferret_backends_hub::{
    CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig, ModelFile,
};
use ferret_core::{hash_query, SearchBackend, SearchOptions, SearchRequest};

fn live() -> bool {
    let on = std::env::var("FERRET_LIVE_HUB").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("skipped: set FERRET_LIVE_HUB=1 to search the live hubs");
    }
    on
}

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        limit: 10,
        filters: Default::default(),
        options: SearchOptions::default(),
        text_for: None,
    }
}

#[tokio::test]
async fn the_live_hub_finds_the_sdxl_vae() {
    if !live() {
        return;
    }
    let backend = HuggingFaceBackend::new(HuggingFaceConfig::default()).unwrap();
    let hits = backend.search(&request("sdxl-vae")).await.unwrap();
    let files: Vec<ModelFile> = hits.iter().filter_map(ModelFile::from_hit).collect();
    assert!(
        files.iter().any(|f| f.file_name.ends_with(".safetensors")
            && f.download_url
                .as_deref()
                .is_some_and(|u| u.contains("/resolve/"))),
        "{files:#?}"
    );
}

#[tokio::test]
async fn live_civitai_finds_a_lora_and_looks_its_file_up_by_hash() {
    if !live() {
        return;
    }
    let backend = CivitaiBackend::new(CivitaiConfig::default()).unwrap();
    let hits = backend.search(&request("Detail Tweaker XL")).await.unwrap();
    let files: Vec<ModelFile> = hits.iter().filter_map(ModelFile::from_hit).collect();
    let hashed = files
        .iter()
        .find(|f| f.sha256.is_some())
        .unwrap_or_else(|| panic!("a file with its SHA-256: {files:#?}"));
    let hash = hashed.sha256.clone().unwrap();
    let by_hash = backend.search(&request(&hash_query(&hash))).await.unwrap();
    let found: Vec<ModelFile> = by_hash.iter().filter_map(ModelFile::from_hit).collect();
    assert!(
        found
            .iter()
            .any(|f| f.sha256.as_deref() == Some(hash.as_str())),
        "{found:#?}"
    );
}
