//! `cargo xtask bench server`: a load test of `ferret serve` on loopback, over the embedded
//! default corpus with no language model. After a warm-up, a fixed number of clients send
//! requests back to back for a fixed time, twice: `POST /v1/search` with a question never sent
//! before each time, then `POST /v1/chat` in threads of a few messages each (with a bearer
//! token, so threads have owners). The report gives requests per second, the latency
//! percentiles, every status seen, and resident memory sampled along the way: every store that
//! grows with traffic has a byte budget, so memory must level off, and the run fails when it
//! rises past 1.5 times the first minute's. A last run sends more clients than the concurrency
//! limit admits: the excess must get 503 with `Retry-After`, and nothing else may fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::process::resident_mb;
use anyhow::Context as _;
use ferret::Ferret;
use ferret_server::{AppState, BearerToken, Limits};
use serde::Serialize;

/// How long and how hard to load the server.
#[derive(Debug, Clone, Copy)]
pub struct LoadPlan {
    pub warmup: Duration,
    pub measured: Duration,
    pub clients: usize,
}

/// What the clients send.
#[derive(Debug, Clone, Copy)]
enum Workload {
    /// `POST /v1/search`, each question new.
    UniqueSearches,
    /// `POST /v1/chat`: a new thread, then follow-ups in it, this many messages a thread.
    Chat { messages_per_thread: usize },
}

/// Resident memory may grow past its first minute's by this factor, at most.
const MEMORY_GROWTH_ALLOWED: f64 = 1.5;

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
    /// Resident memory of the process (server and load generator), MB, every 5 s, for a
    /// measured run.
    resident_mb: Vec<f64>,
    /// What each store held at the last sample, MB, as `/metrics` says.
    held_mb: BTreeMap<String, f64>,
    /// The most resident memory in the first minute, and after it, MB.
    first_minute_mb: f64,
    after_mb: f64,
}

impl Phase {
    /// How far memory rose past the first minute's.
    fn growth(&self) -> f64 {
        if self.first_minute_mb > 0.0 {
            self.after_mb / self.first_minute_mb
        } else {
            1.0
        }
    }
}

#[derive(Debug, Serialize)]
struct Report {
    command: String,
    questions: usize,
    question_source: String,
    backends: Vec<String>,
    steady: Phase,
    chat: Phase,
    overloaded: Phase,
}

/// The HotpotQA-1k dev questions (their evidence is not in the default corpus, so they
/// exercise the whole pipeline, refinement included), from which each question sent is made.
fn questions(dataset: &Path) -> anyhow::Result<Vec<String>> {
    let path = dataset.join("queries.dev.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["text"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// The `n`th question sent: the first half of one question's words and the second half of
/// another's, a different pair for each `n` below the square of the questions' number, so no
/// question repeats and no cache can answer it.
fn unique_question(questions: &[String], n: usize) -> String {
    let count = questions.len();
    let first = n % count;
    let second = (first + 1 + (n / count) % (count - 1).max(1)) % count;
    let words = |q: &str| q.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let (a, b) = (words(&questions[first]), words(&questions[second]));
    let mut mixed = a[..a.len() / 2].to_vec();
    mixed.extend_from_slice(&b[b.len() / 2..]);
    mixed.join(" ")
}

pub fn run(dataset: &Path, plan: LoadPlan, out: &Path) -> anyhow::Result<()> {
    let questions = Arc::new(questions(dataset)?);
    anyhow::ensure!(
        questions.len() > 1,
        "fewer than two questions in {}",
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
        let server = start(AppState::new(ferret.clone(), steady_limits)).await?;
        println!("warming up for {} s", plan.warmup.as_secs());
        let searches = Workload::UniqueSearches;
        load(
            &server,
            &questions,
            searches,
            plan.clients,
            plan.warmup,
            false,
        )
        .await;
        println!(
            "measuring {} clients, each question new, for {} s",
            plan.clients,
            plan.measured.as_secs()
        );
        let mut steady = load(
            &server,
            &questions,
            searches,
            plan.clients,
            plan.measured,
            true,
        )
        .await;
        steady.max_concurrent = steady_limits.max_concurrent;

        println!(
            "measuring {} clients chatting, for {} s",
            plan.clients,
            plan.measured.as_secs()
        );
        let token = BearerToken::new("bench", BENCH_TOKEN).context("a bench token")?;
        let chatting =
            start(AppState::new(ferret.clone(), steady_limits).with_tokens(vec![token])).await?;
        let chat_load = Workload::Chat {
            messages_per_thread: 5,
        };
        let mut chat = load(
            &chatting,
            &questions,
            chat_load,
            plan.clients,
            plan.measured,
            true,
        )
        .await;
        chat.max_concurrent = steady_limits.max_concurrent;

        let tight = Limits {
            max_concurrent: 1,
            ..Limits::default()
        };
        let server = start(AppState::new(ferret.clone(), tight)).await?;
        let crowd = plan.clients * 2;
        println!("overloading: {crowd} clients, 1 admitted at a time, for 10 s");
        let mut overloaded = load(
            &server,
            &questions,
            searches,
            crowd,
            Duration::from_secs(10),
            false,
        )
        .await;
        overloaded.max_concurrent = tight.max_concurrent;
        anyhow::Ok(Report {
            command: format!(
                "cargo xtask bench {}",
                std::env::args().skip(2).collect::<Vec<_>>().join(" ")
            ),
            questions: questions.len(),
            question_source: format!("{}/queries.dev.jsonl", dataset.display()),
            backends,
            steady,
            chat,
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
    crate::report::write_report(&out.join("server"), &report, &markdown)?;
    for (name, phase) in [("steady", &report.steady), ("chat", &report.chat)] {
        anyhow::ensure!(
            unexpected(phase, &["200"]) == 0,
            "the {name} run had errors: {:?}",
            phase.statuses
        );
        anyhow::ensure!(
            phase.growth() <= MEMORY_GROWTH_ALLOWED,
            "the {name} run's resident memory rose to {:.2}x its first minute's",
            phase.growth()
        );
    }
    anyhow::ensure!(
        unexpected(&report.overloaded, &["200", "503"]) == 0
            && report.overloaded.with_retry_after
                == report.overloaded.statuses.get("503").copied().unwrap_or(0),
        "the overloaded run had errors other than 503 with Retry-After: {:?}",
        report.overloaded.statuses
    );
    Ok(())
}

/// What each store that grows with traffic holds, MB, from the server's `/metrics`.
async fn held_mb(client: &reqwest::Client, metrics: &str) -> BTreeMap<String, f64> {
    let text = match client.get(metrics).bearer_auth(BENCH_TOKEN).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("ferret_held_bytes{store=\"")?;
            let (store, value) = rest.split_once("\"} ")?;
            Some((store.to_owned(), value.parse::<f64>().ok()? / 1e6))
        })
        .collect()
}

/// The secret of the chat run's one principal.
const BENCH_TOKEN: &str = "bench-token-of-the-load-test";

/// A server for `state` on a loopback port; its URL.
async fn start(state: AppState) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = ferret_server::serve(listener, state, std::future::pending()).await;
    });
    Ok(url)
}

/// Where each client starts counting its questions, so that no run repeats another's.
static SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One request of `workload`: its route and body, and the thread it continues.
fn request(
    workload: Workload,
    question: String,
    thread: Option<&str>,
) -> (&'static str, serde_json::Value) {
    match workload {
        Workload::UniqueSearches => ("/v1/search", serde_json::json!({ "query": question })),
        Workload::Chat { .. } => (
            "/v1/chat",
            match thread {
                Some(id) => serde_json::json!({ "message": question, "thread_id": id }),
                None => serde_json::json!({ "message": question }),
            },
        ),
    }
}

/// `clients` clients sending `workload` back to back for `duration`; when `measured`, resident
/// memory is sampled every 5 s.
async fn load(
    url: &str,
    questions: &Arc<Vec<String>>,
    workload: Workload,
    clients: usize,
    duration: Duration,
    measured: bool,
) -> Phase {
    let client = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let samples = Arc::new(Mutex::new(vec![(0.0, resident_mb())]));
    let held = Arc::new(Mutex::new(Vec::new()));
    let sampler = measured.then(|| {
        let (stop, samples, held) = (stop.clone(), samples.clone(), held.clone());
        let (client, metrics) = (client.clone(), format!("{url}/metrics"));
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let at = started.elapsed().as_secs_f64();
                samples.lock().unwrap().push((at, resident_mb()));
                let stores = held_mb(&client, &metrics).await;
                held.lock().unwrap().push(stores);
            }
        })
    });
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (client, questions, stop) = (client.clone(), questions.clone(), stop.clone());
            let url = url.to_owned();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut thread: Option<(String, usize)> = None;
                while !stop.load(Ordering::Relaxed) {
                    let n = SENT.fetch_add(1, Ordering::Relaxed);
                    let question = unique_question(&questions, n);
                    let continued = thread.as_ref().map(|(id, _)| id.as_str());
                    let (route, body) = request(workload, question, continued);
                    let sent = Instant::now();
                    let outcome = client
                        .post(format!("{url}{route}"))
                        .bearer_auth(BENCH_TOKEN)
                        .json(&body)
                        .send()
                        .await;
                    let (status, retry_after) = match outcome {
                        Ok(response) => {
                            let status = response.status().as_u16().to_string();
                            let retry_after = response.headers().contains_key("retry-after");
                            let reply: serde_json::Value =
                                response.json().await.unwrap_or_default();
                            if let Workload::Chat {
                                messages_per_thread,
                            } = workload
                            {
                                thread = match (thread.take(), reply["thread_id"].as_str()) {
                                    (Some((id, sent)), _) if sent + 1 < messages_per_thread => {
                                        Some((id, sent + 1))
                                    }
                                    (None, Some(id)) => Some((id.to_owned(), 1)),
                                    _ => None,
                                };
                            }
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
    if measured {
        samples.lock().unwrap().push((seconds, resident_mb()));
    }
    let samples = samples.lock().unwrap().clone();
    let last_held = held.lock().unwrap().last().cloned().unwrap_or_default();
    let most = |from: f64, to: f64| {
        samples
            .iter()
            .filter(|(at, _)| *at >= from && *at <= to)
            .map(|(_, mb)| *mb)
            .fold(0.0, f64::max)
    };
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
        resident_mb: if measured {
            samples.iter().map(|(_, mb)| *mb).collect()
        } else {
            Vec::new()
        },
        held_mb: last_held,
        first_minute_mb: most(0.0, 60.0),
        after_mb: most(60.0, f64::INFINITY),
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
    let memory = |name: &str, p: &Phase| {
        let samples: Vec<String> = p.resident_mb.iter().map(|m| format!("{m:.0}")).collect();
        format!(
            "- {name}: the most in the first minute {:.0} MB, the most after it {:.0} MB \
             (**{:.2}x**). Every 5 s: {}. The stores at the end: {}.\n",
            p.first_minute_mb,
            p.after_mb,
            p.growth(),
            samples.join(", "),
            p.held_mb
                .iter()
                .map(|(store, mb)| format!("{store} {mb:.1} MB"))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    format!(
        "# Server load test\n\n\
         Generated by `{}`: the server and the load generator in one process on loopback, over \
         the embedded default corpus ({}), no language model. Each client sends its next \
         request as soon as its previous answer arrives. Every question is new: the first half \
         of one of {} questions ({}) joined to the second half of another, so no cache can \
         answer it and every store that grows with traffic keeps growing until its byte budget \
         stops it. `steady` sends `POST /v1/search`; `chat` sends `POST /v1/chat` with a \
         bearer token, five messages a thread (a new thread, then four follow-ups), so \
         sessions and threads' owners fill too. Built as `cargo xtask` builds (dependencies at \
         opt-level 2, Ferret's own crates unoptimised), with the default budgets (`[memory]` \
         in `ferret.toml`: result cache 64 MiB, sessions 32 MiB, threads' owners 8 MiB, MCP \
         seen hits 16 MiB).\n\n\
         | run | clients | admitted at once | seconds | requests | answers/s | p50 ms | p99 ms | statuses | 503 with Retry-After |\n\
         |---|---|---|---|---|---|---|---|---|---|\n{}{}{}\n\
         Resident memory of the process (MB), the run failing past {MEMORY_GROWTH_ALLOWED}x \
         its first minute's; the chat run follows the steady one in the same process, so it \
         starts with what the steady run left:\n\n{}{}",
        r.command,
        r.backends.join(", "),
        r.questions,
        r.question_source,
        row("steady", &r.steady),
        row("chat", &r.chat),
        row("overloaded", &r.overloaded),
        memory("steady", &r.steady),
        memory("chat", &r.chat),
    )
}
