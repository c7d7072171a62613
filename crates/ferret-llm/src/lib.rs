//! `ferret-llm` is Ferret's language-model layer. It turns a [`LanguageModel`](ferret_core::LanguageModel)
//! into typed answers: [`generate`] asks for JSON that follows the JSON Schema of a Rust type,
//! parses what comes back tolerantly (code fences, prose around the JSON, trailing commas, single
//! quotes, truncated output), sends at most one repair request carrying the parse error, and
//! otherwise fails with a typed [`StructuredError`] on which a stage falls back to its heuristic.
//! [`ScriptedModel`] replays recorded exchanges for deterministic tests. With the `openai`
//! feature, `OpenAiModel` reaches OpenAI-compatible servers through `ferret-openai`.
//!
//! It must not depend on any backend crate, nor on the executor.

#[cfg(feature = "local-model")]
mod local;
#[cfg(feature = "openai")]
mod openai;
mod prompts;
mod scripted;
mod stage;
mod structured;

#[cfg(feature = "openai")]
pub use ferret_openai::{
    classify_http_status, classify_openai_error, openai_client, retry_once, OpenAiConfig,
    SchemaSupport,
};
#[cfg(feature = "local-model")]
pub use local::{LocalModel, LocalModelConfig, SMOLLM2_FILE};
#[cfg(feature = "openai")]
pub use openai::OpenAiModel;
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
