//! Compaction: the index rewritten into a fresh directory holding one copy of each document,
//! swapped in with two renames that a killed process can finish or undo.

use std::path::Path;

use qdrant_edge::{PointInsertOperations, PointOperations, UpdateOperation};

use crate::engine::{each_page_whole, stored_point, write_durably};
use crate::error::IndexError;
use crate::index::{new_shard, read_meta, IndexMeta, LocalIndex};
use crate::layout::{
    compaction_siblings, copy_other_files, discard, disk_bytes, remove_leftover, COMPACTING_FILE,
    META_FILE,
};
use crate::seal;

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

impl LocalIndex {
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
}
