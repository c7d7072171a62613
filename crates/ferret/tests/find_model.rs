//! Every case under `fixtures/find-model/<case>/`: a model file to find (or a ComfyUI workflow
//! whose missing files are found), the hubs' answers as recorded in the case (written from the
//! providers' documented examples; `README.md` there names the pages), each hub served by its own
//! mock server. The case states the status, the top candidate and the failures it expects; the
//! plan, the calls, the ranking and the answer are pinned as a snapshot. A case with `faults`
//! runs once per fault, that hub answering every call with it, the other hub as recorded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferret::backends::{CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig};
use ferret::jobs::find_model::{
    read_workflow, FileOutcome, FileRequest, FindStatus, Gate, ModelSource, ModelsDir, Workflow,
};
use ferret::jobs::search::TraceStep;
use ferret::{Ferret, Response};
use ferret_test_support::hubs::{HubCatalogue, HubStandIn};
use futures::FutureExt as _;
use serde::Deserialize;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// How long a hub call may take in these cases; a timeout fault answers later.
const HUB_TIMEOUT: Duration = Duration::from_millis(400);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows.
    description: String,
    /// One file to find.
    #[serde(default)]
    request: Option<FileRequest>,
    /// A workflow in the case folder whose files are found instead.
    #[serde(default)]
    workflow: Option<String>,
    /// Files already under the models folder (`loras/x.safetensors`), for a workflow.
    #[serde(default)]
    models_dir: Vec<String>,
    /// The hubs configured (default: both).
    #[serde(default = "both_hubs")]
    hubs: Vec<ModelSource>,
    /// The recorded answers.
    #[serde(default)]
    responses: Vec<Route>,
    /// Faults to run the case under, one run each.
    #[serde(default)]
    faults: Vec<Fault>,
    /// One per file searched, in the workflow's order.
    expect: Vec<Expected>,
    /// Results a hub gives per page at most (default as many as asked).
    #[serde(default = "full_pages")]
    page_size: usize,
    /// Files of the workflow found in the models folder, not searched.
    #[serde(default)]
    present: Vec<String>,
}

fn full_pages() -> usize {
    100
}

fn both_hubs() -> Vec<ModelSource> {
    ModelSource::ALL.to_vec()
}

/// One recorded answer: a hub's path (and query parameters) and what it returns.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Route {
    hub: ModelSource,
    path: String,
    /// The documentation page the answer is written from.
    source: String,
    #[serde(default)]
    query: BTreeMap<String, String>,
    #[serde(default = "ok")]
    status: u16,
    /// A file of the case folder holding the body.
    #[serde(default)]
    body: Option<String>,
    /// The body as raw text.
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    delay_ms: u64,
}

fn ok() -> u16 {
    200
}

/// Every call to `hub` answered alike.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Fault {
    /// Its name in the snapshot.
    name: String,
    hub: ModelSource,
    status: u16,
    #[serde(default)]
    raw: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    delay_ms: u64,
    /// Answer only the first this many requests so (a passing fault); always when absent.
    #[serde(default)]
    times: Option<u64>,
    /// The status expected under this fault.
    expect_status: FindStatus,
    /// Whether the fault ends as a failure named in `failures` (a passing one is retried).
    fails: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    file_name: String,
    status: FindStatus,
    #[serde(default)]
    top: Option<Top>,
    /// Backends named in `failures`.
    #[serde(default)]
    failures: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Top {
    file_name: String,
    source: ModelSource,
    #[serde(default)]
    min_confidence: u8,
    #[serde(default = "hundred")]
    max_confidence: u8,
    #[serde(default)]
    folder: Option<String>,
    #[serde(default)]
    gate: Option<Gate>,
}

fn hundred() -> u8 {
    100
}

fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/find-model");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn template(
    status: u16,
    body: String,
    headers: &BTreeMap<String, String>,
    delay_ms: u64,
) -> ResponseTemplate {
    let mut response = ResponseTemplate::new(status)
        .set_body_raw(body, "application/json")
        .set_delay(Duration::from_millis(delay_ms));
    for (name, value) in headers {
        response = response.insert_header(name.as_str(), value.as_str());
    }
    response
}

/// Whether `route` is a hub's search: its answer goes into the stand-in's catalogue, which
/// answers each search as the hub does, rather than to any one query.
fn is_search(route: &Route) -> bool {
    route.status == 200 && matches!(route.path.as_str(), "/api/models" | "/api/v1/models")
}

/// What the case's recorded searches hold: the Hub's repositories and Civitai's models.
fn catalogue(case: &Case, dir: &Path) -> HubCatalogue {
    let mut catalogue = HubCatalogue::default();
    for route in case.responses.iter().filter(|r| is_search(r)) {
        let body: serde_json::Value = serde_json::from_str(&body(route, dir))
            .unwrap_or_else(|e| panic!("{}: {}: {e}", dir.display(), route.path));
        let (held, listed) = match route.hub {
            ModelSource::HuggingFace => (&mut catalogue.huggingface, body),
            ModelSource::Civitai => (&mut catalogue.civitai, body["items"].clone()),
        };
        for entry in listed.as_array().into_iter().flatten() {
            if !held.iter().any(|h| h["id"] == entry["id"]) {
                held.push(entry.clone());
            }
        }
    }
    catalogue
}

fn body(route: &Route, dir: &Path) -> String {
    match (&route.body, &route.raw) {
        (Some(file), _) => std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {file}: {e}", dir.display())),
        (None, Some(raw)) => raw.clone(),
        (None, None) => String::new(),
    }
}

/// A server per hub: the fault when there is one, the case's recorded answers other than
/// searches, and otherwise the hub's stand-in over the case's catalogue, answering searches as
/// the hub does (the Hub by repository id, Civitai by model name, never by file name).
async fn hubs(case: &Case, dir: &Path, fault: Option<&Fault>) -> BTreeMap<ModelSource, MockServer> {
    let catalogue = Arc::new(catalogue(case, dir));
    let mut servers = BTreeMap::new();
    for &hub in &case.hubs {
        let server = MockServer::start().await;
        if let Some(fault) = fault.filter(|f| f.hub == hub) {
            let mut mock = Mock::given(method("GET"))
                .respond_with(template(
                    fault.status,
                    fault.raw.clone(),
                    &fault.headers,
                    fault.delay_ms,
                ))
                .with_priority(1);
            if let Some(times) = fault.times {
                mock = mock.up_to_n_times(times);
            }
            mock.mount(&server).await;
        }
        for route in case.responses.iter().filter(|r| r.hub == hub) {
            assert!(
                route.source.starts_with("https://"),
                "{}: each recorded answer names the documentation page it is written from",
                dir.display()
            );
            if is_search(route) {
                continue;
            }
            let mut mock = Mock::given(method("GET")).and(path(route.path.as_str()));
            for (key, value) in &route.query {
                mock = mock.and(query_param(key.as_str(), value.as_str()));
            }
            mock.respond_with(template(
                route.status,
                body(route, dir),
                &route.headers,
                route.delay_ms,
            ))
            .with_priority(3)
            .mount(&server)
            .await;
        }
        HubStandIn::new(hub, catalogue.clone())
            .with_page_size(case.page_size)
            .mount(&server, 5)
            .await;
        servers.insert(hub, server);
    }
    servers
}

fn finder(servers: &BTreeMap<ModelSource, MockServer>) -> Ferret {
    let mut builder = Ferret::builder();
    for (hub, server) in servers {
        let backend: Arc<dyn ferret::SearchBackend> = match hub {
            ModelSource::Civitai => Arc::new(
                CivitaiBackend::new(CivitaiConfig {
                    base_url: server.uri(),
                    timeout: HUB_TIMEOUT,
                    ..CivitaiConfig::with_key(None)
                })
                .unwrap(),
            ),
            ModelSource::HuggingFace => Arc::new(
                HuggingFaceBackend::new(HuggingFaceConfig {
                    base_url: server.uri(),
                    timeout: HUB_TIMEOUT,
                    ..HuggingFaceConfig::with_token(None)
                })
                .unwrap(),
            ),
        };
        builder = builder.backend(backend);
    }
    builder.build().unwrap()
}

/// The case's workflow, its files already in the models folder marked so.
fn workflow(case: &Case, dir: &Path, models: &Path) -> Workflow {
    let workflow = case
        .workflow
        .as_ref()
        .expect("a case has a request or a workflow");
    for file in &case.models_dir {
        let path = models.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"weights").unwrap();
    }
    let mut workflow =
        read_workflow(&dir.join(workflow)).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    ModelsDir::new(models).mark_held(&mut workflow);
    workflow
}

/// What a reader of the finder's output relies on, as text, each mock server's address written
/// as its hub's name (the port changes between runs).
fn view(response: &Response, servers: &BTreeMap<ModelSource, MockServer>) -> String {
    let mut out = String::new();
    for step in &response.trace.steps {
        match step {
            TraceStep::Plan { plan, .. } => {
                out.push_str("plan:\n");
                for line in plan.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            TraceStep::BackendCall {
                backend,
                query,
                hits,
                error,
                ..
            } => {
                let outcome = error
                    .as_deref()
                    .map_or_else(|| format!("{hits} files"), |e| format!("failed: {e}"));
                out.push_str(&format!("call {backend} `{query}`: {outcome}\n"));
            }
            TraceStep::Ranking { candidates, .. } => {
                out.push_str("ranking:\n");
                for c in candidates {
                    let rules: Vec<String> = c
                        .rules
                        .iter()
                        .map(|r| format!("{} {:+}", r.rule, r.points))
                        .collect();
                    out.push_str(&format!(
                        "  {} ({}, {}) {}: {}\n",
                        c.file_name,
                        c.name,
                        c.source,
                        c.confidence,
                        rules.join(", ")
                    ));
                }
            }
            _ => {}
        }
    }
    if let Some(find) = &response.model_file {
        out.push_str(&format!("status: {:?}\n", find.status));
        if let Some(best) = find.best() {
            out.push_str(&format!(
                "best: {} on {} at {}, {} bytes, sha256 {}, folder {}\n  download: {}\n  reason: {}\n",
                best.file_name,
                best.source,
                best.url.as_deref().unwrap_or("-"),
                best.size_bytes.map_or("-".into(), |s| s.to_string()),
                best.sha256.as_deref().unwrap_or("-"),
                best.folder.as_deref().unwrap_or("-"),
                best.download_url.as_deref().unwrap_or("-"),
                best.reason,
            ));
        }
    }
    for failure in &response.failures {
        out.push_str(&format!(
            "failure: {}: {}\n",
            failure.error.backend, failure.error.message
        ));
    }
    out.push_str(&format!(
        "answer: {}\n",
        response
            .answer
            .as_deref()
            .or(response.message.as_deref())
            .unwrap_or("-")
    ));
    for (hub, server) in servers {
        out = out.replace(&server.uri(), &format!("<{hub}>"));
    }
    out
}

fn check(
    name: &str,
    expected: &Expected,
    response: &Response,
    servers: &BTreeMap<ModelSource, MockServer>,
) {
    let find = response
        .model_file
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no model_file"));
    assert_eq!(find.requested.file_name, expected.file_name, "{name}");
    assert_eq!(
        find.status,
        expected.status,
        "{name}: status\n{}",
        view(response, servers)
    );
    let failed: Vec<&str> = response
        .failures
        .iter()
        .map(|f| f.error.backend.as_str())
        .collect();
    for backend in &expected.failures {
        assert!(
            failed.contains(&backend.as_str()),
            "{name}: {backend} not in failures {failed:?}"
        );
    }
    if expected.failures.is_empty() {
        assert!(failed.is_empty(), "{name}: unexpected failures {failed:?}");
    }
    match (&expected.top, find.best()) {
        (Some(top), Some(best)) => {
            assert_eq!(
                best.file_name,
                top.file_name,
                "{name}: top file\n{}",
                view(response, servers)
            );
            assert_eq!(best.source, top.source, "{name}: top source");
            assert!(
                (top.min_confidence..=top.max_confidence).contains(&best.confidence),
                "{name}: confidence {} not in {}..={}",
                best.confidence,
                top.min_confidence,
                top.max_confidence
            );
            if let Some(folder) = &top.folder {
                assert_eq!(best.folder.as_ref(), Some(folder), "{name}: folder");
            }
            assert_eq!(best.gate, top.gate, "{name}: gate");
            // The answer cites the candidate's hit, which the response lists.
            assert!(
                response.hits.iter().any(|h| h.id == best.hit_id),
                "{name}: hit missing"
            );
            assert_eq!(
                response.citations.first().map(|c| &c.hit_id),
                Some(&best.hit_id)
            );
        }
        (None, None) => assert!(response.message.is_some(), "{name}: nothing found says so"),
        (Some(_), None) => panic!("{name}: no candidate\n{}", view(response, servers)),
        (None, Some(best)) => panic!("{name}: unexpected candidate {}", best.file_name),
    }
}

async fn run(name: &str, case: &Case, dir: &Path, fault: Option<&Fault>) -> String {
    let servers = hubs(case, dir, fault).await;
    let ferret = finder(&servers);
    let models = tempfile::tempdir().unwrap();
    // One file through `find_model`, a workflow's through `find_models`, as a user calls them.
    let (responses, present) = match &case.request {
        Some(request) => (vec![ferret.find_model(request).await], Vec::new()),
        None => {
            let found = ferret
                .find_models(&workflow(case, dir, models.path()))
                .await;
            let mut present = Vec::new();
            let mut responses = Vec::new();
            for file in found.files {
                match file.outcome {
                    FileOutcome::Present(_) => present.push(file.model.file_name),
                    FileOutcome::Searched(response) => responses.push(Ok(*response)),
                    FileOutcome::NotSearched(error) => responses.push(Err(error)),
                }
            }
            (responses, present)
        }
    };
    assert_eq!(
        present, case.present,
        "{name}: files found in the models folder"
    );
    assert_eq!(responses.len(), case.expect.len(), "{name}: files searched");
    let mut snapshot = format!("{}\n", case.description);
    for file in &present {
        snapshot.push_str(&format!("\n== {file}: already in the models folder\n"));
    }
    for (response, expected) in responses.into_iter().zip(&case.expect) {
        let response = response.unwrap_or_else(|e| panic!("{name}: {e}"));
        match fault {
            Some(fault) => {
                let find = response.model_file.as_ref().unwrap();
                assert_eq!(
                    find.status,
                    fault.expect_status,
                    "{name}: status\n{}",
                    view(&response, &servers)
                );
                let failed = response
                    .failures
                    .iter()
                    .any(|f| f.error.backend == fault.hub.as_str());
                assert_eq!(
                    failed, fault.fails,
                    "{name}: failures {:?}",
                    response.failures
                );
                // The other hub still answered.
                assert!(
                    !fault.fails || find.best().is_some_and(|b| b.source != fault.hub),
                    "{name}\n{}",
                    view(&response, &servers)
                );
            }
            None => check(name, expected, &response, &servers),
        }
        snapshot.push_str(&format!(
            "\n== {}\n{}",
            expected.file_name,
            view(&response, &servers)
        ));
    }
    snapshot
}

#[tokio::test]
async fn every_find_model_case_finds_what_it_expects() {
    let dirs = case_dirs();
    assert!(dirs.len() >= 12, "at least twelve cases");
    let mut failed = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join("case.json")).unwrap();
        let case: Case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut runs = vec![(name.clone(), None)];
        runs.extend(
            case.faults
                .iter()
                .map(|f| (format!("{name}-{}-{}", f.hub, f.name), Some(f))),
        );
        for (run_name, fault) in runs {
            // Every case runs, and the failures are listed together at the end.
            let checked = std::panic::AssertUnwindSafe(async {
                let snapshot = run(&run_name, &case, &dir, fault).await;
                insta::with_settings!({ snapshot_path => "snapshots/find_model", prepend_module_to_snapshot => false }, {
                    insta::assert_snapshot!(run_name.clone(), snapshot);
                });
            })
            .catch_unwind()
            .await;
            if checked.is_err() {
                failed.push(run_name);
            }
        }
    }
    assert!(failed.is_empty(), "cases that failed: {failed:?}");
}
