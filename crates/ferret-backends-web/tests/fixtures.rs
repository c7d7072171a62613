//! Every case under `fixtures/web/<case>/`: a provider's answer, written from the provider's
//! documented examples (the case names the page), served by a local mock server; the request the
//! backend sent and what it made of the answer are pinned as a snapshot. The fault cases (timeout,
//! 429 with `Retry-After`, 5xx, a body cut short, a body that is not JSON, refused keys, plan
//! limits) pin the failure and its retry class.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::NaiveDate;
use ferret_backends_web::{
    ApiKey, BraveBackend, BraveConfig, SearxngBackend, SearxngConfig, TavilyBackend, TavilyConfig,
};
use std::sync::Arc;

use ferret_core::{
    BackendError, DateRange, Filters, Hit, SearchBackend, SearchOptions, SearchRequest,
};
use ferret_exec::{CallBudget, CallRate, Executor, ExecutorConfig, RetryPolicy};
use ferret_test_support::{Matching, ScriptedBackend};
use serde::Deserialize;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The key every case is given: no snapshot may show it.
const KEY: &str = "test-key-0b5e1d";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// tavily, brave or searxng.
    backend: String,
    /// The documentation page the response is written from, or why there is none.
    source: String,
    query: String,
    #[serde(default = "default_limit")]
    limit: usize,
    /// `[from, to]`, either may be null.
    #[serde(default)]
    date_range: Option<[Option<NaiveDate>; 2]>,
    /// The query's provider options.
    #[serde(default)]
    options: SearchOptions,
    #[serde(default)]
    include_answer: bool,
    #[serde(default)]
    include_raw_content: bool,
    #[serde(default = "ok")]
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// How long the server waits before answering.
    #[serde(default)]
    delay_ms: u64,
    /// How long the backend waits for an answer.
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    /// The body as raw text, when it is not `response.json` beside the case.
    #[serde(default)]
    body: Option<String>,
}

fn default_limit() -> usize {
    5
}

fn default_timeout_ms() -> u64 {
    10_000
}

fn ok() -> u16 {
    200
}

fn backend(case: &Case, base_url: String) -> Box<dyn SearchBackend> {
    let timeout = Duration::from_millis(case.timeout_ms);
    let key = ApiKey::new(KEY, format!("{}_API_KEY", case.backend.to_uppercase()));
    match case.backend.as_str() {
        "tavily" => {
            let mut config = TavilyConfig::with_key(key);
            config.base_url = base_url;
            config.timeout = timeout;
            config.include_answer = case.include_answer;
            config.include_raw_content = case.include_raw_content;
            config.max_content_chars = 300;
            Box::new(TavilyBackend::new(config).unwrap_or_else(|e| panic!("{e}")))
        }
        "brave" => {
            let mut config = BraveConfig::with_key(key);
            config.base_url = base_url;
            config.timeout = timeout;
            Box::new(BraveBackend::new(config).unwrap_or_else(|e| panic!("{e}")))
        }
        "searxng" => {
            let mut config = SearxngConfig::new(base_url);
            config.timeout = timeout;
            Box::new(SearxngBackend::new(config).unwrap_or_else(|e| panic!("{e}")))
        }
        other => panic!("unknown backend {other}"),
    }
}

async fn run(dir: &Path) -> String {
    let case: Case = serde_json::from_str(
        &std::fs::read_to_string(dir.join("case.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let body = match &case.body {
        Some(raw) => raw.clone(),
        None => std::fs::read_to_string(dir.join("response.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
    };
    let server = MockServer::start().await;
    let mut template = ResponseTemplate::new(case.status)
        .set_body_raw(body, "application/json")
        .set_delay(Duration::from_millis(case.delay_ms));
    for (name, value) in &case.headers {
        template = template.insert_header(name.as_str(), value.as_str());
    }
    Mock::given(any())
        .respond_with(template)
        .mount(&server)
        .await;
    let backend = backend(&case, server.uri());
    let request = SearchRequest {
        query: case.query.clone(),
        limit: case.limit,
        filters: Filters {
            date_range: case.date_range.map(|[from, to]| DateRange { from, to }),
            most_recent: None,
            ..Default::default()
        },
        options: case.options.clone(),
        text_for: None,
    };
    let cost = backend.cost(&request);
    let direct = backend.search(&request).await;
    let outcome = match &direct {
        Ok(hits) => serde_json::json!({ "hits": hits }),
        Err(error) => serde_json::json!({ "error": error }),
    };
    let received = server.received_requests().await.unwrap_or_default();
    let sent: Vec<serde_json::Value> = received
        .iter()
        .map(|r| {
            let query: BTreeMap<String, String> = r.url.query_pairs().into_owned().collect();
            let key_header = ["authorization", "x-subscription-token"]
                .into_iter()
                .find(|name| r.headers.get(*name).is_some())
                .map(|name| {
                    let value = r
                        .headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let holds_key = value.ends_with(KEY);
                    format!(
                        "{name} ({})",
                        if holds_key { "the key" } else { "not the key" }
                    )
                });
            serde_json::json!({
                "method": r.method.to_string(),
                "path": r.url.path(),
                "query": query,
                "key_sent_in": key_header,
                "body": serde_json::from_slice::<serde_json::Value>(&r.body).ok(),
            })
        })
        .collect();
    let shown = serde_json::to_string_pretty(&sorted(serde_json::json!({
        "source": case.source,
        "cost": cost,
        "sent": sent,
        "outcome": outcome,
    })))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !shown.contains(KEY),
        "the key leaked into what a search shows:\n{shown}"
    );
    beside_a_working_backend(backend, &request, direct.err()).await;
    shown
}

/// The same answer inside a search that also asks a working backend: the search keeps the other's
/// results, and a fault is a failure naming this backend and its kind, never a lost search.
async fn beside_a_working_backend(
    backend: Box<dyn SearchBackend>,
    request: &SearchRequest,
    fault: Option<BackendError>,
) {
    let name = backend.name().to_owned();
    let mut other = Hit::new("o1", "Other", "found elsewhere", 1.0, "other");
    // Dated inside every case's range: the scripted backend honours date filters.
    other.date = chrono::NaiveDate::from_ymd_opt(2024, 3, 15);
    let other = ScriptedBackend::new("other", vec![other]).matching(Matching::All);
    let config = ExecutorConfig {
        retry: RetryPolicy {
            max_retries: 1,
            backoff: Duration::from_millis(5),
            rate_limited_wait: Duration::from_millis(5),
            ..RetryPolicy::default()
        },
        ..Default::default()
    };
    // Paced faster than the provider's declared rate (one call a second for Brave and Tavily),
    // so the retry of a fault runs within the deadline: this is about faults, not pacing.
    let executor = Executor::builder()
        .config(config)
        .paced_backend(
            Arc::from(backend),
            CallRate::PerSecond(std::num::NonZeroU32::new(50).unwrap()),
        )
        .backend(Arc::new(other))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // A second's deadline: a Retry-After longer than that is not waited out.
    let outcome = executor
        .execute(
            std::slice::from_ref(&request.query),
            &request.filters,
            request.limit,
            &CallBudget::new(10, Duration::from_secs(30)),
            Duration::from_secs(1),
        )
        .await;
    assert!(
        outcome.hits.iter().any(|h| h.backend == "other"),
        "{name}: the other backend's results are kept: {outcome:?}"
    );
    match fault {
        Some(error) => assert!(
            outcome
                .failures
                .iter()
                .any(|f| f.error.backend == name && f.error.kind == error.kind),
            "{name}: the failure names the backend and its fault: {:?}",
            outcome.failures
        ),
        None => assert!(
            outcome.failures.is_empty(),
            "{name}: {:?}",
            outcome.failures
        ),
    }
}

/// `value` with every object's keys in sorted order, whether or not serde_json keeps insertion
/// order in this build (feature unification decides that).
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let ordered: BTreeMap<String, serde_json::Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            serde_json::Value::Object(ordered.into_iter().collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

#[tokio::test]
async fn every_web_fixture_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/web");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("case.json").exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 20,
        "the fault matrix needs its cases: {}",
        cases.len()
    );
    for dir in cases {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let shown = run(&dir).await;
        insta::assert_snapshot!(name, shown);
    }
}
