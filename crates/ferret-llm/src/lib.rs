//! `ferret-llm` is Ferret's language-model layer. It turns a [`LanguageModel`](ferret_core::LanguageModel)
//! into typed answers: [`generate`] asks for JSON that follows the JSON Schema of a Rust type,
//! parses what comes back tolerantly (code fences, prose around the JSON, trailing commas, single
//! quotes, truncated output), sends at most one repair request carrying the parse error, and
//! otherwise fails with a typed [`StructuredError`] on which a stage falls back to its heuristic.
//! [`ScriptedModel`] replays recorded exchanges for deterministic tests; [`classify_http_status`]
//! maps provider failures to a [`RetryClass`](ferret_core::RetryClass).
//!
//! It must not depend on any backend crate, nor on the executor.

mod classify;
#[cfg(feature = "local-model")]
mod local;
#[cfg(feature = "openai")]
mod openai;
mod prompts;
mod scripted;
mod stage;
mod structured;

pub use classify::classify_http_status;
#[cfg(feature = "local-model")]
pub use local::{LocalModel, LocalModelConfig, SMOLLM2_FILE};
#[cfg(feature = "openai")]
pub use openai::{
    classify_openai_error, openai_client, retry_once, OpenAiConfig, OpenAiModel, SchemaSupport,
};
pub use prompts::{
    ActionExtractionContext, ActionsReply, AnalysisContext, AnalysisReply,
    CandidateValidationContext, CandidateValidationReply, CandidateVerdict, DecompositionContext,
    DecompositionReply, ExtractedAction, FileCandidate, GradingContext, GradingReply,
    IntentContext, IntentReply, NextHopContext, NextHopReply, PlanEvaluationContext, PlanReply,
    PlanningContext, PromptContext, PromptError, PromptSource, Prompts, ReportEvaluationContext,
    ReportReply, ReportSectionReply, ReportWritingContext, RequestedFile, ResultGrade,
    RewriteContext, RewriteReply, Stage, SynthesisContext, SynthesisReply, ToolChoiceReply,
    ToolDescription, ToolSelectionContext, Verdict, DEFAULT_ACTION_KINDS, DEFAULT_MAX_SOURCE_CHARS,
    DEFAULT_QUERY_TYPES, DONE_TOOL,
};
pub use scripted::{Exchange, ScriptedModel};
pub use stage::{ModelPrice, StageModel, StageModelConfig};
pub use structured::{generate, parse_tolerant, Attempted, StructuredError, StructuredOutput};
