use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::judged::Half;
use crate::judged::{ndcg_at, percentile, read_qrels, read_queries, recall_at, search_one};
use anyhow::{bail, Context};
use ferret_backends_local::{IngestOptions, LocalIndex};
use ferret_core::{Embedder, RetrievalMode};
use ferret_embed::{CachedEmbedder, LocalEmbedder, LocalEmbedderConfig, LocalRuntime};
use serde::Serialize;

/// What `cargo xtask eval` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EvalKind {
    /// nDCG@10, Recall@100 and queries per second of the `--mode`s (the agentic one included),
    /// and on multi-hop data the questions' hops.
    Retrieval,
    /// The answers the whole pipeline writes, against the queries' `metadata.answer`.
    Answers,
    /// The model-file finder on a set of files (`--dataset fixtures/find-model-eval`) against
    /// stand-ins of the hubs: right, wrong and uncertain by type, calls and seconds a file.
    FindModel,
    /// The coding agent on errors from many ecosystems (`--dataset fixtures/coding-agent-eval`)
    /// against stand-ins of Tavily and Brave: root cause, expected and wrong actions, provider
    /// calls, repeats in a thread.
    CodingAgent,
}

#[derive(clap::Args, Clone)]
pub struct EvalArgs {
    /// What to measure (default: retrieval).
    #[arg(value_enum)]
    kind: Option<EvalKind>,
    /// A BEIR-layout directory: corpus.jsonl, queries*.jsonl, qrels/*.tsv.
    #[arg(long)]
    dataset: PathBuf,
    /// Queries file (default: the dataset's only queries*.jsonl, or queries.test.jsonl).
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Relevance judgements (default: the dataset's only qrels/*.tsv, or qrels/test.tsv).
    #[arg(long)]
    qrels: Option<PathBuf>,
    /// Modes, comma-separated: bm25, dense, hybrid, agentic (the whole pipeline over the mode a
    /// user gets: hybrid when the index has vectors, else bm25). Agentic alone reports the
    /// stages' model calls; beside other modes, its gain or loss over the search it starts from.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "bm25")]
    mode: Vec<Mode>,
    /// Where indexes are built and reused (default: target/eval-index).
    #[arg(long, default_value = "target/eval-index")]
    index: PathBuf,
    /// Rebuild the index and recompute every embedding, to measure ingest speed.
    #[arg(long)]
    fresh: bool,
    /// Threads for the embedding model (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// The engine that runs the embedding model (auto: ONNX Runtime when its files are there).
    #[arg(long, value_enum, default_value = "auto")]
    runtime: Runtime,
    /// Where the reports are written.
    #[arg(long, default_value = "docs/eval")]
    out: PathBuf,
    /// Report file name, without extension (default: <dataset>-<modes>).
    #[arg(long)]
    report: Option<String>,
    /// Agentic mode: the model the stages ask.
    #[arg(long, value_enum, default_value = "none")]
    llm: crate::agentic::LlmChoice,
    /// Agentic mode: wall time each question may take, in seconds (the default budget's 30 s is
    /// short for a model on a CPU).
    #[arg(long, default_value_t = 30)]
    wall_time: u64,
    /// Answer mode: stages that keep their heuristic in the model pipeline (comma-separated
    /// stage names, as the per-stage table gives them, or `none`), in place of the defaults the
    /// command line uses (`StageModelConfig::small_model` for `--llm local` and `gemma`, else none).
    #[arg(long, value_delimiter = ',', value_name = "STAGE", value_parser = ferret::models::Stage::parse_or_none)]
    heuristic_stages: Vec<Option<ferret::models::Stage>>,
    /// Evaluate only the first N judged queries (agentic runs with a model are slow).
    #[arg(long)]
    limit: Option<usize>,
    /// Evaluate one fixed half of the queries, by the parity of the last hex digit of their id,
    /// so misses can be studied on one half and changes confirmed on the other.
    #[arg(long, value_enum)]
    half: Option<Half>,
    /// Multi-hop data: write the questions the agentic mode misses at 5 (their queries, titles
    /// found and gold titles) to this JSONL file, to study them.
    #[arg(long)]
    misses: Option<PathBuf>,
    /// Agentic mode: how bridge names are ranked (meaning reads them with the index's embedder).
    #[arg(long, value_enum, default_value = "rules")]
    bridge_ranking: BridgeRanking,
}

/// `--bridge-ranking`: [`ferret::config::NameRanking`] on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BridgeRanking {
    Rules,
    Meaning,
}

impl From<BridgeRanking> for ferret::config::NameRanking {
    fn from(ranking: BridgeRanking) -> Self {
        match ranking {
            BridgeRanking::Rules => Self::Rules,
            BridgeRanking::Meaning => Self::Meaning,
        }
    }
}

/// [`LocalRuntime`] on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Runtime {
    Auto,
    Candle,
    Onnx,
}

impl From<Runtime> for LocalRuntime {
    fn from(runtime: Runtime) -> Self {
        match runtime {
            Runtime::Auto => LocalRuntime::Auto,
            Runtime::Candle => LocalRuntime::Candle,
            Runtime::Onnx => LocalRuntime::Onnx,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Bm25,
    Dense,
    Hybrid,
    /// The whole pipeline, as `Ferret::search` runs it.
    Agentic,
    /// The answers the whole pipeline writes, against the queries' `metadata.answer`: the old
    /// spelling of `cargo xtask eval answers`, accepted until the next release.
    #[value(hide = true)]
    Answer,
}

impl Mode {
    fn retrieval(self) -> Option<RetrievalMode> {
        match self {
            Self::Bm25 => Some(RetrievalMode::Bm25),
            Self::Dense => Some(RetrievalMode::Dense),
            Self::Hybrid => Some(RetrievalMode::Hybrid),
            Self::Agentic | Self::Answer => None,
        }
    }
}

/// Published nDCG@10 on SciFact test, drawn beside ours (see `../shared/data/README.md`).
const SCIFACT_ANCHORS: [(&str, f64); 4] = [
    ("bm25s (stemmed)", 0.687),
    ("all-MiniLM-L6-v2 (sentence-transformers)", 0.645),
    ("bm25s + MiniLM, RRF", 0.717),
    ("BM25 (BEIR paper)", 0.665),
];

#[derive(Serialize)]
struct Report {
    dataset: String,
    documents: usize,
    queries: usize,
    ingest: IngestFigures,
    modes: Vec<ModeFigures>,
    /// The whole pipeline, beside the search it starts from.
    agent: Option<AgentFigures>,
    command: String,
}

/// The agent's quality and cost, and how it compares, question by question, with the search it
/// starts from.
#[derive(Serialize)]
struct AgentFigures {
    /// The retrieval mode the agent searches with.
    over: RetrievalMode,
    ndcg_at_10: f64,
    /// Gain (or loss) in nDCG@10 over one search in `over`.
    gain_over_start: f64,
    backend_calls_per_question: f64,
    queries_per_second: f64,
    latency_ms_p50: f64,
    latency_ms_p99: f64,
    /// Questions whose nDCG@10 the agent raised, lowered, or left as the start had it.
    improved: usize,
    worsened: usize,
    unchanged: usize,
    /// Per strategy the agent chose (the question's type as the agent reads it): questions,
    /// improved, worsened, and the nDCG@10 gain over the start on those questions.
    by_strategy: std::collections::BTreeMap<String, StrategyFigures>,
}

#[derive(Serialize, Default)]
struct StrategyFigures {
    questions: usize,
    improved: usize,
    worsened: usize,
    gain_over_start: f64,
}

#[derive(Serialize)]
struct IngestFigures {
    /// Seconds of this run's ingest, when it wrote anything.
    seconds: Option<f64>,
    documents_written: usize,
    documents_embedded: usize,
    /// Documents embedded per second, when this run embedded any.
    embedded_per_second: Option<f64>,
    embedder: Option<String>,
}

#[derive(Serialize)]
pub(crate) struct ModeFigures {
    pub mode: RetrievalMode,
    pub ndcg_at_10: f64,
    pub recall_at_100: f64,
    pub queries_per_second: f64,
    pub latency_ms_p50: f64,
    pub latency_ms_p99: f64,
}

pub fn run(mut args: EvalArgs) -> anyhow::Result<()> {
    if args.kind == Some(EvalKind::FindModel) {
        return crate::find_model_eval::run(
            &args.dataset,
            args.half,
            &args.out,
            args.report.as_deref(),
        );
    }
    if args.kind == Some(EvalKind::CodingAgent) {
        return crate::coding_agent_eval::run(
            &args.dataset,
            args.half,
            &args.out,
            args.report.as_deref(),
        );
    }
    settle_kind(&mut args)?;
    run_kinds(args)
}

/// The modes the kind asked for: `answers` runs the answers' evaluation alone, `retrieval`
/// refuses it, and with no kind `--mode answer` (the old spelling) still runs it, with a note.
fn settle_kind(args: &mut EvalArgs) -> anyhow::Result<()> {
    match args.kind {
        Some(EvalKind::Answers) => {
            anyhow::ensure!(
                args.mode.iter().all(|m| matches!(m, Mode::Bm25 | Mode::Answer)),
                "`cargo xtask eval answers` takes no retrieval --mode: run `cargo xtask eval retrieval` for those"
            );
            args.mode = vec![Mode::Answer];
        }
        Some(EvalKind::Retrieval) => anyhow::ensure!(
            !args.mode.contains(&Mode::Answer),
            "`answer` is not a retrieval mode: run `cargo xtask eval answers`"
        ),
        None if args.mode.contains(&Mode::Answer) => eprintln!(
            "note: `cargo xtask eval --mode answer` is now `cargo xtask eval answers`; the mode is accepted until the next release"
        ),
        None | Some(EvalKind::FindModel | EvalKind::CodingAgent) => {}
    }
    Ok(())
}

/// The modes of `args`, the answers' evaluation after the others.
fn run_kinds(args: EvalArgs) -> anyhow::Result<()> {
    if args.mode.contains(&Mode::Answer) {
        let others: Vec<Mode> = args
            .mode
            .iter()
            .copied()
            .filter(|m| *m != Mode::Answer)
            .collect();
        let fresh = args.fresh;
        if !others.is_empty() {
            run_kinds(EvalArgs {
                mode: others,
                ..args.clone()
            })?;
        }
        return run_answers(&args, fresh && args.mode.len() == 1);
    }
    let Inputs {
        name,
        queries_path,
        qrels,
        queries,
    } = inputs(&args)?;
    let modes: Vec<RetrievalMode> = args.mode.iter().filter_map(|m| m.retrieval()).collect();
    let types = crate::multihop::read_query_types(&queries_path)?;
    let agentic = args.mode.contains(&Mode::Agentic);

    let embedding = modes.iter().any(|m| m.needs_embeddings());
    let embedder = embedding.then(|| LocalEmbedderConfig {
        threads: args.threads,
        runtime: args.runtime.into(),
        ..Default::default()
    });
    let prepared = prepare_index(&args.dataset, &name, &args.index, embedder, args.fresh)?;
    let (index, model, ingest_figures) = (prepared.index, prepared.model, prepared.ingest);
    if !types.is_empty() {
        let run = crate::multihop::MultiHopRun {
            name: &name,
            queries: &queries,
            qrels: &qrels,
            types: &types,
            llm: args.llm,
            wall_time: std::time::Duration::from_secs(args.wall_time),
            out: &args.out,
            report: args.report.as_deref().unwrap_or(&name),
            misses: args.misses.as_deref(),
            ranking: args.bridge_ranking.into(),
        };
        return crate::multihop::run(
            &run,
            index,
            model,
            &modes,
            args.mode.contains(&Mode::Agentic),
        );
    }
    if args.mode == [Mode::Agentic] {
        let dir = index.dir().to_owned();
        drop(index);
        return crate::agentic::run(
            &name,
            &dir,
            &queries,
            &qrels,
            args.llm,
            std::time::Duration::from_secs(args.wall_time),
            &args.out,
        );
    }

    let (figures, per_query) = measure_modes(&index, model.as_ref(), &modes, &queries, &qrels)?;
    let documents = index.len();
    let agent = if agentic {
        // The agent starts from the search a user gets: hybrid when the index has vectors.
        let start = if model.is_some() {
            RetrievalMode::Hybrid
        } else {
            RetrievalMode::Bm25
        };
        let start_scores = match modes.iter().position(|m| *m == start) {
            Some(i) => per_query[i].clone(),
            None => measure_modes(&index, model.as_ref(), &[start], &queries, &qrels)?
                .1
                .remove(0),
        };
        let dir = index.dir().to_owned();
        drop(index);
        Some(measure_agent(
            &dir,
            model,
            start,
            &start_scores,
            &queries,
            &qrels,
            AgentSettings {
                wall_time: std::time::Duration::from_secs(args.wall_time),
                ranking: args.bridge_ranking.into(),
            },
        )?)
    } else {
        None
    };
    let args_line = std::env::args().skip(2).collect::<Vec<_>>().join(" ");
    let report = Report {
        dataset: name.clone(),
        documents,
        queries: queries.len(),
        ingest: ingest_figures,
        modes: figures,
        agent,
        command: format!("cargo xtask eval {args_line}"),
    };
    let stem_name = args.report.clone().unwrap_or_else(|| {
        format!(
            "{name}-{}",
            report
                .modes
                .iter()
                .map(|m| m.mode.as_str())
                .collect::<Vec<_>>()
                .join("-")
        )
    });
    std::fs::create_dir_all(&args.out)?;
    let stem = args.out.join(&stem_name);
    let anchors: &[(&str, f64)] = if name.contains("scifact") {
        &SCIFACT_ANCHORS
    } else {
        &[]
    };
    let chart = stem.with_extension("svg");
    let mut bars: Vec<(String, f64)> = report
        .modes
        .iter()
        .map(|m| (format!("ferret {}", m.mode), m.ndcg_at_10))
        .collect();
    bars.extend(
        report
            .agent
            .iter()
            .map(|a| (format!("ferret agentic over {}", a.over), a.ndcg_at_10)),
    );
    crate::chart::ndcg_bars(&chart, &name, &bars, anchors)?;
    let markdown = render_markdown(&report, anchors, &format!("{stem_name}.svg"));
    print!("{markdown}");
    std::fs::write(
        stem.with_extension("json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    std::fs::write(stem.with_extension("md"), markdown)?;
    println!("wrote {}.{{json,md,svg}}", stem.display());
    Ok(())
}

/// An index of a dataset's corpus, brought in line with it, and what the ingest cost.
pub(crate) struct PreparedIndex {
    pub index: LocalIndex,
    /// The uncached model, for embedding queries as a new question would be.
    pub model: Option<LocalEmbedder>,
    ingest: IngestFigures,
}

/// What a run reads before it searches.
struct Inputs {
    name: String,
    queries_path: PathBuf,
    qrels: HashMap<String, HashMap<String, f64>>,
    /// The judged queries of the half asked for, at most `--limit`.
    queries: Vec<(String, String)>,
}

fn inputs(args: &EvalArgs) -> anyhow::Result<Inputs> {
    let dataset = &args.dataset;
    let name = dataset
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into());
    let queries_path = match &args.queries {
        Some(p) => resolve(dataset, p),
        None => pick(dataset, "queries", "queries.test.jsonl", |n| {
            n.starts_with("queries") && n.ends_with(".jsonl")
        })?,
    };
    let qrels_path = match &args.qrels {
        Some(p) => resolve(dataset, p),
        None => pick(&dataset.join("qrels"), "qrels", "test.tsv", |n| {
            n.ends_with(".tsv")
        })?,
    };
    let qrels = read_qrels(&qrels_path)?;
    let queries: Vec<(String, String)> = read_queries(&queries_path)?
        .into_iter()
        .filter(|(id, _)| qrels.contains_key(id))
        .filter(|(id, _)| args.half.is_none_or(|half| half.holds(id)))
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    if queries.is_empty() {
        bail!(
            "no query of {} has a judgement in {}",
            queries_path.display(),
            qrels_path.display()
        );
    }
    Ok(Inputs {
        name,
        queries_path,
        qrels,
        queries,
    })
}

/// `--mode answer`: the pipeline's answers against the queries' gold answers, over the search a
/// user gets (hybrid: the index is built with vectors).
fn run_answers(args: &EvalArgs, fresh: bool) -> anyhow::Result<()> {
    let Inputs {
        name,
        queries_path,
        qrels,
        queries,
        ..
    } = inputs(args)?;
    // Queries without gold answers (SciFact's claims) are still measured: documents found,
    // citations, cost and the model's calls.
    let gold = crate::answers::read_gold_answers(&queries_path)?;
    let embedder = LocalEmbedderConfig {
        threads: args.threads,
        runtime: args.runtime.into(),
        ..Default::default()
    };
    let prepared = prepare_index(&args.dataset, &name, &args.index, Some(embedder), fresh)?;
    let dir = prepared.index.dir().to_owned();
    let documents = prepared.index.len();
    drop(prepared.index);
    let run = crate::answers::AnswerRun {
        name: &name,
        queries: &queries,
        qrels: &qrels,
        gold: &gold,
        llm: args.llm,
        heuristic_stages: match (args.heuristic_stages.is_empty(), args.llm) {
            (false, _) => args.heuristic_stages.iter().flatten().copied().collect(),
            (true, crate::agentic::LlmChoice::Local | crate::agentic::LlmChoice::Gemma) => {
                ferret::models::StageModelConfig::small_model().heuristic_stages
            }
            (true, _) => Default::default(),
        },
        wall_time: std::time::Duration::from_secs(args.wall_time),
        out: &args.out,
        report: args.report.as_deref().unwrap_or(&name),
        misses: args.misses.as_deref(),
    };
    crate::answers::run(&run, &dir, documents, prepared.model)
}

/// Open (or build) the index of `dataset` under `base`; with an `embedder`, dense vectors from
/// all-MiniLM-L6-v2 (cached on disk by text), in an index of its own per embedder so BM25 runs
/// without the model.
pub(crate) fn prepare_index(
    dataset: &Path,
    name: &str,
    base: &Path,
    embedder: Option<LocalEmbedderConfig>,
    fresh: bool,
) -> anyhow::Result<PreparedIndex> {
    let model = embedder
        .map(|config| LocalEmbedder::minilm(&ferret::models::default_models_dir(), config))
        .transpose()?;
    let index_dir = base.join(match &model {
        Some(m) => format!("{name}-{}", m.name().replace('@', "-")),
        None => name.to_owned(),
    });
    if fresh {
        let _ = std::fs::remove_dir_all(&index_dir);
    }
    let cache_dir = base.join("embedding-cache");
    let cached: Option<Arc<CachedEmbedder>> = match &model {
        Some(m) => {
            if fresh {
                let stale = CachedEmbedder::open(Arc::new(m.clone()), &cache_dir)?;
                let _ = std::fs::remove_file(stale.file());
            }
            Some(Arc::new(CachedEmbedder::open(
                Arc::new(m.clone()),
                &cache_dir,
            )?))
        }
        None => None,
    };
    let index = LocalIndex::open_or_create_with(
        &index_dir,
        cached.clone().map(|c| c as Arc<dyn Embedder>),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ingesting is idempotent (unchanged documents are not rewritten), so a reused index is always
    // brought in line with the corpus; the time is reported only when something was written.
    let progress =
        indicatif::ProgressBar::new(0).with_style(indicatif::ProgressStyle::with_template(
            "ingest {bar:30} {pos}/{len} documents, {per_sec}, eta {eta}",
        )?);
    let cached_before = cached.as_ref().map_or(0, |c| c.len());
    let started = Instant::now();
    let ingest = runtime.block_on(index.ingest_path(
        &dataset.join("corpus.jsonl"),
        IngestOptions::default(),
        &mut |done, total| {
            progress.set_length(total as u64);
            progress.set_position(done as u64);
        },
    ))?;
    progress.finish_and_clear();
    if !ingest.issues.is_empty() {
        eprintln!(
            "{} corpus lines skipped, first: {}",
            ingest.issues.len(),
            ingest.issues[0]
        );
    }
    let elapsed = started.elapsed().as_secs_f64();
    let written = ingest.added + ingest.updated;
    // Vectors the model computed in this run, as opposed to those the cache already held.
    let computed = cached.as_ref().map_or(0, |c| c.len()) - cached_before;
    if written > 0 {
        println!(
            "ingested {written} documents ({computed} embedded by the model) in {elapsed:.1}s"
        );
    }
    let ingest = IngestFigures {
        seconds: (written > 0).then_some(elapsed),
        documents_written: written,
        documents_embedded: computed,
        embedded_per_second: (computed > 0).then(|| computed as f64 / elapsed),
        embedder: model.as_ref().map(|m| m.name().to_owned()),
    };
    Ok(PreparedIndex {
        index,
        model,
        ingest,
    })
}

/// Quality and latency of each mode over `queries`, one query at a time, each query embedded
/// by the uncached model as a new question would be; with each mode's nDCG@10 per query.
pub(crate) fn measure_modes(
    index: &LocalIndex,
    model: Option<&LocalEmbedder>,
    modes: &[RetrievalMode],
    queries: &[(String, String)],
    qrels: &HashMap<String, HashMap<String, f64>>,
) -> anyhow::Result<(Vec<ModeFigures>, Vec<Vec<f64>>)> {
    let mut figures = Vec::new();
    let mut per_query = Vec::new();
    for &mode in modes {
        let mut scores = Vec::with_capacity(queries.len());
        let mut ndcg = 0.0;
        let mut recall = 0.0;
        let mut latencies = Vec::with_capacity(queries.len());
        let started = Instant::now();
        for (id, text) in queries {
            let t = Instant::now();
            let hits = search_one(index, model, mode, text, 100)?;
            latencies.push(t.elapsed().as_secs_f64() * 1000.0);
            let ranked: Vec<&str> = hits.iter().map(|h| h.id.0.as_str()).collect();
            let relevant = &qrels[id];
            scores.push(ndcg_at(&ranked, relevant, 10));
            ndcg += scores.last().copied().unwrap_or_default();
            recall += recall_at(&ranked, relevant, 100);
        }
        let seconds = started.elapsed().as_secs_f64();
        latencies.sort_by(f64::total_cmp);
        let n = queries.len() as f64;
        figures.push(ModeFigures {
            mode,
            ndcg_at_10: ndcg / n,
            recall_at_100: recall / n,
            queries_per_second: n / seconds,
            latency_ms_p50: percentile(&latencies, 0.50),
            latency_ms_p99: percentile(&latencies, 0.99),
        });
        per_query.push(scores);
    }
    Ok((figures, per_query))
}

/// How the agent is run for a report.
#[derive(Clone, Copy)]
struct AgentSettings {
    /// Each question's wall-time budget.
    wall_time: std::time::Duration,
    /// How bridge names are ranked.
    ranking: ferret::config::NameRanking,
}

/// The whole pipeline over the index in `dir` (searching in `start` mode, the default for an
/// index with or without vectors), each question answered as `Ferret::search` answers it, its
/// hits scored against `start_scores`, the same questions' scores for one search.
fn measure_agent(
    dir: &Path,
    model: Option<LocalEmbedder>,
    start: RetrievalMode,
    start_scores: &[f64],
    queries: &[(String, String)],
    qrels: &HashMap<String, HashMap<String, f64>>,
    settings: AgentSettings,
) -> anyhow::Result<AgentFigures> {
    let AgentSettings { wall_time, ranking } = settings;
    let (ferret, runtime) = crate::agentic::pipeline(dir, Some(start), model, None, ranking)?;
    let (mut ndcg, mut calls, mut improved, mut worsened) = (0.0, 0u64, 0, 0);
    let mut by_strategy: std::collections::BTreeMap<String, StrategyFigures> = Default::default();
    let mut latencies = Vec::with_capacity(queries.len());
    for ((id, text), start_score) in queries.iter().zip(start_scores) {
        let t = Instant::now();
        let response =
            runtime.block_on(ferret.search(crate::agentic::question(text, wall_time)?))?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        let ranked: Vec<&str> = response.hits.iter().map(|h| h.id.0.as_str()).collect();
        let score = ndcg_at(&ranked, &qrels[id], 10);
        ndcg += score;
        calls += u64::from(response.usage.backend_calls);
        improved += usize::from(score > start_score + 1e-9);
        worsened += usize::from(score < start_score - 1e-9);
        let chosen = response.trace.steps.iter().find_map(|s| match s {
            ferret_core::TraceStep::Strategy { chosen, .. } => Some(chosen.to_string()),
            _ => None,
        });
        let group = by_strategy
            .entry(chosen.unwrap_or_else(|| "none".into()))
            .or_default();
        group.questions += 1;
        group.improved += usize::from(score > start_score + 1e-9);
        group.worsened += usize::from(score < start_score - 1e-9);
        group.gain_over_start += score - start_score;
    }
    for group in by_strategy.values_mut() {
        group.gain_over_start /= group.questions.max(1) as f64;
    }
    latencies.sort_by(f64::total_cmp);
    let n = queries.len() as f64;
    let queries_per_second = n / (latencies.iter().sum::<f64>() / 1000.0).max(1e-9);
    let start_mean = start_scores.iter().sum::<f64>() / n;
    Ok(AgentFigures {
        over: start,
        ndcg_at_10: ndcg / n,
        gain_over_start: ndcg / n - start_mean,
        backend_calls_per_question: calls as f64 / n,
        queries_per_second,
        latency_ms_p50: percentile(&latencies, 0.50),
        latency_ms_p99: percentile(&latencies, 0.99),
        improved,
        worsened,
        unchanged: queries.len() - improved - worsened,
        by_strategy,
    })
}

fn render_markdown(report: &Report, anchors: &[(&str, f64)], chart: &str) -> String {
    let mut md = format!(
        "# {}: retrieval quality and speed\n\nGenerated by `{}`: {} documents, {} judged queries.\n\n\
         | mode | nDCG@10 | Recall@100 | queries/s | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n",
        report.dataset, report.command, report.documents, report.queries
    );
    for m in &report.modes {
        md += &format!(
            "| {} | {:.4} | {:.4} | {:.0} | {:.2} | {:.2} |\n",
            m.mode,
            m.ndcg_at_10,
            m.recall_at_100,
            m.queries_per_second,
            m.latency_ms_p50,
            m.latency_ms_p99
        );
    }
    if let Some(a) = &report.agent {
        md += &format!(
            "| agentic over {} | {:.4} ({:+.4}) | - | {:.0} | {:.2} | {:.2} |\n",
            a.over,
            a.ndcg_at_10,
            a.gain_over_start,
            a.queries_per_second,
            a.latency_ms_p50,
            a.latency_ms_p99
        );
        md += &format!(
            "\nAgentic: {:.2} backend calls per question; against one {} search, {} questions improved, {} worsened, \
             {} unchanged (nDCG@10 per question). Its hits are the ten an answer shows, so Recall@100 does not apply.\n",
            a.backend_calls_per_question, a.over, a.improved, a.worsened, a.unchanged
        );
        md += "\n| strategy chosen | questions | improved | worsened | nDCG@10 gain |\n|---|---|---|---|---|\n";
        for (strategy, f) in &a.by_strategy {
            md += &format!(
                "| {strategy} | {} | {} | {} | {:+.4} |\n",
                f.questions, f.improved, f.worsened, f.gain_over_start
            );
        }
    }
    md +=
        "\nLatency includes embedding the query (dense, hybrid) on the CPU, one query at a time.\n";
    let i = &report.ingest;
    md += &match (i.seconds, i.embedded_per_second) {
        (Some(s), Some(rate)) => format!(
            "\nIngest: {} documents written, {} embedded by `{}` in {s:.1} s ({rate:.1} documents/s).\n",
            i.documents_written, i.documents_embedded, i.embedder.as_deref().unwrap_or("-")
        ),
        (Some(s), None) => format!("\nIngest: {} documents written in {s:.1} s; embeddings came from the cache.\n", i.documents_written),
        (None, _) => "\nIngest: the index was current, nothing written (run with `--fresh` to measure ingest speed).\n".into(),
    };
    if !anchors.is_empty() {
        md += "\nPublished nDCG@10 on the same data, for reference:\n\n| system | nDCG@10 |\n|---|---|\n";
        for (system, score) in anchors {
            md += &format!("| {system} | {score:.3} |\n");
        }
    }
    md += &format!("\n![nDCG@10 per mode beside the published figures]({chart})\n");
    md
}

fn resolve(dataset: &Path, path: &Path) -> PathBuf {
    if path.exists() {
        path.to_owned()
    } else {
        dataset.join(path)
    }
}

fn pick(
    dir: &Path,
    what: &str,
    preferred: &str,
    matches: impl Fn(&str) -> bool,
) -> anyhow::Result<PathBuf> {
    if dir.join(preferred).is_file() {
        return Ok(dir.join(preferred));
    }
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| matches(&n.to_string_lossy())))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("no {what} file in {}", dir.display()),
        _ => bail!(
            "several {what} files in {}: choose one with --{what}",
            dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        args: EvalArgs,
    }

    fn settled(line: &[&str]) -> anyhow::Result<Vec<Mode>> {
        let mut args = Line::try_parse_from(["eval"].iter().chain(line))?.args;
        settle_kind(&mut args)?;
        Ok(args.mode)
    }

    #[test]
    fn a_kind_names_what_is_measured_and_the_old_spelling_still_runs() {
        let d = "--dataset=x";
        assert!(settled(&["answers", d]).unwrap() == [Mode::Answer]);
        assert!(settled(&[d, "--mode", "answer"]).unwrap() == [Mode::Answer]);
        assert!(
            settled(&["retrieval", d, "--mode", "bm25,hybrid"]).unwrap()
                == [Mode::Bm25, Mode::Hybrid]
        );
        assert!(settled(&["retrieval", d, "--mode", "answer"]).is_err());
        assert!(settled(&["answers", d, "--mode", "dense"]).is_err());
    }
}
