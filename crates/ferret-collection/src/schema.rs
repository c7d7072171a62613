use std::collections::{HashMap, HashSet};
use std::path::Path;

use chrono::NaiveDate;
use ferret_core::{BackendCapabilities, EmbedError, Embedder, Hit, RetryClass};
use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::external::ordered_float::NotNan;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::documents::{Document, IngestIssue};
use crate::stream::{stream_path, DocumentStream};

/// How files are turned into documents.
#[derive(Debug, Clone, Copy)]
pub struct IngestOptions {
    /// Longest chunk of a `.md` / `.txt` file, in bytes; paragraphs are merged up to it.
    pub max_chunk_chars: usize,
    /// Documents embedded and written per step.
    pub batch_size: usize,
    /// How often written batches are committed (flushed, so they survive the process being
    /// killed); progress is reported after each commit and counts only committed documents.
    /// Zero commits every batch.
    pub commit_every: std::time::Duration,
    /// Documents read before the first write, to measure the average document length BM25
    /// needs when the index has none yet; the rest of the input streams in batches. Bounds
    /// what an ingest holds in memory; an input no larger is measured exactly.
    pub average_sample: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            max_chunk_chars: 1_500,
            batch_size: 128,
            commit_every: std::time::Duration::ZERO,
            average_sample: 10_000,
        }
    }
}

/// What an ingest did.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestReport {
    /// Files read.
    pub files: usize,
    /// Documents new to the index.
    pub added: usize,
    /// Documents whose content changed and were rewritten.
    pub updated: usize,
    /// Documents already present with the same content; nothing was written for them.
    pub unchanged: usize,
    /// Documents embedded (new or changed content; none when the index has no dense vectors).
    pub embedded: usize,
    /// Chunks deleted because their file no longer yields them.
    pub removed: usize,
    /// Lines or files skipped, with the reason.
    pub issues: Vec<IngestIssue>,
}

/// The sparse (BM25) vector's name.
pub const SPARSE_VECTOR: &str = "bm25";
/// The dense (embedding) vector's name.
pub const DENSE_VECTOR: &str = "dense";
/// Payload field with the date as days since 1970, indexed for range filters and ordering.
pub const DATE_FIELD: &str = "date_days";
/// Payload field holding a document's [`Document::metadata`], when it has any.
pub const METADATA_FIELD: &str = "metadata";
/// Payload field with a document's [`Document::acl`], when it has one, indexed for exact match:
/// searches on an asker's behalf filter on it.
pub const ACL_FIELD: &str = "acl";
/// Payload field with the file or corpus a document came from, indexed for exact match.
pub const SOURCE_FIELD: &str = "source";
/// What a store of this collection layout honours, the embedded index and a Qdrant server
/// alike: date ranges and most-recent on the indexed `date_days`, and access lists on the
/// indexed `acl`. Neither holds model files.
pub const STORE_CAPABILITIES: BackendCapabilities = BackendCapabilities {
    date_range: true,
    most_recent: true,
    access: true,
    model_hub: None,
};

/// Reciprocal-rank-fusion constant for hybrid search: Qdrant's server default, so the embedded
/// index and a server rank alike.
pub const RRF_K: usize = 2;
/// Candidates each side of a hybrid search contributes to the fusion.
pub const PREFETCH_LIMIT: usize = 100;
/// Extra candidates asked of the engine so that ties at the cut are broken by [`rank_hits`], not
/// by the engine's internal order.
pub const TIE_MARGIN: usize = 10;

/// BM25 parameters, fixed for the life of a collection. `avg_doc_len` is measured on the first
/// ingest rather than assumed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation.
    pub b: f64,
    /// Mean document length in tokens (stop words excluded), once known.
    pub avg_doc_len: Option<f64>,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.75,
            avg_doc_len: None,
        }
    }
}

/// The encoder for documents (`avg_doc_len` known) or queries (where it does not matter).
pub fn bm25_encoder(params: Bm25Params) -> Result<EdgeBm25, String> {
    let not_nan = |v: f64| NotNan::new(v).map_err(|e| e.to_string());
    EdgeBm25::new(EdgeBm25Config {
        k: not_nan(params.k1)?,
        b: not_nan(params.b)?,
        avg_len: not_nan(params.avg_doc_len.unwrap_or(256.0))?,
        ..Default::default()
    })
    .map_err(|e| e.to_string())
}

/// Mean tokens per document as BM25 sees them: the engine drops stop words, so they are not counted.
pub fn mean_token_count(documents: &[Document]) -> f64 {
    let count = |s: &str| {
        ferret_core::text::words(s)
            .filter(|w| !ferret_core::text::is_stop_word(w))
            .count()
    };
    let total: usize = documents
        .iter()
        .map(|d| count(&d.title) + count(&d.text))
        .sum();
    (total as f64 / documents.len().max(1) as f64).max(1.0)
}

/// The point id of a document id: the first 8 bytes of its SHA-256.
pub fn point_id(doc_id: &str) -> u64 {
    let digest = Sha256::digest(doc_id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// Days since 1970 of `date`, as stored in [`DATE_FIELD`].
pub fn date_days(date: NaiveDate) -> f64 {
    f64::from(date.to_epoch_days())
}

/// What is embedded for a document: title and text, as BEIR's dense baselines do.
pub fn embedding_text(doc: &Document) -> String {
    format!("{} {}", doc.title, doc.text).trim().to_owned()
}

/// The payload stored with a document, `hash` being its [`Document::content_hash`].
pub fn payload(doc: &Document, hash: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut payload = serde_json::Map::new();
    payload.insert("doc_id".into(), doc.id.clone().into());
    payload.insert("title".into(), doc.title.clone().into());
    payload.insert("text".into(), doc.text.clone().into());
    payload.insert(SOURCE_FIELD.into(), doc.source.clone().into());
    payload.insert("hash".into(), hash.into());
    if let Some(url) = &doc.url {
        payload.insert("url".into(), url.clone().into());
    }
    if let Some(date) = doc.date {
        payload.insert("date".into(), date.to_string().into());
        payload.insert(DATE_FIELD.into(), date_days(date).into());
    }
    if !doc.metadata.is_empty() {
        payload.insert(METADATA_FIELD.into(), doc.metadata.clone().into());
    }
    if let Some(acl) = &doc.acl {
        payload.insert(ACL_FIELD.into(), acl.clone().into());
    }
    payload
}

/// A stored payload as a hit; `None` when it is not one of ours (no `doc_id`).
pub fn to_hit(
    score: f32,
    mut payload: serde_json::Map<String, serde_json::Value>,
    backend: &str,
) -> Option<Hit> {
    let mut take = |key: &str| match payload.remove(key) {
        Some(serde_json::Value::String(s)) => Some(s),
        _ => None,
    };
    let id = take("doc_id")?;
    let title = take("title").unwrap_or_default();
    let text = take("text").unwrap_or_default();
    let url = take("url");
    let date = take("date").and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok());
    payload.remove("hash");
    payload.remove(DATE_FIELD);
    // Who else may read a document is not the reader's business.
    payload.remove(ACL_FIELD);
    let mut hit = Hit::new(id, title, text, score, backend);
    hit.url = url;
    hit.date = date;
    // Rebuilt rather than moved: the map keeps the room of the fields taken out of it, and a
    // hit may be kept (in a cache, a thread) long after.
    hit.payload = payload.into_iter().collect();
    Some(hit)
}

/// Best first, equal scores by id, cut to `limit`: engines order equal scores by internal hash
/// order, which changes between ingests, and the same content must always rank the same.
pub fn rank_hits(mut hits: Vec<Hit>, limit: usize) -> Vec<Hit> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    hits.truncate(limit);
    hits
}

/// The embedder whose vectors a store holds, recorded with the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenseMeta {
    /// [`Embedder::name`].
    pub embedder: String,
    /// [`Embedder::dimension`].
    pub dimension: usize,
}

impl DenseMeta {
    /// What `embedder` would record.
    pub fn of(embedder: &dyn Embedder) -> Self {
        Self {
            embedder: embedder.name().to_owned(),
            dimension: embedder.dimension(),
        }
    }
}

/// Why an embedder cannot be used with a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderMisfit {
    /// The store holds no dense vectors.
    NoDenseVectors,
    /// The store's vectors came from another embedder, or another dimension.
    Mismatch {
        /// What the store holds.
        stored: DenseMeta,
        /// What was offered.
        offered: DenseMeta,
    },
}

/// An embedder may open a store only if it made the store's vectors; no embedder always may.
pub fn embedder_fit(
    stored: Option<&DenseMeta>,
    embedder: Option<&dyn Embedder>,
) -> Result<(), EmbedderMisfit> {
    let Some(offered) = embedder.map(DenseMeta::of) else {
        return Ok(());
    };
    match stored {
        None => Err(EmbedderMisfit::NoDenseVectors),
        Some(stored) if *stored != offered => Err(EmbedderMisfit::Mismatch {
            stored: stored.clone(),
            offered,
        }),
        Some(_) => Ok(()),
    }
}

/// A document of a batch whose content is new or changed, ready to be written.
#[derive(Debug)]
pub struct PendingPoint<'a> {
    /// The document.
    pub doc: &'a Document,
    /// Its point id.
    pub id: u64,
    /// Its [`Document::content_hash`], stored in the payload.
    pub hash: String,
    /// Its embedding, when the store holds dense vectors.
    pub dense: Option<Vec<f32>>,
}

/// Compare `batch` with the hashes already stored (point id → hash), count each document in
/// `report` as added, updated or unchanged, and embed only the new or changed ones.
pub async fn changed_points<'a>(
    batch: &'a [Document],
    stored: &HashMap<u64, String>,
    embedder: Option<&dyn Embedder>,
    report: &mut IngestReport,
) -> Result<Vec<PendingPoint<'a>>, EmbedError> {
    let mut changed = Vec::new();
    for doc in batch {
        let (id, hash) = (point_id(&doc.id), doc.content_hash());
        match stored.get(&id) {
            Some(old) if *old == hash => {
                report.unchanged += 1;
                continue;
            }
            Some(_) => report.updated += 1,
            None => report.added += 1,
        }
        changed.push(PendingPoint {
            doc,
            id,
            hash,
            dense: None,
        });
    }
    if let Some(embedder) = embedder.filter(|_| !changed.is_empty()) {
        let texts: Vec<String> = changed.iter().map(|p| embedding_text(p.doc)).collect();
        let vectors = embedder.embed(&texts).await?;
        if vectors.len() != texts.len() {
            return Err(EmbedError {
                message: format!(
                    "`{}` returned {} vectors for {} texts",
                    embedder.name(),
                    vectors.len(),
                    texts.len()
                ),
                retry: RetryClass::Permanent,
            });
        }
        report.embedded += vectors.len();
        for (point, vector) in changed.iter_mut().zip(vectors) {
            point.dense = Some(vector);
        }
    }
    Ok(changed)
}

/// One document per id; a later duplicate replaces an earlier one, as sequential upserts would.
pub fn unique_by_id(documents: Vec<Document>) -> Vec<Document> {
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut unique: Vec<Document> = Vec::with_capacity(documents.len());
    for doc in documents {
        match by_id.get(&doc.id) {
            Some(&i) => unique[i] = doc,
            None => {
                by_id.insert(doc.id.clone(), unique.len());
                unique.push(doc);
            }
        }
    }
    unique
}

/// What [`read_path`] found.
#[derive(Debug, Default)]
pub struct PathDocuments {
    /// Files read.
    pub files: usize,
    /// Documents, in file order.
    pub documents: Vec<Document>,
    /// For each text file, its source and the ids of the chunks it yields now: chunks of that
    /// source not in the set are stale.
    pub text_sources: Vec<(String, HashSet<String>)>,
    /// Lines or files skipped, with the reason.
    pub issues: Vec<IngestIssue>,
}

impl PathDocuments {
    /// Give `acl` to every document read that carries no list of its own (a folder's or an
    /// ingest request's default); a record's own `acl` wins.
    pub fn with_default_acl(mut self, acl: &[String]) -> Self {
        for doc in self.documents.iter_mut().filter(|d| d.acl.is_none()) {
            doc.acl = Some(acl.to_vec());
        }
        self
    }

    /// Add a file sent rather than read from disk (an upload): `name`'s extension says how it
    /// is read, as for a file on disk, and `name` is the documents' source, so sending the same
    /// name again replaces what it yielded.
    pub fn add_upload(&mut self, name: &str, content: &[u8], max_chunk_chars: usize) {
        let mut stream = DocumentStream::default();
        stream.open(Path::new(name), max_chunk_chars, || Ok(content));
        self.documents.extend(stream.by_ref());
        self.files += 1;
        self.issues.append(&mut stream.issues);
        self.text_sources.append(&mut stream.text_sources);
    }
}

/// Read a file or a folder whole: see [`stream_path`], which reads it as the ingest goes.
pub fn read_path(path: &Path, max_chunk_chars: usize) -> std::io::Result<PathDocuments> {
    let mut stream = stream_path(path, max_chunk_chars)?;
    let documents = stream.by_ref().collect();
    Ok(PathDocuments {
        files: stream.files,
        documents,
        text_sources: stream.text_sources,
        issues: stream.issues,
    })
}
