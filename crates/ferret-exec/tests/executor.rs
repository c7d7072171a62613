//! The executor's layers, checked against scripted backends.

use std::sync::Arc;
use std::time::Duration;

use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, DateRange, Filters, Hit, PaidCost,
    PaidUnit, PaidUsage, QueryForm, RetryClass, SearchOptions, SearchQuery, TraceStep, Unlisted,
};
use ferret_exec::{CallBudget, CallRate, ExecRequest, Executor, ExecutorConfig, RetryPolicy};
use ferret_test_support::{Matching, ScriptedBackend};

/// A backend holding documents `ids`, each answering with the query as its text and its own
/// URL; it counts its calls.
fn scripted(name: &str, ids: &[&str]) -> ScriptedBackend {
    let documents = ids
        .iter()
        .map(|id| {
            let mut hit = Hit::new(*id, *id, "", 1.0, name);
            hit.url = Some(format!("https://example.com/{id}"));
            hit
        })
        .collect();
    ScriptedBackend::new(name, documents)
        .matching(Matching::EchoQuery)
        .capabilities(BackendCapabilities::default())
}

fn executor(backends: Vec<Arc<ScriptedBackend>>) -> Executor {
    let config = ExecutorConfig {
        retry: RetryPolicy {
            max_retries: 1,
            backoff: Duration::from_millis(5),
            rate_limited_wait: Duration::from_millis(5),
            ..RetryPolicy::default()
        },
        ..Default::default()
    };
    backends
        .into_iter()
        .fold(Executor::builder().config(config), |b, s| b.backend(s))
        .build()
        .unwrap()
}

fn budget() -> CallBudget {
    CallBudget::new(100, Duration::from_secs(30))
}

const DEADLINE: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_identical_queries_make_one_backend_call() {
    let backend = Arc::new(scripted("local", &["a", "b"]).delay(Duration::from_millis(100)));
    let exec = executor(vec![backend.clone()]);
    let budget = budget();
    let queries = vec!["solar power".to_owned()];
    let filters = Filters::default();
    let runs = (0..16).map(|_| exec.execute(&queries, &filters, 10, &budget, DEADLINE));
    let outcomes = futures::future::join_all(runs).await;
    assert_eq!(backend.calls(), 1);
    assert!(outcomes
        .iter()
        .all(|o| o.hits.len() == 2 && o.failures.is_empty()));
    assert_eq!(outcomes.iter().map(|o| o.backend_calls).sum::<u32>(), 1);
    assert_eq!(
        outcomes
            .iter()
            .map(|o| o.coalesced + o.cache_hits)
            .sum::<u32>(),
        15
    );
}

#[tokio::test]
async fn a_repeat_in_other_word_order_is_served_from_the_cache() {
    let backend = Arc::new(scripted("local", &["a"]));
    let exec = executor(vec![backend.clone()]);
    let budget = budget();
    exec.execute(
        &["Solar  Power".into()],
        &Filters::default(),
        10,
        &budget,
        DEADLINE,
    )
    .await;
    let second = exec
        .execute(
            &["power solar".into()],
            &Filters::default(),
            10,
            &budget,
            DEADLINE,
        )
        .await;
    assert_eq!(backend.calls(), 1);
    assert_eq!(second.cache_hits, 1);
    assert!(matches!(
        second.calls[0],
        TraceStep::BackendCall {
            cache_hit: true,
            ..
        }
    ));
    // Different filters are a different request.
    let filters = Filters {
        most_recent: Some(3),
        ..Default::default()
    };
    let third = exec
        .execute(&["power solar".into()], &filters, 10, &budget, DEADLINE)
        .await;
    assert!(
        third.failures.is_empty(),
        "a backend that cannot honour a filter was not asked: nothing failed"
    );
    assert_eq!(
        third.skipped,
        ["local: this backend cannot list the most recent entries"],
        "the note says which backend was left out and why"
    );
    assert_eq!(
        backend.calls(),
        1,
        "an unsupported filter is refused before the call"
    );
}

#[tokio::test]
async fn a_failing_backend_is_a_failure_and_the_others_still_answer() {
    let broken = Arc::new(
        scripted("broken", &[]).fail_first(vec![BackendError::permanent(
            "broken",
            BackendErrorKind::Unavailable,
            "index missing",
        )]),
    );
    let healthy = Arc::new(scripted("healthy", &["a", "b"]));
    let exec = executor(vec![broken, healthy]);
    let outcome = exec
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert_eq!(outcome.hits.len(), 2);
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(outcome.failures[0].error.backend, "broken");
    assert_eq!(outcome.failures[0].error.retry, RetryClass::Permanent);
}

#[tokio::test]
async fn a_backend_past_its_deadline_is_cut_off_and_named() {
    let slow = Arc::new(scripted("slow", &["late"]).delay(Duration::from_secs(30)));
    let fast = Arc::new(scripted("fast", &["a"]));
    let exec = executor(vec![slow.clone(), fast]);
    let started = std::time::Instant::now();
    let outcome = exec
        .execute(
            &["q".into()],
            &Filters::default(),
            10,
            &budget(),
            Duration::from_millis(200),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the deadline bounds the call"
    );
    assert_eq!(
        outcome
            .hits
            .iter()
            .map(|h| h.id.0.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    assert_eq!(
        outcome.failures[0].error.kind,
        BackendErrorKind::DeadlineExceeded
    );
    assert_eq!(
        slow.calls(),
        1,
        "a call that missed its deadline is not retried"
    );
}

#[tokio::test]
async fn a_transient_failure_is_retried_once_and_a_permanent_one_never() {
    let flaky = Arc::new(
        scripted("flaky", &["a"]).fail_first(vec![BackendError::transient(
            "flaky",
            BackendErrorKind::Internal,
            "503",
        )]),
    );
    let exec = executor(vec![flaky.clone()]);
    let outcome = exec
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert_eq!(
        (flaky.calls(), outcome.hits.len(), outcome.backend_calls),
        (2, 1, 2)
    );

    let down = Arc::new(scripted("down", &["a"]).fail_first(vec![
        BackendError::transient("down", BackendErrorKind::Internal, "503"),
        BackendError::transient("down", BackendErrorKind::Internal, "503"),
        BackendError::transient("down", BackendErrorKind::Internal, "503"),
    ]));
    let exec = executor(vec![down.clone()]);
    let outcome = exec
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert_eq!(down.calls(), 2, "one retry, no more");
    assert_eq!(outcome.failures.len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured_and_never_exceeds_the_deadline() {
    let limited = |after| {
        Arc::new(scripted("limited", &["a"]).fail_first(vec![BackendError {
            backend: "limited".into(),
            kind: BackendErrorKind::RateLimited,
            message: "429".into(),
            retry: RetryClass::RateLimited {
                retry_after: Some(after),
            },
        }]))
    };
    let soon = limited(Duration::from_millis(50));
    let started = std::time::Instant::now();
    let outcome = executor(vec![soon.clone()])
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "waited as asked"
    );
    assert_eq!((soon.calls(), outcome.hits.len()), (2, 1));

    let much_later = limited(Duration::from_secs(60));
    let outcome = executor(vec![much_later.clone()])
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert_eq!(
        much_later.calls(),
        1,
        "a wait past the deadline is not attempted"
    );
    assert_eq!(
        outcome.failures[0].error.kind,
        BackendErrorKind::RateLimited
    );
}

#[tokio::test]
async fn calls_stop_when_the_budget_is_spent() {
    let backend = Arc::new(scripted("local", &["a"]));
    let exec = executor(vec![backend.clone()]);
    let budget = CallBudget::new(2, Duration::from_secs(30));
    let queries: Vec<String> = ["one", "two", "three"].map(String::from).to_vec();
    let outcome = exec
        .execute(&queries, &Filters::default(), 10, &budget, DEADLINE)
        .await;
    assert_eq!(backend.calls(), 2);
    assert!(outcome.budget_exhausted);
    assert!(
        outcome.failures.is_empty(),
        "running out of budget is not a backend failure"
    );
}

#[tokio::test]
async fn sub_queries_fan_out_to_every_backend_and_fuse() {
    let a = Arc::new(scripted("a", &["x", "y"]));
    let b = Arc::new(scripted("b", &["y", "z"]));
    let exec = executor(vec![a.clone(), b.clone()]);
    let outcome = exec
        .execute(
            &["one".into(), "two".into()],
            &Filters::default(),
            10,
            &budget(),
            DEADLINE,
        )
        .await;
    assert_eq!((a.calls(), b.calls()), (2, 2));
    assert_eq!(outcome.calls.len(), 4);
    assert_eq!(
        outcome.hits[0].id.0, "y",
        "found by every call (same URL on both backends), so fused first"
    );
    assert_eq!(outcome.hits.len(), 3);
}

#[tokio::test]
async fn filters_reach_backends_that_support_them() {
    let dated = Arc::new(ScriptedBackend::new("dated", Vec::new()));
    let exec = Executor::builder().backend(dated.clone()).build().unwrap();
    let from = chrono::NaiveDate::from_ymd_opt(2024, 1, 1);
    let filters = Filters {
        date_range: Some(DateRange { from, to: None }),
        most_recent: None,
        ..Default::default()
    };
    let outcome = exec
        .execute(&["q".into()], &filters, 10, &budget(), DEADLINE)
        .await;
    assert!(outcome.failures.is_empty());
    assert_eq!(dated.requests()[0].filters, filters);
}

#[test]
fn an_executor_needs_a_backend_and_distinct_names() {
    assert!(Executor::builder().build().is_err());
    let twice = Executor::builder()
        .backend(Arc::new(scripted("x", &[])))
        .backend(Arc::new(scripted("x", &[])))
        .build();
    assert!(twice
        .unwrap_err()
        .to_string()
        .contains("two backends are named `x`"));
}

/// A backend that declares its provider's rate, as a web or hub backend does.
struct Declaring(Arc<ScriptedBackend>);

#[async_trait::async_trait]
impl ferret_core::SearchBackend for Declaring {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn call_rate(&self) -> Option<CallRate> {
        Some(CallRate::PerSecond(std::num::NonZeroU32::new(2).unwrap()))
    }

    async fn search(&self, request: &ferret_core::SearchRequest) -> Result<Vec<Hit>, BackendError> {
        self.0.search(request).await
    }
}

#[tokio::test]
async fn a_rate_limited_backend_is_never_called_faster_than_its_quota() {
    // The quota the backend declares, kept by a plain `backend`, and one given instead.
    let declared = Arc::new(scripted("web", &["a"]));
    let given = Arc::new(scripted("web", &["a"]));
    let cases = [
        (
            Executor::builder().backend(Arc::new(Declaring(declared.clone()))),
            declared,
        ),
        (
            Executor::builder().paced_backend(
                given.clone(),
                CallRate::PerSecond(std::num::NonZeroU32::new(2).unwrap()),
            ),
            given,
        ),
    ];
    for (builder, backend) in cases {
        let exec = builder.build().unwrap();
        let queries: Vec<String> = ["one", "two", "three", "four"].map(String::from).to_vec();
        let started = std::time::Instant::now();
        let outcome = exec
            .execute(&queries, &Filters::default(), 10, &budget(), DEADLINE)
            .await;
        // A quota of 2 per second allows a burst of 2, then one call every 500 ms: the fourth
        // call cannot start before 1 s. Only a lower bound is asserted, which a slow machine
        // cannot break.
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((backend.calls(), outcome.hits.len()), (4, 1));
    }
}

#[tokio::test]
async fn a_search_joining_a_shared_call_keeps_its_own_deadline() {
    let backend = Arc::new(scripted("slow", &["a"]).delay(Duration::from_millis(800)));
    let exec = executor(vec![backend.clone()]);
    let (patient_budget, hurried_budget) = (budget(), budget());
    let queries = vec!["q".to_owned()];
    let filters = Filters::default();
    let patient = exec.execute(
        &queries,
        &filters,
        10,
        &patient_budget,
        Duration::from_secs(5),
    );
    let hurried = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = std::time::Instant::now();
        let outcome = exec
            .execute(
                &queries,
                &filters,
                10,
                &hurried_budget,
                Duration::from_millis(100),
            )
            .await;
        (outcome, started.elapsed())
    };
    let (patient, (hurried, waited)) = tokio::join!(patient, hurried);
    assert_eq!(patient.hits.len(), 1);
    assert!(
        waited < Duration::from_millis(700),
        "held to its own 100 ms deadline, waited {waited:?}"
    );
    assert_eq!(
        hurried.failures[0].error.kind,
        BackendErrorKind::DeadlineExceeded
    );
    assert_eq!(backend.calls(), 1);
}

fn request<'a>(queries: &'a [SearchQuery], options: &'a SearchOptions) -> ExecRequest<'a> {
    static NO_FILTERS: std::sync::LazyLock<Filters> = std::sync::LazyLock::new(Filters::default);
    ExecRequest {
        cache: ferret_exec::CacheUse::Read,
        queries,
        filters: &NO_FILTERS,
        options,
        limit: 10,
        call_deadline: DEADLINE,
        backend: None,
    }
}

#[tokio::test]
async fn each_backend_is_asked_in_its_own_form_and_a_form_read_twice_is_asked_once() {
    let keywords = Arc::new(scripted("bm25", &["a"]));
    let dense = Arc::new(scripted("dense", &["a"]).query_form(QueryForm::Question));
    let web = Arc::new(scripted("web", &["a"]).query_form(QueryForm::Web));
    let exec = executor(vec![keywords.clone(), dense.clone(), web.clone()]);
    assert_eq!(
        exec.query_forms(),
        [QueryForm::Keywords, QueryForm::Question, QueryForm::Web]
    );
    let queries = [
        SearchQuery {
            keywords: "spring cglib java 17".into(),
            question: "Why does Spring fail with cglib on Java 17?".into(),
            web: "Spring cglib Java 17 fix".into(),
        },
        // Other words as a question, the same keywords in another order.
        SearchQuery {
            keywords: "java 17 spring cglib".into(),
            question: "What breaks cglib in Spring on Java 17?".into(),
            web: "Spring cglib Java 17 fix".into(),
        },
    ];
    let outcome = exec
        .execute_on(&request(&queries, &SearchOptions::default()), &budget())
        .await;
    assert_eq!(keywords.queries(), ["spring cglib java 17"]);
    assert_eq!(dense.queries().len(), 2);
    assert!(dense
        .queries()
        .contains(&"Why does Spring fail with cglib on Java 17?".to_owned()));
    assert_eq!(web.queries(), ["Spring cglib Java 17 fix"]);
    let traced: Vec<(String, String)> = outcome
        .calls
        .iter()
        .filter_map(|step| match step {
            TraceStep::BackendCall { backend, query, .. } => Some((backend.clone(), query.clone())),
            _ => None,
        })
        .collect();
    assert!(
        traced.contains(&("web".into(), "Spring cglib Java 17 fix".into())),
        "the trace shows what each backend was sent: {traced:?}"
    );
    assert_eq!(outcome.calls.len(), 4);
}

#[tokio::test]
async fn options_reach_the_backend_and_other_options_are_another_cache_entry() {
    let web = Arc::new(scripted("web", &["a"]).query_form(QueryForm::Web));
    let exec = executor(vec![web.clone()]);
    let queries = [SearchQuery::plain("rust async runtime")];
    let news = SearchOptions {
        topic: Some(ferret_core::Topic::News),
        ..Default::default()
    };
    exec.execute_on(&request(&queries, &news), &budget()).await;
    let again = exec.execute_on(&request(&queries, &news), &budget()).await;
    assert_eq!(again.cache_hits, 1);
    exec.execute_on(&request(&queries, &SearchOptions::default()), &budget())
        .await;
    assert_eq!(
        web.calls(),
        2,
        "the same query without the options is asked again"
    );
    assert_eq!(web.requests()[0].options, news);
}

#[tokio::test]
async fn paid_backends_are_billed_and_held_to_their_limit_while_free_ones_go_on() {
    let advanced = PaidCost {
        unit: PaidUnit::Credits,
        amount: 2,
    };
    let paid = Arc::new(scripted("tavily", &["a"]).paid(advanced));
    let free = Arc::new(scripted("local", &["b"]));
    let exec = executor(vec![paid.clone(), free.clone()]);
    let budget = CallBudget::new(100, Duration::from_secs(30)).with_paid_limit(3);
    let queries = [SearchQuery::plain("first"), SearchQuery::plain("second")];
    let outcome = exec
        .execute_on(&request(&queries, &SearchOptions::default()), &budget)
        .await;
    assert_eq!(paid.calls(), 1, "a second call would cost 4 credits of 3");
    assert_eq!(free.calls(), 2);
    assert_eq!(
        outcome.paid.paid.get("tavily"),
        Some(&PaidUsage {
            unit: PaidUnit::Credits,
            amount: 2,
            calls: 1,
        })
    );
    assert!(
        !outcome.paid.paid.contains_key("local"),
        "a free backend bills nothing"
    );
    assert_eq!(
        outcome.skipped,
        ["tavily: its paid units for this search are spent"]
    );
    assert!(outcome.failures.is_empty());
    assert!(
        !outcome.budget_exhausted,
        "the call budget is not the paid one"
    );
    // A cached answer costs nothing.
    let again = exec
        .execute_on(&request(&queries[..1], &SearchOptions::default()), &budget)
        .await;
    assert_eq!(again.cache_hits, 2);
    assert!(again.paid.paid.is_empty());
}

#[tokio::test]
async fn a_model_hub_is_asked_only_by_name_never_by_a_search_of_every_backend() {
    let hub = Arc::new(
        scripted("civitai", &["file"]).capabilities(BackendCapabilities {
            model_hub: Some(ferret_core::ModelSource::Civitai),
            ..BackendCapabilities::default()
        }),
    );
    let docs = Arc::new(scripted("docs", &["a"]));
    let exec = executor(vec![hub.clone(), docs.clone()]);
    let outcome = exec
        .execute(&["q".into()], &Filters::default(), 10, &budget(), DEADLINE)
        .await;
    assert_eq!((hub.calls(), docs.calls()), (0, 1));
    assert_eq!(outcome.hits.len(), 1);
    let queries = [SearchQuery::plain("sdxl vae")];
    let named = ExecRequest {
        cache: ferret_exec::CacheUse::Read,
        queries: &queries,
        filters: &Filters::default(),
        options: &SearchOptions::default(),
        limit: 10,
        call_deadline: DEADLINE,
        backend: Some("civitai"),
    };
    let outcome = exec.execute_on(&named, &budget()).await;
    assert_eq!((hub.calls(), docs.calls()), (1, 1));
    assert_eq!(outcome.hits[0].backend, "civitai");
}

#[tokio::test]
async fn a_cached_result_is_shown_under_the_access_lists_of_the_moment_it_is_read() {
    let backend =
        Arc::new(scripted("local", &["memo", "notes"]).with_access_lists(&[("memo", &["legal"])]));
    let exec = executor(vec![backend.clone()]);
    let budget = budget();
    let bob = Filters {
        access: Some(Access::new(["legal"], Unlisted::Private)),
        ..Filters::default()
    };
    let ids = |outcome: &ferret_exec::ExecOutcome| -> Vec<String> {
        outcome.hits.iter().map(|h| h.id.0.clone()).collect()
    };
    let question = vec!["the memo".to_owned()];
    let first = exec.execute(&question, &bob, 10, &budget, DEADLINE).await;
    assert_eq!(ids(&first), ["memo"]);
    // The list narrows elsewhere (another process, say): no ingest told this executor.
    backend.set_access_list("memo", &["finance"]);
    let second = exec.execute(&question, &bob, 10, &budget, DEADLINE).await;
    assert_eq!(
        (second.cache_hits, backend.calls()),
        (1, 1),
        "served from the cache"
    );
    assert!(ids(&second).is_empty(), "{:?}", ids(&second));
    assert!(second.failures.is_empty());
    // Widened again, the kept result shows it again.
    backend.set_access_list("memo", &["finance", "legal"]);
    let third = exec.execute(&question, &bob, 10, &budget, DEADLINE).await;
    assert_eq!(ids(&third), ["memo"]);
}

#[tokio::test]
async fn hits_kept_elsewhere_are_checked_and_unknown_backends_fail_closed() {
    let backend =
        Arc::new(scripted("local", &["memo", "notes"]).with_access_lists(&[("memo", &["legal"])]));
    let web = Arc::new(scripted("web", &["page"]));
    let exec = executor(vec![backend.clone(), web]);
    let bob = Access::new(["legal"], Unlisted::Public);
    let kept = [
        Hit::new("memo", "m", "", 1.0, "local"),
        Hit::new("notes", "n", "", 1.0, "local"),
        Hit::new("page", "p", "", 1.0, "web"),
        Hit::new("gone", "g", "", 1.0, "removed-backend"),
    ];
    let unreadable = |v: &[(&str, &str)]| -> std::collections::HashSet<(String, String)> {
        v.iter()
            .map(|(b, i)| ((*b).to_owned(), (*i).to_owned()))
            .collect()
    };
    assert_eq!(
        exec.unreadable(&kept, &bob).await,
        unreadable(&[("removed-backend", "gone")])
    );
    backend.set_access_list("memo", &["finance"]);
    assert_eq!(
        exec.unreadable(&kept, &bob).await,
        unreadable(&[("local", "memo"), ("removed-backend", "gone")])
    );
}

/// A web engine whose date filter is approximate: it answers with whatever it holds.
struct Approximate(Vec<Hit>);

#[async_trait::async_trait]
impl ferret_core::SearchBackend for Approximate {
    fn name(&self) -> &str {
        "web"
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            date_range: true,
            access: true,
            ..BackendCapabilities::default()
        }
    }

    async fn search(&self, _: &ferret_core::SearchRequest) -> Result<Vec<Hit>, BackendError> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn a_hit_dated_outside_the_asked_range_is_not_shown_whoever_returned_it() {
    let dated = |id: &str, date: Option<(i32, u32, u32)>| {
        let mut hit = Hit::new(id, id, "text", 1.0, "web");
        hit.date = date.and_then(|(y, m, d)| chrono::NaiveDate::from_ymd_opt(y, m, d));
        hit
    };
    let backend = Approximate(vec![
        dated("old", Some((2021, 3, 1))),
        dated("new", Some((2024, 6, 1))),
        dated("undated", None),
    ]);
    let exec = Executor::builder()
        .backend(Arc::new(backend))
        .build()
        .unwrap();
    let filters = Filters {
        date_range: Some(DateRange {
            from: chrono::NaiveDate::from_ymd_opt(2024, 1, 1),
            to: None,
        }),
        ..Default::default()
    };
    let outcome = exec
        .execute(&["q".into()], &filters, 10, &budget(), DEADLINE)
        .await;
    let ids: Vec<&str> = outcome.hits.iter().map(|h| h.id.0.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(!ids.contains(&"old"), "{ids:?}");
}

#[tokio::test]
async fn a_refresh_goes_to_the_backend_again_and_replaces_the_kept_result() {
    let backend = Arc::new(scripted("web", &["a"]));
    let exec = executor(vec![backend.clone()]);
    let queries = [SearchQuery::plain("q")];
    let options = SearchOptions::default();
    let read = request(&queries, &options);
    let budget = budget();
    exec.execute_on(&read, &budget).await;
    let kept = exec.execute_on(&read, &budget).await;
    assert_eq!(
        (backend.calls(), kept.cache_hits),
        (1, 1),
        "read: the kept result"
    );
    let refresh = ExecRequest {
        cache: ferret_exec::CacheUse::Refresh,
        ..request(&queries, &options)
    };
    let fresh = exec.execute_on(&refresh, &budget).await;
    assert_eq!(
        (backend.calls(), fresh.cache_hits),
        (2, 0),
        "refresh: asked again"
    );
    let after = exec.execute_on(&read, &budget).await;
    assert_eq!(
        (backend.calls(), after.cache_hits),
        (2, 1),
        "the refreshed result is kept"
    );
}
