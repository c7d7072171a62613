//! The planner strategy (ReWOO): a planner writes the whole plan up front as `#En =
//! Tool[argument]` steps whose arguments may use earlier steps' results; the plan is checked
//! before anything runs (a bad plan gets one repair request, then the heuristic plan), an
//! optional evaluator may send it back, its steps run wave by wave (the steps of a wave
//! concurrently), and a writer turns the graded evidence into a report with sections and
//! references, which an optional evaluator may send back too. Everything is in the trace, and a
//! [`PlanRecord`] gathers what the run found as it goes.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::{ToolDescription, Verdict};
use async_trait::async_trait;
use ferret_core::text::{one_line, term_set};
use ferret_core::{Hit, HitId, Implementation, Report, SearchQuery, StopReason, TraceStep};
use ferret_exec::{dedup_and_fuse, normalize_query, ExecRequest, RRF_K};
use ferret_grading::{LinkedRelevance, Quality};
use ferret_query_intel::{Analysis, BridgeFinder};
use ferret_synthesis::Answer;
use tracing::Instrument;

use super::SearchStrategy;
use crate::planner::{
    substitute, without_references, HeuristicPlanner, Plan, PlanRecord, PlanRequest, PlanStep,
    RecordedStep, RecordedVerdict,
};
use crate::run::{elapsed_ms, Ending, SearchRun};
use crate::tools::{ToolBox, ToolRequest, SEARCH_TOOL};
use ferret_synthesis::{
    addresses_the_agent, finalize_report as finalize, ReportRequest, StepEvidence,
};

/// Plan, run the plan as a dependency graph, write a report.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlanStrategy;

#[async_trait]
impl SearchStrategy for PlanStrategy {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        self.run_recorded(run).await.0
    }
}

/// A plan that passed validation, and who wrote it.
struct Drafted {
    plan: Plan,
    implementation: Implementation,
}

/// What the planning phase works with.
struct Planning<'a> {
    question: &'a str,
    analysis: &'a Analysis,
    tools: Vec<ToolDescription>,
    names: Vec<&'a str>,
    max_steps: usize,
    max_tokens: u64,
}

/// A step ready to run: its request, or why it cannot run.
struct Prepared<'a> {
    step: &'a PlanStep,
    argument: String,
    request: Result<ToolRequest, String>,
}

impl PlanStrategy {
    /// Plan, run the plan and write the report; how the search ended and the record of the run.
    pub(crate) async fn run_recorded(&self, run: &mut SearchRun<'_>) -> (Ending, PlanRecord) {
        let question = run.question();
        let query = run.query;
        let tools = ToolBox::new(run.executor, run.config.tool_loop.recent_entries);
        let mut record = PlanRecord {
            question: question.to_owned(),
            limit: query.limit,
            plan: String::new(),
            problems: Vec::new(),
            steps: Vec::new(),
            verdicts: Vec::new(),
            budget_exhausted: false,
        };
        let analysis = run.analysis.clone();
        let planning = Planning {
            question,
            analysis: &analysis,
            tools: tools.descriptions(),
            names: tools.names(),
            max_steps: run.config.plan.max_steps.max(1),
            max_tokens: query.budget.max_tokens,
        };
        let plan = settle_plan(run, &planning, &mut record)
            .instrument(tracing::info_span!("planning"))
            .await;

        let mut runs: Vec<RecordedStep> = Vec::new();
        let mut results: HashMap<String, String> = HashMap::new();
        let mut exhausted = false;
        for (number, wave) in plan.waves().iter().enumerate() {
            exhausted |=
                run.calls.is_exhausted() || run.started.elapsed() >= query.budget.wall_time;
            let prepared: Vec<Prepared<'_>> = wave
                .iter()
                .map(|&i| {
                    let step = &plan.steps[i];
                    let argument = substitute(&step.argument, &results);
                    let request = if exhausted {
                        Err("not run: the budget ran out".to_owned())
                    } else if let Some(empty) = step
                        .depends_on
                        .iter()
                        .find(|d| results.get(d.as_str()).is_none_or(|r| r.is_empty()))
                    {
                        Err(format!(
                            "not run: #{empty} found nothing to use in its place"
                        ))
                    } else {
                        tools
                            .request(&step.tool, &argument, &query.filters, question)
                            .map_err(|e| e.to_string())
                    };
                    Prepared {
                        step,
                        argument,
                        request,
                    }
                })
                .collect();
            let (limit, cache) = (run.hits_per_call(), run.cache_use());
            let in_forms: Vec<Option<[SearchQuery; 1]>> = prepared
                .iter()
                .map(|p| p.request.as_ref().ok().map(|r| [run.in_forms(&r.query)]))
                .collect();
            let (executor, calls) = (run.executor, &run.calls);
            let outcomes = futures::future::join_all(prepared.iter().zip(&in_forms).map(
                |(p, queries)| async move {
                    let (Ok(request), Some(queries)) = (&p.request, queries) else {
                        return (None, 0);
                    };
                    let step_started = Instant::now();
                    let exec = ExecRequest {
                        cache,
                        queries,
                        filters: &request.filters,
                        options: &query.options,
                        limit,
                        call_deadline: query.budget.call_deadline,
                        backend: request.backend.as_deref(),
                    };
                    let outcome = executor.execute_on(&exec, calls).await;
                    (Some(outcome), elapsed_ms(step_started))
                },
            ))
            .instrument(tracing::info_span!("wave", number = number + 1))
            .await;
            for (p, (outcome, duration_ms)) in prepared.into_iter().zip(outcomes) {
                let (hits, new_results) = match outcome {
                    Some(outcome) => {
                        let round = run.absorb(outcome, runs.len() as u32 + 1);
                        exhausted |= round.budget_exhausted;
                        (round.hits, round.new_hits)
                    }
                    None => (Vec::new(), 0),
                };
                let query_text = p.request.as_ref().ok().map(|r| r.query.clone());
                let result = query_text
                    .as_deref()
                    .map(|q| step_result(&run.stages.bridge, q, &hits))
                    .unwrap_or_default();
                results.insert(p.step.variable.clone(), result);
                let step = RecordedStep {
                    variable: p.step.variable.clone(),
                    tool: p
                        .request
                        .as_ref()
                        .map_or_else(|_| p.step.tool.clone(), |r| r.tool.clone()),
                    argument: p.argument,
                    reasoning: p.step.reasoning.clone(),
                    query: query_text,
                    duration_ms,
                    error: p.request.err(),
                    hits,
                };
                run.rec.step(plan_step_trace(&step, new_results));
                runs.push(step);
            }
        }
        record.budget_exhausted = exhausted;
        record.steps = runs;
        let ending = conclude(run, query.budget.max_tokens, &mut record).await;
        (ending, record)
    }
}

/// A plan that passed validation and, when there is a plan evaluator, its review (at most
/// `max_replans` replans); recorded in the trace and in `record`.
async fn settle_plan(
    run: &mut SearchRun<'_>,
    planning: &Planning<'_>,
    record: &mut PlanRecord,
) -> Plan {
    let mut problems: Vec<String> = Vec::new();
    let mut drafted = draft_plan(run, planning, None, &[], &mut problems).await;
    let stages = run.stages;
    if let Some(evaluator) = &stages.plan.plan_evaluator {
        let mut replans = 0;
        while run.rec.llm_tokens() < planning.max_tokens {
            let text = drafted.plan.render();
            let verdict = evaluator
                .evaluate(planning.question, &text)
                .instrument(tracing::info_span!("plan_evaluation"))
                .await;
            let (verdict, implementation) = run.rec.stage(verdict);
            record_verdict("plan", &verdict, implementation, run, record);
            if verdict.acceptable || replans >= run.config.plan.max_replans {
                break;
            }
            replans += 1;
            let problem = format!(
                "the plan evaluator sent the plan back: {}",
                verdict.feedback
            );
            problems.push(problem.clone());
            drafted = draft_plan(run, planning, Some(&text), &[problem], &mut problems).await;
        }
    }
    let text = drafted.plan.render();
    run.rec.step(TraceStep::Plan {
        plan: text.clone(),
        problems: problems.clone(),
        implementation: drafted.implementation,
    });
    record.plan = text;
    record.problems = problems;
    drafted.plan
}

/// Ask the planner for a plan (a corrected one when `previous` is set) and check it; a rejected
/// plan gets one repair request, and when that is rejected too the heuristic planner's plan
/// runs. Every rejection is added to `trail`.
async fn draft_plan(
    run: &mut SearchRun<'_>,
    planning: &Planning<'_>,
    previous: Option<&str>,
    problems: &[String],
    trail: &mut Vec<String>,
) -> Drafted {
    let request = PlanRequest {
        question: planning.question,
        analysis: planning.analysis,
        tools: &planning.tools,
        max_steps: planning.max_steps,
        previous_plan: previous,
        problems,
    };
    let stages = run.stages;
    let planner = &stages.plan.planner;
    let (text, implementation) = run.rec.stage(planner.plan(&request).await);
    let first = match Plan::parse_any(&text, &planning.names, planning.max_steps) {
        Ok(plan) => {
            return Drafted {
                plan,
                implementation,
            }
        }
        Err(error) => error.to_string(),
    };
    trail.push(first.clone());
    let by_model = matches!(implementation, Implementation::Llm { .. });
    let second = if run.rec.llm_tokens() < planning.max_tokens {
        let repair_problems = [first.clone()];
        let repair = PlanRequest {
            previous_plan: Some(&text),
            problems: &repair_problems,
            ..request
        };
        let (text, implementation) = run.rec.stage(planner.plan(&repair).await);
        match Plan::parse_any(&text, &planning.names, planning.max_steps) {
            Ok(plan) => {
                return Drafted {
                    plan,
                    implementation,
                }
            }
            Err(error) => {
                trail.push(error.to_string());
                error.to_string()
            }
        }
    } else {
        "no tokens were left for a repair request".to_owned()
    };
    let whose = if by_model {
        "the model's plan"
    } else {
        "the planner's plan"
    };
    let why = format!("{whose} was rejected twice: {first}; then {second}");
    let fallback = HeuristicPlanner::new(stages.bridge).plan_text(&request);
    let plan =
        Plan::parse(&fallback, &planning.names, planning.max_steps).unwrap_or_else(|error| {
            tracing::warn!(%error, "the heuristic plan was rejected; searching the question alone");
            let question = without_references(&one_line(planning.question));
            Plan {
                steps: vec![PlanStep::new("E1", SEARCH_TOOL, question, None)],
            }
        });
    Drafted {
        plan,
        implementation: Implementation::Heuristic { why },
    }
}

/// Grade what the steps of `record` found, write the report (revised at most
/// `max_report_revisions` times when a report evaluator sends it back) and say how the search
/// ended.
async fn conclude(run: &mut SearchRun<'_>, max_tokens: u64, record: &mut PlanRecord) -> Ending {
    let question = record.question.clone();
    let question = question.as_str();
    let evidence = evidence(run, question, record.limit.max(1), &record.steps)
        .instrument(tracing::info_span!("grading"))
        .await;
    let steps: Vec<StepEvidence> = record
        .steps
        .iter()
        .filter_map(|step| {
            let query = step.query.clone()?;
            let hits: Vec<usize> = step
                .hits
                .iter()
                .filter_map(|h| {
                    evidence
                        .iter()
                        .position(|e| e.backend == h.backend && e.id == h.id)
                })
                .collect();
            (!hits.is_empty()).then(|| StepEvidence {
                variable: step.variable.clone(),
                tool: step.tool.clone(),
                query,
                reasoning: step.reasoning.clone(),
                hits,
            })
        })
        .collect();
    let stages = run.stages;
    let mut written: Option<(Report, Answer)> = None;
    if !evidence.is_empty() {
        let mut feedback: Option<String> = None;
        let mut revisions = 0;
        loop {
            let request = ReportRequest {
                question,
                plan: &record.plan,
                steps: &steps,
                evidence: &evidence,
                feedback: feedback.as_deref(),
                brief: None,
            };
            let report = stages
                .plan
                .writer
                .write(&request)
                .instrument(tracing::info_span!("writing"))
                .await;
            let (report, implementation) = run.rec.stage(report);
            let Some((report, answer)) = finalize(report, &evidence) else {
                break;
            };
            run.rec.step(answer.trace_step(implementation));
            let rendered = answer.text.clone();
            written = Some((report, answer));
            let Some(evaluator) = &stages.plan.report_evaluator else {
                break;
            };
            if run.rec.llm_tokens() >= max_tokens {
                break;
            }
            let verdict = evaluator
                .evaluate(question, &rendered)
                .instrument(tracing::info_span!("report_evaluation"))
                .await;
            let (verdict, implementation) = run.rec.stage(verdict);
            record_verdict("report", &verdict, implementation, run, record);
            if verdict.acceptable || revisions >= run.config.plan.max_report_revisions {
                break;
            }
            revisions += 1;
            feedback = Some(verdict.feedback);
        }
    }
    let stop_reason = if record.budget_exhausted {
        StopReason::BudgetExhausted
    } else if written.is_some() {
        StopReason::Answered
    } else {
        StopReason::NoProgress
    };
    let (report, answer) = written.map_or((None, None), |(report, answer)| {
        (Some(report), Some(answer))
    });
    let hits = if answer.is_some() {
        evidence
    } else {
        Vec::new()
    };
    Ending {
        stop_reason,
        hits,
        answer,
        report,
        model_file: None,
        message: None,
    }
}

/// The hits the report is written from, best first, at most `limit`: every step's hits fused,
/// each kept when the grader keeps it for the question or for the query of a step that found it
/// (a step that follows a name finds documents about that name, which share few words with the
/// question). Nothing when every grading found the results weak.
async fn evidence(
    run: &mut SearchRun<'_>,
    question: &str,
    limit: usize,
    steps: &[RecordedStep],
) -> Vec<Hit> {
    let fused = dedup_and_fuse(steps.iter().map(|r| &r.hits), RRF_K);
    if fused.is_empty() {
        return Vec::new();
    }
    let stages = run.stages;
    let (mut grades, implementation) = run.rec.stage(stages.grader.grade(question, &fused).await);
    let asked = normalize_query(question);
    let mut graded: HashSet<String> = HashSet::from([asked]);
    for step in steps {
        let Some(query) = &step.query else { continue };
        if step.hits.is_empty() || !graded.insert(normalize_query(query)) {
            continue;
        }
        let (own, _) = run.rec.stage(stages.grader.grade(query, &step.hits).await);
        let kept: HashSet<&HitId> = own
            .per_hit
            .iter()
            .filter(|g| g.kept)
            .map(|g| &g.hit_id)
            .collect();
        if own.quality > grades.quality {
            grades.quality = own.quality;
            grades.should_retry = false;
            grades.suggestion = None;
        }
        for (hit, grade) in fused.iter().zip(grades.per_hit.iter_mut()) {
            let found_here = step
                .hits
                .iter()
                .any(|h| h.backend == hit.backend && h.id == hit.id);
            if found_here && kept.contains(&hit.id) && !grade.kept {
                grade.keep_as(LinkedRelevance::PlanStep {
                    query: query.clone(),
                });
            }
        }
    }
    run.rec.step(grades.trace_step(1, implementation));
    if grades.quality == Quality::Low {
        return Vec::new();
    }
    // A result that speaks to the AI reading it is not evidence for a report either.
    fused
        .into_iter()
        .zip(&grades.per_hit)
        .filter(|(h, g)| g.kept && !addresses_the_agent(&h.text))
        .map(|(h, _)| h)
        .take(limit)
        .collect()
}

/// Record an evaluator's verdict in the trace and in the run's record.
fn record_verdict(
    subject: &str,
    verdict: &Verdict,
    implementation: Implementation,
    run: &mut SearchRun<'_>,
    record: &mut PlanRecord,
) {
    run.rec.step(TraceStep::Verdict {
        subject: subject.to_owned(),
        acceptable: verdict.acceptable,
        feedback: verdict.feedback.clone(),
        implementation,
    });
    record.verdicts.push(RecordedVerdict {
        subject: subject.to_owned(),
        acceptable: verdict.acceptable,
        feedback: verdict.feedback.clone(),
    });
}

fn plan_step_trace(step: &RecordedStep, new_results: usize) -> TraceStep {
    TraceStep::PlanStep {
        variable: step.variable.clone(),
        tool: step.tool.clone(),
        argument: step.argument.clone(),
        results: step.hits.len(),
        new_results,
        duration_ms: step.duration_ms,
        error: step.error.clone(),
    }
}

/// A step's result as later steps' arguments see it: a few words usable inside a query.
///
/// When the top hit is about something the step's query does not already name (its title's
/// words are not all in the query), the step found that thing: the result is the top hit's
/// title (`volcanoes of Sicily` → `Mount Etna`). When the top hit is about what the query names,
/// the answer is a name inside the results: the best name `bridge` reads in them that the query
/// does not contain (`director of The Visit` → `M. Night Shyamalan`), or the title again when
/// they name nothing new. Empty when the step found nothing.
fn step_result(bridge: &BridgeFinder, query: &str, hits: &[Hit]) -> String {
    let Some(top) = hits.first() else {
        return String::new();
    };
    let title = one_line(&top.title);
    let title_terms = term_set(&title);
    if !title_terms.is_subset(&term_set(query)) {
        return title;
    }
    bridge
        .bridge_entities(query, &[], hits)
        .into_iter()
        .next()
        .unwrap_or(title)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn hit(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "b")
    }

    #[test]
    fn a_step_result_is_the_thing_found_or_the_name_it_leads_to() {
        let etna = [hit(
            "1",
            "Mount Etna",
            "Mount Etna is an active volcano in Sicily.",
        )];
        assert_eq!(
            step_result(&BridgeFinder::default(), "volcanoes of Sicily", &etna),
            "Mount Etna"
        );
        let visit = [hit(
            "2",
            "The Visit (2015 film)",
            "The Visit is a 2015 horror film written and directed by Night Shyamalan.",
        )];
        assert_eq!(
            step_result(
                &BridgeFinder::default(),
                "director of The Visit 2015 film",
                &visit
            ),
            "Night Shyamalan"
        );
        assert_eq!(step_result(&BridgeFinder::default(), "anything", &[]), "");
    }
}
