//! Small pieces over the engine's shard and its directory that the index, its compaction and
//! its seals share: reading every point a page at a time, writing a point back, and writing or
//! removing files so that a kill leaves them whole or gone.

use std::io::Write as _;
use std::path::Path;

use qdrant_edge::{
    EdgeShard, Filter, PointStruct, PointStructPersisted, Record, ScrollRequest, Vectors,
    WithPayloadInterface, WithVector,
};

use crate::error::IndexError;

/// Where the engine builds a segment; a build a kill interrupted leaves files there.
pub(crate) const ENGINE_TEMP_DIR: &str = "temp_segments";

/// Read every point `filter` admits (all without one), `page` at a time, each once, with the
/// payload `with_payload` asks for and, when `with_vectors`, its vectors.
pub(crate) fn each_page(
    shard: &EdgeShard,
    page: usize,
    filter: Option<Filter>,
    with_payload: WithPayloadInterface,
    with_vectors: bool,
    mut read: impl FnMut(Vec<Record>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let mut offset = None;
    loop {
        let (records, next) = shard
            .scroll(ScrollRequest {
                offset,
                limit: Some(page),
                filter: filter.clone(),
                with_payload: Some(with_payload.clone()),
                with_vector: WithVector::Bool(with_vectors),
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

/// Read every point whole (vectors and payload), `page` at a time.
pub(crate) fn each_page_whole(
    shard: &EdgeShard,
    page: usize,
    read: impl FnMut(Vec<Record>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    each_page(
        shard,
        page,
        None,
        WithPayloadInterface::Bool(true),
        true,
        read,
    )
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

/// Write `bytes` to `path` whole or not at all (beside it, then renamed over it), and on disk
/// before this returns.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let partial = path.with_extension("partial");
    let fail = |e: std::io::Error| IndexError::unreadable(path, e);
    let mut file = std::fs::File::create(&partial).map_err(fail)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(fail)?;
    std::fs::rename(&partial, path).map_err(fail)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|dir| dir.sync_all())
            .map_err(fail)?;
    }
    Ok(())
}

/// Remove the file or folder at `path`.
pub(crate) fn remove_entry(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

/// Remove what `dir` holds, keeping the folder; nothing when it does not exist.
pub(crate) fn clear_dir(dir: &Path) -> Result<(), IndexError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(|e| IndexError::unreadable(dir, e))?.path();
        remove_entry(&path).map_err(|e| IndexError::unreadable(&path, e))?;
    }
    Ok(())
}
