//! The leak test: every case under `fixtures/access/` runs its requests against a server whose
//! index holds documents of several groups, and checks that nothing a principal may not read
//! reaches them (see `fixtures/access/README.md`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use ferret::index::{IngestOptions, LocalIndex, PathDocuments, Unlisted};
use ferret::Ferret;
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
    steps: Vec<Entry>,
}

/// One step, steps sent at once (so that identical searches are in flight together), a write
/// the server is not told of, or a restart.
#[derive(Deserialize)]
#[serde(untagged)]
enum Entry {
    Together {
        together: Vec<Step>,
    },
    /// JSONL records written straight into the index, as another process changes a Qdrant
    /// collection: the server's caches are not told.
    Behind {
        behind_the_server: String,
    },
    Restart {
        restart: Restart,
    },
    One(Box<Step>),
}

/// The server stops and starts again on the same index, its tokens changed: tokens are read
/// at start.
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct Restart {
    /// New groups for these principals.
    #[serde(default)]
    groups: HashMap<String, Vec<String>>,
    /// Principals whose tokens are gone.
    #[serde(default)]
    removed: Vec<String>,
}

/// A call of an MCP tool over `/mcp`, in a session of its own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpCall {
    tool: String,
    arguments: Value,
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
    #[serde(default)]
    mcp: Option<McpCall>,
    /// For an MCP call: is the tool's result an error?
    #[serde(default)]
    tool_error: Option<bool>,
    /// A name for the thread the reply starts.
    #[serde(default)]
    start_thread: Option<String>,
    /// The thread (by the name a step gave it) the request is sent in.
    #[serde(default)]
    in_thread: Option<String>,
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

/// The principals of the README's table, changed by the restarts so far.
fn tokens(changes: &Restart) -> Vec<BearerToken> {
    let token = |name: &str, groups: &[&str]| {
        let groups: Vec<String> = match changes.groups.get(name) {
            Some(changed) => changed.clone(),
            None => groups.iter().map(|g| (*g).to_owned()).collect(),
        };
        BearerToken::new(name, format!("token-{name}"))
            .unwrap()
            .with_groups(groups)
    };
    vec![
        token("alice", &["finance"]).allowing_ingest(),
        token("bob", &["legal", "research"]),
        token("carol", &[]),
        token("dave", &[]).with_requests_per_minute(NonZeroU32::new(2).unwrap()),
        token("operator", &[]).as_operator(),
    ]
    .into_iter()
    .filter(|t| !changes.removed.iter().any(|gone| gone == t.principal()))
    .collect()
}

/// Write the JSONL `records` into `index` straight, as the operator's own process would.
async fn write_records(index: &LocalIndex, records: &str) {
    let mut documents = PathDocuments::default();
    let options = IngestOptions::default();
    documents.add_upload("records.jsonl", records.as_bytes(), options.max_chunk_chars);
    let report = index
        .ingest_read(documents, options, &mut |_, _| {})
        .await
        .unwrap();
    assert!(report.issues.is_empty(), "{:?}", report.issues);
}

/// Write `records` into the served index as its server runs, without telling the server.
async fn write_behind(ferret: &Ferret, records: &str) {
    write_records(ferret.writable_index().expect("the served index"), records).await;
}

/// What of `document` may not appear: its id, title, URL and each of its sentences.
fn traces_of(document: &Value) -> Vec<String> {
    let mut traces: Vec<String> = ["id", "title", "url"]
        .iter()
        .filter_map(|field| document[field].as_str().map(str::to_owned))
        .collect();
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

/// A folder holding an index of `corpus`.
async fn indexed(corpus: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    write_records(&index, corpus).await;
    dir
}

/// The server of `case` over the index in `dir`, its tokens as `changes` leave them.
fn served(case: &Case, dir: &Path, changes: &Restart) -> (Ferret, axum::Router) {
    let ferret = Ferret::builder()
        .local_index(dir.join("index"))
        .build()
        .unwrap();
    let unlisted = if case.private_by_default {
        Unlisted::Private
    } else {
        Unlisted::Public
    };
    let state = AppState::new(ferret.clone(), Limits::default())
        .with_tokens(tokens(changes))
        .with_unlisted(unlisted);
    (ferret, router(state))
}

fn authorized(route: &str, asker: Option<&str>) -> axum::http::request::Builder {
    let request = Request::post(route);
    match asker {
        Some(asker) => request.header(header::AUTHORIZATION, format!("Bearer token-{asker}")),
        None => request,
    }
}

fn request_of(step: &Step, threads: &HashMap<String, String>) -> Request<Body> {
    let request = authorized(&step.route, step.asker.as_deref());
    let (content_type, body) = match (&step.body, &step.raw) {
        (Some(body), None) => {
            let mut body = body.clone();
            if let Some(name) = &step.in_thread {
                let id = threads.get(name).expect("a step started the thread");
                body["thread_id"] = Value::String(id.clone());
            }
            ("application/json".to_owned(), body.to_string())
        }
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

/// The status and the bytes of one response.
async fn sent(app: &axum::Router, request: Request<Body>) -> (StatusCode, Option<String>, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let header_text = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let retry_after = header_text(header::RETRY_AFTER.as_str());
    let session = header_text("mcp-session-id");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let kept = if status == StatusCode::TOO_MANY_REQUESTS {
        retry_after
    } else {
        session
    };
    (status, kept, text)
}

/// One JSON-RPC message to `/mcp`, as a streamable HTTP client sends it.
fn mcp_request(asker: Option<&str>, session: Option<&str>, message: Value) -> Request<Body> {
    let mut request = authorized("/mcp", asker)
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.body(Body::from(message.to_string())).unwrap()
}

/// Open an MCP session for `asker` and call `call.tool`; the status and bytes of the call (or
/// of the refused opening).
async fn mcp_call(app: &axum::Router, asker: Option<&str>, call: &McpCall) -> (StatusCode, String) {
    let opening = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "leak-test", "version": "1"}},
    });
    let (status, session, text) = sent(app, mcp_request(asker, None, opening)).await;
    if status != StatusCode::OK {
        return (status, text);
    }
    let session = session.expect("an MCP session id");
    let ready = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, text) = sent(app, mcp_request(asker, Some(&session), ready)).await;
    assert!(status.is_success(), "initialized: {status} {text}");
    let message = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": call.tool, "arguments": call.arguments},
    });
    let (status, _, text) = sent(app, mcp_request(asker, Some(&session), message)).await;
    (status, text)
}

/// Run `step` and check what came back: the ids of the corpus it shows, and the thread the
/// reply started, if any.
async fn check(
    app: &axum::Router,
    at: &str,
    step: &Step,
    documents: &HashMap<String, Value>,
    threads: &HashMap<String, String>,
) -> (Vec<String>, Option<String>) {
    let (status, text) = match &step.mcp {
        Some(call) => mcp_call(app, step.asker.as_deref(), call).await,
        None => {
            let (status, retry_after, text) = sent(app, request_of(step, threads)).await;
            if status == StatusCode::TOO_MANY_REQUESTS {
                assert!(retry_after.is_some(), "{at}: a refusal says when to retry");
            }
            (status, text)
        }
    };
    assert_eq!(
        status,
        StatusCode::from_u16(step.status).unwrap(),
        "{at}: {text}"
    );
    if let Some(kind) = &step.kind {
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["kind"], kind.as_str(), "{at}: {text}");
    }
    if let Some(error) = step.tool_error {
        assert_eq!(text.contains("\"isError\":true"), error, "{at}: {text}");
    }
    for expected in &step.expect {
        assert!(
            text.contains(expected.as_str()),
            "{at}: {expected} is missing from {text}"
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
    let mut shown: Vec<String> = documents
        .keys()
        .filter(|id| text.contains(id.as_str()))
        .cloned()
        .collect();
    shown.sort();
    let started = step.start_thread.as_ref().map(|_| {
        let reply: Value = serde_json::from_str(&text).unwrap();
        reply["thread_id"]
            .as_str()
            .expect("a chat reply names its thread")
            .to_owned()
    });
    (shown, started)
}

/// What a case carries from one server to the next: the documents as last written, the
/// threads started, and the table so far.
struct Progress {
    documents: HashMap<String, Value>,
    threads: HashMap<String, String>,
    table: Vec<String>,
}

/// The documents `records` (JSONL) write, by id.
fn written(records: &str) -> impl Iterator<Item = (String, Value)> + '_ {
    records
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|doc| Some((doc["id"].as_str()?.to_owned(), doc)))
}

/// Run `entries` (steps up to a restart) against one server; a table row per step (case,
/// path, principal, the ids of the corpus the response shows).
async fn run_entries(
    name: &str,
    entries: &[(usize, &Entry)],
    ferret: &Ferret,
    app: &axum::Router,
    progress: &mut Progress,
) {
    let Progress {
        documents,
        threads,
        table,
    } = progress;
    for &(n, entry) in entries {
        let steps: Vec<&Step> = match entry {
            Entry::One(step) => vec![step.as_ref()],
            Entry::Together { together } => together.iter().collect(),
            Entry::Behind { behind_the_server } => {
                write_behind(ferret, behind_the_server).await;
                // A sentence of the old text may now be forbidden too: both are kept.
                for (id, doc) in written(behind_the_server) {
                    merge(documents, id, doc);
                }
                continue;
            }
            Entry::Restart { .. } => unreachable!("restarts split the steps"),
        };
        // Documents a step ingests can be forbidden to later steps.
        for raw in steps.iter().filter_map(|s| s.raw.as_deref()) {
            for (id, doc) in written(raw) {
                merge(documents, id, doc);
            }
        }
        let checks = steps.iter().enumerate().map(|(k, step)| {
            let at = format!("{name} step {}.{}", n + 1, k + 1);
            let (documents, threads) = (&*documents, &*threads);
            async move {
                let (shown, started) = check(app, &at, step, documents, threads).await;
                let asker = step.asker.as_deref().unwrap_or("(no token)");
                let path = match &step.mcp {
                    Some(call) => format!("/mcp {}", call.tool),
                    None => step.route.clone(),
                };
                let row = format!("| {name} | {path} | {asker} | {} |", shown.join(", "));
                (row, step.start_thread.clone().zip(started))
            }
        });
        for (row, started) in futures::future::join_all(checks).await {
            table.push(row);
            threads.extend(started);
        }
    }
}

/// Keep `doc` as what id `id` may not show: its new text and, when it replaced a document, the
/// old text too (a revoked reader must see neither).
fn merge(documents: &mut HashMap<String, Value>, id: String, doc: Value) {
    let text = match documents.get(&id) {
        Some(old) if old["text"] != doc["text"] => format!(
            "{} {}",
            old["text"].as_str().unwrap_or(""),
            doc["text"].as_str().unwrap_or("")
        ),
        _ => doc["text"].as_str().unwrap_or("").to_owned(),
    };
    let mut doc = doc;
    if let Some(old) = documents.get(&id) {
        for field in ["title", "url"] {
            if doc[field].is_null() {
                doc[field] = old[field].clone();
            }
        }
    }
    doc["text"] = Value::String(text);
    documents.insert(id, doc);
}

/// Run `case` from a fresh index, restarting the server where it says.
fn run_case(
    name: &str,
    case: &Case,
    corpus: &str,
    documents: HashMap<String, Value>,
) -> Vec<String> {
    let setup = tokio::runtime::Runtime::new().unwrap();
    let dir = setup.block_on(indexed(corpus));
    drop(setup);
    let mut progress = Progress {
        documents,
        threads: HashMap::new(),
        table: Vec::new(),
    };
    let mut changes = Restart::default();
    let mut segment: Vec<(usize, &Entry)> = Vec::new();
    let entries = case.steps.iter().enumerate().map(Some).chain([None]);
    for entry in entries {
        match entry {
            Some((n, Entry::Restart { restart })) => {
                run_server(name, case, dir.path(), &changes, &segment, &mut progress);
                segment.clear();
                changes.groups.extend(restart.groups.clone());
                changes.removed.extend(restart.removed.iter().cloned());
                progress
                    .table
                    .push(format!("| {name} | (restart, step {}) | | |", n + 1));
            }
            Some(entry) => segment.push(entry),
            None => run_server(name, case, dir.path(), &changes, &segment, &mut progress),
        }
    }
    progress.table
}

/// Start a server on `dir` with `changes`, run `entries`, and stop it.
fn run_server(
    name: &str,
    case: &Case,
    dir: &Path,
    changes: &Restart,
    entries: &[(usize, &Entry)],
    progress: &mut Progress,
) {
    // A runtime per server: dropping it ends the server's MCP sessions, which hold the index,
    // before the next server opens it or the folder is removed.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (ferret, app) = runtime.block_on(async { served(case, dir, changes) });
    runtime.block_on(run_entries(name, entries, &ferret, &app, progress));
    drop((ferret, app));
    drop(runtime);
}

#[test]
fn no_document_reaches_a_principal_outside_its_groups() {
    let corpus = std::fs::read_to_string(fixtures().join("corpus.jsonl")).unwrap();
    let documents: HashMap<String, Value> = corpus
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
    let mut table = Vec::new();
    for dir in cases {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let case: Case =
            serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        table.extend(run_case(&name, &case, &corpus, documents.clone()));
    }
    println!("| case | path | principal | documents shown |\n|---|---|---|---|");
    for row in table {
        println!("{row}");
    }
}
