//! `ferret-backends-qdrant` keeps a Ferret collection on a Qdrant server, reached over gRPC with
//! `qdrant-client`: the same schema as the embedded index (BM25 sparse vectors computed here and
//! weighted by the server's IDF, optional dense vectors, the shared payload layout, date and source
//! indexes), the same incremental ingest, and the same ranking for BM25, dense and hybrid search
//! with date-range and "most recent N" filters. The collection records in its metadata the BM25
//! parameters and the embedder its vectors came from, so a mismatched embedder is refused before
//! anything is written. [`QdrantBackend`] exposes it as a [`ferret_core::SearchBackend`].
//!
//! It must not depend on any other backend crate (`ferret-backends-local` and the rest), nor on
//! the executor or any LLM crate: what it shares with the embedded index lives in
//! `ferret-collection`.

mod backend;
mod error;
mod index;
mod requests;

pub use backend::{backend_error, QdrantBackend};
pub use error::{QdrantConfig, QdrantError};
pub use ferret_collection::{Document, IngestIssue, IngestOptions, IngestReport};
pub use index::QdrantIndex;
