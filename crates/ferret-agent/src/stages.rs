use std::sync::Arc;

use ferret_grading::{GradingConfig, HeuristicGrader, LlmGrader, RelevanceGrader};
use ferret_llm::StageModel;
use ferret_query_intel::{
    BridgeFinder, GuardrailConfig, HeuristicAnalyzer, HeuristicDecomposer, HeuristicIntentClassifier, HeuristicRewriter,
    HopFinder, IntentClassifier, LlmAnalyzer, LlmDecomposer, LlmHopFinder, LlmIntentClassifier, LlmRewriter, QueryAnalyzer,
    QueryDecomposer, QueryRewriter,
};
use ferret_synthesis::{AnswerSynthesizer, ExtractiveSynthesizer, LlmSynthesizer};

use crate::planner::PlanStages;
use crate::tool_loop::{HeuristicToolSelector, LlmToolSelector, ToolSelector};

/// The stage implementations a strategy runs. Each is a trait object so an LLM version can
/// replace the heuristic one stage by stage.
#[derive(Clone)]
pub struct Stages {
    /// Decides whether to search at all.
    pub classifier: Arc<dyn IntentClassifier>,
    /// Describes the question.
    pub analyzer: Arc<dyn QueryAnalyzer>,
    /// Splits complex questions.
    pub decomposer: Arc<dyn QueryDecomposer>,
    /// Cleans queries for search engines.
    pub rewriter: Arc<dyn QueryRewriter>,
    /// Judges results.
    pub grader: Arc<dyn RelevanceGrader>,
    /// Names the next search of a multi-hop question.
    pub hop_finder: Arc<dyn HopFinder>,
    /// Writes the answer.
    pub synthesizer: Arc<dyn AnswerSynthesizer>,
    /// Picks the tool-selection loop's next step.
    pub tool_selector: Arc<dyn ToolSelector>,
    /// The planner strategy's planner, writer and optional evaluators.
    pub plan: PlanStages,
    /// The guardrail's replies for questions that are not searched.
    pub guardrail: GuardrailConfig,
}

impl Stages {
    /// The deterministic stages: no model, no network.
    pub fn heuristic(guardrail: GuardrailConfig, grading: GradingConfig) -> Self {
        Self {
            classifier: Arc::new(HeuristicIntentClassifier::new(guardrail.clone())),
            analyzer: Arc::new(HeuristicAnalyzer),
            decomposer: Arc::new(HeuristicDecomposer),
            rewriter: Arc::new(HeuristicRewriter),
            grader: Arc::new(HeuristicGrader::new(grading)),
            hop_finder: Arc::new(BridgeFinder::default()),
            synthesizer: Arc::new(ExtractiveSynthesizer::default()),
            tool_selector: Arc::new(HeuristicToolSelector::default()),
            plan: PlanStages::heuristic(),
            guardrail,
        }
    }

    /// Every stage asks `model`, each falling back to its heuristic twin when the model fails.
    pub fn with_model(model: StageModel, guardrail: GuardrailConfig, grading: GradingConfig) -> Self {
        Self {
            classifier: Arc::new(LlmIntentClassifier::new(model.clone(), guardrail.clone())),
            analyzer: Arc::new(LlmAnalyzer::new(model.clone())),
            decomposer: Arc::new(LlmDecomposer::new(model.clone())),
            rewriter: Arc::new(LlmRewriter::new(model.clone())),
            grader: Arc::new(LlmGrader::new(model.clone(), HeuristicGrader::new(grading))),
            hop_finder: Arc::new(LlmHopFinder::new(model.clone())),
            tool_selector: Arc::new(LlmToolSelector::new(model.clone())),
            plan: PlanStages::with_model(model.clone()),
            synthesizer: Arc::new(LlmSynthesizer::new(model, ExtractiveSynthesizer::default())),
            guardrail,
        }
    }
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages").field("guardrail", &self.guardrail).finish_non_exhaustive()
    }
}
