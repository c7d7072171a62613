//! `cargo xtask eval --mode agentic`: the whole pipeline per question (guardrail, analysis,
//! refine loop, grading, synthesis), with or without a language model. Reports what the user
//! sees (nDCG@10 and recall over the hits of the response) and what it cost: seconds, backend
//! calls and tokens per question, and, per stage, how the model's calls ended.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret::config::{BridgeConfig, NameRanking};
use ferret::jobs::search::{LlmCallOutcome, ResponseType, RetrievalMode, TraceStep};
use ferret::models::{
    Embedder, LanguageModel, LocalEmbedder, LocalModel, LocalModelConfig, OpenAiConfig,
    OpenAiModel, StageModelConfig, WeightFormat, SMOLLM2_FILE,
};
use ferret::{Budget, Ferret, Query};
use serde::Serialize;

use crate::judged::{ndcg_at, recall_at};

/// The model the stages ask during an agentic run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmChoice {
    /// Heuristic stages only.
    None,
    /// SmolLM2-135M in-process (`cargo xtask models` first).
    Local,
    /// Gemma 3 270M in-process (`cargo xtask models --gemma` first), with the same stages as
    /// `local`.
    Gemma,
    /// The same model writing freely, as it did before its replies were decoded under their
    /// schema: weights in f32, no repeat penalty, tolerant parsing and a repair request, and
    /// asked to write the answer.
    LocalFree,
    /// An OpenAI-compatible server: `FERRET_LLM_BASE_URL` and `FERRET_LLM_MODEL` (as
    /// `.ci/llama-server start` prints them), `FERRET_LLM_FORMAT` for its structured-output
    /// dialect.
    Openai,
}

impl LlmChoice {
    /// The model the stages will ask, loaded or connected; `None` for the heuristics.
    pub(crate) fn model(self) -> anyhow::Result<Option<Arc<dyn LanguageModel>>> {
        Ok(match self {
            Self::None => None,
            Self::Local => Some(Arc::new(LocalModel::smollm2(
                &ferret::models::default_models_dir(),
            )?)),
            Self::Gemma => Some(Arc::new(LocalModel::load(LocalModelConfig::new(
                ferret::models::default_models_dir().join(ferret::models::GEMMA3_270M_FILE),
            ))?)),
            Self::LocalFree => {
                let mut config =
                    LocalModelConfig::new(ferret::models::default_models_dir().join(SMOLLM2_FILE));
                config.constrain_json = false;
                config.repeat_penalty = 1.0;
                config.weights = WeightFormat::F32;
                config.writes_answers = true;
                Some(Arc::new(LocalModel::load(config)?))
            }
            Self::Openai => {
                let var = |name: &str| {
                    std::env::var(name).map_err(|_| {
                        anyhow::anyhow!("--llm openai needs {name} (run `.ci/llama-server start`)")
                    })
                };
                let mut config =
                    OpenAiConfig::new(var("FERRET_LLM_BASE_URL")?, var("FERRET_LLM_MODEL")?);
                if let Ok(format) = std::env::var("FERRET_LLM_FORMAT") {
                    config.schema_support = format.parse().map_err(anyhow::Error::msg)?;
                }
                // A CPU server answers one request at a time; the stages' calls queue.
                config.timeout = Duration::from_secs(300);
                Some(Arc::new(OpenAiModel::new(config)?))
            }
        })
    }
}

/// How one stage's model calls ended. A call is accepted when its reply parsed and the stage's
/// own checks let it through, so its answer was used; refused when it parsed but the checks
/// said no; failed when no reply parsed. Refused and failed calls fell back to the heuristic.
#[derive(Default, Serialize, Clone, Copy)]
pub(crate) struct StageCalls {
    pub accepted: u32,
    /// Accepted after one repair request (a subset of `accepted`).
    pub repaired: u32,
    pub refused: u32,
    pub failed: u32,
    /// Time the calls took, and their tokens.
    pub millis: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl StageCalls {
    pub fn calls(&self) -> u32 {
        self.accepted + self.refused + self.failed
    }

    pub fn parsed(&self) -> u32 {
        self.accepted + self.refused
    }

    pub fn add(&mut self, other: &StageCalls) {
        self.accepted += other.accepted;
        self.repaired += other.repaired;
        self.refused += other.refused;
        self.failed += other.failed;
        self.millis += other.millis;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// Count the model calls of `response` by stage into `stages`; returns one mark per call
/// (`stage:a` accepted, `:r` repaired, `:x` refused, `:f` failed) for the progress line.
pub(crate) fn tally_stage_calls(
    response: &ferret::Response,
    stages: &mut BTreeMap<String, StageCalls>,
) -> String {
    let mut marks = String::new();
    for step in &response.trace.steps {
        if let TraceStep::LlmCall(call) = step {
            let counts = stages.entry(call.caller.clone()).or_default();
            counts.millis += call.duration_ms;
            counts.prompt_tokens += call.prompt_tokens;
            counts.completion_tokens += call.completion_tokens;
            let mark = match call.outcome {
                LlmCallOutcome::Parsed => {
                    counts.accepted += 1;
                    'a'
                }
                LlmCallOutcome::Repaired => {
                    counts.accepted += 1;
                    counts.repaired += 1;
                    'r'
                }
                LlmCallOutcome::Refused { .. } => {
                    counts.refused += 1;
                    'x'
                }
                LlmCallOutcome::Failed { .. } => {
                    counts.failed += 1;
                    'f'
                }
            };
            marks.push_str(&format!(" {}:{mark}", call.caller));
        }
    }
    marks
}

/// The stage table of a report: one row per stage, then all stages together.
pub(crate) fn stage_table(stages: &BTreeMap<String, StageCalls>) -> String {
    let mut total = StageCalls::default();
    let mut md = String::from(
        "| stage | calls | parsed | accepted | refused | failed | repaired | s/call | prompt tokens/call | completion tokens/call |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let share = |n: u32, of: u32| 100.0 * f64::from(n) / f64::from(of.max(1));
    let mut row = |name: &str, c: &StageCalls| {
        md.push_str(&format!(
            "| {name} | {} | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {} | {:.2} | {:.0} | {:.0} |\n",
            c.calls(),
            share(c.parsed(), c.calls()),
            share(c.accepted, c.calls()),
            share(c.refused, c.calls()),
            share(c.failed, c.calls()),
            c.repaired,
            c.millis as f64 / 1000.0 / f64::from(c.calls().max(1)),
            c.prompt_tokens as f64 / f64::from(c.calls().max(1)),
            c.completion_tokens as f64 / f64::from(c.calls().max(1)),
        ));
    };
    for (stage, calls) in stages {
        row(stage, calls);
        total.add(calls);
    }
    row("**all**", &total);
    md
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
    model: Option<(Arc<dyn LanguageModel>, StageModelConfig)>,
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
    if let Some((model, stages)) = model {
        builder = builder.language_model(model).stage_model(stages);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok((builder.build()?, runtime))
}

/// A question as the evaluation asks it: the ten hits an answer shows, `wall_time` to answer,
/// and as long for any one call (a model on a loaded CPU is measured, not cut short).
pub(crate) fn question(text: &str, wall_time: Duration) -> anyhow::Result<Query> {
    Ok(Query::new(text.to_owned())?
        .with_limit(10)?
        .with_budget(Budget {
            wall_time,
            call_deadline: wall_time,
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
    let model = llm.model()?;
    let (ferret, runtime) = pipeline(
        index_dir,
        None,
        None,
        model.clone().map(|m| (m, StageModelConfig::default())),
        NameRanking::Rules,
    )?;

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
        let outcomes = tally_stage_calls(&response, &mut stage_calls);
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
        stage_calls,
        command: crate::report::command_line(),
    };
    let mut markdown = format!(
        "# {name}: agentic, llm {llm:?}\n\nGenerated by `{}`.\n\n\
         | queries | nDCG@10 | Recall@10 | answered | s/question | backend calls/q | tokens/q | model requests/q |\n\
         |---|---|---|---|---|---|---|---|\n\
         | {} | {:.4} | {:.4} | {:.0}% | {:.1} | {:.1} | {:.0} | {:.1} |\n",
        report.command,
        report.queries,
        report.ndcg_at_10,
        report.recall_at_10,
        report.answered_share * 100.0,
        report.seconds_per_question,
        report.backend_calls_per_question,
        report.tokens_per_question,
        report.llm_requests_per_question,
    );
    if !report.stage_calls.is_empty() {
        markdown.push('\n');
        markdown.push_str(&stage_table(&report.stage_calls));
    }
    print!("{markdown}");
    let stem = out.join(format!(
        "{name}-agentic-{}",
        format!("{llm:?}").to_lowercase()
    ));
    crate::report::write_report(&stem, &report, &markdown)?;
    Ok(())
}
