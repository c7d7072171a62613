//! Ferret answers questions by agentic search, with citations that resolve to real results.
//!
//! This crate is the facade: a [`FerretBuilder`] that wires backends, stages and the executor
//! together, [`Ferret::search`] returning a [`Response`], [`Ferret::search_stream`] yielding the same
//! facts as [`Event`]s, and re-exports of the types a caller needs. It adds no behaviour of its own
//! beyond wiring and the embedded default corpus; teams that want one layer depend on that crate
//! directly (`ferret-exec`, `ferret-backends-local`, ...).
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferret::FerretError> {
//! let ferret = ferret::Ferret::builder().default_corpus().build()?;
//! let response = ferret.search(ferret::Query::new("Who were the members of the Final Five?")?).await?;
//! println!("{}", response.answer.unwrap_or_default());
//! for citation in &response.citations {
//!     println!("[{}] {}", citation.marker, citation.title);
//! }
//! # Ok(()) }
//! ```

mod builder;
mod config_file;
mod default_corpus;
mod knowledge;
mod lazy;
mod research;

pub use builder::{Ferret, FerretBuilder, ReplayFailure, Session, QDRANT_API_KEY_VAR};
pub use config_file::{
    ConfigFileError, FetchSection, FileConfig, HubSection, LocalSection, MemorySection,
    ServerSection, TokenSection, WebProvider, WebSection, CONFIG_VARIABLE,
};
pub use default_corpus::{
    default_embedder, default_embedder_for, default_fetched_dir, default_index_dir,
    default_models_dir, default_research_dir, open_default_index, DEFAULT_CORPUS_JSONL,
};
pub use ferret_agent::{
    AgentConfig, InMemorySessions, PlanConfig, PlanRecord, RecordedStep, RecordedVerdict,
    SessionLimits, SessionStore, Sessions, StageConfig, Strategy, StrategyReason, ToolLoopConfig,
    Turn,
};
pub use ferret_backends_hub::{
    CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig, CIVITAI_KEY_VARIABLE,
    HF_TOKEN_VARIABLE,
};
pub use ferret_backends_local::{
    checked_acl, read_path, stream_path, Compaction, DocumentStream, IndexError, IngestIssue,
    IngestOptions, IngestReport, LocalBackend, LocalIndex, PathDocuments, SegmentPolicy,
};
pub use ferret_backends_qdrant::{QdrantBackend, QdrantConfig, QdrantError, QdrantIndex};
pub use ferret_backends_web::{
    ApiKey, BraveBackend, BraveConfig, HttpSetupError, SearxngBackend, SearxngConfig,
    TavilyBackend, TavilyConfig, WebError, BRAVE_KEY_VARIABLE, SEARXNG_URL_VARIABLE,
    TAVILY_KEY_VARIABLE,
};
pub use ferret_core::{
    Access, BackendError, BackendErrorKind, BackendFailure, Budget, Citation, DateRange,
    EmbedError, Embedder, Event, FerretError, Filters, Hit, HitId, Implementation, LanguageModel,
    LlmCall, LlmCallOutcome, LlmError, Principal, Query, QueryError, Response, ResponseType,
    RetrievalMode, RetryClass, SearchBackend, SearchRequest, StopReason, Trace, TraceStep,
    UnknownStrategy, Unlisted, Usage, MAX_QUESTION_CHARS,
};
pub use ferret_core::{
    Actions, CommandAction, FileChange, OnRepeat, RepeatMatch, RepeatOf, VersionChange,
};
pub use ferret_core::{
    FileRequest, FileRequestError, FindStatus, Gate, ModelCandidate, ModelFile, ModelFind,
    ModelSource, ModelType, RankedCandidate, RuleEffect, UnknownModelSource, UnknownModelType,
};
pub use ferret_core::{
    Freshness, PaidCost, PaidUnit, PaidUsage, QueryForm, SafeSearch, SearchDepth, SearchOptions,
    SearchQuery, Topic,
};
pub use ferret_embed::{
    CachedEmbedder, EmbedderError, HubSource, LocalEmbedder, LocalEmbedderConfig, OpenAiEmbedder,
    MINILM_DIR,
};
pub use ferret_exec::{CallRate, ExecutorConfig, RateLimit, RetryPolicy};
/// Fetching a web page safely (no private address unless allowed, robots.txt respected) as
/// markdown, for ingestion.
pub use ferret_fetch as fetch;
pub use ferret_grading::GradingConfig;
pub use ferret_knowledge::{
    Added, Change, DescribedBy, Describer, Description, Documentalist, DocumentalistError,
    ExtractiveDescriber, Given, KnowledgeEntry, KnowledgeIndex, KnowledgeRegistry, KnowledgeSource,
    LlmDescriber, RegistryError,
};
pub use ferret_llm::{
    Exchange, ModelPrice, OpenAiConfig, OpenAiModel, SchemaSupport, ScriptedModel, Stage,
    StageModel, StageModelConfig,
};
#[cfg(feature = "local-model")]
pub use ferret_llm::{
    LocalModel, LocalModelConfig, WeightFormat, EMBEDDED_MODELS, GEMMA3_270M_FILE, SMOLLM2_FILE,
};
pub use ferret_query_intel::{BridgeConfig, GuardrailConfig, GuardrailMessages, NameRanking};
pub use ferret_record::{Recorder, Recording, RecordingError, ReplayError, Replayer};
pub use ferret_research::{
    run_folder_name, BriefWriter, Classification, HeuristicBriefWriter, HeuristicResearchPlanner,
    KnownFiles, LlmBriefWriter, LlmResearchPlanner, Module, Place, Reference, ResearchBrief,
    ResearchConfig, ResearchError, ResearchOutcome, ResearchPlanRequest, ResearchPlanner,
    ResearchRecord, ResearchToolError, ResearchTools, Researcher, RunFolderError, Syllabus, Target,
    Theme, Unread,
};
/// Reading ComfyUI workflows: the model files their loader nodes reference, and which of them
/// a models folder already holds.
pub use ferret_workflow as workflow;
pub use knowledge::{default_knowledge_dir, LocalKnowledgeIndex, QdrantKnowledgeIndex};
pub use research::BackendResearchTools;
