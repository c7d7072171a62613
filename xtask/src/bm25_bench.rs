//! `cargo xtask bench bm25`: BM25 queries per second on one thread, through the path a search
//! takes (`LocalBackend` behind the `SearchBackend` trait) and straight into the index
//! (`LocalIndex::search_blocking`), beside bm25s (PyPI, installed into `target/bm25-venv`) on the
//! same corpus and queries in the same run, at k = 10 and k = 100, with each side's nDCG@10.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ferret::backends::{LocalBackend, SearchRequest};
use ferret::jobs::search::RetrievalMode;
use ferret::{Filters, SearchBackend};
use serde::{Deserialize, Serialize};

use crate::judged::{ndcg_at, read_qrels, read_queries};

const PEER_SCRIPT: &str = include_str!("bm25_peer.py");
const PEER_PACKAGES: &[&str] = &["bm25s==0.3.16", "PyStemmer==3.1.0"];
/// Each measurement repeats the queries until it has run this long.
const MEASURE_FOR: Duration = Duration::from_secs(2);

#[derive(Serialize)]
struct Row {
    k: usize,
    /// Through `LocalBackend`, the text read for the top 10 only.
    backend_top10_qps: f64,
    backend_qps: f64,
    index_qps: f64,
    bm25s_qps: f64,
    bm25s_batch_qps: f64,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    documents: usize,
    queries: usize,
    ndcg_at_10: f64,
    bm25s_ndcg_at_10: f64,
    bm25s_version: String,
    rows: Vec<Row>,
    command: String,
}

#[derive(Deserialize)]
struct PeerRun {
    version: String,
    queries_per_second: HashMap<String, PeerRate>,
}

#[derive(Deserialize)]
struct PeerRate {
    one_at_a_time: f64,
    batch: f64,
}

pub fn run(dataset: &Path, base: &Path, out: &Path) -> anyhow::Result<()> {
    let name = dataset
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into());
    let index = Arc::new(crate::eval::prepare_index(dataset, &name, base, None, false)?.index);
    let qrels = read_qrels(&dataset.join("qrels/test.tsv"))?;
    let queries: Vec<(String, String)> = read_queries(&dataset.join("queries.test.jsonl"))?
        .into_iter()
        .filter(|(id, _)| qrels.contains_key(id))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let backend = LocalBackend::new("local", Arc::clone(&index)).with_mode(RetrievalMode::Bm25)?;

    let work = crate::peers::work_dir("bm25")?;
    let peer = run_peer(dataset, &queries, &work)?;
    let bm25s_ranked: HashMap<String, Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(work.join("ranked.json"))?)?;
    let _ = std::fs::remove_dir_all(&work);

    let mut rows = Vec::new();
    let mut ndcg = 0.0;
    for k in [10, 100] {
        let requests: Vec<SearchRequest> = queries
            .iter()
            .map(|(_, text)| SearchRequest {
                query: text.clone(),
                limit: k,
                filters: Filters::default(),
                options: Default::default(),
                text_for: None,
            })
            .collect();
        if k == 10 {
            for ((id, _), request) in queries.iter().zip(&requests) {
                let hits = runtime.block_on(backend.search(request))?;
                let ranked: Vec<&str> = hits.iter().map(|h| h.id.0.as_str()).collect();
                ndcg += ndcg_at(&ranked, &qrels[id], 10);
            }
        }
        let backend_qps = rate(requests.len(), || {
            for request in &requests {
                runtime.block_on(backend.search(request))?;
            }
            Ok(())
        })?;
        // What a caller that shows ten hits and fuses the rest by rank asks for.
        let top10: Vec<SearchRequest> = requests
            .iter()
            .map(|r| SearchRequest {
                text_for: Some(10),
                ..r.clone()
            })
            .collect();
        let backend_top10_qps = rate(top10.len(), || {
            for request in &top10 {
                runtime.block_on(backend.search(request))?;
            }
            Ok(())
        })?;
        let index_qps = rate(requests.len(), || {
            for request in &requests {
                index.search_blocking(request, RetrievalMode::Bm25, None, "local")?;
            }
            Ok(())
        })?;
        let peer_rate = peer
            .queries_per_second
            .get(&k.to_string())
            .context("bm25s gave no rate for this k")?;
        println!(
            "k={k}: LocalBackend {backend_top10_qps:.0} q/s with the text of the top 10, {backend_qps:.0} with every text, LocalIndex {index_qps:.0} q/s, bm25s {:.0} q/s ({:.0} batched)",
            peer_rate.one_at_a_time, peer_rate.batch
        );
        rows.push(Row {
            k,
            backend_top10_qps,
            backend_qps,
            index_qps,
            bm25s_qps: peer_rate.one_at_a_time,
            bm25s_batch_qps: peer_rate.batch,
        });
    }
    let bm25s_ndcg = queries
        .iter()
        .map(|(id, _)| {
            let ranked: Vec<&str> = bm25s_ranked
                .get(id)
                .map(|r| r.iter().map(String::as_str).collect())
                .unwrap_or_default();
            ndcg_at(&ranked, &qrels[id], 10)
        })
        .sum::<f64>();
    let n = queries.len() as f64;
    let report = Report {
        dataset: name,
        documents: index.len(),
        queries: queries.len(),
        ndcg_at_10: ndcg / n,
        bm25s_ndcg_at_10: bm25s_ndcg / n,
        bm25s_version: peer.version,
        rows,
        command: crate::report::command_line(),
    };
    crate::report::write_report(&out.join("bm25"), &report, &render(&report))
}

/// Queries per second of `pass` (which runs `queries` queries), repeated for at least
/// [`MEASURE_FOR`] after one warm-up pass.
fn rate(queries: usize, mut pass: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    pass()?;
    let started = Instant::now();
    let mut passes = 0;
    while started.elapsed() < MEASURE_FOR {
        pass()?;
        passes += 1;
    }
    Ok((queries * passes) as f64 / started.elapsed().as_secs_f64())
}

fn run_peer(dataset: &Path, queries: &[(String, String)], work: &Path) -> anyhow::Result<PeerRun> {
    let python = crate::peers::venv_with(Path::new("target/bm25-venv"), PEER_PACKAGES)?;
    let script = work.join("bm25_peer.py");
    std::fs::write(&script, PEER_SCRIPT)?;
    let queries_file = work.join("queries.json");
    std::fs::write(&queries_file, serde_json::to_string(queries)?)?;
    crate::peers::peer_figures(
        Command::new(&python)
            .arg(&script)
            .arg(dataset)
            .arg(&queries_file)
            .arg("100")
            .arg(work.join("ranked.json")),
        "bm25s",
    )
}

fn render(r: &Report) -> String {
    let mut md = format!(
        "# BM25 throughput: Ferret and bm25s\n\n\
         Generated by `{}`: {} documents of {}, its {} judged test queries, one thread, measured \
         one after the other in one run ({}), {}.\n\n\
         - **LocalBackend, top 10**: the path a search takes, through the `SearchBackend` trait \
         (the query encoded, the engine searched on the calling task as a keyword search is), the hits ranked by id and \
         score and the text and payload read for the top 10 only (`SearchRequest.text_for`), as \
         a caller that shows ten hits and fuses the rest by rank asks.\n\
         - **LocalBackend, every text**: the same with the text and payload of every hit.\n\
         - **LocalIndex**: every text, the search called straight on the calling thread.\n\
         - **bm25s**: one query at a time (tokenize, retrieve), as a search would ask it; \
         **batched**: all queries in one call, which a search never does.\n\n\
         nDCG@10: Ferret {:.4}, bm25s {:.4}.\n\n\
         | k | LocalBackend, top 10 q/s | LocalBackend, every text q/s | LocalIndex q/s | bm25s q/s | bm25s batched q/s | LocalBackend top 10 / bm25s |\n\
         |---|---|---|---|---|---|---|\n",
        r.command,
        r.documents,
        r.dataset,
        r.queries,
        r.bm25s_version,
        crate::report::build_profile(),
        r.ndcg_at_10,
        r.bm25s_ndcg_at_10,
    );
    for row in &r.rows {
        md += &format!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}x |\n",
            row.k,
            row.backend_top10_qps,
            row.backend_qps,
            row.index_qps,
            row.bm25s_qps,
            row.bm25s_batch_qps,
            row.backend_top10_qps / row.bm25s_qps.max(1e-9),
        );
    }
    md
}
