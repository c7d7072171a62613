//! Ferret answers questions by agentic search, with citations that resolve to real results.
//!
//! This crate is the facade: a [`FerretBuilder`] that wires backends, stages and the executor
//! together, and the jobs Ferret does, each one call on [`Ferret`]:
//!
//! - a question answered: [`Ferret::search`] returning a [`Response`], and
//!   [`Ferret::search_stream`] yielding the same facts as [`Event`]s ([`jobs::search`]);
//! - a conversation, as the coding agent holds one: [`Ferret::session`] ([`jobs::session`]);
//! - the model files a ComfyUI workflow needs: [`Ferret::find_models`] for a workflow and
//!   [`Ferret::find_model`] for one file ([`jobs::find_model`]);
//! - research notes from a syllabus: [`Ferret::researcher`] ([`jobs::research`]).
//!
//! The root holds what the common path needs; the rest is grouped by kind: [`backends`],
//! [`index`], [`models`], [`knowledge`], [`config`], [`record`], [`fetch`]. The facade adds no
//! behaviour of its own beyond wiring, the embedded default corpus and the loop over a
//! workflow's files; teams that want one layer depend on that crate directly (`ferret-exec`,
//! `ferret-backends-local`, ...).
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

// The README's library snippets are compiled as doc tests, so they stay true to the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

mod builder;
mod config_file;
mod default_corpus;
mod knowledge_index;
mod lazy;
mod model_files;
mod research;

pub use builder::{Ferret, FerretBuilder, Session};
pub use ferret_core::{
    Access, Budget, Citation, Event, FerretError, Filters, Hit, Principal, Query, Response,
    SearchBackend, StopReason, Strategy,
};

/// The jobs Ferret does, each a call on [`Ferret`], with the types it takes and returns.
pub mod jobs {
    /// A question answered with citations: [`Ferret::search`](crate::Ferret::search) and
    /// [`Ferret::search_stream`](crate::Ferret::search_stream).
    pub mod search {
        pub use ferret_core::{
            Access, BackendFailure, Budget, Citation, DateRange, Event, Filters, Freshness, Hit,
            HitId, Implementation, LlmCall, LlmCallOutcome, PaidCost, PaidUnit, PaidUsage,
            Principal, Query, QueryError, Response, ResponseType, RetrievalMode, SafeSearch,
            SearchDepth, SearchOptions, StopReason, Strategy, StrategyReason, Topic, Trace,
            TraceStep, UnknownStrategy, Usage, MAX_QUESTION_CHARS,
        };
    }

    /// A conversation, as a coding agent holds one: [`Ferret::session`](crate::Ferret::session).
    /// A thread's searches remember its questions; a repeated one is answered again without a
    /// search, and a technical answer lists the actions its sources state.
    pub mod session {
        pub use crate::builder::Session;
        pub use crate::default_corpus::default_threads_dir;
        pub use ferret_agent::{
            FileSessions, InMemorySessions, SessionLimits, SessionStore, Sessions, Turn,
        };
        pub use ferret_core::{
            Actions, CommandAction, FileChange, OnRepeat, RepeatMatch, RepeatOf, VersionChange,
        };
    }

    /// The model files a ComfyUI workflow needs, found on the model hubs:
    /// [`Ferret::find_models`](crate::Ferret::find_models) for a workflow's files and
    /// [`Ferret::find_model`](crate::Ferret::find_model) for one.
    pub mod find_model {
        pub use crate::model_files::{FileFind, FileOutcome, WorkflowFind};
        pub use ferret_agent::{ModelFamilies, ModelFamily};
        pub use ferret_core::{
            FileRequest, FileRequestError, FindStatus, Gate, ModelCandidate, ModelFile, ModelFind,
            ModelSource, ModelType, RankedCandidate, RuleEffect, UnknownModelSource,
            UnknownModelType,
        };
        pub use ferret_workflow::{
            parse_workflow, read_workflow, ModelsDir, Workflow, WorkflowError, WorkflowModel,
        };
    }

    /// Research notes from a course's syllabus:
    /// [`Ferret::researcher`](crate::Ferret::researcher), then [`Researcher::research`].
    pub mod research {
        pub use crate::research::BackendResearchTools;
        pub use ferret_research::{
            run_folder_name, BriefWriter, Classification, HeuristicBriefWriter,
            HeuristicResearchPlanner, KnownFiles, LlmBriefWriter, LlmResearchPlanner, Module,
            Place, Reference, ResearchBrief, ResearchConfig, ResearchError, ResearchOutcome,
            ResearchPlanRequest, ResearchPlanner, ResearchRecord, ResearchToolError, ResearchTools,
            Researcher, RunFolderError, Syllabus, Target, Theme, Unread,
        };
    }
}

/// Where searches look: the trait every backend implements, and the backends Ferret ships
/// (the embedded index, Qdrant, web search engines, model hubs). Add one with
/// [`FerretBuilder::backend`], which keeps the call rate the backend declares.
pub mod backends {
    pub use crate::builder::QDRANT_API_KEY_VAR;
    pub use ferret_backends_hub::{
        CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig, CIVITAI_KEY_VARIABLE,
        HF_TOKEN_VARIABLE,
    };
    pub use ferret_backends_local::LocalBackend;
    pub use ferret_backends_qdrant::{QdrantBackend, QdrantConfig, QdrantError};
    pub use ferret_backends_web::{
        ApiKey, BraveBackend, BraveConfig, HttpSetupError, SearxngBackend, SearxngConfig,
        TavilyBackend, TavilyConfig, WebError, BRAVE_KEY_VARIABLE, BRAVE_URL_VARIABLE,
        SEARXNG_URL_VARIABLE, TAVILY_KEY_VARIABLE, TAVILY_URL_VARIABLE,
    };
    pub use ferret_core::{
        BackendCapabilities, BackendError, BackendErrorKind, CallRate, QueryForm, RetryClass,
        SearchBackend, SearchQuery, SearchRequest,
    };
}

/// Documents indexed to be searched: the embedded index (built from files, folders or JSON
/// lines), a Qdrant collection of the same layout, and the embedded default corpus.
pub mod index {
    pub use crate::default_corpus::{
        default_fetched_dir, default_index_dir, open_default_index, DEFAULT_CORPUS_JSONL,
    };
    pub use ferret_backends_local::{
        checked_acl, read_path, stream_path, Compaction, DocumentStream, IndexError, IngestIssue,
        IngestOptions, IngestReport, LocalIndex, PathDocuments, SegmentPolicy,
    };
    pub use ferret_backends_qdrant::QdrantIndex;
    pub use ferret_core::Unlisted;
}

/// Language models and embedders: an OpenAI-compatible server, the embedded models, and the
/// per-stage settings that say which stages ask a model.
pub mod models {
    pub use crate::default_corpus::{default_embedder, default_embedder_for, default_models_dir};
    pub use ferret_core::{EmbedError, Embedder, LanguageModel, LlmError};
    pub use ferret_embed::{
        CachedEmbedder, EmbedderError, HubSource, LocalEmbedder, LocalEmbedderConfig,
        OpenAiEmbedder, MINILM_DIR,
    };
    pub use ferret_llm::{
        Exchange, ModelPrice, OpenAiConfig, OpenAiModel, SchemaSupport, ScriptedModel, Stage,
        StageModel, StageModelConfig,
    };
    #[cfg(feature = "local-model")]
    pub use ferret_llm::{
        LocalModel, LocalModelConfig, WeightFormat, EMBEDDED_MODELS, GEMMA3_270M_FILE, SMOLLM2_FILE,
    };
}

/// The knowledge base a research run adds references to: described files, an index of them,
/// and the registry of what was added.
pub mod knowledge {
    pub use crate::default_corpus::default_research_dir;
    pub use crate::knowledge_index::{
        default_knowledge_dir, LocalKnowledgeIndex, QdrantKnowledgeIndex,
    };
    pub use ferret_knowledge::{
        Added, Change, DescribedBy, Describer, Description, Documentalist, DocumentalistError,
        ExtractiveDescriber, Given, KnowledgeEntry, KnowledgeIndex, KnowledgeRegistry,
        KnowledgeSource, LlmDescriber, RegistryError,
    };
}

/// How a searcher is set up: the configuration file (`ferret.toml`) and the settings of the
/// agent, the executor and the stages.
pub mod config {
    pub use crate::config_file::{
        ConfigFileError, FetchSection, FileConfig, FinderSection, HubSection, LocalSection,
        MemorySection, ServerSection, TokenSection, WebProvider, WebSection, CONFIG_VARIABLE,
    };
    pub use ferret_agent::{AgentConfig, PlanConfig, StageConfig, ToolLoopConfig};
    pub use ferret_exec::{ExecutorConfig, RateLimit, RetryPolicy};
    pub use ferret_grading::GradingConfig;
    pub use ferret_query_intel::{BridgeConfig, GuardrailConfig, GuardrailMessages, NameRanking};
}

/// Recording a search's calls (backends and models) and replaying them offline, step by step.
pub mod record {
    pub use crate::builder::ReplayFailure;
    pub use ferret_agent::{PlanRecord, RecordedStep, RecordedVerdict};
    pub use ferret_record::{Recorder, Recording, RecordingError, ReplayError, Replayer};
}

/// Fetching a web page safely (no private address unless allowed, robots.txt respected) as
/// markdown, for ingestion.
pub use ferret_fetch as fetch;
