//! The prompts of the model grader: for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use ferret_llm::{PromptContext, PromptSource, Stage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Context of result grading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradingContext {
    /// The question the results should answer.
    pub question: String,
    /// The results to grade; may be empty, which the prompt states.
    pub results: Vec<PromptSource>,
    /// Queries already searched, so a suggested retry differs from them; may be empty.
    pub previous_queries: Vec<String>,
}

/// The grade of one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResultGrade {
    /// The number of the graded result.
    pub number: usize,
    /// 5 answers the question directly, 4 highly relevant, 3 partly relevant, 2 loosely related, 1 not relevant.
    #[schemars(range(min = 1, max = 5))]
    pub score: u8,
    /// Why, in a few words.
    #[serde(default)]
    pub reason: String,
}

/// Grades of a result set and whether to search again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GradingReply {
    /// One grade per result.
    #[serde(default)]
    pub grades: Vec<ResultGrade>,
    /// "high", "medium" or "low".
    pub overall_quality: String,
    /// Whether to search again with a new query.
    #[serde(default)]
    pub should_retry: bool,
    /// "broaden" (few or no results) or "narrow" (results off-topic or too general).
    #[serde(default)]
    pub retry_strategy: Option<String>,
    /// The query to search with on a retry.
    #[serde(default)]
    pub retry_query: Option<String>,
}

impl PromptContext for GradingContext {
    const STAGE: Stage = Stage::Grading;
    const TEMPLATE: &'static str = include_str!("../templates/grading.j2");
    type Reply = GradingReply;
}
