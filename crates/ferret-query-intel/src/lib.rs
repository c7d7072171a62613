//! `ferret-query-intel` works out what a question asks before anything is searched: the intent
//! guardrail (search, unclear, unrelated or greeting, with the reply for each non-search outcome),
//! the analyzer (query type, entities, intent, complexity), the decomposer (focused sub-queries
//! for complex questions), the rewriter (a short, noise-free query per backend), the bridge
//! finder (the next hop of a multi-hop question, read from the results so far) and the follow-up
//! resolver (a thread's elliptical question rewritten from its last turn).
//!
//! Each stage is a trait returning a [`ferret_core::StageOutput`], with a deterministic heuristic
//! implementation here so the pipeline runs without a language model; a model-backed version
//! implements the same trait and falls back to the heuristic (`LlmIntentClassifier`, `LlmAnalyzer`,
//! `LlmDecomposer`, `LlmRewriter`, `LlmHopFinder`, on `ferret-llm`). This crate must not depend on `ferret-exec` or
//! on any backend crate: it only reads text and produces text.

mod analyzer;
mod bridge;
mod context;
mod decomposer;
mod error_question;
mod follow_up;
mod guardrail;
mod llm;
mod meaning;
mod prompts;
mod rewriter;
mod signature;
mod util;

pub use analyzer::{
    Analysis, Complexity, Entity, EntityKind, HeuristicAnalyzer, QueryAnalyzer, QueryType,
};
pub use bridge::{
    BridgeConfig, BridgeFinder, Hop, HopFinder, HopRequest, NameRanking, QuestionShape,
};
pub use context::context_versions;
pub use decomposer::{Decomposition, HeuristicDecomposer, QueryDecomposer};
pub use error_question::{error_signature, root_cause};
pub use follow_up::{
    may_follow_up, resolve_follow_up, FollowUpResolver, HeuristicFollowUpResolver, PriorTurn,
};
pub use guardrail::{
    GuardrailConfig, GuardrailMessages, HeuristicIntentClassifier, Intent, IntentClassifier,
    IntentVerdict, DEFAULT_UNRELATED_TOPICS,
};
pub use llm::{
    LlmAnalyzer, LlmDecomposer, LlmFollowUpResolver, LlmHopFinder, LlmIntentClassifier, LlmRewriter,
};
pub use meaning::MeaningHopFinder;
pub use prompts::{
    AnalysisContext, AnalysisReply, DecompositionContext, DecompositionReply, FollowUpContext,
    FollowUpReply, IntentContext, IntentReply, NextHopContext, NextHopReply, RewriteContext,
    RewriteReply, DEFAULT_QUERY_TYPES,
};
pub use rewriter::{HeuristicRewriter, QueryRewriter};
pub use signature::{language_error_signature, read_error, ErrorReading};
