use ferret_core::{Hit, StageOutput};

use crate::config::HIGH_RELEVANCE;
use crate::relevance::{heuristic_relevance, sanitize, HitTerms, Judgement};
use crate::suggest::suggest;
use crate::{Grades, GradingConfig, HitGrade, Quality};

/// The grading stage: judges hits against the question.
///
/// Implementations do not fail: one that cannot judge (a model that returns nothing usable) falls
/// back to the heuristic and says so in the [`StageOutput`].
#[async_trait::async_trait]
pub trait RelevanceGrader: Send + Sync {
    /// Grade `hits` (best first) for `question`. The grades are in the order of `hits`.
    async fn grade(&self, question: &str, hits: &[Hit]) -> StageOutput<Grades>;
}

/// Grades by term overlap between question and hit (see [`heuristic_relevance`]); no model needed.
#[derive(Debug, Clone, Default)]
pub struct HeuristicGrader {
    config: GradingConfig,
}

impl HeuristicGrader {
    /// A grader with these thresholds.
    pub fn new(config: GradingConfig) -> Self {
        Self { config }
    }

    /// The thresholds in use.
    pub fn config(&self) -> &GradingConfig {
        &self.config
    }

    /// The grading itself, without the async wrapper.
    pub fn grade_now(&self, question: &str, hits: &[Hit]) -> Grades {
        grades_from_judgements(
            &self.config,
            question,
            hits,
            heuristic_relevance(question, hits),
        )
    }
}

#[async_trait::async_trait]
impl RelevanceGrader for HeuristicGrader {
    async fn grade(&self, question: &str, hits: &[Hit]) -> StageOutput<Grades> {
        StageOutput::heuristic(self.grade_now(question, hits))
    }
}

/// Apply `config` to per-hit judgements (one per hit, in order) and derive the verdict. Any grader
/// can use it, so an LLM grader and the heuristic agree on what the numbers mean.
///
/// Relevances are clamped to `0..=1` and NaN becomes 0. A hit without a judgement (the list is
/// short) gets relevance 0; surplus judgements are ignored.
///
/// Quality: `low` when there is no good hit or fewer than `min_good_hits`; `high` when the good
/// hits number at least `max(min_good_hits, 3)` or the best relevance reaches
/// `max(HIGH_RELEVANCE, good_threshold)`; `medium` otherwise. A retry is advised exactly when the
/// quality is low, with a suggestion when the question's words allow one (rules on [`RetrySuggestion`](crate::RetrySuggestion)).
pub fn grades_from_judgements(
    config: &GradingConfig,
    question: &str,
    hits: &[Hit],
    judgements: Vec<Judgement>,
) -> Grades {
    let mut judgements = judgements.into_iter();
    let per_hit: Vec<HitGrade> = hits
        .iter()
        .map(|hit| {
            let (relevance, reason) = match judgements.next() {
                Some(j) => (sanitize(j.relevance), j.reason),
                None => (0.0, "not graded".to_owned()),
            };
            HitGrade {
                hit_id: hit.id.clone(),
                relevance,
                kept: config.is_kept(relevance),
                good: config.is_good(relevance),
                reason,
                linked: None,
            }
        })
        .collect();

    let good = per_hit.iter().filter(|g| g.good).count();
    let kept = per_hit.iter().filter(|g| g.kept).count();
    let top = per_hit.iter().map(|g| g.relevance).fold(0.0, f32::max);
    let needed = config.min_good_hits.max(1);
    let quality = if good < needed {
        Quality::Low
    } else if good >= needed.max(3) || top >= HIGH_RELEVANCE.max(config.good_threshold) {
        Quality::High
    } else {
        Quality::Medium
    };
    let should_retry = quality == Quality::Low;
    let suggestion = if should_retry {
        let hit_terms: Vec<HitTerms> = hits.iter().map(HitTerms::new).collect();
        suggest(question, &hit_terms, kept)
    } else {
        None
    };
    Grades {
        per_hit,
        quality,
        should_retry,
        suggestion,
    }
}
