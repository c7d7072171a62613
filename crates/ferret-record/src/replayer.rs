//! Stand-ins that answer from a recording.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use ferret_core::{
    BackendCapabilities, BackendError, BackendErrorKind, Completion, CompletionRequest, EmbedError,
    Embedder, Hit, LanguageModel, LlmError, PaidCost, QueryForm, RetryClass, SearchBackend,
    SearchRequest, TextSink,
};
use serde::Serialize;

use crate::format::{
    BackendOutcome, BackendProfile, CallError, EmbedOutcome, EmbedderProfile, Exchange,
    ModelOutcome, ModelProfile, Recording,
};
use crate::ReplayError;

const ABANDONED: &str = "abandoned in the recorded run: its deadline passed";
const UNRECORDED: &str = "the recording holds no answer for this call";

/// Backends, a model and an embedder that answer each request with the outcome recorded for
/// it. Identical requests get their recorded outcomes in order, then the last one again.
#[derive(Clone)]
pub struct Replayer {
    world: crate::World,
    state: Arc<State>,
}

impl std::fmt::Debug for Replayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer")
            .field("world", &self.world)
            .field("misses", &self.state.misses().len())
            .finish()
    }
}

/// A request's key: the part's name and the request, as JSON.
type Key = String;

#[derive(Default)]
struct State {
    backends: Mutex<HashMap<Key, Answers<BackendOutcome>>>,
    costs: HashMap<Key, PaidCost>,
    models: Mutex<HashMap<Key, Answers<ModelOutcome>>>,
    embeddings: Mutex<HashMap<Key, Answers<EmbedOutcome>>>,
    misses: Mutex<Vec<String>>,
}

/// The outcomes recorded for one request: handed out in order, the last one kept.
struct Answers<T> {
    queue: VecDeque<T>,
}

impl<T: Clone> Answers<T> {
    fn next(&mut self) -> Option<T> {
        if self.queue.len() > 1 {
            self.queue.pop_front()
        } else {
            self.queue.front().cloned()
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn key(name: &str, request: &impl Serialize) -> Key {
    // Serialised from the typed value on both sides, so field order and number formatting match.
    format!(
        "{name}\u{1f}{}",
        serde_json::to_string(request).unwrap_or_default()
    )
}

fn push<T>(map: &mut HashMap<Key, Answers<T>>, key: Key, outcome: T) {
    map.entry(key)
        .or_insert_with(|| Answers {
            queue: VecDeque::new(),
        })
        .queue
        .push_back(outcome);
}

impl State {
    fn misses(&self) -> MutexGuard<'_, Vec<String>> {
        lock(&self.misses)
    }

    fn miss(&self, what: String) {
        self.misses().push(what);
    }
}

impl Replayer {
    /// Stand-ins for the parts `recording` talked to.
    pub fn new(recording: &Recording) -> Self {
        let mut backends = HashMap::new();
        let mut costs = HashMap::new();
        let mut models = HashMap::new();
        let mut embeddings = HashMap::new();
        for exchange in &recording.exchanges {
            match exchange {
                Exchange::Backend {
                    backend,
                    request,
                    cost,
                    outcome,
                } => {
                    let key = key(backend, request);
                    if let Some(cost) = cost {
                        costs.insert(key.clone(), *cost);
                    }
                    push(&mut backends, key, outcome.clone());
                }
                Exchange::Cost {
                    backend,
                    request,
                    cost,
                } => {
                    costs.insert(key(backend, request), *cost);
                }
                Exchange::Model {
                    model,
                    request,
                    outcome,
                } => push(&mut models, key(model, request), outcome.clone()),
                Exchange::Embed {
                    embedder,
                    texts,
                    outcome,
                } => push(&mut embeddings, key(embedder, texts), outcome.clone()),
            }
        }
        Self {
            world: recording.case.recorded.clone(),
            state: Arc::new(State {
                backends: Mutex::new(backends),
                costs,
                models: Mutex::new(models),
                embeddings: Mutex::new(embeddings),
                misses: Mutex::default(),
            }),
        }
    }

    /// The recorded backends, in the order they were added.
    pub fn backends(&self) -> Vec<Arc<dyn SearchBackend>> {
        self.world
            .backends
            .iter()
            .map(|profile| {
                Arc::new(ReplayedBackend {
                    profile: profile.clone(),
                    state: Arc::clone(&self.state),
                }) as Arc<dyn SearchBackend>
            })
            .collect()
    }

    /// The recorded model, when the search had one.
    pub fn model(&self) -> Option<Arc<dyn LanguageModel>> {
        let profile = self.world.model.clone()?;
        Some(Arc::new(ReplayedModel {
            profile,
            state: Arc::clone(&self.state),
        }))
    }

    /// The recorded embedder, when the stages had one.
    pub fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        let profile = self.world.embedder.clone()?;
        Some(Arc::new(ReplayedEmbedder {
            profile,
            state: Arc::clone(&self.state),
        }))
    }

    /// Whether every call so far was one the recording answers.
    pub fn finish(&self) -> Result<(), ReplayError> {
        let misses = self.state.misses();
        match misses.first() {
            None => Ok(()),
            Some(first) => Err(ReplayError::Unrecorded {
                count: misses.len(),
                first: first.clone(),
            }),
        }
    }
}

fn short(text: &str) -> String {
    const MOST: usize = 120;
    match text.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

struct ReplayedBackend {
    profile: BackendProfile,
    state: Arc<State>,
}

#[async_trait]
impl SearchBackend for ReplayedBackend {
    fn name(&self) -> &str {
        &self.profile.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        self.profile.capabilities
    }

    fn query_form(&self) -> QueryForm {
        self.profile.query_form
    }

    fn cost(&self, request: &SearchRequest) -> Option<PaidCost> {
        self.state
            .costs
            .get(&key(&self.profile.name, request))
            .copied()
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let name = &self.profile.name;
        let answer = lock(&self.state.backends)
            .get_mut(&key(name, request))
            .and_then(Answers::next);
        match answer {
            Some(BackendOutcome::Hits(hits)) => Ok(hits),
            Some(BackendOutcome::Error(error)) => Err(error),
            Some(BackendOutcome::Abandoned) => Err(BackendError::transient(
                name.clone(),
                BackendErrorKind::DeadlineExceeded,
                ABANDONED,
            )),
            None => {
                self.state.miss(format!(
                    "backend `{name}` searched for {:?} (limit {})",
                    short(&request.query),
                    request.limit
                ));
                Err(BackendError::permanent(
                    name.clone(),
                    BackendErrorKind::InvalidRequest,
                    UNRECORDED,
                ))
            }
        }
    }
}

struct ReplayedModel {
    profile: ModelProfile,
    state: Arc<State>,
}

fn error(error: CallError) -> (String, RetryClass) {
    (error.message, error.retry)
}

#[async_trait]
impl LanguageModel for ReplayedModel {
    fn name(&self) -> &str {
        &self.profile.name
    }

    fn writes_answers(&self) -> bool {
        self.profile.writes_answers
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let answer = lock(&self.state.models)
            .get_mut(&key(&self.profile.name, request))
            .and_then(Answers::next);
        let (message, retry) = match answer {
            Some(ModelOutcome::Completion(completion)) => return Ok(completion),
            Some(ModelOutcome::Error(failure)) => error(failure),
            Some(ModelOutcome::Abandoned) => (ABANDONED.to_owned(), RetryClass::Transient),
            None => {
                let last = request.messages.last().map_or("", |m| m.content.as_str());
                self.state.miss(format!(
                    "model `{}` asked {:?}",
                    self.profile.name,
                    short(last)
                ));
                (UNRECORDED.to_owned(), RetryClass::Permanent)
            }
        };
        Err(LlmError { message, retry })
    }

    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let completion = self.complete(request).await?;
        sink(&completion.text);
        Ok(completion)
    }
}

struct ReplayedEmbedder {
    profile: EmbedderProfile,
    state: Arc<State>,
}

#[async_trait]
impl Embedder for ReplayedEmbedder {
    fn name(&self) -> &str {
        &self.profile.name
    }

    fn dimension(&self) -> usize {
        self.profile.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let answer = lock(&self.state.embeddings)
            .get_mut(&key(&self.profile.name, &texts))
            .and_then(Answers::next);
        let (message, retry) = match answer {
            Some(EmbedOutcome::Vectors(vectors)) => return Ok(vectors),
            Some(EmbedOutcome::Error(failure)) => error(failure),
            Some(EmbedOutcome::Abandoned) => (ABANDONED.to_owned(), RetryClass::Transient),
            None => {
                self.state.miss(format!(
                    "embedder `{}` embedded {} text(s), the first {:?}",
                    self.profile.name,
                    texts.len(),
                    short(texts.first().map_or("", String::as_str))
                ));
                (UNRECORDED.to_owned(), RetryClass::Permanent)
            }
        };
        Err(EmbedError { message, retry })
    }
}
