//! The planner strategy's own stages as traits: the planner and the plan evaluator, and what
//! each is given (the report writer and evaluator are `ferret-synthesis`'s). `assembly` puts a
//! set together.

use crate::{ToolDescription, Verdict};
use async_trait::async_trait;
use ferret_core::StageOutput;
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
