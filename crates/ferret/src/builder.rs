use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret_agent::{
    Agent, AgentConfig, ModelFamilies, ModelFamily, SessionLimits, SessionStore, Sessions,
    StageConfig, Stages,
};
use ferret_backends_local::{
    DocumentStream, IngestOptions, IngestReport, LocalBackend, LocalIndex,
};
use ferret_backends_qdrant::{
    backend_error, QdrantBackend, QdrantConfig, QdrantError, QdrantIndex,
};
use ferret_core::{
    Access, BackendError, BackendErrorKind, Budget, Embedder, Event, FerretError, FileRequest, Hit,
    LanguageModel, Query, QueryForm, Response, RetrievalMode, SearchBackend, StopReason, Strategy,
    Trace,
};
use ferret_exec::{CallRate, Executor, ExecutorConfig};
use ferret_grading::GradingConfig;
use ferret_llm::{Stage, StageModel, StageModelConfig};
use ferret_query_intel::{BridgeConfig, GuardrailConfig, NameRanking};
use ferret_record::{Recorder, Recording, ReplayError, Replayer};
use futures::Stream;
use tokio::sync::mpsc::UnboundedSender;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::default_corpus::{
    default_embedder, default_embedder_for, index_error, shared_default_index,
};
use crate::knowledge_index::LocalKnowledgeIndex;
use crate::lazy::LazyBackend;
use crate::research::BackendResearchTools;
use ferret_knowledge::{Describer, Documentalist, ExtractiveDescriber, LlmDescriber};
use ferret_research::{LlmBriefWriter, LlmResearchPlanner, ResearchConfig, Researcher};

/// The environment variable holding a Qdrant server's API key: a key never goes in code or flags.
pub const QDRANT_API_KEY_VAR: &str = "FERRET_QDRANT_API_KEY";

enum BackendSpec {
    Ready(Arc<dyn SearchBackend>, Option<CallRate>),
    LocalIndex(PathBuf),
    DefaultCorpus,
    Qdrant(QdrantConfig),
}

/// Configures a [`Ferret`]: which backends to search and how each stage behaves.
#[derive(Default)]
pub struct FerretBuilder {
    backends: Vec<BackendSpec>,
    guardrail: Option<GuardrailConfig>,
    grading: GradingConfig,
    bridge: BridgeConfig,
    model_families: Vec<ModelFamily>,
    agent: AgentConfig,
    executor: ExecutorConfig,
    model: Option<Arc<dyn LanguageModel>>,
    stage_model: StageModelConfig,
    retrieval: Option<RetrievalMode>,
    embedder: Option<Arc<dyn Embedder>>,
    session_store: Option<Arc<dyn SessionStore>>,
    session_limits: SessionLimits,
    recorder: Option<Recorder>,
}

impl FerretBuilder {
    /// Keep threads' questions in `store` instead of in memory: a question its thread repeats
    /// is answered again without a search (see [`Ferret::session`]).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }

    /// How much the in-memory session store keeps, and how alike two questions must mean to
    /// repeat (default: 50 turns a thread, one hour, 1,000 threads, 32 MiB in all, cosine 0.8).
    pub fn session_limits(mut self, limits: SessionLimits) -> Self {
        self.session_limits = limits;
        self
    }

    /// Search the embedded index in `dir` (made by `ferret ingest`), as backend `local` (the
    /// first local index; each other one is `local-<its folder's name>`).
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

    /// Search collection `collection` of the Qdrant server at `url` (its gRPC port, as
    /// `http://localhost:6334`), as backend `qdrant`, with the API key from
    /// `FERRET_QDRANT_API_KEY` when it is set. The server is connected to on the first search;
    /// an unreachable one is that search's backend failure, and the next search tries again.
    /// Ranked as [`retrieval`](Self::retrieval) says, else hybrid when the collection holds dense
    /// vectors and the embedding model is here, else BM25.
    pub fn qdrant(self, url: impl Into<String>, collection: impl Into<String>) -> Self {
        let mut config = QdrantConfig::new(url.into(), collection.into());
        if let Ok(key) = std::env::var(QDRANT_API_KEY_VAR) {
            config = config.api_key(key);
        }
        self.qdrant_config(config)
    }

    /// Search a Qdrant collection configured in full (timeouts, key), as backend `qdrant`.
    pub fn qdrant_config(mut self, config: QdrantConfig) -> Self {
        self.backends.push(BackendSpec::Qdrant(config));
        self
    }

    /// Search `backend`, paced to the rate it declares
    /// ([`SearchBackend::call_rate`](ferret_core::SearchBackend::call_rate): a web or hub
    /// backend states its provider's limit; an index declares none).
    pub fn backend(mut self, backend: Arc<dyn SearchBackend>) -> Self {
        self.backends.push(BackendSpec::Ready(backend, None));
        self
    }

    /// Search `backend` paced to `rate` instead of the rate it declares (a plan's own quota).
    pub fn paced_backend(mut self, backend: Arc<dyn SearchBackend>, rate: CallRate) -> Self {
        self.backends.push(BackendSpec::Ready(backend, Some(rate)));
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

    /// How a question's shape and the names linking results are read (multi-hop search).
    pub fn bridge(mut self, bridge: BridgeConfig) -> Self {
        self.bridge = bridge;
        self
    }

    /// Base-model families the model-file finder recognises in file names beside its built-in
    /// table (`sd_xl` is SDXL, searched as `stable-diffusion-xl` on the Hub); one named as a
    /// built-in family replaces it.
    pub fn model_families(mut self, families: Vec<ModelFamily>) -> Self {
        self.model_families = families;
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
    /// scripted one), each falling back to its heuristic when the model fails; stages listed in
    /// [`StageModelConfig::heuristic_stages`] keep their heuristic. Without a model the pipeline
    /// runs on heuristics alone.
    pub fn language_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Prices and prompt sizes for the model's stages.
    pub fn stage_model(mut self, config: StageModelConfig) -> Self {
        self.stage_model = config;
        self
    }

    /// Keep every exchange of the built searcher with its backends, model and embedder in
    /// `recorder`, for [`Ferret::search_recorded`]. The exchanges of searches run at once mix:
    /// record one search at a time.
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Search the world `replayer` stands in for: its recorded backends, model and embedder
    /// replace any configured, and no network or model is used. [`Ferret::replay`] runs a
    /// recording this way with the recorded strategy.
    pub fn replaying(mut self, replayer: &Replayer) -> Self {
        self.backends = replayer
            .backends()
            .into_iter()
            .map(|backend| BackendSpec::Ready(backend, None))
            .collect();
        self.model = replayer.model();
        self.embedder = replayer.embedder();
        self
    }

    /// Open the indexes and wire everything, or say what is missing or unusable. The default
    /// corpus and a Qdrant server are opened on the first search, so this never blocks on
    /// indexing or the network.
    pub fn build(self) -> Result<Ferret, FerretError> {
        self.grading
            .validate()
            .map_err(|e| FerretError::Config(e.to_string()))?;
        let mut executor = Executor::builder().config(self.executor);
        // The embedder of a searched index with vectors, which also reads bridge names' meaning.
        let mut index_embedder: Option<Arc<dyn Embedder>> = None;
        let mut writable = None;
        let mut default_corpus = false;
        let mut local_names = LocalNames::default();
        // The built-in corpus is always `local`; indexes of one's own take the names after it.
        if (self.backends.iter()).any(|spec| matches!(spec, BackendSpec::DefaultCorpus)) {
            local_names.taken.insert("local".to_owned());
        }
        let recorder = self.recorder;
        let recorded = |backend: Arc<dyn SearchBackend>| match &recorder {
            Some(recorder) => recorder.backend(backend),
            None => backend,
        };
        for spec in self.backends {
            executor = match spec {
                BackendSpec::Ready(backend, None) => executor.backend(recorded(backend)),
                BackendSpec::Ready(backend, Some(rate)) => {
                    executor.paced_backend(recorded(backend), rate)
                }
                BackendSpec::LocalIndex(dir) => {
                    let has_dense = LocalIndex::dense_embedder_of(&dir)
                        .map_err(|e| index_error(&dir, e))?
                        .is_some();
                    let mode = self.retrieval.unwrap_or(if has_dense {
                        RetrievalMode::Hybrid
                    } else {
                        RetrievalMode::Bm25
                    });
                    let embedder = match (&self.embedder, has_dense && mode.needs_embeddings()) {
                        (_, false) => None,
                        (Some(embedder), true) => Some(embedder.clone()),
                        (None, true) => Some(default_embedder_for(&dir)?),
                    };
                    index_embedder = index_embedder.or_else(|| embedder.clone());
                    let index = Arc::new(
                        LocalIndex::open_with(&dir, embedder).map_err(|e| index_error(&dir, e))?,
                    );
                    writable.get_or_insert_with(|| Arc::clone(&index));
                    let backend = LocalBackend::new(local_names.next(&dir), index)
                        .with_mode(mode)
                        .map_err(|e| index_error(&dir, e))?;
                    executor.backend(recorded(Arc::new(backend)))
                }
                BackendSpec::DefaultCorpus => {
                    default_corpus = true;
                    // Loading the model here is paid only by those who asked for meaning.
                    if self.bridge.ranking == NameRanking::Meaning && index_embedder.is_none() {
                        index_embedder = default_embedder().ok();
                    }
                    executor.backend(recorded(Arc::new(default_corpus_backend())))
                }
                BackendSpec::Qdrant(config) => executor.backend(recorded(Arc::new(
                    qdrant_backend(config, self.retrieval, self.embedder.clone())?,
                ))),
            };
        }
        let mut embedder = index_embedder.or(self.embedder);
        let mut model = self.model;
        if let Some(recorder) = &recorder {
            embedder = embedder.map(|e| recorder.embedder(e));
            model = model.map(|m| recorder.model(m));
        }
        let sessions = match self.session_store {
            Some(store) => Sessions::new(store, embedder.clone(), self.session_limits.similarity),
            None => Sessions::in_memory(self.session_limits, embedder.clone()),
        };
        let config = StageConfig {
            guardrail: self.guardrail.unwrap_or_default(),
            grading: self.grading,
            bridge: self.bridge,
            embedder,
            model_families: ModelFamilies::default().with(self.model_families),
        };
        let model = model.map(|model| StageModel::new(model, self.stage_model));
        let stages = match &model {
            Some(model) => Stages::with_model(model.clone(), config),
            None => Stages::heuristic(config),
        };
        let strategy = self.agent.strategy;
        Ok(Ferret {
            agent: Agent::new(stages, executor.build()?, self.agent)?.with_sessions(sessions),
            writable,
            default_corpus,
            model,
            recording: recorder.map(|recorder| (recorder, strategy)),
        })
    }
}

/// The names of the local indexes a searcher holds: the first is `local`, each other one
/// `local-<its folder's name>` (numbered should two folders share a name), so two indexes
/// never clash and each is named in traces and failures.
#[derive(Default)]
struct LocalNames {
    taken: std::collections::HashSet<String>,
}

impl LocalNames {
    fn next(&mut self, dir: &Path) -> String {
        let folder = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut name = if self.taken.contains("local") {
            format!("local-{folder}")
        } else {
            "local".to_owned()
        };
        let base = name.clone();
        for n in 2.. {
            if !self.taken.contains(&name) {
                break;
            }
            name = format!("{base}-{n}");
        }
        self.taken.insert(name.clone());
        name
    }
}

/// The built-in corpus as backend `local`, indexed on a blocking thread by its first search.
fn default_corpus_backend() -> LazyBackend {
    let capabilities = ferret_backends_local::STORE_CAPABILITIES;
    LazyBackend::new("local", capabilities, || async {
        let unavailable = |message: String| {
            BackendError::permanent("local", BackendErrorKind::Unavailable, message)
        };
        let index = tokio::task::spawn_blocking(shared_default_index)
            .await
            .map_err(|e| unavailable(format!("indexing the built-in corpus stopped: {e}")))?
            .map_err(|e| unavailable(e.to_string()))?;
        Ok(Arc::new(LocalBackend::new("local", index)) as Arc<dyn SearchBackend>)
    })
}

/// A Qdrant collection as backend `qdrant`, connected to by its first search. Without a mode,
/// it ranks hybrid when the embedding model is here and the collection holds dense vectors,
/// else BM25; a mode that needs embeddings needs the model now.
fn qdrant_backend(
    config: QdrantConfig,
    mode: Option<RetrievalMode>,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<LazyBackend, FerretError> {
    let embedder = match (embedder, mode) {
        (Some(embedder), _) => Some(embedder),
        (None, Some(mode)) if mode.needs_embeddings() => Some(default_embedder()?),
        (None, Some(_)) => None,
        // Hybrid if the model is here; BM25 otherwise.
        (None, None) => default_embedder().ok(),
    };
    let capabilities = ferret_backends_local::STORE_CAPABILITIES;
    Ok(LazyBackend::new("qdrant", capabilities, move || {
        let (config, embedder) = (config.clone(), embedder.clone());
        async move {
            let (index, mode) = connect_qdrant(config, mode, embedder)
                .await
                .map_err(|e| backend_error("qdrant", e))?;
            let backend = QdrantBackend::new("qdrant", Arc::new(index), mode).map_err(|e| {
                BackendError::permanent("qdrant", BackendErrorKind::InvalidRequest, e.to_string())
            })?;
            Ok(Arc::new(backend) as Arc<dyn SearchBackend>)
        }
    })
    // Without a mode it ranks hybrid or BM25, which both score keywords.
    .with_query_form(mode.map_or(QueryForm::Keywords, RetrievalMode::query_form)))
}

/// Connect to the collection; a collection without dense vectors searched with no mode given
/// falls back to BM25.
async fn connect_qdrant(
    config: QdrantConfig,
    mode: Option<RetrievalMode>,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<(QdrantIndex, RetrievalMode), QdrantError> {
    let wants_dense = mode.is_none_or(|m| m.needs_embeddings());
    let embedder = embedder.filter(|_| wants_dense);
    match QdrantIndex::connect(config.clone(), embedder.clone()).await {
        Ok(index) => {
            let mode = mode.unwrap_or(if embedder.is_some() {
                RetrievalMode::Hybrid
            } else {
                RetrievalMode::Bm25
            });
            Ok((index, mode))
        }
        Err(QdrantError::NoDenseVectors { .. }) if mode.is_none() => Ok((
            QdrantIndex::connect(config, None).await?,
            RetrievalMode::Bm25,
        )),
        Err(e) => Err(e),
    }
}

/// A configured search engine. Cheap to clone; clones share caches and rate limits.
#[derive(Debug, Clone)]
pub struct Ferret {
    agent: Agent,
    /// The embedded index documents are added to: the first one given to the builder.
    writable: Option<Arc<LocalIndex>>,
    /// Whether the built-in corpus is one of the backends (opened on its first search).
    default_corpus: bool,
    /// The model the stages ask, if any: a research run's planner asks it too.
    model: Option<StageModel>,
    /// Where its exchanges are kept, and the strategy configured, when it records.
    recording: Option<(Recorder, Strategy)>,
}

impl Ferret {
    /// Start configuring.
    pub fn builder() -> FerretBuilder {
        FerretBuilder::default()
    }

    /// Open now what would be opened on the first search: the built-in corpus's index
    /// (indexing it on first use). A service calls this before it says it is ready, so that an
    /// index another process holds stops it at start rather than failing every search.
    pub fn open_now(&self) -> Result<(), FerretError> {
        if self.default_corpus {
            crate::default_corpus::shared_default_index()?;
        }
        Ok(())
    }

    /// The names of the backends searches run on: a service is ready when there is one.
    pub fn backend_names(&self) -> Vec<&str> {
        self.agent.backend_names()
    }

    /// Answer `query`. Backend failures are listed in `Response::failures`; only a query that
    /// cannot be searched at all (an unusable budget) is an error.
    pub async fn search(&self, query: Query) -> Result<Response, FerretError> {
        self.agent.run(&query, None).await
    }

    /// Find the model file `request` names on the configured model hubs (the backends whose
    /// capabilities declare one), within [`FileRequest::default_budget`]: the response's
    /// `model_file` holds the status (FOUND or UNCERTAIN) and the ranked candidates, its answer
    /// the best one, its trace the plan, each call and the ranking with every rule's effect. A
    /// hub that fails is listed in `failures`, and the finder answers from the others.
    pub async fn find_model(&self, request: &FileRequest) -> Result<Response, FerretError> {
        self.find_model_within(request, FileRequest::default_budget())
            .await
    }

    /// [`Ferret::find_model`] within `budget` (a service holds it to its own deadline).
    pub async fn find_model_within(
        &self,
        request: &FileRequest,
        budget: Budget,
    ) -> Result<Response, FerretError> {
        self.agent.find_model(request, budget, None).await
    }

    /// The session of thread `thread`: its searches remember what the thread asked, and a
    /// question it repeats (the same words, the same error, or the same meaning when the index
    /// has an embedder) is answered again without a backend call, the response's `repeat_of`
    /// naming the earlier question, unless the query asks [`OnRepeat::SearchAgain`].
    ///
    /// [`OnRepeat::SearchAgain`]: ferret_core::OnRepeat::SearchAgain
    pub fn session(&self, thread: impl Into<String>) -> Session<'_> {
        Session {
            ferret: self,
            thread: thread.into(),
        }
    }

    /// Answer `query` as a stream of events ending with exactly one [`Event::Done`]. A search
    /// that cannot start (an unusable budget) sends [`Event::Error`] and a `Done` whose response
    /// says why. Must be called inside a tokio runtime; the search runs on a spawned task and
    /// stops early if the stream is dropped.
    pub fn search_stream(&self, query: Query) -> impl Stream<Item = Event> + Send + 'static {
        let agent = self.agent.clone();
        stream_of(move |sender| async move { agent.run(&query, Some(sender)).await })
    }

    /// Answer `query` as [`Ferret::search`] does, and hand back everything the search
    /// exchanged with its backends, model and embedder: [`Recording::save`] keeps it as a
    /// folder, [`Ferret::replay`] runs it again with no network and no model. Needs a searcher
    /// built with [`FerretBuilder::recorder`]; run one recorded search at a time. The search
    /// starts with an empty cache, so every result it uses is in the recording; a question of
    /// a thread is refused, since its earlier turns would not be.
    pub async fn search_recorded(
        &self,
        query: Query,
    ) -> Result<(Response, Recording), FerretError> {
        let Some((recorder, strategy)) = &self.recording else {
            return Err(FerretError::Config(
                "search_recorded needs a searcher built with FerretBuilder::recorder".into(),
            ));
        };
        if query.thread_id.is_some() {
            return Err(FerretError::Config(
                "a question of a thread cannot be recorded: its earlier turns would be missing from the recording".into(),
            ));
        }
        self.agent.executor().forget_results();
        recorder.clear();
        let response = self.search(query.clone()).await?;
        let mut recording = recorder.take(&query, *strategy, &response);
        recording.case.recorded.stage_settings = self
            .model
            .as_ref()
            .and_then(|model| serde_json::to_value(model.config()).ok());
        Ok((response, recording))
    }

    /// Run `recording` again: its query, with its strategy, against stand-ins for the backends,
    /// model and embedder it talked to, with default settings otherwise. No network and no
    /// model is used. A run that asks for something the recording does not hold (the code or
    /// the prompts changed since) is an error; compare the response with the recorded one
    /// with [`Recording::same_response`].
    pub async fn replay(recording: &Recording) -> Result<Response, ReplayFailure> {
        let replayer = Replayer::new(recording);
        let mut builder = Ferret::builder().replaying(&replayer).agent(AgentConfig {
            strategy: recording.case.strategy,
            ..AgentConfig::default()
        });
        if let Some(settings) = &recording.case.recorded.stage_settings {
            let settings = serde_json::from_value(settings.clone())
                .map_err(|e| FerretError::Config(format!("the recording's stage settings: {e}")))?;
            builder = builder.stage_model(settings);
        }
        let ferret = builder.build()?;
        let response = ferret.search(recording.case.query.clone()).await?;
        replayer.finish()?;
        Ok(response)
    }

    /// The Documentalist of the embedded index documents are added to (see
    /// [`Ferret::writable_index`]): it records what it adds in the registry beside the index,
    /// described by [`Ferret::describer`].
    pub fn documentalist(&self) -> Option<Documentalist> {
        let index = LocalKnowledgeIndex::new(self.writable.clone()?, IngestOptions::default());
        Some(Documentalist::new(index.registry(), Arc::new(index)).with_describer(self.describer()))
    }

    /// What describes the documents a Documentalist adds: the model when one is configured,
    /// falling back to extraction, else extraction.
    pub fn describer(&self) -> Arc<dyn Describer> {
        let model = self.model.as_ref().filter(|m| m.asks(Stage::Description));
        match model {
            Some(model) => Arc::new(LlmDescriber::new(
                model.clone(),
                ExtractiveDescriber::default(),
            )),
            None => Arc::new(ExtractiveDescriber::default()),
        }
    }

    /// A researcher over this searcher's backends: the knowledge base (every backend that is
    /// neither a web engine nor a model hub) and the web engines are searched through the
    /// executor within `budget` for the whole run, and references are added with
    /// `documentalist`. With a model, the model writes the brief and plans (the rules when its
    /// plan fails twice),
    /// writes the note and judges it, a rejected note going back to the planner; without one,
    /// the rules plan and write.
    pub fn researcher(
        &self,
        documentalist: Documentalist,
        config: ResearchConfig,
        budget: &Budget,
    ) -> Researcher {
        let tools = BackendResearchTools::new(self.agent.clone(), budget);
        let plan = &self.agent.stages().plan;
        let mut researcher = Researcher::new(
            Arc::new(tools),
            Arc::new(documentalist),
            plan.writer.clone(),
            config,
        );
        if let Some(model) = self.model.as_ref().filter(|m| m.asks(Stage::ResearchBrief)) {
            researcher = researcher.with_briefer(Arc::new(LlmBriefWriter::new(model.clone())));
        }
        if let Some(model) = (self.model.as_ref()).filter(|m| m.asks(Stage::ResearchPlanning)) {
            researcher = researcher.with_planner(Arc::new(LlmResearchPlanner::new(model.clone())));
        }
        if let Some(evaluator) = &plan.report_evaluator {
            researcher = researcher.with_evaluator(evaluator.clone());
        }
        researcher
    }

    /// Bytes the cached results of searches hold now, within
    /// [`ExecutorConfig::cache_max_bytes`](ferret_exec::ExecutorConfig::cache_max_bytes).
    pub async fn cache_bytes(&self) -> u64 {
        self.agent.executor().cache_bytes().await
    }

    /// Bytes the threads' remembered turns hold now, within [`SessionLimits::max_bytes`];
    /// `None` when a [`SessionStore`] keeps them outside this process.
    pub fn session_bytes(&self) -> Option<u64> {
        self.agent.session_bytes()
    }

    /// Of `hits` (kept from earlier searches), those `access` no longer lets the asker read, as
    /// `(backend, id)`: each backend is asked with the access lists it holds now, so a hit kept
    /// by a service (for a later fetch, say) is checked before it is shown again. Hits of a
    /// backend that is gone or cannot answer count as unreadable.
    pub async fn unreadable<'h>(
        &self,
        hits: impl IntoIterator<Item = &'h Hit>,
        access: &Access,
    ) -> std::collections::HashSet<(String, String)> {
        self.agent.executor().unreadable(hits, access).await
    }

    /// The embedded index that [`Ferret::ingest`] adds documents to, if there is one: the first
    /// given to [`FerretBuilder::local_index`]. The built-in corpus is not one: it is rebuilt from
    /// the binary, and a Qdrant collection takes documents from any process.
    pub fn writable_index(&self) -> Option<&Arc<LocalIndex>> {
        self.writable.as_ref()
    }

    /// Add documents being read from disk ([`stream_path`](crate::stream_path)) or already read
    /// (sent, see [`PathDocuments`](crate::index::PathDocuments)) to the embedded index while searches go on: they run between the ingest's batches, and the
    /// cached results of earlier searches are dropped once it ends so that searches see the new
    /// documents. One ingest runs at a time; another waits. `progress(done, total)` is called
    /// after each batch.
    pub async fn ingest(
        &self,
        documents: impl Into<DocumentStream> + Send,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, FerretError> {
        let index = self.writable.as_ref().ok_or(FerretError::NotWritable)?;
        let outcome = index.ingest_read(documents, options, progress).await;
        // Even a failed ingest may have written some batches.
        self.agent.forget_results();
        outcome.map_err(|e| index_error(index.dir(), e))
    }
}

/// The events `search` sends, then, when it fails to start, an error and a final response.
fn stream_of<F, Fut>(search: F) -> impl Stream<Item = Event> + Send + 'static
where
    F: FnOnce(UnboundedSender<Event>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Response, FerretError>> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let closed = sender.clone();
        tokio::select! {
            outcome = search(sender.clone()) => {
                if let Err(error) = outcome {
                    let message = error.to_string();
                    let _ = sender.send(Event::Error { message: message.clone() });
                    let response = Response::message(message, StopReason::Refused, Trace::default());
                    let _ = sender.send(Event::Done { response: Box::new(response) });
                }
            }
            _ = closed.closed() => {}
        }
    });
    UnboundedReceiverStream::new(receiver)
}

/// One thread's searches: see [`Ferret::session`].
#[derive(Debug)]
pub struct Session<'a> {
    ferret: &'a Ferret,
    thread: String,
}

impl Session<'_> {
    /// The thread's name.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// Answer `query` in this thread.
    pub async fn search(&self, query: Query) -> Result<Response, FerretError> {
        self.ferret
            .search(query.with_thread(self.thread.clone()))
            .await
    }
}

/// A replay that could not give a response.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFailure {
    /// The recorded query could not be searched with these settings.
    #[error(transparent)]
    Search(#[from] FerretError),
    /// The run strayed from the recording.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}
