//! The one HTTP exchange every remote backend makes: send, read a capped body, classify a failure
//! by its retry class, parse the documented JSON.

use std::time::Duration;

use ferret_core::{BackendError, BackendErrorKind, RetryClass};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LINK, RETRY_AFTER};
use serde::de::DeserializeOwned;

use crate::key::ApiKey;

/// Bytes of a response body read at most; a provider answering more is not answering a search.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Characters of an error body quoted in a failure message.
const QUOTED_BODY_CHARS: usize = 200;

/// One answer of a paged API: its body, and where the next page is when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The answer.
    pub body: T,
    /// The next page's address, from the answer's `Link` header.
    pub next: Option<url::Url>,
}

/// A backend's HTTP side: its name (for errors), its client and how it authenticates.
#[derive(Debug, Clone)]
pub struct Http {
    /// The backend's name, written into its errors.
    pub backend: String,
    client: reqwest::Client,
    key: Option<(HeaderName, ApiKey, KeyForm)>,
    /// What a 401/403 most likely means for a backend with no key.
    refusal_hint: Option<&'static str>,
}

/// How a key is written into its header.
#[derive(Debug, Clone, Copy)]
pub enum KeyForm {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key alone, in a header of the provider's own.
    Plain,
}

impl Http {
    /// A client for `backend`, each request bounded by `timeout`, with a user agent naming
    /// Ferret.
    pub fn new(backend: &str, timeout: Duration) -> Result<Self, crate::HttpSetupError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("ferret/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| crate::HttpSetupError::Client(e.to_string()))?;
        Ok(Self {
            backend: backend.to_owned(),
            client,
            key: None,
            refusal_hint: None,
        })
    }

    /// Send `key` in `header`, written as `form`, with every request.
    pub fn with_key(mut self, header: HeaderName, key: ApiKey, form: KeyForm) -> Self {
        self.key = Some((header, key, form));
        self
    }

    /// What a 401/403 most likely means when no key is sent (said in the failure).
    pub fn with_refusal_hint(mut self, hint: &'static str) -> Self {
        self.refusal_hint = Some(hint);
        self
    }

    /// A GET of `url`, with the key.
    pub fn get(&self, url: url::Url) -> reqwest::RequestBuilder {
        self.authorised(self.client.get(url))
    }

    /// A POST to `url`, with the key.
    pub fn post(&self, url: url::Url) -> reqwest::RequestBuilder {
        self.authorised(self.client.post(url))
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some((header, key, form)) = &self.key else {
            return request;
        };
        let written = match form {
            KeyForm::Bearer => format!("Bearer {}", key.expose()),
            KeyForm::Plain => key.expose().to_owned(),
        };
        match HeaderValue::from_str(&written) {
            Ok(mut value) => {
                // Kept out of reqwest's debug output.
                value.set_sensitive(true);
                request.header(header.clone(), value)
            }
            // A key with characters no header can carry: sent without it, the provider
            // refuses, and the refusal names the variable.
            Err(_) => request,
        }
    }

    /// Send `request` and read its body as `T`. A failure says what failed and whether a retry
    /// can help; a refused key names the variable it came from, never the key.
    pub async fn json<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, BackendError> {
        Ok(self.page(request).await?.body)
    }

    /// Like [`Http::json`], with the address of the next page when the answer's `Link` header
    /// names one (`rel="next"`).
    pub async fn page<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Page<T>, BackendError> {
        // Absence is only read from a 404 when asked for, so `None` cannot come back here.
        self.exchange(request, false)
            .await?
            .ok_or_else(|| self.malformed("no answer"))
    }

    /// Like [`Http::json`], but a 404 is an answer: nothing is there (a lookup by hash that
    /// matches no file).
    pub async fn json_or_absent<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Option<T>, BackendError> {
        Ok(self.exchange(request, true).await?.map(|page| page.body))
    }

    async fn exchange<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        absent_on_404: bool,
    ) -> Result<Option<Page<T>>, BackendError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let headers = response.headers();
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| rate_limit_reset(headers));
        let next = headers
            .get(LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(|link| next_link(link, response.url()));
        let body = read_capped(response)
            .await
            .map_err(|e| self.malformed(&format!("the body was cut short ({e})")))?;
        if status == 404 && absent_on_404 {
            return Ok(None);
        }
        if !(200..300).contains(&status) {
            return Err(self.refused(status, retry_after.as_deref(), &body));
        }
        let body = serde_json::from_slice(&body).map_err(|e| {
            self.malformed(&format!(
                "the body is not the JSON the provider documents ({e})"
            ))
        })?;
        Ok(Some(Page { body, next }))
    }

    fn transport(&self, error: &reqwest::Error) -> BackendError {
        // The error's text may hold the URL; none of ours carries a key.
        let message = error.without_url_text();
        if error.is_timeout() {
            BackendError::transient(
                &self.backend,
                BackendErrorKind::DeadlineExceeded,
                format!("no answer in time: {message}"),
            )
        } else if error.is_connect() {
            BackendError::transient(
                &self.backend,
                BackendErrorKind::Unavailable,
                format!("could not connect: {message}"),
            )
        } else if error.is_body() || error.is_decode() {
            self.malformed(&format!("the body was cut short ({message})"))
        } else {
            BackendError::transient(&self.backend, BackendErrorKind::Internal, message)
        }
    }

    fn malformed(&self, message: &str) -> BackendError {
        // A cut or garbled body is most often the connection's doing: one retry may read it whole.
        BackendError::transient(&self.backend, BackendErrorKind::MalformedResponse, message)
    }

    /// A non-2xx answer: 401/403 refused credentials, 429 a rate limit, 432/433 a plan's limit,
    /// 408 and 5xx transient, any other 4xx a request the provider will not take.
    fn refused(&self, status: u16, retry_after: Option<&str>, body: &[u8]) -> BackendError {
        let quoted: String = String::from_utf8_lossy(body)
            .chars()
            .take(QUOTED_BODY_CHARS)
            .collect();
        let quoted = quoted.trim();
        let said = if quoted.is_empty() {
            String::new()
        } else {
            format!(": {quoted}")
        };
        let (kind, retry, message) = match status {
            401 | 403 => (
                BackendErrorKind::Unauthorized,
                RetryClass::Permanent,
                match &self.key {
                    Some((_, key, _)) => {
                        format!("the key in {} was refused ({status}){said}", key.variable())
                    }
                    None => format!(
                        "access refused ({status}){said}{}",
                        self.refusal_hint
                            .map(|hint| format!("; {hint}"))
                            .unwrap_or_default()
                    ),
                },
            ),
            429 => (
                BackendErrorKind::RateLimited,
                RetryClass::rate_limited(retry_after),
                format!("rate limited (429){said}"),
            ),
            432 | 433 => (
                BackendErrorKind::QuotaExhausted,
                RetryClass::Permanent,
                format!("the plan's limit is reached ({status}){said}"),
            ),
            408 | 500..=599 => (
                BackendErrorKind::Unavailable,
                RetryClass::Transient,
                format!("the service failed ({status}){said}"),
            ),
            _ => (
                BackendErrorKind::InvalidRequest,
                RetryClass::Permanent,
                format!("the request was refused ({status}){said}"),
            ),
        };
        BackendError {
            backend: self.backend.clone(),
            kind,
            message,
            retry,
        }
    }
}

/// Seconds until a rate limit resets, from the `RateLimit` header some providers send instead of
/// `Retry-After` (`"api";r=0;t=120`: `t` is the wait).
fn rate_limit_reset(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("ratelimit")?.to_str().ok()?;
    value
        .split(';')
        .filter_map(|part| part.trim().strip_prefix("t="))
        .find_map(|seconds| seconds.trim().parse::<u64>().ok())
        .map(|seconds| seconds.to_string())
}

/// The `rel="next"` address of a `Link` header, resolved against the answer's own address,
/// when it is on the same origin.
fn next_link(header: &str, base: &url::Url) -> Option<url::Url> {
    header.split(',').find_map(|entry| {
        let (target, params) = entry.split_once(';')?;
        let is_next = params.split(';').any(|param| {
            let param = param.trim().replace(' ', "");
            param.eq_ignore_ascii_case("rel=\"next\"") || param.eq_ignore_ascii_case("rel=next")
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        // The key goes with every request: a next page elsewhere is not followed.
        is_next
            .then(|| base.join(target).ok())
            .flatten()
            .filter(|next| next.origin() == base.origin())
    })
}

async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.without_url_text())? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("longer than {MAX_BODY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

trait WithoutUrl {
    fn without_url_text(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_text(&self) -> String {
        let mut text = self.to_string();
        if let Some(url) = self.url() {
            text = text.replace(url.as_str(), "<url>");
        }
        text
    }
}
