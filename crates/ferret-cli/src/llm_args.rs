//! The command line's choice of language model.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ferret::models::{
    LanguageModel, LocalModel, LocalModelConfig, OpenAiConfig, OpenAiModel, SchemaSupport, Stage,
    StageModelConfig,
};

/// Which model the stages ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LlmChoice {
    /// No model: every stage runs its heuristic.
    None,
    /// A model run in-process, SmolLM2-135M-Instruct unless `--local-model` says otherwise
    /// (fetch it once with `cargo xtask models`).
    Local,
    /// An OpenAI-compatible server (OpenAI, vLLM, Ollama, llama-server); the key, if any, is read
    /// from `FERRET_LLM_API_KEY`, never from a flag.
    Openai,
}

/// Options that pick and configure the model.
#[derive(Debug, clap::Args)]
pub struct LlmArgs {
    /// The model the stages ask.
    #[arg(long, value_enum, default_value = "none")]
    pub llm: LlmChoice,
    /// Folder holding the local model (default: `$FERRET_MODELS`, else ~/.cache/ferret/models).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// The model `--llm local` runs: `smollm2` (Apache-2.0), `gemma3-270m` (Gemma Terms of Use;
    /// `cargo xtask models --gemma` fetches it), or the path of a GGUF file (llama or gemma3
    /// architecture).
    #[arg(long, default_value = "smollm2")]
    pub local_model: String,
    /// Base URL of the OpenAI-compatible server, up to `/v1`.
    #[arg(long, env = "FERRET_LLM_BASE_URL")]
    pub llm_url: Option<String>,
    /// Model name on that server.
    #[arg(long, env = "FERRET_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Stream the server's answers.
    #[arg(long)]
    pub llm_stream: bool,
    /// Seconds one model request may take.
    #[arg(long, default_value_t = 60)]
    pub llm_timeout: u64,
    /// How the server is asked for JSON: json-schema (OpenAI, vLLM, Ollama, llama-server),
    /// json-object-schema (llama-cpp-python), json-object, or prompt-only. A server that refuses
    /// it is asked in the next at once, and the one that worked is kept.
    #[arg(long, env = "FERRET_LLM_FORMAT", default_value = "json-schema", value_parser = parse_format)]
    pub llm_format: SchemaSupport,
    /// Stages that keep their heuristic though a model is configured (comma-separated stage
    /// names, as `-v` shows them; `none` for none), in place of the defaults: none, except
    /// analysis, decomposition, grading and next_hop for `--llm local`, where measurement found
    /// the small model no help. Stages that write answers stay heuristic for a model that does
    /// not write them (the embedded one) whatever this says.
    #[arg(long, value_delimiter = ',', value_name = "STAGE", value_parser = Stage::parse_or_none)]
    pub heuristic_stages: Vec<Option<Stage>>,
}

/// A structured-output dialect by name, as `--llm-format` takes it.
fn parse_format(name: &str) -> Result<SchemaSupport, String> {
    name.parse()
}

impl LlmArgs {
    /// How the stages use the chosen model: `--heuristic-stages`, else the defaults for it.
    pub fn stage_config(&self) -> anyhow::Result<StageModelConfig> {
        let named: Vec<Stage> = self.heuristic_stages.iter().flatten().copied().collect();
        if !named.is_empty() && named.len() < self.heuristic_stages.len() {
            anyhow::bail!("--heuristic-stages takes `none` alone, or stage names");
        }
        if !self.heuristic_stages.is_empty() {
            return Ok(StageModelConfig {
                heuristic_stages: named.into_iter().collect(),
                ..StageModelConfig::default()
            });
        }
        Ok(match self.llm {
            LlmChoice::Local => StageModelConfig::small_model(),
            LlmChoice::None | LlmChoice::Openai => StageModelConfig::default(),
        })
    }

    /// The chosen model, loaded; `None` for `--llm none`.
    pub fn model(&self) -> anyhow::Result<Option<Arc<dyn LanguageModel>>> {
        Ok(match self.llm {
            LlmChoice::None => None,
            LlmChoice::Local => {
                let dir = self
                    .models
                    .clone()
                    .unwrap_or_else(ferret::models::default_models_dir);
                Some(Arc::new(LocalModel::load(LocalModelConfig::named(
                    &dir,
                    &self.local_model,
                ))?))
            }
            LlmChoice::Openai => {
                let url = self
                    .llm_url
                    .clone()
                    .context("--llm openai needs --llm-url or FERRET_LLM_BASE_URL")?;
                let name = self
                    .llm_model
                    .clone()
                    .context("--llm openai needs --llm-model or FERRET_LLM_MODEL")?;
                let mut config = OpenAiConfig::new(url, name);
                if let Ok(key) = std::env::var("FERRET_LLM_API_KEY") {
                    config = config.api_key(key);
                }
                config.stream = self.llm_stream;
                config.schema_support = self.llm_format;
                config.timeout = Duration::from_secs(self.llm_timeout.max(1));
                Some(Arc::new(OpenAiModel::new(config)?))
            }
        })
    }
}
