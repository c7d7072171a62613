//! The tool-selection loop over scripted backends: the heuristic selector's path, a model's
//! choices, a model that fails, a selector that repeats itself, and budgets that allow no step.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ferret_agent::{Agent, AgentConfig, Stages, Strategy, ToolBox, ToolLoopConfig};
use ferret_agent::{SelectionState, ToolCall, ToolSelector};
use ferret_core::{
    BackendCapabilities, BackendError, Budget, FerretError, Hit, Implementation, Query, Response, ResponseType,
    SearchBackend, SearchRequest, StageOutput, StopReason, TraceStep,
};
use ferret_exec::Executor;
use ferret_grading::GradingConfig;
use ferret_llm::{Exchange, ScriptedModel, StageModel, StageModelConfig};
use ferret_query_intel::GuardrailConfig;

/// A journal: answers any query with the entries that share a longer word with it, and remembers the
/// requests it got.
struct Journal {
    entries: Vec<Hit>,
    requests: Mutex<Vec<SearchRequest>>,
    calls: AtomicU32,
}

#[async_trait]
impl SearchBackend for Journal {
    fn name(&self) -> &str {
        "journal"
    }
    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities { date_range: true, most_recent: true }
    }
    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request.clone());
        // Words of four letters or more, so "I" or "my" match nothing.
        let words: Vec<String> = request.query.to_lowercase().split_whitespace().filter(|w| w.len() >= 4).map(str::to_owned).collect();
        Ok(self
            .entries
            .iter()
            .filter(|h| words.iter().any(|w| h.text.to_lowercase().contains(w.as_str())))
            .take(request.filters.most_recent.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }
}

fn journal() -> Arc<Journal> {
    let entries = vec![
        Hit::new("e1", "Exams", "I have been stressed about the exams and my thesis deadline.", 1.0, "journal"),
        Hit::new("e2", "Garden", "The tomatoes in the garden finally ripened.", 1.0, "journal"),
        Hit::new("e3", "Work", "Work stress again: the thesis review moved to Friday.", 1.0, "journal"),
    ];
    Arc::new(Journal { entries, requests: Mutex::new(Vec::new()), calls: AtomicU32::new(0) })
}

fn agent(backend: Arc<Journal>, stages: Stages, tool_loop: ToolLoopConfig) -> Agent {
    let executor = Executor::builder().backend(backend).build().unwrap();
    Agent::new(stages, executor, AgentConfig { strategy: Strategy::ToolLoop, tool_loop, ..AgentConfig::default() })
}

fn heuristic_stages() -> Stages {
    Stages::heuristic(GuardrailConfig::default(), GradingConfig::default())
}

/// (tool, query, results, new results, error) of each tool step.
fn tool_steps(response: &Response) -> Vec<(String, String, usize, usize, Option<String>)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::ToolStep { tool, query, results, new_results, error, .. } => {
                Some((tool.clone(), query.clone(), *results, *new_results, error.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn without_a_model_the_loop_lists_recent_entries_when_asked_and_stops_when_covered() {
    let backend = journal();
    let agent = agent(backend.clone(), heuristic_stages(), ToolLoopConfig::default());
    let response = agent.run(&Query::new("What have I been stressed about lately with my thesis?").unwrap(), None).await.unwrap();

    let steps = tool_steps(&response);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0].0, "recent");
    assert_eq!((steps[0].2, steps[0].3, steps[0].4.clone()), (2, 2, None), "both thesis entries, both new");
    assert_eq!(steps[1].0, "DONE");
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_eq!(response.response_type, ResponseType::Results);
    assert_eq!(backend.requests.lock().unwrap()[0].filters.most_recent, Some(ToolLoopConfig::default().recent_entries));
    for citation in &response.citations {
        assert!(response.hits.iter().any(|h| h.id == citation.hit_id), "{citation:?}");
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
    let stages = Stages { tool_selector: Arc::new(Stubborn), ..heuristic_stages() };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default()).run(&Query::new("thesis stress").unwrap(), None).await.unwrap();

    assert_eq!(response.stop_reason, StopReason::NoProgress);
    let steps = tool_steps(&response);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[1].4.as_deref(), Some("repeats step 1"));
    assert_eq!(backend.calls.load(Ordering::SeqCst), 1, "the repeat is not searched");
    assert_eq!(response.response_type, ResponseType::Results, "what the first call found still answers");
}

fn model(replies: &[&str]) -> StageModel {
    let exchanges = replies.iter().map(|r| Exchange { expect_contains: None, reply: (*r).to_owned() }).collect();
    StageModel::new(Arc::new(ScriptedModel::new("scripted", exchanges)), StageModelConfig::default())
}

#[tokio::test]
async fn a_models_choices_run_with_their_arguments_and_its_reasoning_is_traced() {
    let backend = journal();
    let selector = ferret_agent::LlmToolSelector::new(model(&[
        r#"{"reasoning": "Entries from spring.", "tool": "DATE_RANGE", "argument": "2024-03-01..2024-05-31 exams"}"#,
        r#"{"reasoning": "Work worries too.", "tool": "search", "argument": "work stress"}"#,
        r#"{"reasoning": "Enough.", "tool": "done", "argument": ""}"#,
    ]));
    let stages = Stages { tool_selector: Arc::new(selector), ..heuristic_stages() };
    let response =
        agent(backend.clone(), stages, ToolLoopConfig::default()).run(&Query::new("What stressed me this spring?").unwrap(), None).await.unwrap();

    let steps = tool_steps(&response);
    let tools: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(tools, ["date_range", "search", "DONE"]);
    assert_eq!((steps[0].1.as_str(), steps[1].1.as_str()), ("exams", "work stress"));
    let range = backend.requests.lock().unwrap()[0].filters.date_range.unwrap();
    assert_eq!(range.from.unwrap().to_string(), "2024-03-01");
    let reasons: Vec<(&str, &Implementation)> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::ToolStep { reasoning, implementation, .. } => Some((reasoning.as_str(), implementation)),
            _ => None,
        })
        .collect();
    assert_eq!(reasons[1].0, "Work worries too.");
    assert!(reasons.iter().all(|(_, i)| matches!(i, Implementation::Llm { .. })), "{reasons:?}");
    assert_eq!(response.stop_reason, StopReason::Answered);
}

#[tokio::test]
async fn a_failing_selector_falls_back_to_one_plain_search_and_says_so() {
    let backend = journal();
    let selector = ferret_agent::LlmToolSelector::new(model(&["I think you should search.", "Still prose."]));
    let stages = Stages { tool_selector: Arc::new(selector), ..heuristic_stages() };
    let response = agent(backend.clone(), stages, ToolLoopConfig::default()).run(&Query::new("thesis stress").unwrap(), None).await.unwrap();

    let steps = tool_steps(&response);
    let tools: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(tools, ["search", "DONE"], "one plain search, then the fallback stops");
    assert_eq!(steps[0].1, "thesis stress");
    let fallback = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::ToolStep { implementation: Implementation::Heuristic { why }, reasoning, .. } => Some((why.clone(), reasoning.clone())),
        _ => None,
    });
    let (why, reasoning) = fallback.expect("the fallback is traced");
    assert!(why.contains("scripted failed"), "{why}");
    assert!(reasoning.contains("selector failed"), "{reasoning}");
    assert_eq!(backend.calls.load(Ordering::SeqCst), 1);
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
    let stages = Stages { tool_selector: Arc::new(Wandering(AtomicU32::new(0))), ..heuristic_stages() };
    let config = ToolLoopConfig { max_steps: 3, ..ToolLoopConfig::default() };
    let response = agent(journal(), stages, config).run(&Query::new("thesis stress").unwrap(), None).await.unwrap();
    assert_eq!(tool_steps(&response).len(), 3);
    assert_eq!(response.stop_reason, StopReason::MaxAttempts);
}

#[tokio::test]
async fn budgets_of_zero_steps_are_clear_errors() {
    let zero_steps = ToolLoopConfig { max_steps: 0, ..ToolLoopConfig::default() };
    let error = agent(journal(), heuristic_stages(), zero_steps).run(&Query::new("thesis stress").unwrap(), None).await.unwrap_err();
    assert!(matches!(&error, FerretError::Config(m) if m.contains("tool_loop.max_steps is zero")), "{error}");

    let no_attempts = Query::new("thesis stress").unwrap().with_budget(Budget { max_attempts: 0, ..Budget::default() });
    let error = agent(journal(), heuristic_stages(), ToolLoopConfig::default()).run(&no_attempts, None).await.unwrap_err();
    assert!(matches!(&error, FerretError::Budget(e) if e.to_string().contains("max_attempts is zero")), "{error}");
}
