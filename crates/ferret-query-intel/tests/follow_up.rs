//! The model's reading of a follow-up question: kept when it only fills in what the last turn
//! gives, refused (and the rules read the question) when it invents, never asked when the
//! question stands alone.

use std::sync::Arc;

use ferret_core::Implementation;
use ferret_llm::{Exchange, ScriptedModel, StageModel, StageModelConfig};
use ferret_query_intel::{FollowUpResolver, LlmFollowUpResolver, PriorTurn};

fn etna() -> PriorTurn<'static> {
    PriorTurn {
        question: "Which volcano is active in Sicily?",
        short_answer: Some("Mount Etna"),
        cited: vec!["Mount Etna"],
    }
}

/// A resolver whose model replies `replies` in order, and the model, to count what is left.
fn resolver(replies: &[&str]) -> (LlmFollowUpResolver, Arc<ScriptedModel>) {
    let exchanges = replies
        .iter()
        .map(|reply| Exchange {
            expect_contains: Some("Earlier turn".into()),
            reply: (*reply).to_owned(),
        })
        .collect();
    let model = Arc::new(ScriptedModel::new("scripted", exchanges));
    let stage = StageModel::new(model.clone(), StageModelConfig::default());
    (LlmFollowUpResolver::new(stage), model)
}

fn by_model(implementation: &Implementation) -> bool {
    matches!(implementation, Implementation::Llm { .. })
}

#[tokio::test]
async fn the_models_rewrite_is_searched_when_it_only_fills_in_the_last_turn() {
    let (resolver, _) =
        resolver(&[r#"{"standalone": false, "question": "How high is Mount Etna?"}"#]);
    let output = resolver.resolve("How high is it?", &etna()).await;
    assert_eq!(output.value.as_deref(), Some("How high is Mount Etna?"));
    assert!(by_model(&output.implementation));
    assert_eq!(output.llm_calls.len(), 1);
}

#[tokio::test]
async fn a_question_the_model_calls_standalone_is_searched_as_asked() {
    let (resolver, _) = resolver(&[r#"{"standalone": true, "question": ""}"#]);
    let output = resolver
        .resolve("Is it taller than Vesuvius?", &etna())
        .await;
    assert_eq!(output.value, None);
    assert!(by_model(&output.implementation));
}

#[tokio::test]
async fn a_rewrite_that_invents_is_refused_and_the_rules_read_the_question() {
    let invented = r#"{"standalone": false, "question": "How high is Mount Etna above Catania, Sicily, in metres?"}"#;
    // The refusal is asked to be repaired once; the repair invents as well.
    let (resolver, _) = resolver(&[invented, invented]);
    let output = resolver.resolve("How high is it?", &etna()).await;
    assert_eq!(
        output.value.as_deref(),
        Some("How high is Mount Etna?"),
        "the rules' reading"
    );
    match &output.implementation {
        Implementation::Heuristic { why } => assert!(why.contains("catania"), "{why}"),
        other => panic!("the rules should have read it: {other:?}"),
    }
}

#[tokio::test]
async fn a_question_that_names_what_it_asks_costs_no_model_call() {
    let (resolver, model) = resolver(&[r#"{"standalone": true, "question": ""}"#]);
    let output = resolver
        .resolve(
            "Which other volcanoes in Italy erupted during the 1990s?",
            &etna(),
        )
        .await;
    assert_eq!(output.value, None);
    assert!(output.llm_calls.is_empty());
    assert_eq!(model.remaining(), 1, "the model was not asked");
}

#[tokio::test]
async fn a_model_that_answers_garbage_leaves_the_question_to_the_rules() {
    let (resolver, _) = resolver(&["Etna is 3,357 metres high.", "still not JSON"]);
    let output = resolver.resolve("How high is it?", &etna()).await;
    assert_eq!(output.value.as_deref(), Some("How high is Mount Etna?"));
    assert!(!by_model(&output.implementation));
}
