//! The prompts of the model synthesizer: for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use std::collections::BTreeMap;

use ferret_llm::{PromptContext, PromptSource, Stage};

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
    /// Extra guidance on the answer's shape from configuration, e.g. "Start with the root cause,
    /// then give the fix step by step."
    pub guidance: Option<String>,
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
    pub short_answer: Option<String>,
    /// The number of the source `short_answer` is copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_answer_source: Option<usize>,
}

impl PromptContext for SynthesisContext {
    const STAGE: Stage = Stage::Synthesis;
    const TEMPLATE: &'static str = include_str!("../templates/synthesis.j2");
    type Reply = SynthesisReply;
}
