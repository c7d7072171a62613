//! `cargo xtask eval --mode agentic`: the whole pipeline per question (guardrail, analysis,
//! refine loop, grading, synthesis), with or without a language model. Reports what the user
//! sees (nDCG@10 and recall over the hits of the response) and what it cost: seconds, backend
//! calls and tokens per question, and, per stage, how the model's calls ended.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret::{
    BridgeConfig, Budget, Embedder, Ferret, LanguageModel, LlmCallOutcome, LocalEmbedder,
    LocalModel, NameRanking, Query, ResponseType, RetrievalMode, TraceStep,
};
use serde::Serialize;

use crate::eval::{ndcg_at, recall_at};

/// The model the stages ask during an agentic run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmChoice {
    /// Heuristic stages only.
    None,
    /// SmolLM2-135M in-process (`cargo xtask models` first).
    Local,
}

#[derive(Default, Serialize)]
struct StageCalls {
    parsed: u32,
    repaired: u32,
    fell_back: u32,
}

#[derive(Serialize)]
pub struct AgenticReport {
    dataset: String,
    llm: LlmChoice,
    model: Option<String>,
    queries: usize,
    ndcg_at_10: f64,
    recall_at_10: f64,
    answered_share: f64,
    seconds_per_question: f64,
    backend_calls_per_question: f64,
    tokens_per_question: f64,
    llm_requests_per_question: f64,
    stage_calls: BTreeMap<String, StageCalls>,
    parsed_share: f64,
    repaired_share: f64,
    fell_back_share: f64,
    command: String,
}

/// The whole pipeline over the index in `dir`, as `Ferret::search` runs it for a user: ranking
/// in `start` (the index's default when `None`), embedding queries with `embedder` (the model
/// that made the index's vectors), its stages asking `model` when one is given and ranking
/// bridge names by `ranking`.
pub(crate) fn pipeline(
    dir: &Path,
    start: Option<RetrievalMode>,
    embedder: Option<LocalEmbedder>,
    model: Option<Arc<dyn LanguageModel>>,
    ranking: NameRanking,
) -> anyhow::Result<(Ferret, tokio::runtime::Runtime)> {
    let mut builder = Ferret::builder().local_index(dir).bridge(BridgeConfig {
        ranking,
        ..BridgeConfig::default()
    });
    if let Some(mode) = start {
        builder = builder.retrieval(mode);
    }
    if let Some(embedder) = embedder {
        builder = builder.embedder(Arc::new(embedder) as Arc<dyn Embedder>);
    }
    if let Some(model) = model {
        builder = builder.language_model(model);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok((builder.build()?, runtime))
}

/// A question as the evaluation asks it: the ten hits an answer shows, `wall_time` to answer.
pub(crate) fn question(text: &str, wall_time: Duration) -> anyhow::Result<Query> {
    Ok(Query::new(text.to_owned())?
        .with_limit(10)?
        .with_budget(Budget {
            wall_time,
            ..Budget::default()
        }))
}

pub fn run(
    name: &str,
    index_dir: &Path,
    queries: &[(String, String)],
    qrels: &HashMap<String, HashMap<String, f64>>,
    llm: LlmChoice,
    wall_time: Duration,
    out: &Path,
) -> anyhow::Result<()> {
    let model: Option<Arc<dyn LanguageModel>> = match llm {
        LlmChoice::None => None,
        LlmChoice::Local => Some(Arc::new(
            LocalModel::smollm2(&ferret::default_models_dir())?,
        )),
    };
    let (ferret, runtime) = pipeline(index_dir, None, None, model.clone(), NameRanking::Rules)?;

    let (mut ndcg, mut recall, mut answered, mut backend_calls, mut tokens, mut requests) =
        (0.0, 0.0, 0, 0u64, 0u64, 0u64);
    let mut stage_calls: BTreeMap<String, StageCalls> = BTreeMap::new();
    let started = Instant::now();
    for (i, (id, text)) in queries.iter().enumerate() {
        let t = Instant::now();
        let response = runtime.block_on(ferret.search(question(text, wall_time)?))?;
        let ranked: Vec<&str> = response.hits.iter().map(|h| h.id.0.as_str()).collect();
        ndcg += ndcg_at(&ranked, &qrels[id], 10);
        recall += recall_at(&ranked, &qrels[id], 10);
        answered += usize::from(response.response_type == ResponseType::Results);
        backend_calls += u64::from(response.usage.backend_calls);
        tokens += response.usage.prompt_tokens + response.usage.completion_tokens;
        requests += u64::from(response.usage.llm_calls);
        let mut outcomes = String::new();
        for step in &response.trace.steps {
            if let TraceStep::LlmCall(call) = step {
                let counts = stage_calls.entry(call.caller.clone()).or_default();
                let mark = match call.outcome {
                    LlmCallOutcome::Parsed => {
                        counts.parsed += 1;
                        'p'
                    }
                    LlmCallOutcome::Repaired => {
                        counts.repaired += 1;
                        'r'
                    }
                    _ => {
                        counts.fell_back += 1;
                        'f'
                    }
                };
                outcomes.push_str(&format!(" {}:{mark}", call.caller));
            }
        }
        let spent = response.usage.prompt_tokens + response.usage.completion_tokens;
        eprintln!(
            "{}/{}: {:.1}s, {spent} tokens, {:?};{outcomes}",
            i + 1,
            queries.len(),
            t.elapsed().as_secs_f64(),
            response.stop_reason
        );
    }
    let n = queries.len() as f64;
    let total = |f: fn(&StageCalls) -> u32| f64::from(stage_calls.values().map(f).sum::<u32>());
    let calls = total(|c| c.parsed + c.repaired + c.fell_back).max(1.0);
    let report = AgenticReport {
        dataset: name.to_owned(),
        llm,
        model: model.map(|m| m.name().to_owned()),
        queries: queries.len(),
        ndcg_at_10: ndcg / n,
        recall_at_10: recall / n,
        answered_share: answered as f64 / n,
        seconds_per_question: started.elapsed().as_secs_f64() / n,
        backend_calls_per_question: backend_calls as f64 / n,
        tokens_per_question: tokens as f64 / n,
        llm_requests_per_question: requests as f64 / n,
        parsed_share: total(|c| c.parsed) / calls,
        repaired_share: total(|c| c.repaired) / calls,
        fell_back_share: total(|c| c.fell_back) / calls,
        stage_calls,
        command: crate::eval::command_line(),
    };
    let mut markdown = format!(
        "# {name}: agentic, llm {llm:?}\n\nGenerated by `{}`.\n\n\
         | queries | nDCG@10 | Recall@10 | answered | s/question | backend calls/q | tokens/q | model requests/q | parsed | repaired | fell back |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n\
         | {} | {:.4} | {:.4} | {:.0}% | {:.1} | {:.1} | {:.0} | {:.1} | {:.0}% | {:.0}% | {:.0}% |\n",
        report.command,
        report.queries,
        report.ndcg_at_10,
        report.recall_at_10,
        report.answered_share * 100.0,
        report.seconds_per_question,
        report.backend_calls_per_question,
        report.tokens_per_question,
        report.llm_requests_per_question,
        report.parsed_share * 100.0,
        report.repaired_share * 100.0,
        report.fell_back_share * 100.0,
    );
    if !report.stage_calls.is_empty() {
        markdown.push_str("\n| stage | parsed | repaired | fell back |\n|---|---|---|---|\n");
        for (stage, c) in &report.stage_calls {
            markdown.push_str(&format!(
                "| {stage} | {} | {} | {} |\n",
                c.parsed, c.repaired, c.fell_back
            ));
        }
    }
    print!("{markdown}");
    let stem = out.join(format!(
        "{name}-agentic-{}",
        format!("{llm:?}").to_lowercase()
    ));
    crate::eval::write_report(&stem, &report, &markdown)?;
    Ok(())
}
