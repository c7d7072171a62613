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
    PointInsertOperations, PointOperations, PointStruct, PointStructPersisted, Record,
    ScrollRequest, UpdateOperation, Vectors, WithPayloadInterface, WithVector,
};

use crate::error::IndexError;

/// When an ingest seals the segment that takes new documents, and how many sealed segments an
/// index keeps before merging. Fixed in the index when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentPolicy {
    /// Kilobytes of vectors (dense or BM25, whichever is larger) the growing segment holds
    /// before an ingest seals it. It bounds the memory an ingest holds, about 2 KB per
    /// document of the growing segment, and the cost of each insert.
    pub seal_at_kb: usize,
    /// Sealed segments above which the smallest are merged, never past
    /// [`SegmentPolicy::max_segment_kb`]. Every search visits each segment.
    pub segments: usize,
    /// Kilobytes of vectors a merge may produce. A merge builds its BM25 index in memory, so
    /// this bounds an ingest's memory too.
    pub max_segment_kb: usize,
}

impl Default for SegmentPolicy {
    /// About 20,000 documents in the growing segment with 384-dimensional vectors (27,000 for
    /// BM25 alone), sealed segments of up to about 85,000 documents.
    fn default() -> Self {
        Self {
            seal_at_kb: 32_000,
            segments: 8,
            max_segment_kb: 128_000,
        }
    }
}

impl SegmentPolicy {
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

/// Written before a seal and removed after it: a process killed during one leaves it. The
/// engine moves the sealed segment in before it removes the old one, so a kill between the two
/// leaves documents in both, which the next open repairs.
const SEALING_FILE: &str = "ferret-sealing";

/// Seal the growing segment if it has passed the policy's size, and merge sealed segments if
/// there are too many. The caller holds the index's writer, and no write runs meanwhile.
pub(crate) fn seal_if_full(shard: &EdgeShard, dir: &Path) -> Result<bool, IndexError> {
    let marker = dir.join(SEALING_FILE);
    std::fs::write(&marker, "").map_err(|e| IndexError::unreadable(dir, e))?;
    let sealed = shard
        .optimize()
        .map_err(|e| IndexError::Engine(format!("sealing a segment: {e}")))?;
    std::fs::remove_file(&marker).map_err(|e| IndexError::unreadable(dir, e))?;
    Ok(sealed)
}

/// After a process died during a seal, keep each document in one segment only. Returns the
/// documents that were held twice. Costs a pass over the ids, only after such a death.
pub(crate) fn repair_interrupted_seal(shard: &EdgeShard, dir: &Path) -> Result<usize, IndexError> {
    let marker = dir.join(SEALING_FILE);
    if !marker.is_file() {
        return Ok(0);
    }
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
    if !doubled.is_empty() {
        // Deleted from every segment, then written once. The engine writes nothing to disk
        // before the flush, so a kill in between leaves the doubles and the mark as they were.
        let records = shard
            .retrieve(
                &doubled,
                Some(WithPayloadInterface::Bool(true)),
                Some(WithVector::Bool(true)),
            )
            .map_err(engine)?;
        let points = records.into_iter().filter_map(stored_point).collect();
        for operation in [
            PointOperations::DeletePoints {
                ids: doubled.clone(),
            },
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ] {
            shard
                .update(UpdateOperation::PointOperation(operation))
                .map_err(engine)?;
        }
        shard.flush();
    }
    std::fs::remove_file(&marker).map_err(|e| IndexError::unreadable(dir, e))?;
    Ok(doubled.len())
}

/// Every point id in the shard, each once.
fn all_ids(shard: &EdgeShard) -> Result<Vec<PointId>, IndexError> {
    let mut ids = Vec::new();
    each_page(shard, 10_000, false, |records| {
        ids.extend(records.into_iter().map(|record| record.id));
        Ok(())
    })?;
    Ok(ids)
}

/// Read every point of the shard, `page` at a time, each once: with its vectors and payload
/// when `whole`, else its id alone.
pub(crate) fn each_page(
    shard: &EdgeShard,
    page: usize,
    whole: bool,
    mut read: impl FnMut(Vec<Record>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let mut offset = None;
    loop {
        let (records, next) = shard
            .scroll(ScrollRequest {
                offset,
                limit: Some(page),
                filter: None,
                with_payload: Some(WithPayloadInterface::Bool(whole)),
                with_vector: WithVector::Bool(whole),
                order_by: None,
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        read(records)?;
        match next {
            Some(next) => offset = Some(next),
            None => return Ok(()),
        }
    }
}

/// A point read back with its vectors and payload, as the engine takes it to write again.
pub(crate) fn stored_point(record: Record) -> Option<PointStructPersisted> {
    Some(
        PointStruct::new(
            record.id,
            Vectors::from(record.vector?),
            serde_json::Value::Object(record.payload?.0),
        )
        .0,
    )
}
