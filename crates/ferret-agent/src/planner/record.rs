//! What a plan run found, kept on disk to write the report again without calling a backend.

use std::path::{Path, PathBuf};

use ferret_core::Hit;
use serde::{Deserialize, Serialize};

/// One step of a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedStep {
    /// The step's variable, as `E1`.
    pub variable: String,
    /// The tool called.
    pub tool: String,
    /// The argument, earlier results substituted.
    pub argument: String,
    /// The `Plan:` line written before the step, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The query searched; `None` when the step did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Wall time of the step in milliseconds.
    pub duration_ms: u64,
    /// Why the step could not run, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it found, best first.
    pub hits: Vec<Hit>,
}

/// An evaluator's verdict in a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedVerdict {
    /// `plan` or `report`.
    pub subject: String,
    /// Whether it passed.
    pub acceptable: bool,
    /// What to change, when it did not.
    pub feedback: String,
}

/// What a planner run found, to keep on disk and write the report again from
/// ([`Agent::replay_plan`]) without calling a backend: the question, the plan that ran, each
/// step with its hits, and the evaluators' verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The question.
    pub question: String,
    /// Hits the response listed at most (the query's limit).
    pub limit: usize,
    /// The plan that ran, one `#En = Tool[argument]` step per line.
    pub plan: String,
    /// Problems found in earlier drafts of the plan.
    #[serde(default)]
    pub problems: Vec<String>,
    /// The steps, in the order they ran.
    pub steps: Vec<RecordedStep>,
    /// The evaluators' verdicts, in order.
    #[serde(default)]
    pub verdicts: Vec<RecordedVerdict>,
    /// The budget ran out before every step ran.
    #[serde(default)]
    pub budget_exhausted: bool,
}

/// A [`PlanRecord`] that could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum PlanRecordError {
    /// The file could not be read or written.
    #[error("plan record {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a plan record.
    #[error("plan record {}: not a plan record: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What does not parse.
        source: serde_json::Error,
    },
}

impl PlanRecord {
    /// Write the record to `path` as JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PlanRecordError> {
        let path = path.as_ref();
        let json =
            serde_json::to_string_pretty(self).map_err(|source| PlanRecordError::Format {
                path: path.into(),
                source,
            })?;
        std::fs::write(path, json).map_err(|source| PlanRecordError::Io {
            path: path.into(),
            source,
        })
    }

    /// Read a record [`PlanRecord::save`] wrote.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, PlanRecordError> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|source| PlanRecordError::Io {
            path: path.into(),
            source,
        })?;
        serde_json::from_str(&json).map_err(|source| PlanRecordError::Format {
            path: path.into(),
            source,
        })
    }
}
