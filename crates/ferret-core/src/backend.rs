use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{BackendError, Filters, Hit};

/// One request to one backend: a query already rewritten for it, a limit and the filters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// How many hits to return at most.
    pub limit: usize,
    /// Restrictions on what to return.
    pub filters: Filters,
}

/// What a backend can do beyond plain text search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BackendCapabilities {
    /// Honours [`Filters::date_range`].
    pub date_range: bool,
    /// Honours [`Filters::most_recent`].
    pub most_recent: bool,
}

/// The one trait every search backend implements: the embedded index, a Qdrant server, web and
/// hub search alike.
///
/// A backend does one call and reports failure as a [`BackendError`] with its retry class; it
/// does not retry, cache or rate-limit itself: the executor wraps every backend in those layers,
/// so there is exactly one of each per call.
#[async_trait]
pub trait SearchBackend: Send + Sync {
    /// A short stable name, used in traces, failures and cache keys.
    fn name(&self) -> &str;

    /// Which filters this backend honours. A filter a backend does not honour is reported as a
    /// failure for that backend rather than silently ignored.
    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::default()
    }

    /// Run one search.
    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError>;
}
