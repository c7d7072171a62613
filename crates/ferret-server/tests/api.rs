//! The HTTP API over a scripted backend: answers as JSON and as a stream of events, every bad
//! request of `fixtures/server` refused as its case says, the concurrency limit, a client that
//! goes away mid-stream, and a shutdown that lets the search in flight finish.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use ferret::{Ferret, Hit};
use ferret_server::wire::ErrorBody;
use ferret_server::{router, serve, AppState, Limits};
use ferret_test_support::ScriptedBackend;
use serde_json::{json, Value};
use tower::ServiceExt;

mod common;
use common::{post, read_json, sse_events};

fn wiki() -> ScriptedBackend {
    ScriptedBackend::new(
        "wiki",
        vec![
            Hit::new(
                "romulus",
                "Romulus",
                "Romulus founded Rome in 753 BC, as the legend of Rome tells.",
                1.0,
                "wiki",
            ),
            Hit::new(
                "tiber",
                "Tiber",
                "The Tiber is the river that flows through Rome.",
                1.0,
                "wiki",
            ),
        ],
    )
}

fn state(backend: Arc<ScriptedBackend>, limits: Limits) -> AppState {
    let ferret = Ferret::builder().backend(backend).build().unwrap();
    AppState::new(ferret, limits)
}

#[tokio::test]
async fn a_search_answers_with_citations_and_a_request_id() {
    let app = router(state(Arc::new(wiki()), Limits::default()));
    let response = app
        .clone()
        .oneshot(post(
            "/v1/search",
            json!({"query": "Who founded Rome?", "options": {"strategy": "single_pass", "limit": 3}})
                .to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("x-request-id"));
    let body = read_json(response).await;
    assert_eq!(body["response_type"], "results");
    assert!(
        body["answer"].as_str().unwrap().contains("Romulus"),
        "{body}"
    );
    assert_eq!(body["citations"][0]["hit_id"], "romulus");
    assert!(body["hits"].as_array().unwrap().len() <= 3);
    let strategy = body["trace"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .find(|s| s["stage"] == "strategy")
        .cloned();
    assert_eq!(
        strategy.map(|s| s["reason"].clone()),
        Some(json!("requested")),
        "the request's strategy runs"
    );

    let mut request = post(
        "/v1/search",
        json!({"query": "Who founded Rome?"}).to_string(),
    );
    request
        .headers_mut()
        .insert("x-request-id", "caller-42".parse().unwrap());
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.headers()["x-request-id"], "caller-42");
}

#[tokio::test]
async fn a_guardrail_reply_is_a_message_response() {
    let app = router(state(Arc::new(wiki()), Limits::default()));
    let response = app
        .oneshot(post("/v1/search", json!({"query": "hi"}).to_string()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = read_json(response).await;
    assert_eq!(body["response_type"], "message", "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
}

/// One request case of `fixtures/server`.
struct Case {
    name: String,
    spec: Value,
}

fn cases() -> Vec<Case> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/server");
    let mut cases: Vec<Case> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            let text = std::fs::read_to_string(dir.join("case.json")).ok()?;
            Some(Case {
                name: dir.file_name()?.to_string_lossy().into_owned(),
                spec: serde_json::from_str(&text).unwrap(),
            })
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

fn body_of(spec: &Value) -> String {
    if let Some(text) = spec["body_text"].as_str() {
        return text.to_owned();
    }
    if let Some([prefix, piece, times, suffix]) =
        spec["body_text_repeat"].as_array().map(|a| a.as_slice())
    {
        let times = times.as_u64().unwrap() as usize;
        return format!(
            "{}{}{}",
            prefix.as_str().unwrap(),
            piece.as_str().unwrap().repeat(times),
            suffix.as_str().unwrap()
        );
    }
    spec["body"].to_string()
}

#[tokio::test]
async fn every_bad_request_case_is_refused_as_its_case_says() {
    let backend = Arc::new(wiki());
    let app = router(state(backend.clone(), Limits::default()));
    let cases = cases();
    assert!(cases.len() >= 10, "the cases are found");
    for case in &cases {
        for route in ["/v1/search", "/v1/search/stream"] {
            let route = case.spec["route"].as_str().unwrap_or(route);
            let response = app
                .clone()
                .oneshot(post(route, body_of(&case.spec)))
                .await
                .unwrap();
            let status = response.status();
            let body = read_json(response).await;
            let error: ErrorBody = serde_json::from_value(body.clone())
                .unwrap_or_else(|e| panic!("{}: not an error body ({e}): {body}", case.name));
            assert_eq!(
                status.as_u16() as u64,
                case.spec["status"].as_u64().unwrap(),
                "{} on {route}: {body}",
                case.name
            );
            assert_eq!(error.error.kind, case.spec["kind"], "{}: {body}", case.name);
            if let Some(field) = case.spec["field"].as_str() {
                assert_eq!(
                    error.error.field.as_deref(),
                    Some(field),
                    "{}: {body}",
                    case.name
                );
            }
            if let Some(words) = case.spec["message_holds"].as_str() {
                assert!(error.error.message.contains(words), "{}: {body}", case.name);
            }
            assert!(
                !error.error.retryable,
                "{}: a bad request stays bad",
                case.name
            );
        }
    }
    assert_eq!(backend.calls(), 0, "no refused request reaches a backend");
}

#[tokio::test]
async fn a_stream_sends_each_event_as_it_happens_and_ends_with_the_response() {
    let app = router(state(Arc::new(wiki()), Limits::default()));
    let response = app
        .oneshot(post(
            "/v1/search/stream",
            json!({"query": "Who founded Rome?"}).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let events = sse_events(&String::from_utf8_lossy(&bytes));
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"step") && names.contains(&"hits") && names.contains(&"answer"),
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"done"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "done").count(),
        1,
        "exactly one final event"
    );
    let (_, done) = events.last().unwrap();
    assert_eq!(done["event"], "done");
    assert!(done["response"]["answer"]
        .as_str()
        .unwrap()
        .contains("Romulus"));
}

#[tokio::test]
async fn a_search_over_the_concurrency_limit_is_told_when_to_come_back() {
    let backend = Arc::new(wiki().delay(Duration::from_millis(600)));
    let limits = Limits {
        max_concurrent: 1,
        retry_after_secs: 2,
        ..Limits::default()
    };
    let app = router(state(backend.clone(), limits));
    let body =
        json!({"query": "Who founded Rome?", "options": {"strategy": "single_pass"}}).to_string();
    let first = tokio::spawn(app.clone().oneshot(post("/v1/search", body.clone())));
    // The first search is under way once the backend has been called.
    while backend.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for route in ["/v1/search", "/v1/search/stream"] {
        let refused = app
            .clone()
            .oneshot(post(route, body.clone()))
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "2");
        let error: ErrorBody = serde_json::from_value(read_json(refused).await).unwrap();
        assert_eq!(error.error.kind, "overloaded");
        assert!(error.error.retryable);
    }
    assert_eq!(first.await.unwrap().unwrap().status(), StatusCode::OK);
    let after = app.oneshot(post("/v1/search", body)).await.unwrap();
    assert_eq!(after.status(), StatusCode::OK, "the permit is given back");
}

#[tokio::test]
async fn health_and_readiness() {
    let app = router(state(Arc::new(wiki()), Limits::default()));
    let health = app
        .clone()
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let ready = app
        .oneshot(Request::get("/readyz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(read_json(ready).await["backends"], json!(["wiki"]));
}

/// A server on a loopback port, stopped by sending on the returned channel.
async fn running(
    app_state: AppState,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(listener, app_state, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (url, stop, server)
}

#[tokio::test]
async fn a_client_that_goes_away_mid_stream_stops_the_search() {
    // Nothing matches, so the search would refine and call again, each call slow.
    let slow = || {
        Arc::new(
            ScriptedBackend::new("wiki", vec![Hit::new("x", "Weather", "Rain.", 1.0, "wiki")])
                .delay(Duration::from_millis(300)),
        )
    };
    let body = json!({"query": "Who founded the city of Rome?", "options": {"strategy": "refine"}});

    let undisturbed = slow();
    let (url, stop, server) = running(state(undisturbed.clone(), Limits::default())).await;
    let client = reqwest::Client::new();
    let full = client
        .post(format!("{url}/v1/search/stream"))
        .json(&body)
        .send()
        .await
        .unwrap();
    full.bytes().await.unwrap();
    let calls_when_read = undisturbed.calls();
    assert!(
        calls_when_read >= 2,
        "the undisturbed search refines: {calls_when_read} calls"
    );
    stop.send(()).unwrap();
    server.await.unwrap();

    let abandoned = slow();
    let (url, stop, server) = running(state(abandoned.clone(), Limits::default())).await;
    let mut response = client
        .post(format!("{url}/v1/search/stream"))
        .json(&body)
        .send()
        .await
        .unwrap();
    response.chunk().await.unwrap().expect("a first event");
    drop(response);
    // Whatever call was in flight may finish; none starts after.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let calls_after_drop = abandoned.calls();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        abandoned.calls(),
        calls_after_drop,
        "no call starts after the client left"
    );
    assert!(
        calls_after_drop < calls_when_read,
        "{calls_after_drop} calls"
    );
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("no task of the abandoned search holds the server up")
        .unwrap();
}

#[tokio::test]
async fn shutdown_lets_the_search_in_flight_finish() {
    let backend = Arc::new(wiki().delay(Duration::from_millis(500)));
    let (url, stop, server) = running(state(backend.clone(), Limits::default())).await;
    let request = tokio::spawn(
        reqwest::Client::new()
            .post(format!("{url}/v1/search/stream"))
            .json(&json!({"query": "Who founded Rome?", "options": {"strategy": "single_pass"}}))
            .send(),
    );
    while backend.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.send(()).unwrap();
    let response = request.await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let events = sse_events(&text);
    assert_eq!(
        events.last().map(|(n, _)| n.as_str()),
        Some("done"),
        "{text}"
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server stops once the stream is done")
        .unwrap();
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status_and_what_searches_spent() {
    let failing = Arc::new(ScriptedBackend::new("flaky", vec![]).failing(
        ferret::backends::BackendError::permanent(
            "flaky",
            ferret::backends::BackendErrorKind::Unavailable,
            "down for maintenance",
        ),
    ));
    let ferret = Ferret::builder()
        .backend(Arc::new(wiki()))
        .backend(failing)
        .build()
        .unwrap();
    let app = router(AppState::new(ferret, Limits::default()));
    let search = json!({"query": "Who founded Rome?", "options": {"strategy": "single_pass"}});
    for body in [search.to_string(), "{".to_owned()] {
        app.clone().oneshot(post("/v1/search", body)).await.unwrap();
    }
    app.clone()
        .oneshot(Request::get("/no/such/path").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let response = app
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for line in [
        r#"ferret_http_requests_total{route="/v1/search",status="200"} 1"#,
        r#"ferret_http_requests_total{route="/v1/search",status="400"} 1"#,
        r#"ferret_http_requests_total{route="unmatched",status="404"} 1"#,
        r#"ferret_backend_calls_total{backend="wiki"} 1"#,
        r#"ferret_backend_failures_total{backend="flaky"} 1"#,
        r#"ferret_http_request_duration_seconds_count{route="/v1/search"} 2"#,
        "# TYPE ferret_held_bytes gauge",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    let held = |store: &str| -> u64 {
        let prefix = format!("ferret_held_bytes{{store=\"{store}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{prefix} missing from:\n{text}"))
            .parse()
            .unwrap()
    };
    assert!(held("result_cache") > 0, "the search's results are cached");
    for store in ["sessions", "thread_owners", "seen_hits"] {
        assert_eq!(held(store), 0, "{store}: no thread, no MCP search yet");
    }
}

#[cfg(feature = "schema")]
#[tokio::test]
async fn every_documented_route_is_served() {
    let document = ferret_server::openapi();
    let app = router(state(Arc::new(wiki()), Limits::default()));
    let index = common::seeded_index().await;
    let ingesting = router(AppState::new(
        Ferret::builder()
            .local_index(index.path().join("index"))
            .build()
            .unwrap(),
        Limits::default(),
    ));
    let paths = document["paths"].as_object().unwrap();
    assert!(paths.len() >= 5);
    let mcp_opening = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "doc-test", "version": "1"}},
    });
    for (path, operations) in paths {
        let operations = operations.as_object().unwrap();
        // A method the document does not give the path is not served there.
        for method in ["get", "post", "put", "delete", "patch"] {
            if operations.contains_key(method) {
                continue;
            }
            let request = Request::builder()
                .method(method.to_uppercase().as_str())
                .uri(path.as_str())
                .header(header::HOST, "localhost")
                .body(Body::empty())
                .unwrap();
            let response = app.clone().oneshot(request).await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path} is served but not documented"
            );
        }
        for (method, operation) in operations.iter().filter(|(m, _)| *m != "description") {
            let documented = |status: StatusCode| {
                operation["responses"]
                    .get(status.as_str())
                    .is_some_and(|r| r["description"].is_string())
            };
            if path == "/mcp" {
                // The MCP transport's own answers: an opening is taken, the rest need a
                // session and say so with a documented status.
                let request = Request::builder()
                    .method(method.to_uppercase().as_str())
                    .uri("/mcp")
                    .header(header::HOST, "localhost")
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::ACCEPT, "application/json, text/event-stream")
                    .body(Body::from(if method == "post" {
                        mcp_opening.to_string()
                    } else {
                        String::new()
                    }))
                    .unwrap();
                let status = app.clone().oneshot(request).await.unwrap().status();
                assert!(
                    documented(status),
                    "{method} /mcp answered {status}, undocumented"
                );
                if method == "post" {
                    assert_eq!(status, StatusCode::OK);
                }
                continue;
            }
            let request = match method.as_str() {
                "post" if path.contains("/ingest") => Request::post(path.as_str())
                    .header(header::CONTENT_TYPE, "application/x-ndjson")
                    .body(Body::from(json!({"id": "a", "text": "Rome"}).to_string()))
                    .unwrap(),
                "post" if path.ends_with("/chat") => {
                    post(path, json!({"message": "Who founded Rome?"}).to_string())
                }
                "post" if path.ends_with("/find-model") => {
                    post(path, json!({"file_name": "x.safetensors"}).to_string())
                }
                "post" => post(path, json!({"query": "Who founded Rome?"}).to_string()),
                "get" => Request::get(path.as_str()).body(Body::empty()).unwrap(),
                other => panic!("undocumented method {other}"),
            };
            let app = if path.contains("/ingest") {
                &ingesting
            } else {
                &app
            };
            let status = app.clone().oneshot(request).await.unwrap().status();
            assert_eq!(status, StatusCode::OK, "{method} {path}");
            for refusal in ["401", "403", "429"] {
                let applies = operation.get("security").is_none() || refusal == "403";
                assert!(
                    !applies || documented(StatusCode::from_bytes(refusal.as_bytes()).unwrap()),
                    "{method} {path} does not document {refusal}"
                );
            }
        }
    }
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    // The document the server serves is the one generated from the code.
    let served = app
        .clone()
        .oneshot(Request::get("/openapi.json").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let served: Value = serde_json::from_slice(
        &axum::body::to_bytes(served.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    let mut current = document.clone();
    current["x-generated"] = served["x-generated"].clone();
    assert_eq!(
        served, current,
        "docs/openapi.json is stale: run `cargo xtask codegen`"
    );
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for name in ["SearchBody", "Response", "Event", "ErrorBody"] {
        assert!(schemas.contains_key(name), "{name} is described");
    }
}

#[tokio::test]
async fn a_chat_starts_a_thread_and_reads_a_follow_up_against_it() {
    let backend = Arc::new(wiki());
    let app = router(state(backend.clone(), Limits::default()));
    let send = |body: Value| {
        let app = app.clone();
        async move {
            let response = app
                .oneshot(post("/v1/chat", body.to_string()))
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            read_json(response).await
        }
    };
    let first = send(json!({"message": "Who founded Rome?"})).await;
    let thread = first["thread_id"].as_str().unwrap().to_owned();
    assert!(!thread.is_empty());
    assert_eq!(first["response"]["short_answer"]["text"], "Romulus");
    let trace_of = |reply: &Value, stage: &str| {
        reply["response"]["trace"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == stage)
            .cloned()
    };
    assert_eq!(trace_of(&first, "thread").unwrap()["new"], true);

    let second =
        send(json!({"message": "What river flows through it?", "thread_id": thread})).await;
    assert_eq!(second["thread_id"], thread.as_str(), "the same thread");
    assert_eq!(trace_of(&second, "thread").unwrap()["new"], false);
    assert_eq!(
        trace_of(&second, "follow_up").unwrap()["resolved"],
        "What river flows through Rome?"
    );
    assert!(
        second["response"]["answer"]
            .as_str()
            .unwrap()
            .contains("Tiber"),
        "{second}"
    );

    let other = send(json!({"message": "Who founded Rome?"})).await;
    assert_ne!(
        other["thread_id"],
        thread.as_str(),
        "no thread id, a new thread"
    );
}

#[tokio::test]
async fn with_tokens_a_request_without_one_learns_nothing() {
    // Read from a file, a token often ends with a newline.
    let tokens = vec![ferret_server::BearerToken::new("alice", "open-sesame\n").unwrap()];
    let app = router(state(Arc::new(wiki()), Limits::default()).with_tokens(tokens));
    let search = |token: Option<&str>| {
        let mut request =
            Request::post("/v1/search").header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        request
            .body(Body::from(
                json!({"query": "Who founded Rome?"}).to_string(),
            ))
            .unwrap()
    };
    for token in [None, Some("open-sesam"), Some("")] {
        let response = app.clone().oneshot(search(token)).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let text = read_json(response).await.to_string();
        assert!(text.contains("unauthorized"), "{text}");
        assert!(
            !text.contains("Romulus") && !text.contains("wiki"),
            "{text}"
        );
    }
    let response = app
        .clone()
        .oneshot(search(Some("open-sesame")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut lower_case = search(None);
    lower_case
        .headers_mut()
        .insert(header::AUTHORIZATION, "bearer open-sesame".parse().unwrap());
    let response = app.clone().oneshot(lower_case).await.unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the scheme is case-insensitive"
    );
    for (path, status) in [
        ("/healthz", StatusCode::OK),
        ("/readyz", StatusCode::OK),
        ("/metrics", StatusCode::UNAUTHORIZED),
        ("/mcp", StatusCode::UNAUTHORIZED),
    ] {
        let response = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{path}");
    }
}

/// `/mcp` answers the loopback hosts and those `with_allowed_hosts` names, and refuses any other
/// `Host` (the MCP SDK's guard against DNS rebinding).
#[tokio::test]
async fn mcp_answers_only_the_hosts_it_is_told() {
    let app = router(
        state(Arc::new(wiki()), Limits::default())
            .with_allowed_hosts(vec!["search.example.org".to_owned()]),
    );
    let opening = |host: &str| {
        Request::post("/mcp")
            .header(header::HOST, host)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Body::from(
                json!({
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                               "clientInfo": {"name": "host-test", "version": "1"}},
                })
                .to_string(),
            ))
            .unwrap()
    };
    for (host, answered) in [
        ("localhost", true),
        ("search.example.org", true),
        ("elsewhere.example.org", false),
    ] {
        let response = app.clone().oneshot(opening(host)).await.unwrap();
        assert_eq!(
            response.status().is_success(),
            answered,
            "{host}: {}",
            response.status()
        );
    }
}

/// What the server answers a raw request: its status, error kind and `retryable`.
async fn refusal_of(app: &axum::Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("{status}: not JSON: {}", String::from_utf8_lossy(&bytes)));
    (status, body)
}

/// A request's headers and body, and the status and error kind it gets.
type Refused<'a> = (Vec<(&'a str, &'a str)>, String, u16, &'a str);

#[tokio::test]
async fn requests_from_other_sites_and_loose_bodies_are_refused_in_json() {
    let app = router(
        state(Arc::new(wiki()), Limits::default())
            .with_allowed_hosts(vec!["search.example.org".to_owned()])
            .with_allowed_origins(vec!["https://portal.example.org".to_owned()]),
    );
    let question = json!({"query": "Who founded Rome?"}).to_string();
    let search = |headers: &[(&str, &str)], body: &str| {
        let mut request = Request::post("/v1/search");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Body::from(body.to_owned())).unwrap()
    };
    let json_type = ("content-type", "application/json");
    // (headers, body, status, kind); a refusal is a JSON error whatever the route.
    let cases: Vec<Refused> = vec![
        (vec![json_type], question.clone(), 200, ""),
        (
            vec![
                json_type,
                ("host", "localhost:8080"),
                ("origin", "http://localhost:8080"),
            ],
            question.clone(),
            200,
            "",
        ),
        (
            vec![json_type, ("host", "search.example.org")],
            question.clone(),
            200,
            "",
        ),
        (
            vec![json_type, ("origin", "https://portal.example.org")],
            question.clone(),
            200,
            "",
        ),
        (
            vec![json_type, ("host", "localhost:8080"), ("origin", "null")],
            question.clone(),
            403,
            "forbidden",
        ),
        (
            vec![
                json_type,
                ("host", "localhost:8080"),
                ("origin", "https://evil.example"),
            ],
            question.clone(),
            403,
            "forbidden",
        ),
        (
            vec![json_type, ("host", "attacker.example")],
            question.clone(),
            403,
            "forbidden",
        ),
        (
            vec![("content-type", "text/plain")],
            question.clone(),
            415,
            "unsupported_media_type",
        ),
        (vec![], question.clone(), 415, "unsupported_media_type"),
        (
            vec![("content-type", "multipart/form-data; boundary=x")],
            question.clone(),
            415,
            "unsupported_media_type",
        ),
        (
            vec![json_type],
            format!("{question} {{}}"),
            400,
            "invalid_json",
        ),
        (
            vec![json_type],
            json!({"query": "Who founded Rome?", "thread_id": "t".repeat(129)}).to_string(),
            413,
            "too_large",
        ),
    ];
    for (headers, body, status, kind) in cases {
        let (got, reply) = refusal_of(&app, search(&headers, &body)).await;
        assert_eq!(got.as_u16(), status, "{headers:?}: {reply}");
        if !kind.is_empty() {
            assert_eq!(reply["error"]["kind"], kind, "{headers:?}: {reply}");
            assert_eq!(reply["error"]["retryable"], false, "{reply}");
        }
    }
    // A cross-site form aimed at the ingest route is refused before it is read.
    let form = Request::post("/v1/ingest")
        .header(header::HOST, "localhost:8080")
        .header(header::ORIGIN, "https://evil.example")
        .header(header::CONTENT_TYPE, "multipart/form-data; boundary=x")
        .body(Body::from("--x--"))
        .unwrap();
    assert_eq!(refusal_of(&app, form).await.0, StatusCode::FORBIDDEN);
    // No route, or not this method: JSON too.
    let (status, reply) =
        refusal_of(&app, Request::get("/nowhere").body(Body::empty()).unwrap()).await;
    assert_eq!(
        (status, reply["error"]["kind"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, reply) = refusal_of(
        &app,
        Request::get("/v1/search").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(
        (status, reply["error"]["kind"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
}

#[tokio::test]
async fn a_spent_quota_says_retryable_beside_retry_after() {
    let tokens = vec![ferret_server::BearerToken::new("dave", "token-dave")
        .unwrap()
        .with_requests_per_minute(std::num::NonZeroU32::new(1).unwrap())];
    let app = router(state(Arc::new(wiki()), Limits::default()).with_tokens(tokens));
    let search = || {
        Request::post("/v1/search")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, "Bearer token-dave")
            .body(Body::from(
                json!({"query": "Who founded Rome?"}).to_string(),
            ))
            .unwrap()
    };
    assert_eq!(
        app.clone().oneshot(search()).await.unwrap().status(),
        StatusCode::OK
    );
    let (status, reply) = refusal_of(&app, search()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply["error"]["retryable"], true, "{reply}");
}
