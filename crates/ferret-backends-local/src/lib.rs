//! `ferret-backends-local` is Ferret's embedded index: a qdrant-edge shard in a directory, holding
//! BM25 sparse vectors (English stemming and stop words, IDF applied by the engine) and a payload of
//! title, text, url, source file and date. It ingests BEIR `corpus.jsonl` files, JSONL records with an
//! optional date, and folders of `.md` / `.txt` files chunked on headings and paragraphs; re-ingesting
//! unchanged content writes nothing. [`LocalBackend`] exposes it as a [`ferret_core::SearchBackend`]
//! with a limit, a date-range filter and "most recent N".
//!
//! It must not depend on any other backend crate, nor on the executor or any LLM crate.

mod backend;
mod compaction;
mod engine;
mod error;
mod index;
mod layout;
mod lock;
mod seal;
mod search;
mod writing;

pub use backend::LocalBackend;
pub use compaction::Compaction;
pub use error::IndexError;
pub use ferret_collection::{
    checked_acl, chunk_text_file, parse_date, read_jsonl, read_path, stream_path, Document,
    DocumentStream, IngestIssue, IngestOptions, IngestReport, PathDocuments, STORE_CAPABILITIES,
};
pub use index::LocalIndex;
pub use seal::SegmentPolicy;
