//! `POST /v1/ingest` over a real embedded index: documents sent as JSONL or as files, or named
//! by a path under the ingest root, reach the index the server searches; bad lines and files
//! are named in the report while the rest is written; what the server may not read is refused.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use ferret::Ferret;
use ferret_server::{router, AppState, Limits};
use serde_json::{json, Value};
use tempfile::TempDir;
use tower::ServiceExt;

mod common;
use common::{post, read_json, seeded_index, sse_events};

fn served(dir: &TempDir) -> AppState {
    let ferret = Ferret::builder()
        .local_index(dir.path().join("index"))
        .build()
        .unwrap();
    AppState::new(ferret, Limits::default())
}

fn ingest_request(route: &str, content_type: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(route)
        .header(header::CONTENT_TYPE, content_type)
        .body(body.into())
        .unwrap()
}

/// A `multipart/form-data` body holding `files` (name, content).
fn form(files: &[(&str, &str)]) -> (String, String) {
    let boundary = "ferret-test-boundary";
    let mut body = String::new();
    for (name, content) in files {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n{content}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn search_titles(app: &axum::Router, question: &str) -> Vec<String> {
    let response = app
        .clone()
        .oneshot(post(
            "/v1/search",
            json!({"query": question, "options": {"strategy": "single_pass"}}).to_string(),
        ))
        .await
        .unwrap();
    let body = read_json(response).await;
    body["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["title"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn jsonl_records_are_written_and_bad_lines_are_named() {
    let dir = seeded_index().await;
    let app = router(served(&dir));
    // Searched once before, so a cached result would hide the new page.
    assert!(!search_titles(&app, "Who founded Rome?")
        .await
        .contains(&"Romulus".to_owned()));
    let records = [
        json!({"id": "romulus", "title": "Romulus", "text": "Romulus founded Rome in 753 BC."})
            .to_string(),
        "{not json".to_owned(),
        json!({"id": "remus", "title": "Remus", "text": "Remus was the twin brother of Romulus."})
            .to_string(),
        json!({"id": "empty", "text": ""}).to_string(),
    ]
    .join("\n");
    let response = app
        .clone()
        .oneshot(ingest_request(
            "/v1/ingest",
            "application/x-ndjson",
            records,
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let reply = read_json(response).await;
    assert_eq!(reply["added"], 2, "{reply}");
    assert_eq!(reply["documents"], 3, "{reply}");
    let bad_lines: Vec<u64> = reply["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|issue| issue["line"].as_u64().unwrap())
        .collect();
    assert_eq!(bad_lines, [2, 4], "{reply}");
    assert!(search_titles(&app, "Who founded Rome?")
        .await
        .contains(&"Romulus".to_owned()));
}

#[tokio::test]
async fn files_in_a_form_are_chunked_and_sending_one_again_replaces_it() {
    let dir = seeded_index().await;
    let app = router(served(&dir));
    let notes = "# Aqueducts\n\nThe Aqua Appia was the first Roman aqueduct.\n\n## Later\n\nThe Aqua Claudia was finished in 52 AD.\n";
    let (content_type, body) = form(&[("aqueducts.md", notes), ("scan.pdf", "%PDF-1.7")]);
    let response = app
        .clone()
        .oneshot(ingest_request("/v1/ingest", &content_type, body))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let reply = read_json(response).await;
    assert_eq!(reply["added"], 2, "two sections: {reply}");
    assert_eq!(reply["files"], 2, "{reply}");
    let issue = &reply["issues"][0];
    assert_eq!(issue["file"], "scan.pdf", "{reply}");
    assert!(issue["message"]
        .as_str()
        .unwrap()
        .contains("unsupported file type"));

    let (content_type, body) = form(&[("aqueducts.md", notes), ("aqueducts.md", notes)]);
    let response = app
        .clone()
        .oneshot(ingest_request("/v1/ingest", &content_type, body))
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "two files under one name would overwrite each other"
    );

    let shorter = "# Aqueducts\n\nThe Aqua Appia was the first Roman aqueduct.\n";
    let (content_type, body) = form(&[("aqueducts.md", shorter)]);
    let response = app
        .clone()
        .oneshot(ingest_request("/v1/ingest", &content_type, body))
        .await
        .unwrap();
    let reply = read_json(response).await;
    assert_eq!(reply["removed"], 1, "the dropped section is gone: {reply}");
    assert_eq!(reply["documents"], 2, "{reply}");
}

#[tokio::test]
async fn a_path_is_read_only_under_the_ingest_root() {
    let dir = seeded_index().await;
    let root = dir.path().join("shared");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("rome.jsonl"),
        json!({"id": "forum", "title": "Forum", "text": "The Forum was the centre of Rome."})
            .to_string(),
    )
    .unwrap();
    std::fs::write(dir.path().join("secret.txt"), "not to be read").unwrap();

    let no_root = router(served(&dir));
    let response = no_root
        .oneshot(post(
            "/v1/ingest",
            json!({"path": "rome.jsonl"}).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(read_json(response).await["error"]["field"], "path");

    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let outside = dir.path().join("secret.txt");
    let nowhere = dir.path().join("nowhere.txt");
    let app = router(served(&dir).with_ingest_root(&root));
    for (path, status) in [
        ("rome.jsonl", StatusCode::OK),
        ("../secret.txt", StatusCode::FORBIDDEN),
        // Outside the root, a file that exists and one that does not are refused alike.
        (outside.to_str().unwrap(), StatusCode::FORBIDDEN),
        (nowhere.to_str().unwrap(), StatusCode::FORBIDDEN),
        #[cfg(unix)]
        ("link.txt", StatusCode::FORBIDDEN),
        ("missing.jsonl", StatusCode::NOT_FOUND),
    ] {
        let response = app
            .clone()
            .oneshot(post("/v1/ingest", json!({"path": path}).to_string()))
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{path}");
        if status == StatusCode::OK {
            assert_eq!(read_json(response).await["added"], 1);
        }
    }
    let response = app
        .oneshot(post(
            "/v1/ingest",
            json!({"path": "rome.jsonl", "recursive": true}).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST, "unknown field");
}

#[tokio::test]
async fn the_stream_reports_progress_then_the_report() {
    let dir = seeded_index().await;
    let app = router(served(&dir));
    let records: Vec<String> = (0..300)
        .map(|i| {
            json!({"id": format!("p{i}"), "text": format!("Page {i} about Rome.")}).to_string()
        })
        .collect();
    let response = app
        .oneshot(ingest_request(
            "/v1/ingest/stream",
            "application/x-ndjson",
            records.join("\n"),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let events = sse_events(&String::from_utf8_lossy(&bytes));
    let progress: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "progress")
        .map(|(_, data)| data)
        .collect();
    assert!(progress.len() >= 2, "one per batch: {events:?}");
    assert_eq!(progress.last().unwrap()["done"], 300);
    let (name, last) = events.last().unwrap();
    assert_eq!(name, "done");
    assert_eq!(last["added"], 300);
    assert_eq!(last["documents"], 301);
}

#[tokio::test]
async fn what_cannot_be_ingested_is_refused() {
    let dir = seeded_index().await;
    let app = router(served(&dir));
    let refused = |status: StatusCode, kind: &'static str| (status, kind);
    let cases = [
        (
            ingest_request("/v1/ingest", "text/csv", "id,text\n1,Rome"),
            refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
        ),
        (
            ingest_request("/v1/ingest", "application/x-ndjson", "\n\n"),
            refused(StatusCode::BAD_REQUEST, "invalid_request"),
        ),
        (
            post("/v1/ingest", "{\"path\": 7}"),
            refused(StatusCode::BAD_REQUEST, "invalid_json"),
        ),
    ];
    for (request, (status, kind)) in cases {
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), status);
        assert_eq!(read_json(response).await["error"]["kind"], kind);
    }

    // One process opens an index once: the server above lets go of it first.
    drop(app);
    let small = Limits {
        max_ingest_bytes: 64,
        ..Limits::default()
    };
    let ferret = Ferret::builder()
        .local_index(dir.path().join("index"))
        .build()
        .unwrap();
    let response = router(AppState::new(ferret, small))
        .oneshot(ingest_request(
            "/v1/ingest",
            "application/x-ndjson",
            "x".repeat(1_000),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_server_without_an_index_of_its_own_says_where_documents_go() {
    let ferret = Ferret::builder().default_corpus().build().unwrap();
    let response = router(AppState::new(ferret, Limits::default()))
        .oneshot(ingest_request(
            "/v1/ingest",
            "application/x-ndjson",
            json!({"id": "a", "text": "b"}).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let body = read_json(response).await;
    assert_eq!(body["error"]["kind"], "not_writable");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--index"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_and_an_ingest_share_the_index_and_both_finish() {
    let dir = seeded_index().await;
    let state = served(&dir);
    let app = router(state.clone());
    let records: Vec<String> = (0..2_000)
        .map(|i| json!({"id": format!("d{i}"), "text": format!("Document {i} about the Tiber and Rome.")}).to_string())
        .collect();
    let ingest = tokio::spawn(app.clone().oneshot(ingest_request(
        "/v1/ingest",
        "application/x-ndjson",
        records.join("\n"),
    )));
    let mut searches = Vec::new();
    for _ in 0..5 {
        searches.push(tokio::spawn(search_titles_owned(app.clone())));
    }
    for search in searches {
        let titles = search.await.unwrap();
        assert!(!titles.is_empty(), "a search during the ingest finds pages");
    }
    let response = ingest.await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(read_json(response).await["documents"], 2_001);
}

async fn search_titles_owned(app: axum::Router) -> Vec<String> {
    search_titles(&app, "Which river flows through Rome?").await
}
