//! What `GET /metrics` reports, in the Prometheus text format: requests by route and status
//! with their latency, and from each finished search its backend calls and failures by backend,
//! cache hits, and model tokens and cost; and the documents ingests took, by outcome.

use std::time::Duration;

use ferret::index::IngestReport;
use ferret::jobs::search::TraceStep;
use ferret::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    backend: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IngestLabels {
    outcome: &'static str,
}

/// The server's counters and histograms.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    backend_calls: Family<BackendLabels, Counter>,
    backend_failures: Family<BackendLabels, Counter>,
    cache_hits: Counter,
    model_tokens: Family<TokenLabels, Counter>,
    // Counters count integers; cost is kept in micro-dollars.
    model_cost_micro_usd: Counter,
    ingested: Family<IngestLabels, Counter>,
    held_bytes: Family<HeldLabels, Gauge>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HeldLabels {
    store: &'static str,
}

/// What the stores that grow with traffic hold, in bytes, each within its budget.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MemoryHeld {
    /// Backends' results cached for repeated calls.
    pub(crate) result_cache: u64,
    /// Threads' remembered turns.
    pub(crate) sessions: u64,
    /// Who started each thread.
    pub(crate) thread_owners: u64,
    /// Hits kept for MCP `fetch`.
    pub(crate) seen_hits: u64,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("ferret");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 1 ms to about 65 s.
            Histogram::new(exponential_buckets(0.001, 2.0, 17))
        });
        let backend_calls = Family::<BackendLabels, Counter>::default();
        let backend_failures = Family::<BackendLabels, Counter>::default();
        let cache_hits = Counter::default();
        let model_tokens = Family::<TokenLabels, Counter>::default();
        let model_cost_micro_usd = Counter::default();
        let ingested = Family::<IngestLabels, Counter>::default();
        let held_bytes = Family::<HeldLabels, Gauge>::default();
        registry.register(
            "held_bytes",
            "Bytes held by each store that grows with traffic (result_cache, sessions, thread_owners, seen_hits), within its budget",
            held_bytes.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to the response head, by route",
            latency.clone(),
        );
        registry.register(
            "backend_calls",
            "Backend calls made by searches, by backend",
            backend_calls.clone(),
        );
        registry.register(
            "backend_failures",
            "Backend calls that failed, by backend",
            backend_failures.clone(),
        );
        registry.register(
            "cache_hits",
            "Backend calls answered from the cache",
            cache_hits.clone(),
        );
        registry.register(
            "model_tokens",
            "Language model tokens, by kind (prompt, completion)",
            model_tokens.clone(),
        );
        registry.register(
            "model_cost_micro_usd",
            "Language model cost, in millionths of a US dollar",
            model_cost_micro_usd.clone(),
        );
        registry.register(
            "ingested_documents",
            "Documents POST /v1/ingest added, updated, found unchanged or removed, and lines or files it skipped",
            ingested.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            backend_calls,
            backend_failures,
            cache_hits,
            model_tokens,
            model_cost_micro_usd,
            ingested,
            held_bytes,
        }
    }

    /// One request answered.
    pub(crate) fn request(&self, route: &str, status: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// What one finished search spent.
    pub(crate) fn search(&self, response: &Response) {
        for step in &response.trace.steps {
            if let TraceStep::BackendCall {
                backend,
                cache_hit,
                error,
                ..
            } = step
            {
                let labels = BackendLabels {
                    backend: backend.clone(),
                };
                if *cache_hit {
                    self.cache_hits.inc();
                } else {
                    self.backend_calls.get_or_create(&labels).inc();
                }
                if error.is_some() {
                    self.backend_failures.get_or_create(&labels).inc();
                }
            }
        }
        let usage = &response.usage;
        self.model_tokens
            .get_or_create(&TokenLabels { kind: "prompt" })
            .inc_by(usage.prompt_tokens);
        self.model_tokens
            .get_or_create(&TokenLabels { kind: "completion" })
            .inc_by(usage.completion_tokens);
        self.model_cost_micro_usd
            .inc_by((usage.cost_usd * 1e6).round().max(0.0) as u64);
    }

    /// What one ingest did.
    pub(crate) fn ingest(&self, report: &IngestReport) {
        for (outcome, count) in [
            ("added", report.added),
            ("updated", report.updated),
            ("unchanged", report.unchanged),
            ("removed", report.removed),
            ("skipped", report.issues.len()),
        ] {
            self.ingested
                .get_or_create(&IngestLabels { outcome })
                .inc_by(count as u64);
        }
    }

    /// Everything, in the OpenMetrics text format Prometheus reads, with what the stores
    /// `held` now.
    pub(crate) fn encode(&self, held: &MemoryHeld) -> String {
        for (store, bytes) in [
            ("result_cache", held.result_cache),
            ("sessions", held.sessions),
            ("thread_owners", held.thread_owners),
            ("seen_hits", held.seen_hits),
        ] {
            self.held_bytes
                .get_or_create(&HeldLabels { store })
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
