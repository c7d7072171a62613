//! Judging plans and reports with a model; without one, nothing is sent back.

use crate::{PlanEvaluationContext, ReportEvaluationContext, Verdict};
use async_trait::async_trait;
use ferret_core::StageOutput;
use ferret_llm::{PromptContext, StageModel};

use super::stages::PlanEvaluator;
use ferret_synthesis::ReportEvaluator;

/// A verdict from an evaluator that could not judge: nothing is sent back.
fn pass() -> Verdict {
    Verdict {
        acceptable: true,
        feedback: String::new(),
    }
}

/// A rejection must say what to change, or the next draft cannot do better.
fn with_feedback(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict {
            acceptable: false,
            feedback,
        } if feedback.trim().is_empty() => Verdict {
            acceptable: false,
            feedback: "the evaluator gave no reason".to_owned(),
        },
        Verdict {
            acceptable,
            feedback,
        } => Verdict {
            acceptable,
            feedback: feedback.trim().to_owned(),
        },
    }
}

/// Ask `model` for a verdict on `context`; a verdict the model cannot give passes.
async fn judge<C: PromptContext<Reply = Verdict>>(
    model: &StageModel,
    context: &C,
) -> StageOutput<Verdict> {
    let fallback = async { StageOutput::heuristic(pass()) };
    model
        .run(
            context,
            160,
            |verdict: Verdict| Ok(with_feedback(verdict)),
            fallback,
        )
        .await
}

/// The plan evaluator, with a model. When the model fails the plan passes, and the
/// trace says why.
#[derive(Debug, Clone)]
pub struct LlmPlanEvaluator {
    model: StageModel,
}

impl LlmPlanEvaluator {
    /// An evaluator asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl PlanEvaluator for LlmPlanEvaluator {
    async fn evaluate(&self, question: &str, plan: &str) -> StageOutput<Verdict> {
        let context = PlanEvaluationContext {
            question: question.to_owned(),
            plan: plan.to_owned(),
        };
        judge(&self.model, &context).await
    }
}

/// The post-report evaluator, with a model. When the model fails the report passes,
/// and the trace says why.
#[derive(Debug, Clone)]
pub struct LlmReportEvaluator {
    model: StageModel,
}

impl LlmReportEvaluator {
    /// An evaluator asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl ReportEvaluator for LlmReportEvaluator {
    async fn evaluate(&self, question: &str, report: &str) -> StageOutput<Verdict> {
        let context = ReportEvaluationContext {
            question: question.to_owned(),
            report: report.to_owned(),
        };
        judge(&self.model, &context).await
    }
}
