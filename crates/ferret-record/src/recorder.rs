//! Wrappers that pass each call through and keep it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use ferret_core::{
    Access, BackendCapabilities, BackendError, CallRate, Completion, CompletionRequest, EmbedError,
    Embedder, Hit, LanguageModel, LlmError, PaidCost, Query, QueryForm, Response, SearchBackend,
    SearchRequest, Strategy, TextSink,
};

use crate::format::{
    BackendOutcome, BackendProfile, EmbedOutcome, EmbedderProfile, Exchange, ModelOutcome,
    ModelProfile, RecordedCase, Recording, World,
};

/// Keeps every exchange of the parts it wraps. Wrap the parts once, when the searcher is
/// built; [`Recorder::clear`] before a search and [`Recorder::take`] after it give that
/// search's [`Recording`]. One search at a time, or their exchanges mix.
#[derive(Clone, Default)]
pub struct Recorder {
    log: Arc<Mutex<Log>>,
}

#[derive(Default)]
struct Log {
    world: World,
    exchanges: Vec<Exchange>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let log = self.lock();
        f.debug_struct("Recorder")
            .field("backends", &log.world.backends.len())
            .field("exchanges", &log.exchanges.len())
            .finish()
    }
}

impl Recorder {
    /// A recorder with nothing wrapped yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panic while pushing one exchange leaves the others intact.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn keep(&self, exchange: Exchange) {
        self.lock().exchanges.push(exchange);
    }

    /// Keeps `abandoned` if the call is dropped before [`Pending::end`] says how it ended.
    fn pending(&self, abandoned: Exchange) -> Pending<'_> {
        Pending {
            recorder: self,
            exchange: Some(abandoned),
        }
    }

    /// `backend`, its searches kept.
    pub fn backend(&self, backend: Arc<dyn SearchBackend>) -> Arc<dyn SearchBackend> {
        self.lock().world.backends.push(BackendProfile {
            name: backend.name().to_owned(),
            capabilities: backend.capabilities(),
            query_form: backend.query_form(),
        });
        Arc::new(RecordedBackend {
            inner: backend,
            recorder: self.clone(),
        })
    }

    /// `model`, its completions kept.
    pub fn model(&self, model: Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> {
        self.lock().world.model = Some(ModelProfile {
            name: model.name().to_owned(),
            writes_answers: model.writes_answers(),
        });
        Arc::new(RecordedModel {
            inner: model,
            recorder: self.clone(),
        })
    }

    /// `embedder`, its vectors kept.
    pub fn embedder(&self, embedder: Arc<dyn Embedder>) -> Arc<dyn Embedder> {
        self.lock().world.embedder = Some(EmbedderProfile {
            name: embedder.name().to_owned(),
            dimension: embedder.dimension(),
        });
        Arc::new(RecordedEmbedder {
            inner: embedder,
            recorder: self.clone(),
        })
    }

    /// Forget the exchanges kept so far (those of earlier searches).
    pub fn clear(&self) {
        self.lock().exchanges.clear();
    }

    /// The search just run, as a recording: its exchanges are taken out of the recorder, which
    /// keeps the wrapped parts for the next search.
    pub fn take(&self, query: &Query, strategy: Strategy, response: &Response) -> Recording {
        let mut log = self.lock();
        let exchanges = std::mem::take(&mut log.exchanges);
        // Through text, as `save` writes it, so a recording compares the same before and after
        // it is saved.
        let response = serde_json::to_string(response)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        Recording {
            case: RecordedCase {
                query: query.clone(),
                strategy,
                recorded: log.world.clone(),
            },
            exchanges,
            response,
        }
    }
}

struct RecordedBackend {
    inner: Arc<dyn SearchBackend>,
    recorder: Recorder,
}

#[async_trait]
impl SearchBackend for RecordedBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn call_rate(&self) -> Option<CallRate> {
        self.inner.call_rate()
    }

    fn capabilities(&self) -> BackendCapabilities {
        self.inner.capabilities()
    }

    fn query_form(&self) -> QueryForm {
        self.inner.query_form()
    }

    fn cost(&self, request: &SearchRequest) -> Option<PaidCost> {
        let cost = self.inner.cost(request)?;
        self.recorder.keep(Exchange::Cost {
            backend: self.inner.name().to_owned(),
            request: request.clone(),
            cost,
        });
        Some(cost)
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let exchange = |outcome| Exchange::Backend {
            backend: self.inner.name().to_owned(),
            request: request.clone(),
            cost: self.inner.cost(request),
            outcome,
        };
        let pending = self.recorder.pending(exchange(BackendOutcome::Abandoned));
        let result = self.inner.search(request).await;
        pending.end(|exchange| {
            if let Exchange::Backend { outcome, .. } = exchange {
                *outcome = match &result {
                    Ok(hits) => BackendOutcome::Hits(hits.clone()),
                    Err(error) => BackendOutcome::Error(error.clone()),
                };
            }
        });
        result
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        // Asked of the live backend only: a replay answers from what was recorded, where every
        // hit the search showed had passed this check.
        self.inner.readable(ids, access).await
    }
}

struct RecordedModel {
    inner: Arc<dyn LanguageModel>,
    recorder: Recorder,
}

impl RecordedModel {
    fn exchange(&self, request: &CompletionRequest, outcome: ModelOutcome) -> Exchange {
        Exchange::Model {
            model: self.inner.name().to_owned(),
            request: request.clone(),
            outcome,
        }
    }

    fn settle(exchange: &mut Exchange, result: &Result<Completion, LlmError>) {
        if let Exchange::Model { outcome, .. } = exchange {
            *outcome = match result {
                Ok(completion) => ModelOutcome::Completion(completion.clone()),
                Err(error) => ModelOutcome::Error(error.into()),
            };
        }
    }
}

#[async_trait]
impl LanguageModel for RecordedModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn writes_answers(&self) -> bool {
        self.inner.writes_answers()
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let pending = self
            .recorder
            .pending(self.exchange(request, ModelOutcome::Abandoned));
        let result = self.inner.complete(request).await;
        pending.end(|exchange| Self::settle(exchange, &result));
        result
    }

    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let pending = self
            .recorder
            .pending(self.exchange(request, ModelOutcome::Abandoned));
        let result = self.inner.complete_streaming(request, sink).await;
        pending.end(|exchange| Self::settle(exchange, &result));
        result
    }
}

struct RecordedEmbedder {
    inner: Arc<dyn Embedder>,
    recorder: Recorder,
}

#[async_trait]
impl Embedder for RecordedEmbedder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let exchange = |outcome| Exchange::Embed {
            embedder: self.inner.name().to_owned(),
            texts: texts.to_vec(),
            outcome,
        };
        let pending = self.recorder.pending(exchange(EmbedOutcome::Abandoned));
        let result = self.inner.embed(texts).await;
        pending.end(|exchange| {
            if let Exchange::Embed { outcome, .. } = exchange {
                *outcome = match &result {
                    Ok(vectors) => EmbedOutcome::Vectors(vectors.clone()),
                    Err(error) => EmbedOutcome::Error(error.into()),
                };
            }
        });
        result
    }
}

/// A call under way: kept as abandoned if its future is dropped before it ends.
struct Pending<'a> {
    recorder: &'a Recorder,
    exchange: Option<Exchange>,
}

impl Pending<'_> {
    /// The call ended: `settle` writes its outcome into the exchange kept as abandoned, so the
    /// request is copied once.
    fn end(mut self, settle: impl FnOnce(&mut Exchange)) {
        if let Some(exchange) = self.exchange.as_mut() {
            settle(exchange);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(exchange) = self.exchange.take() {
            self.recorder.keep(exchange);
        }
    }
}
