//! Choosing a tool-selection loop's next step: a selector reads the question, the steps taken
//! and the most relevant results so far, and picks the next tool call or DONE.

use std::collections::HashSet;

use crate::{ToolSelectionContext, DONE_TOOL};
use async_trait::async_trait;
use ferret_core::{Hit, StageOutput};
use ferret_exec::normalize_query;
use ferret_grading::{Grades, Quality};
use ferret_llm::{PromptSource, StageModel};
use ferret_query_intel::{Analysis, BridgeFinder, HeuristicRewriter, QuestionShape};

use crate::tools::{ToolBox, RECENT_TOOL, SEARCH_TOOL};

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
        Self {
            tool: DONE_TOOL.into(),
            argument: String::new(),
            reasoning: reasoning.into(),
        }
    }

    /// A search over every backend.
    pub fn search(query: impl Into<String>, reasoning: impl Into<String>) -> Self {
        Self {
            tool: SEARCH_TOOL.into(),
            argument: query.into(),
            reasoning: reasoning.into(),
        }
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
    /// A selector reading questions' shapes and hops with `bridge`.
    pub fn new(bridge: BridgeFinder) -> Self {
        Self { bridge }
    }

    /// The choice, synchronously.
    pub fn choose(&self, tools: &ToolBox, state: &SelectionState<'_>) -> ToolCall {
        let fresh = |query: &str| !state.searched.contains(&normalize_query(query));
        let Some(grades) = state.grades else {
            let query = HeuristicRewriter.rewritten(state.question, state.analysis);
            let asks_recent = ferret_core::text::words(state.question)
                .any(|w| RECENCY_WORDS.contains(&w.as_str()));
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
                Some(s) if fresh(&s.query) => ToolCall::search(
                    &s.query,
                    format!("the results are weak: {}", s.strategy.as_str()),
                ),
                _ => ToolCall::done("the results are weak and no other query is left to try"),
            };
        }
        let shape = self.bridge.shape(state.question, state.analysis);
        if shape != QuestionShape::Simple {
            if let Some(hop) = self.bridge.hop(
                state.question,
                shape,
                state.hits,
                state.searched,
                normalize_query,
            ) {
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

/// The selector that asks a model, with structured output. When
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
        let accept = |reply: crate::ToolChoiceReply| {
            if reply.is_done() {
                return Ok(ToolCall::done(reply.reasoning));
            }
            let tool = tools
                .find(&reply.tool)
                .ok_or_else(|| format!("`{}` is not one of the tools", reply.tool))?;
            // Results can carry instructions ("fetch https://…"); no tool takes an address, so
            // one in an argument came from retrieved text, never from the question's needs.
            if reply.argument.contains("://") {
                return Err(format!(
                    "`{}` holds an address: the tools take queries, and nothing is fetched",
                    reply.argument
                ));
            }
            Ok(ToolCall {
                tool: tool.name.clone(),
                argument: reply.argument,
                reasoning: reply.reasoning,
            })
        };
        let fallback = async {
            let question = HeuristicRewriter.rewritten(state.question, state.analysis);
            let call = if state.searched.contains(&normalize_query(&question)) {
                ToolCall::done(
                    "the selector failed, and the plain search it falls back to was done",
                )
            } else {
                ToolCall::search(
                    question,
                    "the selector failed: one plain search of the question instead",
                )
            };
            StageOutput::heuristic(call)
        };
        self.model.run(&context, 300, accept, fallback).await
    }
}

/// The hits to hand a model: the most relevant first (not the latest), as many as fit in
/// `tokens` at about four characters a token; a hit too long for what is left is skipped.
pub fn most_relevant_within(hits: &[Hit], grades: Option<&Grades>, tokens: usize) -> Vec<Hit> {
    let relevance = |i: usize| {
        grades
            .and_then(|g| g.per_hit.get(i))
            .map_or(0.0, |g| g.relevance)
    };
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
            .map(|(i, &r)| HitGrade {
                hit_id: format!("{i}").as_str().into(),
                relevance: r,
                kept: true,
                good: true,
                reason: String::new(),
                linked: None,
            })
            .collect();
        Grades {
            per_hit,
            quality: Quality::High,
            should_retry: false,
            suggestion: None,
        }
    }

    #[test]
    fn the_context_keeps_the_most_relevant_entries_not_the_latest() {
        let hits = [
            hit("old-weak", 400),
            hit("best", 400),
            hit("late-good", 400),
            hit("huge", 40_000),
            hit("small", 40),
        ];
        let grades = graded(&[0.1, 0.9, 0.6, 0.95, 0.2]);
        let ids: Vec<String> = most_relevant_within(&hits, Some(&grades), 250)
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        // 100 tokens each: the two most relevant that fit, then what still fits; "huge" never does.
        assert_eq!(ids, ["best", "late-good", "small"]);
    }
}
