use ferret_mcp::{ToolJob, ToolOutput};
use std::convert::Infallible;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, State};
use axum::http::{header, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use ferret::jobs::find_model::{parse_workflow, FileOutcome, FileRequest};
use ferret::jobs::search::QueryError;
use ferret::{Event, Principal, Response};
use futures::{Stream, StreamExt};
use tokio::net::TcpListener;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::ingest;
use crate::state::AppState;
use crate::wire::{ChatBody, ChatReply, FileFound, FindModelBody, FindModelReply};
use crate::ApiError;

/// The API's routes over `state`, each response carrying an `x-request-id` (the caller's, or
/// a new one), every request traced in a span holding it.
pub fn router(state: AppState) -> Router {
    let body_limit = state.limits().max_body_bytes;
    let mcp = ferret_mcp::http_service(state.ferret().clone(), mcp_options(&state));
    let ingest_limit = DefaultBodyLimit::max(state.limits().max_ingest_bytes);
    let json_only = || middleware::from_fn(crate::guard::json_body);
    Router::new()
        .route("/v1/search", post(search).layer(json_only()))
        .route("/v1/search/stream", post(search_stream).layer(json_only()))
        .route("/v1/chat", post(chat).layer(json_only()))
        .route("/v1/find-model", post(find_model).layer(json_only()))
        .route("/v1/ingest", post(ingest::ingest).layer(ingest_limit))
        .route(
            "/v1/ingest/stream",
            post(ingest::ingest_stream).layer(ingest_limit),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .nest_service("/mcp", mcp)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_token,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::guard::same_site,
        ))
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

/// The MCP service's options: its sessions end when the server stops, and its searches run as
/// the other routes' do (the question's length, the deadline, the concurrency limit, the
/// metrics).
fn mcp_options(state: &AppState) -> ferret_mcp::HttpOptions {
    let searches = state.clone();
    let run: ferret_mcp::JobRunner = Arc::new(move |job| {
        let state = searches.clone();
        Box::pin(async move {
            let response = match job {
                ToolJob::Search(query) => {
                    let query = state.within_limits(query).map_err(|e| e.to_string())?;
                    state.run(query).await
                }
                ToolJob::FindModel(request) => state.find_model(request).await,
                ToolJob::FindModels(workflow) => {
                    let found = state.find_models(workflow).await;
                    return found.map(ToolOutput::Workflow).map_err(|e| e.to_string());
                }
            };
            response
                .map(|r| ToolOutput::Response(Box::new(r)))
                .map_err(|e| e.to_string())
        })
    });
    ferret_mcp::HttpOptions {
        stop: state.stopping().child_token(),
        extra_hosts: state.allowed_hosts().to_vec(),
        run: Some(run),
        seen: state.seen().clone(),
    }
}

/// Serve the API on `listener` until `shutdown` completes, then finish the requests in flight
/// (a stream ends with its final event) before returning.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stopping = state.stopping().clone();
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            // MCP clients hold streams open; ending their sessions lets the shutdown finish.
            stopping.cancel();
        })
        .await
}

/// `POST /v1/search`: the whole response at once.
async fn search(
    State(state): State<AppState>,
    asker: Option<Extension<Principal>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Response>, ApiError> {
    let query = state.for_asker(state.query_from(body)?, asker.as_deref())?;
    Ok(Json(state.run(query).await?))
}

/// `POST /v1/chat`: one message of a conversation, searched in its thread (a follow-up is read
/// against the thread's last turn); without a thread id a new thread starts, and its id comes
/// back for the next message.
async fn chat(
    State(state): State<AppState>,
    asker: Option<Extension<Principal>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ChatReply>, ApiError> {
    let chat: ChatBody = state.read(body)?;
    let thread_id = chat
        .thread_id
        .clone()
        .filter(|id| !id.trim().is_empty())
        .unwrap_or_else(|| state.new_thread(asker.as_deref()));
    let query = state
        .query_of(chat.into_search(thread_id.clone()))
        .map_err(|error| match error {
            // The question is the body's `message` here.
            ApiError::InvalidQuery(refused @ (QueryError::Empty | QueryError::TooLong { .. })) => {
                ApiError::InvalidMessage(refused)
            }
            other => other,
        })?;
    let query = state.for_asker(query, asker.as_deref())?;
    let response = state.run(query).await?;
    Ok(Json(ChatReply {
        thread_id,
        response,
    }))
}

/// `POST /v1/find-model`: the model files of a ComfyUI workflow, or one file, found on the
/// model hubs the server searches (`--hubs`), through the library's `find_models` and
/// `find_model`.
async fn find_model(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<FindModelReply>, ApiError> {
    let body: FindModelBody = state.read(body)?;
    let refused = |field, message: String| ApiError::InvalidModelRequest { field, message };
    let Some(json) = &body.workflow else {
        let mut request =
            FileRequest::named_or_hashed(body.file_name.as_deref(), body.sha256.as_deref())
                .map_err(|e| {
                    let field = if body.sha256.is_some() {
                        "sha256"
                    } else {
                        "file_name"
                    };
                    refused(field, format!("{e}; or send a `workflow`"))
                })?;
        request.model_type = body.model_type;
        request.prefer = body.prefer;
        if let Some(base) = &body.base_model {
            request = request.with_base_model(base.as_str());
        }
        let name = request.file_name.clone();
        let response = state.find_model(request).await?;
        return Ok(Json(FindModelReply {
            base_model: None,
            files: vec![FileFound::of(name, Ok(&response))],
        }));
    };
    if body.file_name.is_some() || body.sha256.is_some() || body.model_type.is_some() {
        return Err(refused(
            "workflow",
            "send a `workflow` or one file (`file_name`, `sha256`, `model_type`), not both".into(),
        ));
    }
    let mut workflow = parse_workflow(&json.to_string(), Path::new("the request's workflow"))
        .map_err(|e| refused("workflow", e.to_string()))?;
    workflow.base_model.clone_from(&body.base_model);
    workflow.prefer = body.prefer;
    let found = state.find_models(workflow).await?;
    let files = found
        .files
        .into_iter()
        .map(|file| {
            let name = file.model.file_name.clone();
            let mut found = match &file.outcome {
                FileOutcome::Searched(response) => FileFound::of(name, Ok(response)),
                FileOutcome::NotSearched(error) => FileFound::of(name, Err(error.to_string())),
                FileOutcome::Present(_) => FileFound::of(name, Err("already present".into())),
            };
            found.node_id = Some(file.model.node_id);
            found
        })
        .collect();
    Ok(Json(FindModelReply {
        base_model: found.base_model,
        files,
    }))
}

/// `POST /v1/search/stream`: one Server-Sent Event per pipeline event, named by its kind
/// (`step`, `hits`, `answer`, …), the last always `done` with the whole response. A client that
/// goes away stops the search.
async fn search_stream(
    State(state): State<AppState>,
    asker: Option<Extension<Principal>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let query = state.for_asker(state.query_from(body)?, asker.as_deref())?;
    let permit = state.permit()?;
    let metrics_of = state.clone();
    let events = state.ferret().search_stream(query).map(move |event| {
        // The permit is held while the stream lives.
        let _running = &permit;
        if let Event::Done { response } = &event {
            metrics_of.metrics().search(response);
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
        .metrics()
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
        state.metrics().encode(&state.memory().await),
    )
}

/// The OpenAPI document of these routes, as `cargo xtask codegen` wrote it (CI checks it is
/// current).
const OPENAPI: &str = include_str!("../../../docs/openapi.json");

/// `GET /openapi.json`: the routes, their bodies, their errors and the bearer scheme.
async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

/// Any path no route has: a JSON refusal like every other.
async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::RouteNotFound {
        path: uri.path().to_owned(),
    }
}

/// A route asked with a method it does not take.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

/// `GET /healthz`: the process answers.
async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: ready when the searcher has a backend to search.
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let backends = state.ferret().backend_names();
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
