//! The planner strategy's stages as traits: the planner, the plan evaluator, the report writer
//! and the report evaluator, and what each is given. `assembly` puts a set together.

use crate::{ToolDescription, Verdict};
use async_trait::async_trait;
use ferret_core::{Hit, Report, StageOutput};
use ferret_query_intel::Analysis;

/// What a planner is asked: a first plan, or a corrected one when `previous_plan` is set.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The question to plan for.
    pub question: &'a str,
    /// What the analyzer made of it.
    pub analysis: &'a Analysis,
    /// The tools a step may call, as a prompt describes them.
    pub tools: &'a [ToolDescription],
    /// Most steps the plan may have.
    pub max_steps: usize,
    /// The plan that was rejected, when asking for a corrected one.
    pub previous_plan: Option<&'a str>,
    /// What is wrong with `previous_plan` (validation errors, an evaluator's feedback); empty
    /// for a first plan.
    pub problems: &'a [String],
}

/// Writes a plan: lines `#En = Tool[argument]`, each optionally after a `Plan: <reason>` line
/// (see [`Plan::parse`]). The text is checked by the agent, not by the planner.
#[async_trait]
pub trait Planner: Send + Sync {
    /// The plan's text for `request`.
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String>;
}

/// Judges a plan before it runs.
#[async_trait]
pub trait PlanEvaluator: Send + Sync {
    /// Is `plan` (canonical text, see [`Plan::render`]) good enough to answer `question`?
    async fn evaluate(&self, question: &str, plan: &str) -> StageOutput<Verdict>;
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
    /// 1-based positions in `request.evidence`; the agent drops those that point nowhere and
    /// renumbers the rest in order of first use.
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report>;
}

/// Judges a written report.
#[async_trait]
pub trait ReportEvaluator: Send + Sync {
    /// Does `report` (rendered as markdown, references included) answer `question` well enough?
    async fn evaluate(&self, question: &str, report: &str) -> StageOutput<Verdict>;
}
