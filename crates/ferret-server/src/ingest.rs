//! `POST /v1/ingest` and `POST /v1/ingest/stream`: documents reach the embedded index the server
//! searches. The embedded index admits one process at a time, so while a server runs, this is
//! how documents get into it.
//!
//! The body says what to add, by its content type:
//! - `application/x-ndjson` (or `application/jsonl`): JSONL records, one per line;
//! - `multipart/form-data`: files, each part's file name saying how it is read (`.jsonl`
//!   records, `.md` / `.txt` chunked text), and sending a name again replaces what it yielded;
//! - `application/json`: `{"path": ...}`, a file or folder on the server, only under the root
//!   the server was started with.
//!
//! A bad line or an unsupported file is named in the report and the rest is written. The ingest
//! runs on its own task: a client that goes away does not leave half of it written.

use std::convert::Infallible;
use std::path::{Component, Path, PathBuf};

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::Json;
use ferret::index::{DocumentStream, IngestOptions, PathDocuments};
use ferret::{Access, Principal};
use futures::Stream;
use tokio::sync::mpsc::UnboundedSender;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::auth::MayIngest;
use crate::state::{parse, AppState};
use crate::wire::{IngestEvent, IngestPathBody, IngestReply};
use crate::ApiError;

/// `POST /v1/ingest`: add the body's documents and answer with the report.
pub(crate) async fn ingest(
    State(state): State<AppState>,
    request: Request,
) -> Result<Json<IngestReply>, ApiError> {
    may_ingest(&state, &request)?;
    let permit = state.ingest_permit()?;
    let documents = read_documents(&state, request).await?;
    let task = tokio::spawn(async move {
        let _writing = permit;
        write(&state, documents, &mut |_, _| {}).await
    });
    match task.await {
        Ok(outcome) => outcome.map(Json),
        Err(stopped) => Err(ApiError::IngestStopped(stopped.to_string())),
    }
}

/// `POST /v1/ingest/stream`: the same, as Server-Sent Events: `progress` after each batch
/// (`done` of `total` documents), then one final event, `done` with the report or `error`.
pub(crate) async fn ingest_stream(
    State(state): State<AppState>,
    request: Request,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    may_ingest(&state, &request)?;
    let permit = state.ingest_permit()?;
    let documents = read_documents(&state, request).await?;
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _writing = permit;
        let progress_sender = sender.clone();
        let mut progress = |done, total| {
            let _ = progress_sender.send(IngestEvent::Progress { done, total });
        };
        let last = match write(&state, documents, &mut progress).await {
            Ok(reply) => IngestEvent::Done { reply },
            Err(error) => IngestEvent::Error {
                error: error.body().error,
            },
        };
        send_final(&sender, last);
    });
    let events = futures::StreamExt::map(UnboundedReceiverStream::new(receiver), |event| {
        Ok(sse_event(&event))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// With tokens, only those allowed to may ingest (an ingest decides who may read what it
/// adds); checked before the one ingest permit is taken, so a refused request never holds it.
fn may_ingest(state: &AppState, request: &Request) -> Result<(), ApiError> {
    if !state.tokens().is_empty() && request.extensions().get::<MayIngest>().is_none() {
        return Err(ApiError::NotPermitted {
            what: "add documents",
        });
    }
    Ok(())
}

/// Whom the request's ingest writes for: `None` writes anything (an open server, or the
/// operator's token), else the principal, who writes only what they may read.
fn writer_of(request: &Request) -> Option<Access> {
    let may = request.extensions().get::<MayIngest>()?;
    if may.any_document {
        return None;
    }
    request
        .extensions()
        .get::<Principal>()
        .map(|principal| principal.access.clone())
}

fn send_final(sender: &UnboundedSender<IngestEvent>, event: IngestEvent) {
    // A client that went away no longer listens; the ingest has finished anyway.
    let _ = sender.send(event);
}

fn sse_event(event: &IngestEvent) -> SseEvent {
    let name = match event {
        IngestEvent::Progress { .. } => "progress",
        IngestEvent::Done { .. } => "done",
        IngestEvent::Error { .. } => "error",
    };
    let data = serde_json::to_string(event).unwrap_or_else(|e| {
        serde_json::json!({ "event": "error", "error": { "message": e.to_string() } }).to_string()
    });
    SseEvent::default().event(name).data(data)
}

/// Add `documents` to the served index and say what happened.
async fn write(
    state: &AppState,
    documents: DocumentStream,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<IngestReply, ApiError> {
    let ferret = state.ferret();
    // The index's size counts documents a restricted writer may not read: not theirs to learn.
    let restricted = documents.writer().is_some();
    let report = ferret
        .ingest(documents, IngestOptions::default(), progress)
        .await
        .map_err(ApiError::Ingest)?;
    let documents = match ferret.writable_index() {
        Some(index) if !restricted => Some(index.len()),
        _ => None,
    };
    state.metrics().ingest(&report);
    Ok(IngestReply { report, documents })
}

/// The documents the request sends, read by its content type, or the files it names, to be
/// read as the ingest goes.
async fn read_documents(state: &AppState, request: Request) -> Result<DocumentStream, ApiError> {
    if state.ferret().writable_index().is_none() {
        return Err(ApiError::Ingest(ferret::FerretError::NotWritable));
    }
    let acl = default_acl(&request)?;
    let writer = writer_of(&request);
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let max_chunk_chars = IngestOptions::default().max_chunk_chars;
    let mut found = PathDocuments::default();
    let stream = match media.as_str() {
        "application/x-ndjson"
        | "application/jsonl"
        | "application/jsonlines"
        | "application/x-jsonlines" => {
            let body = body_of(request, state).await?;
            found.add_upload("request.jsonl", &body, max_chunk_chars);
            uploaded(found)?
        }
        "multipart/form-data" => {
            let mut form = Multipart::from_request(request, state)
                .await
                .map_err(|rejection| {
                    state.body_refused(rejection.status(), rejection.body_text())
                })?;
            let mut part = 0;
            let mut names = std::collections::HashSet::new();
            while let Some(field) = form
                .next_field()
                .await
                .map_err(|e| state.body_refused(e.status(), e.body_text()))?
            {
                part += 1;
                let Some(name) = field.file_name().map(str::to_owned) else {
                    return Err(ApiError::InvalidIngest(format!(
                        "form part {part} has no file name: send files (`curl -F file=@notes.md`)"
                    )));
                };
                // A name is what a later upload replaces: two files under one name would
                // overwrite each other's chunks.
                if !names.insert(name.clone()) {
                    return Err(ApiError::InvalidIngest(format!(
                        "the form sends two files named `{name}`: give each its own name"
                    )));
                }
                let content = field
                    .bytes()
                    .await
                    .map_err(|e| state.body_refused(e.status(), e.body_text()))?;
                found.add_upload(&name, &content, max_chunk_chars);
            }
            uploaded(found)?
        }
        "application/json" => {
            let body = body_of(request, state).await?;
            let asked: IngestPathBody = parse(&body)?;
            // An empty path would name the whole root: say which file or folder.
            if asked.path.as_os_str().is_empty() {
                return Err(ApiError::InvalidIngest(
                    "`path` is empty: name a file or folder under the ingest root".into(),
                ));
            }
            let path = state.allowed_path(&asked.path)?;
            // Listing the files counts their lines: off the async threads.
            let stream = tokio::task::spawn_blocking(move || {
                ferret::index::stream_path(&path, max_chunk_chars)
            })
            .await
            .map_err(|e| ApiError::IngestStopped(e.to_string()))?
            .map_err(|e| ApiError::PathNotFound {
                path: asked.path.clone(),
                reason: e.to_string(),
            })?;
            if stream.files == 0 && stream.issues.is_empty() {
                return Err(no_documents());
            }
            stream
        }
        _ => {
            return Err(ApiError::UnsupportedMediaType {
                found: content_type,
            })
        }
    };
    let stream = match acl {
        Some(acl) => stream.with_default_acl(&acl),
        None => stream,
    };
    Ok(match writer {
        Some(writer) => stream.written_by(writer),
        None => stream,
    })
}

/// Uploaded files as a stream, or the error for a request that sent nothing to read.
fn uploaded(found: PathDocuments) -> Result<DocumentStream, ApiError> {
    if found.documents.is_empty() && found.issues.is_empty() {
        return Err(no_documents());
    }
    Ok(found.into())
}

fn no_documents() -> ApiError {
    ApiError::InvalidIngest(
        "the request holds no documents: send JSONL records, files, or a path".into(),
    )
}

/// `?acl=a,b`: the groups that may read what the request adds, when a document lists none.
#[derive(serde::Deserialize)]
struct IngestParams {
    acl: Option<String>,
}

/// The default access list the request's query string gives, checked.
fn default_acl(request: &Request) -> Result<Option<Vec<String>>, ApiError> {
    let params = Query::<IngestParams>::try_from_uri(request.uri())
        .map_err(|e| ApiError::InvalidIngest(e.body_text()))?;
    params
        .0
        .acl
        .map(|acl| ferret::index::checked_acl(acl.split(',').map(str::to_owned).collect()))
        .transpose()
        .map_err(|e| ApiError::InvalidIngest(format!("`acl` query parameter: {e}")))
}

/// The whole body of `request`, or why it cannot be read.
async fn body_of(request: Request, state: &AppState) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| state.body_refused(rejection.status(), rejection.body_text()))
}

impl AppState {
    /// `asked`, resolved under the ingest root (a relative path is taken from the root), when
    /// the server allows server-side paths and it stays inside the root.
    fn allowed_path(&self, asked: &Path) -> Result<PathBuf, ApiError> {
        let not_allowed = |reason: String| ApiError::PathNotAllowed {
            path: asked.to_owned(),
            reason,
        };
        let root = self.ingest_root().ok_or_else(|| {
            not_allowed(
                "this server reads no paths of its own: start it with `--ingest-root DIR`, or \
                 send the files in the body"
                    .into(),
            )
        })?;
        let outside = || not_allowed("it is outside the ingest root".into());
        let root = root
            .canonicalize()
            .map_err(|e| not_allowed(format!("the ingest root cannot be read: {e}")))?;
        // Judged from the words of the path before the disk is asked, so that a refusal says
        // nothing of what exists outside the root.
        let relative = match asked.strip_prefix(&root) {
            Ok(inside) => inside,
            Err(_) if asked.is_absolute() => return Err(outside()),
            Err(_) => asked,
        };
        if relative
            .components()
            .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
        {
            return Err(outside());
        }
        let resolved = root
            .join(relative)
            .canonicalize()
            .map_err(|e| ApiError::PathNotFound {
                path: asked.to_owned(),
                reason: e.to_string(),
            })?;
        // A link inside the root may still lead out of it.
        if !resolved.starts_with(&root) {
            return Err(outside());
        }
        Ok(resolved)
    }

    /// The refusal of a body that could not be read: too large, or cut short.
    fn body_refused(&self, status: StatusCode, message: String) -> ApiError {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge {
                limit: self.limits().max_ingest_bytes,
            },
            _ => ApiError::InvalidIngest(message),
        }
    }
}
