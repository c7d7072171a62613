//! The planner strategy's stages put together: the heuristic ones, or each the model is asked
//! for beside its heuristic twin.

use std::sync::Arc;

use ferret_grading::GradingConfig;
use ferret_llm::{Stage, StageModel};
use ferret_query_intel::BridgeFinder;
use ferret_synthesis::ExtractiveSynthesizer;

use super::evaluation::{LlmPlanEvaluator, LlmReportEvaluator};
use super::planning::{HeuristicPlanner, LlmPlanner};
use super::stages::{PlanEvaluator, Planner};
use super::writing::LlmReportWriter;
use ferret_synthesis::{HeuristicReportWriter, ReportEvaluator, ReportWriter};

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
