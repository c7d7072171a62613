use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret_agent::{Agent, AgentConfig, Stages};
use ferret_backends_local::{IndexError, LocalBackend, LocalIndex};
use ferret_core::{Embedder, Event, FerretError, LanguageModel, Query, Response, RetrievalMode, SearchBackend};
use ferret_exec::{Executor, ExecutorConfig};
use ferret_grading::GradingConfig;
use ferret_llm::{StageModel, StageModelConfig};
use ferret_query_intel::GuardrailConfig;
use futures::Stream;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::default_corpus::{default_embedder, shared_default_index};

pub(crate) fn index_error(path: &Path, error: IndexError) -> FerretError {
    FerretError::Index { path: path.to_owned(), reason: error.to_string() }
}

enum BackendSpec {
    Ready(Arc<dyn SearchBackend>, Option<NonZeroU32>),
    LocalIndex(PathBuf),
    DefaultCorpus,
}

/// Configures a [`Ferret`]: which backends to search and how each stage behaves.
#[derive(Default)]
pub struct FerretBuilder {
    backends: Vec<BackendSpec>,
    guardrail: Option<GuardrailConfig>,
    grading: GradingConfig,
    agent: AgentConfig,
    executor: ExecutorConfig,
    model: Option<Arc<dyn LanguageModel>>,
    stage_model: StageModelConfig,
    retrieval: Option<RetrievalMode>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl FerretBuilder {
    /// Search the embedded index in `dir` (made by `ferret ingest`), as backend `local`.
    /// [`build`](Self::build) fails with the path if there is no index there.
    pub fn local_index(mut self, dir: impl Into<PathBuf>) -> Self {
        self.backends.push(BackendSpec::LocalIndex(dir.into()));
        self
    }

    /// How a [`local_index`](Self::local_index) ranks (default: hybrid when the index holds dense
    /// vectors, else BM25).
    pub fn retrieval(mut self, mode: RetrievalMode) -> Self {
        self.retrieval = Some(mode);
        self
    }

    /// The embedder for dense and hybrid search of a local index: the one its vectors came from
    /// (default: all-MiniLM-L6-v2 from [`default_models_dir`](crate::default_models_dir)).
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Search the built-in Wikipedia slice, indexed on first use, as backend `local`.
    pub fn default_corpus(mut self) -> Self {
        self.backends.push(BackendSpec::DefaultCorpus);
        self
    }

    /// Search any backend.
    pub fn backend(mut self, backend: Arc<dyn SearchBackend>) -> Self {
        self.backends.push(BackendSpec::Ready(backend, None));
        self
    }

    /// Search a backend that may be called at most `per_second` times a second.
    pub fn rate_limited_backend(mut self, backend: Arc<dyn SearchBackend>, per_second: NonZeroU32) -> Self {
        self.backends.push(BackendSpec::Ready(backend, Some(per_second)));
        self
    }

    /// The guardrail's domain and replies (default: a general-knowledge corpus).
    pub fn guardrail(mut self, guardrail: GuardrailConfig) -> Self {
        self.guardrail = Some(guardrail);
        self
    }

    /// Relevance thresholds (default 0.3 kept, 0.4 good).
    pub fn grading(mut self, grading: GradingConfig) -> Self {
        self.grading = grading;
        self
    }

    /// Strategy and fetch depth.
    pub fn agent(mut self, agent: AgentConfig) -> Self {
        self.agent = agent;
        self
    }

    /// Cache and retry settings.
    pub fn executor(mut self, executor: ExecutorConfig) -> Self {
        self.executor = executor;
        self
    }

    /// Let every stage ask `model` (an [`OpenAiModel`](ferret_llm::OpenAiModel), a local model, a
    /// scripted one), each falling back to its heuristic when the model fails. Without a model the
    /// pipeline runs on heuristics alone.
    pub fn language_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Prices and prompt sizes for the model's stages.
    pub fn stage_model(mut self, config: StageModelConfig) -> Self {
        self.stage_model = config;
        self
    }

    /// Open the indexes and wire everything, or say what is missing.
    pub fn build(self) -> Result<Ferret, FerretError> {
        self.grading.validate().map_err(|e| FerretError::Config(e.to_string()))?;
        let mut executor = Executor::builder().config(self.executor);
        for spec in self.backends {
            executor = match spec {
                BackendSpec::Ready(backend, None) => executor.backend(backend),
                BackendSpec::Ready(backend, Some(rate)) => executor.rate_limited_backend(backend, rate),
                BackendSpec::LocalIndex(dir) => {
                    let has_dense = LocalIndex::dense_embedder_of(&dir).map_err(|e| index_error(&dir, e))?.is_some();
                    let mode = self.retrieval.unwrap_or(if has_dense { RetrievalMode::Hybrid } else { RetrievalMode::Bm25 });
                    let embedder = match (&self.embedder, has_dense && mode.needs_embeddings()) {
                        (_, false) => None,
                        (Some(embedder), true) => Some(embedder.clone()),
                        (None, true) => Some(default_embedder()?),
                    };
                    let index = LocalIndex::open_with(&dir, embedder).map_err(|e| index_error(&dir, e))?;
                    let backend = LocalBackend::new("local", Arc::new(index)).with_mode(mode).map_err(|e| index_error(&dir, e))?;
                    executor.backend(Arc::new(backend))
                }
                BackendSpec::DefaultCorpus => {
                    executor.backend(Arc::new(LocalBackend::new("local", shared_default_index()?)))
                }
            };
        }
        let guardrail = self.guardrail.unwrap_or_default();
        let stages = match self.model {
            Some(model) => Stages::with_model(StageModel::new(model, self.stage_model), guardrail, self.grading),
            None => Stages::heuristic(guardrail, self.grading),
        };
        Ok(Ferret { agent: Agent::new(stages, executor.build()?, self.agent) })
    }
}

/// A configured search engine. Cheap to clone; clones share caches and rate limits.
#[derive(Debug, Clone)]
pub struct Ferret {
    agent: Agent,
}

impl Ferret {
    /// Start configuring.
    pub fn builder() -> FerretBuilder {
        FerretBuilder::default()
    }

    /// Answer `query`. Backend failures are listed in `Response::failures`; only a query that
    /// cannot be searched at all (an unusable budget) is an error.
    pub async fn search(&self, query: Query) -> Result<Response, FerretError> {
        self.agent.run(&query, None).await
    }

    /// Answer `query` as a stream of events ending with [`Event::Done`]. Must be called inside a
    /// tokio runtime; the search runs on a spawned task and stops early if the stream is dropped.
    pub fn search_stream(&self, query: Query) -> Result<impl Stream<Item = Event> + Send + 'static, FerretError> {
        query.budget.validate()?;
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let agent = self.agent.clone();
        tokio::spawn(async move {
            let closed = sender.clone();
            tokio::select! {
                _ = agent.run(&query, Some(sender)) => {}
                _ = closed.closed() => {}
            }
        });
        Ok(UnboundedReceiverStream::new(receiver))
    }
}
