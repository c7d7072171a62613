//! One process at a time has an index directory open.

use std::path::{Path, PathBuf};

use crate::error::IndexError;
use crate::layout::sibling;

/// An exclusive lock on an index directory, held for as long as the index is open: an
/// advisory `flock` on `<name>.lock` beside the directory (not in it, so a compaction swapping
/// the directory keeps holding it), which goes with the process however that ends, `SIGKILL`
/// included. The file says which process holds it.
#[derive(Debug)]
pub(crate) struct DirectoryLock {
    pub(crate) _file: std::fs::File,
    /// The directory's real path, links resolved.
    pub(crate) real: PathBuf,
}

impl DirectoryLock {
    /// Lock `dir`, which must exist.
    pub(crate) fn take(dir: &Path) -> Result<Self, IndexError> {
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
