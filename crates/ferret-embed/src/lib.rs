//! `ferret-embed` turns text into dense vectors. [`LocalEmbedder`] runs a sentence-transformers
//! BERT model (all-MiniLM-L6-v2) in-process, from a folder of local files or from the
//! HuggingFace hub, on ONNX Runtime (an int8 export, the library loaded at run time) or on candle
//! (pure Rust, float weights): length-sorted batches padded per batch, a 256-token limit, mean
//! pooling and L2 normalisation. [`OpenAiEmbedder`] calls any OpenAI-compatible `/embeddings` endpoint.
//! [`CachedEmbedder`] wraps either and keeps every vector on disk, keyed by the text's hash, so
//! re-ingesting never embeds the same text twice.
//!
//! It must not depend on any backend crate, nor on the executor or the agent.

mod cache;
mod candle;
mod hub;
mod local;
mod onnx;
mod openai;

use std::path::PathBuf;

pub use cache::CachedEmbedder;
pub use hub::HubSource;
pub use local::{
    LocalEmbedder, LocalEmbedderConfig, LocalRuntime, OnnxGraph, MINILM_DIR, MINILM_HUB_ID,
    MODEL_FILES,
};
pub use onnx::{onnxruntime_library, FUSED_ONNX_MODEL_FILE, ONNX_MODEL_FILE};
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
    /// ONNX Runtime was asked for but its shared library is not there.
    #[error("ONNX Runtime's library is not at {library}: fetch it with `cargo xtask models`, set ORT_DYLIB_PATH, or use the candle runtime")]
    MissingRuntime {
        /// Where it was looked for.
        library: PathBuf,
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
