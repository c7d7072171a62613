//! The prompts of the model synthesizer: for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use std::collections::BTreeMap;

use ferret_llm::{narrow, reply_schema, PromptContext, PromptSource, Stage};

use crate::EarlierTurn;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Context of answer synthesis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthesisContext {
    /// The question to answer.
    pub question: String,
    /// The numbered sources the answer may use and cite; may be empty, which the prompt states.
    pub sources: Vec<PromptSource>,
    /// The asker's situation as key/value pairs (`java_version` = `17`); may be empty.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
    /// The conversation's recent turns, oldest first, to read the question by ("and the second
    /// one?"); may be empty.
    #[serde(default)]
    pub conversation: Vec<EarlierTurn>,
    /// What the search did to find the sources, one line per step; may be empty.
    #[serde(default)]
    pub search: Vec<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SynthesisReply {
    /// The answer, citing sources by number in square brackets, e.g. `[1]` or `[2][3]`.
    pub answer: String,
    /// The answer in a few words (a name, a date, a number, a place, yes or no), copied exactly
    /// from one source; absent when the sources do not state it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 80))]
    pub short_answer: Option<String>,
    /// The number of the source `short_answer` is copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_answer_source: Option<usize>,
}

impl PromptContext for SynthesisContext {
    const STAGE: Stage = Stage::Synthesis;
    const TEMPLATE: &'static str = include_str!("../templates/synthesis.j2");
    type Reply = SynthesisReply;

    /// With sources, the answer must cite at least one of them, and only them, by `[n]`; the
    /// short answer's source is one of them.
    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<SynthesisReply>();
        if self.sources.is_empty() {
            return schema;
        }
        let numbers: Vec<String> = self.sources.iter().map(|s| s.number.to_string()).collect();
        let number = format!("(?:{})", numbers.join("|"));
        // `[1]` or `[1, 2]`: markers naming sources shown, as the citation check reads them. Other
        // brackets are left out: with them the pattern is too large to bound under a length.
        let marker = format!(r"\[ ?{number}(?:, ?{number})* ?\]");
        let other = r"[^\[\]]";
        let pattern = format!(r"^{other}*{marker}(?:{other}|{marker})*$");
        // Long enough for a few cited sentences, short enough that a small model reaches its
        // citation within the token budget.
        narrow(
            &mut schema,
            "/properties/answer",
            [("pattern", pattern.into()), ("maxLength", 320.into())],
        );
        // A short answer comes with the number of the source it is copied from, or neither does.
        let numbers: Vec<serde_json::Value> =
            self.sources.iter().map(|s| s.number.into()).collect();
        let short = schema.pointer("/properties/short_answer").cloned();
        if let (Some(serde_json::Value::Object(object)), Some(mut short)) =
            (Some(&mut schema), short)
        {
            short["type"] = "string".into();
            // Under `allOf`, so a converter that reads `anyOf` before `properties` (llama.cpp's)
            // still sees the answer.
            object.insert(
                "allOf".into(),
                serde_json::json!([{ "anyOf": [
                    {
                        "properties": {
                            "short_answer_source": {"enum": numbers},
                            "short_answer": short
                        },
                        "required": ["short_answer_source", "short_answer"]
                    },
                    {
                        "properties": {
                            "short_answer_source": {"type": "null"},
                            "short_answer": {"type": "null"}
                        }
                    }
                ]}]),
            );
        }
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_must_cite_a_source_shown_and_no_other() {
        let source = |number: usize| PromptSource {
            number,
            title: format!("source {number}"),
            text: String::new(),
            url: None,
        };
        let context = SynthesisContext {
            question: "q".into(),
            sources: vec![source(1), source(2)],
            context: BTreeMap::new(),
            conversation: Vec::new(),
            search: Vec::new(),
        };
        let schema = context.reply_schema();
        let pattern = schema["properties"]["answer"]["pattern"]
            .as_str()
            .expect("a pattern");
        let answer = regex::Regex::new(pattern).expect("compiles");
        for cited in [
            "Paris [1].",
            "Paris [2][1], on the Seine [2]",
            "[1] says so",
            "Both say so [1, 2].",
        ] {
            assert!(answer.is_match(cited), "{cited}");
        }
        for uncited in [
            "Paris.",
            "Paris [3].",
            "Paris [1, 3]",
            "Paris [12].",
            "x [i]",
        ] {
            assert!(!answer.is_match(uncited), "{uncited}");
        }
        assert_eq!(
            schema["allOf"][0]["anyOf"][0]["properties"]["short_answer_source"]["enum"],
            serde_json::json!([1, 2])
        );
    }
}
