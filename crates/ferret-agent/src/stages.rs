use std::sync::Arc;

use ferret_grading::{GradingConfig, HeuristicGrader, RelevanceGrader};
use ferret_query_intel::{
    GuardrailConfig, HeuristicAnalyzer, HeuristicDecomposer, HeuristicIntentClassifier, HeuristicRewriter,
    IntentClassifier, QueryAnalyzer, QueryDecomposer, QueryRewriter,
};
use ferret_synthesis::{AnswerSynthesizer, ExtractiveSynthesizer};

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
    /// Writes the answer.
    pub synthesizer: Arc<dyn AnswerSynthesizer>,
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
            synthesizer: Arc::new(ExtractiveSynthesizer::default()),
            guardrail,
        }
    }
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages").field("guardrail", &self.guardrail).finish_non_exhaustive()
    }
}
