//! What a plan run found: the plan, each step with its hits, the evaluators' verdicts. A
//! research run keeps one per run to write its note again without calling a backend.

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

/// What a planner run found: the question, the plan that ran, each step with its hits, and the
/// evaluators' verdicts.
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
