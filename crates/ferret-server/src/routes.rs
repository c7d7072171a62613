use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, State};
use axum::http::{header, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use ferret::{Event, Ferret, Query, QueryError, Response};
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::ingest;
use crate::metrics::Metrics;
use crate::wire::{ChatBody, ChatReply, SearchBody};
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
}

struct Inner {
    ferret: Ferret,
    limits: Limits,
    permits: Arc<Semaphore>,
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
                metrics: Metrics::new(),
            }),
            ingest_root: None,
        }
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
    fn query_from(&self, body: Result<Bytes, BytesRejection>) -> Result<Query, ApiError> {
        self.query_of(self.read(body)?)
    }

    /// A request body of type `T`, or why it is refused.
    fn read<T: DeserializeOwned>(
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
    fn query_of(&self, body: SearchBody) -> Result<Query, ApiError> {
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

    /// A permit to run one search, or a refusal saying when to come back.
    fn permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
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

/// The API's routes over `state`, each response carrying an `x-request-id` (the caller's, or
/// a new one), every request traced in a span holding it.
pub fn router(state: AppState) -> Router {
    let body_limit = state.inner.limits.max_body_bytes;
    let ingest_limit = DefaultBodyLimit::max(state.inner.limits.max_ingest_bytes);
    Router::new()
        .route("/v1/search", post(search))
        .route("/v1/search/stream", post(search_stream))
        .route("/v1/chat", post(chat))
        .route("/v1/ingest", post(ingest::ingest).layer(ingest_limit))
        .route(
            "/v1/ingest/stream",
            post(ingest::ingest_stream).layer(ingest_limit),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let id = request
                    .headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!(
                    "request",
                    method = %request.method(),
                    path = %request.uri().path(),
                    request_id = %id,
                )
            }),
        )
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .with_state(state)
}

/// Serve the API on `listener` until `shutdown` completes, then finish the requests in flight
/// (a stream ends with its final event) before returning.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

impl AppState {
    /// Run `query` within a permit and the deadline, counting what it spent.
    async fn run(&self, query: Query) -> Result<Response, ApiError> {
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

/// `POST /v1/search`: the whole response at once.
async fn search(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Response>, ApiError> {
    let query = state.query_from(body)?;
    Ok(Json(state.run(query).await?))
}

/// `POST /v1/chat`: one message of a conversation, searched in its thread (a follow-up is read
/// against the thread's last turn); without a thread id a new thread starts, and its id comes
/// back for the next message.
async fn chat(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ChatReply>, ApiError> {
    let chat: ChatBody = state.read(body)?;
    let thread_id = chat
        .thread_id
        .clone()
        .filter(|id| !id.trim().is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let query = state
        .query_of(chat.into_search(thread_id.clone()))
        .map_err(|error| match error {
            // The question is the body's `message` here.
            ApiError::InvalidQuery(refused @ (QueryError::Empty | QueryError::TooLong { .. })) => {
                ApiError::InvalidMessage(refused)
            }
            other => other,
        })?;
    let response = state.run(query).await?;
    Ok(Json(ChatReply {
        thread_id,
        response,
    }))
}

/// `POST /v1/search/stream`: one Server-Sent Event per pipeline event, named by its kind
/// (`step`, `hits`, `answer`, …), the last always `done` with the whole response. A client that
/// goes away stops the search.
async fn search_stream(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let query = state.query_from(body)?;
    let permit = state.permit()?;
    let metrics_of = state.clone();
    let events = state.inner.ferret.search_stream(query).map(move |event| {
        // The permit is held while the stream lives.
        let _running = &permit;
        if let Event::Done { response } = &event {
            metrics_of.inner.metrics.search(response);
        }
        Ok(sse_event(&event))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// An event as SSE: its kind as the event name, its JSON as the data.
fn sse_event(event: &Event) -> SseEvent {
    match serde_json::to_value(event) {
        Ok(value) => {
            let kind = value["event"].as_str().unwrap_or("event").to_owned();
            SseEvent::default().event(kind).data(value.to_string())
        }
        Err(error) => SseEvent::default().event("error").data(
            serde_json::json!({ "event": "error", "message": error.to_string() }).to_string(),
        ),
    }
}

/// Count every request by its route (not its raw path: an unknown path is `unmatched`) and
/// status, and time it.
async fn track(
    State(state): State<AppState>,
    route: Option<MatchedPath>,
    request: axum::extract::Request,
    next: Next,
) -> axum::response::Response {
    let route = route.map_or_else(|| "unmatched".to_owned(), |r| r.as_str().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    state
        .inner
        .metrics
        .request(&route, response.status().as_u16(), started.elapsed());
    response
}

/// `GET /metrics`: the counters, in the text format Prometheus scrapes.
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.inner.metrics.encode(),
    )
}

/// `GET /healthz`: the process answers.
async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: ready when the searcher has a backend to search.
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let backends = state.inner.ferret.backend_names();
    let status = if backends.is_empty() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = serde_json::json!({
        "status": if backends.is_empty() { "no backend" } else { "ready" },
        "backends": backends,
    });
    (status, Json(body))
}
