//! Sessions through the facade: a question a thread repeats (same words, same error, same
//! meaning) is answered again with no backend call, unless the caller asks to search again;
//! memory is bounded by turns.

use std::sync::Arc;

use ferret::jobs::search::TraceStep;
use ferret::jobs::session::{OnRepeat, RepeatMatch, SessionLimits};
use ferret::models::Embedder;
use ferret::{Ferret, Hit, Query};
use ferret_test_support::ScriptedBackend;

fn docs() -> Arc<ScriptedBackend> {
    let hit = |id: &str, title: &str, text: &str| Hit::new(id, title, text, 1.0, "docs");
    Arc::new(ScriptedBackend::new(
        "docs",
        vec![
            hit(
                "cglib",
                "cglib on Java 17",
                "Spring Boot 1.5 fails on Java 17 with NoClassDefFoundError for the cglib Enhancer. Upgrade Spring Boot to 2.5.",
            ),
            hit("etna", "Mount Etna", "Mount Etna is an active volcano in Sicily."),
        ],
    ))
}

/// Reads meaning by topic: Spring questions one way, anything else the other.
struct Topics;

#[async_trait::async_trait]
impl Embedder for Topics {
    fn name(&self) -> &str {
        "topics"
    }
    fn dimension(&self) -> usize {
        2
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ferret::models::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| match t.to_lowercase().contains("spring") {
                true => vec![1.0, 0.1],
                false => vec![0.1, 1.0],
            })
            .collect())
    }
}

fn query(text: &str) -> Query {
    Query::new(text).unwrap()
}

#[tokio::test]
async fn the_same_question_again_is_answered_from_the_session_without_a_search() {
    let backend = docs();
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let session = ferret.session("agent-1");
    let first = session
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    assert!(first.repeat_of.is_none());
    let calls = backend.calls();
    assert!(calls > 0);

    let again = session
        .search(query("which volcano is ACTIVE in Sicily"))
        .await
        .unwrap();
    assert_eq!(backend.calls(), calls, "no backend call for a repeat");
    let repeat = again.repeat_of.clone().expect("a repeat");
    assert_eq!((repeat.turn, repeat.matched_by), (1, RepeatMatch::Text));
    assert_eq!(again.answer, first.answer);
    assert_eq!(again.usage.backend_calls, 0);
    assert!(again
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, TraceStep::Repeat { turn: 1, .. })));

    // Another thread has asked nothing yet; asking to search again searches (the executor's
    // cache may answer the calls).
    let searched_calls = |r: &ferret::Response| r.usage.backend_calls + r.usage.cache_hits;
    let other = ferret
        .session("agent-2")
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    assert!(other.repeat_of.is_none() && searched_calls(&other) > 0);
    let mut fresh = query("Which volcano is active in Sicily?");
    fresh.on_repeat = OnRepeat::SearchAgain;
    let searched = session.search(fresh).await.unwrap();
    assert!(searched.repeat_of.is_none() && searched_calls(&searched) > 0);
}

#[tokio::test]
async fn the_same_error_in_other_words_is_a_repeat() {
    let backend = docs();
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let session = ferret.session("migration");
    session
        .search(query(
            "App fails at startup: java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer",
        ))
        .await
        .unwrap();
    let calls = backend.calls();
    let again = session
        .search(query(
            "Tests still die with NoClassDefFoundError: net.sf.cglib.proxy.Enhancer after the upgrade",
        ))
        .await
        .unwrap();
    assert_eq!(backend.calls(), calls);
    assert_eq!(
        again.repeat_of.map(|r| r.matched_by),
        Some(RepeatMatch::ErrorSignature)
    );
}

#[tokio::test]
async fn a_question_that_means_the_same_is_a_repeat_when_an_embedder_reads_meaning() {
    let backend = docs();
    let ferret = Ferret::builder()
        .backend(backend.clone())
        .embedder(Arc::new(Topics))
        .build()
        .unwrap();
    let session = ferret.session("t");
    session
        .search(query("Does Spring Boot 1.5 run on Java 17?"))
        .await
        .unwrap();
    let calls = backend.calls();
    let again = session
        .search(query("Can I keep Spring Boot 1.5 with Java 17?"))
        .await
        .unwrap();
    assert_eq!(
        again.repeat_of.map(|r| r.matched_by),
        Some(RepeatMatch::Meaning)
    );
    assert_eq!(backend.calls(), calls);
    let other = session
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    assert!(other.repeat_of.is_none(), "another topic is a new question");
}

#[tokio::test]
async fn a_session_forgets_beyond_its_turns() {
    let backend = docs();
    let ferret = Ferret::builder()
        .backend(backend.clone())
        .session_limits(SessionLimits {
            max_turns: 1,
            ..SessionLimits::default()
        })
        .build()
        .unwrap();
    let session = ferret.session("short");
    session
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    session
        .search(query("Does Spring Boot 1.5 run on Java 17?"))
        .await
        .unwrap();
    let third = session
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    assert!(
        third.repeat_of.is_none(),
        "the first question was forgotten"
    );
}

#[tokio::test]
async fn a_follow_up_is_read_against_its_thread_and_a_new_thread_says_so() {
    let backend = docs();
    let ferret = Ferret::builder().backend(backend.clone()).build().unwrap();
    let session = ferret.session("travel");
    let first = session
        .search(query("Which volcano is active in Sicily?"))
        .await
        .unwrap();
    let thread = |response: &ferret::Response| {
        response.trace.steps.iter().find_map(|s| match s {
            TraceStep::Thread { new, turns, .. } => Some((*new, *turns)),
            _ => None,
        })
    };
    assert_eq!(thread(&first), Some((true, 0)), "an unknown thread starts");
    assert_eq!(
        first.short_answer.as_ref().map(|s| s.text.as_str()),
        Some("Mount Etna")
    );

    // Alone, "how high is it?" names nothing; in its thread it is about Etna.
    let follow_up = session.search(query("How high is it?")).await.unwrap();
    assert_eq!(thread(&follow_up), Some((false, 1)));
    let resolved = follow_up.trace.steps.iter().find_map(|s| match s {
        TraceStep::FollowUp {
            asked, resolved, ..
        } => Some((asked.clone(), resolved.clone())),
        _ => None,
    });
    assert_eq!(
        resolved,
        Some((
            "How high is it?".to_owned(),
            "How high is Mount Etna?".to_owned()
        )),
        "the answer to \"which volcano\" is what \"it\" stands for"
    );
    let searched = backend.queries();
    assert!(
        searched.iter().any(|q| q == "How high is Mount Etna?"),
        "the resolved question is what is searched: {searched:?}"
    );

    // Without a thread, nothing is resolved.
    let alone = ferret.search(query("How high is it?")).await.unwrap();
    assert!(!alone
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, TraceStep::FollowUp { .. } | TraceStep::Thread { .. })));
}
