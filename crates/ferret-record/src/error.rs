//! What can go wrong reading, writing or replaying a recording.

use std::path::{Path, PathBuf};

/// A recording folder that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// A file could not be read or written; retrying may help if the disk recovers.
    #[error("recording {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The folder holds no `case.json`, or one with no recorded world.
    #[error("{} is not a recording: it holds no case.json with a recorded world (write one with `ferret search QUESTION --record DIR`)", dir.display())]
    NotARecording {
        /// The folder.
        dir: PathBuf,
    },
    /// A file is not what a recording holds.
    #[error("recording {}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Format {
        /// The file.
        path: PathBuf,
        /// The line, in `exchanges.jsonl`.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The folder was written in a format this build does not read.
    #[error("recording {}: format {}, this build reads format {supported}: record it again", path.display(), found.map_or_else(|| "missing".to_owned(), |f| f.to_string()))]
    Version {
        /// The `case.json`.
        path: PathBuf,
        /// The format it names, if any.
        found: Option<u64>,
        /// The format this build reads.
        supported: u32,
    },
}

impl RecordingError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn format(path: &Path, line: Option<usize>, error: serde_json::Error) -> Self {
        Self::Format {
            path: path.to_owned(),
            line,
            message: error.to_string(),
        }
    }

    /// Whether trying again may succeed: only when a file could not be read or written.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}

/// A replay that did not follow its recording. Never retryable: the same replay strays the
/// same way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The question asked is not the one recorded.
    #[error("the recording answers {recorded:?}, not {asked:?}: replay it without a question, or record this one")]
    OtherQuestion {
        /// The recorded question.
        recorded: String,
        /// The question asked.
        asked: String,
    },
    /// The run made calls the recording holds no answer for: the code, the configuration or
    /// the model's prompts changed since it was recorded.
    #[error("the replay made {count} call(s) the recording holds no answer for (the code or configuration changed since it was recorded; record it again); the first: {first}")]
    Unrecorded {
        /// How many.
        count: usize,
        /// The first, described.
        first: String,
    },
}
