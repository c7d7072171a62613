use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret_core::{
    BackendCapabilities, BackendError, BackendErrorKind, BackendFailure, FerretError, Filters, Hit,
    RetryClass, SearchBackend, SearchRequest, TraceStep,
};
use ferret_layers::{
    CallBudget, Deadline, Elapsed, Origin, RateLimit, Retry, RetryPolicy, Retryable, SharedCache,
};
use futures::future::join_all;

use crate::{dedup_and_fuse, normalize_query, RRF_K};

/// Settings shared by every backend of an executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorConfig {
    /// How long a cached result stays valid.
    pub cache_ttl: Duration,
    /// Most cached results kept.
    pub cache_capacity: u64,
    /// Retries of failed calls.
    pub retry: RetryPolicy,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            cache_ttl: Duration::from_secs(3600),
            cache_capacity: 10_000,
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
}

#[derive(Clone, Hash, PartialEq, Eq)]
struct CacheKey {
    backend: String,
    query: String,
    filters: Filters,
    limit: usize,
}

#[derive(Debug, Clone)]
enum CallError {
    Backend(BackendError),
    OutOfBudget,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Backend(error) => write!(f, "{error}"),
            CallError::OutOfBudget => f.write_str("the search's budget is spent"),
        }
    }
}

impl Retryable for CallError {
    fn retry_class(&self) -> Option<&RetryClass> {
        match self {
            CallError::Backend(error) => Some(&error.retry),
            CallError::OutOfBudget => None,
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
    /// The queries, each sent to every chosen backend.
    pub queries: &'a [String],
    /// Restrictions every call carries.
    pub filters: &'a Filters,
    /// Hits asked of each call.
    pub limit: usize,
    /// Deadline for one call.
    pub call_deadline: Duration,
    /// Only this backend; `None` for all of them.
    pub backend: Option<&'a str>,
}

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

    /// Add a backend with no rate limit (an in-process index needs none).
    pub fn backend(mut self, backend: Arc<dyn SearchBackend>) -> Self {
        self.slots.push(Slot {
            backend,
            limit: None,
        });
        self
    }

    /// Add a backend that may be called at most `per_second` times a second.
    pub fn rate_limited_backend(
        mut self,
        backend: Arc<dyn SearchBackend>,
        per_second: NonZeroU32,
    ) -> Self {
        self.slots.push(Slot {
            backend,
            limit: Some(RateLimit::per_second(per_second)),
        });
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
        let cache = SharedCache::new(self.config.cache_capacity, self.config.cache_ttl);
        Ok(Executor {
            config: self.config,
            slots: Arc::new(self.slots),
            cache,
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
    hits: Option<Vec<Hit>>,
    failure: Option<BackendFailure>,
    out_of_budget: bool,
    called: u32,
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

    /// Run every query against every backend concurrently, `limit` hits per call, and fuse.
    pub async fn execute(
        &self,
        queries: &[String],
        filters: &Filters,
        limit: usize,
        budget: &CallBudget,
        call_deadline: Duration,
    ) -> ExecOutcome {
        self.execute_on(
            &ExecRequest {
                queries,
                filters,
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
            limit,
            call_deadline,
            backend,
        } = *request;
        let slots = self
            .slots
            .iter()
            .filter(|slot| backend.is_none_or(|name| slot.backend.name() == name));
        let calls = queries
            .iter()
            .flat_map(|q| slots.clone().map(move |slot| (q, slot)));
        let records = join_all(calls.map(|(query, slot)| {
            let request = SearchRequest {
                query: query.clone(),
                limit,
                filters: filters.clone(),
            };
            self.call(slot, request, budget, call_deadline)
        }))
        .await;
        let mut outcome = ExecOutcome::default();
        let mut lists = Vec::new();
        for record in records {
            outcome.calls.push(record.step);
            outcome.backend_calls += record.called;
            outcome.cache_hits += u32::from(record.cache_hit);
            outcome.coalesced += u32::from(record.coalesced);
            outcome.budget_exhausted |= record.out_of_budget;
            outcome.failures.extend(record.failure);
            lists.extend(record.hits);
        }
        outcome.hits = dedup_and_fuse(&lists, RRF_K);
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
        if let Some(problem) = unsupported_filter(slot.backend.as_ref(), &request.filters) {
            let error = BackendError::permanent(&name, BackendErrorKind::InvalidRequest, problem);
            return CallRecord {
                step: step(0, Some(error.message.clone()), false, false),
                hits: None,
                failure: Some(BackendFailure {
                    query: request.query.clone(),
                    error,
                }),
                out_of_budget: false,
                called: 0,
                cache_hit: false,
                coalesced: false,
            };
        }
        let key = CacheKey {
            backend: name.clone(),
            query: normalize_query(&request.query),
            filters: request.filters.clone(),
            limit: request.limit,
        };
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
                Err(CallError::OutOfBudget)
            )
        {
            // Another search ran out of budget; this one may still have calls left.
            result = self
                .attempts(slot, &request, budget, deadline, &attempts)
                .await
                .map(Arc::new)
                .map_err(Arc::new);
        }
        let cache_hit = origin == Origin::Cached;
        let coalesced = origin == Origin::Joined;
        let called = attempts.load(Ordering::SeqCst);
        match result {
            Ok(hits) => CallRecord {
                step: step(hits.len(), None, cache_hit, coalesced),
                hits: Some(hits.as_ref().clone()),
                failure: None,
                out_of_budget: false,
                called,
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
                };
                let message = match error.as_ref() {
                    CallError::Backend(e) => e.message.clone(),
                    CallError::OutOfBudget => "skipped: the search's budget is spent".to_owned(),
                };
                CallRecord {
                    step: step(0, Some(message), false, coalesced),
                    hits: None,
                    failure,
                    out_of_budget,
                    called,
                    cache_hit: false,
                    coalesced,
                }
            }
        }
    }

    /// The inner layers of one backend call: retries by class within the call's deadline, and for
    /// each attempt the rate limit, then the budget (only a call that leaves the rate limiter is
    /// a call: it alone spends budget), then the backend.
    async fn attempts(
        &self,
        slot: &Slot,
        request: &SearchRequest,
        budget: &CallBudget,
        deadline: Duration,
        attempts: &AtomicU32,
    ) -> Result<Vec<Hit>, CallError> {
        let name = slot.backend.name();
        let deadline = Deadline::new(deadline.min(budget.time_left()));
        let attempt = || async {
            if let Some(limit) = &slot.limit {
                limit.ready().await;
            }
            if !budget.take() {
                return Err(CallError::OutOfBudget);
            }
            attempts.fetch_add(1, Ordering::SeqCst);
            slot.backend
                .search(request)
                .await
                .map_err(CallError::Backend)
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
    None
}
