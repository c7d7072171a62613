//! `ferret-core` holds Ferret's vocabulary: the domain types that flow through the pipeline
//! ([`Query`], [`Hit`], [`Citation`], [`Response`], [`Event`], [`Budget`], [`StopReason`]), the errors
//! with their [`RetryClass`], and the three traits the outer layers implement: [`SearchBackend`],
//! [`LanguageModel`] and [`Embedder`].
//!
//! It must not depend on any HTTP client, LLM SDK, vector store or async runtime: every other crate
//! depends on this one, and a team implementing a backend should pull in nothing but these types.

mod actions;
mod address;
mod backend;
mod budget;
mod error;
mod event;
mod hit;
mod llm;
mod model_file;
mod options;
mod query;
mod response;
mod strategy;
mod trace;

pub use actions::{Actions, CommandAction, FileChange, VersionChange};
pub use address::canonical_url;
pub use backend::{
    BackendCapabilities, CallRate, PaidCost, PaidUnit, QueryForm, SearchBackend, SearchQuery,
    SearchRequest,
};
pub use budget::{Budget, BudgetError};
pub use error::{BackendError, BackendErrorKind, FerretError, RetryClass};
pub use event::Event;
pub use hit::{Hit, HitId};
pub use llm::{
    cosine, ChatMessage, ChatRole, Completion, CompletionRequest, EmbedError, Embedder,
    LanguageModel, LlmError, RetrievalMode, TextSink, TokenUsage,
};
pub use model_file::{
    address_in_query, address_query, hash_in_query, hash_query, model_file_extension, FileRequest,
    FileRequestError, FindStatus, Gate, ModelCandidate, ModelFile, ModelFind, ModelSource,
    ModelType, RankedCandidate, RuleEffect, UnknownModelSource, UnknownModelType,
    MODEL_FILE_EXTENSIONS,
};
pub use options::{Freshness, SafeSearch, SearchDepth, SearchOptions, Topic};
pub use query::{
    Access, DateRange, Filters, OnRepeat, Principal, Query, QueryError, Unlisted,
    MAX_QUESTION_CHARS,
};
pub use response::{
    BackendFailure, Citation, PaidUsage, RepeatMatch, RepeatOf, Report, ReportSection, Response,
    ResponseType, ShortAnswer, StopReason, Usage,
};
pub use strategy::{Strategy, StrategyReason, UnknownStrategy};
pub use trace::{
    Condensation, Implementation, LlmCall, LlmCallOutcome, StageOutput, Trace, TraceStep,
};
pub mod sentences;
pub mod text;
