use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use ferret_collection::{
    bm25_encoder, date_days, embedder_fit, payload, point_id, rank_hits, to_hit, Bm25Params,
    DenseMeta, Document, DocumentStream, EmbedderMisfit, IngestOptions, IngestReport, PendingPoint,
    PointStore, ACL_FIELD, DATE_FIELD, DENSE_VECTOR, PREFETCH_LIMIT, RRF_K, SOURCE_FIELD,
    SPARSE_VECTOR, TIE_MARGIN,
};
use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, Embedder, Filters, Hit, QueryForm,
    RetrievalMode, SearchBackend, SearchRequest, Unlisted,
};
use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::external::ordered_float::OrderedFloat;
use qdrant_edge::{
    Condition, CreateIndex, Direction, Distance, EdgeConfigBuilder, EdgeOptimizersConfig,
    EdgeShard, EdgeSparseVectorParamsBuilder, EdgeVectorParamsBuilder, FieldCondition,
    FieldIndexOperations, Filter, Fusion, JsonPath, Match, MatchValue, Modifier, NamedQuery,
    OrderBy, OrderByInterface, PayloadFieldSchema, PayloadSchemaType, PayloadSelector,
    PayloadSelectorInclude, PointId, PointInsertOperations, PointOperations, PointStruct, Prefetch,
    QueryEnum, QueryRequest, Range, ScoringQuery, ScrollRequest, UpdateOperation, ValueVariants,
    VectorInternal, Vectors, WithPayloadInterface, WithVector,
};
use serde::{Deserialize, Serialize};

use crate::engine::{
    each_page, each_page_whole, remove_entry, stored_point, write_durably, ENGINE_TEMP_DIR,
};
use crate::error::IndexError;
use crate::seal::{self, SegmentPolicy};

const META_FILE: &str = "ferret-index.json";
const FORMAT_VERSION: u32 = 1;

/// What stays fixed for the life of an index: the BM25 parameters its document vectors were
/// computed with and, when it has dense vectors, the embedder that made them.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexMeta {
    format: u32,
    avg_doc_len: Option<f64>,
    k1: f64,
    b: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dense: Option<DenseMeta>,
    /// Bytes the write-ahead log held right after the last compaction: one copy of the index,
    /// the baseline its history is measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compacted_log_bytes: Option<u64>,
}

impl IndexMeta {
    fn bm25(&self) -> Bm25Params {
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
fn new_shard(
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

/// What [`LocalIndex::compact`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Documents carried over.
    pub points: usize,
    /// Bytes the directory held before and after.
    pub bytes_before: u64,
    /// See [`Compaction::bytes_before`].
    pub bytes_after: u64,
}

/// Siblings of an index directory (its real path, links resolved) that a compaction uses: the
/// new index while it is built, and the old one between the two renames that swap them.
fn compaction_siblings(real: &Path) -> (PathBuf, PathBuf) {
    (sibling(real, "compacting"), sibling(real, "replaced"))
}

/// `<name>.<suffix>` beside `real`.
fn sibling(real: &Path, suffix: &str) -> PathBuf {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index".to_owned());
    real.with_file_name(format!("{name}.{suffix}"))
}

/// A compaction was swapping `dir` when its process died: the old index waits beside it.
fn sibling_of_replaced(dir: &Path) -> bool {
    let Some(name) = dir.file_name() else {
        return false;
    };
    let mut replaced = name.to_os_string();
    replaced.push(".replaced");
    dir.with_file_name(replaced).join(META_FILE).is_file()
}

/// A directory this code made: an index (its meta file) or a shard (the engine's config).
fn is_index_directory(path: &Path) -> bool {
    path.join(META_FILE).is_file() || path.join(ENGINE_CONFIG_FILE).is_file()
}

/// Finish or undo a compaction a killed process left (called holding the lock): with the
/// directory gone between the swap's two renames, the new index takes its place if it was
/// complete (its meta file is written last), else the old one comes back; with the directory
/// in place, the leftovers are not needed.
fn recover_compaction(real: &Path) -> Result<(), IndexError> {
    let (compacting, replaced) = compaction_siblings(real);
    if !real.join(META_FILE).is_file() && replaced.join(META_FILE).is_file() {
        if real.exists() {
            // Only an empty folder can stand where the index was: a process that found no
            // index there between the renames made it.
            std::fs::remove_dir(real).map_err(|e| IndexError::unreadable(real, e))?;
        }
        let back = if compacting.join(META_FILE).is_file() {
            &compacting
        } else {
            &replaced
        };
        std::fs::rename(back, real).map_err(|e| IndexError::unreadable(real, e))?;
    }
    for leftover in [compacting, replaced] {
        remove_leftover(&leftover)?;
    }
    Ok(())
}

/// Remove what a compaction left at `path`: a folder it marked, or one holding an index (or
/// nothing); anything else there is not ours and stays.
fn remove_leftover(path: &Path) -> Result<(), IndexError> {
    if path.join(COMPACTING_FILE).is_file() || is_index_directory(path) {
        discard(path)?;
    } else if path.is_dir() {
        // Made, then killed before it was marked: empty. Anything else there is not ours.
        let _ = std::fs::remove_dir(path);
    }
    Ok(())
}

/// Remove the folder at `path`, marked as a compaction's first, its mark removed last: a
/// process killed halfway leaves a folder still known as a leftover.
fn discard(path: &Path) -> Result<(), IndexError> {
    let fail = |e: std::io::Error| IndexError::unreadable(path, e);
    std::fs::write(path.join(COMPACTING_FILE), "").map_err(fail)?;
    for entry in std::fs::read_dir(path).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        if entry.file_name() == COMPACTING_FILE {
            continue;
        }
        remove_entry(&entry.path()).map_err(fail)?;
    }
    std::fs::remove_dir_all(path).map_err(fail)
}

/// Written first into the folder a compaction builds, so what a killed one left is known as
/// its own.
const COMPACTING_FILE: &str = "ferret-compacting";

/// Copy what `from` holds besides the engine's files and the meta file into `to`.
fn copy_other_files(from: &Path, to: &Path) -> Result<(), IndexError> {
    const ENGINE: [&str; 5] = [
        ENGINE_CONFIG_FILE,
        "wal",
        "segments",
        ENGINE_TEMP_DIR,
        META_FILE,
    ];
    let entries = std::fs::read_dir(from).map_err(|e| IndexError::unreadable(from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| IndexError::unreadable(from, e))?;
        let name = entry.file_name();
        if ENGINE.iter().any(|engine| name == *engine) {
            continue;
        }
        let target = to.join(&name);
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| IndexError::unreadable(to, e))?;
            copy_other_files(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| IndexError::unreadable(to, e))?;
        }
    }
    Ok(())
}

/// Bytes the files under `path` hold on disk (blocks in use, where the system says: the
/// engine's log files are allocated ahead of what they hold).
fn disk_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return std::fs::metadata(path).map_or(0, |m| {
            #[cfg(unix)]
            let bytes = std::os::unix::fs::MetadataExt::blocks(&m) * 512;
            #[cfg(not(unix))]
            let bytes = m.len();
            bytes
        });
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| disk_bytes(&entry.path()))
        .sum()
}

/// Written before a new index's shard and removed once its meta file is: while it is there,
/// the index was never finished.
const CREATING_FILE: &str = "ferret-creating";

/// The engine's files in a directory whose index was never finished: a process killed between
/// creating the shard and writing [`META_FILE`] leaves them (and [`CREATING_FILE`]), and the
/// engine refuses to create a shard over them. Nothing in them was ever reported written.
/// Without the marker nothing is touched: the files are someone else's, or an index whose meta
/// file was lost, and creating an index there fails instead.
fn remove_unfinished_shard(dir: &Path) -> Result<(), IndexError> {
    if !dir.join(CREATING_FILE).is_file() || dir.join(META_FILE).is_file() {
        return Ok(());
    }
    for entry in [ENGINE_CONFIG_FILE, "wal", "segments", ENGINE_TEMP_DIR] {
        match remove_entry(&dir.join(entry)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(IndexError::unreadable(dir, e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The engine's own description of a shard, which it writes first when creating one.
const ENGINE_CONFIG_FILE: &str = "edge_config.json";

/// An exclusive lock on an index directory, held for as long as the index is open: an
/// advisory `flock` on `<name>.lock` beside the directory (not in it, so a compaction swapping
/// the directory keeps holding it), which goes with the process however that ends, `SIGKILL`
/// included. The file says which process holds it.
#[derive(Debug)]
struct DirectoryLock {
    _file: std::fs::File,
    /// The directory's real path, links resolved.
    real: PathBuf,
}

impl DirectoryLock {
    /// Lock `dir`, which must exist.
    fn take(dir: &Path) -> Result<Self, IndexError> {
        use std::io::Write as _;
        let real = std::fs::canonicalize(dir).map_err(|e| IndexError::unreadable(dir, e))?;
        if real.parent().is_none() {
            return Err(IndexError::unreadable(
                dir,
                "an index cannot be the root folder",
            ));
        }
        let path = sibling(&real, "lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| IndexError::unreadable(dir, e))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {
                // The holder's id, for the error a second process gets.
                file.set_len(0)
                    .and_then(|()| write!(file, "{}", std::process::id()))
                    .map_err(|e| IndexError::unreadable(dir, e))?;
                Ok(Self { _file: file, real })
            }
            Err(fs4::TryLockError::WouldBlock) => Err(IndexError::Locked {
                path: dir.to_owned(),
                holder: std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|pid| pid.trim().parse().ok()),
            }),
            Err(fs4::TryLockError::Error(e)) => Err(IndexError::unreadable(dir, e)),
        }
    }
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
    dir: PathBuf,
    shard: RwLock<EdgeShard>,
    /// Fixed when the index is created, except the average length, kept in `avg_doc_len`.
    meta: IndexMeta,
    /// Measured by the first ingest that writes.
    avg_doc_len: Mutex<Option<f64>>,
    /// Held for the whole of an ingest.
    writer: tokio::sync::Mutex<()>,
    query_encoder: EdgeBm25,
    embedder: Option<Arc<dyn Embedder>>,
    /// Document ids by point id, read from the payloads when a search first needs them and
    /// dropped by every write: the hits whose text is not read need no payload.
    doc_ids: RwLock<Option<Arc<HashMap<u64, String>>>>,
    /// Declared last, so it is released after the shard's last flush.
    _lock: DirectoryLock,
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

    fn with_shard(
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

    /// Rebuild the index in `dir` from its points alone, leaving the engine's write-ahead log
    /// (which it never truncates: every write of the index's life is in it) and its deleted
    /// points behind. The new index is built beside the old one, which stays locked meanwhile,
    /// and swapped in by two renames; a process killed at any point leaves the old index or
    /// the new one, whichever the next open finds complete.
    pub fn compact(dir: impl AsRef<Path>) -> Result<Compaction, IndexError> {
        let dir = dir.as_ref();
        let old = Self::open(dir)?;
        let real = old._lock.real.clone();
        let bytes_before = disk_bytes(&real);
        let (compacting, replaced) = compaction_siblings(&real);
        remove_leftover(&compacting)?;
        if compacting.exists() {
            return Err(IndexError::unreadable(
                dir,
                format!("{} is in the way of the compaction", compacting.display()),
            ));
        }
        std::fs::create_dir_all(&compacting)
            .and_then(|()| std::fs::write(compacting.join(COMPACTING_FILE), ""))
            .map_err(|e| IndexError::unreadable(&compacting, e))?;
        let shard = new_shard(
            &compacting,
            old.meta.dense.as_ref(),
            seal::sealing_config(&old.shard()),
        )?;
        let mut points = 0;
        each_page_whole(&old.shard(), 1_000, |records| {
            let batch: Vec<_> = records.into_iter().filter_map(stored_point).collect();
            points += batch.len();
            if !batch.is_empty() {
                shard
                    .update(UpdateOperation::PointOperation(
                        PointOperations::UpsertPoints(PointInsertOperations::PointsList(batch)),
                    ))
                    .map_err(|e| IndexError::Engine(e.to_string()))?;
                seal::seal_unmarked(&shard)?;
            }
            Ok(())
        })?;
        shard.flush();
        drop(shard);
        let expected = old.len();
        if points != expected {
            let _ = std::fs::remove_dir_all(&compacting);
            return Err(IndexError::Engine(format!(
                "the compaction read {points} of the index's {expected} documents; the index is left as it was"
            )));
        }
        // Whatever else the directory holds (the knowledge registry) comes along, copied so
        // the old directory keeps it until the swap.
        copy_other_files(&real, &compacting)?;
        // The meta file, written last, marks the new index complete.
        let meta = IndexMeta {
            avg_doc_len: old.bm25().avg_doc_len,
            compacted_log_bytes: Some(disk_bytes(&compacting.join("wal"))),
            ..old.meta.clone()
        };
        let json =
            serde_json::to_string_pretty(&meta).map_err(|e| IndexError::Engine(e.to_string()))?;
        write_durably(&compacting.join(META_FILE), json.as_bytes())?;
        std::fs::remove_file(compacting.join(COMPACTING_FILE))
            .map_err(|e| IndexError::unreadable(&compacting, e))?;
        // The old shard is closed, its lock kept until the new index is in place.
        let Self { shard, _lock, .. } = old;
        drop(shard);
        std::fs::rename(&real, &replaced).map_err(|e| IndexError::unreadable(dir, e))?;
        std::fs::rename(&compacting, &real).map_err(|e| IndexError::unreadable(dir, e))?;
        discard(&replaced)?;
        drop(_lock);
        Ok(Compaction {
            points,
            bytes_before,
            bytes_after: disk_bytes(&real),
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

    /// Bytes the engine's write-ahead log in `dir` holds on disk (0 when there is none).
    pub fn wal_bytes(dir: impl AsRef<Path>) -> u64 {
        disk_bytes(&dir.as_ref().join("wal"))
    }

    /// Bytes the write-ahead log in `dir` has grown since the last compaction (since the
    /// index was made, if never): the history [`LocalIndex::compact`] gives back. The log a
    /// compaction leaves holds one copy of the index, the baseline, so a threshold on this does
    /// not fire again right after.
    pub fn log_history_bytes(dir: impl AsRef<Path>) -> u64 {
        let dir = dir.as_ref();
        let baseline = read_meta(dir)
            .ok()
            .and_then(|meta| meta.compacted_log_bytes)
            .unwrap_or(0);
        Self::wal_bytes(dir).saturating_sub(baseline)
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
    fn answers_at_once(&self, request: &SearchRequest) -> bool {
        request.text_for.filter(|&n| n < request.limit).is_none()
            || self
                .doc_ids
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
    }

    /// A write (an ingest, a deletion) holds the shard now: a search would wait for it.
    fn is_being_written(&self) -> bool {
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
    fn note_doc_ids<'d>(&self, documents: impl Iterator<Item = (u64, &'d str)>) {
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
    fn doc_ids(
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

    fn bm25(&self) -> Bm25Params {
        Bm25Params {
            avg_doc_len: *self
                .avg_doc_len
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            ..self.meta.bm25()
        }
    }

    fn save_meta(&self) -> Result<(), IndexError> {
        let meta = IndexMeta {
            avg_doc_len: self.bm25().avg_doc_len,
            ..self.meta.clone()
        };
        let json =
            serde_json::to_string_pretty(&meta).map_err(|e| IndexError::Engine(e.to_string()))?;
        // A process killed mid-write leaves the old file.
        write_durably(&self.dir.join(META_FILE), json.as_bytes())
    }

    /// Ingest a file or a folder: `.jsonl` files as records, `.md` / `.txt` files as chunked text.
    /// Folders are walked recursively; other files in them are skipped. `progress(done, total)` is
    /// called after each batch. Waits for an ingest already running.
    pub async fn ingest_path(
        &self,
        path: &Path,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_path(&mut Writer(self), path, options, progress).await
    }

    /// Ingest documents being read from files ([`ferret_collection::stream_path`]) or already
    /// read (sent: see [`PathDocuments::add_upload`](ferret_collection::PathDocuments::add_upload)); the report carries what reading them
    /// found wrong. Waits for an ingest already running.
    pub async fn ingest_read(
        &self,
        found: impl Into<DocumentStream> + Send,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_read(&mut Writer(self), found, options, progress).await
    }

    /// Delete the documents of `source` whose ids are not in `kept`; returns how many.
    fn remove_stale(
        &self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, IndexError> {
        if writer.is_some_and(Access::admits_nothing) {
            return Ok(0);
        }
        let of_source = Filter::new_must(Condition::Field(FieldCondition::new_match(
            field(SOURCE_FIELD),
            Match::Value(MatchValue {
                value: ValueVariants::String(source.to_owned()),
            }),
        )));
        // A writer removes only chunks it may read: another group's file of the same name stays.
        let readable = engine_filter(&Filters {
            access: writer.cloned(),
            ..Filters::default()
        });
        let filter = match readable {
            Some(readable) => of_source.merge_owned(readable),
            None => of_source,
        };
        let mut stale = Vec::new();
        each_doc_id(&self.shard(), Some(filter), |point, doc_id| {
            if doc_id.is_none_or(|id| !kept.contains(id)) {
                stale.push(point);
            }
        })?;
        if !stale.is_empty() {
            let removed = stale.len();
            let shard = self.shard_mut();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids: stale },
                ))
                .map_err(|e| IndexError::Engine(e.to_string()))?;
            shard.flush();
            return Ok(removed);
        }
        Ok(0)
    }

    /// Ingest documents already in memory. Only new or changed documents are embedded and
    /// written; the index is flushed before this returns, so what it reports is on disk. Waits
    /// for an ingest already running.
    pub async fn ingest_documents(
        &self,
        documents: Vec<Document>,
        options: IngestOptions,
        report: &mut IngestReport,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<(), IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_documents(&mut Writer(self), documents, options, report, progress)
            .await
    }

    /// The stored document `id` as a hit of `backend_name`, when `access` (if any) lets the
    /// asker read it: for reading a document whole by the id a search returned. The engine
    /// applies the same filter as a search, so a document the asker may not read is not found,
    /// as one that does not exist.
    pub fn document(
        &self,
        id: &str,
        access: Option<&Access>,
        backend_name: &str,
    ) -> Result<Option<Hit>, IndexError> {
        if access.is_some_and(Access::admits_nothing) {
            return Ok(None);
        }
        let the_id = Condition::HasId(std::iter::once(PointId::NumId(point_id(id))).collect());
        let readable = engine_filter(&Filters {
            access: access.cloned(),
            ..Filters::default()
        });
        let filter = Filter {
            should: None,
            min_should: None,
            must: Some(
                std::iter::once(the_id)
                    .chain(readable.map(Condition::Filter))
                    .collect(),
            ),
            must_not: None,
        };
        let (records, _) = self
            .shard()
            .scroll(ScrollRequest {
                offset: None,
                limit: Some(1),
                filter: Some(filter),
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(false),
                order_by: None,
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        Ok(records
            .into_iter()
            .next()
            .and_then(|r| r.payload)
            .and_then(|payload| to_hit(1.0, payload.0, backend_name))
            .filter(|hit| hit.id.0 == id))
    }

    /// Of `ids`, those the index holds and `access` lets the asker read, by the lists stored
    /// now: the same filter a search applies, asked of the stored documents by id.
    pub fn readable(&self, ids: &[String], access: &Access) -> Result<HashSet<String>, IndexError> {
        if access.admits_nothing() || ids.is_empty() {
            return Ok(HashSet::new());
        }
        let points = ids.iter().map(|id| PointId::NumId(point_id(id))).collect();
        let readable = engine_filter(&Filters {
            access: Some(access.clone()),
            ..Filters::default()
        });
        let filter = Filter {
            should: None,
            min_should: None,
            must: Some(
                std::iter::once(Condition::HasId(points))
                    .chain(readable.map(Condition::Filter))
                    .collect(),
            ),
            must_not: None,
        };
        let asked: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut found = HashSet::new();
        each_doc_id(&self.shard(), Some(filter), |_, doc_id| {
            // A point id is a hash of the document id: the stored id must be the one asked.
            if let Some(id) = doc_id.filter(|id| asked.contains(id)) {
                found.insert(id.to_owned());
            }
        })?;
        Ok(found)
    }

    fn stored_hashes(&self, ids: &[PointId]) -> Result<HashMap<u64, String>, IndexError> {
        let include =
            WithPayloadInterface::Selector(PayloadSelector::Include(PayloadSelectorInclude {
                include: vec![field("hash")],
            }));
        let records = self
            .shard()
            .retrieve(ids, Some(include), None)
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        Ok(records
            .into_iter()
            .filter_map(|r| {
                let hash = r.payload?.0.get("hash")?.as_str()?.to_owned();
                match r.id {
                    PointId::NumId(id) => Some((id, hash)),
                    PointId::Uuid(_) => None,
                }
            })
            .collect())
    }

    /// Run one search, blocking the calling thread. Dense and hybrid search take the query's
    /// embedding from [`embed_query`](Self::embed_query).
    pub fn search_blocking(
        &self,
        request: &SearchRequest,
        mode: RetrievalMode,
        query_vector: Option<&[f32]>,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        if request
            .filters
            .access
            .as_ref()
            .is_some_and(Access::admits_nothing)
        {
            return Ok(Vec::new());
        }
        let filter = engine_filter(&request.filters);
        if let Some(n) = request.filters.most_recent {
            return self.most_recent(n.min(request.limit), filter, backend_name);
        }
        let sparse = || {
            let vector = self.query_encoder.embed_query(&request.query);
            (!vector.indices.is_empty())
                .then(|| NamedQuery::new(VectorInternal::Sparse(vector), SPARSE_VECTOR))
        };
        let dense = || -> Result<NamedQuery<VectorInternal>, IndexError> {
            self.supports(mode)?;
            let vector = query_vector.ok_or_else(|| {
                IndexError::Engine(format!("{mode} search was given no query vector"))
            })?;
            Ok(NamedQuery::new(
                VectorInternal::Dense(vector.to_vec()),
                DENSE_VECTOR,
            ))
        };
        let nearest = |q: NamedQuery<VectorInternal>| ScoringQuery::Vector(QueryEnum::Nearest(q));
        // Extra candidates so that ties at the cut are broken by us, not by the engine.
        let limit = request.limit + TIE_MARGIN;
        let (prefetches, query) = match mode {
            RetrievalMode::Bm25 => match sparse() {
                Some(q) => (Vec::new(), nearest(q)),
                None => return Ok(Vec::new()),
            },
            RetrievalMode::Dense => (Vec::new(), nearest(dense()?)),
            RetrievalMode::Hybrid => {
                let prefetch = |q| Prefetch {
                    prefetches: Vec::new(),
                    query: Some(nearest(q)),
                    limit: PREFETCH_LIMIT.max(limit),
                    params: None,
                    filter: filter.clone(),
                    score_threshold: None,
                };
                let mut prefetches = vec![prefetch(dense()?)];
                prefetches.extend(sparse().map(prefetch));
                (
                    prefetches,
                    ScoringQuery::Fusion(Fusion::Rrf {
                        k: RRF_K,
                        weights: None,
                    }),
                )
            }
        };
        // Fewer hits read than returned: the ranking needs only ids and scores, and the text of
        // the first few is read afterwards.
        let text_for = request.text_for.filter(|&n| n < request.limit);
        let shard = self.shard();
        let points = shard
            .query(QueryRequest {
                prefetches,
                query: Some(query),
                filter,
                score_threshold: None,
                limit,
                offset: 0,
                params: None,
                with_vector: WithVector::Bool(false),
                with_payload: WithPayloadInterface::Bool(text_for.is_none()),
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        if let Some(read) = text_for {
            return self.ranked_by_id(&shard, points, request.limit, read, backend_name);
        }
        let hits = points
            .into_iter()
            .filter_map(|p| {
                to_hit(
                    p.score,
                    p.payload.map(|p| p.0).unwrap_or_default(),
                    backend_name,
                )
            })
            .collect();
        Ok(rank_hits(hits, request.limit))
    }

    /// `points` ranked as [`rank_hits`] ranks hits and cut to `limit`, the first `read` with their
    /// text and payload, the others with their id and score only.
    fn ranked_by_id(
        &self,
        shard: &RwLockReadGuard<'_, EdgeShard>,
        points: Vec<qdrant_edge::ScoredPoint>,
        limit: usize,
        read: usize,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        let ids = self.doc_ids(shard)?;
        let mut ranked: Vec<(f32, &String, u64)> = points
            .iter()
            .filter_map(|p| match p.id {
                PointId::NumId(point) => ids.get(&point).map(|doc| (p.score, doc, point)),
                PointId::Uuid(_) => None,
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        ranked.truncate(limit);
        let wanted: Vec<PointId> = ranked
            .iter()
            .take(read)
            .map(|&(_, _, point)| PointId::NumId(point))
            .collect();
        let mut whole: HashMap<u64, serde_json::Map<String, serde_json::Value>> = shard
            .retrieve(&wanted, Some(WithPayloadInterface::Bool(true)), None)
            .map_err(|e| IndexError::Engine(e.to_string()))?
            .into_iter()
            .filter_map(|r| match (r.id, r.payload) {
                (PointId::NumId(point), Some(payload)) => Some((point, payload.0)),
                _ => None,
            })
            .collect();
        Ok(ranked
            .into_iter()
            .map(|(score, doc, point)| {
                whole
                    .remove(&point)
                    .and_then(|payload| to_hit(score, payload, backend_name))
                    .unwrap_or_else(|| Hit::new(doc.clone(), "", "", score, backend_name))
            })
            .collect())
    }

    /// The newest `n` dated documents, newest first, scored from 1 down.
    fn most_recent(
        &self,
        n: usize,
        filter: Option<Filter>,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        let order = OrderBy {
            key: field(DATE_FIELD),
            direction: Some(Direction::Desc),
            start_from: None,
        };
        let has_date = Filter::new_must(Condition::Field(FieldCondition::new_range(
            field(DATE_FIELD),
            Range {
                lt: None,
                gt: None,
                gte: Some(OrderedFloat(f64::MIN)),
                lte: None,
            },
        )));
        let filter = Some(match filter {
            Some(f) => f.merge_owned(has_date),
            None => has_date,
        });
        let (records, _) = self
            .shard()
            .scroll(ScrollRequest {
                offset: None,
                limit: Some(n),
                filter,
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(false),
                order_by: Some(OrderByInterface::Struct(order)),
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        let count = records.len().max(1) as f32;
        Ok(records
            .into_iter()
            .enumerate()
            .filter_map(|(rank, r)| {
                to_hit(
                    1.0 - rank as f32 / count,
                    r.payload.map(|p| p.0).unwrap_or_default(),
                    backend_name,
                )
            })
            .collect())
    }
}

/// Every point `filter` admits (all of them without one), a page at a time, with the document id
/// its payload holds; only that field is read.
fn each_doc_id(
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

fn read_meta(dir: &Path) -> Result<IndexMeta, IndexError> {
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
fn check_embedder(
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
const PAYLOAD_INDEXES: [(&str, PayloadSchemaType); 3] = [
    (DATE_FIELD, PayloadSchemaType::Float),
    (SOURCE_FIELD, PayloadSchemaType::Keyword),
    (ACL_FIELD, PayloadSchemaType::Keyword),
];

/// Index the payload fields of [`PAYLOAD_INDEXES`] that `shard` does not index yet.
fn ensure_payload_indexes(shard: &EdgeShard) -> Result<(), IndexError> {
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

/// The engine's filter for `filters`: the date range, and the documents the asker may read.
fn engine_filter(filters: &Filters) -> Option<Filter> {
    let mut must = Vec::new();
    if let Some(range) = filters.date_range {
        must.push(Condition::Field(FieldCondition::new_range(
            field(DATE_FIELD),
            Range {
                lt: None,
                gt: None,
                gte: range.from.map(|d| OrderedFloat(date_days(d))),
                lte: range.to.map(|d| OrderedFloat(date_days(d))),
            },
        )));
    }
    if let Some(access) = &filters.access {
        // One of the asker's groups in the document's list, or (when unlisted documents are
        // public) no list at all.
        let mut readable: Vec<Condition> = access
            .groups
            .iter()
            .map(|group| {
                Condition::Field(FieldCondition::new_match(
                    field(ACL_FIELD),
                    group.clone().into(),
                ))
            })
            .collect();
        if access.unlisted == Unlisted::Public {
            readable.push(Condition::Field(FieldCondition::new_is_empty(
                field(ACL_FIELD),
                true,
            )));
        }
        must.push(Condition::Filter(Filter {
            should: Some(readable),
            min_should: None,
            must: None,
            must_not: None,
        }));
    }
    (!must.is_empty()).then(|| Filter {
        should: None,
        min_should: None,
        must: Some(must),
        must_not: None,
    })
}

/// The embedded index's own I/O for the shared ingest loop, while its ingest holds the writer.
struct Writer<'a>(&'a LocalIndex);

#[async_trait]
impl PointStore for Writer<'_> {
    type Error = IndexError;

    fn bm25(&self) -> Bm25Params {
        self.0.bm25()
    }

    fn embedder(&self) -> Option<&dyn Embedder> {
        self.0.embedder.as_deref()
    }

    fn check_embedder(&self) -> Result<(), IndexError> {
        let index = self.0;
        if index.meta.dense.is_some() && index.embedder.is_none() {
            let embedder = index.dense_embedder().unwrap_or_default().to_owned();
            return Err(IndexError::EmbedderNeeded {
                path: index.dir.clone(),
                mode: RetrievalMode::Dense,
                embedder,
            });
        }
        Ok(())
    }

    fn encoder_error(&self, reason: String) -> IndexError {
        IndexError::Engine(reason)
    }

    fn input_error(&self, path: &Path, source: std::io::Error) -> IndexError {
        IndexError::Input {
            path: path.to_owned(),
            source,
        }
    }

    async fn remove_stale(
        &mut self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, IndexError> {
        self.0.remove_stale(source, kept, writer)
    }

    async fn readable_ids(
        &mut self,
        ids: &[String],
        access: &Access,
    ) -> Result<HashSet<String>, IndexError> {
        self.0.readable(ids, access)
    }

    async fn set_avg_doc_len(&mut self, avg_doc_len: f64) -> Result<(), IndexError> {
        *self
            .0
            .avg_doc_len
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(avg_doc_len);
        self.0.save_meta()
    }

    async fn stored_hashes(&mut self, ids: &[u64]) -> Result<HashMap<u64, String>, IndexError> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::NumId(id)).collect();
        self.0.stored_hashes(&ids)
    }

    async fn upsert(
        &mut self,
        points: Vec<PendingPoint<'_>>,
        encoder: &EdgeBm25,
    ) -> Result<(), IndexError> {
        let ids: Vec<(u64, &str)> = points.iter().map(|p| (p.id, p.doc.id.as_str())).collect();
        let points = points
            .into_iter()
            .map(|p| to_point(p.doc, PointId::NumId(p.id), &p.hash, encoder, p.dense).0)
            .collect();
        let shard = self.0.shard_mut();
        shard
            .update(UpdateOperation::PointOperation(
                PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
            ))
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        self.0.note_doc_ids(ids.into_iter());
        drop(shard);
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), IndexError> {
        let index = self.0;
        let sealed = outside_the_async_workers(|| {
            index.shard_mut().flush();
            seal::seal_if_full(&index.shard(), &index.dir)
        });
        // The batches are on disk whatever the seal does: one that fails is noted, and the
        // next commit tries again.
        if let Err(error) = sealed {
            tracing::warn!(index = %index.dir.display(), %error, "a segment was not sealed");
        }
        Ok(())
    }
}

/// Run `work`, which may take seconds (a flush, a seal building segments), so that on a multi-threaded
/// tokio runtime the worker's other tasks move elsewhere meanwhile; elsewhere, just run it.
fn outside_the_async_workers<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

fn to_point(
    doc: &Document,
    id: PointId,
    hash: &str,
    encoder: &EdgeBm25,
    dense: Option<Vec<f32>>,
) -> PointStruct {
    // The title is searched with the text: BEIR's BM25 baselines index both.
    let sparse = encoder.embed_document(&format!("{}\n{}", doc.title, doc.text));
    let mut vectors = vec![(SPARSE_VECTOR, qdrant_edge::Vector::from(sparse))];
    if let Some(dense) = dense {
        vectors.push((DENSE_VECTOR, qdrant_edge::Vector::from(dense)));
    }
    PointStruct::new(
        id,
        Vectors::new_named(vectors),
        serde_json::Value::Object(payload(doc, hash)),
    )
}

/// [`LocalIndex`] as a [`SearchBackend`]: keyword searches run on the calling task, dense and
/// hybrid ones on the blocking thread pool.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    name: String,
    index: Arc<LocalIndex>,
    mode: RetrievalMode,
}

impl LocalBackend {
    /// Serve `index` under `name` with BM25.
    pub fn new(name: impl Into<String>, index: Arc<LocalIndex>) -> Self {
        Self {
            name: name.into(),
            index,
            mode: RetrievalMode::Bm25,
        }
    }

    /// Search with `mode`, if the index as opened supports it.
    pub fn with_mode(mut self, mode: RetrievalMode) -> Result<Self, IndexError> {
        self.index.supports(mode)?;
        self.mode = mode;
        Ok(self)
    }

    /// The index behind the backend.
    pub fn index(&self) -> &Arc<LocalIndex> {
        &self.index
    }

    /// How the backend ranks.
    pub fn mode(&self) -> RetrievalMode {
        self.mode
    }

    fn backend_error(&self, error: IndexError) -> BackendError {
        match error {
            IndexError::Embed(e) if e.retry.is_retryable() => {
                BackendError::transient(&self.name, BackendErrorKind::Unavailable, e.to_string())
            }
            IndexError::Missing { .. }
            | IndexError::Unreadable { .. }
            | IndexError::Format { .. } => BackendError::permanent(
                &self.name,
                BackendErrorKind::Unavailable,
                error.to_string(),
            ),
            other => {
                BackendError::permanent(&self.name, BackendErrorKind::Internal, other.to_string())
            }
        }
    }
}

#[async_trait]
impl SearchBackend for LocalBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            date_range: true,
            most_recent: true,
            access: true,
            model_files: false,
        }
    }

    fn query_form(&self) -> QueryForm {
        self.mode.query_form()
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let query_vector = match request.filters.most_recent {
            Some(_) => None,
            None => self
                .index
                .embed_query(&request.query, self.mode)
                .await
                .map_err(|e| self.backend_error(e))?,
        };
        // A keyword search is an inverted-index lookup, a fraction of a millisecond at the
        // sizes measured (`cargo xtask bench --bm25`), of which a hop to the blocking pool
        // would be a quarter: it runs here, unless a write holds the index or the ids must be
        // read first. A dense or hybrid search may scan every vector, so it leaves the async
        // worker free.
        if self.mode == RetrievalMode::Bm25
            && self.index.answers_at_once(request)
            && !self.index.is_being_written()
        {
            return self
                .index
                .search_blocking(request, self.mode, query_vector.as_deref(), &self.name)
                .map_err(|e| self.backend_error(e));
        }
        let (index, request, name, mode) = (
            Arc::clone(&self.index),
            request.clone(),
            self.name.clone(),
            self.mode,
        );
        tokio::task::spawn_blocking(move || {
            index.search_blocking(&request, mode, query_vector.as_deref(), &name)
        })
        .await
        // A panic in the engine is deterministic for the same request: retrying cannot help.
        .map_err(|e| {
            BackendError::permanent(
                &self.name,
                BackendErrorKind::Internal,
                format!("search task failed: {e}"),
            )
        })?
        .map_err(|e| self.backend_error(e))
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        let (index, ids, access) = (Arc::clone(&self.index), ids.to_vec(), access.clone());
        // A lookup by id is quick, but a write may hold the index: off the async workers.
        tokio::task::spawn_blocking(move || index.readable(&ids, &access))
            .await
            .map_err(|e| {
                BackendError::permanent(
                    &self.name,
                    BackendErrorKind::Internal,
                    format!("access check failed: {e}"),
                )
            })?
            .map(Some)
            .map_err(|e| self.backend_error(e))
    }
}

/// A top-level payload key; built directly because the engine's parser is only exposed for tests.
fn field(name: &str) -> JsonPath {
    JsonPath {
        first_key: name.to_owned(),
        rest: Vec::new(),
    }
}
