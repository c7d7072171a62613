//! `ferret-backends-web` searches the web: [`TavilyBackend`], [`BraveBackend`] and
//! [`SearxngBackend`] (a self-hosted instance), each one [`SearchBackend`] over the provider's
//! documented JSON API. Results become [`Hit`]s with canonical URLs, snippets, full text when asked
//! (capped) and published dates; a provider's own answer becomes a hit of its own that lists the
//! results it came with. Failures carry their retry class (401/403 name the key's variable, 429
//! keeps `Retry-After`, plan limits are permanent, 5xx transient); keys are held as secrets and
//! appear in no log, error or trace. Each backend states the provider's documented rate limit,
//! which the executor applies.
//!
//! The HTTP exchange itself (the secret key, the capped body, the failure classes) is
//! `ferret-http`'s, shared with the other remote backends.
//!
//! It must not depend on the executor, the agent, another backend or the model layer: retries,
//! caching, deadlines and rate limits are the executor's layers.

mod brave;
mod hits;
mod searxng;
mod tavily;

pub use brave::{BraveBackend, BraveConfig, BRAVE_KEY_VARIABLE, BRAVE_URL_VARIABLE};
pub use ferret_core::{
    Freshness, Hit, SafeSearch, SearchBackend, SearchDepth, SearchOptions, Topic,
};
pub use ferret_http::{ApiKey, HttpSetupError};
pub use hits::{PROVIDER_ANSWER_FIELD, PROVIDER_FIELD, SOURCES_FIELD};
pub use searxng::{SearxngBackend, SearxngConfig, SEARXNG_URL_VARIABLE};
pub use tavily::{TavilyBackend, TavilyConfig, TAVILY_KEY_VARIABLE, TAVILY_URL_VARIABLE};

/// The address a provider's API is reached at: `configured` when it is not the provider's own
/// (`default`), else the address in the provider's variable when one is set (a proxy, a
/// gateway, a compatible service), else the provider's own.
fn api_address(configured: &str, default: &str, variable: Option<String>) -> String {
    match variable.filter(|v| !v.trim().is_empty()) {
        Some(address) if configured == default => address.trim().to_owned(),
        _ => configured.to_owned(),
    }
}

/// A web backend could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The provider's key is neither configured nor in its environment variable.
    #[error("no API key: set {variable}")]
    MissingKey {
        /// The variable the key is read from.
        variable: String,
    },
    /// A configured address is not an http(s) URL.
    #[error("`{url}` is not a usable base URL: {reason}")]
    InvalidUrl {
        /// The address as configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (no TLS backend, bad proxy settings).
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}

impl From<ferret_http::HttpSetupError> for WebError {
    fn from(error: ferret_http::HttpSetupError) -> Self {
        match error {
            ferret_http::HttpSetupError::MissingKey { variable } => Self::MissingKey { variable },
            ferret_http::HttpSetupError::Client(reason) => Self::Client(reason),
            ferret_http::HttpSetupError::InvalidUrl { url, reason } => {
                Self::InvalidUrl { url, reason }
            }
            other => Self::Client(other.to_string()),
        }
    }
}

use ferret_http::{base_url, endpoint};

/// The query's own domain list when it gives one, else the configured one.
fn domains<'a>(own: &'a [String], configured: &'a [String]) -> &'a [String] {
    if own.is_empty() {
        configured
    } else {
        own
    }
}

/// `query` with `site:` operators for the domains to keep and `-site:` ones for those to drop,
/// for engines whose query syntax filters by domain.
fn with_site_operators(query: &str, include: &[String], exclude: &[String]) -> String {
    let mut query = query.to_owned();
    match include {
        [] => {}
        [one] => query.push_str(&format!(" site:{}", one.trim())),
        many => {
            let sites: Vec<String> = many.iter().map(|d| format!("site:{}", d.trim())).collect();
            query.push_str(&format!(" ({})", sites.join(" OR ")));
        }
    }
    for domain in exclude {
        query.push_str(&format!(" -site:{}", domain.trim()));
    }
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_variable_replaces_only_the_providers_own_address() {
        let own = "https://api.tavily.com";
        let proxy = Some("http://127.0.0.1:8081".to_owned());
        assert_eq!(
            api_address(own, own, proxy.clone()),
            "http://127.0.0.1:8081"
        );
        assert_eq!(
            api_address("http://gateway:9", own, proxy),
            "http://gateway:9",
            "the configuration's own address wins"
        );
        assert_eq!(api_address(own, own, Some(" ".into())), own);
        assert_eq!(api_address(own, own, None), own);
    }
}
