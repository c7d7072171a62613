//! `ferret-backends-hub` searches model hubs for model files: [`HuggingFaceBackend`] (the Hub's
//! model search, each repository's file list with sizes and hashes, download addresses of the
//! form `/{repo}/resolve/{revision}/{path}`) and [`CivitaiBackend`] (model search by name and
//! type, versions with their base model, files with size, SHA-256 and download address, and
//! lookup of a file by its SHA-256). Each is one [`SearchBackend`]: one hit per model file, its
//! facts in the hit's payload as a [`ModelFile`]. A query `sha256:<hex>` (see
//! [`hash_query`](ferret_core::hash_query)) asks for the file with that hash.
//!
//! Tokens (`HF_TOKEN`, `CIVITAI_API_KEY`) are optional and held as secrets. Each backend states
//! the provider's rate limit, which the executor applies; pagination (a `Link` header, a
//! cursor) is followed up to a configured bound.
//!
//! It must not depend on the executor, the agent, another backend crate or the model layer.

mod civitai;
mod files;
mod huggingface;

pub use civitai::{CivitaiBackend, CivitaiConfig, CIVITAI_KEY_VARIABLE};
pub use ferret_core::{ModelFile, ModelSource, ModelType};
pub use ferret_http::{ApiKey, HttpSetupError};
pub use files::is_model_file;
pub use huggingface::{HuggingFaceBackend, HuggingFaceConfig, HF_TOKEN_VARIABLE};

/// `key`, else the key in `variable` when it is named, set and not blank: hub keys are optional.
fn key_or_variable(key: &Option<ApiKey>, variable: &Option<String>) -> Option<ApiKey> {
    key.clone()
        .or_else(|| ApiKey::from_env(variable.as_deref()?).ok())
}
