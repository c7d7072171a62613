use crate::{GradingContext, GradingReply};
use ferret_core::{Hit, StageOutput};
use ferret_llm::{noting_condensation, PromptSource, StageModel};

use crate::grader::{grades_from_judgements, HeuristicGrader, RelevanceGrader};
use crate::relevance::{heuristic_relevance, Judgement};
use crate::{Grades, RetryStrategy, RetrySuggestion};

/// Grades with a language model (each result 1-5 with a reason, overall quality, a
/// retry suggestion), blended with the rules so one odd score from a small model cannot keep or
/// drop a result alone. Falls back to [`HeuristicGrader`] when the model gives nothing usable.
#[derive(Debug, Clone)]
pub struct LlmGrader {
    model: StageModel,
    rules: HeuristicGrader,
}

/// Weight of the model's score in a hit's relevance; the rules carry the rest.
pub const LLM_SCORE_WEIGHT: f32 = 0.5;

impl LlmGrader {
    /// Grade with `model`, keeping `rules` for the blend and the fallback.
    pub fn new(model: StageModel, rules: HeuristicGrader) -> Self {
        Self { model, rules }
    }
}

#[async_trait::async_trait]
impl RelevanceGrader for LlmGrader {
    async fn grade(&self, question: &str, hits: &[Hit]) -> StageOutput<Grades> {
        if hits.is_empty() {
            // Nothing to judge: no call to pay for.
            return self.rules.grade(question, hits).await;
        }
        let shown = hits.len().min(self.model.config().max_sources.max(1));
        let mut results = PromptSource::numbered(&hits[..shown]);
        let condensed = self.model.condense(question, &mut results).await;
        let context = GradingContext {
            question: question.to_owned(),
            results,
            previous_queries: Vec::new(),
        };
        let accept = |reply: GradingReply| blend(self, question, hits, shown, reply);
        let graded = self
            .model
            .run(
                &context,
                // A grade's keys are forced, its reason may take some 15 tokens more.
                64 + 32 * shown as u32,
                accept,
                self.rules.grade(question, hits),
            )
            .await;
        noting_condensation(graded, condensed)
    }
}

fn blend(
    grader: &LlmGrader,
    question: &str,
    hits: &[Hit],
    shown: usize,
    reply: GradingReply,
) -> Result<Grades, String> {
    let mut scores: Vec<Option<(f32, String)>> = vec![None; shown];
    for grade in reply.grades {
        if let Some(slot) = grade.number.checked_sub(1).and_then(|i| scores.get_mut(i)) {
            if (1..=5).contains(&grade.score) {
                *slot = Some((f32::from(grade.score - 1) / 4.0, grade.reason));
            }
        }
    }
    if scores.iter().all(Option::is_none) {
        return Err(format!(
            "no usable score (1-5) for any of the {shown} results"
        ));
    }
    let judgements: Vec<Judgement> = heuristic_relevance(question, hits)
        .into_iter()
        .enumerate()
        .map(|(i, rules)| match scores.get(i).cloned().flatten() {
            Some((score, reason)) => Judgement {
                relevance: LLM_SCORE_WEIGHT * score + (1.0 - LLM_SCORE_WEIGHT) * rules.relevance,
                reason: if reason.trim().is_empty() {
                    rules.reason
                } else {
                    reason
                },
            },
            None => rules,
        })
        .collect();
    let mut grades = grades_from_judgements(grader.rules.config(), question, hits, judgements);
    // The model's own next query is worth trying when it is new; the rules' suggestion otherwise.
    if grades.should_retry {
        let strategy = match reply.retry_strategy.as_deref().map(str::trim) {
            Some(s) if s.eq_ignore_ascii_case("narrow") => RetryStrategy::Narrow,
            _ => RetryStrategy::Broaden,
        };
        if let Some(query) = reply
            .retry_query
            .map(|q| q.trim().to_owned())
            .filter(|q| !q.is_empty() && !q.eq_ignore_ascii_case(question))
        {
            grades.suggestion = Some(RetrySuggestion { strategy, query });
        }
    }
    Ok(grades)
}
