//! An index directory's files: which are the index's, and what a compaction or a creation
//! killed halfway leaves, found and finished or undone when the index is next opened.

use std::path::{Path, PathBuf};

use crate::engine::{remove_entry, ENGINE_TEMP_DIR};
use crate::error::IndexError;

pub(crate) const META_FILE: &str = "ferret-index.json";

pub(crate) const FORMAT_VERSION: u32 = 1;

/// Siblings of an index directory (its real path, links resolved) that a compaction uses: the
/// new index while it is built, and the old one between the two renames that swap them.
pub(crate) fn compaction_siblings(real: &Path) -> (PathBuf, PathBuf) {
    (sibling(real, "compacting"), sibling(real, "replaced"))
}

/// `<name>.<suffix>` beside `real`.
pub(crate) fn sibling(real: &Path, suffix: &str) -> PathBuf {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index".to_owned());
    real.with_file_name(format!("{name}.{suffix}"))
}

/// A compaction was swapping `dir` when its process died: the old index waits beside it.
pub(crate) fn sibling_of_replaced(dir: &Path) -> bool {
    let Some(name) = dir.file_name() else {
        return false;
    };
    let mut replaced = name.to_os_string();
    replaced.push(".replaced");
    dir.with_file_name(replaced).join(META_FILE).is_file()
}

/// A directory this code made: an index (its meta file) or a shard (the engine's config).
pub(crate) fn is_index_directory(path: &Path) -> bool {
    path.join(META_FILE).is_file() || path.join(ENGINE_CONFIG_FILE).is_file()
}

/// Finish or undo a compaction a killed process left (called holding the lock): with the
/// directory gone between the swap's two renames, the new index takes its place if it was
/// complete (its meta file is written last), else the old one comes back; with the directory
/// in place, the leftovers are not needed.
pub(crate) fn recover_compaction(real: &Path) -> Result<(), IndexError> {
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
pub(crate) fn remove_leftover(path: &Path) -> Result<(), IndexError> {
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
pub(crate) fn discard(path: &Path) -> Result<(), IndexError> {
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
pub(crate) const COMPACTING_FILE: &str = "ferret-compacting";

/// Copy what `from` holds besides the engine's files and the meta file into `to`.
pub(crate) fn copy_other_files(from: &Path, to: &Path) -> Result<(), IndexError> {
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
pub(crate) fn disk_bytes(path: &Path) -> u64 {
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
pub(crate) const CREATING_FILE: &str = "ferret-creating";

/// The engine's files in a directory whose index was never finished: a process killed between
/// creating the shard and writing [`META_FILE`] leaves them (and [`CREATING_FILE`]), and the
/// engine refuses to create a shard over them. Nothing in them was ever reported written.
/// Without the marker nothing is touched: the files are someone else's, or an index whose meta
/// file was lost, and creating an index there fails instead.
pub(crate) fn remove_unfinished_shard(dir: &Path) -> Result<(), IndexError> {
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
pub(crate) const ENGINE_CONFIG_FILE: &str = "edge_config.json";
