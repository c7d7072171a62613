//! `ferret-exec` runs a set of queries against a set of backends concurrently and returns one
//! fused, deduplicated list. Every backend call passes through the layers of `ferret-layers`,
//! outermost first (`Executor::call` lists them): the backend's capability check, a cache with a
//! TTL (keyed by backend, normalised query, filters and limit) that also coalesces concurrent
//! identical calls into one, the caller's deadline, at most one retry for transient failures
//! (honouring `Retry-After`), and for each attempt the backend's rate limit and the search's call
//! budget. Results are deduplicated by hit id and canonical URL and fused by reciprocal rank
//! fusion.
//!
//! Failures are values: a backend that errors or misses its deadline becomes a
//! [`BackendFailure`](ferret_core::BackendFailure) while the others' results are used.
//!
//! It must not depend on any LLM crate, nor on a concrete backend.

mod executor;
mod fusion;
mod normalize;

pub use executor::{
    CacheUse, CallRate, ExecOutcome, ExecRequest, Executor, ExecutorBuilder, ExecutorConfig,
};
pub use ferret_core::canonical_url;
pub use ferret_layers::{CallBudget, RateLimit, RetryPolicy};
pub use fusion::{dedup_and_fuse, dedup_heads_first, RRF_K};
pub use normalize::normalize_query;
