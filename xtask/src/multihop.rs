//! The multi-hop report (HotpotQA): for each mode, the share of questions with every relevant
//! document in the top 2, 5 and 10, split by the question type in the queries' `metadata.type`,
//! with backend calls per question and latency. Retrieval modes are one search each; `agentic`
//! is the whole pipeline as `Ferret::search` runs it (strategy chooser, hops, grading).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use ferret_backends_local::LocalIndex;
use ferret_core::RetrievalMode;
use ferret_embed::LocalEmbedder;
use serde::Serialize;

use crate::agentic::LlmChoice;

const DEPTHS: [usize; 3] = [2, 5, 10];

/// What one question gave in one mode.
struct Outcome {
    kind: String,
    /// Every relevant document within the top k, per depth of [`DEPTHS`].
    found_all: [bool; 3],
    backend_calls: u32,
    millis: f64,
}

#[derive(Serialize)]
pub(crate) struct ModeRow {
    mode: String,
    queries: usize,
    /// Type (and `all`) to the share of questions with every relevant document in the top k.
    both_at: BTreeMap<String, BTreeMap<usize, f64>>,
    /// Questions per type.
    counts: BTreeMap<String, usize>,
    backend_calls_per_question: f64,
    latency_ms_p50: f64,
    latency_ms_p99: f64,
    /// For the agent: how it compares, question by question, with the search it starts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    versus: Option<Versus>,
}

/// The agent against one search in the mode it starts from.
#[derive(Serialize)]
struct Versus {
    start: String,
    /// Type (and `all`) to questions improved and worsened at 5.
    improved_worsened_at_5: BTreeMap<String, (usize, usize)>,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    documents: usize,
    llm: LlmChoice,
    model: Option<String>,
    modes: Vec<ModeRow>,
    command: String,
}

/// The inputs of one report.
pub(crate) struct MultiHopRun<'a> {
    pub name: &'a str,
    pub queries: &'a [(String, String)],
    pub qrels: &'a HashMap<String, HashMap<String, f64>>,
    pub types: &'a HashMap<String, String>,
    pub llm: LlmChoice,
    pub wall_time: Duration,
    pub out: &'a Path,
    pub report: &'a str,
    pub misses: Option<&'a Path>,
    pub ranking: ferret::config::NameRanking,
}

/// Run the retrieval `modes` over `index`, then (with `agentic`) the pipeline over the same
/// index, and write `<out>/<report>.{md,json}`.
pub(crate) fn run(
    run: &MultiHopRun<'_>,
    index: LocalIndex,
    model: Option<LocalEmbedder>,
    modes: &[RetrievalMode],
    agentic: bool,
) -> anyhow::Result<()> {
    let documents = index.len();
    let mut rows = Vec::new();
    // The search the agent starts from (hybrid when the index has vectors), to compare with.
    let start = if model.is_some() {
        RetrievalMode::Hybrid
    } else {
        RetrievalMode::Bm25
    };
    let mut start_outcomes: Option<Vec<Outcome>> = None;
    for &mode in modes {
        let mut outcomes = Vec::with_capacity(run.queries.len());
        for (id, text) in run.queries {
            let started = Instant::now();
            let hits = crate::judged::search_one(&index, model.as_ref(), mode, text, 10)?;
            let ranked: Vec<&str> = hits.iter().map(|h| h.id.0.as_str()).collect();
            outcomes.push(outcome(run, id, &ranked, 1, started.elapsed()));
        }
        rows.push(summarise(mode.as_str(), &outcomes));
        println!("{}", line(rows.last().expect("just pushed")));
        if mode == start {
            start_outcomes = Some(outcomes);
        }
    }
    let dir = index.dir().to_owned();
    // The index admits one opener; the pipeline opens it again.
    drop(index);
    // The model is loaded only for the pipeline, which alone asks it.
    let llm_model = if agentic { run.llm.model()? } else { None };
    if agentic {
        let (ferret, runtime) = crate::agentic::pipeline(
            &dir,
            Some(start),
            model,
            llm_model
                .clone()
                .map(|m| (m, ferret::models::StageModelConfig::default())),
            run.ranking,
        )?;
        let mut outcomes = Vec::with_capacity(run.queries.len());
        let mut misses = String::new();
        for (id, text) in run.queries {
            let started = Instant::now();
            let response =
                runtime.block_on(ferret.search(crate::agentic::question(text, run.wall_time)?))?;
            let ranked: Vec<&str> = response.hits.iter().map(|h| h.id.0.as_str()).collect();
            let outcome = outcome(
                run,
                id,
                &ranked,
                response.usage.backend_calls,
                started.elapsed(),
            );
            if !outcome.found_all[1] {
                misses += &miss_line(run, id, text, &response)?;
            }
            outcomes.push(outcome);
        }
        if let Some(path) = run.misses {
            std::fs::write(path, misses)?;
        }
        let mut row = summarise("agentic", &outcomes);
        row.versus = start_outcomes
            .as_deref()
            .map(|before| versus(start, before, &outcomes));
        rows.push(row);
        println!("{}", line(rows.last().expect("just pushed")));
    }
    let report = Report {
        dataset: run.name.to_owned(),
        documents,
        llm: run.llm,
        model: llm_model.map(|m| m.name().to_owned()),
        modes: rows,
        command: crate::report::command_line(),
    };
    let markdown = render(&report);
    print!("{markdown}");
    crate::report::write_report(&run.out.join(run.report), &report, &markdown)?;
    Ok(())
}

/// One missed question as a JSON line: what was asked and searched, what came back, what was wanted.
fn miss_line(
    run: &MultiHopRun<'_>,
    id: &str,
    text: &str,
    response: &ferret::Response,
) -> anyhow::Result<String> {
    let queries: Vec<&String> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            ferret_core::TraceStep::Queries { queries, .. } => Some(queries),
            _ => None,
        })
        .flatten()
        .collect();
    let line = serde_json::json!({
        "id": id,
        "type": run.types.get(id),
        "question": text,
        "gold": run.qrels[id].keys().collect::<Vec<_>>(),
        "queries": queries,
        "found": response.hits.iter().map(|h| format!("{} {}", h.id.0, h.title)).collect::<Vec<_>>(),
        "stop": response.stop_reason,
    });
    Ok(serde_json::to_string(&line)? + "\n")
}

fn outcome(
    run: &MultiHopRun<'_>,
    id: &str,
    ranked: &[&str],
    backend_calls: u32,
    elapsed: Duration,
) -> Outcome {
    let relevant = &run.qrels[id];
    let found_all = DEPTHS.map(|k| {
        relevant
            .keys()
            .all(|doc| ranked.iter().take(k).any(|r| r == doc))
    });
    let kind = run
        .types
        .get(id)
        .cloned()
        .unwrap_or_else(|| "untyped".into());
    Outcome {
        kind,
        found_all,
        backend_calls,
        millis: elapsed.as_secs_f64() * 1000.0,
    }
}

/// Per question type, how many questions the agent improved and worsened against `before`, one
/// search in `start` mode: both supporting documents in the top 5 where they were not, or the
/// reverse.
fn versus(start: RetrievalMode, before: &[Outcome], after: &[Outcome]) -> Versus {
    let mut by_type: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (b, a) in before.iter().zip(after) {
        for group in ["all", a.kind.as_str()] {
            let counts = by_type.entry(group.to_owned()).or_default();
            counts.0 += usize::from(a.found_all[1] && !b.found_all[1]);
            counts.1 += usize::from(!a.found_all[1] && b.found_all[1]);
        }
    }
    Versus {
        start: start.as_str().to_owned(),
        improved_worsened_at_5: by_type,
    }
}

fn summarise(mode: &str, outcomes: &[Outcome]) -> ModeRow {
    let mut both_at: BTreeMap<String, BTreeMap<usize, f64>> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for o in outcomes {
        for group in ["all", o.kind.as_str()] {
            *counts.entry(group.to_owned()).or_default() += 1;
            let shares = both_at.entry(group.to_owned()).or_default();
            for (depth, found) in DEPTHS.iter().zip(o.found_all) {
                *shares.entry(*depth).or_default() += f64::from(u8::from(found));
            }
        }
    }
    for (group, shares) in &mut both_at {
        let n = counts[group] as f64;
        shares.values_mut().for_each(|v| *v /= n);
    }
    let mut millis: Vec<f64> = outcomes.iter().map(|o| o.millis).collect();
    millis.sort_by(f64::total_cmp);
    let n = outcomes.len().max(1) as f64;
    ModeRow {
        mode: mode.to_owned(),
        queries: outcomes.len(),
        both_at,
        counts,
        backend_calls_per_question: outcomes
            .iter()
            .map(|o| f64::from(o.backend_calls))
            .sum::<f64>()
            / n,
        latency_ms_p50: crate::judged::percentile(&millis, 0.50),
        latency_ms_p99: crate::judged::percentile(&millis, 0.99),
        versus: None,
    }
}

fn line(row: &ModeRow) -> String {
    let all = &row.both_at["all"];
    format!(
        "{}: both@2 {:.3}, both@5 {:.3}, both@10 {:.3}, {:.2} calls/q",
        row.mode, all[&2], all[&5], all[&10], row.backend_calls_per_question
    )
}

fn render(report: &Report) -> String {
    let groups: Vec<&String> = report
        .modes
        .first()
        .map(|r| r.both_at.keys().collect())
        .unwrap_or_default();
    let mut md = format!(
        "# {}: multi-hop retrieval\n\nGenerated by `{}`: {} documents; language model: {}.\n\n\
         Share of questions with both supporting documents in the top k, by question type; backend calls and \
         latency per question.\n\n",
        report.dataset,
        report.command,
        report.documents,
        report.model.as_deref().unwrap_or("none (heuristic stages)")
    );
    md += "| mode |";
    for g in &groups {
        let n = report.modes[0].counts[*g];
        md += &format!(" {g} ({n}) @2 | @5 | @10 |");
    }
    md += " calls/q | p50 ms | p99 ms |\n|---|";
    md += &"---|---|---|".repeat(groups.len());
    md += "---|---|---|\n";
    for row in &report.modes {
        md += &format!("| {} |", row.mode);
        for g in &groups {
            for depth in DEPTHS {
                md += &format!(
                    " {:.3} |",
                    row.both_at
                        .get(*g)
                        .and_then(|s| s.get(&depth))
                        .copied()
                        .unwrap_or_default()
                );
            }
        }
        md += &format!(
            " {:.2} | {:.2} | {:.2} |\n",
            row.backend_calls_per_question, row.latency_ms_p50, row.latency_ms_p99
        );
    }
    for row in &report.modes {
        if let Some(v) = &row.versus {
            md += &format!(
                "\n{} against one {} search, questions improved / worsened at 5:",
                row.mode, v.start
            );
            for (group, (improved, worsened)) in &v.improved_worsened_at_5 {
                md += &format!(" {group} +{improved} / -{worsened};");
            }
            md.pop();
            md += ".\n";
        }
    }
    md
}

/// Query id to `metadata.type`, for queries that have one.
pub(crate) fn read_query_types(path: &Path) -> anyhow::Result<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)?;
    let mut types = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        if let (Some(id), Some(kind)) = (v["_id"].as_str(), v["metadata"]["type"].as_str()) {
            types.insert(id.to_owned(), kind.to_owned());
        }
    }
    Ok(types)
}
