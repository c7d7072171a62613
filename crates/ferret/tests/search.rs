//! The whole pipeline through the facade: default corpus, partial failures, long questions, the
//! refine loop, streaming, and refused input.

use std::sync::Arc;
use std::time::Duration;

use ferret::backends::BackendError;
use ferret::jobs::search::{ResponseType, TraceStep};
use ferret::{Budget, Event, Ferret, FerretError, Hit, Query, StopReason};
use ferret_test_support::{Matching, ScriptedBackend};
use futures::StreamExt;

mod common;
use common::{assert_citations_resolve, use_temporary_ferret_home};

#[tokio::test]
async fn the_default_corpus_answers_with_citations_offline() {
    use_temporary_ferret_home();
    let ferret = Ferret::builder().default_corpus().build().unwrap();
    assert!(
        !ferret::index::default_index_dir().exists(),
        "building indexes nothing: the first search does, off the async threads"
    );
    let response = ferret
        .search(Query::new("Who were the members of the Final Five gymnastics team?").unwrap())
        .await
        .unwrap();
    assert!(ferret::index::default_index_dir().exists());
    assert_eq!(response.response_type, ResponseType::Results);
    assert_citations_resolve(&response);
    assert!(
        response.answer.as_deref().unwrap().contains("Simone Biles"),
        "{:?}",
        response.answer
    );
    assert_eq!(response.citations[0].title, "Final Five (gymnastics)");
    assert!(response.failures.is_empty());
    assert_eq!(response.stop_reason, StopReason::Answered);
}

/// A backend that answers each query from a script: the hits for the first script entry whose
/// key the query contains, or nothing.
fn scripted(name: &str, script: Vec<(&str, Vec<Hit>)>) -> ScriptedBackend {
    let mut documents: Vec<Hit> = Vec::new();
    let mut shelves = Vec::new();
    for (key, hits) in script {
        shelves.push((
            key.to_owned(),
            hits.iter().map(|h| h.id.0.clone()).collect(),
        ));
        documents.extend(
            hits.into_iter()
                .filter(|h| !documents.iter().any(|d| d.id == h.id))
                .collect::<Vec<_>>(),
        );
    }
    ScriptedBackend::new(name, documents).matching(Matching::Shelves {
        shelves,
        first_only: true,
    })
}

fn hit(id: &str, title: &str, text: &str) -> Hit {
    Hit::new(id, title, text, 1.0, "scripted")
}

fn volcano_hits() -> Vec<Hit> {
    vec![
        hit(
            "v1",
            "Mount Etna",
            "Mount Etna is an active volcano in Sicily. Etna erupts often.",
        ),
        hit(
            "v2",
            "Volcano",
            "A volcano is a rupture in the crust where lava erupts.",
        ),
    ]
}

#[tokio::test]
async fn a_failing_backend_and_a_slow_one_are_named_while_the_search_answers() {
    let healthy = scripted("healthy", vec![("volcano", volcano_hits())]);
    let broken = scripted("broken", vec![]).failing(BackendError::permanent(
        "broken",
        ferret::backends::BackendErrorKind::Unavailable,
        "index gone",
    ));
    let slow = scripted("slow", vec![("volcano", volcano_hits())]).delay(Duration::from_secs(60));
    let ferret = Ferret::builder()
        .backend(Arc::new(healthy))
        .backend(Arc::new(broken))
        .backend(Arc::new(slow))
        .build()
        .unwrap();
    let budget = Budget {
        call_deadline: Duration::from_millis(300),
        ..Budget::default()
    };
    let response = ferret
        .search(
            Query::new("Which volcano erupts in Sicily?")
                .unwrap()
                .with_budget(budget),
        )
        .await
        .unwrap();
    assert_eq!(response.response_type, ResponseType::Results);
    assert_citations_resolve(&response);
    let mut failed: Vec<_> = response
        .failures
        .iter()
        .map(|f| (f.error.backend.as_str(), f.error.kind.clone()))
        .collect();
    failed.sort_by_key(|(name, _)| *name);
    assert_eq!(
        failed,
        [
            ("broken", ferret::backends::BackendErrorKind::Unavailable),
            ("slow", ferret::backends::BackendErrorKind::DeadlineExceeded)
        ]
    );
}

#[tokio::test]
async fn weak_results_are_refined_until_good_ones_arrive() {
    // The full question finds only an off-topic page; the broadened query (without the year) finds the answer.
    let backend = Arc::new(scripted(
        "wiki",
        vec![
            (
                "1998",
                vec![hit("x", "Cooking", "How to boil rice in a pot of water.")],
            ),
            ("volcano", volcano_hits()),
        ],
    ));
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let response = ferret
        .search(Query::new("Etna volcano eruption in 1998").unwrap())
        .await
        .unwrap();
    let attempts: Vec<_> = response
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s, TraceStep::Attempt { .. }))
        .collect();
    assert_eq!(attempts.len(), 2, "{:#?}", response.trace);
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert!(response.hits.iter().any(|h| h.id.0 == "v1"));
    // The search's own ranking stands (the off-topic page it ranked first stays listed), but the
    // answer cites only what is relevant.
    assert!(
        response.citations.iter().all(|c| c.hit_id.0 != "x"),
        "the off-topic page is not cited"
    );
    assert!(response.citations.iter().any(|c| c.hit_id.0 == "v1"));
    assert_citations_resolve(&response);
}

#[tokio::test]
async fn a_long_question_is_searched_as_asked_to_its_end() {
    // What is asked comes last, past the 100 characters a rewritten query may hold.
    let question =
        "The 2011–12 VCU Rams men's basketball team, led by third year head coach Shaka Smart, \
                    represented Virginia Commonwealth University which was founded in what year?";
    let university = hit(
        "vcu",
        "2011–12 VCU Rams men's basketball team",
        "Led by third year head coach Shaka Smart, the team represented Virginia Commonwealth University, \
         founded in the year 1838.",
    );
    let backend = Arc::new(scripted(
        "wiki",
        vec![("founded in what year", vec![university])],
    ));
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let response = ferret.search(Query::new(question).unwrap()).await.unwrap();

    let first = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Queries {
            attempt: 1,
            queries,
            ..
        } => Some(queries.clone()),
        _ => None,
    });
    let first = first.expect("the first attempt's queries are traced");
    assert_eq!(
        first,
        [question.split_whitespace().collect::<Vec<_>>().join(" ")],
        "the question as asked, whole"
    );
    assert_eq!(
        response.hits.first().map(|h| h.id.0.as_str()),
        Some("vcu"),
        "{:#?}",
        response.trace
    );
    assert_citations_resolve(&response);
}

#[tokio::test]
async fn a_refinement_that_brings_nothing_new_stops_with_no_progress() {
    let weak = vec![hit(
        "w",
        "Weather",
        "Rain is expected tomorrow in the north.",
    )];
    let backend = Arc::new(scripted("wiki", vec![("", weak)]));
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let response = ferret
        .search(Query::new("Etna volcano eruption history").unwrap())
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::NoProgress);
    assert_eq!(
        response.response_type,
        ResponseType::Message,
        "nothing relevant: a message, not an answer from noise"
    );
    assert!(response
        .message
        .as_deref()
        .unwrap()
        .contains("couldn't find"));
    assert_eq!(
        response.hits.first().map(|h| h.id.0.as_str()),
        Some("w"),
        "what the search found is still listed"
    );
    assert!(backend.calls() <= 3);
}

#[tokio::test]
async fn the_refine_loop_never_exceeds_its_attempts() {
    // Each call returns a fresh weak hit, so every attempt brings something new.
    let weather = vec![hit("w", "Weather", "Rain is expected tomorrow.")];
    let backend = Arc::new(ScriptedBackend::new("fresh", weather).matching(Matching::Fresh));
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let response = ferret
        .search(Query::new("Etna volcano eruption history").unwrap())
        .await
        .unwrap();
    assert_eq!(
        response.stop_reason,
        StopReason::MaxAttempts,
        "{:#?}",
        response.trace
    );
    let attempts = response
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s, TraceStep::Attempt { .. }))
        .count();
    assert_eq!(attempts, 3);
}

#[tokio::test]
async fn an_unreachable_qdrant_server_is_the_search_s_failure_and_the_next_search_tries_again() {
    // Nothing listens on port 1: the connection is refused at once.
    let ferret = Ferret::builder()
        .qdrant("http://127.0.0.1:1", "ferret")
        .retrieval(ferret::jobs::search::RetrievalMode::Bm25)
        .build()
        .unwrap();
    for _ in 0..2 {
        let response = ferret
            .search(Query::new("Which volcano erupts in Sicily?").unwrap())
            .await
            .unwrap();
        assert_eq!(response.response_type, ResponseType::Message);
        let failure = response
            .failures
            .first()
            .expect("the connection failure is listed");
        assert_eq!(failure.error.backend, "qdrant");
        assert!(
            failure.error.to_string().contains("127.0.0.1:1"),
            "the message names the server: {}",
            failure.error
        );
        assert!(response
            .message
            .unwrap()
            .contains("No search backend could be reached"));
    }
}

#[tokio::test]
async fn greetings_and_unrelated_requests_get_a_message_and_no_search() {
    let backend = Arc::new(scripted("wiki", vec![("", volcano_hits())]));
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    for question in ["hello there!", "tell me a joke"] {
        let response = ferret.search(Query::new(question).unwrap()).await.unwrap();
        assert_eq!(
            (response.response_type, response.stop_reason),
            (ResponseType::Message, StopReason::Guardrail)
        );
        assert!(response.message.is_some() && response.hits.is_empty());
    }
    assert_eq!(backend.calls(), 0);
}

#[tokio::test]
async fn the_stream_carries_the_same_facts_and_ends_with_the_response() {
    let backend = Arc::new(scripted("wiki", vec![("volcano", volcano_hits())]));
    let ferret = Ferret::builder().backend(backend).build().unwrap();
    let query = Query::new("Which volcano erupts in Sicily?").unwrap();
    let events: Vec<Event> = ferret.search_stream(query.clone()).collect().await;
    let Some(Event::Done { response }) = events.last() else {
        panic!("the stream ends with Done: {events:#?}")
    };
    let steps: Vec<&TraceStep> = events
        .iter()
        .filter_map(|e| {
            if let Event::Step { step } = e {
                Some(step)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(steps, response.trace.steps.iter().collect::<Vec<_>>());
    assert!(events.iter().any(|e| matches!(e, Event::Answer { .. })));
    assert!(matches!(steps[0], TraceStep::Intent { .. }));
    let direct = ferret.search(query).await.unwrap();
    assert_eq!(direct.answer, response.answer);
}

#[tokio::test]
async fn bad_configuration_and_budgets_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-index");
    match Ferret::builder().local_index(&missing).build() {
        Err(FerretError::Index { path, reason }) => {
            assert_eq!(path, missing);
            assert!(
                reason.contains("ferret ingest"),
                "the message says how to make one: {reason}"
            );
        }
        other => panic!("expected an index error, got {other:?}"),
    }
    assert!(matches!(
        Ferret::builder().build(),
        Err(FerretError::Config(_))
    ));

    let ferret = Ferret::builder()
        .backend(Arc::new(scripted("wiki", vec![])))
        .build()
        .unwrap();
    let no_attempts = Budget {
        max_attempts: 0,
        ..Budget::default()
    };
    let err = ferret
        .search(Query::new("volcano").unwrap().with_budget(no_attempts))
        .await
        .unwrap_err();
    assert!(matches!(err, FerretError::Budget(_)), "{err}");
    // A stream never ends silently: the error, then the final response saying why.
    let events: Vec<Event> = ferret
        .search_stream(Query::new("volcano").unwrap().with_budget(no_attempts))
        .collect()
        .await;
    match events.as_slice() {
        [Event::Error { message }, Event::Done { response }] => {
            assert!(message.contains("max_attempts"), "{message}");
            assert_eq!(
                (response.response_type, response.stop_reason),
                (ResponseType::Message, StopReason::Refused)
            );
        }
        other => panic!("expected an error then Done: {other:#?}"),
    }

    let zero_steps = ferret::config::AgentConfig {
        strategy: ferret::Strategy::ToolLoop,
        tool_loop: ferret::config::ToolLoopConfig {
            max_steps: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    let error = Ferret::builder()
        .backend(Arc::new(scripted("wiki", vec![])))
        .agent(zero_steps)
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, FerretError::Config(m) if m.contains("tool_loop.max_steps")),
        "checked when built: {error}"
    );
}

#[tokio::test]
async fn when_every_backend_fails_the_message_says_so_instead_of_asking_to_rephrase() {
    let broken = scripted("broken", vec![]).failing(BackendError::permanent(
        "broken",
        ferret::backends::BackendErrorKind::Unavailable,
        "index gone",
    ));
    let ferret = Ferret::builder().backend(Arc::new(broken)).build().unwrap();
    let response = ferret
        .search(Query::new("Which volcano erupts in Sicily?").unwrap())
        .await
        .unwrap();
    assert_eq!(response.response_type, ResponseType::Message);
    let message = response.message.unwrap();
    assert!(
        message.contains("No search backend could be reached") && message.contains("index gone"),
        "{message}"
    );
    assert_eq!(
        response.failures.len(),
        2,
        "both attempts' calls failed and are listed"
    );
}

#[tokio::test]
async fn hits_without_text_give_a_message_not_an_empty_answer() {
    let titles_only = vec![
        hit("t1", "Volcano eruptions in Sicily", ""),
        hit("t2", "Sicily volcano", " "),
    ];
    let ferret = Ferret::builder()
        .backend(Arc::new(scripted("wiki", vec![("", titles_only)])))
        .build()
        .unwrap();
    let response = ferret
        .search(Query::new("Which volcano erupts in Sicily?").unwrap())
        .await
        .unwrap();
    assert_eq!(
        response.response_type,
        ResponseType::Message,
        "{response:#?}"
    );
    assert!(response.answer.is_none());
}

#[tokio::test]
async fn two_local_indexes_and_the_built_in_corpus_have_names_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (notes, papers) = (dir.path().join("notes"), dir.path().join("papers"));
    for index in [&notes, &papers] {
        ferret::index::LocalIndex::open_or_create_with(index, None).unwrap();
    }
    let two = Ferret::builder()
        .local_index(&notes)
        .local_index(&papers)
        .retrieval(ferret::jobs::search::RetrievalMode::Bm25)
        .build()
        .unwrap();
    assert_eq!(two.backend_names(), ["local", "local-papers"]);
    drop(two);
    let beside_the_corpus = Ferret::builder()
        .local_index(&notes)
        .default_corpus()
        .retrieval(ferret::jobs::search::RetrievalMode::Bm25)
        .build()
        .unwrap();
    assert_eq!(beside_the_corpus.backend_names(), ["local-notes", "local"]);
}
