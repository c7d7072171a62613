//! The embedded index as a search backend.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, Hit, QueryForm, RetrievalMode,
    SearchBackend, SearchRequest,
};

use crate::error::IndexError;
use crate::index::LocalIndex;

/// [`LocalIndex`] as a [`SearchBackend`]: keyword searches run on the calling task, dense and
/// hybrid ones on the blocking thread pool.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    name: String,
    index: Arc<LocalIndex>,
    mode: RetrievalMode,
}

impl LocalBackend {
    /// Serve `index` under `name` with BM25.
    pub fn new(name: impl Into<String>, index: Arc<LocalIndex>) -> Self {
        Self {
            name: name.into(),
            index,
            mode: RetrievalMode::Bm25,
        }
    }

    /// Search with `mode`, if the index as opened supports it.
    pub fn with_mode(mut self, mode: RetrievalMode) -> Result<Self, IndexError> {
        self.index.supports(mode)?;
        self.mode = mode;
        Ok(self)
    }

    /// The index behind the backend.
    pub fn index(&self) -> &Arc<LocalIndex> {
        &self.index
    }

    /// How the backend ranks.
    pub fn mode(&self) -> RetrievalMode {
        self.mode
    }

    fn backend_error(&self, error: IndexError) -> BackendError {
        match error {
            IndexError::Embed(e) if e.retry.is_retryable() => {
                BackendError::transient(&self.name, BackendErrorKind::Unavailable, e.to_string())
            }
            IndexError::Missing { .. }
            | IndexError::Unreadable { .. }
            | IndexError::Format { .. } => BackendError::permanent(
                &self.name,
                BackendErrorKind::Unavailable,
                error.to_string(),
            ),
            other => {
                BackendError::permanent(&self.name, BackendErrorKind::Internal, other.to_string())
            }
        }
    }
}

#[async_trait]
impl SearchBackend for LocalBackend {
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
        let query_vector = match request.filters.most_recent {
            Some(_) => None,
            None => self
                .index
                .embed_query(&request.query, self.mode)
                .await
                .map_err(|e| self.backend_error(e))?,
        };
        // A keyword search is an inverted-index lookup, a fraction of a millisecond at the
        // sizes measured (`cargo xtask bench --bm25`), of which a hop to the blocking pool
        // would be a quarter: it runs here, unless a write holds the index or the ids must be
        // read first. A dense or hybrid search may scan every vector, so it leaves the async
        // worker free.
        if self.mode == RetrievalMode::Bm25
            && self.index.answers_at_once(request)
            && !self.index.is_being_written()
        {
            return self
                .index
                .search_blocking(request, self.mode, query_vector.as_deref(), &self.name)
                .map_err(|e| self.backend_error(e));
        }
        let (index, request, name, mode) = (
            Arc::clone(&self.index),
            request.clone(),
            self.name.clone(),
            self.mode,
        );
        tokio::task::spawn_blocking(move || {
            index.search_blocking(&request, mode, query_vector.as_deref(), &name)
        })
        .await
        // A panic in the engine is deterministic for the same request: retrying cannot help.
        .map_err(|e| {
            BackendError::permanent(
                &self.name,
                BackendErrorKind::Internal,
                format!("search task failed: {e}"),
            )
        })?
        .map_err(|e| self.backend_error(e))
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        let (index, ids, access) = (Arc::clone(&self.index), ids.to_vec(), access.clone());
        // A lookup by id is quick, but a write may hold the index: off the async workers.
        tokio::task::spawn_blocking(move || index.readable(&ids, &access))
            .await
            .map_err(|e| {
                BackendError::permanent(
                    &self.name,
                    BackendErrorKind::Internal,
                    format!("access check failed: {e}"),
                )
            })?
            .map(Some)
            .map_err(|e| self.backend_error(e))
    }
}
