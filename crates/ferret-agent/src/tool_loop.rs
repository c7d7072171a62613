//! Seed 004's tool-selection loop: at each step a selector reads the question, the steps taken
//! and the most relevant results so far, and picks the next tool call or DONE. Results accumulate
//! deduplicated; the loop ends on DONE, after `max_steps`, when a call repeats an earlier one or
//! brings nothing new, or when the budget runs out.

use std::collections::HashSet;
use std::time::Instant;

use async_trait::async_trait;
use ferret_core::{Filters, Hit, Query, Response, StageOutput, StopReason, TraceStep};
use ferret_exec::{dedup_and_fuse, normalize_query, CallBudget, ExecRequest, RRF_K};
use ferret_grading::{Grades, Quality};
use ferret_llm::{PromptSource, StageModel, ToolSelectionContext, DONE_TOOL};
use ferret_query_intel::{Analysis, BridgeFinder, HeuristicRewriter, QuestionShape};
use tracing::Instrument;

use crate::gathered::Gathered;
use crate::recorder::Recorder;
use crate::refine::Ending;
use crate::tools::{ToolBox, RECENT_TOOL, SEARCH_TOOL};
use crate::Agent;

/// Settings of the tool-selection loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLoopConfig {
    /// Most tool calls, DONE excluded (seed 004: 5).
    pub max_steps: u32,
    /// Tokens of retrieved text handed to the selector and the writer, filled with the most
    /// relevant results first (about four characters a token).
    pub context_tokens: usize,
    /// Entries the recent-entries tool lists.
    pub recent_entries: usize,
}

impl Default for ToolLoopConfig {
    fn default() -> Self {
        Self { max_steps: 5, context_tokens: 2_000, recent_entries: 10 }
    }
}

/// The selector's choice: a tool and its argument, or DONE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// A tool's name, or [`DONE_TOOL`].
    pub tool: String,
    /// What the tool is given.
    pub argument: String,
    /// Why this call.
    pub reasoning: String,
}

impl ToolCall {
    /// Stop searching, for `reasoning`.
    pub fn done(reasoning: impl Into<String>) -> Self {
        Self { tool: DONE_TOOL.into(), argument: String::new(), reasoning: reasoning.into() }
    }

    /// A search over every backend.
    pub fn search(query: impl Into<String>, reasoning: impl Into<String>) -> Self {
        Self { tool: SEARCH_TOOL.into(), argument: query.into(), reasoning: reasoning.into() }
    }

    /// Did the selector choose to stop?
    pub fn is_done(&self) -> bool {
        self.tool.trim().eq_ignore_ascii_case(DONE_TOOL)
    }
}

/// What a selector sees at one step.
#[derive(Debug, Clone, Copy)]
pub struct SelectionState<'a> {
    /// The question.
    pub question: &'a str,
    /// What the analyzer made of it.
    pub analysis: &'a Analysis,
    /// This step's number, from 1.
    pub step: u32,
    /// The last step's number.
    pub max_steps: u32,
    /// One line per step taken: the call and what it found.
    pub history: &'a [String],
    /// The results so far, best first.
    pub hits: &'a [Hit],
    /// The grades of `hits`, once there are any.
    pub grades: Option<&'a Grades>,
    /// The most relevant of `hits` that fit the context's token budget.
    pub context: &'a [Hit],
    /// Queries searched so far, normalised.
    pub searched: &'a HashSet<String>,
}

/// Picks the loop's next step.
#[async_trait]
pub trait ToolSelector: Send + Sync {
    /// The next call, one of `tools` or DONE.
    async fn select(&self, tools: &ToolBox, state: &SelectionState<'_>) -> StageOutput<ToolCall>;
}

/// The selector without a model: search the question (or list the recent entries when it asks
/// what is new), refine while the results are weak, follow a bridge the results name, then DONE.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicToolSelector {
    bridge: BridgeFinder,
}

/// Words that ask for the newest entries.
const RECENCY_WORDS: &[&str] = &["recent", "recently", "latest", "lately", "newest", "new"];

impl HeuristicToolSelector {
    /// The choice, synchronously.
    pub fn choose(&self, tools: &ToolBox, state: &SelectionState<'_>) -> ToolCall {
        let fresh = |query: &str| !state.searched.contains(&normalize_query(query));
        let Some(grades) = state.grades else {
            let query = HeuristicRewriter.rewritten(state.question, state.analysis);
            let asks_recent = ferret_core::text::words(state.question).any(|w| RECENCY_WORDS.contains(&w.as_str()));
            return match tools.find(RECENT_TOOL) {
                Some(recent) if asks_recent => ToolCall {
                    tool: recent.name.clone(),
                    argument: query,
                    reasoning: "the question asks for what is recent".into(),
                },
                _ => ToolCall::search(query, "first, the question as asked"),
            };
        };
        if grades.quality == Quality::Low {
            return match &grades.suggestion {
                Some(s) if fresh(&s.query) => ToolCall::search(&s.query, format!("the results are weak: {}", s.strategy.as_str())),
                _ => ToolCall::done("the results are weak and no other query is left to try"),
            };
        }
        let shape = self.bridge.shape(state.question, state.analysis);
        if shape != QuestionShape::Simple {
            if let Some(hop) = self.bridge.hop(state.question, shape, state.hits, state.searched, normalize_query) {
                return ToolCall::search(hop.query, format!("the results lead to {}", hop.entity));
            }
        }
        ToolCall::done("the results cover the question")
    }
}

#[async_trait]
impl ToolSelector for HeuristicToolSelector {
    async fn select(&self, tools: &ToolBox, state: &SelectionState<'_>) -> StageOutput<ToolCall> {
        StageOutput::heuristic(self.choose(tools, state))
    }
}

/// The selector that asks a model (seed 004's AgentToolSelector), with structured output. When
/// the model fails, the loop falls back to one plain search of the question, then DONE.
#[derive(Debug, Clone)]
pub struct LlmToolSelector {
    model: StageModel,
}

impl LlmToolSelector {
    /// A selector asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl ToolSelector for LlmToolSelector {
    async fn select(&self, tools: &ToolBox, state: &SelectionState<'_>) -> StageOutput<ToolCall> {
        let context = ToolSelectionContext {
            question: state.question.to_owned(),
            tools: tools.descriptions(),
            history: state.history.to_vec(),
            sources: PromptSource::numbered(state.context),
            iteration: state.step,
            max_iterations: state.max_steps,
        };
        let accept = |reply: ferret_llm::ToolChoiceReply| {
            if reply.is_done() {
                return Ok(ToolCall::done(reply.reasoning));
            }
            let tool = tools.find(&reply.tool).ok_or_else(|| format!("`{}` is not one of the tools", reply.tool))?;
            Ok(ToolCall { tool: tool.name.clone(), argument: reply.argument, reasoning: reply.reasoning })
        };
        let fallback = async {
            let question = HeuristicRewriter.rewritten(state.question, state.analysis);
            let call = if state.searched.contains(&normalize_query(&question)) {
                ToolCall::done("the selector failed, and the plain search it falls back to was done")
            } else {
                ToolCall::search(question, "the selector failed: one plain search of the question instead")
            };
            StageOutput::heuristic(call)
        };
        self.model.run(&context, 300, accept, fallback).await
    }
}

/// The hits to hand a model: the most relevant first (not the latest), as many as fit in
/// `tokens` at about four characters a token; a hit too long for what is left is skipped.
pub fn most_relevant_within(hits: &[Hit], grades: Option<&Grades>, tokens: usize) -> Vec<Hit> {
    let relevance = |i: usize| grades.and_then(|g| g.per_hit.get(i)).map_or(0.0, |g| g.relevance);
    let mut order: Vec<usize> = (0..hits.len()).collect();
    // Stable: equal relevance keeps the search's ranking.
    order.sort_by(|&a, &b| relevance(b).total_cmp(&relevance(a)));
    let mut left = tokens;
    let mut chosen = Vec::new();
    for i in order {
        let cost = (hits[i].title.len() + hits[i].text.len()).div_ceil(4);
        if cost <= left {
            left -= cost;
            chosen.push(hits[i].clone());
        }
    }
    chosen
}

impl Agent {
    /// Run the tool-selection loop for `query` and answer from what it gathered.
    pub(crate) async fn run_tool_loop(&self, query: &Query, analysis: &Analysis, mut rec: Recorder, started: Instant) -> Response {
        let question = query.text();
        let budget = &query.budget;
        let config = self.config.tool_loop;
        let tools = ToolBox::new(&self.executor, config.recent_entries);
        let calls = CallBudget::new(budget.max_backend_calls, budget.wall_time);
        rec.step(TraceStep::Strategy {
            chosen: "tool_loop".into(),
            reason: format!("tools: {}; at most {} steps", tools.names().join(", "), config.max_steps),
        });
        let mut gathered = Gathered::default();
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
            if calls.is_exhausted() || started.elapsed() >= budget.wall_time || rec.llm_tokens() >= budget.max_tokens {
                break StopReason::BudgetExhausted;
            }
            let context = most_relevant_within(&hits, grades.as_ref(), config.context_tokens);
            let state = SelectionState {
                question,
                analysis,
                step,
                max_steps: config.max_steps,
                history: &history,
                hits: &hits,
                grades: grades.as_ref(),
                context: &context,
                searched: &searched,
            };
            let selection = self.stages.tool_selector.select(&tools, &state).instrument(tracing::info_span!("select", step)).await;
            let (call, implementation) = rec.stage(selection);
            let tool_step = |query: String, results: usize, new_results: usize, error: Option<String>| TraceStep::ToolStep {
                step,
                tool: call.tool.clone(),
                reasoning: call.reasoning.clone(),
                query,
                results,
                new_results,
                error,
                implementation: implementation.clone(),
            };
            if call.is_done() {
                rec.step(tool_step(String::new(), 0, 0, None));
                let covered = grades.as_ref().is_some_and(|g| g.quality != Quality::Low);
                break if covered { StopReason::Answered } else { StopReason::NoProgress };
            }
            let request = match tools.request(&call.tool, &call.argument, &query.filters, question) {
                Ok(request) => request,
                Err(error) => {
                    // The selector sees the error in the history and may correct itself; the same
                    // bad call twice is a repeat like any other.
                    let key = (format!("{}[{}]", call.tool, call.argument), Filters::default(), None);
                    let repeated = calls_made.contains(&key);
                    calls_made.push(key);
                    rec.step(tool_step(call.argument.clone(), 0, 0, Some(error.to_string())));
                    history.push(format!("{}[{}]: failed, {error}", call.tool, call.argument));
                    if repeated {
                        break StopReason::NoProgress;
                    }
                    continue;
                }
            };
            let key = (normalize_query(&request.query), request.filters.clone(), request.backend.clone());
            if let Some(earlier) = calls_made.iter().position(|made| *made == key) {
                let error = format!("repeats step {}", earlier + 1);
                rec.step(tool_step(request.query.clone(), 0, 0, Some(error)));
                break StopReason::NoProgress;
            }
            calls_made.push(key);
            searched.insert(normalize_query(&request.query));
            let exec = ExecRequest {
                queries: std::slice::from_ref(&request.query),
                filters: &request.filters,
                limit: self.config.hits_per_call.max(query.limit),
                call_deadline: budget.call_deadline,
                backend: request.backend.as_deref(),
            };
            let outcome = self.executor.execute_on(&exec, &calls).instrument(tracing::info_span!("exec", step)).await;
            let budget_spent = outcome.budget_exhausted;
            let (found, new_results) = gathered.absorb(outcome, step, &mut rec);
            let results = found.len();
            lists.push(found);
            hits = dedup_and_fuse(&lists, RRF_K);
            let graded = self.stages.grader.grade(question, &hits).instrument(tracing::info_span!("grading")).await;
            let (graded, grader) = rec.stage(graded);
            rec.step(graded.trace_step(step, grader));
            grades = Some(graded);
            rec.step(tool_step(request.query.clone(), results, new_results, None));
            history.push(format!("{}[{}]: {results} results, {new_results} new", request.tool, request.query));
            if budget_spent {
                break StopReason::BudgetExhausted;
            }
            if step > 1 && new_results == 0 {
                break StopReason::NoProgress;
            }
        };

        let grades = grades.unwrap_or_else(|| Grades { per_hit: Vec::new(), quality: Quality::Low, should_retry: false, suggestion: None });
        let (shown, relevant) = if grades.quality == Quality::Low {
            (Vec::new(), Vec::new())
        } else {
            let kept: Vec<Hit> =
                hits.iter().zip(&grades.per_hit).filter(|(_, g)| g.kept).map(|(h, _)| h.clone()).take(query.limit).collect();
            let kept_grades: Vec<_> = grades.per_hit.iter().filter(|g| g.kept).take(query.limit).cloned().collect();
            let kept_graded = Grades { per_hit: kept_grades, ..grades.clone() };
            let context = most_relevant_within(&kept, Some(&kept_graded), config.context_tokens);
            (kept, context)
        };
        let answer = self.answer(question, &relevant, &mut rec).await;
        self.finish(Ending { stop_reason, hits: shown, answer, report: None }, gathered, started, rec)
    }
}

#[cfg(test)]
mod tests {
    use ferret_grading::HitGrade;

    use super::*;

    fn hit(id: &str, chars: usize) -> Hit {
        Hit::new(id, "", "x".repeat(chars), 1.0, "b")
    }

    fn graded(relevance: &[f32]) -> Grades {
        let per_hit = relevance
            .iter()
            .enumerate()
            .map(|(i, &r)| HitGrade { hit_id: format!("{i}").as_str().into(), relevance: r, kept: true, good: true, reason: String::new() })
            .collect();
        Grades { per_hit, quality: Quality::High, should_retry: false, suggestion: None }
    }

    #[test]
    fn the_context_keeps_the_most_relevant_entries_not_the_latest() {
        let hits = [hit("old-weak", 400), hit("best", 400), hit("late-good", 400), hit("huge", 40_000), hit("small", 40)];
        let grades = graded(&[0.1, 0.9, 0.6, 0.95, 0.2]);
        let ids: Vec<String> = most_relevant_within(&hits, Some(&grades), 250).into_iter().map(|h| h.id.0).collect();
        // 100 tokens each: the two most relevant that fit, then what still fits; "huge" never does.
        assert_eq!(ids, ["best", "late-good", "small"]);
    }
}
