//! `ferret-openai` reaches OpenAI-compatible HTTP APIs (OpenAI, vLLM, Ollama, llama-server, and
//! their embedding endpoints): [`OpenAiConfig`], an async-openai client whose HTTP service keeps
//! the status, `Retry-After` and body of failures ([`openai_client`]), a call retried by the
//! shared retry layer ([`with_retry`], [`RetryPolicy::for_models`]), and what a failure means
//! for a retry ([`classify_openai_error`], [`classify_http_status`]). The chat model and the
//! embedder build on it.
//!
//! It must not depend on any backend, on the executor, or on the rest of the model layer
//! (prompts, structured output): an embedder needs only this.

mod classify;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use ferret_core::text::{cut, one_line, CutMark};
use ferret_core::{LlmError, RetryClass};
use ferret_layers::Retry;
pub use ferret_layers::RetryPolicy;
use secrecy::{ExposeSecret, SecretString};

pub use classify::classify_http_status;

/// How the provider asks for JSON: the structured-output dialects servers speak. The schema is
/// written into the prompt in every one; the dialect says what the request adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaSupport {
    /// `response_format: {"type": "json_schema", "json_schema": {...}}` (OpenAI, vLLM, Ollama,
    /// llama.cpp's `llama-server`).
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": {...}}`, which llama.cpp-based servers
    /// (llama-cpp-python's among them) enforce with a grammar.
    JsonObjectWithSchema,
    /// `response_format: {"type": "json_object"}`: any JSON, the schema in the prompt only.
    JsonObject,
    /// No `response_format`: the schema in the prompt only.
    PromptOnly,
}

impl SchemaSupport {
    /// Every dialect, in the order a refused one falls back through.
    pub const ALL: [SchemaSupport; 4] = [
        SchemaSupport::JsonSchema,
        SchemaSupport::JsonObjectWithSchema,
        SchemaSupport::JsonObject,
        SchemaSupport::PromptOnly,
    ];

    /// The dialect's name, as the configuration and the trace write it.
    pub fn name(self) -> &'static str {
        match self {
            SchemaSupport::JsonSchema => "json_schema",
            SchemaSupport::JsonObjectWithSchema => "json_object_schema",
            SchemaSupport::JsonObject => "json_object",
            SchemaSupport::PromptOnly => "prompt_only",
        }
    }

    /// The dialect tried when a server refuses this one; `None` after the prompt alone.
    pub fn next(self) -> Option<SchemaSupport> {
        let at = Self::ALL.iter().position(|d| *d == self)?;
        Self::ALL.get(at + 1).copied()
    }
}

impl std::fmt::Display for SchemaSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SchemaSupport {
    type Err = String;

    /// A dialect by its name (`-` and `_` alike, any case).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let wanted = name.trim().to_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|d| d.name() == wanted)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|d| d.name()).collect();
                format!(
                    "`{name}` is not a structured-output dialect; the dialects are {}",
                    known.join(", ")
                )
            })
    }
}

/// Where and how to reach an OpenAI-compatible chat-completions server.
///
/// `Debug` shows the key as `[REDACTED]`; it is sent only in the `Authorization` header.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1`, e.g. `http://localhost:11434/v1` for Ollama.
    pub base_url: String,
    /// Model name as the server knows it.
    pub model: String,
    /// API key, if the server wants one.
    pub api_key: Option<SecretString>,
    /// Limit for one request, streaming included.
    pub timeout: Duration,
    /// Stream the answer token by token (the text is the same; a cut stream is a transient error).
    pub stream: bool,
    /// The structured-output dialect to try first; a server that refuses it (an error naming
    /// `response_format`) gets the next, and the model remembers the one that worked.
    pub schema_support: SchemaSupport,
    /// The provider's limits, as its plan states them: requests and tokens a minute. Each
    /// request waits for its turn (its tokens estimated from the prompt and `max_tokens`), and a
    /// turn that would come after the call's deadline fails the call as rate-limited instead.
    /// `None`: no limit of ours.
    pub requests_per_minute: Option<NonZeroU32>,
    /// See [`requests_per_minute`](Self::requests_per_minute).
    pub tokens_per_minute: Option<NonZeroU32>,
    /// How a failed call is retried: by default once, a `Retry-After` beyond 10 s failing the
    /// call instead ([`RetryPolicy::for_models`]).
    pub retry: RetryPolicy,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, with no key, a 60 s timeout and no streaming.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            stream: false,
            schema_support: SchemaSupport::default(),
            retry: RetryPolicy::for_models(),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }

    /// Use `key` for the `Authorization` header.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(SecretString::from(key.into()));
        self
    }
}

/// A non-2xx answer, kept whole so the status and `Retry-After` reach the retry decision
/// (async-openai's own error type drops the headers).
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {body}")]
struct HttpFailure {
    status: u16,
    retry_after: Option<String>,
    body: String,
}

/// An async-openai client for `config` whose HTTP service keeps the status, `Retry-After` and
/// body of failures, with no retry middleware: callers retry through [`with_retry`].
/// Fails when the base URL is not a URL or the HTTP client cannot be built.
pub fn openai_client(
    config: &OpenAiConfig,
) -> Result<async_openai::Client<OpenAIConfig>, LlmError> {
    let permanent = |message: String| LlmError {
        message,
        retry: RetryClass::Permanent,
    };
    url::Url::parse(&config.base_url)
        .map_err(|e| permanent(format!("base URL `{}` is not a URL: {e}", config.base_url)))?;
    let http = reqwest::Client::builder()
        .timeout(config.timeout)
        .build()
        .map_err(|e| permanent(format!("cannot build the HTTP client: {e}")))?;
    let service = tower::service_fn(move |factory: HttpRequestFactory| {
        let http = http.clone();
        async move { send_keeping_failures(&http, factory).await }
    });
    let mut openai = OpenAIConfig::new().with_api_base(config.base_url.trim_end_matches('/'));
    // An empty key still yields a header; local servers ignore it, and it never reads the
    // `OPENAI_API_KEY` of whoever runs the tests.
    openai = openai.with_api_key(
        config
            .api_key
            .as_ref()
            .map(|k| k.expose_secret().to_owned())
            .unwrap_or_default(),
    );
    Ok(async_openai::Client::with_config(openai).with_http_service(service))
}

/// `call` under `config`'s retry policy, within `deadline` (the call's, when it has one): a
/// transient failure or a rate limit is tried again while the policy allows and the wait ends
/// before the deadline.
pub async fn with_retry<T, F, Fut>(
    config: &OpenAiConfig,
    deadline: Option<Instant>,
    call: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, LlmError>>,
{
    let elapsed = || LlmError {
        message: format!("{}: no answer before the call's deadline", config.model),
        retry: RetryClass::Transient,
    };
    Retry::new(config.retry)
        .run_until(deadline, elapsed, call)
        .await
}

/// Send the request; a non-2xx answer becomes an [`HttpFailure`] carrying status, `Retry-After`
/// and body.
async fn send_keeping_failures(
    http: &reqwest::Client,
    factory: HttpRequestFactory,
) -> Result<reqwest::Response, OpenAIError> {
    let response = http.execute(factory.build().await?).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    Err(OpenAIError::Boxed(Box::new(HttpFailure {
        status: status.as_u16(),
        retry_after,
        body,
    })))
}

/// Whether `error` is a server refusing the request's `response_format`: a 400, 422 or 500 whose
/// body names the field. The structured-output dialect is then to change, not the call to retry;
/// a gateway's 502 or a rate limit is not a refusal, whatever its body says.
pub fn refuses_response_format(error: &OpenAIError) -> bool {
    let (status, body) = match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast_ref::<HttpFailure>() {
            Some(failure) => (failure.status, failure.body.to_lowercase()),
            None => return false,
        },
        OpenAIError::ApiError(e) => (e.status_code.as_u16(), e.to_string().to_lowercase()),
        _ => return false,
    };
    matches!(status, 400 | 422 | 500) && body.contains("response_format")
}

/// An error body as a trace shows it: one line, at most 200 characters.
fn short(body: &str) -> String {
    cut(&one_line(body), 200, CutMark::Ellipsis)
}

/// What an async-openai failure means for a retry, with a message that names `url`.
pub fn classify_openai_error(error: OpenAIError, url: &str) -> LlmError {
    let (message, retry) = match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(failure) => {
                let retry = classify_http_status(
                    failure.status,
                    failure.retry_after.as_deref(),
                    &failure.body,
                );
                (
                    format!(
                        "{url} answered HTTP {}: {}",
                        failure.status,
                        short(&failure.body)
                    ),
                    retry,
                )
            }
            Err(other) => (other.to_string(), RetryClass::Transient),
        },
        OpenAIError::Reqwest(e) if e.is_timeout() => (
            format!("{url} did not answer in time: {e}"),
            RetryClass::Transient,
        ),
        OpenAIError::Reqwest(e) if e.is_connect() => (
            format!("cannot connect to {url} (is the server running?): {e}"),
            RetryClass::Transient,
        ),
        OpenAIError::Reqwest(e) => (
            format!("request to {url} failed: {e}"),
            RetryClass::Transient,
        ),
        OpenAIError::ApiError(e) => {
            let status = e.status_code.as_u16();
            let retry = classify_http_status(status, None, &e.to_string());
            (format!("{url} answered HTTP {status}: {e}"), retry)
        }
        // A garbled body or event stream: a proxy or an overloaded server, worth the one retry.
        OpenAIError::JSONDeserialize(e, body) => (
            format!(
                "{url} sent a body that is not what the API returns ({e}): {}",
                short(&body)
            ),
            RetryClass::Transient,
        ),
        OpenAIError::StreamError(e) => (
            format!("the stream from {url} failed: {e}"),
            RetryClass::Transient,
        ),
        other => (other.to_string(), RetryClass::Permanent),
    };
    LlmError { message, retry }
}
