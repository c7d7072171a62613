//! Multi-hop search over a scripted encyclopedia: the heuristic hop to the name the first page
//! gives, which of the results are shown, the model's hop, and a model whose hop repeats a
//! search (the heuristic hops instead).

use std::sync::Arc;

use ferret_agent::{Agent, AgentConfig, StageConfig, Stages, Strategy};
use ferret_core::{
    BackendCapabilities, Hit, Implementation, Query, Response, StopReason, TraceStep,
};
use ferret_exec::Executor;
use ferret_llm::{Exchange, ScriptedModel, StageModel, StageModelConfig};
use ferret_query_intel::{BridgeFinder, LlmHopFinder};
use ferret_test_support::{Matching, ScriptedBackend};

const QUESTION: &str =
    "In what year was the university where Sergei Tokarev was a professor founded?";

/// Pages that share at least two words of four letters or more with the query, most shared first.
fn encyclopedia_of(pages: Vec<Hit>) -> Arc<ScriptedBackend> {
    let backend = ScriptedBackend::new("encyclopedia", pages)
        .matching(Matching::SharedWords {
            min_shared: 2,
            min_letters: 4,
        })
        .capabilities(BackendCapabilities::default());
    Arc::new(backend)
}

fn encyclopedia() -> Arc<ScriptedBackend> {
    encyclopedia_with(Vec::new())
}

fn encyclopedia_with(more: Vec<Hit>) -> Arc<ScriptedBackend> {
    let mut pages = vec![
        Hit::new(
            "tokarev",
            "Sergei Tokarev",
            "Sergei Tokarev was an ethnographer and a professor at Moscow State University.",
            1.0,
            "encyclopedia",
        ),
        Hit::new(
            "msu",
            "Moscow State University",
            "Moscow State University opened in 1755.",
            1.0,
            "encyclopedia",
        ),
        Hit::new(
            "pistol",
            "Tokarev pistol",
            "The Tokarev pistol was designed in Tula.",
            1.0,
            "encyclopedia",
        ),
    ];
    pages.extend(more);
    encyclopedia_of(pages)
}

fn run_with(stages: Stages, backend: Arc<ScriptedBackend>) -> Response {
    run_limited(stages, backend, Query::new(QUESTION).unwrap().limit)
}

fn run_limited(stages: Stages, backend: Arc<ScriptedBackend>, limit: usize) -> Response {
    let executor = Executor::builder().backend(backend).build().unwrap();
    let agent = Agent::new(
        stages,
        executor,
        AgentConfig {
            strategy: Strategy::Auto,
            ..AgentConfig::default()
        },
    )
    .unwrap();
    let query = Query::new(QUESTION).unwrap().with_limit(limit).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(agent.run(&query, None))
        .unwrap()
}

fn heuristic_stages() -> Stages {
    Stages::heuristic(StageConfig::default())
}

fn with_hop_model(replies: &[&str]) -> Stages {
    let exchanges = replies
        .iter()
        .map(|r| Exchange {
            expect_contains: None,
            reply: (*r).to_owned(),
        })
        .collect();
    hop_model(exchanges)
}

fn hop_model(exchanges: Vec<Exchange>) -> Stages {
    let model = StageModel::new(
        Arc::new(ScriptedModel::new("scripted", exchanges)),
        StageModelConfig::default(),
    );
    Stages {
        hop_finder: Arc::new(LlmHopFinder::new(model, BridgeFinder::default())),
        ..heuristic_stages()
    }
}

/// (queries, reason, implementation) of each hop.
fn hops(response: &Response) -> Vec<(Vec<String>, String, Implementation)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|step| match step {
            TraceStep::Queries {
                queries,
                reason,
                implementation,
                ..
            } if reason.starts_with("hop") => {
                Some((queries.clone(), reason.clone(), implementation.clone()))
            }
            _ => None,
        })
        .collect()
}

fn hit_ids(response: &Response) -> Vec<&str> {
    response.hits.iter().map(|h| h.id.0.as_str()).collect()
}

#[test]
fn without_a_model_the_search_hops_to_the_name_the_first_page_gives() {
    let backend = encyclopedia();
    let response = run_with(heuristic_stages(), backend.clone());

    let hops = hops(&response);
    assert_eq!(hops.len(), 1, "{hops:?}");
    assert_eq!(hops[0].0, ["Moscow State University"]);
    assert_eq!(hops[0].1, "hop (bridge): Moscow State University");
    assert_eq!(
        &hit_ids(&response)[..2],
        ["tokarev", "msu"],
        "both pages of the chain lead"
    );
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_eq!(backend.queries().len(), 2, "one search, one hop");
}

#[test]
fn the_hops_other_results_do_not_push_out_what_the_question_found() {
    let page = |id: &str, title: &str, text: &str| Hit::new(id, title, text, 1.0, "encyclopedia");
    let backend = encyclopedia_with(vec![
        // The question's second result: it shares one word with the question besides stop
        // words, too few to be graded relevant, but the search ranked it second.
        page(
            "film",
            "Tokarev (film)",
            "Where Tokarev went, and what he saw.",
        ),
        // The hop finds these after its page: they hold the hop's words and nothing asked.
        page(
            "ohio",
            "Ohio State University",
            "Ohio State University opened in Columbus.",
        ),
        page(
            "kent",
            "Kent State University",
            "Kent State University opened in Kent.",
        ),
    ]);
    let response = run_limited(heuristic_stages(), backend, 3);

    assert_eq!(hops(&response)[0].0, ["Moscow State University"]);
    assert_eq!(
        hit_ids(&response),
        ["tokarev", "msu", "film"],
        "the relevant first, then the question's own result"
    );
}

#[test]
fn a_model_names_the_next_query_and_says_when_the_chain_is_done() {
    let backend = encyclopedia();
    // The model chooses among the names the rules found: the first prompt lists the bridge.
    let stages = hop_model(vec![
        Exchange {
            expect_contains: Some("Names the sources lead to, best first:\n- Moscow State University".into()),
            reply: r#"{"reasoning": "Tokarev taught at Moscow State University.", "done": false, "query": "Moscow State University founding year"}"#.into(),
        },
        Exchange { expect_contains: None, reply: r#"{"reasoning": "The sources answer it.", "done": true, "query": ""}"#.into() },
    ]);
    let response = run_with(stages, backend.clone());

    let hops = hops(&response);
    assert_eq!(hops.len(), 1, "{hops:?}");
    assert_eq!(hops[0].0, ["Moscow State University founding year"]);
    assert_eq!(
        hops[0].1, "hop (bridge): Moscow State University",
        "the hop is about the name the query holds"
    );
    assert!(
        matches!(hops[0].2, Implementation::Llm { .. }),
        "{:?}",
        hops[0].2
    );
    assert!(
        hit_ids(&response).contains(&"msu"),
        "{:?}",
        hit_ids(&response)
    );
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_eq!(response.usage.llm_calls, 2, "one hop, one done");
}

#[test]
fn a_model_hop_that_repeats_a_search_is_refused_and_the_heuristic_hops() {
    // The first search is the question as asked.
    let repeat =
        format!(r#"{{"reasoning": "Search it again.", "done": false, "query": "{QUESTION}"}}"#);
    let backend = encyclopedia();
    // The scripted model then fails (its script is used up): the heuristic stops the chain too.
    let response = run_with(with_hop_model(&[&repeat]), backend.clone());

    let hops = hops(&response);
    assert_eq!(hops.len(), 1, "{hops:?}");
    assert_eq!(hops[0].0, ["Moscow State University"]);
    match &hops[0].2 {
        Implementation::Heuristic { why } => assert!(why.contains("searched already"), "{why}"),
        other => panic!("the heuristic should have hopped: {other:?}"),
    }
    let queries = backend.queries();
    assert_eq!(
        queries.len(),
        2,
        "the repeat is never searched: {queries:?}"
    );
}
