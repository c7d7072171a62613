//! What `search` and `serve` search over: an index, a Qdrant collection, the web, or the built-in
//! corpus; a language model or none; as the configuration file says, the flags overriding it.

use std::path::PathBuf;
use std::sync::Arc;

use ferret::config::{AgentConfig, ExecutorConfig, FileConfig, WebProvider};
use ferret::jobs::find_model::ModelSource;
use ferret::jobs::search::RetrievalMode;
use ferret::jobs::session::{FileSessions, SessionLimits};
use ferret::record::Recorder;
use ferret::{Ferret, FerretBuilder, Strategy};

use crate::llm_args::LlmArgs;
use crate::store_args::StoreArgs;
use crate::web_args::WebChoice;

/// The backends, ranking and model a searcher is built with.
#[derive(Debug, clap::Args)]
pub struct SearcherArgs {
    /// Search this index instead of the built-in Wikipedia slice.
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// How results are ranked (default: hybrid when the index holds dense vectors, else BM25).
    #[arg(long)]
    pub mode: Option<RetrievalMode>,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Search the web too (comma-separated): keys from TAVILY_API_KEY and BRAVE_API_KEY, a
    /// SearXNG instance from SEARXNG_URL. Without --index, only the web is searched.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub web: Vec<WebChoice>,
    /// Model hubs the model-file finder may search (comma-separated: civitai, huggingface);
    /// default: those the configuration file has a [hub.*] table for. Questions never search
    /// them; `find_model` (MCP) and the `find_model` strategy do.
    #[arg(long, value_delimiter = ',', value_name = "HUB")]
    pub hubs: Vec<ModelSource>,
    /// The configuration file (default: $FERRET_CONFIG, else ferret.toml in the user's
    /// configuration folder when it is there); the flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl SearcherArgs {
    /// The configuration file these flags name or the default place holds; empty when there
    /// is none.
    pub fn file_config(&self) -> anyhow::Result<FileConfig> {
        Ok(FileConfig::located(self.config.as_deref())?)
    }

    /// The searcher these flags and the configuration file describe, running `strategy`.
    /// Warnings (a web provider that could not be set up) go to standard error.
    pub fn build(self, strategy: Strategy) -> anyhow::Result<Ferret> {
        Ok(self.builder(strategy)?.build()?)
    }

    /// [`SearcherArgs::build`], its threads kept in files under `dir`, so that a thread outlives
    /// this process.
    pub fn build_keeping_threads(self, strategy: Strategy, dir: PathBuf) -> anyhow::Result<Ferret> {
        let limits = self
            .file_config()?
            .memory
            .session_limits(SessionLimits::default());
        let store = Arc::new(FileSessions::new(dir, limits));
        Ok(self.builder(strategy)?.session_store(store).build()?)
    }

    /// [`SearcherArgs::build`], every exchange with the world kept in `recorder`.
    pub fn build_recording(self, strategy: Strategy, recorder: Recorder) -> anyhow::Result<Ferret> {
        Ok(self.builder(strategy)?.recorder(recorder).build()?)
    }

    fn builder(self, strategy: Strategy) -> anyhow::Result<FerretBuilder> {
        let file = self.file_config()?;
        let local = file.local.clone();
        let store = self.store;
        // The flags override the file: --index its index, --mode its mode, --web its
        // providers (each configured as the file says).
        let index = self.index.or_else(|| {
            store
                .qdrant_url
                .is_none()
                .then(|| local.as_ref().map(|l| l.index.clone()))
                .flatten()
        });
        let mode = self.mode.or(local.and_then(|l| l.mode));
        let web: Vec<WebProvider> = if self.web.is_empty() {
            file.web_providers()
        } else {
            self.web.iter().map(|choice| choice.provider()).collect()
        };
        let builder = match (&index, store.qdrant()) {
            (Some(_), Some(_)) => anyhow::bail!("choose one of --index and --qdrant-url"),
            (None, Some(config)) => Ferret::builder().qdrant_config(config),
            (Some(dir), None) => Ferret::builder().local_index(dir),
            (None, None) if !web.is_empty() => Ferret::builder(),
            (None, None) => Ferret::builder().default_corpus(),
        };
        let (builder, warnings) = file.add_web(builder, &web);
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
        let hubs = if self.hubs.is_empty() {
            file.hub_sources()
        } else {
            self.hubs.clone()
        };
        let (mut builder, hub_warnings) = file.add_hubs(builder, &hubs);
        for warning in &hub_warnings {
            eprintln!("warning: {warning}");
        }
        let added = web.len() - warnings.len();
        if !web.is_empty() && added == 0 && index.is_none() && store.qdrant_url.is_none() {
            anyhow::bail!("no backend to search: none of --web could be set up (see the warnings)");
        }
        if let Some(mode) = mode.filter(|_| index.is_some() || store.qdrant_url.is_some()) {
            builder = builder.retrieval(mode);
        }
        let mut builder = builder
            .agent(AgentConfig {
                strategy,
                ..AgentConfig::default()
            })
            .executor(file.memory.executor(ExecutorConfig::default()))
            .session_limits(file.memory.session_limits(SessionLimits::default()));
        if let Some(model) = self.llm.model()? {
            builder = builder
                .language_model(model)
                .stage_model(self.llm.stage_config()?);
        }
        Ok(builder)
    }
}
