//! The tool-selection loop: at each step a selector reads the question, the steps taken and the
//! most relevant results so far, and picks the next tool call or DONE. Results accumulate
//! deduplicated; the loop ends on DONE, after `max_steps`, when a call repeats an earlier one or
//! brings nothing new, or when the budget runs out.

use std::collections::HashSet;

use async_trait::async_trait;
use ferret_core::{Filters, Hit, StopReason, TraceStep};
use ferret_exec::{dedup_and_fuse, normalize_query, ExecRequest, RRF_K};
use ferret_grading::{Grades, Quality};
use tracing::Instrument;

use super::SearchStrategy;
use crate::run::{Ending, SearchRun};
use crate::tool_selection::{most_relevant_within, SelectionState};
use crate::tools::ToolBox;

/// A selector picks each tool call, or DONE, up to [`ToolLoopConfig::max_steps`](crate::ToolLoopConfig).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolLoop;

#[async_trait]
impl SearchStrategy for ToolLoop {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        let question = run.question();
        let query = run.query;
        let config = run.config.tool_loop;
        let tools = ToolBox::new(run.executor, config.recent_entries);
        run.rec.step(TraceStep::Tools {
            names: tools.names().iter().map(|n| n.to_string()).collect(),
            max_steps: config.max_steps,
        });
        let mut lists: Vec<Vec<Hit>> = Vec::new();
        let mut hits: Vec<Hit> = Vec::new();
        let mut grades: Option<Grades> = None;
        let mut history: Vec<String> = Vec::new();
        let mut searched: HashSet<String> = HashSet::new();
        // What each call searched: a call equal to an earlier one ends the loop.
        let mut calls_made: Vec<(String, Filters, Option<String>)> = Vec::new();

        let stop_reason = loop {
            let step = history.len() as u32 + 1;
            if step > config.max_steps {
                break StopReason::MaxAttempts;
            }
            if run.budget_spent() {
                break StopReason::BudgetExhausted;
            }
            let context = most_relevant_within(&hits, grades.as_ref(), config.context_tokens);
            let state = SelectionState {
                question,
                analysis: &run.analysis,
                step,
                max_steps: config.max_steps,
                history: &history,
                hits: &hits,
                grades: grades.as_ref(),
                context: &context,
                searched: &searched,
            };
            let selection = run
                .stages
                .tool_selector
                .select(&tools, &state)
                .instrument(tracing::info_span!("select", step))
                .await;
            let (call, implementation) = run.rec.stage(selection);
            let tool_step =
                |query: String, results: usize, new_results: usize, error: Option<String>| {
                    TraceStep::ToolStep {
                        step,
                        tool: call.tool.clone(),
                        reasoning: call.reasoning.clone(),
                        query,
                        results,
                        new_results,
                        error,
                        implementation: implementation.clone(),
                    }
                };
            if call.is_done() {
                run.rec.step(tool_step(String::new(), 0, 0, None));
                let covered = grades.as_ref().is_some_and(|g| g.quality != Quality::Low);
                break if covered {
                    StopReason::Answered
                } else {
                    StopReason::NoProgress
                };
            }
            let request = match tools.request(&call.tool, &call.argument, &query.filters, question)
            {
                Ok(request) => request,
                Err(error) => {
                    // The selector sees the error in the history and may correct itself; the same
                    // bad call twice is a repeat like any other.
                    let key = (
                        format!("{}[{}]", call.tool, call.argument),
                        Filters::default(),
                        None,
                    );
                    let repeated = calls_made.contains(&key);
                    calls_made.push(key);
                    run.rec.step(tool_step(
                        call.argument.clone(),
                        0,
                        0,
                        Some(error.to_string()),
                    ));
                    history.push(format!("{}[{}]: failed, {error}", call.tool, call.argument));
                    if repeated {
                        break StopReason::NoProgress;
                    }
                    continue;
                }
            };
            let key = (
                normalize_query(&request.query),
                request.filters.clone(),
                request.backend.clone(),
            );
            if let Some(earlier) = calls_made.iter().position(|made| *made == key) {
                let error = format!("repeats step {}", earlier + 1);
                run.rec
                    .step(tool_step(request.query.clone(), 0, 0, Some(error)));
                break StopReason::NoProgress;
            }
            calls_made.push(key);
            searched.insert(normalize_query(&request.query));
            let queries = [run.in_forms(&request.query)];
            let exec = ExecRequest {
                cache: run.cache_use(),
                queries: &queries,
                filters: &request.filters,
                options: &query.options,
                limit: run.hits_per_call(),
                call_deadline: query.budget.call_deadline,
                backend: request.backend.as_deref(),
            };
            let round = run.execute(&exec, step).await;
            let budget_spent = round.budget_exhausted;
            let new_results = round.new_hits;
            let results = round.hits.len();
            lists.push(round.hits);
            hits = dedup_and_fuse(&lists, RRF_K);
            let (graded, grader) = run.grade(question, &hits).await;
            run.rec.step(graded.trace_step(step, grader));
            grades = Some(graded);
            run.rec
                .step(tool_step(request.query.clone(), results, new_results, None));
            history.push(format!(
                "{}[{}]: {results} results, {new_results} new",
                request.tool, request.query
            ));
            if budget_spent {
                break StopReason::BudgetExhausted;
            }
            if step > 1 && new_results == 0 {
                break StopReason::NoProgress;
            }
        };

        let grades = grades.unwrap_or_else(|| Grades {
            per_hit: Vec::new(),
            quality: Quality::Low,
            should_retry: false,
            suggestion: None,
        });
        let (shown, relevant) = if grades.quality == Quality::Low {
            (Vec::new(), Vec::new())
        } else {
            let kept: Vec<Hit> = hits
                .iter()
                .zip(&grades.per_hit)
                .filter(|(_, g)| g.kept)
                .map(|(h, _)| h.clone())
                .take(query.limit)
                .collect();
            let kept_grades: Vec<_> = grades
                .per_hit
                .iter()
                .filter(|g| g.kept)
                .take(query.limit)
                .cloned()
                .collect();
            let kept_graded = Grades {
                per_hit: kept_grades,
                ..grades.clone()
            };
            let context = most_relevant_within(&kept, Some(&kept_graded), config.context_tokens);
            (kept, context)
        };
        let answer = run.answer(question, &relevant).await;
        Ending {
            stop_reason,
            hits: shown,
            answer,
            report: None,
            model_file: None,
            message: None,
        }
    }
}
