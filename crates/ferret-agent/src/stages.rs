//! The stage implementations a search runs, each a trait object so a model-backed version can
//! replace the heuristic one stage by stage, and the configuration they are built from.

use std::sync::Arc;

use ferret_core::Embedder;
use ferret_grading::{GradingConfig, HeuristicGrader, LlmGrader, RelevanceGrader};
use ferret_llm::{Stage, StageModel};
use ferret_query_intel::{
    BridgeConfig, BridgeFinder, FollowUpResolver, GuardrailConfig, HeuristicAnalyzer,
    HeuristicDecomposer, HeuristicFollowUpResolver, HeuristicIntentClassifier, HeuristicRewriter,
    HopFinder, IntentClassifier, LlmAnalyzer, LlmDecomposer, LlmFollowUpResolver, LlmHopFinder,
    LlmIntentClassifier, LlmRewriter, MeaningHopFinder, NameRanking, QueryAnalyzer,
    QueryDecomposer, QueryRewriter,
};
use ferret_synthesis::{
    ActionExtractor, AnswerSynthesizer, ExtractiveSynthesizer, HeuristicActionExtractor,
    LlmActionExtractor, LlmSynthesizer,
};

use crate::find_model::{
    CandidateValidator, HeuristicModelSearchPlanner, LlmCandidateValidator, LlmModelSearchPlanner,
    ModelFamilies, ModelSearchPlanner, RuleValidator,
};
use crate::planner::PlanStages;
use crate::tool_selection::{HeuristicToolSelector, LlmToolSelector, ToolSelector};

/// What the stages are built from: the guardrail's domain and replies, the grading thresholds
/// and how questions' shapes and links between results are read. Every stage that needs one of
/// these gets it from here, the heuristic fallbacks of model-backed stages included.
#[derive(Clone, Default)]
pub struct StageConfig {
    /// The guardrail's domain and replies.
    pub guardrail: GuardrailConfig,
    /// Relevance thresholds.
    pub grading: GradingConfig,
    /// How a question's shape and the names that link results are read.
    pub bridge: BridgeConfig,
    /// The embedder of the index searched, when it has vectors: what reads bridge names' meaning
    /// when `bridge.ranking` asks for it.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The base-model families the model-file finder recognises in file names.
    pub model_families: ModelFamilies,
}

impl std::fmt::Debug for StageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageConfig")
            .field("guardrail", &self.guardrail)
            .field("grading", &self.grading)
            .field("bridge", &self.bridge)
            .field("embedder", &self.embedder.as_ref().map(|e| e.name()))
            .field("model_families", &self.model_families.all().len())
            .finish()
    }
}

/// The stage implementations a strategy runs. Each is a trait object so an LLM version can
/// replace the heuristic one stage by stage.
#[derive(Clone)]
pub struct Stages {
    /// Reads a thread's new question against its last turn.
    pub follow_up: Arc<dyn FollowUpResolver>,
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
    /// Reads a question's shape (simple, bridge, comparison) and the names that link results.
    pub bridge: BridgeFinder,
    /// Names the next search of a multi-hop question.
    pub hop_finder: Arc<dyn HopFinder>,
    /// Writes the answer.
    pub synthesizer: Arc<dyn AnswerSynthesizer>,
    /// Reads what a technical answer tells its reader to do.
    pub actions: Arc<dyn ActionExtractor>,
    /// Picks the tool-selection loop's next step.
    pub tool_selector: Arc<dyn ToolSelector>,
    /// The planner strategy's planner, writer and optional evaluators.
    pub plan: PlanStages,
    /// Plans the hub searches for a missing model file.
    pub model_search: Arc<dyn ModelSearchPlanner>,
    /// Judges the model files found.
    pub validator: Arc<dyn CandidateValidator>,
    /// The guardrail's replies for questions that are not searched.
    pub guardrail: GuardrailConfig,
}

impl Stages {
    /// The deterministic stages: no model, no network.
    pub fn heuristic(config: StageConfig) -> Self {
        let StageConfig {
            guardrail,
            grading,
            bridge: bridge_config,
            embedder,
            model_families,
        } = config;
        let bridge = BridgeFinder::new(bridge_config);
        let hop_finder: Arc<dyn HopFinder> = match (bridge_config.ranking, embedder) {
            (NameRanking::Meaning, Some(embedder)) => {
                Arc::new(MeaningHopFinder::new(bridge, embedder))
            }
            _ => Arc::new(bridge),
        };
        Self {
            follow_up: Arc::new(HeuristicFollowUpResolver),
            classifier: Arc::new(HeuristicIntentClassifier::new(guardrail.clone())),
            analyzer: Arc::new(HeuristicAnalyzer),
            decomposer: Arc::new(HeuristicDecomposer),
            rewriter: Arc::new(HeuristicRewriter),
            grader: Arc::new(HeuristicGrader::new(grading)),
            bridge,
            hop_finder,
            synthesizer: Arc::new(ExtractiveSynthesizer::default()),
            actions: Arc::new(HeuristicActionExtractor),
            tool_selector: Arc::new(HeuristicToolSelector::new(bridge)),
            plan: PlanStages::heuristic(grading, bridge),
            model_search: Arc::new(HeuristicModelSearchPlanner::new(model_families)),
            validator: Arc::new(RuleValidator),
            guardrail,
        }
    }

    /// Every stage asks `model` unless its configuration keeps the stage heuristic
    /// ([`StageModel::asks`]), each falling back to its heuristic twin when the model fails;
    /// the stages that write what the user reads ask it only if it
    /// [writes answers](StageModel::writes_answers).
    pub fn with_model(model: StageModel, config: StageConfig) -> Self {
        let grading = config.grading;
        let guardrail = config.guardrail.clone();
        let finder_fallback = HeuristicModelSearchPlanner::new(config.model_families.clone());
        let heuristic = Self::heuristic(config);
        let bridge = heuristic.bridge;
        let asks = |stage: Stage| model.asks(stage);
        let writes = |stage: Stage| asks(stage) && model.writes_answers();
        Self {
            follow_up: if asks(Stage::FollowUp) {
                Arc::new(LlmFollowUpResolver::new(model.clone()))
            } else {
                heuristic.follow_up
            },
            classifier: if asks(Stage::Intent) {
                Arc::new(LlmIntentClassifier::new(model.clone(), guardrail))
            } else {
                heuristic.classifier
            },
            analyzer: if asks(Stage::Analysis) {
                Arc::new(LlmAnalyzer::new(model.clone()))
            } else {
                heuristic.analyzer
            },
            decomposer: if asks(Stage::Decomposition) {
                Arc::new(LlmDecomposer::new(model.clone()))
            } else {
                heuristic.decomposer
            },
            rewriter: if asks(Stage::Rewrite) {
                Arc::new(LlmRewriter::new(model.clone()))
            } else {
                heuristic.rewriter
            },
            grader: if asks(Stage::Grading) {
                Arc::new(LlmGrader::new(model.clone(), HeuristicGrader::new(grading)))
            } else {
                heuristic.grader
            },
            bridge,
            hop_finder: if asks(Stage::NextHop) {
                Arc::new(LlmHopFinder::new(model.clone(), bridge))
            } else {
                heuristic.hop_finder
            },
            tool_selector: if asks(Stage::ToolSelection) {
                Arc::new(LlmToolSelector::new(model.clone()))
            } else {
                heuristic.tool_selector
            },
            plan: PlanStages::with_model(model.clone(), grading, bridge),
            model_search: if asks(Stage::ModelSearchPlanning) {
                Arc::new(LlmModelSearchPlanner::new(model.clone(), finder_fallback))
            } else {
                heuristic.model_search
            },
            validator: if asks(Stage::CandidateValidation) {
                Arc::new(LlmCandidateValidator::new(model.clone()))
            } else {
                heuristic.validator
            },
            actions: if writes(Stage::ActionExtraction) {
                Arc::new(LlmActionExtractor::new(model.clone()))
            } else {
                heuristic.actions
            },
            synthesizer: if writes(Stage::Synthesis) {
                Arc::new(LlmSynthesizer::new(model, ExtractiveSynthesizer::default()))
            } else {
                heuristic.synthesizer
            },
            guardrail: heuristic.guardrail,
        }
    }
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("guardrail", &self.guardrail)
            .field("bridge", &self.bridge)
            .finish_non_exhaustive()
    }
}
