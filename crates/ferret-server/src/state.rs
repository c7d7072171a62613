//! What every handler shares: the searcher, the limits, the permits of the concurrency limit,
//! the metrics, and reading a request into the library's query.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use ferret::config::RateLimit;
use ferret::index::Unlisted;
use ferret::jobs::find_model::{FileRequest, Workflow, WorkflowFind};
use ferret::jobs::search::QueryError;
use ferret::{Access, Ferret, FerretError, Principal, Query, Response};
use serde::de::DeserializeOwned;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::BearerToken;
use crate::metrics::Metrics;
use crate::wire::SearchBody;
use crate::{ApiError, Limits};

/// What remembering one thread's owner costs beside the id and name themselves: the map's
/// entry and the cache's bookkeeping, measured roughly (an order of magnitude is what matters).
const OWNED_THREAD_BYTES: usize = 160;
/// A thread unused this long is forgotten with its owner.
const THREAD_IDLE: Duration = Duration::from_secs(24 * 3600);

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
    /// Each principal's quota, for those that have one.
    quotas: Arc<HashMap<String, RateLimit>>,
    /// Who may read documents that carry no access list.
    unlisted: Unlisted,
    /// Host names every route answers to beside the loopback ones.
    allowed_hosts: Arc<[String]>,
    /// Web origins whose pages may call the API beside the server's own.
    allowed_origins: Arc<[String]>,
    /// The principal that started each thread: only they may continue it.
    thread_owners: moka::sync::Cache<String, Arc<str>>,
    /// The hits searches through `/mcp` returned, for its `fetch`.
    seen: Arc<ferret_mcp::SeenHits>,
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
            quotas: Arc::new(HashMap::new()),
            unlisted: Unlisted::Public,
            allowed_hosts: Arc::from(Vec::new()),
            allowed_origins: Arc::from(Vec::new()),
            // Least recently used first: a thread just started is never the one refused.
            thread_owners: moka::sync::Cache::builder()
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .max_capacity(limits.thread_owner_bytes)
                .weigher(|id: &String, owner: &Arc<str>| {
                    u32::try_from(OWNED_THREAD_BYTES + id.len() + owner.len()).unwrap_or(u32::MAX)
                })
                .time_to_idle(THREAD_IDLE)
                .build(),
            seen: Arc::new(ferret_mcp::SeenHits::new(limits.seen_hit_bytes)),
            stopping: CancellationToken::new(),
        }
    }

    /// Take only requests carrying one of `tokens` (`Authorization: Bearer …`), on every route
    /// but `/healthz` and `/readyz`; the others get 401. Each search is then run for the
    /// token's principal: it finds only documents their groups may read, within their quota,
    /// and a thread only they continue.
    pub fn with_tokens(mut self, tokens: Vec<BearerToken>) -> Self {
        self.quotas = Arc::new(
            tokens
                .iter()
                .filter_map(|t| {
                    let quota = t.requests_per_minute()?;
                    Some((t.principal().to_owned(), RateLimit::per_minute(quota)))
                })
                .collect(),
        );
        self.tokens = Arc::from(tokens);
        self
    }

    /// Who may read documents that carry no access list: everyone (the default), or no one
    /// but through a group (documents private by default).
    pub fn with_unlisted(mut self, unlisted: Unlisted) -> Self {
        self.unlisted = unlisted;
        self
    }

    /// Take requests whose `Host` is one of `hosts` (a name, or `name:port` for that port
    /// only), beside `localhost`, `127.0.0.1` and `::1`, on every route: for a server its
    /// clients reach by name. Any other host is refused with 403, against DNS rebinding.
    pub fn with_allowed_hosts(mut self, hosts: Vec<String>) -> Self {
        self.allowed_hosts = Arc::from(hosts);
        self
    }

    /// Let pages of `origins` (`https://portal.example.org`) call the API from a browser,
    /// beside the server's own pages; a request from any other site's page is refused with
    /// 403.
    pub fn with_allowed_origins(mut self, origins: Vec<String>) -> Self {
        self.allowed_origins = Arc::from(origins);
        self
    }

    pub(crate) fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    pub(crate) fn allowed_origins(&self) -> &[String] {
        &self.allowed_origins
    }

    /// The principal `token` stands for, as searches see them.
    pub(crate) fn principal(&self, token: &BearerToken) -> Principal {
        Principal {
            name: token.principal().to_owned(),
            access: Access::new(token.groups().iter().cloned(), self.unlisted),
        }
    }

    /// Count one request against `principal`'s quota; past it, how long until the next.
    pub(crate) fn spend_quota(&self, principal: &str) -> Result<(), Duration> {
        self.quotas
            .get(principal)
            .map_or(Ok(()), RateLimit::try_now)
    }

    /// `query` as run for `asker`: limited to what they may read, in a thread only they may
    /// continue. With tokens, a thread is one this server started for the asker: any other id,
    /// another principal's or made up, is not found, so an id can be neither claimed first nor
    /// probed.
    pub(crate) fn for_asker(
        &self,
        query: Query,
        asker: Option<&Principal>,
    ) -> Result<Query, ApiError> {
        let Some(asker) = asker else {
            return Ok(query);
        };
        if let Some(thread) = &query.thread_id {
            let owned = self
                .thread_owners
                .get(thread)
                .is_some_and(|owner| *owner == *asker.name);
            if !owned {
                return Err(ApiError::ThreadNotFound);
            }
        }
        Ok(query.with_access(asker.access.clone()))
    }

    /// A new thread's id, unguessable, owned by `asker` when there is one.
    pub(crate) fn new_thread(&self, asker: Option<&Principal>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        if let Some(asker) = asker {
            self.thread_owners
                .insert(id.clone(), Arc::from(asker.name.as_str()));
        }
        id
    }

    /// Where `/mcp` keeps the hits its searches returned.
    pub(crate) fn seen(&self) -> &Arc<ferret_mcp::SeenHits> {
        &self.seen
    }

    /// What the caches that grow with traffic hold now, in bytes.
    pub(crate) async fn memory(&self) -> crate::metrics::MemoryHeld {
        self.thread_owners.run_pending_tasks();
        crate::metrics::MemoryHeld {
            result_cache: self.ferret().cache_bytes().await,
            sessions: self.ferret().session_bytes().unwrap_or(0),
            thread_owners: self.thread_owners.weighted_size(),
            seen_hits: self.seen.bytes() as u64,
        }
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
        // Checked before the library's own, longer limit can answer with its figure.
        self.question_fits(&body.query)?;
        thread_id_fits(body.thread_id.as_deref())?;
        Ok(body.into_query(self.inner.limits.request_deadline)?)
    }

    /// `query`, built elsewhere (an MCP tool call), held to the limits a request body is: the
    /// question's length, and a wall time no longer than the deadline.
    pub(crate) fn within_limits(&self, mut query: Query) -> Result<Query, ApiError> {
        self.question_fits(query.text())?;
        query.budget.wall_time = query
            .budget
            .wall_time
            .min(self.inner.limits.request_deadline);
        Ok(query)
    }

    /// Refuse a question longer than the server takes.
    fn question_fits(&self, question: &str) -> Result<(), ApiError> {
        let limit = self.inner.limits.max_question_chars;
        let chars = question.chars().count();
        if chars > limit {
            return Err(QueryError::TooLong { chars, limit }.into());
        }
        Ok(())
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

/// Longest thread id taken: the server's own are 36 characters (UUIDs); a client naming its
/// threads on an open server has room to spare.
pub(crate) const MAX_THREAD_ID_CHARS: usize = 128;

/// Refuse a thread id longer than [`MAX_THREAD_ID_CHARS`]: each is kept while its thread lives.
pub(crate) fn thread_id_fits(thread: Option<&str>) -> Result<(), ApiError> {
    match thread {
        Some(id) if id.chars().count() > MAX_THREAD_ID_CHARS => Err(ApiError::FieldTooLong {
            field: "thread_id".to_owned(),
            limit: MAX_THREAD_ID_CHARS,
        }),
        _ => Ok(()),
    }
}

/// `T` read from a JSON body, which must hold that one value and nothing after it; a refusal
/// names the path of the field at fault.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        ApiError::InvalidJson {
            field: (path != ".").then_some(path),
            message: error.into_inner().to_string(),
        }
    })?;
    json.end().map_err(|error| ApiError::InvalidJson {
        field: None,
        message: format!("bytes after the JSON value: {error}"),
    })?;
    Ok(value)
}

impl AppState {
    /// Run `query` within a permit and the deadline, counting what it spent.
    pub(crate) async fn run(&self, query: Query) -> Result<Response, ApiError> {
        let limit = query.budget.wall_time;
        self.within_deadline(limit, self.inner.ferret.search(query))
            .await
    }

    /// Find the model file `request` names within a permit and the deadline (the finder's own
    /// budget, cut to the server's deadline), counting what it spent.
    pub(crate) async fn find_model(&self, request: FileRequest) -> Result<Response, ApiError> {
        let mut budget = FileRequest::default_budget();
        budget.wall_time = budget.wall_time.min(self.inner.limits.request_deadline);
        budget.call_deadline = budget.call_deadline.min(budget.wall_time);
        let limit = budget.wall_time;
        let ferret = &self.inner.ferret;
        self.within_deadline(limit, ferret.find_model_within(&request, budget))
            .await
    }

    /// Find the model files of `workflow` within a permit and the deadline (the whole
    /// workflow, its files a few at a time, each within the finder's budget cut to the
    /// deadline).
    pub(crate) async fn find_models(&self, workflow: Workflow) -> Result<WorkflowFind, ApiError> {
        let _permit = self.permit()?;
        let limit = self.inner.limits.request_deadline + DEADLINE_GRACE;
        let found = tokio::time::timeout(limit, self.inner.ferret.find_models(&workflow))
            .await
            .map_err(|_| ApiError::DeadlineExceeded {
                secs: limit.as_secs(),
            })?;
        for file in &found.files {
            if let Some(response) = file.outcome.response() {
                self.inner.metrics.search(response);
            }
        }
        Ok(found)
    }

    /// Run `job`, which ends within `wall_time`, holding a permit; give up a little after.
    async fn within_deadline(
        &self,
        wall_time: Duration,
        job: impl std::future::Future<Output = Result<Response, FerretError>>,
    ) -> Result<Response, ApiError> {
        let _permit = self.permit()?;
        let limit = wall_time + DEADLINE_GRACE;
        match tokio::time::timeout(limit, job).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn threads_owners_are_forgotten_past_their_byte_budget_oldest_first() {
        let ferret = Ferret::builder()
            .backend(Arc::new(ferret_test_support::ScriptedBackend::new(
                "wiki",
                Vec::new(),
            )))
            .build()
            .unwrap();
        let budget = 20 * (OWNED_THREAD_BYTES as u64 + 64);
        let state = AppState::new(
            ferret,
            Limits {
                thread_owner_bytes: budget,
                ..Limits::default()
            },
        );
        let alice = Principal {
            name: "alice".into(),
            access: Access::new(["a"], Unlisted::Public),
        };
        let first = state.new_thread(Some(&alice));
        let newest: Vec<String> = (0..200).map(|_| state.new_thread(Some(&alice))).collect();
        let held = state.memory().await.thread_owners;
        assert!(held <= budget && held > 0, "{held} of {budget}");
        let continues = |id: &str| {
            let query = Query::new("q").unwrap().with_thread(id);
            state.for_asker(query, Some(&alice)).is_ok()
        };
        assert!(!continues(&first), "the oldest thread is forgotten");
        assert!(continues(newest.last().unwrap()), "the newest is kept");
    }
}
