//! The coding-agent scenario end to end: a Spring Boot 1.x / CGLIB / JDK 17 error with its
//! project context, over Tavily and Brave answering from `fixtures/scenario/spring-cglib-jdk17`
//! on a local mock server. The question is decomposed, no query goes to a provider twice, the
//! answer names the cause with citations, the actions hold the version change and the build
//! command, and the same error asked again in the session calls no provider.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use ferret::backends::{ApiKey, BraveBackend, BraveConfig, TavilyBackend, TavilyConfig};
use ferret::jobs::search::TraceStep;
use ferret::jobs::session::RepeatMatch;
use ferret::{Ferret, Query};
use ferret_test_support::web::{WebProvider, WebStandIn};

fn spring_scenario() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenario/spring-cglib-jdk17")
}

fn scenario(file: &str) -> String {
    std::fs::read_to_string(spring_scenario().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[tokio::test]
async fn the_spring_cglib_error_is_diagnosed_with_actions_and_not_searched_twice() {
    let (ferret, tavily_server, brave_server) = over_dir(&spring_scenario()).await;
    let context = BTreeMap::from([
        ("java_version".to_owned(), "17".to_owned()),
        ("spring_boot_version".to_owned(), "1.1.9".to_owned()),
    ]);
    let query = Query::new(scenario("question.txt"))
        .unwrap()
        .with_context(context)
        .unwrap();
    let session = ferret.session("migration-agent");
    let response = session.search(query.clone()).await.unwrap();

    let queries: Vec<&Vec<String>> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::Queries { queries, .. } => Some(queries),
            _ => None,
        })
        .collect();
    let first = queries.first().expect("the first search's queries");
    let hypothesis = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Queries { reason, .. } => reason.split_once("root cause: ").map(|(_, h)| h),
        _ => None,
    });
    let hypothesis = hypothesis.expect("the decomposer's root-cause hypothesis is traced");
    assert!(
        hypothesis.contains("NoClassDefFoundError") && hypothesis.contains("JDK 17"),
        "{hypothesis}"
    );
    let distinct: HashSet<&String> = first.iter().collect();
    assert!(
        (3..=4).contains(&distinct.len()),
        "the error as asked and 2-3 sub-queries: {first:#?}"
    );

    let (to_tavily, to_brave) = (tavily_server.queries().await, brave_server.queries().await);
    for (provider, queries) in [("tavily", &to_tavily), ("brave", &to_brave)] {
        let unique: HashSet<&String> = queries.iter().collect();
        assert_eq!(
            unique.len(),
            queries.len(),
            "{provider} got a query twice: {queries:#?}"
        );
        assert!(
            queries
                .iter()
                .all(|q| q.chars().count() <= 100 && !q.contains("\tat ")),
            "web queries are short and free of stack frames: {queries:#?}"
        );
    }

    let answer = response.answer.clone().unwrap_or_else(|| {
        panic!(
            "no answer: {:?}\n{}",
            response.message,
            serde_json::to_string_pretty(&response.trace).unwrap_or_default()
        )
    });
    assert!(
        answer.to_lowercase().contains("cglib"),
        "the cause is named: {answer}"
    );
    assert!(!response.citations.is_empty() && answer.contains("[1]"));
    assert!(
        answer.starts_with("## Root Cause\n") && answer.contains("\n## Sources\n- [1] "),
        "an error's answer in sections: {answer}"
    );
    let actions = response.actions.clone().expect("actions");
    assert!(
        actions
            .version_changes
            .iter()
            .any(|v| v.component == "Spring Boot" && v.version.starts_with("2.7")),
        "{actions:#?}"
    );
    assert!(
        actions
            .commands
            .iter()
            .any(|c| c.command == "mvn clean install -U"),
        "{actions:#?}"
    );
    let hit_ids: HashSet<&str> = response.hits.iter().map(|h| h.id.0.as_str()).collect();
    assert!(
        actions
            .version_changes
            .iter()
            .map(|v| &v.source)
            .chain(actions.commands.iter().map(|c| &c.source))
            .all(|source| hit_ids.contains(source.0.as_str())),
        "every action's source is a hit of the response"
    );
    assert!(
        response.usage.paid.contains_key("tavily") && response.usage.paid.contains_key("brave")
    );

    let calls = (to_tavily.len(), to_brave.len());
    let again = session.search(query).await.unwrap();
    assert_eq!(
        (
            tavily_server.queries().await.len(),
            brave_server.queries().await.len()
        ),
        calls,
        "the same error again calls no provider"
    );
    assert_eq!(
        again.repeat_of.map(|r| r.matched_by),
        Some(RepeatMatch::Text)
    );

    // What the note reports.
    eprintln!("root cause: {hypothesis}\nqueries: {first:#?}");
    eprintln!("tavily got: {to_tavily:#?}\nbrave got: {to_brave:#?}");
    eprintln!(
        "calls: {}, cache hits: {}, paid: {:?}",
        response.usage.backend_calls, response.usage.cache_hits, response.usage.paid
    );
    eprintln!("answer: {answer}\nactions: {actions:#?}");
}

/// Ferret over Tavily and Brave stand-ins answering with one scenario of the coding agent's
/// evaluation set.
async fn over_scenario(name: &str) -> (Ferret, WebStandIn, WebStandIn) {
    over_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/coding-agent-eval")
            .join(name),
    )
    .await
}

/// Ferret over Tavily and Brave stand-ins answering with the `tavily.json` and `brave.json` of
/// `dir`.
async fn over_dir(dir: &Path) -> (Ferret, WebStandIn, WebStandIn) {
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let tavily_server = WebStandIn::start(WebProvider::Tavily, read("tavily.json")).await;
    let brave_server = WebStandIn::start(WebProvider::Brave, read("brave.json")).await;
    let mut tavily = TavilyConfig::with_key(ApiKey::new("tvly-test", "TAVILY_API_KEY"));
    tavily.base_url = tavily_server.uri();
    let mut brave = BraveConfig::with_key(ApiKey::new("brave-test", "BRAVE_API_KEY"));
    brave.base_url = brave_server.uri();
    let ferret = Ferret::builder()
        .backend(Arc::new(TavilyBackend::new(tavily).unwrap()))
        .backend(Arc::new(BraveBackend::new(brave).unwrap()))
        .build()
        .unwrap();
    (ferret, tavily_server, brave_server)
}

const SOFT_UNICODE: &str = "ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/home/ann/venv/lib/python3.11/site-packages/markupsafe/__init__.py)";

#[tokio::test]
async fn a_whole_log_a_contradicting_context_and_an_unreadable_error_are_each_answered() {
    let (ferret, tavily, brave) = over_scenario("python-markupsafe-soft-unicode").await;

    // A whole log of 20,000 characters: the failure and the question are kept and answered.
    let log = format!(
        "{}Traceback (most recent call last):\n  File \"/srv/app.py\", line 1, in <module>\n    from flask import Flask\n{SOFT_UNICODE}\n{}How do I fix this?",
        "INFO 2024-05-01T10:00:00Z gunicorn worker 17 booting\n".repeat(360),
        "DEBUG health check ok\n".repeat(120),
    );
    assert!(log.chars().count() > 20_000);
    let response = ferret.search(Query::from_log(log).unwrap()).await.unwrap();
    let answer = response.answer.expect("the log's error is answered");
    assert!(answer.starts_with("## Root Cause\n"), "{answer}");
    assert!(answer.contains("soft_unicode"), "{answer}");
    let actions = response.actions.expect("actions");
    assert!(
        actions
            .commands
            .iter()
            .any(|c| c.command == "pip install markupsafe==2.0.1"),
        "{actions:#?}"
    );
    assert!(
        actions.commands.iter().all(|c| !c.command.contains("curl")),
        "no command from the page that speaks to the agent: {actions:#?}"
    );

    // The asker's context says Python 3.8 while the traceback's paths say 3.11: both are read,
    // and the web query still names the error's own symbol and package.
    let context = BTreeMap::from([("python".to_owned(), "3.8".to_owned())]);
    let query = Query::new(format!("{SOFT_UNICODE}\nHow do I fix it?"))
        .unwrap()
        .with_context(context)
        .unwrap();
    let response = ferret.search(query).await.unwrap();
    assert!(response.answer.is_some(), "{:?}", response.message);
    let sent = tavily.queries().await;
    assert!(
        sent.iter().any(|q| q.contains("soft_unicode")
            && q.contains("markupsafe")
            && q.contains("Python 3.8")),
        "{sent:#?}"
    );

    // A question with no error line in it has no signature: a thread still knows it again by
    // its words, and a reworded one searches again.
    let session = ferret.session("no-signature");
    let vague = Query::new("my Flask templates stopped rendering after a rebuild").unwrap();
    session.search(vague.clone()).await.unwrap();
    let calls = tavily.queries().await.len() + brave.queries().await.len();
    let again = session.search(vague).await.unwrap();
    assert_eq!(
        again.repeat_of.map(|r| r.matched_by),
        Some(RepeatMatch::Text)
    );
    assert_eq!(
        tavily.queries().await.len() + brave.queries().await.len(),
        calls
    );
    let reworded = session
        .search(Query::new("why do Jinja templates fail to load in Flask").unwrap())
        .await
        .unwrap();
    assert!(reworded.repeat_of.is_none());
    assert!(tavily.queries().await.len() + brave.queries().await.len() > calls);
}
