//! The leak test: every case under `fixtures/access/` runs its requests against a server whose
//! index holds documents of several groups, and checks that nothing a principal may not read
//! reaches them (see `fixtures/access/README.md`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use ferret::{Ferret, IngestOptions, LocalIndex, PathDocuments, Unlisted};
use ferret_server::{router, AppState, BearerToken, Limits};
use serde::Deserialize;
use serde_json::Value;
use tower::ServiceExt;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    private_by_default: bool,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(rename = "as")]
    asker: Option<String>,
    route: String,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    status: u16,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    expect: Vec<String>,
    #[serde(default)]
    forbidden: Vec<String>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/access")
}

/// The principals of the README's table.
fn tokens() -> Vec<BearerToken> {
    let token = |name: &str, groups: &[&str]| {
        BearerToken::new(name, format!("token-{name}"))
            .unwrap()
            .with_groups(groups.iter().copied())
    };
    vec![
        token("alice", &["finance"]),
        token("bob", &["legal", "research"]),
        token("carol", &[]),
        token("dave", &[]).with_requests_per_minute(NonZeroU32::new(2).unwrap()),
    ]
}

/// What of `document` may not appear: its id and each of its sentences.
fn traces_of(document: &Value) -> Vec<String> {
    let mut traces = vec![document["id"].as_str().unwrap().to_owned()];
    traces.extend(
        document["text"]
            .as_str()
            .unwrap()
            .split(". ")
            .map(|s| s.trim_end_matches('.').to_owned())
            .filter(|s| s.len() >= 20),
    );
    traces
}

async fn served(case: &Case, corpus: &str) -> (tempfile::TempDir, axum::Router) {
    let dir = tempfile::tempdir().unwrap();
    let index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let mut documents = PathDocuments::default();
    let options = IngestOptions::default();
    documents.add_upload("corpus.jsonl", corpus.as_bytes(), options.max_chunk_chars);
    let report = index
        .ingest_read(documents, options, &mut |_, _| {})
        .await
        .unwrap();
    assert!(report.issues.is_empty(), "{:?}", report.issues);
    drop(index);
    let ferret = Ferret::builder()
        .local_index(dir.path().join("index"))
        .build()
        .unwrap();
    let unlisted = if case.private_by_default {
        Unlisted::Private
    } else {
        Unlisted::Public
    };
    let state = AppState::new(ferret, Limits::default())
        .with_tokens(tokens())
        .with_unlisted(unlisted);
    (dir, router(state))
}

fn request_of(step: &Step) -> Request<Body> {
    let mut request = Request::post(step.route.as_str());
    if let Some(asker) = &step.asker {
        request = request.header(header::AUTHORIZATION, format!("Bearer token-{asker}"));
    }
    let (content_type, body) = match (&step.body, &step.raw) {
        (Some(body), None) => ("application/json".to_owned(), body.to_string()),
        (None, Some(raw)) => (
            step.content_type
                .clone()
                .expect("a raw body names its type"),
            raw.clone(),
        ),
        _ => panic!("a step has a body or a raw body"),
    };
    request
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .unwrap()
}

#[tokio::test]
async fn no_document_reaches_a_principal_outside_its_groups() {
    let corpus = std::fs::read_to_string(fixtures().join("corpus.jsonl")).unwrap();
    let mut documents: HashMap<String, Value> = corpus
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|doc| (doc["id"].as_str().unwrap().to_owned(), doc))
        .collect();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 8, "the cases are there: {cases:?}");
    for dir in cases {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let case: Case =
            serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (_index, app) = served(&case, &corpus).await;
        for (n, step) in case.steps.iter().enumerate() {
            let at = format!("{name} step {}", n + 1);
            // Documents a step ingests can be forbidden to later steps.
            if let Some(raw) = &step.raw {
                for line in raw.lines().filter(|l| !l.trim().is_empty()) {
                    if let Ok(doc) = serde_json::from_str::<Value>(line) {
                        if let Some(id) = doc["id"].as_str() {
                            documents.insert(id.to_owned(), doc.clone());
                        }
                    }
                }
            }
            let response = app.clone().oneshot(request_of(step)).await.unwrap();
            let status = response.status();
            let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(
                status,
                StatusCode::from_u16(step.status).unwrap(),
                "{at}: {text}"
            );
            if status == StatusCode::TOO_MANY_REQUESTS {
                assert!(retry_after.is_some(), "{at}: a refusal says when to retry");
            }
            if let Some(kind) = &step.kind {
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(body["error"]["kind"], kind.as_str(), "{at}: {text}");
            }
            for id in &step.expect {
                assert!(
                    text.contains(id.as_str()),
                    "{at}: {id} is missing from {text}"
                );
            }
            for id in &step.forbidden {
                let document = documents
                    .get(id)
                    .unwrap_or_else(|| panic!("{at}: no document {id}"));
                for trace in traces_of(document) {
                    assert!(!text.contains(&trace), "{at}: `{trace}` leaked into {text}");
                }
            }
        }
    }
}
