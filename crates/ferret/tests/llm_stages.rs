//! The pipeline with a language model behind every stage, replayed from a script: what a good
//! model's answers do, what garbage does, and what the search reports it spent.

use std::collections::HashMap;
use std::sync::Arc;

use ferret::jobs::search::{Implementation, LlmCallOutcome, ResponseType, TraceStep};
use ferret::models::{Exchange, ModelPrice, ScriptedModel, StageModelConfig};
use ferret::{Ferret, Query, Response};

mod common;
use common::{assert_citations_resolve, use_temporary_ferret_home};

const QUESTION: &str = "Who were the members of the Final Five gymnastics team?";

fn reply(text: &str) -> Exchange {
    Exchange {
        expect_contains: None,
        reply: text.to_owned(),
    }
}

async fn search_with(model: ScriptedModel, prices: HashMap<String, ModelPrice>) -> Response {
    use_temporary_ferret_home();
    let ferret = Ferret::builder()
        .default_corpus()
        .language_model(Arc::new(model))
        .stage_model(StageModelConfig {
            prices,
            ..StageModelConfig::default()
        })
        .build()
        .expect("the default corpus opens");
    ferret
        .search(Query::new(QUESTION).expect("a valid question"))
        .await
        .expect("the search runs")
}

fn implementations(response: &Response) -> Vec<(&'static str, &Implementation)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|step| match step {
            TraceStep::Intent { implementation, .. } => Some(("intent", implementation)),
            TraceStep::Analysis { implementation, .. } => Some(("analysis", implementation)),
            TraceStep::Queries { implementation, .. } => Some(("queries", implementation)),
            TraceStep::Grading { implementation, .. } => Some(("grading", implementation)),
            TraceStep::Synthesis { implementation, .. } => Some(("synthesis", implementation)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_stage_uses_the_models_answers_and_the_search_accounts_for_them() {
    // Recorded replies, one per stage call, with what each stage's prompt must contain. They include
    // what small models do: a fenced reply, an invented entity, a trailing comma, a bogus [9].
    let transcript = include_str!("../../../fixtures/llm/final-five/transcript.jsonl");
    let model = ScriptedModel::from_jsonl("scripted", transcript).expect("the transcript parses");
    let prices = HashMap::from([(
        "scripted".to_owned(),
        ModelPrice {
            prompt_per_million: 1.0,
            completion_per_million: 2.0,
        },
    )]);
    let response = search_with(model, prices).await;

    assert_eq!(response.response_type, ResponseType::Results);
    assert_citations_resolve(&response);
    let answer = response.answer.as_deref().unwrap_or_default();
    assert!(
        answer.starts_with("The Final Five were Simone Biles") && !answer.contains("[9]"),
        "{answer}"
    );
    for (stage, implementation) in implementations(&response) {
        assert!(
            matches!(implementation, Implementation::Llm { model, repaired: false } if model == "scripted"),
            "{stage}: {implementation:?}"
        );
    }
    let dropped = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Synthesis {
            dropped_markers, ..
        } => Some(*dropped_markers),
        _ => None,
    });
    assert_eq!(
        dropped,
        Some(1),
        "the marker pointing at no source is removed and counted"
    );
    let entities = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Analysis { entities, .. } => Some(entities.clone()),
        _ => None,
    });
    assert!(
        !entities
            .unwrap_or_default()
            .iter()
            .any(|e| e.contains("Atlantis")),
        "an entity not in the question is not kept"
    );

    let first = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Queries {
            attempt: 1,
            queries,
            ..
        } => Some(queries.clone()),
        _ => None,
    });
    assert_eq!(
        first.unwrap_or_default(),
        ["Who were the members of the Final Five gymnastics team?"],
        "the question as asked; the model's query holds the same words, so it adds no search"
    );

    let calls: Vec<_> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| {
            if let TraceStep::LlmCall(c) = s {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        calls.iter().map(|c| c.caller.as_str()).collect::<Vec<_>>(),
        ["intent", "analysis", "rewrite", "grading", "synthesis"]
    );
    assert_eq!(response.usage.llm_calls, 5);
    assert_eq!(
        response.usage.prompt_tokens,
        calls.iter().map(|c| c.prompt_tokens).sum::<u64>()
    );
    let expected_cost =
        (response.usage.prompt_tokens as f64 + 2.0 * response.usage.completion_tokens as f64) / 1e6;
    assert!(
        response.usage.prompt_tokens > 0 && (response.usage.cost_usd - expected_cost).abs() < 1e-12,
        "{:?}",
        response.usage
    );
}

#[tokio::test]
async fn a_model_that_writes_garbage_leaves_the_heuristics_in_charge_and_says_so() {
    let model = ScriptedModel::new(
        "babbler",
        (0..40)
            .map(|_| reply("Sure! The answer is probably yes."))
            .collect(),
    );
    let response = search_with(model, HashMap::new()).await;

    assert_eq!(response.response_type, ResponseType::Results);
    assert_citations_resolve(&response);
    assert!(response
        .answer
        .as_deref()
        .unwrap_or_default()
        .contains("Simone Biles"));
    for (stage, implementation) in implementations(&response) {
        assert!(
            matches!(implementation, Implementation::Heuristic { why } if why.contains("babbler failed")),
            "{stage}: {implementation:?}"
        );
    }
    let calls: Vec<_> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| {
            if let TraceStep::LlmCall(c) = s {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    assert!(calls.len() >= 5);
    for call in calls {
        assert_eq!(call.requests, 2, "one request and one repair: {call:?}");
        assert!(matches!(call.outcome, LlmCallOutcome::Failed { .. }));
    }
    assert_eq!(
        response.usage.cost_usd, 0.0,
        "a model without a price costs nothing"
    );
}

/// A model that takes its time: it answers every stage, after `delay`.
struct Slow {
    delay: std::time::Duration,
}

#[async_trait::async_trait]
impl ferret::models::LanguageModel for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    async fn complete(
        &self,
        _request: &ferret_core::CompletionRequest,
    ) -> Result<ferret_core::Completion, ferret_core::LlmError> {
        tokio::time::sleep(self.delay).await;
        Err(ferret_core::LlmError {
            message: "too late to matter".into(),
            retry: ferret_core::RetryClass::Permanent,
        })
    }
}

fn model_calls(response: &Response) -> Vec<&ferret::jobs::search::LlmCall> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|step| match step {
            TraceStep::LlmCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_model_call_ends_at_the_querys_call_deadline_and_the_heuristics_answer() {
    use_temporary_ferret_home();
    let ferret = Ferret::builder()
        .default_corpus()
        .language_model(Arc::new(Slow {
            delay: std::time::Duration::from_secs(30),
        }))
        .build()
        .expect("the default corpus opens");
    let mut query = Query::new(QUESTION).expect("a valid question");
    query.budget.call_deadline = std::time::Duration::from_millis(100);
    let started = std::time::Instant::now();
    let response = ferret.search(query).await.expect("the search runs");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(response.response_type, ResponseType::Results);
    assert_citations_resolve(&response);
    let calls = model_calls(&response);
    assert!(!calls.is_empty());
    for call in calls {
        assert!(
            matches!(&call.outcome, LlmCallOutcome::Failed { error } if error.contains("no answer within")),
            "{call:?}"
        );
    }
}

#[tokio::test]
async fn no_model_call_is_made_once_the_querys_tokens_are_spent() {
    // A script with no replies: any call made would fail with "script exhausted".
    let mut query = Query::new(QUESTION).expect("a valid question");
    query.budget.max_tokens = 50;
    use_temporary_ferret_home();
    let ferret = Ferret::builder()
        .default_corpus()
        .language_model(Arc::new(ScriptedModel::new("scripted", Vec::new())))
        .build()
        .expect("the default corpus opens");
    let response = ferret.search(query).await.expect("the search runs");
    assert_eq!(response.response_type, ResponseType::Results);
    assert_eq!(response.usage.prompt_tokens, 0);
    let calls = model_calls(&response);
    assert!(!calls.is_empty());
    for call in calls {
        assert_eq!(call.requests, 0, "{call:?}");
        assert!(
            matches!(&call.outcome, LlmCallOutcome::Failed { error } if error.contains("token budget")),
            "{call:?}"
        );
    }
}

#[tokio::test]
async fn a_stage_kept_heuristic_never_asks_the_model() {
    use_temporary_ferret_home();
    let callers = |heuristic_stages: Vec<ferret::models::Stage>| async move {
        let ferret = Ferret::builder()
            .default_corpus()
            .language_model(Arc::new(ScriptedModel::new("scripted", Vec::new())))
            .stage_model(StageModelConfig {
                heuristic_stages: heuristic_stages.into_iter().collect(),
                ..StageModelConfig::default()
            })
            .build()
            .expect("the default corpus opens");
        let response = ferret
            .search(Query::new(QUESTION).expect("a valid question"))
            .await
            .expect("the search runs");
        let mut callers: Vec<String> = response
            .trace
            .steps
            .iter()
            .filter_map(|s| match s {
                TraceStep::LlmCall(call) => Some(call.caller.clone()),
                _ => None,
            })
            .collect();
        callers.dedup();
        callers
    };
    let all = callers(Vec::new()).await;
    for stage in ["intent", "analysis", "grading"] {
        assert!(all.iter().any(|c| c == stage), "{stage} asks: {all:?}");
    }
    let some = callers(vec![
        ferret::models::Stage::Intent,
        ferret::models::Stage::Grading,
    ])
    .await;
    assert!(
        !some.iter().any(|c| c == "intent" || c == "grading"),
        "{some:?}"
    );
    assert!(some.iter().any(|c| c == "analysis"), "{some:?}");
}
