//! What can go wrong opening, reading or writing an index.

use std::path::{Path, PathBuf};

use ferret_core::{EmbedError, RetrievalMode};

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
    /// Another process has the index open: the engine writes even while it only reads (it
    /// flushes on close), so one process at a time may open a directory.
    #[error(
        "the index at {path} is open in another process{}; wait for it to end, or give this one another index",
        holder_note(*.holder)
    )]
    Locked {
        /// The directory asked for.
        path: PathBuf,
        /// The process holding it, as its lock file says.
        holder: Option<u32>,
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
    /// The embedder's vectors do not fit the index: nothing was written.
    #[error("the index at {path} holds {index_dimension}-dimensional vectors from `{index_embedder}`, but the embedder `{embedder}` makes {embedder_dimension}-dimensional ones: use the index's embedder or ingest into a new directory")]
    EmbedderMismatch {
        /// The directory.
        path: PathBuf,
        /// The embedder the index was built with.
        index_embedder: String,
        /// Its dimension.
        index_dimension: usize,
        /// The embedder offered.
        embedder: String,
        /// Its dimension.
        embedder_dimension: usize,
    },
    /// A dense or hybrid search, or an embedder, was asked of an index without dense vectors.
    #[error("the index at {path} has no dense vectors (it was built for BM25 only): ingest into a new directory with an embedder for {mode} search")]
    NoDenseVectors {
        /// The directory.
        path: PathBuf,
        /// The mode asked for.
        mode: RetrievalMode,
    },
    /// Dense or hybrid search on an index opened without its embedder.
    #[error("{mode} search needs the embedder `{embedder}` the index at {path} was built with; open it with that embedder")]
    EmbedderNeeded {
        /// The directory.
        path: PathBuf,
        /// The mode asked for.
        mode: RetrievalMode,
        /// The embedder the index was built with.
        embedder: String,
    },
    /// Embedding failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The engine refused an operation.
    #[error("index engine error: {0}")]
    Engine(String),
}

impl IndexError {
    pub(crate) fn unreadable(path: &Path, reason: impl ToString) -> Self {
        Self::Unreadable {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }
}

fn holder_note(holder: Option<u32>) -> String {
    holder.map_or_else(String::new, |pid| format!(" (process {pid})"))
}
