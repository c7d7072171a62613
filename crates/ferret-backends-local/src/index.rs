use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::NaiveDate;
use ferret_core::{BackendCapabilities, BackendError, BackendErrorKind, DateRange, Hit, SearchBackend, SearchRequest};
use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::external::ordered_float::{NotNan, OrderedFloat};
use qdrant_edge::{
    Condition, CreateIndex, Direction, EdgeConfigBuilder, EdgeShard, EdgeSparseVectorParamsBuilder, FieldCondition,
    FieldIndexOperations, Filter, JsonPath, Match, MatchValue, ValueVariants, Modifier, NamedQuery, OrderBy, OrderByInterface, PayloadFieldSchema,
    PayloadSchemaType, PayloadSelector, PayloadSelectorInclude, PointId, PointInsertOperations, PointOperations,
    PointStruct, QueryEnum, QueryRequest, Range, ScoringQuery, ScrollRequest, UpdateOperation, VectorInternal,
    Vectors, WithPayloadInterface, WithVector,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::documents::{chunk_text_file, read_jsonl, Document, IngestIssue};

const META_FILE: &str = "ferret-index.json";
const SPARSE_VECTOR: &str = "bm25";
const DATE_FIELD: &str = "date_days";
const FORMAT_VERSION: u32 = 1;
const TIE_MARGIN: usize = 10;

/// Why the index could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The directory does not hold an index.
    #[error("no Ferret index there; create one with `ferret ingest <files> --index {path}`")]
    Missing {
        /// The directory asked for.
        path: PathBuf,
    },
    /// The directory exists but cannot be read as an index.
    #[error("cannot read the index at {path}: {reason}")]
    Unreadable {
        /// The directory asked for.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The index was written by an incompatible version of Ferret.
    #[error("the index at {path} has format {found}, this Ferret reads format {expected}: re-ingest into a new directory")]
    Format {
        /// The directory.
        path: PathBuf,
        /// Format found on disk.
        found: u32,
        /// Format this build reads.
        expected: u32,
    },
    /// An input file could not be read.
    #[error("cannot read {path}: {source}")]
    Input {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The engine refused an operation.
    #[error("index engine error: {0}")]
    Engine(String),
}

impl IndexError {
    fn unreadable(path: &Path, reason: impl ToString) -> Self {
        Self::Unreadable { path: path.to_owned(), reason: reason.to_string() }
    }
}

/// What stays fixed for the life of an index: the BM25 parameters its document vectors were
/// computed with. `avg_doc_len` is measured on the first ingest rather than assumed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct IndexMeta {
    format: u32,
    avg_doc_len: Option<f64>,
    k1: f64,
    b: f64,
}

/// How files are turned into documents.
#[derive(Debug, Clone, Copy)]
pub struct IngestOptions {
    /// Longest chunk of a `.md` / `.txt` file, in bytes; paragraphs are merged up to it.
    pub max_chunk_chars: usize,
    /// Documents written per engine call.
    pub batch_size: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self { max_chunk_chars: 1_500, batch_size: 256 }
    }
}

/// What an ingest did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    /// Files read.
    pub files: usize,
    /// Documents new to the index.
    pub added: usize,
    /// Documents whose content changed and were rewritten.
    pub updated: usize,
    /// Documents already present with the same content; nothing was written for them.
    pub unchanged: usize,
    /// Chunks deleted because their file no longer yields them.
    pub removed: usize,
    /// Lines or files skipped, with the reason.
    pub issues: Vec<IngestIssue>,
}

/// An embedded index in a directory.
///
/// Reads run concurrently. Writes take `&mut self`, so within a process they never overlap a read
/// or a flush (qdrant-edge panics when a flush overlaps an update); every ingest that wrote ends
/// with a flush because the engine does not replay its write-ahead log on load. Nothing guards
/// against two processes writing one directory at once.
pub struct LocalIndex {
    dir: PathBuf,
    shard: EdgeShard,
    meta: IndexMeta,
    query_encoder: EdgeBm25,
}

impl std::fmt::Debug for LocalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalIndex").field("dir", &self.dir).field("meta", &self.meta).finish_non_exhaustive()
    }
}

impl LocalIndex {
    /// Open the index in `dir`, which must exist.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, IndexError> {
        let dir = dir.as_ref();
        let meta_path = dir.join(META_FILE);
        if !meta_path.is_file() {
            if dir.exists() && !dir.is_dir() {
                return Err(IndexError::unreadable(dir, "it is a file, not a directory"));
            }
            return Err(IndexError::Missing { path: dir.to_owned() });
        }
        let raw = std::fs::read_to_string(&meta_path).map_err(|e| IndexError::unreadable(dir, e))?;
        let meta: IndexMeta =
            serde_json::from_str(&raw).map_err(|e| IndexError::unreadable(dir, format!("{META_FILE}: {e}")))?;
        if meta.format != FORMAT_VERSION {
            return Err(IndexError::Format { path: dir.to_owned(), found: meta.format, expected: FORMAT_VERSION });
        }
        let shard = EdgeShard::load(dir, None).map_err(|e| IndexError::unreadable(dir, e))?;
        Self::with_shard(dir, shard, meta)
    }

    /// Open the index in `dir`, creating an empty one if the directory holds none.
    pub fn open_or_create(dir: impl AsRef<Path>) -> Result<Self, IndexError> {
        let dir = dir.as_ref();
        if dir.join(META_FILE).is_file() {
            return Self::open(dir);
        }
        std::fs::create_dir_all(dir).map_err(|e| IndexError::unreadable(dir, e))?;
        let config = EdgeConfigBuilder::new()
            .sparse_vector(SPARSE_VECTOR, EdgeSparseVectorParamsBuilder::new().modifier(Modifier::Idf).build())
            .build();
        let shard = EdgeShard::new(dir, config).map_err(|e| IndexError::unreadable(dir, e))?;
        shard
            .update(UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                field_name: field(DATE_FIELD),
                field_schema: Some(PayloadFieldSchema::FieldType(PayloadSchemaType::Float)),
            })))
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        shard.flush();
        let meta = IndexMeta { format: FORMAT_VERSION, avg_doc_len: None, k1: 1.2, b: 0.75 };
        let index = Self::with_shard(dir, shard, meta)?;
        index.save_meta()?;
        Ok(index)
    }

    fn with_shard(dir: &Path, shard: EdgeShard, meta: IndexMeta) -> Result<Self, IndexError> {
        Ok(Self {
            dir: dir.to_owned(),
            shard,
            meta,
            query_encoder: bm25_encoder(meta.k1, meta.b, 1.0)?,
        })
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Documents in the index.
    pub fn len(&self) -> usize {
        self.shard.info().points_count
    }

    /// True when nothing has been ingested.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn save_meta(&self) -> Result<(), IndexError> {
        let json = serde_json::to_string_pretty(&self.meta).map_err(|e| IndexError::Engine(e.to_string()))?;
        std::fs::write(self.dir.join(META_FILE), json).map_err(|e| IndexError::unreadable(&self.dir, e))
    }

    /// Ingest a file or a folder: `.jsonl` files as records, `.md` / `.txt` files as chunked text.
    /// Folders are walked recursively; other files in them are skipped. `progress(done, total)` is
    /// called after each batch.
    pub fn ingest_path(
        &mut self,
        path: &Path,
        options: IngestOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<IngestReport, IndexError> {
        let mut report = IngestReport::default();
        let mut documents = Vec::new();
        let files: Vec<PathBuf> = if path.is_dir() {
            let mut files = Vec::new();
            for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
                match entry {
                    Ok(e) if e.file_type().is_file() && ingestible(e.path()) => files.push(e.into_path()),
                    Ok(_) => {}
                    Err(e) => report.issues.push(IngestIssue {
                        file: e.path().unwrap_or(path).to_owned(),
                        line: None,
                        message: format!("cannot read: {e}"),
                    }),
                }
            }
            files
        } else if path.exists() {
            vec![path.to_owned()]
        } else {
            return Err(IndexError::Input {
                path: path.to_owned(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            });
        };
        // Chunks of text files are replaced whole: what a file no longer yields is deleted.
        let mut text_sources: Vec<(String, HashSet<String>)> = Vec::new();
        for file in &files {
            report.files += 1;
            // Sources are absolute so the same file has the same ids however it was named.
            let file = &file.canonicalize().unwrap_or_else(|_| file.clone());
            let unreadable = |e: std::io::Error| IngestIssue { file: file.clone(), line: None, message: format!("cannot read: {e}") };
            match extension(file).as_str() {
                "jsonl" => match read_jsonl(file, |d| documents.push(d)) {
                    Ok(issues) => report.issues.extend(issues),
                    Err(e) => report.issues.push(unreadable(e)),
                },
                "md" | "markdown" | "txt" => match std::fs::read_to_string(file) {
                    Ok(content) => {
                        let source = file.display().to_string();
                        let chunks = chunk_text_file(file, &source, &content, options.max_chunk_chars);
                        text_sources.push((source, chunks.iter().map(|d| d.id.clone()).collect()));
                        documents.extend(chunks);
                    }
                    Err(e) => report.issues.push(unreadable(e)),
                },
                other => report.issues.push(IngestIssue {
                    file: file.clone(),
                    line: None,
                    message: format!("unsupported file type `.{other}`: use .jsonl, .md or .txt"),
                }),
            }
        }
        self.ingest_documents(documents, options, &mut report, progress)?;
        for (source, kept) in text_sources {
            report.removed += self.remove_stale(&source, &kept)?;
        }
        Ok(report)
    }

    /// Delete the documents of `source` whose ids are not in `kept`; returns how many.
    fn remove_stale(&mut self, source: &str, kept: &HashSet<String>) -> Result<usize, IndexError> {
        let filter = Filter::new_must(Condition::Field(FieldCondition::new_match(
            field("source"),
            Match::Value(MatchValue { value: ValueVariants::String(source.to_owned()) }),
        )));
        let include = WithPayloadInterface::Selector(PayloadSelector::Include(PayloadSelectorInclude {
            include: vec![field("doc_id")],
        }));
        let mut stale = Vec::new();
        let mut offset = None;
        loop {
            let (records, next) = self
                .shard
                .scroll(ScrollRequest {
                    offset,
                    limit: Some(1_000),
                    filter: Some(filter.clone()),
                    with_payload: Some(include.clone()),
                    with_vector: WithVector::Bool(false),
                    order_by: None,
                })
                .map_err(|e| IndexError::Engine(e.to_string()))?;
            for record in records {
                let doc_id = record.payload.as_ref().and_then(|p| p.0.get("doc_id")).and_then(|v| v.as_str());
                if doc_id.is_none_or(|id| !kept.contains(id)) {
                    stale.push(record.id);
                }
            }
            match next {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
        if !stale.is_empty() {
            let removed = stale.len();
            self.shard
                .update(UpdateOperation::PointOperation(PointOperations::DeletePoints { ids: stale }))
                .map_err(|e| IndexError::Engine(e.to_string()))?;
            self.shard.flush();
            return Ok(removed);
        }
        Ok(0)
    }

    /// Ingest documents already in memory.
    pub fn ingest_documents(
        &mut self,
        documents: Vec<Document>,
        options: IngestOptions,
        report: &mut IngestReport,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(), IndexError> {
        // Later duplicates of an id win, as they would with sequential upserts.
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
        if unique.is_empty() {
            return Ok(());
        }
        if self.meta.avg_doc_len.is_none() {
            let total: usize = unique.iter().map(|d| token_count(&d.title, &d.text)).sum();
            self.meta.avg_doc_len = Some((total as f64 / unique.len() as f64).max(1.0));
            self.save_meta()?;
        }
        let encoder = bm25_encoder(self.meta.k1, self.meta.b, self.meta.avg_doc_len.unwrap_or(256.0))?;
        let total = unique.len();
        let mut done = 0;
        let mut written = false;
        for batch in unique.chunks(options.batch_size.max(1)) {
            let ids: Vec<PointId> = batch.iter().map(|d| point_id(&d.id)).collect();
            let stored = self.stored_hashes(&ids)?;
            let mut points = Vec::new();
            for (doc, id) in batch.iter().zip(&ids) {
                let hash = doc.content_hash();
                match stored.get(id) {
                    Some(old) if *old == hash => report.unchanged += 1,
                    Some(_) => report.updated += 1,
                    None => report.added += 1,
                }
                if stored.get(id) != Some(&hash) {
                    points.push(to_point(doc, *id, &hash, &encoder)?);
                }
            }
            if !points.is_empty() {
                written = true;
                self.shard
                    .update(UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                        PointInsertOperations::PointsList(points.into_iter().map(|p| p.0).collect()),
                    )))
                    .map_err(|e| IndexError::Engine(e.to_string()))?;
            }
            done += batch.len();
            progress(done, total);
        }
        if written {
            self.shard.flush();
        }
        Ok(())
    }

    fn stored_hashes(&self, ids: &[PointId]) -> Result<HashMap<PointId, String>, IndexError> {
        let include = WithPayloadInterface::Selector(PayloadSelector::Include(PayloadSelectorInclude {
            include: vec![field("hash")],
        }));
        let records = self.shard.retrieve(ids, Some(include), None).map_err(|e| IndexError::Engine(e.to_string()))?;
        Ok(records
            .into_iter()
            .filter_map(|r| {
                let hash = r.payload?.0.get("hash")?.as_str()?.to_owned();
                Some((r.id, hash))
            })
            .collect())
    }

    /// Run one search, blocking the calling thread.
    pub fn search_blocking(&self, request: &SearchRequest, backend_name: &str) -> Result<Vec<Hit>, IndexError> {
        let filter = request.filters.date_range.map(date_filter);
        let points = if let Some(n) = request.filters.most_recent {
            let order = OrderBy { key: field(DATE_FIELD), direction: Some(Direction::Desc), start_from: None };
            let has_date = Filter::new_must(Condition::Field(FieldCondition::new_range(
                field(DATE_FIELD),
                Range { lt: None, gt: None, gte: Some(OrderedFloat(f64::MIN)), lte: None },
            )));
            let filter = Some(match filter {
                Some(f) => f.merge_owned(has_date),
                None => has_date,
            });
            let (records, _) = self
                .shard
                .scroll(ScrollRequest {
                    offset: None,
                    limit: Some(n.min(request.limit)),
                    filter,
                    with_payload: Some(WithPayloadInterface::Bool(true)),
                    with_vector: WithVector::Bool(false),
                    order_by: Some(OrderByInterface::Struct(order)),
                })
                .map_err(|e| IndexError::Engine(e.to_string()))?;
            let count = records.len().max(1) as f32;
            records
                .into_iter()
                .enumerate()
                .map(|(rank, r)| (1.0 - rank as f32 / count, r.payload.map(|p| p.0).unwrap_or_default()))
                .collect::<Vec<_>>()
        } else {
            let sparse = self.query_encoder.embed_query(&request.query);
            if sparse.indices.is_empty() {
                return Ok(Vec::new());
            }
            let query = ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                VectorInternal::Sparse(sparse),
                SPARSE_VECTOR,
            )));
            self.shard
                .query(QueryRequest {
                    prefetches: Vec::new(),
                    query: Some(query),
                    filter,
                    score_threshold: None,
                    // Extra candidates so that ties at the cut are broken by us, not by the engine.
                    limit: request.limit + TIE_MARGIN,
                    offset: 0,
                    params: None,
                    with_vector: WithVector::Bool(false),
                    with_payload: WithPayloadInterface::Bool(true),
                })
                .map_err(|e| IndexError::Engine(e.to_string()))?
                .into_iter()
                .map(|p| (p.score, p.payload.map(|p| p.0).unwrap_or_default()))
                .collect()
        };
        let mut hits: Vec<Hit> = points.into_iter().filter_map(|(score, payload)| to_hit(score, payload, backend_name)).collect();
        if request.filters.most_recent.is_none() {
            // The engine orders equal scores by internal hash order, which changes between
            // ingests; the same index content must always give the same ranking.
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        }
        hits.truncate(request.limit);
        Ok(hits)
    }
}

fn ingestible(path: &Path) -> bool {
    matches!(extension(path).as_str(), "jsonl" | "md" | "markdown" | "txt")
}

fn extension(path: &Path) -> String {
    path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default()
}

fn bm25_encoder(k1: f64, b: f64, avg_len: f64) -> Result<EdgeBm25, IndexError> {
    let not_nan = |v: f64| NotNan::new(v).map_err(|e| IndexError::Engine(e.to_string()));
    EdgeBm25::new(EdgeBm25Config { k: not_nan(k1)?, b: not_nan(b)?, avg_len: not_nan(avg_len)?, ..Default::default() })
        .map_err(|e| IndexError::Engine(e.to_string()))
}

/// Tokens BM25 sees in a document, to measure the corpus's mean length: the engine drops stop
/// words, so they are not counted.
fn token_count(title: &str, text: &str) -> usize {
    let count = |s: &str| ferret_core::text::words(s).filter(|w| !ferret_core::text::is_stop_word(w)).count();
    count(title) + count(text)
}

fn point_id(doc_id: &str) -> PointId {
    let digest = Sha256::digest(doc_id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    PointId::NumId(u64::from_le_bytes(bytes))
}

fn days(date: NaiveDate) -> f64 {
    f64::from(date.to_epoch_days())
}

fn date_filter(range: DateRange) -> Filter {
    Filter::new_must(Condition::Field(FieldCondition::new_range(
        field(DATE_FIELD),
        Range {
            lt: None,
            gt: None,
            gte: range.from.map(|d| OrderedFloat(days(d))),
            lte: range.to.map(|d| OrderedFloat(days(d))),
        },
    )))
}

fn to_point(doc: &Document, id: PointId, hash: &str, encoder: &EdgeBm25) -> Result<PointStruct, IndexError> {
    // The title is searched with the text: BEIR's BM25 baselines index both.
    let sparse = encoder.embed_document(&format!("{}\n{}", doc.title, doc.text));
    let mut payload = serde_json::json!({
        "doc_id": doc.id,
        "title": doc.title,
        "text": doc.text,
        "source": doc.source,
        "hash": hash,
    });
    if let Some(url) = &doc.url {
        payload["url"] = url.clone().into();
    }
    if let Some(date) = doc.date {
        payload["date"] = date.to_string().into();
        payload[DATE_FIELD] = days(date).into();
    }
    let vectors = Vectors::new_named([(SPARSE_VECTOR, qdrant_edge::Vector::from(sparse))]);
    Ok(PointStruct::new(id, vectors, payload))
}

fn to_hit(score: f32, mut payload: serde_json::Map<String, serde_json::Value>, backend: &str) -> Option<Hit> {
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
    let mut hit = Hit::new(id, title, text, score, backend);
    hit.url = url;
    hit.date = date;
    hit.payload = payload;
    Some(hit)
}

/// [`LocalIndex`] as a [`SearchBackend`]: searches run on the blocking thread pool.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    name: String,
    index: Arc<LocalIndex>,
}

impl LocalBackend {
    /// Serve `index` under `name`.
    pub fn new(name: impl Into<String>, index: Arc<LocalIndex>) -> Self {
        Self { name: name.into(), index }
    }

    /// The index behind the backend.
    pub fn index(&self) -> &Arc<LocalIndex> {
        &self.index
    }
}

#[async_trait]
impl SearchBackend for LocalBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities { date_range: true, most_recent: true }
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let index = Arc::clone(&self.index);
        let request = request.clone();
        let name = self.name.clone();
        tokio::task::spawn_blocking(move || index.search_blocking(&request, &name))
            .await
            // A panic in the engine is deterministic for the same request: retrying cannot help.
            .map_err(|e| BackendError::permanent(&self.name, BackendErrorKind::Internal, format!("search task failed: {e}")))?
            .map_err(|e| match e {
                IndexError::Missing { .. } | IndexError::Unreadable { .. } | IndexError::Format { .. } => {
                    BackendError::permanent(&self.name, BackendErrorKind::Unavailable, e.to_string())
                }
                other => BackendError::permanent(&self.name, BackendErrorKind::Internal, other.to_string()),
            })
    }
}

/// A top-level payload key; built directly because the engine's parser is only exposed for tests.
fn field(name: &str) -> JsonPath {
    JsonPath { first_key: name.to_owned(), rest: Vec::new() }
}
