//! What every handler shares: the searcher, the limits, the permits of the concurrency limit,
//! the metrics, and reading a request into the library's query.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use ferret::{Ferret, Query, QueryError, Response};
use serde::de::DeserializeOwned;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::BearerToken;
use crate::metrics::Metrics;
use crate::wire::SearchBody;
use crate::{ApiError, Limits};

/// Time a search is given beyond its budget's wall time before the request gives up on it: the
/// budget is checked between steps, and the step in flight may be a backend call.
const DEADLINE_GRACE: Duration = Duration::from_secs(5);

/// What every handler shares: the searcher, the limits and the permits of the concurrency limit.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
    /// Where `POST /v1/ingest` may read files named by path; none when it may not.
    ingest_root: Option<Arc<Path>>,
    /// The tokens a request must carry one of; none to take every request.
    tokens: Arc<[BearerToken]>,
    /// Cancelled when the server shuts down, ending the MCP sessions.
    stopping: CancellationToken,
}

struct Inner {
    ferret: Ferret,
    limits: Limits,
    permits: Arc<Semaphore>,
    /// One ingest at a time: its body is held in memory until it is written.
    ingest_permit: Arc<Semaphore>,
    metrics: Metrics,
}

impl AppState {
    /// Serve `ferret` within `limits`.
    pub fn new(ferret: Ferret, limits: Limits) -> Self {
        Self {
            inner: Arc::new(Inner {
                ferret,
                limits,
                permits: Arc::new(Semaphore::new(limits.max_concurrent)),
                ingest_permit: Arc::new(Semaphore::new(1)),
                metrics: Metrics::new(),
            }),
            ingest_root: None,
            tokens: Arc::from(Vec::new()),
            stopping: CancellationToken::new(),
        }
    }

    /// Take only requests carrying one of `tokens` (`Authorization: Bearer …`), on every route
    /// but `/healthz` and `/readyz`; the others get 401.
    pub fn with_tokens(mut self, tokens: Vec<BearerToken>) -> Self {
        self.tokens = Arc::from(tokens);
        self
    }

    pub(crate) fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    pub(crate) fn tokens(&self) -> &[BearerToken] {
        &self.tokens
    }

    /// Let `POST /v1/ingest` read files and folders named by path under `root` (a relative
    /// path is taken from it); without a root, documents are only taken from the body.
    pub fn with_ingest_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.ingest_root = Some(Arc::from(root.into()));
        self
    }

    pub(crate) fn ferret(&self) -> &Ferret {
        &self.inner.ferret
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn ingest_root(&self) -> Option<&Path> {
        self.ingest_root.as_deref()
    }

    /// The query a search body asks for, or why it is refused.
    pub(crate) fn query_from(
        &self,
        body: Result<Bytes, BytesRejection>,
    ) -> Result<Query, ApiError> {
        self.query_of(self.read(body)?)
    }

    /// A request body of type `T`, or why it is refused.
    pub(crate) fn read<T: DeserializeOwned>(
        &self,
        body: Result<Bytes, BytesRejection>,
    ) -> Result<T, ApiError> {
        let limit = self.inner.limits.max_body_bytes;
        let body = body.map_err(|rejection| match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge { limit },
            _ => ApiError::InvalidJson {
                field: None,
                message: rejection.body_text(),
            },
        })?;
        parse(&body)
    }

    /// The query `body` asks for, within the limits.
    pub(crate) fn query_of(&self, body: SearchBody) -> Result<Query, ApiError> {
        let limits = self.inner.limits;
        let chars = body.query.chars().count();
        if chars > limits.max_question_chars {
            return Err(QueryError::TooLong {
                chars,
                limit: limits.max_question_chars,
            }
            .into());
        }
        Ok(body.into_query(limits.request_deadline)?)
    }

    /// The permit to run the one ingest, or a refusal saying when to come back.
    pub(crate) fn ingest_permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.inner
            .ingest_permit
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::IngestBusy {
                retry_after_secs: self.inner.limits.retry_after_secs,
            })
    }

    /// A permit to run one search, or a refusal saying when to come back.
    pub(crate) fn permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.inner
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::Overloaded {
                running: self.inner.limits.max_concurrent,
                retry_after_secs: self.inner.limits.retry_after_secs,
            })
    }
}

/// `T` read from a JSON body; a refusal names the path of the field at fault.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        ApiError::InvalidJson {
            field: (path != ".").then_some(path),
            message: error.into_inner().to_string(),
        }
    })
}

impl AppState {
    /// Run `query` within a permit and the deadline, counting what it spent.
    pub(crate) async fn run(&self, query: Query) -> Result<Response, ApiError> {
        let _permit = self.permit()?;
        let limit = query.budget.wall_time + DEADLINE_GRACE;
        match tokio::time::timeout(limit, self.inner.ferret.search(query)).await {
            Ok(response) => {
                let response = response.map_err(ApiError::Search)?;
                self.inner.metrics.search(&response);
                Ok(response)
            }
            Err(_) => Err(ApiError::DeadlineExceeded {
                secs: limit.as_secs(),
            }),
        }
    }
}
