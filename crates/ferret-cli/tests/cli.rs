//! The `ferret` binary as a user runs it.

use std::process::Command;

use ferret_test_support::copy_dir;

fn ferret(home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferret"));
    cmd.env("FERRET_HOME", home).env_remove("RUST_LOG");
    cmd
}

/// The command ran and exited 0; its standard error says why when it did not.
fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A folder of notes under `dir` holding the key-rotation page.
fn notes_in(dir: &std::path::Path) -> std::path::PathBuf {
    let notes = dir.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join("keys.md"),
        "# Key rotation\n\nRotate the API keys every 90 days from the admin console.",
    )
    .unwrap();
    notes
}

/// The notes of [`notes_in`] ingested into `dir/index`: (the notes folder, the index).
fn notes_index_in(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let notes = notes_in(dir);
    let index = dir.join("index");
    assert_success(
        &ferret(dir)
            .arg("ingest")
            .arg(&notes)
            .arg("--index")
            .arg(&index)
            .output()
            .unwrap(),
    );
    (notes, index)
}

#[test]
fn ingest_then_search_with_json_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let notes = notes_in(dir.path());
    std::fs::write(
        notes.join("bad.jsonl"),
        "{\"text\":\"fine line\"}\nnot json\n",
    )
    .unwrap();
    let index = dir.path().join("index");

    let out = ferret(dir.path())
        .arg("ingest")
        .arg(&notes)
        .arg("--index")
        .arg(&index)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a skipped line is reported in the exit code"
    );
    assert!(stdout.contains("2 added"), "{stdout}");
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");

    let out = ferret(dir.path())
        .args([
            "search",
            "how often should keys be rotated?",
            "--json",
            "--index",
        ])
        .arg(&index)
        .output()
        .unwrap();
    assert_success(&out);
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["response_type"], "results");
    assert_eq!(response["citations"][0]["title"], "Key rotation");
    assert_eq!(
        response["short_answer"]["text"], "90",
        "the question asks how often: the number comes first"
    );

    let out = ferret(dir.path())
        .args([
            "search",
            "how often should keys be rotated?",
            "-v",
            "--index",
        ])
        .arg(&index)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Answer: 90 [1]\n"), "{text}");
    for expected in [
        "Sources:",
        "[1] Key rotation",
        "Trace:",
        "intent: search",
        "call local",
        "grading:",
        "stop: Answered",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn bad_input_exits_with_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&["search", "   "], "the question is empty"),
        (
            &["search", "x", "--heuristic-stages", "next-hop"],
            "the stages are follow_up, intent",
        ),
        (&["search", "x", "--wall-time", "0"], "above 0"),
        (
            &[
                "search",
                "x",
                "--llm",
                "openai",
                "--llm-url",
                "http://127.0.0.1:9/v1",
                "--llm-model",
                "m",
                "--heuristic-stages",
                "none,grading",
            ],
            "`none` alone",
        ),
        (&["search", "x", "--call-deadline", "soon"], "invalid float"),
        (
            &["serve", "--max-concurrent", "0"],
            "would refuse every request",
        ),
        (
            &["serve", "--addr", "not-an-address"],
            "invalid socket address",
        ),
        (
            &["search", "x", "--index", "/definitely/not/here"],
            "/definitely/not/here",
        ),
        (
            &["ingest", "/no/such/corpus.jsonl", "--index"],
            "/no/such/corpus.jsonl",
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = ferret(dir.path());
        cmd.args(args);
        if args.last() == Some(&"--index") {
            cmd.arg(dir.path().join("idx"));
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected) && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
    let long = "a".repeat(10_001);
    let out = ferret(dir.path()).args(["search", &long]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("10001 characters"));
}

#[test]
fn a_recorded_run_replays_to_the_same_response_without_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join("volcano.md"),
        "# Volcanoes\n\nVolcanic eruptions are caused by magma rising through the crust.",
    )
    .unwrap();
    std::fs::write(
        notes.join("glacier.md"),
        "# Glaciers\n\nGlaciers form where snow accumulates faster than it melts.",
    )
    .unwrap();
    let index = dir.path().join("index");
    let out = ferret(dir.path())
        .arg("ingest")
        .arg(&notes)
        .arg("--index")
        .arg(&index)
        .args(["--embedder", "none"])
        .output()
        .unwrap();
    assert_success(&out);

    let record = dir.path().join("run");
    let question = "What causes volcanic eruptions? How do glaciers form?";
    let search = |extra: &[&str]| {
        let out = ferret(dir.path())
            .args(["search", question, "--json", "--index"])
            .arg(&index)
            .args(extra)
            .arg(&record)
            .output()
            .unwrap();
        assert_success(&out);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let recorded = search(&["--strategy", "plan", "--record"]);
    for file in ["case.json", "exchanges.jsonl", "response.json"] {
        assert!(record.join(file).is_file(), "the run keeps DIR/{file}");
    }
    assert!(
        recorded["answer"]
            .as_str()
            .unwrap()
            .contains("## References"),
        "{recorded}"
    );

    // The index is gone: the replay writes the same report from the record alone.
    std::fs::remove_dir_all(&index).unwrap();
    std::fs::create_dir_all(&index).unwrap();
    // No question: the record holds it.
    let replayed = ferret(dir.path())
        .args(["search", "--json", "--replay"])
        .arg(&record)
        .output()
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert!(
        replayed.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(replayed["answer"], recorded["answer"]);
    assert_eq!(replayed["citations"], recorded["citations"]);
    assert_eq!(replayed["hits"], recorded["hits"]);

    // Another question, or a folder that holds no recording, is refused with the reason.
    let out = ferret(dir.path())
        .args(["search", "How do rivers form?", "--replay"])
        .arg(&record)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(question), "{stderr}");
    let out = ferret(dir.path())
        .args(["search", "--replay"])
        .arg(&index)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a recording"), "{stderr}");
    // A replay runs with the recorded settings: a flag choosing other ones is refused.
    let out = ferret(dir.path())
        .args(["search", "--strategy", "refine", "--replay"])
        .arg(&record)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--strategy"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_search_answers_from_a_searxng_instance_and_a_missing_key_only_warns() {
    let instance = searxng_instance().await;
    let dir = tempfile::tempdir().unwrap();
    let out = ferret(dir.path())
        .args([
            "search",
            "Which Spring Boot version runs on Java 17?",
            "--web",
            "searxng,tavily",
            "--json",
        ])
        .env("SEARXNG_URL", instance.uri())
        .env_remove("TAVILY_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("TAVILY_API_KEY"),
        "the missing key is named: {stderr}"
    );
    let response: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let urls: Vec<&str> = response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["url"].as_str())
        .collect();
    assert!(
        urls.contains(&"https://docs.spring.io/spring-boot/system-requirements.html"),
        "{urls:?}"
    );
    assert!(
        response["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["backend"] == "searxng"),
        "only the web was searched"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn web_options_reach_the_provider_and_bad_ones_are_refused() {
    let instance = searxng_instance().await;
    let dir = tempfile::tempdir().unwrap();
    let search = |extra: &[&str]| {
        let mut command = ferret(dir.path());
        command
            .args(["search", "Spring Boot on Java 17", "--web", "searxng"])
            .args(extra)
            .env("SEARXNG_URL", instance.uri());
        command.output().unwrap()
    };
    let out = search(&[
        "--topic",
        "news",
        "--freshness",
        "month",
        "--exclude-domain",
        "pinterest.com",
        "--language",
        "en",
    ]);
    assert_success(&out);
    let received = instance.received_requests().await.unwrap();
    let sent: Vec<(String, String)> = received[0].url.query_pairs().into_owned().collect();
    for pair in [
        ("categories", "news"),
        ("time_range", "month"),
        ("language", "en"),
    ] {
        assert!(
            sent.contains(&(pair.0.to_owned(), pair.1.to_owned())),
            "{pair:?} in {sent:?}"
        );
    }
    assert!(
        sent.iter()
            .any(|(k, v)| k == "q" && v.ends_with("-site:pinterest.com")),
        "{sent:?}"
    );

    let unknown = search(&["--freshness", "fortnight"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("fortnight"));
    let url = search(&["--include-domain", "https://spring.io"]);
    assert!(!url.status.success());
    let stderr = String::from_utf8_lossy(&url.stderr);
    assert!(
        stderr.contains("host only") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn a_context_pair_must_be_key_equals_value_and_short() {
    let dir = tempfile::tempdir().unwrap();
    let run = |pair: &str| {
        ferret(dir.path())
            .args([
                "search",
                "NoClassDefFoundError cglib Enhancer",
                "--context",
                pair,
            ])
            .output()
            .unwrap()
    };
    let no_equals = run("java_version");
    assert_eq!(no_equals.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_equals.stderr).contains("key=value"));
    let long = run(&format!("stack={}", "x".repeat(1_001)));
    assert!(!long.status.success());
    let stderr = String::from_utf8_lossy(&long.stderr);
    assert!(
        stderr.contains("context") && stderr.contains("1001") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_file_declares_the_web_backends_and_an_unknown_key_names_its_line() {
    let instance = searxng_instance().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ferret.toml");
    std::fs::write(
        &file,
        format!(
            "[web.searxng]\nurl = \"{}\"\nsafe_search = \"strict\"\n",
            instance.uri()
        ),
    )
    .unwrap();
    let out = ferret(dir.path())
        .args(["search", "Spring Boot on Java 17", "--json"])
        .env("FERRET_CONFIG", &file)
        .env_remove("SEARXNG_URL")
        .output()
        .unwrap();
    assert_success(&out);
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["backend"] == "searxng"));
    let received = instance.received_requests().await.unwrap();
    assert!(received[0]
        .url
        .query_pairs()
        .any(|(k, v)| k == "safesearch" && v == "2"));

    std::fs::write(&file, "[web.searxng]\nurl = \"http://x\"\nsafesearch = 2\n").unwrap();
    let out = ferret(dir.path())
        .args(["search", "q", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 3") && stderr.contains("safesearch"),
        "{stderr}"
    );
}

/// A SearXNG instance on a mock server, answering every search with the normal fixture case.
async fn searxng_instance() -> wiremock::MockServer {
    let instance = wiremock::MockServer::start().await;
    let body = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/web/searxng-normal/response.json"
    ))
    .unwrap();
    wiremock::Mock::given(wiremock::matchers::path("/search"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(body, "application/json"))
        .mount(&instance)
        .await;
    instance
}

#[test]
fn serve_answers_over_http_takes_documents_and_stops_on_sigterm_after_the_requests_in_flight() {
    use std::io::Read;

    let dir = tempfile::tempdir().unwrap();
    let (_, index) = notes_index_in(dir.path());

    let (mut server, addr, mut stderr) = serve_on_any_port(dir.path(), &index, None);

    let reply = http_post(
        &addr,
        "/v1/search",
        "application/json",
        r#"{"query": "how often should keys be rotated?"}"#,
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("x-request-id"), "{reply}");
    assert!(reply.contains("90 days"), "{reply}");

    // The index is the server's while it runs: documents reach it through the server.
    let reply = http_post(
        &addr,
        "/v1/ingest",
        "application/x-ndjson",
        r#"{"id": "vault", "title": "Vault", "text": "The vault seals itself after three failed unlock attempts."}"#,
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains(r#""added":1"#), "{reply}");
    let reply = http_post(
        &addr,
        "/v1/search",
        "application/json",
        r#"{"query": "what happens after failed unlock attempts?"}"#,
    );
    assert!(reply.contains("seals itself"), "{reply}");

    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{status:?}: {rest}");
    assert!(rest.contains("shutting down"), "{rest}");
}

/// `body` POSTed to `path` on the server at `addr`, and the whole reply, head and body.
fn http_post(addr: &str, path: &str, content_type: &str, body: &str) -> String {
    use std::io::{Read, Write};

    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

/// The Python with the official MCP SDK (`pip install mcp`) that drives the MCP tests; CI sets it
/// (`.ci/run` installs the SDK into a virtual environment).
const MCP_PYTHON_VAR: &str = "FERRET_MCP_PYTHON";

/// The token the HTTP MCP server takes in the client test.
const MCP_TOKEN: &str = "mcp-test-token";

/// `ferret`'s MCP server over stdio (`ferret mcp`) and over streamable HTTP (`/mcp` of
/// `ferret serve`, behind a token), driven by the official MCP Python SDK: tools listed, a
/// search answered and its cited hit fetched, bad calls refused while the server keeps serving.

#[test]
fn mcp_tools_answer_the_official_client_over_stdio_and_http() {
    let Some(python) = std::env::var_os(MCP_PYTHON_VAR) else {
        eprintln!("skipped: set {MCP_PYTHON_VAR} to a Python with the `mcp` package to run the MCP client test");
        return;
    };
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py");
    let dir = tempfile::tempdir().unwrap();
    let (_, index) = notes_index_in(dir.path());
    // Over stdio the searcher also has a Civitai (a mock answering with the recorded LoRA), so
    // the client finds a model file too.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let civitai = runtime.block_on(civitai_with_lora());
    let config = dir.path().join("ferret.toml");
    std::fs::write(
        &config,
        format!("[hub.civitai]\nbase_url = \"{}\"\n", civitai.uri()),
    )
    .unwrap();
    let run_client = |args: &[&std::ffi::OsStr], model_file: Option<&str>| {
        let mut client_cmd = Command::new(&python);
        client_cmd
            .arg(client)
            .args(args)
            .env("FERRET_HOME", dir.path())
            .env("FERRET_MCP_TOKEN", MCP_TOKEN);
        match model_file {
            Some(file) => client_cmd.env("FERRET_MCP_MODEL_FILE", file),
            None => client_cmd.env_remove("FERRET_MCP_MODEL_FILE"),
        };
        let out = client_cmd.output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success() && said.contains("ok"), "{said}");
    };
    run_client(
        &[
            "stdio".as_ref(),
            env!("CARGO_BIN_EXE_ferret").as_ref(),
            "mcp".as_ref(),
            "--index".as_ref(),
            index.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
        ],
        Some("add-detail-xl.safetensors"),
    );

    // Behind a token, as a deployed server is: the client is refused without it.
    let (mut server, addr, _stderr) = serve_on_any_port(dir.path(), &index, Some(MCP_TOKEN));
    let url = format!("http://{addr}/mcp");
    run_client(&["http".as_ref(), url.as_ref()], None);
    server.kill().unwrap();
    server.wait().unwrap();
}

/// `ferret serve` over `index` on a port the system picks: the server, its address, and its
/// standard error after the line that names the address.
fn serve_on_any_port(
    home: &std::path::Path,
    index: &std::path::Path,
    token: Option<&str>,
) -> (
    std::process::Child,
    String,
    std::io::BufReader<std::process::ChildStderr>,
) {
    use std::io::BufRead;

    let mut command = ferret(home);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--index"])
        .arg(index)
        .stderr(std::process::Stdio::piped());
    if let Some(token) = token {
        command.env("FERRET_API_TOKEN", token);
    }
    let mut server = command.spawn().unwrap();
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (server, addr, stderr)
}

/// Threads, quotas and `fetch`'s memory belong to a principal by name: a configuration giving
/// two tokens one name is refused before the server starts.
#[test]
fn serve_refuses_two_tokens_for_one_principal() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ferret.toml");
    std::fs::write(
        &config,
        "[[server.tokens]]\nprincipal = \"alice\"\nvariable = \"ALICE_ONE\"\ngroups = [\"finance\"]\n\n\
         [[server.tokens]]\nprincipal = \"alice\"\nvariable = \"ALICE_TWO\"\ngroups = [\"legal\"]\n",
    )
    .unwrap();
    let out = ferret(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("ALICE_ONE", "one")
        .env("ALICE_TWO", "two")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("names principal `alice` twice"), "{said}");
}

/// A server that would not do what its operator thinks stops at start, saying what to change:
/// two principals with one secret, `FERRET_API_TOKEN` shadowed by configured tokens, an open
/// server on an address others reach.
#[test]
fn serve_refuses_to_start_on_a_configuration_that_misleads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ferret.toml");
    std::fs::write(
        &config,
        "[[server.tokens]]\nprincipal = \"alice\"\nvariable = \"ALICE_TOKEN\"\n\n\
         [[server.tokens]]\nprincipal = \"mallory\"\nvariable = \"MALLORY_TOKEN\"\n",
    )
    .unwrap();
    let empty = dir.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    // (case, configuration, variables, address, what standard error says)
    type Misleading<'a> = (
        &'a str,
        &'a std::path::Path,
        &'a [(&'a str, &'a str)],
        &'a str,
        &'a str,
    );
    let cases: [Misleading; 3] = [
        (
            "one secret",
            &config,
            &[("ALICE_TOKEN", "same"), ("MALLORY_TOKEN", "same")],
            "127.0.0.1:0",
            "`alice` and `mallory` are given the same token",
        ),
        (
            "shadowed",
            &config,
            &[
                ("ALICE_TOKEN", "a"),
                ("MALLORY_TOKEN", "m"),
                ("FERRET_API_TOKEN", "op"),
            ],
            "127.0.0.1:0",
            "unset FERRET_API_TOKEN",
        ),
        ("open", &empty, &[], "0.0.0.0:0", "--allow-open"),
    ];
    for (case, config, variables, addr, said) in cases {
        let mut command = ferret(dir.path());
        command
            .args(["serve", "--addr", addr, "--config"])
            .arg(config)
            .env_remove("FERRET_API_TOKEN");
        for (name, value) in variables {
            command.env(name, value);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{case}: {stderr}");
        assert!(stderr.contains(said), "{case}: {stderr}");
    }
}

#[tokio::test]
async fn find_model_reads_a_workflow_skips_held_files_and_prints_a_table_and_json() {
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/find-model/workflow-several-missing"
    );
    // Civitai's stand-in holds the case's models (the VAE, and the LoRA whose version the
    // workflow's recorded address names) and searches them as Civitai does.
    let mut catalogue = ferret_test_support::hubs::HubCatalogue::default();
    for body in ["civitai-vae.json", "civitai-lora.json"] {
        let listed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{case}/{body}")).unwrap())
                .unwrap();
        catalogue
            .civitai
            .extend(listed["items"].as_array().unwrap().iter().cloned());
    }
    let civitai = ferret_test_support::hubs::HubStandIn::new(
        ferret::jobs::find_model::ModelSource::Civitai,
        std::sync::Arc::new(catalogue),
    )
    .start()
    .await;
    let dir = tempfile::tempdir().unwrap();
    let held = dir
        .path()
        .join("models/checkpoints/dreamshaper_8.safetensors");
    std::fs::create_dir_all(held.parent().unwrap()).unwrap();
    std::fs::write(&held, b"weights").unwrap();
    let config = dir.path().join("ferret.toml");
    std::fs::write(
        &config,
        format!("[hub.civitai]\nbase_url = \"{}\"\n", civitai.uri()),
    )
    .unwrap();
    let run = |json: bool| {
        let mut cmd = ferret(dir.path());
        cmd.args(["find-model", "--hubs", "civitai", "--workflow"])
            .arg(format!("{case}/workflow.json"))
            .arg("--models-dir")
            .arg(dir.path().join("models"))
            .arg("--config")
            .arg(&config)
            .env_remove("CIVITAI_API_KEY");
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let out = run(false);
    assert_success(&out);
    let table = String::from_utf8_lossy(&out.stdout);
    let row = |file: &str| {
        table
            .lines()
            .find(|l| l.starts_with(file))
            .unwrap_or_else(|| panic!("no row for {file}:\n{table}"))
            .to_owned()
    };
    assert!(table.starts_with("FILE"), "{table}");
    assert!(
        row("dreamshaper_8.safetensors").contains("PRESENT"),
        "{table}"
    );
    let lora = row("add-detail-xl.safetensors");
    assert!(
        lora.contains("FOUND") && lora.contains("https://civitai.com/api/download/models/135867"),
        "{table}"
    );
    let vae = row("sdxl_vae_fp16.safetensors");
    assert!(
        vae.contains("FOUND") && vae.contains("sdxl_vae.safetensors"),
        "{table}"
    );
    assert!(
        row("4x_private_upscaler_v7.pth").contains("UNCERTAIN"),
        "{table}"
    );
    assert!(table.contains("belongs in models/loras"), "{table}");

    let out = run(true);
    assert_success(&out);
    let outcomes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcomes = outcomes.as_array().unwrap();
    assert_eq!(outcomes.len(), 5);
    assert!(outcomes[0]["present_at"].is_string());
    let lora = outcomes
        .iter()
        .find(|o| o["file_name"] == "add-detail-xl.safetensors")
        .unwrap();
    assert_eq!(lora["result"]["status"], "FOUND");
    assert_eq!(lora["result"]["candidates"][0]["folder"], "models/loras");
}

#[test]
fn find_model_refuses_bad_input_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("workflow.json");
    std::fs::write(&not_json, "not json {").unwrap();
    for (args, said) in [
        (vec!["find-model", "../x"], "is a path, not a file name"),
        (vec!["find-model", " "], "empty"),
        (
            vec!["find-model", "x.safetensors", "--type", "motion"],
            "not a model type",
        ),
        (vec!["find-model", "--hash", "abc"], "not a SHA-256"),
        (
            vec![
                "find-model",
                "--workflow",
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../fixtures/workflow/no-loaders/workflow.json"
                ),
            ],
            "no loader node references a model file",
        ),
        (
            vec!["find-model", "--workflow", not_json.to_str().unwrap()],
            "is not JSON",
        ),
    ] {
        let out = ferret(dir.path()).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A Civitai on a mock server, answering every model search with the recorded Detail Tweaker XL
/// LoRA.
/// A stand-in of Civitai holding the recorded LoRA, answering searches as Civitai documents
/// them (by model name).
async fn civitai_with_lora() -> wiremock::MockServer {
    let body = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/find-model/civitai-exact-only/civitai-models.json"
    ))
    .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let catalogue = ferret_test_support::hubs::HubCatalogue {
        civitai: listed["items"].as_array().unwrap().clone(),
        ..Default::default()
    };
    ferret_test_support::hubs::HubStandIn::new(
        ferret::jobs::find_model::ModelSource::Civitai,
        std::sync::Arc::new(catalogue),
    )
    .start()
    .await
}

#[tokio::test]
async fn find_model_by_hash_prints_the_file_civitai_knows_by_it_as_json() {
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/find-model/hash-lookup"
    );
    let body = std::fs::read_to_string(format!("{case}/civitai-by-hash.json")).unwrap();
    let version: serde_json::Value = serde_json::from_str(&body).unwrap();
    let hash = version["files"][0]["hashes"]["SHA256"]
        .as_str()
        .unwrap()
        .to_lowercase();
    let civitai = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path(format!(
        "/api/v1/model-versions/by-hash/{hash}"
    )))
    .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(body, "application/json"))
    .expect(1)
    .mount(&civitai)
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ferret.toml");
    std::fs::write(
        &config,
        format!("[hub.civitai]\nbase_url = \"{}\"\n", civitai.uri()),
    )
    .unwrap();
    let out = ferret(dir.path())
        .args([
            "find-model",
            "--hubs",
            "civitai",
            "--type",
            "checkpoint",
            "--json",
            "--hash",
        ])
        .arg(&hash)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_success(&out);
    let outcomes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &outcomes[0]["result"];
    assert_eq!(result["status"], "FOUND", "{outcomes:#}");
    let best = &result["candidates"][0];
    assert_eq!(
        best["file_name"],
        "juggernautXL_v9Rdphoto2Lightning.safetensors"
    );
    assert_eq!(best["confidence"], 100);
    assert_eq!(best["sha256"], hash.as_str());
    assert_eq!(best["folder"], "models/checkpoints");
}

#[test]
fn one_file_is_recorded_in_the_registry_and_an_unchanged_one_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Prompt_Engineering.md");
    std::fs::write(
        &file,
        "# Prompt engineering\n\nA prompt states the task, the format and worked examples.\n",
    )
    .unwrap();
    let index = dir.path().join("index");
    let ingest = |extra: &[&str]| {
        let out = ferret(dir.path())
            .arg("ingest")
            .arg(&file)
            .arg("--index")
            .arg(&index)
            .args(["--embedder", "none"])
            .args(extra)
            .output()
            .unwrap();
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let registry = index.join("knowledge_db.json");

    let first = ingest(&["--keywords", "prompts, few-shot"]);
    assert!(
        first.starts_with("added Prompt_Engineering.md: 1 chunk in"),
        "{first}"
    );
    assert!(first.contains("title: Prompt engineering"), "{first}");
    assert!(
        first.contains("summary: A prompt states the task, the format and worked examples."),
        "{first}"
    );
    assert!(first.contains("keywords: prompts, few-shot"), "{first}");
    assert!(first.contains("registry: recorded in"), "{first}");
    let entries: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&registry).unwrap()).unwrap();
    assert_eq!(entries["entries"][0]["name"], "Prompt_Engineering.md");
    assert_eq!(entries["entries"][0]["keywords"][1], "few-shot");

    let written = std::fs::read(&registry).unwrap();
    let again = ingest(&["--keywords", "prompts, few-shot"]);
    assert!(
        again.starts_with("unchanged Prompt_Engineering.md"),
        "{again}"
    );
    assert!(again.contains("nothing written"), "{again}");
    assert_eq!(std::fs::read(&registry).unwrap(), written);

    // A folder holds many documents: describing it as one is refused.
    let out = ferret(dir.path())
        .arg("ingest")
        .arg(dir.path())
        .args(["--index"])
        .arg(&index)
        .args(["--summary", "everything"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds many documents"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn ingest_takes_a_web_page_as_markdown_only_from_an_allowed_private_address() {
    let site = wiremock::MockServer::start().await;
    let page = "<html><head><title>Key rotation</title><script>track()</script></head><body>\
        <nav>Home | Blog</nav><main><h1>Key rotation</h1>\
        <p>Rotate the signing keys every 45 days from the vault console.</p></main></body></html>";
    wiremock::Mock::given(wiremock::matchers::path("/runbook"))
        .respond_with(
            wiremock::ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"),
        )
        .mount(&site)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    let fetched = dir.path().join("fetched");
    let url = format!("{}/runbook", site.uri());
    let ingest = |config: &std::path::Path| {
        ferret(dir.path())
            .arg("ingest")
            .arg(&url)
            .arg("--index")
            .arg(&index)
            .arg("--fetched-dir")
            .arg(&fetched)
            .arg("--embedder")
            .arg("none")
            .arg("--config")
            .arg(config)
            .output()
            .unwrap()
    };
    // The mock server is on loopback: refused by default, before any request reaches it.
    let config = dir.path().join("ferret.toml");
    std::fs::write(&config, "").unwrap();
    let out = ingest(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
    assert!(site.received_requests().await.unwrap().is_empty());

    std::fs::write(
        &config,
        "[fetch]\nallow = [\"127.0.0.1\"]\nrobots = \"ignore\"\n",
    )
    .unwrap();
    let out = ingest(&config);
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("from {url}")), "{said}");
    let registry = std::fs::read_to_string(index.join("knowledge_db.json")).unwrap();
    assert!(
        registry.contains(&format!("\"url\": \"{url}\"")),
        "{registry}"
    );
    let kept: Vec<_> = std::fs::read_dir(&fetched).unwrap().collect();
    assert_eq!(kept.len(), 1);
    let markdown = std::fs::read_to_string(kept[0].as_ref().unwrap().path()).unwrap();
    assert!(
        markdown.contains("# Key rotation")
            && !markdown.contains("track()")
            && !markdown.contains("Home | Blog"),
        "{markdown}"
    );

    let out = ferret(dir.path())
        .args([
            "search",
            "how often are the signing keys rotated?",
            "--index",
        ])
        .arg(&index)
        .output()
        .unwrap();
    assert_success(&out);
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("45 days"), "{answer}");
    // The source cited is the page's address, not the file it was kept in.
    assert!(answer.contains(&url), "{answer}");
}

#[test]
fn research_prints_the_classification_and_the_note_and_replays_the_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    let notes = dir.path().join("Key_Rotation_Runbook.md");
    std::fs::write(
        &notes,
        "# Key rotation\n\nRotate the signing keys every 45 days from the vault console.\n",
    )
    .unwrap();
    let out = ferret(dir.path())
        .arg("ingest")
        .arg(&notes)
        .arg("--index")
        .arg(&index)
        .args(["--embedder", "none"])
        .output()
        .unwrap();
    assert_success(&out);
    let syllabus = dir.path().join("syllabus.md");
    std::fs::write(
        &syllabus,
        "# Operations Course\n\n## Module 1: Key rotation\n\nHow often signing keys are rotated; \
         read Key_Rotation_Runbook.md first. See https://example.org/rotation for the history.\n\n\
         ## References\n\n- Key_Rotation_Runbook.md: the team's runbook.\n- [Spec](https://example.org/spec.pdf)\n",
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let out = ferret(dir.path())
        .arg("research")
        .arg(&syllabus)
        .arg("--index")
        .arg(&index)
        .arg("--runs-dir")
        .arg(&runs)
        .output()
        .unwrap();
    assert_success(&out);
    let note = String::from_utf8_lossy(&out.stdout).into_owned();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("3 references: 1 known, 1 ephemeral, 1 not text"),
        "{said}"
    );
    assert!(
        said.contains("WebSearch: skipped: no web backend is configured"),
        "{said}"
    );
    assert!(
        note.starts_with("# Research note: Operations Course\n"),
        "{note}"
    );
    assert!(
        note.contains("## Key rotation") && note.contains("45 days"),
        "{note}"
    );
    assert!(note.contains("## References"), "{note}");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        said.contains(&format!("run saved in {}", run.display())),
        "{said}"
    );

    let replay = ferret(dir.path())
        .arg("research")
        .arg("--replay")
        .arg(&run)
        .output()
        .unwrap();
    assert_success(&replay);
    assert_eq!(String::from_utf8_lossy(&replay.stdout), note);

    // Without a knowledge base there is nowhere to add the references.
    let nowhere = ferret(dir.path())
        .arg("research")
        .arg(&syllabus)
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&nowhere.stderr).contains("research needs a knowledge base"),
        "{}",
        String::from_utf8_lossy(&nowhere.stderr)
    );
}

/// Against the live server `.ci/llama-server` starts (llama-cpp-python with SmolLM2, named by
/// `FERRET_LLM_BASE_URL` and `FERRET_LLM_MODEL`): a search whose stages ask the model, in the
/// dialect llama.cpp-based servers take, gets its calls answered, and some pass the stages'
/// checks (with SmolLM2 at temperature 0, rewrite and grading do).
#[test]
fn a_search_through_a_live_openai_compatible_server_gets_its_stage_calls_answered() {
    if std::env::var("FERRET_LLM_BASE_URL").is_err() || std::env::var("FERRET_LLM_MODEL").is_err() {
        eprintln!(
            "skipped: FERRET_LLM_BASE_URL and FERRET_LLM_MODEL are not set (see .ci/llama-server)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let notes = notes_in(dir.path());
    let index = dir.path().join("index");
    let out = ferret(dir.path())
        .arg("ingest")
        .arg(&notes)
        .arg("--index")
        .arg(&index)
        .args(["--embedder", "none"])
        .output()
        .unwrap();
    assert_success(&out);
    let out = ferret(dir.path())
        .args([
            "search",
            "how often should keys be rotated?",
            "--llm",
            "openai",
            "--llm-format",
            "json-object-schema",
            "--llm-timeout",
            "120",
            "--json",
            "--index",
        ])
        .arg(&index)
        .output()
        .unwrap();
    assert_success(&out);
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls: Vec<&serde_json::Value> = response["trace"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["stage"] == "llm_call")
        .collect();
    assert!(!calls.is_empty(), "{response}");
    for call in &calls {
        let error = call["outcome"]["error"].as_str().unwrap_or_default();
        assert!(
            !error.contains("answered HTTP") && !error.contains("cannot connect"),
            "the server refused a call: {call}"
        );
    }
    let accepted: Vec<&&serde_json::Value> = calls
        .iter()
        .filter(|call| call["outcome"]["kind"] != "failed")
        .collect();
    assert!(
        !accepted.is_empty(),
        "no stage call was accepted: {calls:?}"
    );
    for call in accepted {
        assert_eq!(call["response_format"], "json_object_schema", "{call}");
    }
}

/// One process at a time opens an index: while `ferret serve` holds one, an ingest into it is
/// refused, naming the directory and the server's process, and leaves the index as it was.
#[test]
fn a_second_process_is_refused_an_index_another_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (notes, index) = notes_index_in(dir.path());
    let (mut server, _addr, _stderr) = serve_on_any_port(dir.path(), &index, None);
    let out = ferret(dir.path())
        .arg("ingest")
        .arg(&notes)
        .arg("--index")
        .arg(&index)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&index.display().to_string())
            && stderr.contains(&format!(
                "open in another process (process {})",
                server.id()
            )),
        "{stderr}"
    );
    // Killed, the server left the lock behind with its process: the index opens again.
    let out = ferret(dir.path())
        .args(["search", "rotate keys", "--index"])
        .arg(&index)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Key rotation"));
}

/// The built-in corpus is opened when a server starts: a second server on it is refused at
/// start, naming the process that holds it, rather than answering every search with a failure.
#[test]
fn a_second_server_on_the_built_in_corpus_is_refused_at_start() {
    use std::io::BufRead;

    let dir = tempfile::tempdir().unwrap();
    let serve = || {
        let mut command = ferret(dir.path());
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("FERRET_API_TOKEN")
            .stderr(std::process::Stdio::piped());
        command
    };
    let mut first = serve().spawn().unwrap();
    let mut stderr = std::io::BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("serving on"), "{line}");
    let out = serve().output().unwrap();
    first.kill().unwrap();
    first.wait().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!("open in another process (process {})", first.id())),
        "{said}"
    );
}

/// An ingest killed with SIGKILL at any point keeps every document it had reported written: the
/// index opens, holds them and finds them, and a re-run completes it with no duplicate. Twenty
/// runs, killed at moments spread over an ingest that seals segments as it goes.
#[test]
fn an_ingest_killed_at_any_point_keeps_what_it_reported_and_a_rerun_completes_it() {
    use std::io::BufRead;

    const DOCUMENTS: usize = 3_000;
    const RUNS: u64 = 20;
    let dir = tempfile::tempdir().unwrap();
    let corpus = marker_corpus(dir.path(), DOCUMENTS, "");
    let ingest = |index: &std::path::Path| {
        let mut command = ferret(dir.path());
        command
            .arg("ingest")
            .arg(&corpus)
            .arg("--index")
            .arg(index)
            .args(["--embedder", "none"])
            // Small segments, so kills land in seals and merges too.
            .args(["--seal-segment-at", "32"]);
        command
    };
    // How long a whole ingest takes here, to spread the kills over it: the second of two, as
    // the first also warms the caches.
    let mut whole = std::time::Duration::ZERO;
    for name in ["warm", "whole"] {
        let started = std::time::Instant::now();
        assert_success(&ingest(&dir.path().join(name)).output().unwrap());
        whole = started.elapsed();
    }
    let segments = ferret::index::LocalIndex::open(dir.path().join("whole"))
        .unwrap()
        .segment_count();
    assert!(segments > 2, "the ingest sealed segments: {segments}");

    let mut outcomes = Vec::new();
    for run in 0..RUNS {
        let index = dir.path().join(format!("killed-{run}"));
        let mut child = ingest(&index)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reported counts are read as they come, on a thread, until the pipe closes.
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let reader = std::thread::spawn(move || {
            stderr
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| {
                    line.strip_suffix(" documents written")?
                        .split('/')
                        .next()?
                        .parse::<usize>()
                        .ok()
                })
                .max()
                .unwrap_or(0)
        });
        std::thread::sleep(whole.mul_f64((run as f64 + 0.5) / RUNS as f64));
        child.kill().unwrap();
        child.wait().unwrap();
        let reported = reader.join().unwrap();
        // Killed during a seal: the next open repairs what it left.
        let in_seal = index.join("ferret-sealing").exists();

        let opened = ferret::index::LocalIndex::open(&index);
        let Ok(opened) = opened else {
            // Killed before the index existed: nothing was reported, and a re-run starts it.
            assert!(
                reported == 0 && matches!(opened, Err(ferret::index::IndexError::Missing { .. })),
                "run {run}: {opened:?}"
            );
            outcomes.push((run, reported, 0, in_seal));
            assert_success(&ingest(&index).output().unwrap());
            continue;
        };
        let kept = opened.len();
        assert!(
            kept >= reported,
            "run {run}: {reported} reported, {kept} kept"
        );
        // Reported documents are there and searchable (the last reported one by its marker).
        if reported > 0 {
            let last = reported - 1;
            assert_eq!(
                found_by_marker(&opened, last),
                Some(format!("d{last}")),
                "run {run}"
            );
            for id in [0, last / 2, last] {
                assert!(
                    opened
                        .document(&format!("d{id}"), None, "local")
                        .unwrap()
                        .is_some(),
                    "run {run}: d{id} of the {reported} reported is missing"
                );
            }
        }
        drop(opened);
        let out = ingest(&index).output().unwrap();
        assert_success(&out);
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(
            summary.contains(&format!("{DOCUMENTS} documents in")),
            "run {run}: {summary}"
        );
        assert!(
            summary.contains(&format!("{kept} unchanged")),
            "run {run}: the re-run skips the {kept} kept: {summary}"
        );
        outcomes.push((run, reported, kept, in_seal));
    }
    eprintln!("ingest kill runs (run, reported written, kept, killed in a seal): {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter(|(_, reported, _, _)| *reported > 0)
            .count()
            >= RUNS as usize / 2,
        "most kills land after a commit: {outcomes:?}"
    );
}

/// The id of the first hit a BM25 search of `index` for record `i`'s marker finds.
fn found_by_marker(index: &ferret::index::LocalIndex, i: usize) -> Option<String> {
    let request = ferret::backends::SearchRequest {
        query: format!("m{i}x"),
        limit: 3,
        filters: ferret::Filters::default(),
        options: Default::default(),
        text_for: None,
    };
    index
        .search_blocking(
            &request,
            ferret::jobs::search::RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap()
        .into_iter()
        .next()
        .map(|hit| hit.id.0)
}

/// `corpus.jsonl` under `dir`: `documents` records, record `i` findable by its marker `m{i}x`;
/// `version` changes every text, so ingesting another version updates them all.
fn marker_corpus(dir: &std::path::Path, documents: usize, version: &str) -> std::path::PathBuf {
    let corpus = dir.join(format!("corpus{version}.jsonl"));
    let lines: Vec<String> = (0..documents)
        .map(|i| {
            format!(
                r#"{{"id":"d{i}","title":"Record {i}","text":"Record {i} {version} mentions the marker m{i}x and a few words of filler about rivers, bridges and towns."}}"#
            )
        })
        .collect();
    std::fs::write(&corpus, lines.join("\n")).unwrap();
    corpus
}

/// `ferret index compact` killed with SIGKILL at any point leaves an index that opens with
/// every document, the old one or the new; a compaction then completes.
#[test]
fn a_compaction_killed_at_any_point_leaves_the_old_index_or_the_new() {
    const DOCUMENTS: usize = 2_000;
    const RUNS: u32 = 20;
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    for version in ["", "v2", "v3", "v4", "v5", "v6"] {
        let corpus = marker_corpus(dir.path(), DOCUMENTS, version);
        assert_success(
            &ferret(dir.path())
                .arg("ingest")
                .arg(&corpus)
                .arg("--index")
                .arg(&index)
                .args(["--embedder", "none", "--compact-wal-over", "0"])
                .output()
                .unwrap(),
        );
    }
    let compact = |index: &std::path::Path| {
        let mut command = ferret(dir.path());
        command.args(["index", "compact", "--index"]).arg(index);
        command
    };
    // An ingest compacts by itself once the log's history passes its threshold, and not again
    // right after: the compacted log holds one copy.
    let auto = dir.path().join("auto");
    copy_dir(&index, &auto);
    let history = ferret::index::LocalIndex::log_history_bytes(&auto);
    assert!(history > 1_048_576, "{history} bytes of history");
    for (run, compacts) in [(0, true), (1, false)] {
        let out = ferret(dir.path())
            .arg("ingest")
            .arg(dir.path().join("corpusv6.jsonl"))
            .arg("--index")
            .arg(&auto)
            .args(["--embedder", "none", "--compact-wal-over", "1"])
            .output()
            .unwrap();
        assert_success(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.contains("compacted the index"),
            compacts,
            "run {run}: {stderr}"
        );
    }
    assert!(ferret::index::LocalIndex::log_history_bytes(&auto) < history);
    let copy = |run: u32| {
        let target = dir.path().join(format!("copy-{run}"));
        copy_dir(&index, &target);
        target
    };
    let started = std::time::Instant::now();
    let out = compact(&copy(RUNS)).output().unwrap();
    assert_success(&out);
    let whole = started.elapsed();

    for run in 0..RUNS {
        let target = copy(run);
        let mut child = compact(&target)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(whole.mul_f64((f64::from(run) + 0.5) / f64::from(RUNS)));
        child.kill().unwrap();
        child.wait().unwrap();
        let opened = ferret::index::LocalIndex::open(&target)
            .unwrap_or_else(|e| panic!("run {run}: the killed compaction left no index: {e}"));
        assert_eq!(opened.len(), DOCUMENTS, "run {run}");
        assert_eq!(
            found_by_marker(&opened, 1234),
            Some("d1234".to_owned()),
            "run {run}"
        );
        drop(opened);
        assert_success(&compact(&target).output().unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_outlives_the_process_and_the_same_error_from_another_machine_calls_no_provider() {
    let instance = searxng_instance().await;
    let dir = tempfile::tempdir().unwrap();
    let ask = |question: &str, extra: &[&str]| {
        let mut args = vec![
            "search", question, "--web", "searxng", "--thread", "agent-1",
        ];
        args.extend_from_slice(extra);
        let out = ferret(dir.path())
            .args(&args)
            .env("SEARXNG_URL", instance.uri())
            .output()
            .unwrap();
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let requests = || async { instance.received_requests().await.unwrap_or_default().len() };
    let here = "java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer\n\tat com.acme.App.main(/home/ann/app/App.java:10)\nHow do I fix it on Java 17?";
    let first = ask(here, &[]);
    assert!(!first.contains("asked before"), "{first}");
    let searched = requests().await;
    assert!(searched > 0);
    assert!(
        dir.path().join("threads").join("agent-1.json").is_file(),
        "the thread is kept under Ferret's home"
    );

    // Another process, another machine's paths, other words: the thread answers.
    let there = "Exception in thread \"main\" java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer\n\tat org.shop.Main.run(C:\\build\\Main.java:42)\nWhat should I change?";
    let again = ask(there, &[]);
    assert!(again.contains("asked before in this thread"), "{again}");
    assert_eq!(requests().await, searched, "a repeat calls no provider");

    // Asked to search again, it does.
    let fresh = ask(there, &["--search-again"]);
    assert!(!fresh.contains("asked before"), "{fresh}");
    assert!(
        requests().await > searched,
        "--search-again calls the providers"
    );

    // A thread file that is not turns starts the thread again, with a warning, not a failure.
    std::fs::write(dir.path().join("threads").join("agent-1.json"), "not json").unwrap();
    let restarted = ask(here, &[]);
    assert!(!restarted.contains("asked before"), "{restarted}");
}
