//! One test over every case in `fixtures/search/`: ingest the case's corpus into a fresh index, run
//! its query through the whole pipeline, and compare the outcome with the case's snapshot.

use std::path::{Path, PathBuf};

use ferret::{Ferret, IngestOptions, LocalIndex, Query, Response};
use serde_json::json;

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/search");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    cases.sort();
    cases
}

/// The parts of a response a user relies on; timings and the full trace vary between runs, and
/// ids of chunked files carry the checkout's absolute path, which is cut to the case folder.
fn view(response: &Response, case: &Path) -> serde_json::Value {
    let prefix = format!("{}/", case.canonicalize().unwrap().display());
    json!({
        "response_type": response.response_type,
        "answer": response.answer,
        "message": response.message,
        "citations": response.citations.iter().map(|c| format!("[{}] {}", c.marker, c.title)).collect::<Vec<_>>(),
        "hits": response.hits.iter().map(|h| h.id.0.trim_start_matches(&prefix).to_owned()).collect::<Vec<_>>(),
        "failures": response.failures.len(),
        "stop_reason": response.stop_reason,
    })
}

#[tokio::test]
async fn every_fixture_case_matches_its_snapshot() {
    let cases = cases();
    assert!(cases.len() >= 5, "fixture cases missing: {cases:?}");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let query: Query = serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap())
            .unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
        let dir = tempfile::tempdir().unwrap();
        let mut index = LocalIndex::open_or_create(dir.path()).unwrap();
        let corpus = [case.join("corpus.jsonl"), case.join("corpus")].into_iter().find(|p| p.exists()).expect("a corpus");
        let report = futures::executor::block_on(index.ingest_path(&corpus, IngestOptions::default(), &mut |_, _| {})).unwrap();
        assert!(report.issues.is_empty(), "{name}: {:?}", report.issues);
        drop(index);
        let ferret = Ferret::builder().local_index(dir.path()).build().unwrap();
        let response = ferret.search(query).await.unwrap();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(&case);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_input_file(case.join("case.json"));
        settings.bind(|| insta::assert_json_snapshot!("answer", view(&response, &case)));
    }
}
