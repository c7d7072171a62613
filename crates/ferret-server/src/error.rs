use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use ferret::jobs::search::QueryError;
use ferret::FerretError;

use crate::wire::{ErrorBody, ErrorDetail};

/// Why the server refused or could not answer a request. Each becomes a status code and an
/// [`ErrorBody`]: the kind, a sentence, the field at fault and whether a retry can help.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The body is not JSON of the expected shape (a syntax error, a wrong type, an unknown
    /// field).
    #[error("the request body is not valid: {message}")]
    InvalidJson {
        /// The path of the field at fault, when the body parsed that far.
        field: Option<String>,
        /// What the parser found.
        message: String,
    },
    /// The body parsed but asks for something the library refuses (an empty question, a limit
    /// out of range, a date range that ends before it starts).
    #[error(transparent)]
    InvalidQuery(#[from] QueryError),
    /// A chat message the library refuses as a question (empty, or too long).
    #[error("the message is not a question Ferret can search: {0}")]
    InvalidMessage(QueryError),
    /// The request carries no token the server takes.
    #[error("a valid bearer token is needed: send `Authorization: Bearer <token>`")]
    Unauthorized,
    /// The principal has made as many requests this minute as their quota allows.
    #[error("the quota of requests a minute is spent; retry in {retry_after_secs} s")]
    QuotaExceeded {
        /// Seconds to wait before retrying.
        retry_after_secs: u64,
    },
    /// The thread does not exist for this principal: with tokens, a thread is one the server
    /// started for them (another's, or an id made up, is not theirs to see).
    #[error("no such thread: start one with `POST /v1/chat` without `thread_id`")]
    ThreadNotFound,
    /// The principal's token does not allow this route.
    #[error("this token may not {what}")]
    NotPermitted {
        /// What it may not do.
        what: &'static str,
    },
    /// The request's `Host` is not one this server answers to (DNS rebinding, or a name the
    /// server was not told of).
    #[error("this server does not answer to that host name: start it with `--allowed-host NAME` to accept it")]
    HostNotAllowed,
    /// The request comes from a page of another web site (its `Origin` is not the server's own
    /// or a configured one).
    #[error("requests from other web sites are refused: call the API from a program, or start the server with `--allowed-origin URL`")]
    ForeignOrigin,
    /// No route has this path.
    #[error("no route {path}: see GET /openapi.json")]
    RouteNotFound {
        /// The path asked for.
        path: String,
    },
    /// The route does not take this method.
    #[error("{path} does not take {method}: see GET /openapi.json")]
    MethodNotAllowed {
        /// The method sent.
        method: String,
        /// The path asked for.
        path: String,
    },
    /// A JSON body sent without `Content-Type: application/json`.
    #[error("send the body as JSON with `Content-Type: application/json` (got `{found}`)")]
    NotJson {
        /// The content type sent, or `none`.
        found: String,
    },
    /// A model-file request the finder refuses: a workflow that is not one, a file name that
    /// is a path, a hash that is not a SHA-256, or neither a workflow nor a file.
    #[error("{message}")]
    InvalidModelRequest {
        /// The field at fault.
        field: &'static str,
        /// What is wrong, and what is expected.
        message: String,
    },
    /// A string field longer than the server takes.
    #[error("`{field}` is over {limit} characters")]
    FieldTooLong {
        /// The field's path.
        field: String,
        /// The most it may hold.
        limit: usize,
    },
    /// The body is larger than the server accepts.
    #[error("the request body is over {limit} bytes: send less")]
    BodyTooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// As many searches as the server runs at once are running.
    #[error("the server is busy: {running} searches are running; retry in {retry_after_secs} s")]
    Overloaded {
        /// Searches running.
        running: usize,
        /// Seconds to wait before retrying.
        retry_after_secs: u64,
    },
    /// An ingest is running; one more would hold another body in memory while it waits.
    #[error("an ingest is running; retry in {retry_after_secs} s")]
    IngestBusy {
        /// Seconds to wait before retrying.
        retry_after_secs: u64,
    },
    /// The search ran past the server's deadline and was stopped.
    #[error("the search ran over {secs} s and was stopped: ask for less (a smaller budget)")]
    DeadlineExceeded {
        /// The deadline, in seconds.
        secs: u64,
    },
    /// The search could not start.
    #[error(transparent)]
    Search(FerretError),
    /// An ingest body in a form the server does not read.
    #[error("cannot ingest a body of type `{found}`: send `application/x-ndjson` (JSONL records), `multipart/form-data` (files) or `application/json` (`{{\"path\": ...}}`)")]
    UnsupportedMediaType {
        /// The content type sent.
        found: String,
    },
    /// An ingest body that holds nothing to ingest, or a form that cannot be read.
    #[error("the ingest body is not valid: {0}")]
    InvalidIngest(String),
    /// A path the server may not read.
    #[error("the server may not read {path}: {reason}")]
    PathNotAllowed {
        /// The path asked for.
        path: std::path::PathBuf,
        /// Why not.
        reason: String,
    },
    /// A path that does not exist on the server.
    #[error("cannot read {path} on the server: {reason}")]
    PathNotFound {
        /// The path asked for.
        path: std::path::PathBuf,
        /// What the file system said.
        reason: String,
    },
    /// The documents could not be added (no embedded index, or the index failed).
    #[error(transparent)]
    Ingest(FerretError),
    /// The ingest task stopped before it finished.
    #[error("the ingest stopped: {0}")]
    IngestStopped(String),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            Self::InvalidJson { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::QuotaExceeded { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::ThreadNotFound => StatusCode::NOT_FOUND,
            Self::NotPermitted { .. } => StatusCode::FORBIDDEN,
            Self::InvalidQuery(QueryError::TooLong { .. })
            | Self::InvalidMessage(QueryError::TooLong { .. })
            | Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidQuery(_) | Self::InvalidMessage(_) => StatusCode::BAD_REQUEST,
            Self::Overloaded { .. } | Self::IngestBusy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::DeadlineExceeded { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::Search(
                FerretError::Query(_)
                | FerretError::Budget(_)
                | FerretError::Config(_)
                | FerretError::FileRequest(_),
            ) => StatusCode::BAD_REQUEST,
            Self::Search(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::InvalidIngest(_) | Self::InvalidModelRequest { .. } => StatusCode::BAD_REQUEST,
            Self::PathNotAllowed { .. } => StatusCode::FORBIDDEN,
            Self::PathNotFound { .. } => StatusCode::NOT_FOUND,
            Self::Ingest(FerretError::NotWritable) => StatusCode::CONFLICT,
            Self::Ingest(_) | Self::IngestStopped(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::HostNotAllowed | Self::ForeignOrigin => StatusCode::FORBIDDEN,
            Self::RouteNotFound { .. } => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotJson { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::FieldTooLong { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    /// Can the same request succeed later? Yes when the server was busy, out of time or
    /// failed itself, or the quota is spent (the response then says when, in `Retry-After`);
    /// no for a request that must change first.
    fn retryable(&self) -> bool {
        let status = self.status();
        status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::InvalidJson { .. } => "invalid_json",
            Self::Unauthorized => "unauthorized",
            Self::QuotaExceeded { .. } => "quota_exceeded",
            Self::ThreadNotFound => "not_found",
            Self::NotPermitted { .. } => "forbidden",
            Self::InvalidQuery(QueryError::TooLong { .. })
            | Self::InvalidMessage(QueryError::TooLong { .. })
            | Self::BodyTooLarge { .. } => "too_large",
            Self::InvalidQuery(_) | Self::InvalidMessage(_) => "invalid_request",
            Self::Overloaded { .. } | Self::IngestBusy { .. } => "overloaded",
            Self::DeadlineExceeded { .. } => "deadline_exceeded",
            Self::Search(_) => "search_failed",
            Self::UnsupportedMediaType { .. } => "unsupported_media_type",
            Self::InvalidIngest(_) | Self::InvalidModelRequest { .. } => "invalid_request",
            Self::PathNotAllowed { .. } => "forbidden",
            Self::PathNotFound { .. } => "not_found",
            Self::Ingest(FerretError::NotWritable) => "not_writable",
            Self::Ingest(_) | Self::IngestStopped(_) => "ingest_failed",
            Self::HostNotAllowed | Self::ForeignOrigin => "forbidden",
            Self::RouteNotFound { .. } => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::NotJson { .. } => "unsupported_media_type",
            Self::FieldTooLong { .. } => "too_large",
        }
    }

    fn field(&self) -> Option<String> {
        match self {
            Self::InvalidJson { field, .. } => field.clone(),
            Self::InvalidQuery(QueryError::InvalidField { field, .. }) => {
                Some(wire_field(field).to_owned())
            }
            Self::InvalidQuery(QueryError::Empty | QueryError::TooLong { .. }) => {
                Some("query".to_owned())
            }
            Self::InvalidMessage(_) => Some("message".to_owned()),
            Self::PathNotAllowed { .. } | Self::PathNotFound { .. } => Some("path".to_owned()),
            Self::ThreadNotFound => Some("thread_id".to_owned()),
            Self::FieldTooLong { field, .. } => Some(field.clone()),
            Self::InvalidModelRequest { field, .. } => Some((*field).to_owned()),
            _ => None,
        }
    }

    /// The body of this refusal.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                kind: self.kind().to_owned(),
                message: self.to_string(),
                field: self.field(),
                retryable: self.retryable(),
            },
        }
    }
}

/// Where a library field sits in the request body.
fn wire_field(library_field: &str) -> &str {
    match library_field {
        "limit" => "options.limit",
        "date_range" => "options.filters.date_range",
        "most_recent" => "options.filters.most_recent",
        "options" => "options.web",
        "budget" => "options.budget",
        other => other,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = match self {
            Self::Overloaded {
                retry_after_secs, ..
            }
            | Self::IngestBusy { retry_after_secs }
            | Self::QuotaExceeded { retry_after_secs } => Some(retry_after_secs),
            _ => None,
        };
        if status.is_server_error() && retry_after.is_none() {
            tracing::error!(error = %self, "request failed");
        }
        let unauthorized = matches!(self, Self::Unauthorized);
        let mut response = (status, Json(self.body())).into_response();
        if unauthorized {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(retry_after_secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response
    }
}
