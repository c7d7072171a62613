use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage,
    ChatCompletionStreamOptions, CompletionUsage, CreateChatCompletionRequest, ResponseFormat,
    ResponseFormatJsonSchema,
};
use async_trait::async_trait;
use ferret_core::{
    ChatRole, Completion, CompletionRequest, LanguageModel, LlmError, RetryClass, TextSink,
    TokenUsage,
};
use futures::StreamExt;

use ferret_openai::{
    classify_openai_error, openai_client, retry_once, OpenAiConfig, SchemaSupport,
};

/// A chat model behind an OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's
/// `llama-server`.
///
/// There is exactly one retry layer: async-openai is given a plain HTTP service without its
/// retry middleware, and [`complete`](LanguageModel::complete) retries once, for transient
/// failures and rate limits, honouring `Retry-After` up to
/// [`max_retry_wait`](OpenAiConfig::max_retry_wait).
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    client: async_openai::Client<OpenAIConfig>,
    config: OpenAiConfig,
}

impl OpenAiModel {
    /// A client for `config`. Fails when the base URL is not a URL or the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Ok(Self {
            client: openai_client(&config)?,
            config,
        })
    }

    /// The configuration, key redacted in its `Debug`.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn chat_request(&self, request: &CompletionRequest) -> CreateChatCompletionRequest {
        let messages = request
            .messages
            .iter()
            .map(|m| match m.role {
                ChatRole::System => ChatCompletionRequestMessage::from(
                    ChatCompletionRequestSystemMessage::from(m.content.as_str()),
                ),
                ChatRole::User => ChatCompletionRequestUserMessage::from(m.content.as_str()).into(),
                ChatRole::Assistant => {
                    ChatCompletionRequestAssistantMessage::from(m.content.as_str()).into()
                }
            })
            .collect();
        let response_format = match (&request.json_schema, self.config.schema_support) {
            (Some(schema), SchemaSupport::ResponseFormat) => Some(ResponseFormat::JsonSchema {
                json_schema: ResponseFormatJsonSchema {
                    description: None,
                    name: "reply".into(),
                    schema: schema.clone(),
                    // Strict mode accepts only a subset of JSON Schema; the tolerant parser checks the rest.
                    strict: Some(false),
                },
            }),
            _ => None,
        };
        CreateChatCompletionRequest {
            model: self.config.model.clone(),
            messages,
            max_completion_tokens: Some(request.max_tokens),
            temperature: Some(request.temperature),
            response_format,
            stream: self.config.stream.then_some(true),
            stream_options: self.config.stream.then_some(ChatCompletionStreamOptions {
                include_usage: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn call_once<'s>(
        &self,
        request: &CompletionRequest,
        sink: Option<&'s TextSink<'s>>,
    ) -> Result<Completion, LlmError> {
        let chat = self.chat_request(request);
        let url = &self.config.base_url;
        if !self.config.stream {
            let response = self
                .client
                .chat()
                .create(chat)
                .await
                .map_err(|e| classify_openai_error(e, url))?;
            let choice = response
                .choices
                .into_iter()
                .next()
                .ok_or_else(|| LlmError {
                    message: "the server answered with no choices".into(),
                    retry: RetryClass::Transient,
                })?;
            return Ok(Completion {
                text: choice.message.content.unwrap_or_default(),
                usage: usage(response.usage.as_ref()),
                model: response.model,
            });
        }
        let mut stream = self
            .client
            .chat()
            .create_stream(chat)
            .await
            .map_err(|e| classify_openai_error(e, url))?;
        let (mut text, mut model, mut tokens, mut finished) =
            (String::new(), self.config.model.clone(), None, false);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| classify_openai_error(e, url))?;
            model = chunk.model;
            tokens = chunk.usage.or(tokens);
            for choice in chunk.choices {
                let piece = choice.delta.content.as_deref().unwrap_or_default();
                if let (Some(sink), false) = (sink, piece.is_empty()) {
                    sink(piece);
                }
                text.push_str(piece);
                finished |= choice.finish_reason.is_some();
            }
        }
        if !finished {
            return Err(LlmError {
                message: format!("the stream from {url} ended before the model finished ({} characters received)", text.len()),
                retry: RetryClass::Transient,
            });
        }
        Ok(Completion {
            text,
            usage: usage(tokens.as_ref()),
            model,
        })
    }
}

#[async_trait]
impl LanguageModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        retry_once(&self.config, || self.call_once(request, None)).await
    }

    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        // Only the first attempt streams: a retry's text would follow the first's cut-off text.
        let first = std::sync::atomic::AtomicBool::new(true);
        retry_once(&self.config, || {
            let streams = first.swap(false, std::sync::atomic::Ordering::SeqCst);
            self.call_once(request, streams.then_some(sink))
        })
        .await
    }
}

fn usage(usage: Option<&CompletionUsage>) -> TokenUsage {
    usage.map_or_else(TokenUsage::default, |u| TokenUsage {
        prompt_tokens: u64::from(u.prompt_tokens),
        completion_tokens: u64::from(u.completion_tokens),
    })
}
