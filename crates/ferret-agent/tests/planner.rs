//! The ReWOO planner over scripted backends: the heuristic plan end to end, waves that run
//! together, `#En` substitution, plans a model gets wrong (repaired, or replaced by the
//! heuristic plan), evaluators that never approve, and a budget that stops the plan.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ferret_agent::Verdict;
use ferret_agent::{
    Agent, AgentConfig, HeuristicPlanner, HeuristicReportWriter, LlmPlanner, PlanConfig,
    PlanEvaluator, PlanRequest, PlanStages, Planner, ReportEvaluator, ReportRequest, ReportWriter,
    StageConfig, Stages, Strategy,
};
use ferret_core::{
    BackendCapabilities, Budget, Hit, Implementation, Query, Report, Response, ResponseType,
    StageOutput, StopReason, TraceStep,
};
use ferret_exec::Executor;
use ferret_grading::GradingConfig;
use ferret_llm::{Exchange, ScriptedModel, StageModel, StageModelConfig};
use ferret_query_intel::BridgeFinder;
use ferret_test_support::{Matching, ScriptedBackend};

/// A library answering each query with the hits of every shelf whose key the query contains,
/// remembering the queries and how many calls were in flight at once.
fn library() -> ScriptedBackend {
    let v1 = hit("v1", "Mount Etna", "Mount Etna is an active volcano in Sicily. Etna erupts often and its lava reaches the sea.");
    let v2 = hit(
        "v2",
        "Volcano",
        "A volcano is a rupture in the crust where lava escapes. Volcanic eruptions are caused by magma rising.",
    );
    let g1 = hit(
        "g1",
        "Glacier",
        "A glacier is a persistent body of dense ice. Glaciers form where snow accumulates faster than it melts.",
    );
    let e1 = hit(
        "e1",
        "Eruptions of Etna",
        "Mount Etna eruptions have been recorded since 1500 BC, the latest in 2021.",
    );
    let shelf = |key: &str, ids: &[&str]| {
        (
            key.to_owned(),
            ids.iter().map(|id| (*id).to_owned()).collect(),
        )
    };
    let shelves = vec![
        shelf("volcan", &["v1", "v2"]),
        shelf("glacier", &["g1"]),
        shelf("etna eruptions", &["e1", "v1"]),
    ];
    ScriptedBackend::new("library", vec![v1, v2, g1, e1])
        .matching(Matching::Shelves {
            shelves,
            first_only: false,
        })
        .capabilities(BackendCapabilities {
            date_range: true,
            most_recent: false,
            access: false,
            ..BackendCapabilities::default()
        })
}

fn hit(id: &str, title: &str, text: &str) -> Hit {
    Hit::new(id, title, text, 1.0, "library")
}

fn agent(library: Arc<ScriptedBackend>, plan: PlanStages, config: PlanConfig) -> Agent {
    let executor = Executor::builder().backend(library).build().unwrap();
    let stages = Stages {
        plan,
        ..Stages::heuristic(StageConfig::default())
    };
    Agent::new(
        stages,
        executor,
        AgentConfig {
            strategy: Strategy::Plan,
            plan: config,
            ..AgentConfig::default()
        },
    )
    .unwrap()
}

fn model(replies: &[&str]) -> (StageModel, Arc<ScriptedModel>) {
    let scripted = Arc::new(ScriptedModel::replying("scripted", replies));
    (
        StageModel::new(scripted.clone(), StageModelConfig::default()),
        scripted,
    )
}

fn scripted(exchanges: Vec<Exchange>) -> (StageModel, Arc<ScriptedModel>) {
    let scripted = Arc::new(ScriptedModel::new("scripted", exchanges));
    (
        StageModel::new(scripted.clone(), StageModelConfig::default()),
        scripted,
    )
}

/// Only the planner asks the model; everything else is heuristic.
fn model_planner(model: StageModel) -> PlanStages {
    PlanStages {
        planner: Arc::new(LlmPlanner::new(model, HeuristicPlanner::default())),
        ..heuristic_plan_stages()
    }
}

fn heuristic_plan_stages() -> PlanStages {
    PlanStages::heuristic(GradingConfig::default(), BridgeFinder::default())
}

fn plan_json(plan: &str) -> String {
    serde_json::json!({ "plan": plan }).to_string()
}

async fn ask(agent: &Agent, question: &str) -> Response {
    agent
        .run(&Query::new(question).unwrap(), None)
        .await
        .unwrap()
}

/// The trace's `Plan` steps: (plan, problems, implementation).
fn plans(response: &Response) -> Vec<(String, Vec<String>, Implementation)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::Plan {
                plan,
                problems,
                implementation,
            } => Some((plan.clone(), problems.clone(), implementation.clone())),
            _ => None,
        })
        .collect()
}

/// The trace's `PlanStep` steps: (variable, tool, argument, results, error).
fn plan_steps(response: &Response) -> Vec<(String, String, String, usize, Option<String>)> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::PlanStep {
                variable,
                tool,
                argument,
                results,
                error,
                ..
            } => Some((
                variable.clone(),
                tool.clone(),
                argument.clone(),
                *results,
                error.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// The trace's verdicts on `subject`.
fn verdicts(response: &Response, subject: &str) -> Vec<bool> {
    response
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            TraceStep::Verdict {
                subject: s,
                acceptable,
                ..
            } if s == subject => Some(*acceptable),
            _ => None,
        })
        .collect()
}

/// Every `[n]` of the answer has a citation pointing at a listed hit, and the report's sections
/// and the references use the same numbers.
fn assert_report_resolves(response: &Response) {
    assert_eq!(
        response.response_type,
        ResponseType::Results,
        "{response:#?}"
    );
    let answer = response.answer.as_deref().expect("an answer");
    let markers: Vec<usize> = answer
        .match_indices('[')
        .filter_map(|(i, _)| answer[i + 1..].split(']').next()?.parse().ok())
        .collect();
    assert!(
        !markers.is_empty(),
        "the report cites its sources: {answer}"
    );
    for marker in markers {
        let citation = response
            .citations
            .iter()
            .find(|c| c.marker == marker)
            .unwrap_or_else(|| panic!("[{marker}] has no source"));
        assert!(
            response.hits.iter().any(|h| h.id == citation.hit_id),
            "[{marker}] points at no listed hit"
        );
    }
    let report = response.report.as_ref().expect("a report");
    assert!(
        answer.starts_with(&format!("# {}\n", report.title)),
        "{answer}"
    );
    for section in &report.sections {
        assert!(
            answer.contains(&format!("## {}\n\n{}\n", section.heading, section.text)),
            "{answer}"
        );
    }
    for citation in &response.citations {
        assert!(
            answer.contains(&format!("- [{}] {}", citation.marker, citation.title)),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn the_heuristic_plan_runs_end_to_end_into_a_report_with_references() {
    let library = Arc::new(library());
    let agent = agent(
        library.clone(),
        heuristic_plan_stages(),
        PlanConfig::default(),
    );
    let response = ask(
        &agent,
        "What causes volcanic eruptions? How do glaciers form?",
    )
    .await;

    let plans = plans(&response);
    assert_eq!(plans.len(), 1);
    let (plan, problems, implementation) = &plans[0];
    assert!(problems.is_empty());
    assert_eq!(*implementation, Implementation::heuristic_default());
    let steps = plan_steps(&response);
    assert!(steps.len() >= 3, "the question and its two parts: {plan}");
    assert!(
        steps
            .iter()
            .all(|(_, tool, _, results, error)| tool == "search"
                && *results > 0
                && error.is_none()),
        "{steps:?}"
    );

    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_report_resolves(&response);
    let report = response.report.as_ref().unwrap();
    assert!(report.sections.len() >= 2, "{report:#?}");
    let headings: Vec<&str> = report.sections.iter().map(|s| s.heading.as_str()).collect();
    assert!(
        headings.iter().any(|h| h.contains("glaciers")),
        "a section per part: {headings:?}"
    );
    let answer = response.answer.as_deref().unwrap();
    assert!(answer.contains("## References"), "{answer}");
    assert!(
        answer.contains("Glacier") && answer.contains("magma"),
        "{answer}"
    );
}

#[tokio::test]
async fn the_steps_of_one_wave_are_in_flight_together() {
    // Each call takes a while: run one after the other, no two would be in flight at once.
    let library = Arc::new(library().delay(Duration::from_millis(200)));
    let plan =
        "#E1 = search[volcano in Sicily]\n#E2 = search[glacier ice]\n#E3 = search[#E1 eruptions]";
    let (model, _) = model(&[&plan_json(plan)]);
    let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
    let response = ask(
        &agent,
        "Tell me about the volcano in Sicily and about glacier ice",
    )
    .await;

    assert_eq!(
        library.max_in_flight(),
        2,
        "E1 and E2 together, then E3, which waits for E1: {:?}",
        library.queries()
    );
    let variables: Vec<String> = plan_steps(&response).into_iter().map(|s| s.0).collect();
    assert_eq!(variables, ["E1", "E2", "E3"]);
    assert_report_resolves(&response);
}

#[tokio::test]
async fn a_result_is_substituted_into_the_step_that_uses_it() {
    let library = Arc::new(library());
    let plan = "Plan: find the volcano of Sicily.\n#E1 = search[volcano in Sicily]\nPlan: find its eruptions.\n#E2 = search[#E1 eruptions]";
    let (model, _) = model(&[&plan_json(plan)]);
    let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
    let response = ask(&agent, "When did the volcano of Sicily last erupt?").await;

    // E1's top hit is about something its query does not name: its title is the result.
    assert_eq!(
        library.queries(),
        ["volcano in Sicily", "Mount Etna eruptions"]
    );
    let steps = plan_steps(&response);
    assert_eq!(steps[1].2, "Mount Etna eruptions");
    assert!(
        response.hits.iter().any(|h| h.id.0 == "e1"),
        "E2's hit is evidence: {:?}",
        response.hits
    );
    assert_report_resolves(&response);
    let headings: Vec<&str> = response
        .report
        .as_ref()
        .unwrap()
        .sections
        .iter()
        .map(|s| s.heading.as_str())
        .collect();
    assert!(headings.contains(&"Mount Etna eruptions"), "{headings:?}");
}

#[tokio::test]
async fn a_bad_plan_is_rejected_with_its_step_named_and_the_repaired_plan_runs() {
    let cases = [
        (
            "#E1 = search[volcano]\n#E2 = browse[glacier]",
            ["#E2", "browse"],
        ),
        (
            "#E1 = search[volcano]\n#E2 = search[#E5 glacier]",
            ["#E2", "#E5"],
        ),
        (
            "#E1 = search[#E2 volcano]\n#E2 = search[#E1 glacier]",
            ["#E1", "#E2"],
        ),
    ];
    let repaired = "#E1 = search[volcano]\n#E2 = search[glacier]";
    for (bad, named) in cases {
        let library = Arc::new(library());
        let exchanges = vec![
            Exchange {
                expect_contains: None,
                reply: plan_json(bad),
            },
            // The repair request shows the rejected plan and says what is wrong with it.
            Exchange {
                expect_contains: Some(named[1].to_owned()),
                reply: plan_json(repaired),
            },
        ];
        let (model, script) = scripted(exchanges);
        let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
        let response = ask(&agent, "Tell me about volcano and glacier").await;

        let plans = plans(&response);
        let (plan, problems, implementation) = &plans[0];
        assert_eq!(problems.len(), 1, "{bad}: {problems:?}");
        assert!(
            named.iter().all(|n| problems[0].contains(n)),
            "{bad}: {problems:?}"
        );
        assert!(
            matches!(implementation, Implementation::Llm { .. }),
            "{implementation:?}"
        );
        assert_eq!(plan, &format!("{repaired}\n"));
        assert_eq!(script.remaining(), 0);
        assert_eq!(
            library.queries(),
            ["volcano", "glacier"],
            "{bad}: only the repaired plan ran"
        );
        assert_report_resolves(&response);
    }
}

#[tokio::test]
async fn a_model_that_writes_bad_plans_twice_gets_the_heuristic_plan() {
    let library = Arc::new(library());
    let (model, script) = model(&[
        &plan_json("#E1 = search[volcano]\n#E2 = browse[glacier]"),
        &plan_json("#E1 = search[volcano]\n#E2 = search[#E1 #E2]"),
    ]);
    let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
    let response = ask(
        &agent,
        "What causes volcanic eruptions? How do glaciers form?",
    )
    .await;

    let plans = plans(&response);
    let (plan, problems, implementation) = &plans[0];
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("browse") && problems[1].contains("#E2 uses its own result"),
        "{problems:?}"
    );
    match implementation {
        Implementation::Heuristic { why } => {
            assert!(why.contains("the model's plan was rejected twice"), "{why}")
        }
        other => panic!("expected the heuristic plan, got {other:?}"),
    }
    assert!(
        plan.starts_with("Plan: Find material on the question as a whole.\n#E1 = search["),
        "{plan}"
    );
    assert_eq!(script.remaining(), 0);
    assert_report_resolves(&response);
}

#[tokio::test]
async fn a_model_that_fails_falls_back_to_the_heuristic_planner_and_says_why() {
    let library = Arc::new(library());
    let (model, _) = model(&[]);
    let agent = agent(library, model_planner(model), PlanConfig::default());
    let response = ask(&agent, "What causes volcanic eruptions?").await;
    match &plans(&response)[0].2 {
        Implementation::Heuristic { why } => assert!(why.contains("scripted failed"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_report_resolves(&response);
}

/// Counts its calls and never approves.
#[derive(Default)]
struct NeverSatisfied(AtomicU32);

#[async_trait]
impl PlanEvaluator for NeverSatisfied {
    async fn evaluate(&self, _: &str, _: &str) -> StageOutput<Verdict> {
        self.0.fetch_add(1, Ordering::SeqCst);
        StageOutput::heuristic(Verdict {
            acceptable: false,
            feedback: "search more sources".into(),
        })
    }
}

#[async_trait]
impl ReportEvaluator for NeverSatisfied {
    async fn evaluate(&self, _: &str, _: &str) -> StageOutput<Verdict> {
        self.0.fetch_add(1, Ordering::SeqCst);
        StageOutput::heuristic(Verdict {
            acceptable: false,
            feedback: "cite more".into(),
        })
    }
}

/// The heuristic planner, counting its calls and remembering the problems it was given.
#[derive(Default)]
struct CountingPlanner(AtomicU32, Mutex<Vec<Vec<String>>>);

#[async_trait]
impl Planner for CountingPlanner {
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        self.1.lock().unwrap().push(request.problems.to_vec());
        StageOutput::heuristic(HeuristicPlanner::default().plan_text(request))
    }
}

/// The heuristic writer, counting its calls and remembering the feedback it was given.
#[derive(Default)]
struct CountingWriter(AtomicU32, Mutex<Vec<Option<String>>>);

#[async_trait]
impl ReportWriter for CountingWriter {
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report> {
        self.0.fetch_add(1, Ordering::SeqCst);
        self.1
            .lock()
            .unwrap()
            .push(request.feedback.map(str::to_owned));
        StageOutput::heuristic(HeuristicReportWriter::default().report(request))
    }
}

#[tokio::test]
async fn evaluators_that_never_approve_are_bounded() {
    let library = Arc::new(library());
    let plan_judge = Arc::new(NeverSatisfied::default());
    let report_judge = Arc::new(NeverSatisfied::default());
    let planner = Arc::new(CountingPlanner::default());
    let writer = Arc::new(CountingWriter::default());
    let stages = PlanStages {
        planner: planner.clone(),
        plan_evaluator: Some(plan_judge.clone()),
        writer: writer.clone(),
        report_evaluator: Some(report_judge.clone()),
    };
    let config = PlanConfig {
        max_replans: 2,
        max_report_revisions: 1,
        ..PlanConfig::default()
    };
    let response = ask(
        &agent(library, stages, config),
        "What causes volcanic eruptions?",
    )
    .await;

    // The first plan and two replans, each judged; the last runs although it was rejected.
    assert_eq!(planner.0.load(Ordering::SeqCst), 3);
    assert_eq!(plan_judge.0.load(Ordering::SeqCst), 3);
    assert_eq!(verdicts(&response, "plan"), [false, false, false]);
    let asked = planner.1.lock().unwrap().clone();
    assert!(
        asked[0].is_empty() && asked[1][0].contains("search more sources"),
        "{asked:?}"
    );
    assert_eq!(
        plans(&response)[0].1.len(),
        2,
        "each replan's reason is a problem"
    );
    // The first report and one revision, written with the evaluator's feedback.
    assert_eq!(writer.0.load(Ordering::SeqCst), 2);
    assert_eq!(report_judge.0.load(Ordering::SeqCst), 2);
    assert_eq!(verdicts(&response, "report"), [false, false]);
    assert_eq!(
        *writer.1.lock().unwrap(),
        [None, Some("cite more".to_owned())]
    );
    assert_eq!(response.stop_reason, StopReason::Answered);
    assert_report_resolves(&response);
}

#[tokio::test]
async fn every_stage_can_ask_a_model_and_the_writer_s_markers_are_checked() {
    let library = Arc::new(library());
    let report = serde_json::json!({
        "title": "Volcanoes [and] glaciers",
        "sections": [
            {"heading": "Volcanoes", "text": "Magma rising causes eruptions [1][2]. A made-up claim [42]."},
            {"heading": "Glaciers", "text": "Snow that does not melt becomes ice [3]."},
        ]
    });
    let (model, script) = model(&[
        &plan_json(
            "Plan: volcanoes.\n#E1 = search[volcano]\nPlan: glaciers.\n#E2 = search[glacier]",
        ),
        r#"{"acceptable": true, "feedback": ""}"#,
        &report.to_string(),
        r#"{"acceptable": true}"#,
    ]);
    let agent = agent(
        library,
        PlanStages::with_model(model, GradingConfig::default(), BridgeFinder::default()),
        PlanConfig::default(),
    );
    let response = ask(&agent, "Tell me about volcano and glacier").await;

    assert_eq!(script.remaining(), 0);
    assert!(matches!(plans(&response)[0].2, Implementation::Llm { .. }));
    assert_eq!(verdicts(&response, "plan"), [true]);
    assert_eq!(verdicts(&response, "report"), [true]);
    let report = response.report.as_ref().unwrap();
    assert_eq!(report.title, "Volcanoes (and) glaciers");
    assert_eq!(report.sections.len(), 2);
    assert!(!report.sections[0].text.contains("[42]"), "{report:?}");
    let dropped = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Synthesis {
            dropped_markers,
            implementation,
            ..
        } => Some((*dropped_markers, implementation.clone())),
        _ => None,
    });
    assert!(
        matches!(dropped, Some((1, Implementation::Llm { .. }))),
        "{dropped:?}"
    );
    assert_report_resolves(&response);
}

#[tokio::test]
async fn a_bad_tool_argument_is_the_step_s_error_and_the_plan_goes_on() {
    let library = Arc::new(library());
    let (model, _) = model(&[&plan_json(
        "#E1 = search[volcano]\n#E2 = date_range[last week glacier]",
    )]);
    let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
    let response = ask(&agent, "Tell me about volcano and glacier").await;

    let steps = plan_steps(&response);
    assert_eq!(steps[1].1, "date_range");
    assert!(
        steps[1]
            .4
            .as_deref()
            .is_some_and(|e| e.contains("not a date range")),
        "{steps:?}"
    );
    assert_eq!(library.queries(), ["volcano"]);
    assert_report_resolves(&response);
}

#[tokio::test]
async fn a_spent_budget_stops_the_waves_that_remain() {
    let library = Arc::new(library());
    let (model, _) = model(&[&plan_json(
        "#E1 = search[volcano in Sicily]\n#E2 = search[#E1 eruptions]",
    )]);
    let agent = agent(library.clone(), model_planner(model), PlanConfig::default());
    let budget = Budget {
        max_backend_calls: 1,
        ..Budget::default()
    };
    let query = Query::new("When did the volcano of Sicily last erupt?")
        .unwrap()
        .with_budget(budget);
    let response = agent.run(&query, None).await.unwrap();

    assert_eq!(library.calls(), 1);
    let steps = plan_steps(&response);
    assert_eq!(steps.len(), 2);
    assert!(
        steps[1].4.as_deref().is_some_and(|e| e.contains("budget")),
        "{steps:?}"
    );
    assert_eq!(response.stop_reason, StopReason::BudgetExhausted);
    // What the first wave found is still written up.
    assert_report_resolves(&response);
}

#[tokio::test]
async fn nothing_relevant_found_is_a_message_not_a_report() {
    let library = Arc::new(library());
    let agent = agent(library, heuristic_plan_stages(), PlanConfig::default());
    let response = ask(&agent, "What is the recipe for lemon tart?").await;
    assert_eq!(response.response_type, ResponseType::Message);
    assert!(response.report.is_none() && response.answer.is_none());
    assert_eq!(response.stop_reason, StopReason::NoProgress);
}
