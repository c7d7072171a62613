//! `cargo xtask bench --server`: a load test of `ferret serve` on loopback, over the embedded
//! default corpus with no language model. After a warm-up, a fixed number of clients send
//! `POST /v1/search` back to back for a fixed time; the report gives requests per second, the
//! latency percentiles, every status seen, and resident memory sampled along the way. A second
//! run sends more clients than the concurrency limit admits: the excess must get 503 with
//! `Retry-After`, and nothing else may fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ferret::Ferret;
use ferret_server::{AppState, Limits};
use serde::Serialize;

/// How long and how hard to load the server.
#[derive(Debug, Clone, Copy)]
pub struct LoadPlan {
    pub warmup: Duration,
    pub measured: Duration,
    pub clients: usize,
}

#[derive(Debug, Default, Serialize)]
struct Phase {
    clients: usize,
    max_concurrent: usize,
    seconds: f64,
    requests: usize,
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Responses by status code; `error` counts requests that got no response.
    statuses: BTreeMap<String, usize>,
    /// 503 responses that said when to come back.
    with_retry_after: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    command: String,
    questions: usize,
    question_source: String,
    backends: Vec<String>,
    /// Resident memory of the process (server and load generator), MB, every 5 s of the
    /// measured run.
    resident_mb: Vec<f64>,
    steady: Phase,
    overloaded: Phase,
}

/// Questions sent, in turn: the HotpotQA-1k dev questions (their evidence is not in the default
/// corpus, so they exercise the whole pipeline, refinement included).
fn questions(dataset: &Path) -> anyhow::Result<Vec<String>> {
    let path = dataset.join("queries.dev.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(200)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["text"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// This process's resident memory, in MB (Linux; 0 elsewhere).
pub(crate) fn resident_mb() -> f64 {
    crate::bench::status_mb("VmRSS")
}

pub fn run(dataset: &Path, plan: LoadPlan, out: &Path) -> anyhow::Result<()> {
    let questions = Arc::new(questions(dataset)?);
    anyhow::ensure!(
        !questions.is_empty(),
        "no questions in {}",
        dataset.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let ferret = Ferret::builder().default_corpus().build()?;
    let backends: Vec<String> = ferret
        .backend_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let report = runtime.block_on(async {
        let steady_limits = Limits {
            max_concurrent: plan.clients * 2,
            ..Limits::default()
        };
        let url = start(ferret.clone(), steady_limits).await?;
        println!("warming up for {} s", plan.warmup.as_secs());
        load(&url, &questions, plan.clients, plan.warmup, None).await;
        println!(
            "measuring {} clients for {} s",
            plan.clients,
            plan.measured.as_secs()
        );
        let samples = Arc::new(Mutex::new(vec![resident_mb()]));
        let mut steady = load(
            &url,
            &questions,
            plan.clients,
            plan.measured,
            Some(samples.clone()),
        )
        .await;
        steady.max_concurrent = steady_limits.max_concurrent;
        samples.lock().unwrap().push(resident_mb());

        let tight = Limits {
            max_concurrent: 1,
            ..Limits::default()
        };
        let url = start(ferret.clone(), tight).await?;
        let crowd = plan.clients * 2;
        println!("overloading: {crowd} clients, 1 admitted at a time, for 10 s");
        let mut overloaded = load(&url, &questions, crowd, Duration::from_secs(10), None).await;
        overloaded.max_concurrent = tight.max_concurrent;
        let resident = samples.lock().unwrap().clone();
        anyhow::Ok(Report {
            command: format!(
                "cargo xtask bench {}",
                std::env::args().skip(2).collect::<Vec<_>>().join(" ")
            ),
            questions: questions.len(),
            question_source: format!("{}/queries.dev.jsonl", dataset.display()),
            backends,
            resident_mb: resident,
            steady,
            overloaded,
        })
    })?;
    let markdown = render(&report);
    print!("{markdown}");
    let unexpected = |p: &Phase, allowed: &[&str]| -> usize {
        p.statuses
            .iter()
            .filter(|(status, _)| !allowed.contains(&status.as_str()))
            .map(|(_, n)| n)
            .sum()
    };
    crate::eval::write_report(&out.join("server"), &report, &markdown)?;
    anyhow::ensure!(
        unexpected(&report.steady, &["200"]) == 0,
        "the steady run had errors: {:?}",
        report.steady.statuses
    );
    anyhow::ensure!(
        unexpected(&report.overloaded, &["200", "503"]) == 0
            && report.overloaded.with_retry_after
                == report.overloaded.statuses.get("503").copied().unwrap_or(0),
        "the overloaded run had errors other than 503 with Retry-After: {:?}",
        report.overloaded.statuses
    );
    Ok(())
}

/// A server for `ferret` within `limits` on a loopback port; its URL.
async fn start(ferret: Ferret, limits: Limits) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let state = AppState::new(ferret, limits);
    tokio::spawn(async move {
        let _ = ferret_server::serve(listener, state, std::future::pending()).await;
    });
    Ok(url)
}

/// `clients` clients sending searches back to back for `duration`; with `samples`, resident
/// memory is sampled every 5 s.
async fn load(
    url: &str,
    questions: &Arc<Vec<String>>,
    clients: usize,
    duration: Duration,
    samples: Option<Arc<Mutex<Vec<f64>>>>,
) -> Phase {
    let client = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = samples.map(|samples| {
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(5)).await;
                samples.lock().unwrap().push(resident_mb());
            }
        })
    });
    let workers: Vec<_> = (0..clients)
        .map(|worker| {
            let (client, questions, stop) = (client.clone(), questions.clone(), stop.clone());
            let endpoint = format!("{url}/v1/search");
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut next = worker;
                while !stop.load(Ordering::Relaxed) {
                    let question = &questions[next % questions.len()];
                    next += clients;
                    let sent = Instant::now();
                    let outcome = client
                        .post(&endpoint)
                        .json(&serde_json::json!({ "query": question }))
                        .send()
                        .await;
                    let (status, retry_after) = match outcome {
                        Ok(response) => {
                            let status = response.status().as_u16().to_string();
                            let retry_after = response.headers().contains_key("retry-after");
                            let _ = response.bytes().await;
                            (status, retry_after)
                        }
                        Err(_) => ("error".to_owned(), false),
                    };
                    if status == "503" {
                        // A refused client waits a little, as Retry-After asks, but the test
                        // keeps the crowd pressing.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    seen.push((status, retry_after, sent.elapsed()));
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.unwrap_or_default());
    }
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies: Vec<f64> = all
        .iter()
        .filter(|(status, _, _)| status == "200")
        .map(|(_, _, d)| d.as_secs_f64() * 1000.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    let mut statuses = BTreeMap::new();
    for (status, _, _) in &all {
        *statuses.entry(status.clone()).or_insert(0) += 1;
    }
    let ok = statuses.get("200").copied().unwrap_or(0);
    Phase {
        clients,
        max_concurrent: 0,
        seconds,
        requests: all.len(),
        requests_per_second: ok as f64 / seconds,
        p50_ms: percentile(0.5),
        p99_ms: percentile(0.99),
        with_retry_after: all
            .iter()
            .filter(|(status, retry_after, _)| status == "503" && *retry_after)
            .count(),
        statuses,
    }
}

fn render(r: &Report) -> String {
    let row = |name: &str, p: &Phase| {
        format!(
            "| {name} | {} | {} | {:.0} | {} | {:.1} | {:.1} | {:.1} | {} | {} |\n",
            p.clients,
            p.max_concurrent,
            p.seconds,
            p.requests,
            p.requests_per_second,
            p.p50_ms,
            p.p99_ms,
            p.statuses
                .iter()
                .map(|(s, n)| format!("{s}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            p.with_retry_after,
        )
    };
    let resident: Vec<String> = r.resident_mb.iter().map(|m| format!("{m:.0}")).collect();
    format!(
        "# Server load test\n\n\
         Generated by `{}`: `POST /v1/search` on loopback, the server and the load generator in one \
         process, over the embedded default corpus ({}), no language model. Each client sends the \
         next of {} questions ({}) as soon as its previous answer arrives. Latency is over the \
         200 responses. Built as `cargo xtask` builds (dependencies at opt-level 2, Ferret's own \
         crates unoptimised). The caches that grow with traffic are bounded (backend results: \
         10,000 entries; sessions: their thread and turn caps).\n\n\
         | run | clients | admitted at once | seconds | requests | answers/s | p50 ms | p99 ms | statuses | 503 with Retry-After |\n\
         |---|---|---|---|---|---|---|---|---|---|\n{}{}\n\
         Resident memory (MB) during the measured run, every 5 s: {}.\n",
        r.command,
        r.backends.join(", "),
        r.questions,
        r.question_source,
        row("steady", &r.steady),
        row("overloaded", &r.overloaded),
        resident.join(", "),
    )
}
