use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret_core::{
    BackendCapabilities, BackendError, BackendErrorKind, BackendFailure, FerretError, Filters, Hit,
    RetryClass, SearchBackend, SearchRequest, TraceStep,
};
use futures::future::join_all;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use moka::future::Cache;

use crate::{dedup_and_fuse, normalize_query, RRF_K};

/// How a failed call is retried. There is exactly one retry layer per call: this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt, for transient and rate-limited failures only.
    pub max_retries: u32,
    /// Wait before a retry when the backend did not say how long (`Retry-After`).
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 1,
            backoff: Duration::from_millis(200),
        }
    }
}

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

/// What one search may still spend on backend calls: a count and a wall-clock deadline. Shared by
/// every attempt of a search, so retries and refinements draw from the same pool.
#[derive(Debug)]
pub struct CallBudget {
    remaining: AtomicU32,
    ends_at: Instant,
}

impl CallBudget {
    /// `calls` backend calls until `wall_time` from now has passed.
    pub fn new(calls: u32, wall_time: Duration) -> Self {
        Self {
            remaining: AtomicU32::new(calls),
            ends_at: Instant::now() + wall_time,
        }
    }

    /// Take one call from the budget; false when none is left or time is up.
    fn take(&self) -> bool {
        self.time_left() > Duration::ZERO
            && self
                .remaining
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
    }

    /// Time until the search's deadline.
    pub fn time_left(&self) -> Duration {
        self.ends_at.saturating_duration_since(Instant::now())
    }

    /// True when no call can be made any more.
    pub fn is_exhausted(&self) -> bool {
        self.remaining.load(Ordering::SeqCst) == 0 || self.time_left().is_zero()
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

struct Slot {
    backend: Arc<dyn SearchBackend>,
    limiter: Option<DefaultDirectRateLimiter>,
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
            limiter: None,
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
            limiter: Some(RateLimiter::direct(Quota::per_second(per_second))),
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
        let cache = Cache::builder()
            .max_capacity(self.config.cache_capacity)
            .time_to_live(self.config.cache_ttl)
            .build();
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
    cache: Cache<CacheKey, Arc<Vec<Hit>>>,
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
        let was_cached = self.cache.contains_key(&key);
        let initialised = AtomicBool::new(false);
        let attempts = AtomicU32::new(0);
        // Whoever runs the shared call runs it under their own budget and deadline, so a search that
        // joins it is held to its own deadline here.
        let own_deadline = deadline.min(budget.time_left());
        let shared = self.cache.try_get_with(key, async {
            initialised.store(true, Ordering::SeqCst);
            self.call_with_retries(slot, &request, budget, deadline, &attempts)
                .await
                .map(Arc::new)
        });
        let mut result = match tokio::time::timeout(own_deadline, shared).await {
            Ok(result) => result,
            Err(_) => Err(Arc::new(CallError::Backend(BackendError::deadline(
                &name,
                own_deadline,
            )))),
        };
        let ran = initialised.load(Ordering::SeqCst);
        if !ran
            && matches!(
                result.as_ref().map_err(|e| e.as_ref()),
                Err(CallError::OutOfBudget)
            )
        {
            // Another search ran out of budget; this one may still have calls left.
            result = self
                .call_with_retries(slot, &request, budget, deadline, &attempts)
                .await
                .map(Arc::new)
                .map_err(Arc::new);
        }
        let cache_hit = !ran && was_cached;
        let coalesced = !ran && !was_cached;
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

    /// The rate limit, deadline and retry layers around one backend call.
    async fn call_with_retries(
        &self,
        slot: &Slot,
        request: &SearchRequest,
        budget: &CallBudget,
        deadline: Duration,
        attempts: &AtomicU32,
    ) -> Result<Vec<Hit>, CallError> {
        let name = slot.backend.name();
        let deadline = deadline.min(budget.time_left());
        let ends_at = Instant::now() + deadline;
        let mut retries_left = self.config.retry.max_retries;
        loop {
            let remaining = ends_at.saturating_duration_since(Instant::now());
            // Only a call that leaves the rate limiter is a call: it alone spends budget.
            let attempt = async {
                if let Some(limiter) = &slot.limiter {
                    limiter.until_ready().await;
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
            let error = match tokio::time::timeout(remaining, attempt).await {
                Ok(Ok(hits)) => return Ok(hits),
                Ok(Err(CallError::Backend(error))) => error,
                Ok(Err(out_of_budget)) => return Err(out_of_budget),
                Err(_) => BackendError::deadline(name, deadline),
            };
            let wait = match error.retry {
                RetryClass::Transient => self.config.retry.backoff,
                RetryClass::RateLimited { retry_after } => {
                    retry_after.unwrap_or(self.config.retry.backoff)
                }
                _ => return Err(CallError::Backend(error)),
            };
            // A retry that could not finish before the deadline only wastes the backend's capacity.
            let time_left = ends_at.saturating_duration_since(Instant::now());
            if retries_left == 0
                || wait >= time_left
                || error.kind == BackendErrorKind::DeadlineExceeded
            {
                return Err(CallError::Backend(error));
            }
            retries_left -= 1;
            tracing::debug!(backend = name, ?wait, error = %error, "retrying backend call");
            tokio::time::sleep(wait).await;
        }
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
