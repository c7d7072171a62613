use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{BudgetError, QueryError};

/// Whether trying the same call again can help, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "class")]
#[non_exhaustive]
pub enum RetryClass {
    /// A timeout, a 5xx, a dropped connection: the same call may succeed later.
    Transient,
    /// Bad input, a missing index, an exhausted quota: retrying cannot help.
    Permanent,
    /// The service asked us to slow down; retry no sooner than `retry_after`.
    RateLimited {
        /// How long the service asked us to wait, when it said.
        #[serde(default, with = "opt_millis", skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
        retry_after: Option<Duration>,
    },
    /// The prompt does not fit the model: retry only with less context.
    ContextTooLong,
}

impl RetryClass {
    /// True when the same call, unchanged, may succeed if tried again.
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::Transient | Self::RateLimited { .. })
    }

    /// A rate limit, waiting as long as a `Retry-After` header says, when it says it in seconds
    /// (`"2"`, `"1.5"`); HTTP dates are not worth the dependency for the services we speak to,
    /// which send seconds.
    pub fn rate_limited(retry_after_header: Option<&str>) -> Self {
        let retry_after = retry_after_header.and_then(|value| {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
                .map(Duration::from_secs_f64)
        });
        Self::RateLimited { retry_after }
    }
}

/// What went wrong inside a backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// The call ran past its deadline.
    DeadlineExceeded,
    /// The backend's store could not be opened or read.
    Unavailable,
    /// The backend refused the request (bad filter, unsupported option).
    InvalidRequest,
    /// The backend said to slow down.
    RateLimited,
    /// The backend refused the credentials: a key missing, wrong or without access.
    Unauthorized,
    /// The account's plan or credits are used up.
    QuotaExhausted,
    /// The backend's answer could not be read: cut short, or not the JSON it documents.
    MalformedResponse,
    /// Anything else the backend reported.
    Internal,
}

/// A backend call that failed. Carries the backend's name and whether a retry can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("backend `{backend}` failed ({kind:?}): {message}")]
pub struct BackendError {
    /// The backend's name.
    pub backend: String,
    /// The category of failure.
    pub kind: BackendErrorKind,
    /// What happened, for people.
    pub message: String,
    /// Whether and when to retry.
    pub retry: RetryClass,
}

impl BackendError {
    /// A failure retrying cannot fix.
    pub fn permanent(
        backend: impl Into<String>,
        kind: BackendErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            backend: backend.into(),
            kind,
            message: message.into(),
            retry: RetryClass::Permanent,
        }
    }

    /// A failure that may pass if the call is tried again.
    pub fn transient(
        backend: impl Into<String>,
        kind: BackendErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            backend: backend.into(),
            kind,
            message: message.into(),
            retry: RetryClass::Transient,
        }
    }

    /// The call ran past `deadline`.
    pub fn deadline(backend: impl Into<String>, deadline: Duration) -> Self {
        Self::transient(
            backend,
            BackendErrorKind::DeadlineExceeded,
            format!("no answer within the {} ms deadline", deadline.as_millis()),
        )
    }
}

/// Errors a whole search can end in. Partial failures are not errors: they are listed in
/// [`Response::failures`](crate::Response::failures).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FerretError {
    /// The question was refused before any search ran.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The budget allows no search at all.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// A model file to find was refused before any search ran (an empty or path-like name, a
    /// malformed hash).
    #[error(transparent)]
    FileRequest(#[from] crate::FileRequestError),
    /// The configuration is incomplete or contradictory.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An index directory is missing or unreadable.
    #[error("cannot open the index at {path}: {reason}")]
    Index {
        /// The directory that was asked for.
        path: PathBuf,
        /// What went wrong, with a hint.
        reason: String,
    },
    /// Documents were sent to a Ferret with no embedded index of its own to add them to.
    #[error("there is no embedded index to add documents to: open one with `--index DIR` (created by `ferret ingest FILES --index DIR`); the built-in corpus is read-only, and a Qdrant collection takes documents from any process (`ferret ingest FILES --qdrant-url URL`)")]
    NotWritable,
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// What Ferret was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl FerretError {
    /// Whether running the same search again may succeed.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Self::Io { .. } => RetryClass::Transient,
            _ => RetryClass::Permanent,
        }
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|ms| ms.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_classes_say_whether_a_retry_helps() {
        let table = [
            (RetryClass::Transient, true),
            (
                RetryClass::RateLimited {
                    retry_after: Some(Duration::from_secs(2)),
                },
                true,
            ),
            (RetryClass::Permanent, false),
            (RetryClass::ContextTooLong, false),
        ];
        for (class, retryable) in table {
            assert_eq!(class.is_retryable(), retryable, "{class:?}");
        }
    }
}
