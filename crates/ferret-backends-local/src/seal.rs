//! Keeping the engine's growing segment small.
//!
//! qdrant-edge writes new points into one appendable segment whose BM25 index lives in memory
//! and whose every insert walks the whole posting list of each of its terms. Left alone, that
//! segment holds the whole index: memory grows with it and an ingest slows quadratically. So an
//! ingest seals it after each commit once its vectors pass [`SegmentPolicy::seal_at_kb`]: the
//! engine's optimizer rebuilds it as an immutable segment (BM25 index and vectors in files it
//! maps, an HNSW graph for dense vectors) and starts a fresh appendable one, and merges the
//! smallest sealed segments once there are more than [`SegmentPolicy::segments`].

use std::path::Path;

use qdrant_edge::{
    Condition, CountRequest, EdgeOptimizersConfig, EdgeShard, Filter, HasIdCondition, PointId,
    PointInsertOperations, PointOperations, PointStructPersisted, UpdateOperation,
    WithPayloadInterface, WithVector,
};

use crate::engine::{clear_dir, each_page, stored_point, write_durably, ENGINE_TEMP_DIR};
use crate::error::IndexError;

/// When an ingest seals the segment that takes new documents, and how many sealed segments an
/// index keeps before merging. Kept in the index: set when it is made (or compacted, which keeps
/// it), changed by [`LocalIndex::set_segment_policy`](crate::LocalIndex::set_segment_policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentPolicy {
    /// Kilobytes of vectors (dense or BM25, whichever is larger) the growing segment holds
    /// before an ingest seals it. It bounds the memory an ingest holds, about 2 KB per
    /// document of the growing segment, and the cost of each insert.
    pub seal_at_kb: usize,
    /// Sealed segments above which the smallest are merged. Every search visits each segment.
    pub segments: usize,
    /// Kilobytes of vectors a merge may produce: segments are merged only while their sum
    /// stays below it, so past `segments` × about three quarters of it the count grows again.
    /// A merge builds its BM25 index in memory, so this bounds an ingest's memory too.
    pub max_segment_kb: usize,
}

impl Default for SegmentPolicy {
    /// About 20,000 documents in the growing segment with 384-dimensional vectors (27,000 for
    /// BM25 alone), merged into segments of under 128,000 KB of vectors (85,000 documents).
    fn default() -> Self {
        Self {
            seal_at_kb: 32_000,
            segments: 8,
            max_segment_kb: 128_000,
        }
    }
}

impl SegmentPolicy {
    /// The default policy with the growing segment sealed at `seal_at_kb`, and merged segments
    /// allowed at least four sealed ones.
    pub fn sealing_at(seal_at_kb: usize) -> Self {
        let default = Self::default();
        Self {
            seal_at_kb,
            max_segment_kb: default.max_segment_kb.max(seal_at_kb.saturating_mul(4)),
            ..default
        }
    }

    pub(crate) fn engine_config(&self) -> EdgeOptimizersConfig {
        EdgeOptimizersConfig {
            // 0 would mean "never" to the engine.
            indexing_threshold: Some(self.seal_at_kb.max(1)),
            default_segment_number: Some(self.segments.max(1)),
            max_segment_size: Some(self.max_segment_kb.max(1)),
            ..EdgeOptimizersConfig::default()
        }
    }
}

/// The optimizer settings of a shard that seals: its own, or the default policy's for a shard
/// made before sealing existed (whose settings are the engine's defaults).
pub(crate) fn sealing_config(shard: &EdgeShard) -> EdgeOptimizersConfig {
    let own = shard.config().optimizers.clone();
    if seals(&own) {
        own
    } else {
        SegmentPolicy::default().engine_config()
    }
}

/// Indexes made before sealing existed carry the engine's default settings and keep their BM25
/// index in memory: they are not sealed (the engine's defaults would merge at every seal) until
/// a compaction rebuilds them.
fn seals(config: &EdgeOptimizersConfig) -> bool {
    *config != EdgeOptimizersConfig::default()
}

/// Written before a seal and removed after it: a process killed during one leaves it. The
/// engine moves the sealed segment in before it removes the old one, so a kill between the two
/// leaves documents in both, which the next open repairs.
const SEALING_FILE: &str = "ferret-sealing";

/// The documents a repair is rewriting, kept until the rewrite is on disk: the rewrite deletes
/// every copy and writes one, and the engine may flush the deletes before the write.
const REPAIR_JOURNAL: &str = "ferret-sealing-repair.json";

/// Seal the growing segment if it has passed the policy's size, and merge sealed segments if
/// there are too many. The caller holds the index's writer, and no write runs meanwhile. A
/// failed seal keeps its mark, so the next open checks what it left.
pub(crate) fn seal_if_full(shard: &EdgeShard, dir: &Path) -> Result<(), IndexError> {
    if !seals(&shard.config().optimizers) {
        return Ok(());
    }
    let marker = dir.join(SEALING_FILE);
    std::fs::write(&marker, "").map_err(|e| IndexError::unreadable(dir, e))?;
    seal_unmarked(shard)?;
    std::fs::remove_file(&marker).map_err(|e| IndexError::unreadable(dir, e))
}

/// [`seal_if_full`] without its mark, for a shard that a kill throws away whole (one a
/// compaction is building).
pub(crate) fn seal_unmarked(shard: &EdgeShard) -> Result<(), IndexError> {
    shard
        .optimize()
        .map(|_| ())
        .map_err(|e| IndexError::Engine(format!("sealing a segment: {e}")))
}

/// After a process died during a seal (or a repair), keep each document in one segment only.
/// Costs a pass over the ids, only after such a death.
pub(crate) fn repair_interrupted_seal(shard: &EdgeShard, dir: &Path) -> Result<(), IndexError> {
    let journal = dir.join(REPAIR_JOURNAL);
    if journal.is_file() {
        let points: Vec<PointStructPersisted> = std::fs::read(&journal)
            .map_err(|e| IndexError::unreadable(dir, e))
            .and_then(|bytes| {
                serde_json::from_slice(&bytes).map_err(|e| IndexError::unreadable(&journal, e))
            })?;
        rewrite_once(shard, points)?;
        std::fs::remove_file(&journal).map_err(|e| IndexError::unreadable(dir, e))?;
    }
    let marker = dir.join(SEALING_FILE);
    if !marker.is_file() {
        return Ok(());
    }
    clear_dir(&dir.join(ENGINE_TEMP_DIR))?;
    let engine = |e: qdrant_edge::OperationError| IndexError::Engine(e.to_string());
    let ids = all_ids(shard)?;
    let mut doubled = Vec::new();
    if ids.len() != shard.info().points_count {
        let count = |ids: &[PointId]| {
            shard
                .count(CountRequest {
                    filter: Some(Filter::new_must(Condition::HasId(
                        ids.iter().copied().collect::<HasIdCondition>(),
                    ))),
                    exact: true,
                })
                .map_err(engine)
        };
        for chunk in ids.chunks(1_000) {
            if count(chunk)? > chunk.len() {
                for id in chunk {
                    if count(std::slice::from_ref(id))? > 1 {
                        doubled.push(*id);
                    }
                }
            }
        }
    }
    for chunk in doubled.chunks(1_000) {
        let points: Vec<_> = shard
            .retrieve(
                chunk,
                Some(WithPayloadInterface::Bool(true)),
                Some(WithVector::Bool(true)),
            )
            .map_err(engine)?
            .into_iter()
            .filter_map(stored_point)
            .collect();
        if points.len() != chunk.len() {
            return Err(IndexError::Engine(format!(
                "repairing a seal: read {} of {} documents held twice; the index is left as it was",
                points.len(),
                chunk.len()
            )));
        }
        write_durably(
            &journal,
            &serde_json::to_vec(&points).map_err(|e| IndexError::Engine(e.to_string()))?,
        )?;
        rewrite_once(shard, points)?;
        std::fs::remove_file(&journal).map_err(|e| IndexError::unreadable(dir, e))?;
    }
    std::fs::remove_file(&marker).map_err(|e| IndexError::unreadable(dir, e))
}

/// Delete every copy of `points` and write each once, then flush.
fn rewrite_once(shard: &EdgeShard, points: Vec<PointStructPersisted>) -> Result<(), IndexError> {
    let ids = points.iter().map(|point| point.id).collect();
    for operation in [
        PointOperations::DeletePoints { ids },
        PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
    ] {
        shard
            .update(UpdateOperation::PointOperation(operation))
            .map_err(|e| IndexError::Engine(e.to_string()))?;
    }
    shard.flush();
    Ok(())
}

/// Every point id in the shard, each once.
fn all_ids(shard: &EdgeShard) -> Result<Vec<PointId>, IndexError> {
    let mut ids = Vec::new();
    let ids_only = WithPayloadInterface::Bool(false);
    each_page(shard, 10_000, None, ids_only, false, |records| {
        ids.extend(records.into_iter().map(|record| record.id));
        Ok(())
    })?;
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use ferret_collection::point_id;
    use futures::executor::block_on;

    use super::*;
    use crate::{IngestOptions, LocalIndex};

    /// A repair killed after the engine wrote its deletes and before its rewrite leaves the
    /// journal, and the next open writes the documents back.
    #[test]
    fn a_repair_cut_short_after_its_deletes_is_finished_from_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus.jsonl");
        let records: Vec<String> = (0..6)
            .map(|i| format!(r#"{{"id":"d{i}","title":"Record {i}","text":"Record {i} about bridges and m{i}x"}}"#))
            .collect();
        std::fs::write(&corpus, records.join("\n")).unwrap();
        let path = dir.path().join("index");
        let index = LocalIndex::open_or_create(&path).unwrap();
        block_on(index.ingest_path(&corpus, IngestOptions::default(), &mut |_, _| {})).unwrap();

        let cut: Vec<PointId> = ["d1", "d4"]
            .iter()
            .map(|id| PointId::NumId(point_id(id)))
            .collect();
        let points: Vec<_> = index
            .shard()
            .retrieve(
                &cut,
                Some(WithPayloadInterface::Bool(true)),
                Some(WithVector::Bool(true)),
            )
            .unwrap()
            .into_iter()
            .filter_map(stored_point)
            .collect();
        assert_eq!(points.len(), 2);
        write_durably(
            &path.join(REPAIR_JOURNAL),
            &serde_json::to_vec(&points).unwrap(),
        )
        .unwrap();
        {
            let shard = index.shard_mut();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids: cut },
                ))
                .unwrap();
            shard.flush();
        }
        drop(index);

        let index = LocalIndex::open(&path).unwrap();
        assert_eq!(index.len(), 6);
        for id in ["d1", "d4"] {
            let found = index.document(id, None, "local").unwrap();
            assert!(
                found.is_some_and(|hit| hit.text.contains("bridges")),
                "{id}"
            );
        }
        assert!(!path.join(REPAIR_JOURNAL).exists());
    }
}
