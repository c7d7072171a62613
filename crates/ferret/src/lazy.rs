//! A backend that is opened on its first search rather than when the facade is built: the
//! default corpus's first indexing runs on a blocking thread, a Qdrant server is connected to
//! from inside the runtime. A failed opening is the search's backend failure, and the next
//! search tries again.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use ferret_core::{
    Access, BackendCapabilities, BackendError, Hit, QueryForm, SearchBackend, SearchRequest,
};
use tokio::sync::OnceCell;

type Opening = Pin<Box<dyn Future<Output = Result<Arc<dyn SearchBackend>, BackendError>> + Send>>;

/// A backend opened by `open` when first searched.
pub(crate) struct LazyBackend {
    name: String,
    capabilities: BackendCapabilities,
    query_form: QueryForm,
    open: Box<dyn Fn() -> Opening + Send + Sync>,
    opened: OnceCell<Arc<dyn SearchBackend>>,
}

impl LazyBackend {
    /// A backend named `name` that honours `capabilities`, opened by `open`.
    pub(crate) fn new<F, Fut>(
        name: impl Into<String>,
        capabilities: BackendCapabilities,
        open: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn SearchBackend>, BackendError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            capabilities,
            query_form: QueryForm::Keywords,
            open: Box::new(move || Box::pin(open())),
            opened: OnceCell::new(),
        }
    }
}

impl LazyBackend {
    /// The backend, once opened, searches with `form` (keywords unless said).
    pub(crate) fn with_query_form(mut self, form: QueryForm) -> Self {
        self.query_form = form;
        self
    }
}

#[async_trait]
impl SearchBackend for LazyBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        self.capabilities
    }

    fn query_form(&self) -> QueryForm {
        self.query_form
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let backend = self.opened.get_or_try_init(|| (self.open)()).await?;
        backend.search(request).await
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        let backend = self.opened.get_or_try_init(|| (self.open)()).await?;
        backend.readable(ids, access).await
    }
}
