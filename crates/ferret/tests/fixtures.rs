//! One test over every case in `fixtures/search/`: build the case's backends (scripted ones from
//! `case.json`, or a fresh embedded index of its `corpus.jsonl` / `corpus/`), its model (a
//! `transcript.jsonl` replayed by a scripted model) and its strategy, run its query through the
//! whole pipeline, and compare the outcome with the case's snapshot.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret::config::AgentConfig;
use ferret::index::{IngestOptions, LocalIndex};
use ferret::jobs::search::{Implementation, TraceStep};
use ferret::models::ScriptedModel;
use ferret::record::Recording;
use ferret::{Ferret, FerretBuilder, Query, Response, Strategy};
use ferret_test_support::{BackendScript, ScriptedBackend};
use serde::Deserialize;
use serde_json::json;

/// What a case's `case.json` holds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// The query, as `ferret::Query` reads it.
    query: Query,
    /// The strategy (default: auto).
    #[serde(default)]
    strategy: Strategy,
    /// Scripted backends; without them the case's corpus is indexed for real.
    #[serde(default)]
    backends: Vec<BackendScript>,
    /// The world a recorded search talked to (`ferret search --record`): the case is replayed
    /// from its `exchanges.jsonl`, read by `Recording::load`.
    #[serde(default)]
    recorded: Option<serde_json::Value>,
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/search");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

/// The parts of a response a user relies on; timings and the full trace vary between runs, and
/// ids of chunked files carry the checkout's absolute path, which is cut to the case folder.
fn view(response: &Response, case: &Path) -> serde_json::Value {
    let prefix = format!("{}/", case.canonicalize().unwrap().display());
    let strategy = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Strategy { chosen, reason } => Some(format!("{chosen} ({reason})")),
        _ => None,
    });
    let calls: Vec<String> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::BackendCall {
                backend,
                query,
                error: None,
                hits,
                ..
            } => Some(format!("{backend}: {query} ({hits} hits)")),
            TraceStep::BackendCall {
                backend,
                query,
                error: Some(error),
                ..
            } => Some(format!("{backend}: {query} failed: {error}")),
            _ => None,
        })
        .collect();
    // The strategy's decisions: each attempt's, each tool step, the plan that ran.
    let by = |i: &Implementation| {
        if matches!(i, Implementation::Llm { .. }) {
            "model"
        } else {
            "heuristic"
        }
    };
    let decisions: Vec<String> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::Attempt {
                attempt, decision, ..
            } => Some(format!("attempt {attempt}: {decision}")),
            TraceStep::ToolStep {
                step,
                tool,
                query,
                error,
                implementation,
                ..
            } => {
                let error = error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                Some(format!(
                    "step {step} ({}): {tool}[{query}]{error}",
                    by(implementation)
                ))
            }
            TraceStep::Plan {
                plan,
                problems,
                implementation,
            } => Some(format!(
                "plan ({}, {} rejected): {}",
                by(implementation),
                problems.len(),
                plan.trim().replace('\n', " / ")
            )),
            _ => None,
        })
        .collect();
    let mut view = json!({
        "response_type": response.response_type,
        "strategy": strategy,
        "calls": calls,
        "decisions": decisions,
        "short_answer": response.short_answer.as_ref().map(|s| {
            let from: Vec<String> = s.citations.iter().map(|c| format!("[{}]", c.marker)).collect();
            format!("{} {}", s.text, from.join(""))
        }),
        "answer": response.answer,
        "message": response.message,
        "citations": response.citations.iter().map(|c| format!("[{}] {}", c.marker, c.title)).collect::<Vec<_>>(),
        "hits": response.hits.iter().map(|h| h.id.0.trim_start_matches(&prefix).to_owned()).collect::<Vec<_>>(),
        "failures": response.failures.iter().map(|f| format!("{}: {:?}", f.error.backend, f.error.kind)).collect::<Vec<_>>(),
        "stop_reason": response.stop_reason,
    });
    // Only cases whose answer states actions show them.
    if let Some(actions) = &response.actions {
        view["actions"] = json!(actions);
    }
    // Only cases with a paid backend show what it billed.
    if !response.usage.paid.is_empty() {
        view["paid"] = json!(response.usage.paid);
    }
    view
}

/// The case's backends: its scripted ones, or its corpus in a fresh embedded index kept in `dir`.
fn with_backends(
    builder: FerretBuilder,
    case: &Path,
    scripts: Vec<BackendScript>,
    dir: &Path,
) -> FerretBuilder {
    if !scripts.is_empty() {
        return scripts.into_iter().fold(builder, |b, script| {
            b.backend(Arc::new(ScriptedBackend::from_script(script)))
        });
    }
    let name = case.file_name().unwrap().to_string_lossy();
    let index = LocalIndex::open_or_create(dir).unwrap();
    let corpus = [case.join("corpus.jsonl"), case.join("corpus")]
        .into_iter()
        .find(|p| p.exists());
    let corpus = corpus.unwrap_or_else(|| panic!("{name}: no scripted backends and no corpus"));
    let report = futures::executor::block_on(index.ingest_path(
        &corpus,
        IngestOptions::default(),
        &mut |_, _| {},
    ))
    .unwrap();
    assert!(report.issues.is_empty(), "{name}: {:?}", report.issues);
    builder.local_index(dir)
}

#[tokio::test]
async fn every_fixture_case_matches_its_snapshot() {
    let cases = cases();
    assert!(cases.len() >= 15, "fixture cases missing: {cases:?}");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(case.join("case.json")).unwrap();
        let Case {
            query,
            strategy,
            backends,
            recorded,
        } = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
        let response = if recorded.is_some() {
            replayed(&case).await
        } else {
            run(&case, query, strategy, backends).await
        };
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(&case);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_input_file(case.join("case.json"));
        settings.bind(|| insta::assert_json_snapshot!("answer", view(&response, &case)));
    }
}

/// The recorded search in `case`, run again from its recording: it must give the response
/// recorded beside it.
async fn replayed(case: &Path) -> Response {
    let name = case.file_name().unwrap().to_string_lossy();
    let recording = Recording::load(case).unwrap_or_else(|e| panic!("{name}: {e}"));
    let response = Ferret::replay(&recording)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(difference) = recording.difference(&response) {
        panic!("{name}: the replay differs from response.json {difference}");
    }
    response
}

/// `query` run with `strategy` on the case's backends and its transcript's model.
async fn run(
    case: &Path,
    query: Query,
    strategy: Strategy,
    backends: Vec<BackendScript>,
) -> Response {
    let name = case.file_name().unwrap().to_string_lossy();
    let dir = tempfile::tempdir().unwrap();
    let mut builder = with_backends(Ferret::builder(), case, backends, dir.path());
    builder = builder.agent(AgentConfig {
        strategy,
        ..AgentConfig::default()
    });
    if let Ok(transcript) = std::fs::read_to_string(case.join("transcript.jsonl")) {
        let model = ScriptedModel::from_jsonl("scripted", &transcript)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        builder = builder.language_model(Arc::new(model));
    }
    // The searcher, and the index it holds, go before the folder the index is in.
    let ferret = builder.build().unwrap();
    let response = ferret.search(query).await.unwrap();
    drop(ferret);
    response
}
