//! `cargo xtask bench orchestration`: what Ferret's orchestration costs per question, over
//! backends that answer at once with the same 20 hits (the first 20 documents of the dataset),
//! so nothing but the pipeline is timed:
//!
//! - the plumbing alone, every stage passing its input on, beside the same pass-through
//!   pipeline as a LangGraph graph and a LlamaIndex workflow (with `--peers`, installed into
//!   `target/orchestration-venv`), all on one thread;
//! - the heuristic stages, single pass and auto, per question and per stage (the stages' tracing
//!   spans, timed in a second pass so the clock does not weigh on the first);
//! - fan-out: a question split in three, on three backends that each take 100 ms, against one
//!   call;
//! - sixteen identical questions at once: the backend calls they make, against one question's.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use async_trait::async_trait;
use ferret_agent::{Agent, AgentConfig, StageConfig, Stages};
use ferret_core::{
    Actions, BackendError, Citation, Hit, Query, SearchBackend, SearchRequest, StageOutput,
    Strategy,
};
use ferret_exec::Executor;
use ferret_grading::{Grades, HitGrade, Quality, RelevanceGrader};
use ferret_query_intel::{
    Analysis, Complexity, Decomposition, Intent, IntentClassifier, IntentVerdict, QueryAnalyzer,
    QueryDecomposer, QueryRewriter, QueryType,
};
use ferret_synthesis::{ActionExtractor, Answer, AnswerSynthesizer};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

const PEER_SCRIPT: &str = include_str!("orchestration_peer.py");
const PEER_PACKAGES: &[&str] = &["langgraph==1.2.24", "llama-index-core==0.14.25"];
/// Hits every backend returns.
const HITS: usize = 20;
/// How long each per-question figure is measured, after a warm-up pass.
const MEASURE_FOR: Duration = Duration::from_secs(3);
/// Latency of each backend in the fan-out measurement.
const SLOW_CALL: Duration = Duration::from_millis(100);

/// A backend that answers every query with the same hits, after `delay`, counting its calls.
struct FixedBackend {
    name: String,
    hits: Vec<Hit>,
    delay: Duration,
    calls: AtomicUsize,
}

impl FixedBackend {
    fn new(name: &str, documents: &[(String, String, String)], delay: Duration) -> Arc<Self> {
        let hits = documents
            .iter()
            .enumerate()
            .map(|(rank, (id, title, text))| {
                Hit::new(
                    id.clone(),
                    title.clone(),
                    text.clone(),
                    1.0 - rank as f32 / HITS as f32,
                    name,
                )
            })
            .collect();
        Arc::new(Self {
            name: name.to_owned(),
            hits,
            delay,
            calls: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl SearchBackend for FixedBackend {
    fn name(&self) -> &str {
        &self.name
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Ok(self.hits.iter().take(request.limit).cloned().collect())
    }
}

/// Stages that do no work: the question is searched as asked, every hit is kept and the answer
/// cites the first. `parts` > 0 makes the analysis complex and splits the question in that many.
struct PassThrough {
    parts: usize,
}

#[async_trait]
impl IntentClassifier for PassThrough {
    async fn classify(&self, _question: &str) -> StageOutput<IntentVerdict> {
        StageOutput::heuristic(IntentVerdict {
            intent: Intent::Search,
            reason: String::new(),
        })
    }
}

#[async_trait]
impl QueryAnalyzer for PassThrough {
    async fn analyze(&self, _question: &str) -> StageOutput<Analysis> {
        StageOutput::heuristic(Analysis {
            query_type: QueryType::Factual,
            entities: Vec::new(),
            intent: String::new(),
            complexity: if self.parts > 0 {
                Complexity::Complex
            } else {
                Complexity::Simple
            },
            context: BTreeMap::new(),
            asked: None,
        })
    }
}

#[async_trait]
impl QueryDecomposer for PassThrough {
    async fn decompose(
        &self,
        question: &str,
        _analysis: &Analysis,
        max_sub_queries: usize,
    ) -> StageOutput<Decomposition> {
        StageOutput::heuristic(Decomposition {
            sub_queries: (1..=self.parts.clamp(1, max_sub_queries.max(1)))
                .map(|part| format!("{question} part {part}"))
                .collect(),
            root_cause: None,
        })
    }
}

#[async_trait]
impl QueryRewriter for PassThrough {
    async fn rewrite(&self, query: &str, _analysis: &Analysis) -> StageOutput<String> {
        StageOutput::heuristic(query.to_owned())
    }
}

#[async_trait]
impl RelevanceGrader for PassThrough {
    async fn grade(&self, _question: &str, hits: &[Hit]) -> StageOutput<Grades> {
        StageOutput::heuristic(Grades {
            per_hit: hits
                .iter()
                .map(|hit| HitGrade {
                    hit_id: hit.id.clone(),
                    relevance: 1.0,
                    kept: true,
                    good: true,
                    reason: String::new(),
                    linked: None,
                })
                .collect(),
            quality: Quality::High,
            should_retry: false,
            suggestion: None,
        })
    }
}

#[async_trait]
impl AnswerSynthesizer for PassThrough {
    async fn synthesize(&self, _question: &str, hits: &[Hit]) -> StageOutput<Answer> {
        let citations: Vec<Citation> = hits
            .first()
            .map(|hit| Citation {
                marker: 1,
                hit_id: hit.id.clone(),
                title: hit.title.to_string(),
                url: None,
            })
            .into_iter()
            .collect();
        StageOutput::heuristic(Answer {
            text: hits
                .first()
                .map(|hit| format!("{} [1]", hit.title))
                .unwrap_or_default(),
            citations,
            short: None,
            sentences: 1,
            dropped_markers: 0,
        })
    }
}

#[async_trait]
impl ActionExtractor for PassThrough {
    async fn extract(
        &self,
        _question: &str,
        _answer: &str,
        _sources: &[Hit],
    ) -> StageOutput<Actions> {
        StageOutput::heuristic(Actions::default())
    }
}

/// The heuristic stages with every one a search runs replaced by [`PassThrough`].
fn pass_through_stages(parts: usize) -> Stages {
    let stage = Arc::new(PassThrough { parts });
    let mut stages = Stages::heuristic(StageConfig::default());
    stages.classifier = stage.clone();
    stages.analyzer = stage.clone();
    stages.decomposer = stage.clone();
    stages.rewriter = stage.clone();
    stages.grader = stage.clone();
    stages.synthesizer = stage.clone();
    stages.actions = stage;
    stages
}

fn agent(stages: Stages, backends: &[Arc<FixedBackend>]) -> anyhow::Result<Agent> {
    let executor = backends
        .iter()
        .fold(Executor::builder(), |builder, backend| {
            builder.backend(backend.clone() as Arc<dyn SearchBackend>)
        })
        .build()?;
    Ok(Agent::new(stages, executor, AgentConfig::default())?)
}

/// Wall time of each tracing span, summed by name: where a question's time goes.
#[derive(Clone, Default)]
struct SpanClock {
    totals: Arc<Mutex<BTreeMap<String, Duration>>>,
}

impl<S> Layer<S> for SpanClock
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        _attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: LayerContext<'_, S>,
    ) {
        if let Some(span) = context.span(id) {
            span.extensions_mut().insert(Instant::now());
        }
    }

    fn on_close(&self, id: tracing::span::Id, context: LayerContext<'_, S>) {
        let Some(span) = context.span(&id) else {
            return;
        };
        let Some(elapsed) = span.extensions().get::<Instant>().map(Instant::elapsed) else {
            return;
        };
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        *totals.entry(span.name().to_owned()).or_default() += elapsed;
    }
}

#[derive(Serialize, Deserialize, Clone)]
struct Latency {
    questions: usize,
    mean_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Latency {
    fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Self {
            questions: samples.len(),
            mean_ms: samples.iter().sum::<f64>() / samples.len() as f64,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
        }
    }
}

#[derive(Serialize)]
struct PipelineRow {
    pipeline: String,
    questions: &'static str,
    latency: Latency,
    /// Mean milliseconds per question in each stage's span.
    stages_ms: BTreeMap<String, f64>,
}

#[derive(Deserialize, Serialize)]
struct PeerFigures {
    langgraph: Latency,
    llamaindex: Latency,
    versions: String,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    rows: Vec<PipelineRow>,
    peers: Option<PeerFigures>,
    fan_out: FanOut,
    identical: Identical,
    command: String,
}

#[derive(Serialize)]
struct FanOut {
    one_call_ms: f64,
    question_ms: f64,
    calls: usize,
    ratio: f64,
}

#[derive(Serialize)]
struct Identical {
    one_question_calls: usize,
    sixteen_questions_calls: usize,
}

pub fn run(dataset: &Path, hotpot: &Path, peers: bool, out: &Path) -> anyhow::Result<()> {
    let documents = first_documents(&dataset.join("corpus.jsonl"), HITS)?;
    let simple: Vec<String> = crate::judged::read_queries(&dataset.join("queries.test.jsonl"))?
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let multi_hop: Vec<String> = crate::judged::read_queries(&hotpot.join("queries.dev.jsonl"))?
        .into_iter()
        .map(|(_, text)| text)
        .take(300)
        .collect();
    anyhow::ensure!(
        !simple.is_empty() && !multi_hop.is_empty(),
        "no questions in {} or {}",
        dataset.display(),
        hotpot.display()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let instant = FixedBackend::new("fixed", &documents, Duration::ZERO);

    let mut rows = Vec::new();
    let runs: [(&str, Stages, Strategy, &'static str, &[String]); 4] = [
        (
            "pass-through stages, single pass",
            pass_through_stages(0),
            Strategy::SinglePass,
            "simple",
            &simple,
        ),
        (
            "heuristic stages, single pass",
            Stages::heuristic(StageConfig::default()),
            Strategy::SinglePass,
            "simple",
            &simple,
        ),
        (
            "heuristic stages, auto",
            Stages::heuristic(StageConfig::default()),
            Strategy::Auto,
            "simple",
            &simple,
        ),
        (
            "heuristic stages, auto",
            Stages::heuristic(StageConfig::default()),
            Strategy::Auto,
            "multi-hop",
            &multi_hop,
        ),
    ];
    for (name, stages, strategy, kind, questions) in runs {
        let agent = agent(stages, std::slice::from_ref(&instant))?;
        let queries: Vec<Query> = questions
            .iter()
            .map(|q| Query::new(q.as_str()).map(|q| q.with_strategy(strategy)))
            .collect::<Result<_, _>>()?;
        let latency = Latency::of(runtime.block_on(per_question(&agent, &queries))?);
        let clock = SpanClock::default();
        let timed = tracing_subscriber::registry().with(clock.clone());
        tracing::subscriber::with_default(timed, || {
            runtime.block_on(async {
                agent.forget_results();
                for query in &queries {
                    agent.run(query, None).await?;
                }
                anyhow::Ok(())
            })
        })?;
        let stages_ms = clock
            .totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(span, total)| {
                (
                    span.clone(),
                    total.as_secs_f64() * 1000.0 / queries.len() as f64,
                )
            })
            .collect();
        eprintln!(
            "{name} ({kind}): {:.3} ms mean, {:.3} ms p50 per question",
            latency.mean_ms, latency.p50_ms
        );
        rows.push(PipelineRow {
            pipeline: name.to_owned(),
            questions: kind,
            latency,
            stages_ms,
        });
    }

    let peers = if peers {
        Some(run_peers(&simple)?)
    } else {
        None
    };
    let fan_out = runtime.block_on(fan_out(&documents))?;
    let identical = runtime.block_on(identical(&documents, &simple[0]))?;
    let report = Report {
        dataset: dataset.display().to_string(),
        rows,
        peers,
        fan_out,
        identical,
        command: crate::report::command_line(),
    };
    let md = render(&report);
    print!("{md}");
    std::fs::create_dir_all(out)?;
    crate::report::write_report(&out.join("orchestration"), &report, &md)
}

/// Milliseconds per question, over passes until [`MEASURE_FOR`] has gone by, after a warm-up
/// pass; each pass starts with an empty result cache, so every question reaches the backend.
async fn per_question(agent: &Agent, queries: &[Query]) -> anyhow::Result<Vec<f64>> {
    for query in queries {
        agent.run(query, None).await?;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < MEASURE_FOR {
        agent.forget_results();
        for query in queries {
            let t = Instant::now();
            agent.run(query, None).await?;
            samples.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    Ok(samples)
}

/// A question split in three, each part and the question searched on three backends that
/// each take [`SLOW_CALL`]: the question's time against one call's (the median of five).
async fn fan_out(documents: &[(String, String, String)]) -> anyhow::Result<FanOut> {
    let backends: Vec<Arc<FixedBackend>> = ["slow-a", "slow-b", "slow-c"]
        .iter()
        .map(|name| FixedBackend::new(name, documents, SLOW_CALL))
        .collect();
    let agent = agent(pass_through_stages(3), &backends)?;
    let query = Query::new("a question in three parts")?.with_strategy(Strategy::SinglePass);
    let request = SearchRequest {
        query: "one call".into(),
        limit: HITS,
        filters: Default::default(),
        options: Default::default(),
        text_for: None,
    };
    let mut one_call = Vec::new();
    let mut question = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        backends[0].search(&request).await?;
        one_call.push(t.elapsed().as_secs_f64() * 1000.0);
        agent.forget_results();
        let before: usize = backends
            .iter()
            .map(|b| b.calls.load(Ordering::Relaxed))
            .sum();
        let t = Instant::now();
        agent.run(&query, None).await?;
        question.push(t.elapsed().as_secs_f64() * 1000.0);
        let after: usize = backends
            .iter()
            .map(|b| b.calls.load(Ordering::Relaxed))
            .sum();
        if after - before < 9 {
            bail!(
                "the question made {} backend calls, not the 9 or more its three parts need",
                after - before
            );
        }
    }
    let calls: usize = backends
        .iter()
        .map(|b| b.calls.load(Ordering::Relaxed))
        .sum();
    let one_call_ms = Latency::of(one_call).p50_ms;
    let question_ms = Latency::of(question).p50_ms;
    Ok(FanOut {
        one_call_ms,
        question_ms,
        calls: (calls - 5) / 5,
        ratio: question_ms / one_call_ms,
    })
}

/// Sixteen identical questions at once, with the heuristic stages, on a backend that takes
/// 50 ms: the backend calls they make against those of one question alone.
async fn identical(
    documents: &[(String, String, String)],
    question: &str,
) -> anyhow::Result<Identical> {
    let backend = FixedBackend::new("slow", documents, Duration::from_millis(50));
    let agent = agent(
        Stages::heuristic(StageConfig::default()),
        std::slice::from_ref(&backend),
    )?;
    let query = Query::new(question)?;
    agent.run(&query, None).await?;
    let one_question_calls = backend.calls.swap(0, Ordering::Relaxed);
    agent.forget_results();
    let answers = futures::future::join_all((0..16).map(|_| agent.run(&query, None))).await;
    for answer in answers {
        answer?;
    }
    Ok(Identical {
        one_question_calls,
        sixteen_questions_calls: backend.calls.load(Ordering::Relaxed),
    })
}

fn run_peers(questions: &[String]) -> anyhow::Result<PeerFigures> {
    let python = crate::peers::venv_with(Path::new("target/orchestration-venv"), PEER_PACKAGES)?;
    let work = crate::peers::work_dir("orchestration")?;
    let script = work.join("orchestration_peer.py");
    std::fs::write(&script, PEER_SCRIPT)?;
    let questions_file = work.join("questions.json");
    std::fs::write(&questions_file, serde_json::to_string(questions)?)?;
    let figures = crate::peers::peer_figures(
        Command::new(&python)
            .arg(&script)
            .arg(&questions_file)
            .arg(MEASURE_FOR.as_secs().to_string()),
        "the LangGraph and LlamaIndex pipelines",
    );
    let _ = std::fs::remove_dir_all(&work);
    figures
}

/// The first `n` documents of a BEIR corpus: (id, title, text).
fn first_documents(path: &Path, n: usize) -> anyhow::Result<Vec<(String, String, String)>> {
    #[derive(Deserialize)]
    struct Document {
        #[serde(rename = "_id")]
        id: String,
        #[serde(default)]
        title: String,
        text: String,
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let documents: Vec<_> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(n)
        .map(|line| serde_json::from_str::<Document>(line).map(|d| (d.id, d.title, d.text)))
        .collect::<Result<_, _>>()?;
    anyhow::ensure!(
        documents.len() == n,
        "{} has fewer than {n} documents",
        path.display()
    );
    Ok(documents)
}

fn render(r: &Report) -> String {
    let mut md = format!(
        "# Orchestration overhead\n\nGenerated by `{}`: the pipeline over a backend that answers \
         at once with the same {HITS} hits (the first {HITS} documents of {}), one thread, each \
         figure measured for {} s after a warm-up pass, the result cache emptied before each \
         pass. Simple questions are the dataset's test claims; multi-hop ones, HotpotQA dev \
         questions. Stage columns: mean milliseconds per question inside each stage's tracing \
         span (a second pass, so the clock does not weigh on the first); `search` is the whole \
         question, `exec` the backend calls with fusion. Every question sees the same hits, so after \
         the first the stages read their terms from the per-thread memo, as they do for hits a \
         search meets again (the cold first reading of 20 abstracts costs several times more). \
         {}.\n\n",
        r.command,
        r.dataset,
        MEASURE_FOR.as_secs(),
        crate::report::build_profile()
    );
    let spans: Vec<&String> = {
        let mut names: Vec<&String> = r.rows.iter().flat_map(|row| row.stages_ms.keys()).collect();
        names.sort();
        names.dedup();
        names
    };
    md.push_str("| pipeline | questions | mean ms | p50 ms | p99 ms |");
    for span in &spans {
        md.push_str(&format!(" {span} ms |"));
    }
    md.push_str("\n|---|---|---|---|---|");
    md.push_str(&"---|".repeat(spans.len()));
    md.push('\n');
    for row in &r.rows {
        md.push_str(&format!(
            "| Ferret, {} | {} | {:.3} | {:.3} | {:.3} |",
            row.pipeline,
            row.questions,
            row.latency.mean_ms,
            row.latency.p50_ms,
            row.latency.p99_ms
        ));
        for span in &spans {
            match row.stages_ms.get(*span) {
                Some(ms) => md.push_str(&format!(" {ms:.3} |")),
                None => md.push_str(" |"),
            }
        }
        md.push('\n');
    }
    let plumbing = &r.rows[0].latency;
    match &r.peers {
        Some(peers) => {
            for (name, latency) in [
                ("LangGraph, pass-through graph", &peers.langgraph),
                ("LlamaIndex, pass-through workflow", &peers.llamaindex),
            ] {
                md.push_str(&format!(
                    "| {name} | simple | {:.3} | {:.3} | {:.3} |{}\n",
                    latency.mean_ms,
                    latency.p50_ms,
                    latency.p99_ms,
                    " |".repeat(spans.len())
                ));
            }
            md.push_str(&format!(
                "\nPeers: {}. Ferret's plumbing per question (mean) is {:.0}x less than \
                 LangGraph's and {:.0}x less than LlamaIndex's.\n",
                peers.versions,
                peers.langgraph.mean_ms / plumbing.mean_ms,
                peers.llamaindex.mean_ms / plumbing.mean_ms
            ));
        }
        None => md.push_str("\nPeers not measured (add `--peers`).\n"),
    }
    md.push_str(&format!(
        "\n**Fan-out.** A question split in three, searched with its parts on three backends that \
         each take {} ms ({} calls at once): {:.1} ms, against {:.1} ms for one call \
         ({:.2}x).\n\n**Identical questions.** One question made {} backend call(s); sixteen \
         identical questions asked at once made {}.\n",
        SLOW_CALL.as_millis(),
        r.fan_out.calls,
        r.fan_out.question_ms,
        r.fan_out.one_call_ms,
        r.fan_out.ratio,
        r.identical.one_question_calls,
        r.identical.sixteen_questions_calls
    ));
    md
}
