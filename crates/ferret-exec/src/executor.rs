use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, BackendFailure, FerretError,
    Filters, Hit, PaidCost, QueryForm, RetryClass, SearchBackend, SearchOptions, SearchQuery,
    SearchRequest, TraceStep, Usage,
};
use ferret_layers::{
    CallBudget, Deadline, Elapsed, Origin, RateLimit, Retry, RetryPolicy, Retryable, SharedCache,
};
use futures::future::join_all;

use crate::fusion::dedup_and_fuse;
use crate::{normalize_query, RRF_K};

/// Settings shared by every backend of an executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorConfig {
    /// How long a cached result stays valid.
    pub cache_ttl: Duration,
    /// Most bytes the cached results may hold (their hits' text, titles, ids and addresses);
    /// the least used go first past it. A count would let a few long documents hold far more.
    pub cache_max_bytes: u64,
    /// Retries of failed calls.
    pub retry: RetryPolicy,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            cache_ttl: Duration::from_secs(3600),
            cache_max_bytes: 64 * 1024 * 1024,
            retry: RetryPolicy::default(),
        }
    }
}

/// The result of running queries against backends.
#[derive(Debug, Clone, Default)]
pub struct ExecOutcome {
    /// Fused, deduplicated hits, best first.
    pub hits: Vec<Hit>,
    /// One `TraceStep::BackendCall` per query and backend.
    pub calls: Vec<TraceStep>,
    /// Calls that failed; their backends' results are missing from `hits`.
    pub failures: Vec<BackendFailure>,
    /// Some calls were not made because the budget ran out.
    pub budget_exhausted: bool,
    /// Backend calls actually made, retries included.
    pub backend_calls: u32,
    /// Calls answered from the cache.
    pub cache_hits: u32,
    /// Calls that waited on an identical call in flight.
    pub coalesced: u32,
    /// What paid backends billed for the calls made.
    pub paid: Usage,
    /// Calls not made, each with why: a filter the backend cannot honour, or its paid units
    /// spent. These are notes, not failures.
    pub skipped: Vec<String>,
}

/// What a cached call is kept under: the backend, the query, its filters (the asker's access
/// among them), options and limit, and the results' generation. Two askers with different
/// groups never share an entry. Keying on access is not enough to keep a revoked document out,
/// since a list can change after the entry was made, by this process or another writing the
/// same collection: a cached result for an asker is therefore checked with
/// [`SearchBackend::readable`] each time it is read, and shows only what the lists let the
/// asker read at that moment. An ingest through the facade also bumps the generation, so a
/// widened list is seen at once.
#[derive(Clone, Hash, PartialEq, Eq)]
struct CacheKey {
    /// The results' age: bumped when documents reach a backend, so that a call in flight then
    /// keeps its result under a key no later search asks for.
    generation: u64,
    backend: String,
    query: String,
    filters: Filters,
    options: SearchOptions,
    limit: usize,
    text_for: Option<usize>,
}

#[derive(Debug, Clone)]
enum CallError {
    Backend(BackendError),
    OutOfBudget,
    /// This paid backend's units for the search are spent; other backends go on.
    OutOfPaidUnits,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Backend(error) => write!(f, "{error}"),
            CallError::OutOfBudget => f.write_str("the search's budget is spent"),
            CallError::OutOfPaidUnits => {
                f.write_str("the search's paid units at this backend are spent")
            }
        }
    }
}

impl Retryable for CallError {
    fn retry_class(&self) -> Option<&RetryClass> {
        match self {
            CallError::Backend(error) => Some(&error.retry),
            CallError::OutOfBudget | CallError::OutOfPaidUnits => None,
        }
    }

    fn is_elapsed(&self) -> bool {
        matches!(self, CallError::Backend(error) if error.kind == BackendErrorKind::DeadlineExceeded)
    }
}

struct Slot {
    backend: Arc<dyn SearchBackend>,
    limit: Option<RateLimit>,
}

/// One round of searches for [`Executor::execute_on`].
#[derive(Debug, Clone, Copy)]
pub struct ExecRequest<'a> {
    /// The queries, each sent to every chosen backend in the form that backend asks for.
    pub queries: &'a [SearchQuery],
    /// Restrictions every call carries.
    pub filters: &'a Filters,
    /// Provider options every call carries.
    pub options: &'a SearchOptions,
    /// Hits asked of each call.
    pub limit: usize,
    /// Deadline for one call.
    pub call_deadline: Duration,
    /// Only this backend; `None` for all of them.
    pub backend: Option<&'a str>,
    /// Whether a kept result may answer, or every call goes to its backend again.
    pub cache: CacheUse,
}

/// Whether a search may be answered from the results kept for identical calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheUse {
    /// A kept result answers an identical call.
    #[default]
    Read,
    /// Every call goes to its backend again (the asker wants what is there now); its result
    /// replaces the kept one.
    Refresh,
}

pub use ferret_core::CallRate;

/// Builds an [`Executor`] from backends, each with an optional rate limit.
#[derive(Default)]
pub struct ExecutorBuilder {
    config: ExecutorConfig,
    slots: Vec<Slot>,
}

impl ExecutorBuilder {
    /// Use `config` instead of the defaults.
    pub fn config(mut self, config: ExecutorConfig) -> Self {
        self.config = config;
        self
    }

    /// Add a backend, paced to the rate it declares ([`SearchBackend::call_rate`]); one that
    /// declares none (an in-process index) is not paced.
    pub fn backend(self, backend: Arc<dyn SearchBackend>) -> Self {
        let rate = backend.call_rate();
        self.slot(backend, rate)
    }

    /// Add a backend paced to `rate` instead of the rate it declares (a plan's own quota).
    pub fn paced_backend(self, backend: Arc<dyn SearchBackend>, rate: CallRate) -> Self {
        self.slot(backend, Some(rate))
    }

    fn slot(mut self, backend: Arc<dyn SearchBackend>, rate: Option<CallRate>) -> Self {
        let limit = rate.map(|rate| match rate {
            CallRate::PerSecond(n) => RateLimit::per_second(n),
            CallRate::PerMinute(n) => RateLimit::per_minute(n),
        });
        self.slots.push(Slot { backend, limit });
        self
    }

    /// Build, refusing an executor with no backend or two backends of the same name.
    pub fn build(self) -> Result<Executor, FerretError> {
        if self.slots.is_empty() {
            return Err(FerretError::Config(
                "no search backend is configured".into(),
            ));
        }
        let mut names: Vec<&str> = self.slots.iter().map(|s| s.backend.name()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(FerretError::Config(format!(
                "two backends are named `{}`",
                pair[0]
            )));
        }
        let cache = SharedCache::weighed(
            self.config.cache_max_bytes,
            self.config.cache_ttl,
            |key: &CacheKey, hits: &Vec<Hit>| {
                let held: usize = hits.iter().map(Hit::heap_bytes).sum();
                let slots = hits.capacity() * std::mem::size_of::<Hit>();
                u32::try_from(CACHE_ENTRY_BYTES + key.query.len() + slots + held)
                    .unwrap_or(u32::MAX)
            },
        );
        Ok(Executor {
            config: self.config,
            slots: Arc::new(self.slots),
            cache,
            generation: Arc::new(AtomicU64::new(0)),
        })
    }
}

/// Runs queries against every backend concurrently, through cache, coalescing, rate limit,
/// deadline and retry, then deduplicates and fuses. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub struct Executor {
    config: ExecutorConfig,
    slots: Arc<Vec<Slot>>,
    cache: SharedCache<CacheKey, Vec<Hit>>,
    generation: Arc<AtomicU64>,
}

/// What a cached result costs beside its hits: the key, the cache's entry and bookkeeping,
/// measured roughly (an order of magnitude is what matters).
const CACHE_ENTRY_BYTES: usize = 512;

impl Executor {
    /// Bytes the cached results hold now (within [`ExecutorConfig::cache_max_bytes`]).
    pub async fn cache_bytes(&self) -> u64 {
        self.cache.weight().await
    }

    /// Forget every cached result, and what calls in flight will find: after documents reach a
    /// backend, a search must see them.
    pub fn forget_results(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.cache.clear();
    }
}

impl Executor {
    /// Of `hits` (kept from earlier searches: a thread's turns, hits remembered for a fetch),
    /// those `access` no longer lets the asker read, as `(backend, id)`: each backend is asked
    /// by id with the lists it holds now. It fails closed: the hits of a backend that is not
    /// configured, or that cannot answer, are all counted unreadable.
    pub async fn unreadable<'h>(
        &self,
        hits: impl IntoIterator<Item = &'h Hit>,
        access: &Access,
    ) -> HashSet<(String, String)> {
        let mut by_backend: Vec<(&str, Vec<String>)> = Vec::new();
        for hit in hits {
            match by_backend.iter_mut().find(|(name, _)| *name == hit.backend) {
                Some((_, ids)) => ids.push(hit.id.0.clone()),
                None => by_backend.push((&hit.backend, vec![hit.id.0.clone()])),
            }
        }
        let checks = by_backend.into_iter().map(|(name, ids)| async move {
            let slot = self.slots.iter().find(|s| s.backend.name() == name);
            let readable = match slot {
                Some(slot) => slot.backend.readable(&ids, access).await,
                None => Ok(Some(HashSet::new())),
            };
            let readable = readable.unwrap_or_else(|error| {
                tracing::warn!(backend = name, %error, "access check failed: its hits are withheld");
                Some(HashSet::new())
            });
            ids.into_iter()
                .filter(|id| readable.as_ref().is_some_and(|r| !r.contains(id)))
                .map(|id| (name.to_owned(), id))
                .collect::<Vec<_>>()
        });
        join_all(checks).await.into_iter().flatten().collect()
    }
}

/// `hits`, kept from an earlier call of `slot`'s backend, cut to those `access` may read now.
async fn readable_now(
    slot: &Slot,
    hits: Arc<Vec<Hit>>,
    access: &Access,
) -> Result<Arc<Vec<Hit>>, CallError> {
    if hits.is_empty() {
        return Ok(hits);
    }
    let ids: Vec<String> = hits.iter().map(|h| h.id.0.clone()).collect();
    match slot.backend.readable(&ids, access).await {
        Ok(None) => Ok(hits),
        Ok(Some(readable)) if ids.iter().all(|id| readable.contains(id)) => Ok(hits),
        Ok(Some(readable)) => Ok(Arc::new(
            hits.iter()
                .filter(|h| readable.contains(&h.id.0))
                .cloned()
                .collect(),
        )),
        Err(error) => Err(CallError::Backend(error)),
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("backends", &self.backend_names())
            .field("config", &self.config)
            .finish()
    }
}

struct CallRecord {
    step: TraceStep,
    backend: String,
    /// What the call found, shared with the result cache.
    hits: Option<Arc<Vec<Hit>>>,
    failure: Option<BackendFailure>,
    out_of_budget: bool,
    /// Why the call was not made, when it was skipped.
    skipped: Option<String>,
    called: u32,
    /// What one call costs at the backend, when it is paid.
    cost: Option<PaidCost>,
    cache_hit: bool,
    coalesced: bool,
}

impl Executor {
    /// Start building an executor.
    pub fn builder() -> ExecutorBuilder {
        ExecutorBuilder::default()
    }

    /// Names of the configured backends, in the order they were added.
    pub fn backend_names(&self) -> Vec<&str> {
        self.slots.iter().map(|s| s.backend.name()).collect()
    }

    /// Each backend's name and what it can filter by, in the order they were added.
    pub fn backends(&self) -> Vec<(&str, BackendCapabilities)> {
        self.slots
            .iter()
            .map(|s| (s.backend.name(), s.backend.capabilities()))
            .collect()
    }

    /// Names of the configured backends that ask for queries in `form` (web search engines ask
    /// for [`QueryForm::Web`]), in the order they were added.
    pub fn backends_asking(&self, form: QueryForm) -> Vec<&str> {
        self.slots
            .iter()
            .filter(|s| s.backend.query_form() == form)
            .map(|s| s.backend.name())
            .collect()
    }

    /// The query forms the configured backends ask for, each once, so a caller writes only
    /// the forms some backend reads.
    pub fn query_forms(&self) -> Vec<QueryForm> {
        let mut forms: Vec<QueryForm> = Vec::new();
        for slot in self.slots.iter() {
            let form = slot.backend.query_form();
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        forms
    }

    /// Run every query, the same text for every backend, against every backend concurrently,
    /// `limit` hits per call, no provider options, and fuse.
    pub async fn execute(
        &self,
        queries: &[String],
        filters: &Filters,
        limit: usize,
        budget: &CallBudget,
        call_deadline: Duration,
    ) -> ExecOutcome {
        let queries: Vec<SearchQuery> = queries.iter().map(SearchQuery::plain).collect();
        self.execute_on(
            &ExecRequest {
                cache: CacheUse::Read,
                queries: &queries,
                filters,
                options: &SearchOptions::default(),
                limit,
                call_deadline,
                backend: None,
            },
            budget,
        )
        .await
    }

    /// Run `request`: its queries against its one backend, or every backend, concurrently, and fuse.
    /// A backend name that is not configured calls nothing and finds nothing.
    pub async fn execute_on(&self, request: &ExecRequest<'_>, budget: &CallBudget) -> ExecOutcome {
        let ExecRequest {
            queries,
            filters,
            options,
            limit,
            call_deadline,
            backend,
            cache,
        } = *request;
        let slots = self.slots.iter().filter(|slot| match backend {
            Some(name) => slot.backend.name() == name,
            // A model hub answers model-file searches only, never a question.
            None => slot.backend.capabilities().model_hub.is_none(),
        });
        let calls = queries
            .iter()
            .flat_map(|q| slots.clone().map(move |slot| (q, slot)));
        let mut requests: Vec<(&Slot, SearchRequest)> = Vec::new();
        for (query, slot) in calls {
            let request = SearchRequest {
                query: query.form(slot.backend.query_form()).to_owned(),
                limit,
                filters: filters.clone(),
                options: options.clone(),
                text_for: None,
            };
            // Two queries can read the same in one backend's form: it is asked once.
            let repeated = requests.iter().any(|(seen, earlier)| {
                std::ptr::eq(*seen, slot)
                    && normalize_query(&earlier.query) == normalize_query(&request.query)
            });
            if !repeated {
                requests.push((slot, request));
            }
        }
        // One call is awaited as it is: joining it would only box it.
        let records =
            match <[_; 1]>::try_from(requests) {
                Ok([(slot, request)]) => {
                    vec![self.call(slot, request, budget, call_deadline, cache).await]
                }
                Err(requests) => {
                    join_all(requests.into_iter().map(|(slot, request)| {
                        self.call(slot, request, budget, call_deadline, cache)
                    }))
                    .await
                }
            };
        let mut outcome = ExecOutcome::default();
        let mut lists = Vec::new();
        for record in records {
            outcome.calls.push(record.step);
            outcome.backend_calls += record.called;
            outcome.cache_hits += u32::from(record.cache_hit);
            outcome.coalesced += u32::from(record.coalesced);
            outcome.budget_exhausted |= record.out_of_budget;
            outcome.failures.extend(record.failure);
            outcome.skipped.extend(record.skipped);
            if let Some(cost) = record.cost {
                for _ in 0..record.called {
                    outcome.paid.add_paid(&record.backend, cost);
                }
            }
            lists.extend(record.hits);
        }
        outcome.hits = dedup_and_fuse(lists.iter().map(|list| list.iter()), RRF_K);
        outcome
    }

    /// One backend call through its layers, outermost first: the capability check, the cache
    /// and coalescing, the caller's own deadline, then [`Executor::attempts`]: retry by class
    /// within the call's deadline, and for each attempt the rate limit and the budget.
    async fn call(
        &self,
        slot: &Slot,
        request: SearchRequest,
        budget: &CallBudget,
        deadline: Duration,
        cache: CacheUse,
    ) -> CallRecord {
        let name = slot.backend.name().to_owned();
        let started = Instant::now();
        let step = |hits: usize, error: Option<String>, cache_hit: bool, coalesced: bool| {
            TraceStep::BackendCall {
                backend: name.clone(),
                query: request.query.clone(),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                cache_hit,
                coalesced,
                hits,
                error,
            }
        };
        let cost = slot.backend.cost(&request);
        if let Some(problem) = unsupported_filter(slot.backend.as_ref(), &request.filters) {
            // Not a failure: the backend was never asked; the trace says why.
            let note = format!("skipped: {problem}");
            return CallRecord {
                step: step(0, Some(note.clone()), false, false),
                backend: name.clone(),
                hits: None,
                failure: None,
                out_of_budget: false,
                skipped: Some(format!("{name}: {problem}")),
                called: 0,
                cost,
                cache_hit: false,
                coalesced: false,
            };
        }
        let key = CacheKey {
            generation: self.generation.load(Ordering::SeqCst),
            backend: name.clone(),
            query: normalize_query(&request.query),
            filters: request.filters.clone(),
            options: request.options.clone(),
            limit: request.limit,
            text_for: request.text_for,
        };
        if cache == CacheUse::Refresh {
            self.cache.forget(&key).await;
        }
        let attempts = AtomicU32::new(0);
        // Whoever runs the shared call runs it under their own budget and deadline, so a search that
        // joins it is held to its own deadline here.
        let own_deadline = Deadline::new(deadline.min(budget.time_left()));
        let probe = self.cache.probe(&key);
        let shared = self.cache.get_or_run(
            key,
            &probe,
            self.attempts(slot, &request, budget, deadline, &attempts),
        );
        let mut result = match own_deadline.run(shared).await {
            Ok(result) => result,
            Err(Elapsed) => Err(Arc::new(CallError::Backend(BackendError::deadline(
                &name,
                own_deadline.within(),
            )))),
        };
        let origin = probe.origin();
        if origin != Origin::Ran
            && matches!(
                result.as_ref().map_err(|e| e.as_ref()),
                Err(CallError::OutOfBudget | CallError::OutOfPaidUnits)
            )
        {
            // Another search ran out of budget; this one may still have calls left.
            result = self
                .attempts(slot, &request, budget, deadline, &attempts)
                .await
                .map(Arc::new)
                .map_err(Arc::new);
        }
        if let (Origin::Cached, Ok(hits), Some(access)) =
            (origin, &result, request.filters.access.as_ref())
        {
            // A kept result was read under the access lists of its time: it is shown as the
            // lists stand now, which another process may have changed.
            let check = Deadline::new(deadline.min(budget.time_left()));
            result = match check
                .run(readable_now(slot, Arc::clone(hits), access))
                .await
            {
                Ok(checked) => checked.map_err(Arc::new),
                Err(Elapsed) => Err(Arc::new(CallError::Backend(BackendError::deadline(
                    &name,
                    check.within(),
                )))),
            };
        }
        let cache_hit = origin == Origin::Cached;
        let coalesced = origin == Origin::Joined;
        let called = attempts.load(Ordering::SeqCst);
        match result {
            Ok(hits) => CallRecord {
                step: step(hits.len(), None, cache_hit, coalesced),
                backend: name.clone(),
                hits: Some(hits),
                failure: None,
                out_of_budget: false,
                skipped: None,
                called,
                cost,
                cache_hit,
                coalesced,
            },
            Err(error) => {
                let (failure, out_of_budget) = match error.as_ref() {
                    CallError::Backend(e) => (
                        Some(BackendFailure {
                            query: request.query.clone(),
                            error: e.clone(),
                        }),
                        false,
                    ),
                    CallError::OutOfBudget => (None, true),
                    CallError::OutOfPaidUnits => (None, false),
                };
                let message = match error.as_ref() {
                    CallError::Backend(e) => e.message.clone(),
                    CallError::OutOfBudget => "skipped: the search's budget is spent".to_owned(),
                    CallError::OutOfPaidUnits => {
                        "skipped: the search's paid units at this backend are spent".to_owned()
                    }
                };
                let skipped = matches!(error.as_ref(), CallError::OutOfPaidUnits)
                    .then(|| format!("{name}: its paid units for this search are spent"));
                CallRecord {
                    step: step(0, Some(message), false, coalesced),
                    backend: name.clone(),
                    hits: None,
                    failure,
                    out_of_budget,
                    skipped,
                    called,
                    cost,
                    cache_hit: false,
                    coalesced,
                }
            }
        }
    }

    /// The inner layers of one backend call: retries by class within the call's deadline, and for
    /// each attempt the rate limit, then the budget: the paid backend's units, then the call
    /// count (only a call that leaves the rate limiter is a call: it alone spends budget), then
    /// the backend.
    async fn attempts(
        &self,
        slot: &Slot,
        request: &SearchRequest,
        budget: &CallBudget,
        deadline: Duration,
        attempts: &AtomicU32,
    ) -> Result<Vec<Hit>, CallError> {
        let name = slot.backend.name();
        let units = slot.backend.cost(request).map(|cost| cost.amount);
        let deadline = Deadline::new(deadline.min(budget.time_left()));
        let attempt = || async {
            if let Some(limit) = &slot.limit {
                limit.ready().await;
            }
            if let Some(units) = units {
                if !budget.take_paid(name, units) {
                    return Err(CallError::OutOfPaidUnits);
                }
            }
            if !budget.take() {
                if let Some(units) = units {
                    budget.return_paid(name, units);
                }
                return Err(CallError::OutOfBudget);
            }
            attempts.fetch_add(1, Ordering::SeqCst);
            let mut hits = slot
                .backend
                .search(request)
                .await
                .map_err(CallError::Backend)?;
            // A web engine's date filter is approximate (it reads a page's date its own way): a
            // hit that carries a date outside the asked range is not shown, whoever returned it.
            if let Some(range) = &request.filters.date_range {
                hits.retain(|hit| hit.date.is_none_or(|date| range.contains(date)));
            }
            // A backend may hand back a vector sized for `limit` and cut short: kept as is in
            // the cache, the empty slots would cost more than the hits.
            hits.shrink_to_fit();
            Ok(hits)
        };
        let elapsed = || CallError::Backend(BackendError::deadline(name, deadline.within()));
        Retry::new(self.config.retry)
            .run(deadline, elapsed, attempt)
            .await
    }
}

fn unsupported_filter(backend: &dyn SearchBackend, filters: &Filters) -> Option<String> {
    let caps = backend.capabilities();
    if filters.date_range.is_some() && !caps.date_range {
        return Some("this backend cannot filter by date range".into());
    }
    if filters.most_recent.is_some() && !caps.most_recent {
        return Some("this backend cannot list the most recent entries".into());
    }
    // Fail closed: a backend that cannot tell who may read what is not asked on an asker's
    // behalf.
    if filters.access.is_some() && !caps.access {
        return Some("this backend cannot restrict results to what the asker may read".into());
    }
    None
}
