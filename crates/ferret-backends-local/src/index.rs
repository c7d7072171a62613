//! The index itself: its directory (locked, recovered), its shard and what stays fixed for its
//! life (`IndexMeta`), opened or created. Reading is `search`, writing `writing`, rewriting
//! `compaction`, and the search backend over it `backend`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ferret_collection::{
    bm25_encoder, embedder_fit, Bm25Params, DenseMeta, EmbedderMisfit, ACL_FIELD, DATE_FIELD,
    DENSE_VECTOR, SOURCE_FIELD, SPARSE_VECTOR,
};
use ferret_core::{Embedder, RetrievalMode, SearchRequest};
use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::{
    CreateIndex, Distance, EdgeConfigBuilder, EdgeOptimizersConfig, EdgeShard,
    EdgeSparseVectorParamsBuilder, EdgeVectorParamsBuilder, FieldIndexOperations, Filter, JsonPath,
    Modifier, PayloadFieldSchema, PayloadSchemaType, PayloadSelector, PayloadSelectorInclude,
    PointId, UpdateOperation, WithPayloadInterface,
};
use serde::{Deserialize, Serialize};

use crate::engine::{each_page, write_durably};
use crate::error::IndexError;
use crate::layout::{
    recover_compaction, remove_unfinished_shard, sibling_of_replaced, CREATING_FILE,
    FORMAT_VERSION, META_FILE,
};
use crate::lock::DirectoryLock;
use crate::seal::{self, SegmentPolicy};

/// What stays fixed for the life of an index: the BM25 parameters its document vectors were
/// computed with and, when it has dense vectors, the embedder that made them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IndexMeta {
    pub(crate) format: u32,
    pub(crate) avg_doc_len: Option<f64>,
    pub(crate) k1: f64,
    pub(crate) b: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dense: Option<DenseMeta>,
    /// Bytes the write-ahead log held right after the last compaction: one copy of the index,
    /// the baseline its history is measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) compacted_log_bytes: Option<u64>,
}

impl IndexMeta {
    pub(crate) fn bm25(&self) -> Bm25Params {
        Bm25Params {
            k1: self.k1,
            b: self.b,
            avg_doc_len: self.avg_doc_len,
        }
    }
}

/// An empty shard in `dir`: BM25 sparse vectors, and dense ones of `dense`'s dimension, sealed
/// as `optimizers` says. Sealed segments keep both in files the engine maps, so the memory an
/// index holds does not grow with it.
pub(crate) fn new_shard(
    dir: &Path,
    dense: Option<&DenseMeta>,
    optimizers: EdgeOptimizersConfig,
) -> Result<EdgeShard, IndexError> {
    let mut config = EdgeConfigBuilder::new()
        .sparse_vector(
            SPARSE_VECTOR,
            EdgeSparseVectorParamsBuilder::new()
                .modifier(Modifier::Idf)
                .on_disk(true)
                .build(),
        )
        .optimizers(optimizers);
    if let Some(dense) = dense {
        config = config.vector(
            DENSE_VECTOR,
            EdgeVectorParamsBuilder::new(dense.dimension, Distance::Cosine)
                .on_disk(true)
                .build(),
        );
    }
    let shard = EdgeShard::new(dir, config.build()).map_err(|e| IndexError::unreadable(dir, e))?;
    ensure_payload_indexes(&shard)?;
    Ok(shard)
}

/// An embedded index in a directory, which searches and ingests may share (behind an `Arc`).
///
/// Reads run concurrently. Ingests run one at a time, and each engine write or flush holds the
/// shard alone, so within a process no write overlaps a read or a flush (qdrant-edge panics when
/// a flush overlaps an update, so a flush never runs under the shared lock); searches run
/// between an ingest's batches, and see each batch once it is written. A seal (see
/// [`SegmentPolicy`]) runs beside searches: the engine swaps the sealed segment in atomically.
/// Every ingest that wrote ends with a flush because the engine does not replay its write-ahead
/// log on load. One process at a time has a directory open: a second
/// gets [`IndexError::Locked`], naming the first.
pub struct LocalIndex {
    pub(crate) dir: PathBuf,
    pub(crate) shard: RwLock<EdgeShard>,
    /// Fixed when the index is created, except the average length, kept in `avg_doc_len`.
    pub(crate) meta: IndexMeta,
    /// Measured by the first ingest that writes.
    pub(crate) avg_doc_len: Mutex<Option<f64>>,
    /// Held for the whole of an ingest.
    pub(crate) writer: tokio::sync::Mutex<()>,
    pub(crate) query_encoder: EdgeBm25,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    /// Document ids by point id, read from the payloads when a search first needs them and
    /// dropped by every write: the hits whose text is not read need no payload.
    pub(crate) doc_ids: RwLock<Option<Arc<HashMap<u64, String>>>>,
    /// Declared last, so it is released after the shard's last flush.
    pub(crate) _lock: DirectoryLock,
}

impl std::fmt::Debug for LocalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalIndex")
            .field("dir", &self.dir)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl LocalIndex {
    /// Open the index in `dir`, which must exist, for BM25 search.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, IndexError> {
        Self::open_with(dir, None)
    }

    /// Open the index in `dir`, which must exist. With an embedder, the index must hold dense
    /// vectors made by an embedder of the same name and dimension.
    pub fn open_with(
        dir: impl AsRef<Path>,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Self, IndexError> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            if sibling_of_replaced(dir) {
                // A compaction died between its renames: the folder comes back below.
                std::fs::create_dir_all(dir).map_err(|e| IndexError::unreadable(dir, e))?;
            } else {
                // Missing, or a file: said as reading the meta file says it.
                read_meta(dir)?;
            }
        }
        let lock = DirectoryLock::take(dir)?;
        recover_compaction(&lock.real)?;
        let meta = read_meta(dir)?;
        // Checked before the shard is loaded: a mismatched embedder must not touch the index.
        check_embedder(dir, meta.dense.as_ref(), embedder.as_deref())?;
        let shard = EdgeShard::load(dir, None).map_err(|e| IndexError::unreadable(dir, e))?;
        seal::repair_interrupted_seal(&shard, dir)?;
        // An index made before a field was filtered on gets its index now.
        ensure_payload_indexes(&shard)?;
        Self::with_shard(dir, shard, meta, embedder, lock)
    }

    /// Open the index in `dir`, creating an empty BM25-only one if the directory holds none.
    pub fn open_or_create(dir: impl AsRef<Path>) -> Result<Self, IndexError> {
        Self::open_or_create_with(dir, None)
    }

    /// Open the index in `dir`, creating an empty one if the directory holds none. A new index
    /// made with an embedder holds dense vectors of its dimension beside the BM25 ones.
    pub fn open_or_create_with(
        dir: impl AsRef<Path>,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Self, IndexError> {
        let dir = dir.as_ref();
        if dir.join(META_FILE).is_file() || sibling_of_replaced(dir) {
            return Self::open_with(dir, embedder);
        }
        std::fs::create_dir_all(dir).map_err(|e| IndexError::unreadable(dir, e))?;
        let lock = DirectoryLock::take(dir)?;
        recover_compaction(&lock.real)?;
        if dir.join(META_FILE).is_file() {
            drop(lock);
            return Self::open_with(dir, embedder);
        }
        remove_unfinished_shard(dir)?;
        std::fs::write(dir.join(CREATING_FILE), "").map_err(|e| IndexError::unreadable(dir, e))?;
        let dense = embedder.as_deref().map(DenseMeta::of);
        let shard = new_shard(
            dir,
            dense.as_ref(),
            SegmentPolicy::default().engine_config(),
        )?;
        let defaults = Bm25Params::default();
        let meta = IndexMeta {
            format: FORMAT_VERSION,
            avg_doc_len: None,
            k1: defaults.k1,
            b: defaults.b,
            dense,
            compacted_log_bytes: None,
        };
        let index = Self::with_shard(dir, shard, meta, embedder, lock)?;
        index.save_meta()?;
        std::fs::remove_file(dir.join(CREATING_FILE))
            .map_err(|e| IndexError::unreadable(dir, e))?;
        Ok(index)
    }

    pub(crate) fn with_shard(
        dir: &Path,
        shard: EdgeShard,
        meta: IndexMeta,
        embedder: Option<Arc<dyn Embedder>>,
        lock: DirectoryLock,
    ) -> Result<Self, IndexError> {
        let query_encoder = bm25_encoder(Bm25Params {
            avg_doc_len: Some(1.0),
            ..meta.bm25()
        })
        .map_err(IndexError::Engine)?;
        Ok(Self {
            dir: dir.to_owned(),
            shard: RwLock::new(shard),
            avg_doc_len: Mutex::new(meta.avg_doc_len),
            meta,
            writer: tokio::sync::Mutex::new(()),
            query_encoder,
            embedder,
            doc_ids: RwLock::new(None),
            _lock: lock,
        })
    }

    /// When ingests into this index seal the growing segment and merge sealed ones; kept in
    /// the index. An index made before sealing existed is not sealed until it is given a
    /// policy or compacted; given one, its sealed segments keep their BM25 index in memory,
    /// where a compacted one maps it from disk.
    pub fn set_segment_policy(&self, policy: SegmentPolicy) -> Result<(), IndexError> {
        self.shard()
            .set_optimizers_config(policy.engine_config())
            .map_err(|e| IndexError::unreadable(&self.dir, e))
    }

    /// The embedder whose vectors the index in `dir` holds, if any, read without opening it.
    pub fn dense_embedder_of(dir: impl AsRef<Path>) -> Result<Option<String>, IndexError> {
        Ok(read_meta(dir.as_ref())?.dense.map(|d| d.embedder))
    }

    /// The embedder the index's dense vectors came from, when it has them.
    pub fn dense_embedder(&self) -> Option<&str> {
        self.meta.dense.as_ref().map(|d| d.embedder.as_str())
    }

    /// Whether `mode` can run on this index as opened: dense and hybrid need dense vectors and
    /// the embedder that made them.
    pub fn supports(&self, mode: RetrievalMode) -> Result<(), IndexError> {
        if !mode.needs_embeddings() {
            return Ok(());
        }
        match (&self.meta.dense, &self.embedder) {
            (None, _) => Err(IndexError::NoDenseVectors {
                path: self.dir.clone(),
                mode,
            }),
            (Some(dense), None) => Err(IndexError::EmbedderNeeded {
                path: self.dir.clone(),
                mode,
                embedder: dense.embedder.clone(),
            }),
            (Some(_), Some(_)) => Ok(()),
        }
    }

    /// The query's embedding, for dense and hybrid search.
    pub async fn embed_query(
        &self,
        query: &str,
        mode: RetrievalMode,
    ) -> Result<Option<Vec<f32>>, IndexError> {
        self.supports(mode)?;
        let Some(embedder) = self.embedder.as_ref().filter(|_| mode.needs_embeddings()) else {
            return Ok(None);
        };
        let mut vectors = embedder.embed(&[query.to_owned()]).await?;
        Ok(vectors.pop())
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Documents in the index.
    pub fn len(&self) -> usize {
        self.shard().info().points_count
    }

    /// Segments the engine holds: the sealed ones and the one growing (see [`SegmentPolicy`]).
    pub fn segment_count(&self) -> usize {
        self.shard().info().segments_count
    }

    /// True when nothing has been ingested.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A keyword search for `request` needs nothing read first: the document ids by point id
    /// (a walk over every payload the first time) are read already, or not needed.
    pub(crate) fn answers_at_once(&self, request: &SearchRequest) -> bool {
        request.text_for.filter(|&n| n < request.limit).is_none()
            || self
                .doc_ids
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
    }

    /// A write (an ingest, a deletion) holds the shard now: a search would wait for it.
    pub(crate) fn is_being_written(&self) -> bool {
        matches!(
            self.shard.try_read(),
            Err(std::sync::TryLockError::WouldBlock)
        )
    }

    /// The shard, for reading; writes wait.
    pub(crate) fn shard(&self) -> RwLockReadGuard<'_, EdgeShard> {
        // A panic in the engine leaves nothing half-done on our side, so a poisoned lock is used.
        self.shard.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shard, for one write or flush; reads wait.
    pub(crate) fn shard_mut(&self) -> RwLockWriteGuard<'_, EdgeShard> {
        self.shard.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Add the points of `documents` to the document ids, if they were read: called under the
    /// write guard of the upsert that adds them, so no search sees the points without their
    /// ids. Deleted points need no removal: no search returns them, and an id never changes
    /// its point.
    pub(crate) fn note_doc_ids<'d>(&self, documents: impl Iterator<Item = (u64, &'d str)>) {
        let mut kept = self.doc_ids.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(ids) = kept.as_mut() {
            let ids = Arc::make_mut(ids);
            for (point, doc_id) in documents {
                ids.insert(point, doc_id.to_owned());
            }
        }
    }

    /// The document id of every point, read once from `shard` under the caller's read guard
    /// (about a hundred bytes a point), then kept up to date by each upsert.
    pub(crate) fn doc_ids(
        &self,
        shard: &RwLockReadGuard<'_, EdgeShard>,
    ) -> Result<Arc<HashMap<u64, String>>, IndexError> {
        if let Some(ids) = &*self.doc_ids.read().unwrap_or_else(PoisonError::into_inner) {
            return Ok(Arc::clone(ids));
        }
        let mut ids = HashMap::new();
        each_doc_id(shard, None, |point, doc_id| {
            if let (PointId::NumId(point), Some(doc_id)) = (point, doc_id) {
                ids.insert(point, doc_id.to_owned());
            }
        })?;
        let ids = Arc::new(ids);
        *self.doc_ids.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&ids));
        Ok(ids)
    }

    pub(crate) fn bm25(&self) -> Bm25Params {
        Bm25Params {
            avg_doc_len: *self
                .avg_doc_len
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            ..self.meta.bm25()
        }
    }

    pub(crate) fn save_meta(&self) -> Result<(), IndexError> {
        let meta = IndexMeta {
            avg_doc_len: self.bm25().avg_doc_len,
            ..self.meta.clone()
        };
        let json =
            serde_json::to_string_pretty(&meta).map_err(|e| IndexError::Engine(e.to_string()))?;
        // A process killed mid-write leaves the old file.
        write_durably(&self.dir.join(META_FILE), json.as_bytes())
    }
}

/// Every point `filter` admits (all of them without one), a page at a time, with the document id
/// its payload holds; only that field is read.
pub(crate) fn each_doc_id(
    shard: &EdgeShard,
    filter: Option<Filter>,
    mut visit: impl FnMut(PointId, Option<&str>),
) -> Result<(), IndexError> {
    let include =
        WithPayloadInterface::Selector(PayloadSelector::Include(PayloadSelectorInclude {
            include: vec![field("doc_id")],
        }));
    each_page(shard, 1_000, filter, include, false, |records| {
        for record in records {
            let doc_id = record
                .payload
                .as_ref()
                .and_then(|p| p.0.get("doc_id"))
                .and_then(|v| v.as_str());
            visit(record.id, doc_id);
        }
        Ok(())
    })
}

pub(crate) fn read_meta(dir: &Path) -> Result<IndexMeta, IndexError> {
    let meta_path = dir.join(META_FILE);
    if !meta_path.is_file() {
        if dir.exists() && !dir.is_dir() {
            return Err(IndexError::unreadable(dir, "it is a file, not a directory"));
        }
        return Err(IndexError::Missing {
            path: dir.to_owned(),
        });
    }
    let raw = std::fs::read_to_string(&meta_path).map_err(|e| IndexError::unreadable(dir, e))?;
    let meta: IndexMeta = serde_json::from_str(&raw)
        .map_err(|e| IndexError::unreadable(dir, format!("{META_FILE}: {e}")))?;
    if meta.format != FORMAT_VERSION {
        return Err(IndexError::Format {
            path: dir.to_owned(),
            found: meta.format,
            expected: FORMAT_VERSION,
        });
    }
    Ok(meta)
}

/// An embedder may open an index only if it made the index's vectors.
pub(crate) fn check_embedder(
    dir: &Path,
    dense: Option<&DenseMeta>,
    embedder: Option<&dyn Embedder>,
) -> Result<(), IndexError> {
    embedder_fit(dense, embedder).map_err(|misfit| match misfit {
        EmbedderMisfit::NoDenseVectors => IndexError::NoDenseVectors {
            path: dir.to_owned(),
            mode: RetrievalMode::Dense,
        },
        EmbedderMisfit::Mismatch { stored, offered } => IndexError::EmbedderMismatch {
            path: dir.to_owned(),
            index_embedder: stored.embedder,
            index_dimension: stored.dimension,
            embedder: offered.embedder,
            embedder_dimension: offered.dimension,
        },
    })
}

/// Payload fields searches filter or order on, with their index types.
pub(crate) const PAYLOAD_INDEXES: [(&str, PayloadSchemaType); 3] = [
    (DATE_FIELD, PayloadSchemaType::Float),
    (SOURCE_FIELD, PayloadSchemaType::Keyword),
    (ACL_FIELD, PayloadSchemaType::Keyword),
];

/// Index the payload fields of [`PAYLOAD_INDEXES`] that `shard` does not index yet.
pub(crate) fn ensure_payload_indexes(shard: &EdgeShard) -> Result<(), IndexError> {
    let indexed = shard.info().payload_schema;
    let mut created = false;
    for (name, schema) in PAYLOAD_INDEXES {
        if indexed.contains_key(&field(name)) {
            continue;
        }
        shard
            .update(UpdateOperation::FieldIndexOperation(
                FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name: field(name),
                    field_schema: Some(PayloadFieldSchema::FieldType(schema)),
                }),
            ))
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        created = true;
    }
    if created {
        shard.flush();
    }
    Ok(())
}

/// A top-level payload key; built directly because the engine's parser is only exposed for tests.
pub(crate) fn field(name: &str) -> JsonPath {
    JsonPath {
        first_key: name.to_owned(),
        rest: Vec::new(),
    }
}
