use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, Hit, QueryForm, RetrievalMode,
    RetryClass, SearchBackend, SearchRequest,
};

use crate::{QdrantError, QdrantIndex};

/// [`QdrantIndex`] as a [`SearchBackend`], ranking with one [`RetrievalMode`].
#[derive(Debug, Clone)]
pub struct QdrantBackend {
    name: String,
    index: Arc<QdrantIndex>,
    mode: RetrievalMode,
}

impl QdrantBackend {
    /// Serve `index` under `name`, ranking with `mode`, if the collection as opened supports it.
    pub fn new(
        name: impl Into<String>,
        index: Arc<QdrantIndex>,
        mode: RetrievalMode,
    ) -> Result<Self, QdrantError> {
        index.supports(mode)?;
        Ok(Self {
            name: name.into(),
            index,
            mode,
        })
    }

    /// The collection behind the backend.
    pub fn index(&self) -> &Arc<QdrantIndex> {
        &self.index
    }

    /// How the backend ranks.
    pub fn mode(&self) -> RetrievalMode {
        self.mode
    }
}

/// `error` as the failure of backend `backend`, as the executor sees it: whether a retry can
/// help decides what it does next.
pub fn backend_error(backend: &str, error: QdrantError) -> BackendError {
    let message = error.to_string();
    match error {
        QdrantError::Unreachable { .. } => {
            BackendError::transient(backend, BackendErrorKind::Unavailable, message)
        }
        QdrantError::Server { retry, .. } => {
            let kind = match retry {
                RetryClass::RateLimited { .. } => BackendErrorKind::RateLimited,
                RetryClass::Transient => BackendErrorKind::Unavailable,
                _ => BackendErrorKind::Internal,
            };
            BackendError {
                backend: backend.to_owned(),
                kind,
                message,
                retry,
            }
        }
        QdrantError::Embed(e) => {
            let kind = if e.retry.is_retryable() {
                BackendErrorKind::Unavailable
            } else {
                BackendErrorKind::Internal
            };
            BackendError {
                backend: backend.to_owned(),
                kind,
                message,
                retry: e.retry,
            }
        }
        QdrantError::MissingCollection { .. } | QdrantError::IncompatibleSchema { .. } => {
            BackendError::permanent(backend, BackendErrorKind::Unavailable, message)
        }
        QdrantError::NoDenseVectors { .. } | QdrantError::EmbedderNeeded { .. } => {
            BackendError::permanent(backend, BackendErrorKind::InvalidRequest, message)
        }
        QdrantError::EmbedderMismatch { .. } | QdrantError::Input { .. } => {
            BackendError::permanent(backend, BackendErrorKind::Internal, message)
        }
    }
}

#[async_trait]
impl SearchBackend for QdrantBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        ferret_collection::STORE_CAPABILITIES
    }

    fn query_form(&self) -> QueryForm {
        self.mode.query_form()
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        self.index
            .search(request, self.mode, &self.name)
            .await
            .map_err(|e| backend_error(&self.name, e))
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        self.index
            .readable(ids, access)
            .await
            .map(Some)
            .map_err(|e| backend_error(&self.name, e))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::CallError;

    #[test]
    fn failures_map_to_the_retry_class_the_executor_acts_on() {
        let url = "http://127.0.0.1:6334";
        let server = |retry| QdrantError::Server {
            url: url.into(),
            message: "boom".into(),
            retry,
        };
        let cases = [
            (
                QdrantError::Unreachable {
                    url: url.into(),
                    reason: "refused".into(),
                },
                BackendErrorKind::Unavailable,
                RetryClass::Transient,
            ),
            (
                CallError::TimedOut(Duration::from_secs(2)).into_error(url, "c"),
                BackendErrorKind::Unavailable,
                RetryClass::Transient,
            ),
            (
                server(RetryClass::Transient),
                BackendErrorKind::Unavailable,
                RetryClass::Transient,
            ),
            (
                server(RetryClass::RateLimited { retry_after: None }),
                BackendErrorKind::RateLimited,
                RetryClass::RateLimited { retry_after: None },
            ),
            (
                server(RetryClass::Permanent),
                BackendErrorKind::Internal,
                RetryClass::Permanent,
            ),
            (
                QdrantError::MissingCollection {
                    collection: "c".into(),
                    url: url.into(),
                },
                BackendErrorKind::Unavailable,
                RetryClass::Permanent,
            ),
            (
                QdrantError::IncompatibleSchema {
                    collection: "c".into(),
                    reason: "r".into(),
                },
                BackendErrorKind::Unavailable,
                RetryClass::Permanent,
            ),
            (
                QdrantError::Embed(ferret_core::EmbedError {
                    message: "503".into(),
                    retry: RetryClass::Transient,
                }),
                BackendErrorKind::Unavailable,
                RetryClass::Transient,
            ),
        ];
        for (error, kind, retry) in cases {
            let text = error.to_string();
            let mapped = backend_error("qdrant", error);
            assert_eq!((&mapped.kind, mapped.retry), (&kind, retry), "{text}");
            assert_eq!(mapped.backend, "qdrant");
            assert_eq!(mapped.message, text);
        }
    }

    #[test]
    fn a_timeout_while_connecting_is_unreachable_and_names_the_url_and_the_grpc_port() {
        let error = CallError::TimedOut(Duration::from_millis(1500))
            .into_connect_error("http://qdrant.test:6333", "c");
        let text = error.to_string();
        assert!(matches!(error, QdrantError::Unreachable { .. }), "{text}");
        assert!(
            text.contains("http://qdrant.test:6333")
                && text.contains("6334")
                && text.contains("1.5 s"),
            "{text}"
        );
    }
}
