use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use candle_transformers::models::bert::Config as BertConfig;
use ferret_core::{EmbedError, Embedder, RetryClass};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::candle::CandleBert;
use crate::onnx::{onnxruntime_library, OnnxBert, FUSED_ONNX_MODEL_FILE, ONNX_MODEL_FILE};
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
    /// Texts per forward pass. Texts are sorted by length first, so a batch pads little. The
    /// fused int8 graph reads one text per pass whatever this says.
    pub batch_size: usize,
    /// Threads for the matrix products; `None` uses every core.
    pub threads: Option<usize>,
    /// Which engine runs the model.
    pub runtime: LocalRuntime,
    /// Which int8 graph ONNX Runtime runs.
    pub onnx_graph: OnnxGraph,
}

/// Which int8 graph ONNX Runtime runs. The two give slightly different vectors, so an index made
/// with one is searched with the same one ([`LocalEmbedderConfig::reproducing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnnxGraph {
    /// The fused graph ([`FUSED_ONNX_MODEL_FILE`]) when it was built, else the packaged one.
    #[default]
    Fastest,
    /// The packaged graph ([`ONNX_MODEL_FILE`]).
    Packaged,
    /// The fused graph; its absence is an error.
    Fused,
}

impl LocalEmbedderConfig {
    /// The settings that give the vectors of the local embedder named `name` (as an index
    /// records it: `all-minilm-l6-v2-fused-int8@256`, say), or `None` for another embedder.
    pub fn reproducing(name: &str) -> Option<Self> {
        let (model, max_tokens) = name.rsplit_once('@')?;
        let max_tokens = max_tokens.parse().ok()?;
        let (runtime, onnx_graph) = match model.strip_prefix(MINILM_DIR)? {
            "" => (LocalRuntime::Candle, OnnxGraph::Fastest),
            "-int8" => (LocalRuntime::Onnx, OnnxGraph::Packaged),
            "-fused-int8" => (LocalRuntime::Onnx, OnnxGraph::Fused),
            _ => return None,
        };
        Some(Self {
            max_tokens,
            runtime,
            onnx_graph,
            ..Self::default()
        })
    }
}

impl Default for LocalEmbedderConfig {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            batch_size: 16,
            threads: None,
            runtime: LocalRuntime::Auto,
            onnx_graph: OnnxGraph::Fastest,
        }
    }
}

/// The engine that runs a local model.
///
/// Measured on SciFact (2 cores): the int8 ONNX model embeds about 2.5x faster than candle, with
/// vectors within cosine 0.99 of the float model's. candle stays for where ONNX Runtime's shared
/// library is not available, and for exact float vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalRuntime {
    /// ONNX Runtime when the folder holds [`FUSED_ONNX_MODEL_FILE`] or [`ONNX_MODEL_FILE`] and
    /// the library is found ([`onnxruntime_library`]); candle otherwise.
    #[default]
    Auto,
    /// candle, pure Rust, float weights from `model.safetensors`.
    Candle,
    /// ONNX Runtime with int8 weights; an error when the model file or the library is missing.
    Onnx,
}

/// A BERT sentence-embedding model (all-MiniLM-L6-v2 by default) run in-process by ONNX Runtime
/// or candle ([`LocalRuntime`]): mean pooling over the attention mask, then L2 normalisation, as
/// sentence-transformers does.
///
/// Cheap to clone; clones share the weights and the thread pool.
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    engine: Engine,
    tokenizer: Tokenizer,
    dimension: usize,
    config: LocalEmbedderConfig,
    /// Texts per forward pass: the configured batch size, or one for the fused int8 graph.
    texts_per_pass: usize,
}

enum Engine {
    Candle(CandleBert),
    Onnx(OnnxBert),
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("name", &self.inner.name)
            .field("dimension", &self.inner.dimension)
            .field("config", &self.inner.config)
            .field("runtime", &self.runtime())
            .finish()
    }
}

impl LocalEmbedder {
    /// all-MiniLM-L6-v2 from `models_dir/all-minilm-l6-v2`, where `cargo xtask models` puts it.
    pub fn minilm(models_dir: &Path, config: LocalEmbedderConfig) -> Result<Self, EmbedderError> {
        Self::from_dir(&models_dir.join(MINILM_DIR), config)
    }

    /// Load a model folder: [`MODEL_FILES`] for candle; `config.json`, `tokenizer.json` and
    /// [`FUSED_ONNX_MODEL_FILE`] (preferred) or [`ONNX_MODEL_FILE`] for ONNX Runtime (see
    /// [`LocalRuntime`] for which is chosen).
    pub fn from_dir(dir: &Path, config: LocalEmbedderConfig) -> Result<Self, EmbedderError> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bert".into());
        let library = onnxruntime_library(dir);
        let onnx_file = match config.onnx_graph {
            OnnxGraph::Fastest if dir.join(FUSED_ONNX_MODEL_FILE).is_file() => {
                FUSED_ONNX_MODEL_FILE
            }
            OnnxGraph::Fastest | OnnxGraph::Packaged => ONNX_MODEL_FILE,
            OnnxGraph::Fused => FUSED_ONNX_MODEL_FILE,
        };
        let onnx_ready = dir.join(onnx_file).is_file() && library.is_file();
        let runtime = match config.runtime {
            LocalRuntime::Auto if onnx_ready => LocalRuntime::Onnx,
            LocalRuntime::Auto => LocalRuntime::Candle,
            chosen => chosen,
        };
        let weights = match runtime {
            LocalRuntime::Onnx => onnx_file,
            _ => "model.safetensors",
        };
        let missing: Vec<&'static str> = ["config.json", "tokenizer.json", weights]
            .into_iter()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(EmbedderError::MissingFiles {
                dir: dir.to_owned(),
                missing,
            });
        }
        if runtime == LocalRuntime::Onnx && !library.is_file() {
            return Err(EmbedderError::MissingRuntime { library });
        }
        let files = ModelFiles {
            config: dir.join("config.json"),
            tokenizer: dir.join("tokenizer.json"),
            weights: dir.join(weights),
        };
        let loaded = Self::load(&name, &files, runtime, &library, config);
        match loaded {
            // A library that is there but does not load (another platform, another version) is
            // no reason to fail when the float model can run instead.
            Err(EmbedderError::Runtime(reason))
                if config.runtime == LocalRuntime::Auto && dir.join(MODEL_FILES[2]).is_file() =>
            {
                tracing::warn!(%reason, "ONNX Runtime unavailable; embedding with candle");
                let files = ModelFiles {
                    weights: dir.join(MODEL_FILES[2]),
                    ..files
                };
                Self::load(&name, &files, LocalRuntime::Candle, &library, config)
            }
            other => other,
        }
    }

    /// Load a model from the HuggingFace hub (for example [`MINILM_HUB_ID`]), downloading its
    /// files into `hub.cache_dir` on first use. It runs on candle.
    pub async fn from_hub(
        hub: &HubSource,
        model_id: &str,
        config: LocalEmbedderConfig,
    ) -> Result<Self, EmbedderError> {
        if config.runtime == LocalRuntime::Onnx {
            return Err(EmbedderError::Config(
                "models from the hub run on candle; use LocalRuntime::Auto or Candle".into(),
            ));
        }
        let files = hub.download(model_id, &MODEL_FILES).await?;
        let name = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_lowercase();
        let files = ModelFiles {
            config: files[0].clone(),
            tokenizer: files[1].clone(),
            weights: files[2].clone(),
        };
        tokio::task::spawn_blocking(move || {
            Self::load(&name, &files, LocalRuntime::Candle, Path::new(""), config)
        })
        .await
        .map_err(|e| EmbedderError::Runtime(format!("loading task failed: {e}")))?
    }

    fn load(
        name: &str,
        files: &ModelFiles,
        runtime: LocalRuntime,
        library: &Path,
        config: LocalEmbedderConfig,
    ) -> Result<Self, EmbedderError> {
        if config.max_tokens == 0 || config.batch_size == 0 || config.threads == Some(0) {
            return Err(EmbedderError::Config(format!(
                "max_tokens, batch_size and threads must be at least 1, got {config:?}"
            )));
        }
        let invalid = |file: &Path, reason: String| EmbedderError::Invalid {
            file: file.to_owned(),
            reason,
        };
        let raw = std::fs::read_to_string(&files.config)
            .map_err(|e| invalid(&files.config, e.to_string()))?;
        let bert: BertConfig =
            serde_json::from_str(&raw).map_err(|e| invalid(&files.config, e.to_string()))?;
        if config.max_tokens > bert.max_position_embeddings {
            return Err(EmbedderError::Config(format!(
                "max_tokens {} exceeds the model's {} positions",
                config.max_tokens, bert.max_position_embeddings
            )));
        }
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer)
            .map_err(|e| invalid(&files.tokenizer, e.to_string()))?;
        // The packaged tokenizer pads and cuts everything to 128; we cut at our limit and pad per batch.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: config.max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| invalid(&files.tokenizer, e.to_string()))?;
        let threads = config
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let fused = runtime == LocalRuntime::Onnx
            && files.weights.file_name() == Some(FUSED_ONNX_MODEL_FILE.as_ref());
        // The fused graph quantizes each activation tensor with one scale, so the other texts of
        // a batch would move a text's vector (cosine 0.998): it reads one text per pass, which
        // measured faster as well (nothing padded).
        let texts_per_pass = if fused { 1 } else { config.batch_size };
        let (engine, name) = match runtime {
            LocalRuntime::Onnx => (
                Engine::Onnx(OnnxBert::load(&files.weights, library, threads)?),
                // The two int8 graphs give slightly different vectors: their names keep them apart.
                format!("{name}-{}int8", if fused { "fused-" } else { "" }),
            ),
            _ => (
                Engine::Candle(CandleBert::load(&files.weights, &bert, threads)?),
                name.to_owned(),
            ),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                name: format!("{name}@{}", config.max_tokens),
                engine,
                tokenizer,
                dimension: bert.hidden_size,
                config,
                texts_per_pass,
            }),
        })
    }

    /// The engine the model runs on: [`LocalRuntime::Onnx`] or [`LocalRuntime::Candle`].
    pub fn runtime(&self) -> LocalRuntime {
        match self.inner.engine {
            Engine::Candle(_) => LocalRuntime::Candle,
            Engine::Onnx(_) => LocalRuntime::Onnx,
        }
    }

    /// The configuration the model runs with.
    pub fn config(&self) -> LocalEmbedderConfig {
        self.inner.config
    }

    /// Embed texts on the calling thread (the engine uses its own threads for the matrix products).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed_sorted(texts)
    }
}

/// Where a model's three files are.
#[derive(Clone)]
struct ModelFiles {
    config: std::path::PathBuf,
    tokenizer: std::path::PathBuf,
    weights: std::path::PathBuf,
}

impl Inner {
    fn embed_sorted(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(permanent)?;
        // Length-sorted batches pad little: the attention cost grows with the longest text.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.texts_per_pass) {
            let longest = batch
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0)
                .max(1);
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
            let hidden = match &self.engine {
                Engine::Candle(model) => model.hidden_states(&ids, &mask, shape),
                Engine::Onnx(model) => model.hidden_states(&ids, &mask, shape),
            }
            .map_err(permanent)?;
            let pooled = mean_pool(&hidden, &mask, shape, self.dimension).map_err(permanent)?;
            for (&i, vector) in batch.iter().zip(pooled) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}

/// Mean of the token vectors under the mask, scaled to unit length, per text of the batch.
fn mean_pool(
    hidden: &[f32],
    mask: &[u32],
    (batch, tokens): (usize, usize),
    dimension: usize,
) -> Result<Vec<Vec<f32>>, String> {
    if hidden.len() != batch * tokens * dimension {
        return Err(format!(
            "the model returned {} values for {batch}×{tokens}×{dimension}",
            hidden.len()
        ));
    }
    let pooled = hidden
        .chunks_exact(tokens * dimension)
        .zip(mask.chunks_exact(tokens))
        .map(|(states, mask)| {
            let mut sum = vec![0f32; dimension];
            for (state, _) in states
                .chunks_exact(dimension)
                .zip(mask)
                .filter(|(_, &m)| m != 0)
            {
                sum.iter_mut().zip(state).for_each(|(s, x)| *s += x);
            }
            // Dividing by the token count does not change the direction, so only the norm matters.
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            sum.iter_mut().for_each(|x| *x /= norm);
            sum
        })
        .collect();
    Ok(pooled)
}

fn permanent(error: impl std::fmt::Display) -> EmbedError {
    EmbedError {
        message: error.to_string(),
        retry: RetryClass::Permanent,
    }
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
