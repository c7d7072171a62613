//! `ferret-embed` turns text into dense vectors. [`LocalEmbedder`] runs a sentence-transformers
//! BERT model (all-MiniLM-L6-v2) in-process with candle, from a folder of local files or from
//! the HuggingFace hub: length-sorted batches padded per batch, a 256-token limit, mean pooling
//! and L2 normalisation. [`OpenAiEmbedder`] calls any OpenAI-compatible `/embeddings` endpoint.
//! [`CachedEmbedder`] wraps either and keeps every vector on disk, keyed by the text's hash, so
//! re-ingesting never embeds the same text twice.
//!
//! It must not depend on any backend crate, nor on the executor or the agent.

mod cache;
mod hub;
mod local;
mod openai;

use std::path::PathBuf;

pub use cache::CachedEmbedder;
pub use hub::HubSource;
pub use local::{LocalEmbedder, LocalEmbedderConfig, MINILM_DIR, MINILM_HUB_ID, MODEL_FILES};
pub use openai::OpenAiEmbedder;

/// Why an embedder could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedderError {
    /// The model folder lacks files.
    #[error("the embedding model in {dir} is missing {}: fetch it with `cargo xtask models`", missing.join(", "))]
    MissingFiles {
        /// The folder looked in.
        dir: PathBuf,
        /// The files not there.
        missing: Vec<&'static str>,
    },
    /// A model file is there but cannot be used.
    #[error("cannot use {file}: {reason}")]
    Invalid {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be fetched from the hub.
    #[error("cannot fetch `{model_id}` from {url}: {reason}")]
    Hub {
        /// The model asked for.
        model_id: String,
        /// What was requested.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A setting is out of range.
    #[error("invalid embedder configuration: {0}")]
    Config(String),
    /// The runtime failed.
    #[error("embedder runtime error: {0}")]
    Runtime(String),
}
