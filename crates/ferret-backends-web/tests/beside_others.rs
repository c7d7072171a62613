//! Web backends inside the executor: a failing provider costs only its own results, a rate limit
//! is waited out as `Retry-After` says and the retry spends budget, and building a backend from bad
//! configuration is a typed error naming what to fix.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret_backends_web::{
    ApiKey, BraveBackend, BraveConfig, SearxngBackend, SearxngConfig, TavilyBackend, TavilyConfig,
    WebError,
};
use ferret_core::{BackendErrorKind, Filters};
use ferret_exec::{CallBudget, Executor};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const TAVILY_RESULTS: &str = r#"{"query": "q", "results": [
    {"title": "Spring Boot system requirements", "url": "https://docs.spring.io/spring-boot/system-requirements.html",
     "content": "Spring Boot 2.7 supports Java 8 to Java 21.", "score": 0.8}
], "response_time": 0.4}"#;

#[tokio::test]
async fn a_failing_provider_costs_its_own_results_and_a_rate_limit_is_waited_out_within_budget() {
    let tavily = MockServer::start().await;
    // First a rate limit asking for 300 ms, then the results.
    Mock::given(any())
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0.3"))
        .up_to_n_times(1)
        .mount(&tavily)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_raw(TAVILY_RESULTS, "application/json"))
        .mount(&tavily)
        .await;
    let brave = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(500))
        .mount(&brave)
        .await;

    let mut tavily_config = TavilyConfig::with_key(ApiKey::new("k1", "TAVILY_API_KEY"));
    tavily_config.base_url = tavily.uri();
    let mut brave_config = BraveConfig::with_key(ApiKey::new("k2", "BRAVE_API_KEY"));
    brave_config.base_url = brave.uri();
    let executor = Executor::builder()
        .backend(Arc::new(
            TavilyBackend::new(tavily_config).unwrap_or_else(|e| panic!("{e}")),
        ))
        .backend(Arc::new(
            BraveBackend::new(brave_config).unwrap_or_else(|e| panic!("{e}")),
        ))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    let budget = CallBudget::new(4, Duration::from_secs(30));
    let started = Instant::now();
    let outcome = executor
        .execute(
            &["spring boot java 21".to_owned()],
            &Filters::default(),
            5,
            &budget,
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(
        outcome.hits.len(),
        1,
        "Tavily's result stands: {:?}",
        outcome.hits
    );
    assert_eq!(outcome.failures.len(), 1, "{:?}", outcome.failures);
    assert_eq!(outcome.failures[0].error.backend, "brave");
    assert_eq!(
        outcome.failures[0].error.kind,
        BackendErrorKind::Unavailable
    );
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "Retry-After was honoured"
    );
    // Tavily twice (the rate limit, then the results), Brave once and once retried: the
    // budget of four calls is spent exactly, not exceeded.
    assert_eq!(outcome.backend_calls, 4);
}

#[test]
fn bad_configuration_is_a_typed_error_naming_what_to_fix() {
    let missing = ApiKey::from_env("FERRET_TEST_SURELY_UNSET_KEY").err();
    assert_eq!(
        missing.map(|e| e.to_string()),
        Some("no API key: set FERRET_TEST_SURELY_UNSET_KEY".to_owned())
    );
    for bad in [
        "localhost:8888",
        "ftp://searx.example",
        "not a url",
        "http://",
    ] {
        let error = SearxngBackend::new(SearxngConfig::new(bad)).err();
        assert!(
            matches!(error, Some(WebError::InvalidUrl { ref url, .. }) if url == bad),
            "{bad}: {error:?}"
        );
    }
    let key = ApiKey::new("sk-secret-value", "TAVILY_API_KEY");
    assert!(!format!("{key:?}").contains("sk-secret-value"));
    assert!(!format!("{:?}", TavilyConfig::with_key(key)).contains("sk-secret-value"));
}
