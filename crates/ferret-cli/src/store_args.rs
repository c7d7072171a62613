//! The command line's choice of where documents live (an embedded index or a Qdrant server) and
//! how they are ranked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret::backends::QdrantConfig;
use ferret::index::LocalIndex;
use ferret::models::Embedder;

/// Whether documents get dense vectors at ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedderChoice {
    /// What the index already uses; for a new one, all-MiniLM-L6-v2 when `cargo xtask models`
    /// has fetched it, else BM25 only (said on the terminal).
    Auto,
    /// all-MiniLM-L6-v2, in-process.
    Local,
    /// No dense vectors: BM25 only.
    None,
}

/// Where the documents are.
#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    /// A Qdrant server's gRPC URL (e.g. http://localhost:6334) instead of an embedded index.
    #[arg(long, env = "FERRET_QDRANT_URL")]
    pub qdrant_url: Option<String>,
    /// The Qdrant collection.
    #[arg(long, default_value = "ferret")]
    pub collection: String,
}

impl StoreArgs {
    /// The server configuration, with the key from `FERRET_QDRANT_API_KEY` (never a flag).
    pub fn qdrant(&self) -> Option<QdrantConfig> {
        let url = self.qdrant_url.clone()?;
        let mut config = QdrantConfig::new(url, self.collection.clone());
        if let Ok(key) = std::env::var(ferret::backends::QDRANT_API_KEY_VAR) {
            config = config.api_key(key);
        }
        Some(config)
    }
}

/// The embedder for an ingest into the local index at `dir`, following `choice`.
pub fn ingest_embedder(
    choice: EmbedderChoice,
    dir: Option<&Path>,
) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    match choice {
        EmbedderChoice::None => Ok(None),
        EmbedderChoice::Local => Ok(Some(match dir.filter(|d| d.exists()) {
            // An index's vectors are added to as they were made.
            Some(dir) => ferret::models::default_embedder_for(dir)?,
            None => ferret::models::default_embedder()?,
        })),
        EmbedderChoice::Auto => {
            if let Some(dir) = dir.filter(|d| d.exists()) {
                if LocalIndex::dense_embedder_of(dir).ok().flatten().is_none() {
                    return Ok(None);
                }
                return Ok(Some(ferret::models::default_embedder_for(dir)?));
            }
            match ferret::models::default_embedder() {
                Ok(embedder) => Ok(Some(embedder)),
                Err(e) => {
                    eprintln!("note: BM25 only, no dense vectors ({e})");
                    Ok(None)
                }
            }
        }
    }
}

/// The default index folder of `ferret ingest`.
pub fn default_index() -> PathBuf {
    PathBuf::from("ferret-index")
}
