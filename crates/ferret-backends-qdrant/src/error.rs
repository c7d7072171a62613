use std::path::PathBuf;
use std::time::Duration;

use ferret_core::{EmbedError, RetrievalMode, RetryClass};
use qdrant_client::QdrantError as ClientError;
use secrecy::SecretString;

/// Where the collection lives and how long to wait for the server.
#[derive(Debug, Clone)]
pub struct QdrantConfig {
    /// The server's gRPC address, such as `http://localhost:6334`.
    pub url: String,
    /// The collection's name.
    pub collection: String,
    /// The API key, when the server asks for one.
    pub api_key: Option<SecretString>,
    /// Longest wait for any one server call, connecting included.
    pub timeout: Duration,
}

impl QdrantConfig {
    /// The collection `collection` on the server at `url`, without an API key, with a 10 s timeout.
    pub fn new(url: impl Into<String>, collection: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            collection: collection.into(),
            api_key: None,
            timeout: Duration::from_secs(10),
        }
    }

    /// Send `key` with every call.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(SecretString::from(key.into()));
        self
    }
}

/// Why the collection could not be reached, opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QdrantError {
    /// No answer from the server, or not a gRPC one.
    #[error("cannot reach Qdrant at {url}: {reason}. Is Qdrant running there? Ferret speaks gRPC: give the gRPC port (6334 by default), e.g. http://localhost:6334")]
    Unreachable {
        /// The address tried.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The server holds no collection of that name.
    #[error("the Qdrant server at {url} has no collection `{collection}`; create it with `ferret ingest <files> --qdrant-url {url}`")]
    MissingCollection {
        /// The collection asked for.
        collection: String,
        /// The server.
        url: String,
    },
    /// The embedder's vectors do not fit the collection: nothing was written.
    #[error("the Qdrant collection `{collection}` holds {index_dimension}-dimensional vectors from `{index_embedder}`, but the embedder `{embedder}` makes {embedder_dimension}-dimensional ones: use the collection's embedder or ingest into a new collection")]
    EmbedderMismatch {
        /// The collection.
        collection: String,
        /// The embedder the collection was built with.
        index_embedder: String,
        /// Its dimension.
        index_dimension: usize,
        /// The embedder offered.
        embedder: String,
        /// Its dimension.
        embedder_dimension: usize,
    },
    /// A dense or hybrid search, or an embedder, was asked of a collection without dense vectors.
    #[error("the Qdrant collection `{collection}` has no dense vectors (it was built for BM25 only): ingest into a new collection with an embedder for {mode} search")]
    NoDenseVectors {
        /// The collection.
        collection: String,
        /// The mode asked for.
        mode: RetrievalMode,
    },
    /// Dense or hybrid search, or an ingest, on a collection opened without its embedder.
    #[error("{mode} search needs the embedder `{embedder}` the Qdrant collection `{collection}` was built with; open it with that embedder")]
    EmbedderNeeded {
        /// The collection.
        collection: String,
        /// The mode asked for.
        mode: RetrievalMode,
        /// The embedder the collection was built with.
        embedder: String,
    },
    /// The collection exists but was not made by this version of Ferret.
    #[error(
        "the Qdrant collection `{collection}` cannot be used as a Ferret collection: {reason}"
    )]
    IncompatibleSchema {
        /// The collection.
        collection: String,
        /// What does not fit.
        reason: String,
    },
    /// Embedding failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// An input file could not be read.
    #[error("cannot read {path}: {source}")]
    Input {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The server refused or failed a call.
    #[error("Qdrant at {url} failed: {message}")]
    Server {
        /// The server.
        url: String,
        /// What it said.
        message: String,
        /// Whether and when to retry.
        retry: RetryClass,
    },
}

/// gRPC status codes, by their numbers in the gRPC spec: `qdrant-client` does not re-export tonic.
mod grpc {
    pub(super) const CANCELLED: i32 = 1;
    pub(super) const UNKNOWN: i32 = 2;
    pub(super) const DEADLINE_EXCEEDED: i32 = 4;
    pub(super) const NOT_FOUND: i32 = 5;
    pub(super) const ALREADY_EXISTS: i32 = 6;
    pub(super) const PERMISSION_DENIED: i32 = 7;
    pub(super) const RESOURCE_EXHAUSTED: i32 = 8;
    pub(super) const ABORTED: i32 = 10;
    pub(super) const INTERNAL: i32 = 13;
    pub(super) const UNAVAILABLE: i32 = 14;
    pub(super) const DATA_LOSS: i32 = 15;
    pub(super) const UNAUTHENTICATED: i32 = 16;
}

/// A server call that failed or ran out of time, before it is given its context.
#[derive(Debug)]
pub(crate) enum CallError {
    TimedOut(Duration),
    Client(ClientError),
}

impl CallError {
    fn code(&self) -> Option<i32> {
        match self {
            Self::Client(
                ClientError::ResponseError { status }
                | ClientError::ResourceExhaustedError { status, .. },
            ) => Some(i32::from(status.code())),
            _ => None,
        }
    }

    /// The server says the collection (or what was asked of it) does not exist.
    pub(crate) fn is_not_found(&self) -> bool {
        self.code() == Some(grpc::NOT_FOUND)
    }

    /// The server says what was to be created exists already.
    pub(crate) fn is_already_exists(&self) -> bool {
        self.code() == Some(grpc::ALREADY_EXISTS)
    }

    /// Whether trying the same call again may help: timeouts, dropped connections and the server's
    /// internal errors (gRPC's 5xx) may pass; a refused request will not.
    pub(crate) fn retry(&self) -> RetryClass {
        match self {
            Self::TimedOut(_) => RetryClass::Transient,
            Self::Client(ClientError::ResourceExhaustedError {
                retry_after_seconds,
                ..
            }) => RetryClass::RateLimited {
                retry_after: Some(Duration::from_secs(*retry_after_seconds)),
            },
            Self::Client(ClientError::Io(_)) => RetryClass::Transient,
            _ => match self.code() {
                Some(grpc::RESOURCE_EXHAUSTED) => RetryClass::RateLimited { retry_after: None },
                Some(
                    grpc::CANCELLED
                    | grpc::UNKNOWN
                    | grpc::DEADLINE_EXCEEDED
                    | grpc::ABORTED
                    | grpc::INTERNAL
                    | grpc::UNAVAILABLE
                    | grpc::DATA_LOSS,
                ) => RetryClass::Transient,
                _ => RetryClass::Permanent,
            },
        }
    }

    fn message(&self) -> String {
        match self {
            Self::TimedOut(timeout) => format!("no answer within {}", seconds(*timeout)),
            Self::Client(
                ClientError::ResponseError { status }
                | ClientError::ResourceExhaustedError { status, .. },
            ) => connect_failure(status.message()).unwrap_or_else(|| status.message().to_owned()),
            Self::Client(other) => other.to_string(),
        }
    }

    /// The error for a call on an open collection.
    pub(crate) fn into_error(self, url: &str, collection: &str) -> QdrantError {
        if self.is_not_found() {
            return QdrantError::MissingCollection {
                collection: collection.to_owned(),
                url: url.to_owned(),
            };
        }
        QdrantError::Server {
            url: url.to_owned(),
            retry: self.retry(),
            message: self.message(),
        }
    }

    /// The error for the first call to a server: unless the server refused our credentials, it
    /// did not answer as a Qdrant gRPC server would (down, wrong host, REST port, no answer).
    pub(crate) fn into_connect_error(self, url: &str, collection: &str) -> QdrantError {
        if matches!(
            self.code(),
            Some(grpc::UNAUTHENTICATED | grpc::PERMISSION_DENIED)
        ) {
            return self.into_error(url, collection);
        }
        QdrantError::Unreachable {
            url: url.to_owned(),
            reason: self.message(),
        }
    }
}

/// The operating system's words from the client's debug dump of a failed connection, such as
/// `Connection refused`; `None` when the message is not one of those.
fn connect_failure(message: &str) -> Option<String> {
    if !message.starts_with("Failed to connect to") {
        return None;
    }
    let start = message.rfind("message: \"")? + "message: \"".len();
    let end = start + message[start..].find('"')?;
    Some(format!("connection failed: {}", &message[start..end]))
}

/// `10 s`, `2.5 s`, `300 ms`.
pub(crate) fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_connection_reads_as_the_operating_systems_words() {
        let dump = r#"Failed to connect to http://127.0.0.1:1/: tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", 127.0.0.1:1, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" })))"#;
        assert_eq!(
            connect_failure(dump).as_deref(),
            Some("connection failed: Connection refused")
        );
        assert_eq!(
            connect_failure("Failed to connect to http://x/: dns error"),
            None,
            "no OS words: the raw message is kept"
        );
        assert_eq!(connect_failure("collection not found"), None);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(seconds(Duration::from_millis(300)), "300 ms");
    }
}
