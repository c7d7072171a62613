//! The planner strategy's stages as traits: the planner, the plan evaluator, the report writer
//! and the report evaluator, what each is given, and [`PlanStages`], the set a search runs.

use std::sync::Arc;

use crate::{ToolDescription, Verdict};
use async_trait::async_trait;
use ferret_core::{Hit, Report, StageOutput};
use ferret_grading::GradingConfig;
use ferret_llm::{Stage, StageModel};
use ferret_query_intel::{Analysis, BridgeFinder};
use ferret_synthesis::ExtractiveSynthesizer;

use super::evaluation::{LlmPlanEvaluator, LlmReportEvaluator};
use super::planning::{HeuristicPlanner, LlmPlanner};
use super::writing::{HeuristicReportWriter, LlmReportWriter};

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

/// The planner strategy's stages. The evaluators are optional: without one, plans and reports
/// are taken as they are.
#[derive(Clone)]
pub struct PlanStages {
    /// Writes the plan.
    pub planner: Arc<dyn Planner>,
    /// Judges the plan before it runs, and may ask for another.
    pub plan_evaluator: Option<Arc<dyn PlanEvaluator>>,
    /// Writes the report.
    pub writer: Arc<dyn ReportWriter>,
    /// Judges the report, and may send it back.
    pub report_evaluator: Option<Arc<dyn ReportEvaluator>>,
}

impl PlanStages {
    /// The deterministic stages: the heuristic planner and writer, no evaluators. The writer
    /// cites what a grader with `grading` keeps; the planner reads shapes with `bridge`.
    pub fn heuristic(grading: GradingConfig, bridge: BridgeFinder) -> Self {
        Self {
            planner: Arc::new(HeuristicPlanner::new(bridge)),
            plan_evaluator: None,
            writer: Arc::new(HeuristicReportWriter::new(
                ExtractiveSynthesizer::default(),
                grading,
            )),
            report_evaluator: None,
        }
    }

    /// Every stage the model is [asked for](StageModel::asks) asks `model`, the planner and
    /// the writer falling back to their heuristic twins; an evaluator is on when its stage is
    /// asked.
    pub fn with_model(model: StageModel, grading: GradingConfig, bridge: BridgeFinder) -> Self {
        let heuristic = Self::heuristic(grading, bridge);
        Self {
            planner: if model.asks(Stage::Planning) {
                Arc::new(LlmPlanner::new(
                    model.clone(),
                    HeuristicPlanner::new(bridge),
                ))
            } else {
                heuristic.planner
            },
            plan_evaluator: model
                .asks(Stage::PlanEvaluation)
                .then(|| Arc::new(LlmPlanEvaluator::new(model.clone())) as Arc<dyn PlanEvaluator>),
            writer: if model.asks(Stage::ReportWriting) && model.writes_answers() {
                Arc::new(LlmReportWriter::new(
                    model.clone(),
                    HeuristicReportWriter::new(ExtractiveSynthesizer::default(), grading),
                ))
            } else {
                heuristic.writer
            },
            report_evaluator: model
                .asks(Stage::ReportEvaluation)
                .then(|| Arc::new(LlmReportEvaluator::new(model)) as Arc<dyn ReportEvaluator>),
        }
    }
}

impl std::fmt::Debug for PlanStages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanStages")
            .field("plan_evaluator", &self.plan_evaluator.is_some())
            .field("report_evaluator", &self.report_evaluator.is_some())
            .finish_non_exhaustive()
    }
}
