use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use ferret_backends_local::{IngestOptions, LocalIndex};
use ferret_core::{Filters, SearchRequest};
use serde::Serialize;

#[derive(clap::Args)]
pub struct EvalArgs {
    /// A BEIR-layout directory: corpus.jsonl, queries*.jsonl, qrels/*.tsv.
    #[arg(long)]
    dataset: PathBuf,
    /// Queries file (default: the dataset's only queries*.jsonl, or queries.test.jsonl).
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Relevance judgements (default: the dataset's only qrels/*.tsv, or qrels/test.tsv).
    #[arg(long)]
    qrels: Option<PathBuf>,
    /// Retrieval mode.
    #[arg(long, value_enum, default_value = "bm25")]
    mode: Mode,
    /// Where the index is built and reused (default: target/eval-index/<dataset>).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Where the reports are written.
    #[arg(long, default_value = "docs/eval")]
    out: PathBuf,
    /// Agentic mode: the model the stages ask.
    #[arg(long, value_enum, default_value = "none")]
    llm: crate::agentic::LlmChoice,
    /// Agentic mode: wall time each question may take, in seconds (the default budget's 30 s is
    /// short for a model on a CPU).
    #[arg(long, default_value_t = 30)]
    wall_time: u64,
    /// Evaluate only the first N judged queries (agentic runs with a model are slow).
    #[arg(long)]
    limit: Option<usize>,
}

#[derive(Clone, Copy, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Bm25,
    /// The whole pipeline, as `Ferret::search` runs it.
    Agentic,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    mode: Mode,
    documents: usize,
    queries: usize,
    ndcg_at_10: f64,
    recall_at_100: f64,
    queries_per_second: f64,
    latency_ms_p50: f64,
    latency_ms_p99: f64,
    ingest_seconds: Option<f64>,
    command: String,
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let dataset = &args.dataset;
    let name = dataset.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "dataset".into());
    let queries_path = match &args.queries {
        Some(p) => resolve(dataset, p),
        None => pick(dataset, "queries", "queries.test.jsonl", |n| n.starts_with("queries") && n.ends_with(".jsonl"))?,
    };
    let qrels_path = match &args.qrels {
        Some(p) => resolve(dataset, p),
        None => pick(&dataset.join("qrels"), "qrels", "test.tsv", |n| n.ends_with(".tsv"))?,
    };
    let qrels = read_qrels(&qrels_path)?;
    let queries: Vec<(String, String)> = read_queries(&queries_path)?
        .into_iter()
        .filter(|(id, _)| qrels.contains_key(id))
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    if queries.is_empty() {
        bail!("no query of {} has a judgement in {}", queries_path.display(), qrels_path.display());
    }

    let index_dir = args.index.clone().unwrap_or_else(|| PathBuf::from("target/eval-index").join(&name));
    let corpus = dataset.join("corpus.jsonl");
    let mut index = LocalIndex::open_or_create(&index_dir)?;
    // Ingesting is idempotent (unchanged documents are not rewritten), so a reused index is always
    // brought in line with the corpus; the time is reported only when something was written.
    let started = Instant::now();
    let ingest = index.ingest_path(&corpus, IngestOptions::default(), &mut |_, _| {})?;
    if !ingest.issues.is_empty() {
        eprintln!("{} corpus lines skipped, first: {}", ingest.issues.len(), ingest.issues[0]);
    }
    let ingest_seconds = (ingest.added + ingest.updated > 0).then(|| started.elapsed().as_secs_f64());
    if let Mode::Agentic = args.mode {
        drop(index);
        return crate::agentic::run(&name, &index_dir, &queries, &qrels, args.llm, std::time::Duration::from_secs(args.wall_time), &args.out);
    }

    let mut ndcg = 0.0;
    let mut recall = 0.0;
    let mut latencies = Vec::with_capacity(queries.len());
    let started = Instant::now();
    for (id, text) in &queries {
        let request = SearchRequest { query: text.clone(), limit: 100, filters: Filters::default() };
        let t = Instant::now();
        let hits = index.search_blocking(&request, "local")?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        let ranked: Vec<&str> = hits.iter().map(|h| h.id.0.as_str()).collect();
        let relevant = &qrels[id];
        ndcg += ndcg_at(&ranked, relevant, 10);
        recall += recall_at(&ranked, relevant, 100);
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let n = queries.len() as f64;
    let report = Report {
        dataset: name.clone(),
        mode: args.mode,
        documents: index.len(),
        queries: queries.len(),
        ndcg_at_10: ndcg / n,
        recall_at_100: recall / n,
        queries_per_second: n / seconds,
        latency_ms_p50: percentile(&latencies, 0.50),
        latency_ms_p99: percentile(&latencies, 0.99),
        ingest_seconds,
        command: format!("cargo xtask {}", std::env::args().skip(1).collect::<Vec<_>>().join(" ")),
    };
    let markdown = format!(
        "# {name}: {mode}\n\nGenerated by `cargo xtask eval {args}`.\n\n\
         | documents | queries | nDCG@10 | Recall@100 | queries/s | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|\n\
         | {} | {} | {:.4} | {:.4} | {:.0} | {:.2} | {:.2} |\n",
        report.documents,
        report.queries,
        report.ndcg_at_10,
        report.recall_at_100,
        report.queries_per_second,
        report.latency_ms_p50,
        report.latency_ms_p99,
        mode = mode_name(args.mode),
        args = std::env::args().skip(2).collect::<Vec<_>>().join(" "),
    );
    print!("{markdown}");
    if let Some(s) = ingest_seconds {
        println!("\nindexed {} documents in {s:.1}s", report.documents);
    }
    std::fs::create_dir_all(&args.out)?;
    let stem = args.out.join(format!("{name}-{}", mode_name(args.mode)));
    std::fs::write(stem.with_extension("json"), serde_json::to_string_pretty(&report)? + "\n")?;
    std::fs::write(stem.with_extension("md"), markdown)?;
    println!("wrote {}.{{json,md}}", stem.display());
    Ok(())
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Bm25 => "bm25",
        Mode::Agentic => "agentic",
    }
}

fn resolve(dataset: &Path, path: &Path) -> PathBuf {
    if path.exists() { path.to_owned() } else { dataset.join(path) }
}

fn pick(dir: &Path, what: &str, preferred: &str, matches: impl Fn(&str) -> bool) -> anyhow::Result<PathBuf> {
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
        _ => bail!("several {what} files in {}: choose one with --{what}", dir.display()),
    }
}

fn read_queries(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("{}:{}: not JSON", path.display(), n + 1))?;
        let (Some(id), Some(text)) = (v["_id"].as_str(), v["text"].as_str()) else {
            bail!("{}:{}: a query needs `_id` and `text`", path.display(), n + 1);
        };
        out.push((id.to_owned(), text.to_owned()));
    }
    Ok(out)
}

/// Query id to relevant document ids with their grades; grades of 0 are not relevant.
fn read_qrels(path: &Path) -> anyhow::Result<HashMap<String, HashMap<String, f64>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if n == 0 && cols.first() == Some(&"query-id") || line.trim().is_empty() {
            continue;
        }
        let [query, doc, grade] = cols[..] else {
            bail!("{}:{}: expected `query-id<TAB>corpus-id<TAB>score`", path.display(), n + 1);
        };
        let grade: f64 = grade.trim().parse().with_context(|| format!("{}:{}: bad score", path.display(), n + 1))?;
        if grade > 0.0 {
            qrels.entry(query.to_owned()).or_default().insert(doc.to_owned(), grade);
        }
    }
    Ok(qrels)
}

/// nDCG with linear gains, as pytrec_eval (and so BEIR) computes it.
pub(crate) fn ndcg_at(ranked: &[&str], relevant: &HashMap<String, f64>, k: usize) -> f64 {
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let mut seen = HashSet::new();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| seen.insert(**id))
        .map(|(i, id)| relevant.get(*id).copied().unwrap_or(0.0) * discount(i))
        .sum();
    let mut ideal: Vec<f64> = relevant.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, g)| g * discount(i)).sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

pub(crate) fn recall_at(ranked: &[&str], relevant: &HashMap<String, f64>, k: usize) -> f64 {
    let found: HashSet<&str> = ranked.iter().take(k).copied().filter(|id| relevant.contains_key(*id)).collect();
    found.len() as f64 / relevant.len().max(1) as f64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(ids: &[&str]) -> HashMap<String, f64> {
        ids.iter().map(|id| (id.to_string(), 1.0)).collect()
    }

    #[test]
    fn ndcg_is_one_for_a_perfect_ranking_and_discounts_later_ranks() {
        assert!((ndcg_at(&["a", "b", "x"], &rel(&["a", "b"]), 10) - 1.0).abs() < 1e-12);
        let late = ndcg_at(&["x", "a"], &rel(&["a"]), 10);
        assert!((late - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(ndcg_at(&["x"], &rel(&["a"]), 10), 0.0);
    }

    #[test]
    fn recall_counts_the_share_of_relevant_documents_found() {
        assert_eq!(recall_at(&["a", "x", "b"], &rel(&["a", "b", "c", "d"]), 100), 0.5);
        assert_eq!(recall_at(&["a", "b"], &rel(&["a", "b"]), 1), 0.5);
    }
}
