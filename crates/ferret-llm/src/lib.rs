//! `ferret-llm` is Ferret's language-model layer. It turns a [`LanguageModel`](ferret_core::LanguageModel)
//! into typed answers: [`generate`] asks for JSON that follows the JSON Schema of a Rust type,
//! parses what comes back tolerantly (code fences, prose around the JSON, trailing commas, single
//! quotes, truncated output), sends at most one repair request carrying the parse error, and
//! otherwise fails with a typed [`StructuredError`] on which a stage falls back to its heuristic.
//! [`Prompts`] renders a stage's template; each stage's context, reply and template live in the
//! crate of the stage that uses them (the action-extraction prompt stays here, beside the tests
//! of the fence and of template overrides).
//! [`ScriptedModel`] replays recorded exchanges for deterministic tests. With the `openai`
//! feature, `OpenAiModel` reaches OpenAI-compatible servers through `ferret-openai`.
//!
//! It must not depend on any backend crate, nor on the executor.

mod budget;
mod condense;
#[cfg(feature = "local-model")]
mod gguf_tokenizer;
#[cfg(feature = "local-model")]
mod grammar;
#[cfg(feature = "local-model")]
mod local;
#[cfg(feature = "openai")]
mod openai;
mod prompts;
mod scripted;
mod stage;
mod structured;

pub use budget::{current_budget, with_model_budget, ModelBudget};
pub use condense::{
    accept_summary, condense_sources, CondensationContext, CondensationReply,
    CONDENSATION_INPUT_CHARS,
};
#[cfg(feature = "openai")]
pub use ferret_openai::{
    classify_http_status, classify_openai_error, openai_client, with_retry, OpenAiConfig,
    SchemaSupport,
};
#[cfg(feature = "local-model")]
pub use local::{
    LocalModel, LocalModelConfig, WeightFormat, EMBEDDED_MODELS, GEMMA3_270M_FILE, SMOLLM2_FILE,
};
#[cfg(feature = "openai")]
pub use openai::OpenAiModel;
pub use prompts::{
    transcript, ActionExtractionContext, ActionsReply, CommandReply, FileChangeReply,
    PromptContext, PromptError, PromptSource, Prompts, Stage, VersionChangeReply, DATA_WARNING,
    DEFAULT_MAX_SOURCE_CHARS,
};
pub use scripted::{Exchange, ScriptedModel};
pub use stage::{noting_condensation, Condensed, ModelPrice, StageModel, StageModelConfig};
pub use structured::{
    generate, generate_streaming, generate_with_schema, narrow, parse_tolerant, reply_schema,
    restrict_to_labels, Attempted, StructuredError, StructuredOutput,
};
