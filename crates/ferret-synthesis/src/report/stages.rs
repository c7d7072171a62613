//! The report's stages as traits: the writer and the evaluator, what the writer is given, and
//! an evaluator's verdict.

use async_trait::async_trait;
use ferret_core::{Hit, Report, StageOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An evaluator's judgement of a plan or a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// true if it is good enough as it is, false if it must change.
    #[serde(alias = "approved", alias = "accepted", alias = "ok")]
    pub acceptable: bool,
    /// What to change, in one to three short sentences; empty when acceptable.
    #[serde(default, alias = "reason", alias = "critique", alias = "comments")]
    pub feedback: String,
}

/// One plan step as the report writer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEvidence {
    /// The step's variable, as `E1`.
    pub variable: String,
    /// The tool it called.
    pub tool: String,
    /// The query it searched, earlier results substituted.
    pub query: String,
    /// The `Plan:` line written before the step, if any.
    pub reasoning: Option<String>,
    /// Positions in [`ReportRequest::evidence`] of the hits the step found, best first.
    pub hits: Vec<usize>,
}

/// What a report writer is given.
#[derive(Debug, Clone, Copy)]
pub struct ReportRequest<'a> {
    /// The question the report answers.
    pub question: &'a str,
    /// The plan that ran, as text.
    pub plan: &'a str,
    /// The steps that found evidence, in the order they ran.
    pub steps: &'a [StepEvidence],
    /// The hits graded relevant, best first: the report's sources.
    pub evidence: &'a [Hit],
    /// A report evaluator's feedback on the previous report, when it sent that one back.
    pub feedback: Option<&'a str>,
    /// What the report must cover, when a brief says it (a research run's themes and axes, as
    /// markdown); `None` for a question's report.
    pub brief: Option<&'a str>,
}

/// Writes the report.
#[async_trait]
pub trait ReportWriter: Send + Sync {
    /// A report answering `request.question` from `request.evidence`. Its `[n]` markers are
    /// 1-based positions in `request.evidence`; [`finalize_report`](crate::finalize_report)
    /// drops those that point nowhere and renumbers the rest in order of first use.
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report>;
}

/// Judges a written report.
#[async_trait]
pub trait ReportEvaluator: Send + Sync {
    /// Does `report` (rendered as markdown, references included) answer `question` well enough?
    async fn evaluate(&self, question: &str, report: &str) -> StageOutput<Verdict>;
}
