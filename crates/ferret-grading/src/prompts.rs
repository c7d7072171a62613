//! The prompts of the model grader: for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use ferret_llm::{narrow, reply_schema, restrict_to_labels, PromptContext, PromptSource, Stage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Quality, RetryStrategy};

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
    #[schemars(length(max = 60))]
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
    #[schemars(length(max = 100))]
    pub retry_query: Option<String>,
}

impl PromptContext for GradingContext {
    const STAGE: Stage = Stage::Grading;
    const TEMPLATE: &'static str = include_str!("../templates/grading.j2");
    type Reply = GradingReply;

    /// Labels as the grader reads them, and one grade per result shown, in the order shown:
    /// the numbers are given, the model writes the scores and reasons.
    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<GradingReply>();
        let qualities = [Quality::High, Quality::Medium, Quality::Low].map(Quality::as_str);
        restrict_to_labels(&mut schema, "/properties/overall_quality", qualities);
        let strategies = [RetryStrategy::Broaden, RetryStrategy::Narrow].map(RetryStrategy::as_str);
        restrict_to_labels(&mut schema, "/properties/retry_strategy", strategies);
        let grade = schema.pointer("/$defs/ResultGrade").cloned();
        let numbered: Vec<serde_json::Value> = self
            .results
            .iter()
            .filter_map(|result| {
                let mut grade = grade.clone()?;
                *grade.pointer_mut("/properties/number")? =
                    serde_json::json!({ "const": result.number });
                Some(grade)
            })
            .collect();
        let shown = numbered.len();
        narrow(
            &mut schema,
            "/properties/grades",
            [
                ("prefixItems", numbered.into()),
                ("minItems", shown.into()),
                ("maxItems", shown.into()),
            ],
        );
        // A verdict without grades is refused, so the grades are asked for, not offered.
        if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
            required.insert(0, "grades".into());
        }
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grading_reply_can_only_name_the_results_shown_and_the_labels_read() {
        let source = |number: usize| PromptSource {
            number,
            title: format!("result {number}"),
            text: String::new(),
            url: None,
        };
        let schema = GradingContext {
            question: "q".into(),
            results: vec![source(1), source(2)],
            previous_queries: Vec::new(),
        }
        .reply_schema();
        assert_eq!(
            schema["properties"]["overall_quality"]["enum"],
            serde_json::json!(["high", "medium", "low"])
        );
        // Optional, so `null` stays allowed.
        assert_eq!(
            schema["properties"]["retry_strategy"]["enum"],
            serde_json::json!(["broaden", "narrow", null])
        );
        let grades = &schema["properties"]["grades"];
        assert_eq!(
            (&grades["minItems"], &grades["maxItems"]),
            (&2.into(), &2.into())
        );
        let numbers: Vec<&serde_json::Value> = grades["prefixItems"]
            .as_array()
            .expect("one schema per result")
            .iter()
            .map(|grade| &grade["properties"]["number"]["const"])
            .collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(
            schema["required"],
            serde_json::json!(["grades", "overall_quality"])
        );
        // The prompt's outline still reads the grade's shape from `items`.
        assert!(grades["items"]["$ref"].is_string());
    }
}
