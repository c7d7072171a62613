//! `generate` against scripted model replies: parsed, repaired once, or a typed failure.

use ferret_core::{ChatMessage, ChatRole};
use ferret_llm::{generate, Attempted, Exchange, ScriptedModel, StructuredError};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, PartialEq, JsonSchema)]
struct SubQueries {
    sub_queries: Vec<String>,
}

fn ask() -> Vec<ChatMessage> {
    vec![ChatMessage {
        role: ChatRole::User,
        content: "Decompose: Nile vs Amazon length".into(),
    }]
}

fn reply(text: &str) -> Exchange {
    Exchange {
        expect_contains: None,
        reply: text.into(),
    }
}

#[tokio::test]
async fn a_fenced_answer_parses_without_a_repair() {
    let model = ScriptedModel::new(
        "script",
        vec![reply(
            "```json\n{\"sub_queries\": [\"Nile length\", \"Amazon length\",]}\n```",
        )],
    );
    let out = generate::<SubQueries>(&model, ask(), 200).await.unwrap();
    assert_eq!(out.value.sub_queries, ["Nile length", "Amazon length"]);
    assert_eq!(out.attempted, Attempted::Parsed);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn a_wrong_shape_gets_one_repair_request_quoting_the_error() {
    let model = ScriptedModel::new(
        "script",
        vec![
            reply("{\"queries\": [\"Nile\"]}"),
            Exchange {
                expect_contains: Some("sub_queries".into()),
                reply: "{\"sub_queries\": [\"Nile length\"]}".into(),
            },
        ],
    );
    let out = generate::<SubQueries>(&model, ask(), 200).await.unwrap();
    assert_eq!(out.attempted, Attempted::Repaired);
    assert_eq!(out.value.sub_queries, ["Nile length"]);
    assert!(out.usage.completion_tokens > 0);
}

#[tokio::test]
async fn two_bad_answers_are_a_typed_failure_after_exactly_two_calls() {
    let model = ScriptedModel::new(
        "script",
        vec![
            reply("I think Nile."),
            reply("Still no JSON."),
            reply("never asked"),
        ],
    );
    let err = generate::<SubQueries>(&model, ask(), 200)
        .await
        .unwrap_err();
    match err {
        StructuredError::Unparseable { last_output, .. } => {
            assert_eq!(last_output, "Still no JSON.")
        }
        other => panic!("expected Unparseable, got {other:?}"),
    }
    assert_eq!(model.remaining(), 1, "no third call");
}

#[tokio::test]
async fn a_model_failure_is_passed_on_with_its_class() {
    let model = ScriptedModel::new("script", vec![]);
    let err = generate::<SubQueries>(&model, ask(), 200)
        .await
        .unwrap_err();
    assert!(matches!(err, StructuredError::Model(e) if !e.retry.is_retryable()));
}
