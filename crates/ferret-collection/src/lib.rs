//! `ferret-collection` is what the embedded index and a Qdrant server store alike, so that one
//! collection behaves the same in both: documents read from files ([`stream_path`]: JSONL and BEIR
//! corpora, Markdown and text chunked on headings), their point ids, the payload layout and its
//! indexed fields, the vector names, the BM25 sparse encoding (Qdrant's own text pipeline, IDF
//! applied by the engine) and the mapping from a stored payload back to a [`Hit`](ferret_core::Hit).
//!
//! It must not depend on any backend crate, HTTP client or embedding runtime.

mod documents;
mod ingest;
mod schema;
mod stream;

pub use documents::{
    checked_acl, chunk_text_file, parse_date, read_jsonl, read_jsonl_from, Document, IngestIssue,
};
pub use ingest::{ingest_documents, ingest_path, ingest_read, PointStore};
pub use schema::{
    bm25_encoder, changed_points, date_days, embedder_fit, embedding_text, mean_token_count,
    payload, point_id, rank_hits, read_path, to_hit, unique_by_id, Bm25Params, DenseMeta,
    EmbedderMisfit, IngestOptions, IngestReport, PathDocuments, PendingPoint, ACL_FIELD,
    DATE_FIELD, DENSE_VECTOR, METADATA_FIELD, PREFETCH_LIMIT, RRF_K, SOURCE_FIELD, SPARSE_VECTOR,
    STORE_CAPABILITIES, TIE_MARGIN,
};
pub use stream::{stream_path, DocumentStream};
