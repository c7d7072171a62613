use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use async_trait::async_trait;
use ferret_core::{EmbedError, Embedder, LlmError, RetryClass};
use ferret_openai::{classify_openai_error, openai_client, with_retry, OpenAiConfig};

/// An embeddings model behind an OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama,
/// llama-server, text-embeddings-inference).
///
/// One retry layer, as for chat: a transient failure or a short `Retry-After` is retried once.
/// Every answer is checked: one vector per text, each of the configured dimension.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: async_openai::Client<async_openai::config::OpenAIConfig>,
    config: OpenAiConfig,
    dimension: usize,
    name: String,
}

impl OpenAiEmbedder {
    /// Embed with `config.model`, whose vectors have `dimension` values (the model's own size, or
    /// a smaller size the model supports, which is then requested).
    pub fn new(config: OpenAiConfig, dimension: usize) -> Result<Self, EmbedError> {
        if dimension == 0 {
            return Err(EmbedError {
                message: "an embedding dimension must be at least 1".into(),
                retry: RetryClass::Permanent,
            });
        }
        let client = openai_client(&config).map_err(from_llm)?;
        let name = format!("{}@{}", config.model, config.base_url.trim_end_matches('/'));
        Ok(Self {
            client,
            config,
            dimension,
            name,
        })
    }

    async fn call_once(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let url = &self.config.base_url;
        let request = CreateEmbeddingRequest {
            model: self.config.model.clone(),
            input: EmbeddingInput::StringArray(texts.to_vec()),
            dimensions: None,
            encoding_format: None,
            user: None,
        };
        let response = self
            .client
            .embeddings()
            .create(request)
            .await
            .map_err(|e| classify_openai_error(e, url))?;
        let malformed = |message: String| LlmError {
            message: format!("{url}: {message}"),
            retry: RetryClass::Permanent,
        };
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in response.data {
            let slot = vectors.get_mut(item.index as usize).ok_or_else(|| {
                malformed(format!(
                    "vector index {} for {} texts",
                    item.index,
                    texts.len()
                ))
            })?;
            if item.embedding.len() != self.dimension {
                return Err(malformed(format!(
                    "model `{}` returned {} values, configured for {}",
                    self.config.model,
                    item.embedding.len(),
                    self.dimension
                )));
            }
            *slot = Some(item.embedding);
        }
        vectors
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| malformed(format!("no vector for text {i} of {}", texts.len())))
            })
            .collect()
    }
}

fn from_llm(error: LlmError) -> EmbedError {
    EmbedError {
        message: error.message,
        retry: error.retry,
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        with_retry(&self.config, None, || self.call_once(texts))
            .await
            .map_err(from_llm)
    }
}
