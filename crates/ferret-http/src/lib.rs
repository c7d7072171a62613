//! `ferret-http` is the HTTP side every remote search backend shares (the web search providers,
//! the model hubs): an [`ApiKey`] that no log, trace, error or snapshot can show, and [`Http`],
//! which sends a request, reads a capped body, parses the provider's JSON and classes a failure
//! by whether a retry can help (a refused key names its variable, never the key; a 429 carries
//! its `Retry-After`).
//!
//! It knows HTTP, not providers: it must not depend on any backend crate, the executor or a
//! model crate. Each backend crate builds its requests and reads its answers on top of it.

mod http;
mod key;

pub use http::{Http, KeyForm, Page};
pub use key::ApiKey;

/// A duration written in whole seconds, as configuration files give timeouts
/// (`timeout_seconds = 20`): for `#[serde(deserialize_with = "ferret_http::seconds")]`.
pub fn seconds<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<std::time::Duration, D::Error> {
    <u64 as serde::Deserialize>::deserialize(deserializer).map(std::time::Duration::from_secs)
}

/// An HTTP side could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpSetupError {
    /// The provider's key is neither configured nor in its environment variable.
    #[error("no API key: set {variable}")]
    MissingKey {
        /// The variable the key is read from.
        variable: String,
    },
    /// The HTTP client could not be built (no TLS backend, bad proxy settings).
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    /// A configured address is not an http(s) URL.
    #[error("`{url}` is not a usable base URL: {reason}")]
    InvalidUrl {
        /// The address as configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A base URL as configured: parsed, and http or https with a host.
pub fn base_url(raw: &str) -> Result<url::Url, HttpSetupError> {
    let invalid = |reason: &str| HttpSetupError::InvalidUrl {
        url: raw.to_owned(),
        reason: reason.to_owned(),
    };
    let url = url::Url::parse(raw.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("only http and https are supported"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it has no host"));
    }
    Ok(url)
}

/// `base` with the segments of `path` appended to its own path ("https://host/searx" +
/// "search"), each segment escaped: a file named `50%_merge.safetensors` stays that name.
pub fn endpoint(base: &url::Url, path: &str) -> url::Url {
    let mut url = base.clone();
    // Only a URL that cannot be a base has no segments; `base_url` refuses those.
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty();
        segments.extend(path.split('/').filter(|segment| !segment.is_empty()));
    }
    url
}
