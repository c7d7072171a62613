//! `ferret-grading` judges what a search brought back: a relevance in `0..=1` for every hit, whether
//! each hit is worth keeping and whether it is good, an overall quality verdict (`high`, `medium`,
//! `low`), and, when the quality is low, a suggestion for the next query (broaden when too little
//! matched, narrow when much matched loosely). The [`RelevanceGrader`] trait is the stage; the
//! [`HeuristicGrader`] implements it with deterministic term-overlap rules so the pipeline runs
//! without a language model, and [`grades_from_judgements`] turns anyone's per-hit relevance (an
//! LLM's) into the same verdict. [`LlmGrader`] asks a model for 1-5 scores through `ferret-llm`,
//! blends them with the rules and falls back to them.
//!
//! It must not depend on any backend crate (it grades hits, whoever found them), nor on the
//! executor; models are reached only through `ferret-llm`.

mod config;
mod grader;
mod grades;
mod llm;
mod prompts;
mod relevance;
mod suggest;

pub use config::{GradingConfig, GradingConfigError, HIGH_RELEVANCE};
pub use grader::{grades_from_judgements, HeuristicGrader, RelevanceGrader};
pub use grades::{Grades, HitGrade, LinkedRelevance, Quality, RetryStrategy, RetrySuggestion};
pub use llm::{LlmGrader, LLM_SCORE_WEIGHT};
pub use prompts::{GradingContext, GradingReply, ResultGrade};
pub use relevance::{heuristic_relevance, Judgement, COVERAGE_WEIGHT, PHRASE_WEIGHT, SCORE_WEIGHT};
