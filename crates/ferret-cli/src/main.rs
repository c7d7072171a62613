//! The `ferret` command: `ferret ingest` fills an embedded index from files, `ferret search`
//! answers a question with citations, from that index or from the built-in default corpus.

mod find_model;
mod ingest;
mod llm_args;
mod render;
mod research;
mod searcher;
mod store_args;
mod web_args;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use ferret::jobs::search::DateRange;
use ferret::jobs::session::{default_threads_dir, OnRepeat};
use ferret::record::{Recorder, Recording};
use ferret::{Budget, Ferret, Filters, Query, Strategy};
use searcher::SearcherArgs;

// candle's attention temporaries make the system allocator spend its time in page faults.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "ferret", version, about = "Agentic search with cited answers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the search variant's size costs nothing, boxing it would cost clarity.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Add files to an embedded index: BEIR corpus.jsonl, JSONL records, folders of .md / .txt,
    /// or a web page by its http(s) address (fetched as markdown, kept under --fetched-dir).
    /// A single markdown or text file, or a page, is also recorded in the index's knowledge
    /// registry with its title, summary and keywords.
    Ingest(ingest::IngestArgs),
    /// Maintain an embedded index.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Research from a course syllabus (markdown): sort its references, add those listed under
    /// References to the knowledge base (--index), search it per theme and the web per link
    /// in a module (--web), and print a note with references; the run is saved in a folder.
    Research(research::ResearchArgs),
    /// Answer a question with citations.
    Search {
        /// The question (with --replay, the recorded run's question is used).
        #[arg(required_unless_present = "replay")]
        question: Option<String>,
        #[command(flatten)]
        searcher: SearcherArgs,
        /// Print the whole response as JSON.
        #[arg(long)]
        json: bool,
        /// Also print the trace: intent, queries, backend calls, grading, attempts.
        #[arg(short, long)]
        verbose: bool,
        /// Sources listed at most.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Only results dated on or after this day (YYYY-MM-DD).
        #[arg(long)]
        since: Option<chrono::NaiveDate>,
        /// Only results dated on or before this day (YYYY-MM-DD).
        #[arg(long)]
        until: Option<chrono::NaiveDate>,
        /// Only the N most recent dated entries.
        #[arg(long)]
        recent: Option<usize>,
        /// Seconds the whole search may take (default 30); a model on a slow machine may need
        /// more.
        #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
        wall_time: Option<std::time::Duration>,
        /// Seconds one backend or model call may take (default 10).
        #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
        call_deadline: Option<std::time::Duration>,
        /// How hard to try: auto chooses per question (one pass when results are good, multi-hop
        /// for bridge questions, a plan for a report), refine retries weak results, single-pass
        /// searches once, multi-hop follows the names results lead to, tool-loop lets a selector
        /// pick each search, plan runs a plan of searches and writes a report.
        #[arg(long, default_value = "auto", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Keep everything the search exchanges with its backends, model and embedder in the
        /// folder DIR (case.json, exchanges.jsonl, response.json), to run it again with
        /// --replay; the folder is also a test case for fixtures/search/.
        #[arg(long, value_name = "DIR", conflicts_with = "replay")]
        record: Option<PathBuf>,
        /// Run the search recorded in DIR again, its strategy and settings included, with no
        /// network and no model; an error if it strays from the recording. The recording's
        /// own settings are used, so the flags that choose them are refused beside it.
        #[arg(long, value_name = "DIR", conflicts_with_all = [
            "strategy", "index", "mode", "llm", "web", "limit", "since", "until", "recent",
            "wall_time", "call_deadline", "qdrant_url",
        ])]
        replay: Option<PathBuf>,
        #[command(flatten)]
        web_options: web_args::WebOptionArgs,
        /// Your situation, read beside the question (repeat): --context java_version=17.
        #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_context_pair)]
        context: Vec<(String, String)>,
        /// Ask in the thread NAME, kept under Ferret's home (threads/) between runs: a question
        /// the thread already asked (the same words, or the same error from another machine)
        /// is answered from the thread with no search.
        #[arg(long, value_name = "NAME", conflicts_with_all = ["record", "replay"])]
        thread: Option<String>,
        /// With --thread, search again even when the thread has asked this before.
        #[arg(long, requires = "thread")]
        search_again: bool,
    },
    /// Find model files a ComfyUI workflow needs on Civitai and the HuggingFace Hub: one file by
    /// name or hash, or every file a workflow's loader nodes reference that --models-dir lacks.
    FindModel(find_model::FindModelArgs),
    /// Serve the MCP tools `search` and `fetch` over standard input and output, for a coding
    /// agent or assistant that starts `ferret mcp` as its tool server.
    Mcp {
        #[command(flatten)]
        searcher: SearcherArgs,
    },
    /// Serve the HTTP API (search, streamed search, chat, ingest, health, MCP under /mcp) over
    /// the same backends `search` can use, until Ctrl-C or SIGTERM; requests in flight finish
    /// first.
    Serve {
        /// Address to listen on; loopback unless you put an authenticating proxy in front.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        #[command(flatten)]
        searcher: SearcherArgs,
        /// Searches running at once (at least 1); one more is answered 503 with Retry-After.
        #[arg(long, default_value_t = ferret_server::Limits::default().max_concurrent, value_parser = at_least_one)]
        max_concurrent: usize,
        /// Seconds a search may run; a request's budget asking for more gets this much.
        #[arg(long, default_value_t = ferret_server::Limits::default().request_deadline.as_secs())]
        deadline_secs: u64,
        /// Largest request body, in bytes.
        #[arg(long, default_value_t = ferret_server::Limits::default().max_body_bytes)]
        max_body_bytes: usize,
        /// Largest POST /v1/ingest body, in bytes.
        #[arg(long, default_value_t = ferret_server::Limits::default().max_ingest_bytes)]
        max_ingest_bytes: usize,
        /// A folder whose files POST /v1/ingest may name by path; without it, documents are
        /// only taken from request bodies.
        #[arg(long)]
        ingest_root: Option<PathBuf>,
        /// A host name (or host:port) the server answers to beside localhost, 127.0.0.1 and
        /// ::1, for clients that reach it by that name; any other Host is refused (DNS
        /// rebinding). Repeat for several.
        #[arg(long = "allowed-host", visible_alias = "mcp-host")]
        allowed_hosts: Vec<String>,
        /// A web origin (`https://portal.example.org`) whose pages may call the API from a
        /// browser, beside the server's own; requests from other sites' pages are refused.
        #[arg(long = "allowed-origin")]
        allowed_origins: Vec<String>,
        /// Serve on an address other than loopback without bearer tokens: anyone who can reach
        /// it may search and ingest.
        #[arg(long)]
        allow_open: bool,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Rebuild the index from its documents alone, leaving behind the engine's write-ahead log
    /// (which keeps every write of the index's life) and deleted documents. Safe to interrupt:
    /// the old index stays in use until the new one is complete.
    Compact {
        /// The index folder.
        #[arg(long, default_value_os_t = store_args::default_index())]
        index: PathBuf,
    },
}

/// A count that must allow something: 1 or more.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 would refuse every request: give 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A number of seconds above zero, fractions allowed.
fn positive_seconds(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs.is_finite() => {
            std::time::Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
        }
        Ok(_) => Err("give a number of seconds above 0".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// `key=value`, split at the first `=`.
fn parse_context_pair(pair: &str) -> Result<(String, String), String> {
    let (key, value) = pair
        .split_once('=')
        .ok_or_else(|| format!("`{pair}` is not key=value"))?;
    Ok((key.trim().to_owned(), value.trim().to_owned()))
}

fn main() -> ExitCode {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::FindModel(args) => args.run(),
        Command::Ingest(args) => args.run(),
        Command::Index(IndexCommand::Compact { index }) => {
            let started = std::time::Instant::now();
            let done = ferret::index::LocalIndex::compact(&index)
                .with_context(|| format!("compacting the index at {}", index.display()))?;
            let mb = |bytes: u64| bytes as f64 / 1_048_576.0;
            println!(
                "compacted {}: {} documents, {:.1} MB -> {:.1} MB ({:.1}s)",
                index.display(),
                done.points,
                mb(done.bytes_before),
                mb(done.bytes_after),
                started.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Research(args) => args.run(),
        Command::Search {
            question,
            searcher,
            json,
            verbose,
            limit,
            since,
            until,
            recent,
            wall_time,
            call_deadline,
            strategy,
            record,
            replay,
            web_options,
            context,
            thread,
            search_again,
        } => {
            let date_range = (since.is_some() || until.is_some()).then_some(DateRange {
                from: since,
                to: until,
            });
            let filters = Filters {
                date_range,
                most_recent: recent,
                ..Filters::default()
            };
            let query = question
                .map(|q| {
                    let query = Query::from_log(q)?
                        .with_limit(limit)?
                        .with_filters(filters)?
                        .with_options(web_options.options())?
                        .with_context(context.into_iter().collect())?;
                    let budget = Budget {
                        max_paid_units: web_options
                            .max_paid_units
                            .unwrap_or(query.budget.max_paid_units),
                        wall_time: wall_time.unwrap_or(query.budget.wall_time),
                        call_deadline: call_deadline.unwrap_or(query.budget.call_deadline),
                        ..query.budget
                    };
                    let mut query = query.with_budget(budget);
                    if search_again {
                        query.on_repeat = OnRepeat::SearchAgain;
                    }
                    anyhow::Ok(query)
                })
                .transpose()?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let response = match (&record, &replay, query) {
                (None, Some(dir), query) => {
                    let recording = Recording::load(dir)?;
                    if let Some(query) = &query {
                        recording.check_question(query.text())?;
                    }
                    let response = runtime.block_on(Ferret::replay(&recording))?;
                    if let Some(difference) = recording.difference(&response) {
                        eprintln!(
                            "warning: the replayed response differs from the one recorded in {} {difference}",
                            dir.display()
                        );
                    }
                    response
                }
                (Some(dir), _, Some(query)) => {
                    let ferret = searcher.build_recording(strategy, Recorder::new())?;
                    let (response, recording) = runtime.block_on(ferret.search_recorded(query))?;
                    recording.save(dir)?;
                    // A run that hung on its clock (a model call cut by its deadline) cannot
                    // be replayed exactly: say so now rather than when a test fails.
                    match runtime.block_on(Ferret::replay(&recording)) {
                        Ok(replayed) => {
                            if let Some(difference) = recording.difference(&replayed) {
                                eprintln!(
                                    "warning: {} replays to a different response ({difference}): this run depended on its timing",
                                    dir.display()
                                );
                            }
                        }
                        Err(e) => eprintln!("warning: {} does not replay: {e}", dir.display()),
                    }
                    response
                }
                (_, _, Some(query)) => match thread {
                    Some(name) => {
                        let ferret =
                            searcher.build_keeping_threads(strategy, default_threads_dir())?;
                        runtime.block_on(ferret.session(name).search(query))?
                    }
                    None => runtime.block_on(searcher.build(strategy)?.search(query))?,
                },
                (_, _, None) => anyhow::bail!("a question is needed unless --replay is given"),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&response)?);
            } else {
                print!("{}", render::response(&response, verbose));
            }
            for failure in &response.failures {
                eprintln!("warning: {} (query: {:?})", failure.error, failure.query);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { searcher } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let memory = searcher.file_config()?.memory;
            let ferret = searcher.build(Strategy::Auto)?;
            ferret.open_now()?;
            let seen = ferret_mcp::SeenHits::new(
                memory
                    .seen_hit_bytes()
                    .unwrap_or(ferret_mcp::DEFAULT_SEEN_BYTES),
            );
            let server = ferret_mcp::FerretMcp::new(ferret).with_seen(std::sync::Arc::new(seen));
            runtime.block_on(ferret_mcp::serve_stdio(server))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve {
            addr,
            searcher,
            max_concurrent,
            deadline_secs,
            max_body_bytes,
            max_ingest_bytes,
            ingest_root,
            allowed_hosts,
            allowed_origins,
            allow_open,
        } => {
            let file = searcher.file_config()?;
            let defaults = ferret_server::Limits::default();
            let limits = ferret_server::Limits {
                max_concurrent,
                request_deadline: std::time::Duration::from_secs(deadline_secs),
                max_body_bytes,
                max_ingest_bytes,
                thread_owner_bytes: (file.memory.thread_owner_bytes())
                    .unwrap_or(defaults.thread_owner_bytes),
                seen_hit_bytes: (file.memory.seen_hit_bytes()).unwrap_or(defaults.seen_hit_bytes),
                ..defaults
            };
            if let Some(root) = &ingest_root {
                anyhow::ensure!(
                    root.is_dir(),
                    "--ingest-root {} is not a folder",
                    root.display()
                );
            }
            let tokens = bearer_tokens(&file)?;
            if tokens.is_empty() && !addr.ip().is_loopback() {
                anyhow::ensure!(
                    allow_open,
                    "--addr {addr} is reachable from other machines and no bearer tokens are \
                     set: anyone could search and ingest. Set {API_TOKEN_VARIABLE} or \
                     [[server.tokens]], or pass --allow-open to serve it open"
                );
                eprintln!(
                    "ferret: warning: serving {addr} with no tokens (--allow-open): anyone who reaches it may search and ingest"
                );
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let ferret = searcher.build(Strategy::Auto)?;
            // The built-in corpus is opened now: held by another process, the server stops
            // here rather than answering every search with a failure.
            ferret.open_now()?;
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                eprintln!(
                    "ferret: serving on http://{} (backends: {})",
                    listener.local_addr()?,
                    ferret.backend_names().join(", ")
                );
                if tokens.is_empty() {
                    eprintln!(
                        "ferret: no bearer tokens ([[server.tokens]] or {API_TOKEN_VARIABLE}): every request is answered and documents' access lists are not applied"
                    );
                }
                let unlisted = if file.server.private_by_default {
                    ferret::index::Unlisted::Private
                } else {
                    ferret::index::Unlisted::Public
                };
                let mut state = ferret_server::AppState::new(ferret, limits)
                    .with_tokens(tokens)
                    .with_unlisted(unlisted)
                    .with_allowed_hosts(allowed_hosts)
                    .with_allowed_origins(allowed_origins);
                if let Some(root) = ingest_root {
                    state = state.with_ingest_root(root);
                }
                ferret_server::serve(listener, state, shutdown_signal()).await?;
                anyhow::Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The variable holding the one bearer token `ferret serve` takes when the configuration file
/// lists none; its principal is `default`.
const API_TOKEN_VARIABLE: &str = "FERRET_API_TOKEN";

/// The bearer tokens `ferret serve` takes: those `[[server.tokens]]` lists, each read from its
/// variable, else the one in `FERRET_API_TOKEN`; none leaves the server open.
fn bearer_tokens(
    file: &ferret::config::FileConfig,
) -> anyhow::Result<Vec<ferret_server::BearerToken>> {
    let read = |principal: &str, variable: &str| {
        let secret = std::env::var(variable).map_err(|_| {
            anyhow::anyhow!("the variable {variable}, holding {principal}'s token, is not set")
        })?;
        ferret_server::BearerToken::new(principal, secret).ok_or_else(|| {
            anyhow::anyhow!("the variable {variable}, holding {principal}'s token, is empty")
        })
    };
    let quota = |own: Option<std::num::NonZeroU32>| own.or(file.server.requests_per_minute);
    let with_quota = |token: ferret_server::BearerToken, own| match quota(own) {
        Some(quota) => token.with_requests_per_minute(quota),
        None => token,
    };
    if !file.server.tokens.is_empty() {
        // A token nobody reads would leave its holder thinking they are let in as the operator.
        if std::env::var_os(API_TOKEN_VARIABLE).is_some() {
            anyhow::bail!(
                "{API_TOKEN_VARIABLE} is set, but the configuration lists [[server.tokens]], which \
                 take its place: unset {API_TOKEN_VARIABLE}, or add its holder to [[server.tokens]]"
            );
        }
        // Threads, quotas and what `fetch` remembers belong to a principal by name: two tokens
        // under one name with different groups would share them.
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = file
            .server
            .tokens
            .iter()
            .find(|t| !names.insert(t.principal.as_str()))
        {
            anyhow::bail!(
                "[[server.tokens]] names principal `{}` twice: give each token its own principal",
                twice.principal
            );
        }
        let tokens: Vec<ferret_server::BearerToken> = file
            .server
            .tokens
            .iter()
            .map(|t| {
                let mut token =
                    read(&t.principal, &t.variable)?.with_groups(t.groups.iter().cloned());
                if t.ingest {
                    token = token.allowing_ingest();
                }
                Ok(with_quota(token, t.requests_per_minute))
            })
            .collect::<anyhow::Result<_>>()?;
        if let Some((first, second)) = ferret_server::BearerToken::sharing_a_secret(&tokens) {
            anyhow::bail!(
                "principals `{first}` and `{second}` are given the same token: a request could \
                 stand for either; give each principal its own secret"
            );
        }
        return Ok(tokens);
    }
    match std::env::var_os(API_TOKEN_VARIABLE) {
        // The one token of a server is its operator's: it may ingest.
        Some(_) => Ok(vec![with_quota(
            read("default", API_TOKEN_VARIABLE)?.as_operator(),
            None,
        )]),
        None => Ok(Vec::new()),
    }
}

/// Ctrl-C, or SIGTERM where there is one.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
    eprintln!("ferret: shutting down after the requests in flight");
}

/// A strategy's name on the command line: `multi-hop` or `multi_hop`.
fn parse_strategy(name: &str) -> Result<Strategy, String> {
    name.parse()
        .map_err(|e: ferret::jobs::search::UnknownStrategy| e.to_string().replace('_', "-"))
}
