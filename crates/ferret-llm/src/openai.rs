use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage,
    ChatCompletionStreamOptions, CompletionUsage, CreateChatCompletionRequest,
    CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
};
use async_trait::async_trait;
use ferret_core::{
    ChatRole, Completion, CompletionRequest, LanguageModel, LlmError, RetryClass, TextSink,
    TokenUsage,
};
use ferret_layers::{Deadline, RateLimit};
use futures::{Stream, StreamExt};
use serde_json::{json, Value};

use ferret_openai::{
    classify_openai_error, openai_client, refuses_response_format, with_retry, OpenAiConfig,
    SchemaSupport,
};

/// A chat model behind an OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's
/// `llama-server`.
///
/// There is exactly one retry layer: async-openai is given a plain HTTP service without its
/// retry middleware, and [`complete`](LanguageModel::complete) retries as
/// [`OpenAiConfig::retry`] says (once by default), for transient failures and rate limits,
/// honouring `Retry-After` up to the policy's longest wait.
///
/// Structured output starts in [`OpenAiConfig::schema_support`]'s dialect. A server that refuses
/// it (an error naming `response_format`) is asked again at once in the next dialect, down to the
/// prompt alone, and the model (and its clones) keep the dialect that worked for the rest of the
/// process; each completion says which dialect it was asked in.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    client: async_openai::Client<OpenAIConfig>,
    config: OpenAiConfig,
    /// The dialect in use, as its position in [`SchemaSupport::ALL`].
    dialect: Arc<AtomicUsize>,
    /// The provider's limits, shared by the model's clones.
    requests: Option<Arc<RateLimit>>,
    tokens: Option<Arc<RateLimit>>,
}

impl OpenAiModel {
    /// A client for `config`. Fails when the base URL is not a URL or the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Ok(Self {
            client: openai_client(&config)?,
            dialect: Arc::new(AtomicUsize::new(position(config.schema_support))),
            requests: config
                .requests_per_minute
                .map(|n| Arc::new(RateLimit::per_minute(n))),
            tokens: config
                .tokens_per_minute
                .map(|n| Arc::new(RateLimit::per_minute(n))),
            config,
        })
    }

    /// The structured-output dialect requests are sent in now.
    pub fn dialect(&self) -> SchemaSupport {
        SchemaSupport::ALL
            .get(self.dialect.load(Ordering::Relaxed))
            .copied()
            .unwrap_or_default()
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
        CreateChatCompletionRequest {
            model: self.config.model.clone(),
            messages,
            max_completion_tokens: Some(request.max_tokens),
            temperature: Some(request.temperature),
            stream: self.config.stream.then_some(true),
            stream_options: self.config.stream.then_some(ChatCompletionStreamOptions {
                include_usage: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The request's body in `dialect`: the chat request, with the `response_format` the
    /// dialect adds when the request asks for JSON.
    fn body(&self, request: &CompletionRequest, dialect: SchemaSupport) -> Value {
        let mut body = serde_json::to_value(self.chat_request(request)).unwrap_or(Value::Null);
        let format = request
            .json_schema
            .as_ref()
            .and_then(|schema| match dialect {
                SchemaSupport::JsonSchema => Some(json!({
                    "type": "json_schema",
                    // Strict mode accepts only a subset of JSON Schema; the tolerant parser checks
                    // the rest.
                    "json_schema": {"name": "reply", "schema": schema, "strict": false},
                })),
                SchemaSupport::JsonObjectWithSchema => {
                    Some(json!({"type": "json_object", "schema": schema}))
                }
                SchemaSupport::JsonObject => Some(json!({"type": "json_object"})),
                SchemaSupport::PromptOnly => None,
            });
        if let Some(fields) = body.as_object_mut() {
            if !request.stop.is_empty() {
                fields.insert("stop".into(), json!(request.stop));
            }
            if let Some(format) = format {
                fields.insert("response_format".into(), format);
            }
            // llama.cpp-based servers read the older `max_tokens`, not `max_completion_tokens`,
            // and would otherwise write until the context is full; OpenAI's reasoning models
            // refuse `max_tokens`, and speak the first dialect.
            if dialect != SchemaSupport::JsonSchema {
                fields.insert("max_tokens".into(), json!(request.max_tokens));
            }
        }
        body
    }

    /// Wait for the provider's limits to allow `request`, until its deadline at most.
    async fn take_turn(&self, request: &CompletionRequest) -> Result<(), LlmError> {
        let prompt_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        // About four characters a token; what the provider will count is not known before.
        let tokens = u32::try_from(prompt_chars / 4)
            .unwrap_or(u32::MAX)
            .saturating_add(request.max_tokens);
        let turn = async {
            if let Some(requests) = &self.requests {
                requests.ready().await;
            }
            if let (Some(quota), Some(tokens)) = (&self.tokens, NonZeroU32::new(tokens)) {
                quota.ready_for(tokens).await;
            }
        };
        let Some(deadline) = request.deadline else {
            turn.await;
            return Ok(());
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        Deadline::new(left).run(turn).await.map_err(|_| LlmError {
            message: format!(
                "the rate limit of {} gives no turn within the call's {} ms",
                self.config.base_url,
                left.as_millis()
            ),
            retry: RetryClass::RateLimited { retry_after: None },
        })
    }

    /// One request, in the dialect in use; a refused dialect gives way to the next at once.
    async fn call_once<'s>(
        &self,
        request: &CompletionRequest,
        sink: Option<&'s TextSink<'s>>,
    ) -> Result<Completion, LlmError> {
        self.take_turn(request).await?;
        let first = self.dialect();
        let mut dialect = first;
        loop {
            match self.call_in(request, dialect, sink).await {
                Err(Failed::Api(refused))
                    if request.json_schema.is_some() && refuses_response_format(&refused) =>
                {
                    let Some(next) = dialect.next() else {
                        return Err(classify_openai_error(refused, &self.config.base_url));
                    };
                    tracing::warn!(
                        url = %self.config.base_url,
                        refused = dialect.name(),
                        next = next.name(),
                        "the server refused the structured-output dialect; trying the next"
                    );
                    dialect = next;
                }
                Err(Failed::Api(error)) => {
                    return Err(classify_openai_error(error, &self.config.base_url))
                }
                Err(Failed::Model(error)) => return Err(error),
                Ok(mut completion) => {
                    // Kept once it worked; a call that moved on meanwhile keeps its own.
                    if dialect != first {
                        let _ = self.dialect.compare_exchange(
                            position(first),
                            position(dialect),
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                    }
                    completion.response_format = request
                        .json_schema
                        .is_some()
                        .then(|| dialect.name().to_owned());
                    return Ok(completion);
                }
            }
        }
    }

    async fn call_in<'s>(
        &self,
        request: &CompletionRequest,
        dialect: SchemaSupport,
        sink: Option<&'s TextSink<'s>>,
    ) -> Result<Completion, Failed> {
        let chat = self.body(request, dialect);
        let url = &self.config.base_url;
        if !self.config.stream {
            let response: CreateChatCompletionResponse =
                self.client.chat().create_byot(chat).await?;
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
                response_format: None,
                constrained: false,
            });
        }
        let mut stream: Pin<
            Box<dyn Stream<Item = Result<CreateChatCompletionStreamResponse, OpenAIError>> + Send>,
        > = self.client.chat().create_stream_byot(chat).await?;
        let (mut text, mut model, mut tokens, mut finished) =
            (String::new(), self.config.model.clone(), None, false);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
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
            return Err(Failed::Model(LlmError {
                message: format!("the stream from {url} ended before the model finished ({} characters received)", text.len()),
                retry: RetryClass::Transient,
            }));
        }
        Ok(Completion {
            text,
            usage: usage(tokens.as_ref()),
            model,
            response_format: None,
            constrained: false,
        })
    }
}

/// `dialect`'s position in [`SchemaSupport::ALL`].
fn position(dialect: SchemaSupport) -> usize {
    SchemaSupport::ALL
        .iter()
        .position(|d| *d == dialect)
        .unwrap_or(0)
}

/// A call that failed: at the server (kept whole, to read a refused dialect from it), or in
/// what it answered.
enum Failed {
    Api(OpenAIError),
    Model(LlmError),
}

impl From<OpenAIError> for Failed {
    fn from(error: OpenAIError) -> Self {
        Failed::Api(error)
    }
}

impl From<LlmError> for Failed {
    fn from(error: LlmError) -> Self {
        Failed::Model(error)
    }
}

#[async_trait]
impl LanguageModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        with_retry(&self.config, request.deadline, || {
            self.call_once(request, None)
        })
        .await
    }

    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        // Only the first attempt streams: a retry's text would follow the first's cut-off text.
        let first = std::sync::atomic::AtomicBool::new(true);
        with_retry(&self.config, request.deadline, || {
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
