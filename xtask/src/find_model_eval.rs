//! `cargo xtask eval find-model`: the model-file finder on a set of files from real workflows,
//! against stand-ins of Civitai and the HuggingFace Hub that answer as the providers document
//! (the Hub's search matches repository ids, Civitai's model names; neither matches file
//! names), holding a catalogue written by hand from the hubs' public model pages. Each file is
//! judged right (FOUND, and the model or repository that holds it; or, for a file no hub holds,
//! not FOUND), wrong (FOUND, and anything else) or uncertain (not FOUND, though a hub holds it),
//! by type, with calls and seconds per file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ferret::backends::{CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig};
use ferret::jobs::find_model::{FileRequest, FindStatus, ModelSource, ModelType};
use ferret::jobs::search::TraceStep;
use ferret::Ferret;
use ferret_test_support::hubs::{HubCatalogue, HubStandIn};
use serde::{Deserialize, Serialize};

use crate::judged::Half;

/// One file of the set.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    file_name: String,
    #[serde(default)]
    model_type: Option<ModelType>,
    /// Where the file is: each an acceptable answer. Empty: on neither hub.
    expect: Vec<Holder>,
    /// The catalogue holds a misleading file for it (a near name, another type).
    #[serde(default)]
    decoy: bool,
    /// The workflows the file name comes from.
    seen_in: String,
}

#[derive(Deserialize, Serialize, Clone)]
#[serde(deny_unknown_fields)]
struct Holder {
    source: ModelSource,
    /// The repository id (the Hub) or the model's name (Civitai).
    model: String,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Right,
    Wrong,
    Uncertain,
}

#[derive(Serialize)]
struct FileRow {
    id: String,
    file_name: String,
    kind: String,
    status: String,
    top: Option<String>,
    verdict: Verdict,
    decoy: bool,
    calls: usize,
    seconds: f64,
}

#[derive(Serialize)]
struct Report {
    command: String,
    build: &'static str,
    dataset: String,
    half: Option<String>,
    files: usize,
    right: usize,
    wrong: usize,
    uncertain: usize,
    decoys_found: usize,
    calls_per_file: f64,
    seconds_per_file: f64,
    rows: Vec<FileRow>,
}

/// Run the set in `dataset` (its `catalogue.json` and `cases.jsonl`), one half of it when
/// asked, and write the report under `out` as `report`.
pub(crate) fn run(
    dataset: &Path,
    half: Option<Half>,
    out: &Path,
    report: Option<&str>,
) -> anyhow::Result<()> {
    let catalogue: HubCatalogue = serde_json::from_str(
        &std::fs::read_to_string(dataset.join("catalogue.json"))
            .with_context(|| format!("reading {}/catalogue.json", dataset.display()))?,
    )
    .context("catalogue.json")?;
    let cases: Vec<Case> = std::fs::read_to_string(dataset.join("cases.jsonl"))
        .with_context(|| format!("reading {}/cases.jsonl", dataset.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("cases.jsonl")?;
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|c| half.is_none_or(|h| h.holds(&c.id)))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let rows = runtime.block_on(find_all(Arc::new(catalogue), &cases))?;
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let files = rows.len().max(1) as f64;
    let report_data = Report {
        command: crate::report::command_line(),
        build: crate::report::build_profile(),
        dataset: dataset.display().to_string(),
        half: half.map(|h| h.name().to_owned()),
        files: rows.len(),
        right: count(Verdict::Right),
        wrong: count(Verdict::Wrong),
        uncertain: count(Verdict::Uncertain),
        decoys_found: rows
            .iter()
            .filter(|r| r.decoy && r.status == FindStatus::Found.as_str())
            .count(),
        calls_per_file: rows.iter().map(|r| r.calls).sum::<usize>() as f64 / files,
        seconds_per_file: rows.iter().map(|r| r.seconds).sum::<f64>() / files,
        rows,
    };
    let name = crate::report::report_name("find-model", half, report);
    let markdown = markdown(&report_data);
    print!("{markdown}");
    crate::report::write_report(&out.join(name), &report_data, &markdown)
}

async fn find_all(catalogue: Arc<HubCatalogue>, cases: &[Case]) -> anyhow::Result<Vec<FileRow>> {
    let civitai = HubStandIn::new(ModelSource::Civitai, catalogue.clone())
        .start()
        .await;
    let hub = HubStandIn::new(ModelSource::HuggingFace, catalogue)
        .start()
        .await;
    // The stand-ins have no rate limit: the hubs' own are lifted so that a run measures the
    // finder, not the pacing (calls per file are reported instead).
    let ferret = Ferret::builder()
        .backend(Arc::new(CivitaiBackend::new(CivitaiConfig {
            base_url: civitai.uri(),
            rate_per_second: std::num::NonZeroU32::new(1000).unwrap_or(std::num::NonZeroU32::MIN),
            ..CivitaiConfig::with_key(None)
        })?))
        .backend(Arc::new(HuggingFaceBackend::new(HuggingFaceConfig {
            base_url: hub.uri(),
            requests_per_minute: std::num::NonZeroU32::new(100_000),
            timeout: Duration::from_secs(10),
            ..HuggingFaceConfig::with_token(None)
        })?))
        .build()?;
    let mut rows = Vec::new();
    for case in cases {
        let mut request = FileRequest::new(case.file_name.as_str())?;
        request.model_type = case.model_type;
        let started = Instant::now();
        let response = ferret.find_model(&request).await?;
        let seconds = started.elapsed().as_secs_f64();
        let calls = response
            .trace
            .steps
            .iter()
            .filter(|s| matches!(s, TraceStep::BackendCall { .. }))
            .count();
        let find = response
            .model_file
            .with_context(|| format!("{}: the finder gave no result", case.id))?;
        let best = find.best();
        let top_is_expected = best.is_some_and(|b| {
            case.expect.iter().any(|h| {
                h.source == b.source
                    && (b.name == h.model || b.name.starts_with(&format!("{} (", h.model)))
            })
        });
        let found = find.status == FindStatus::Found;
        let verdict = match (case.expect.is_empty(), found, top_is_expected) {
            (true, false, _) | (false, true, true) => Verdict::Right,
            (_, true, _) => Verdict::Wrong,
            (false, false, _) => Verdict::Uncertain,
        };
        rows.push(FileRow {
            id: case.id.clone(),
            file_name: case.file_name.clone(),
            kind: case
                .model_type
                .map_or("other".to_owned(), |t| t.as_str().to_owned()),
            status: find.status.as_str().to_owned(),
            top: best.map(|b| format!("{} in {} ({})", b.file_name, b.name, b.source)),
            verdict,
            decoy: case.decoy,
            calls,
            seconds,
        });
        let _ = &case.seen_in;
    }
    Ok(rows)
}

fn markdown(report: &Report) -> String {
    let mut md = String::new();
    md.push_str("# Model-file finder: files from real workflows on hub stand-ins\n\n");
    md.push_str(&format!(
        "Command: `{}` ({}). Stand-ins answer as the providers document their search (the Hub by repository id, Civitai by model name, never by file name); see `{}/README.md`.\n\n",
        report.command, report.build, report.dataset
    ));
    md.push_str(&format!(
        "**{} files{}: {} right, {} wrong, {} uncertain ({:.0}% right); decoys FOUND: {}; {:.1} calls and {:.1} ms a file.**\n\n",
        report.files,
        report.half.as_ref().map(|h| format!(" ({h} half)")).unwrap_or_default(),
        report.right,
        report.wrong,
        report.uncertain,
        100.0 * report.right as f64 / report.files.max(1) as f64,
        report.decoys_found,
        report.calls_per_file,
        report.seconds_per_file * 1000.0
    ));
    let mut by_kind: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for row in &report.rows {
        let slot = by_kind.entry(row.kind.as_str()).or_default();
        slot[row.verdict as usize] += 1;
    }
    md.push_str("| type | right | wrong | uncertain |\n|---|---|---|---|\n");
    for (kind, [right, wrong, uncertain]) in &by_kind {
        md.push_str(&format!("| {kind} | {right} | {wrong} | {uncertain} |\n"));
    }
    md.push_str(
        "\n| file | type | status | verdict | top candidate | calls |\n|---|---|---|---|---|---|\n",
    );
    for row in &report.rows {
        md.push_str(&format!(
            "| `{}`{} | {} | {} | {:?} | {} | {} |\n",
            row.file_name,
            if row.decoy { " (decoy)" } else { "" },
            row.kind,
            row.status,
            row.verdict,
            row.top.as_deref().unwrap_or("-"),
            row.calls
        ));
    }
    md
}
