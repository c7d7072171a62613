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

pub use http::{Http, KeyForm};
pub use key::ApiKey;

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
}
