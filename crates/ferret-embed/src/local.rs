use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor, D};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use ferret_core::{EmbedError, Embedder, RetryClass};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::{EmbedderError, HubSource};

/// The folder `cargo xtask models` puts all-MiniLM-L6-v2 in, under the models directory.
pub const MINILM_DIR: &str = "all-minilm-l6-v2";

/// The HuggingFace hub id of all-MiniLM-L6-v2, for [`LocalEmbedder::from_hub`].
pub const MINILM_HUB_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The files a sentence-transformers BERT model folder must hold.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// How the local model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalEmbedderConfig {
    /// Longest input in tokens; longer texts are cut (sentence-transformers uses 256 for this model).
    pub max_tokens: usize,
    /// Texts per forward pass. Texts are sorted by length first, so a batch pads little.
    pub batch_size: usize,
    /// Threads for the matrix products; `None` uses every core.
    pub threads: Option<usize>,
}

impl Default for LocalEmbedderConfig {
    fn default() -> Self {
        Self { max_tokens: 256, batch_size: 16, threads: None }
    }
}

/// A BERT sentence-embedding model (all-MiniLM-L6-v2 by default) run in-process by candle:
/// mean pooling over the attention mask, then L2 normalisation, as sentence-transformers does.
///
/// Cheap to clone; clones share the weights and the thread pool.
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    model: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
    config: LocalEmbedderConfig,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("name", &self.inner.name)
            .field("dimension", &self.inner.dimension)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl LocalEmbedder {
    /// all-MiniLM-L6-v2 from `models_dir/all-minilm-l6-v2`, where `cargo xtask models` puts it.
    pub fn minilm(models_dir: &Path, config: LocalEmbedderConfig) -> Result<Self, EmbedderError> {
        Self::from_dir(&models_dir.join(MINILM_DIR), config)
    }

    /// Load a model folder holding [`MODEL_FILES`].
    pub fn from_dir(dir: &Path, config: LocalEmbedderConfig) -> Result<Self, EmbedderError> {
        let missing: Vec<&'static str> = MODEL_FILES.into_iter().filter(|f| !dir.join(f).is_file()).collect();
        if !missing.is_empty() {
            return Err(EmbedderError::MissingFiles { dir: dir.to_owned(), missing });
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "bert".into());
        Self::load(&name, &dir.join("config.json"), &dir.join("tokenizer.json"), &dir.join("model.safetensors"), config)
    }

    /// Load a model from the HuggingFace hub (for example [`MINILM_HUB_ID`]), downloading its
    /// files into `hub.cache_dir` on first use.
    pub async fn from_hub(hub: &HubSource, model_id: &str, config: LocalEmbedderConfig) -> Result<Self, EmbedderError> {
        let files = hub.download(model_id, &MODEL_FILES).await?;
        let name = model_id.rsplit('/').next().unwrap_or(model_id).to_lowercase();
        let config_file = files[0].clone();
        tokio::task::spawn_blocking(move || Self::load(&name, &config_file, &files[1], &files[2], config))
            .await
            .map_err(|e| EmbedderError::Runtime(format!("loading task failed: {e}")))?
    }

    fn load(
        name: &str,
        config_file: &Path,
        tokenizer_file: &Path,
        weights_file: &Path,
        config: LocalEmbedderConfig,
    ) -> Result<Self, EmbedderError> {
        if config.max_tokens == 0 || config.batch_size == 0 || config.threads == Some(0) {
            return Err(EmbedderError::Config(format!(
                "max_tokens, batch_size and threads must be at least 1, got {config:?}"
            )));
        }
        let invalid = |file: &Path, reason: String| EmbedderError::Invalid { file: file.to_owned(), reason };
        let raw = std::fs::read_to_string(config_file).map_err(|e| invalid(config_file, e.to_string()))?;
        let bert: BertConfig = serde_json::from_str(&raw).map_err(|e| invalid(config_file, e.to_string()))?;
        if config.max_tokens > bert.max_position_embeddings {
            return Err(EmbedderError::Config(format!(
                "max_tokens {} exceeds the model's {} positions",
                config.max_tokens, bert.max_position_embeddings
            )));
        }
        let mut tokenizer = Tokenizer::from_file(tokenizer_file).map_err(|e| invalid(tokenizer_file, e.to_string()))?;
        // The packaged tokenizer pads and cuts everything to 128; we cut at our limit and pad per batch.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: config.max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| invalid(tokenizer_file, e.to_string()))?;
        let weights = std::fs::read(weights_file).map_err(|e| invalid(weights_file, e.to_string()))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| invalid(weights_file, e.to_string()))?;
        let model = BertModel::load(vb, &bert).map_err(|e| invalid(weights_file, e.to_string()))?;
        let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("ferret-embed-{i}"));
        if let Some(threads) = config.threads {
            pool = pool.num_threads(threads);
        }
        let pool = pool.build().map_err(|e| EmbedderError::Runtime(format!("cannot start the thread pool: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: format!("{name}@{}", config.max_tokens),
                model,
                tokenizer,
                dimension: bert.hidden_size,
                config,
                pool,
            }),
        })
    }

    /// The configuration the model runs with.
    pub fn config(&self) -> LocalEmbedderConfig {
        self.inner.config
    }

    /// Embed texts on the calling thread (the matrix products use the embedder's own pool).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.pool.install(|| self.inner.embed_sorted(texts))
    }
}

impl Inner {
    fn embed_sorted(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self.tokenizer.encode_batch(inputs, true).map_err(permanent)?;
        // Length-sorted batches pad little: the attention cost grows with the longest text.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.config.batch_size) {
            let longest = batch.iter().map(|&i| encodings[i].get_ids().len()).max().unwrap_or(0).max(1);
            let mut ids = Vec::with_capacity(batch.len() * longest);
            let mut mask = Vec::with_capacity(batch.len() * longest);
            for &i in batch {
                let tokens = encodings[i].get_ids();
                ids.extend_from_slice(tokens);
                ids.resize(ids.len() + longest - tokens.len(), 0);
                mask.extend(std::iter::repeat_n(1u32, tokens.len()));
                mask.resize(mask.len() + longest - tokens.len(), 0);
            }
            let shape = (batch.len(), longest);
            let ids = Tensor::from_vec(ids, shape, &Device::Cpu).map_err(permanent)?;
            let mask = Tensor::from_vec(mask, shape, &Device::Cpu).map_err(permanent)?;
            let pooled = self.forward_pooled(&ids, &mask).map_err(permanent)?;
            for (&i, vector) in batch.iter().zip(pooled) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// Mean of the token vectors under the mask, scaled to unit length.
    fn forward_pooled(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(ids, &token_types, Some(mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2()
    }
}

fn permanent(error: impl std::fmt::Display) -> EmbedError {
    EmbedError { message: error.to_string(), retry: RetryClass::Permanent }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
            .await
            .map_err(|e| permanent(format!("embedding task failed: {e}")))?
    }
}
