//! The prompts of this crate's model stages (guardrail, analysis,
//! decomposition, rewriting and the next hop): for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use std::collections::BTreeMap;

use ferret_llm::{narrow, reply_schema, restrict_to_labels, PromptContext, PromptSource, Stage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Query types offered to the analysis prompt when the caller configures none; generic enough for
/// any domain, specific enough to steer rewriting.
pub const DEFAULT_QUERY_TYPES: &[&str] = &[
    "factual",
    "how_to",
    "troubleshooting",
    "comparison",
    "recommendation",
    "exploratory",
];

/// Context of the intent guardrail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentContext {
    /// The user's message.
    pub question: String,
    /// What the assistant can search, as a noun phrase, e.g. "heritage archive materials such as
    /// traditional crafts, cultural artefacts and historical documents".
    pub domain: String,
}

/// The guardrail's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntentReply {
    /// One of: search, unclear, unrelated, greeting.
    pub intent: String,
    /// One short sentence explaining the choice.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub reason: String,
}

impl PromptContext for IntentContext {
    const STAGE: Stage = Stage::Intent;
    const TEMPLATE: &'static str = include_str!("../templates/intent.j2");
    type Reply = IntentReply;

    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<IntentReply>();
        let labels = crate::llm::INTENTS.map(crate::Intent::as_str);
        restrict_to_labels(&mut schema, "/properties/intent", labels);
        schema
    }
}

/// Context of query analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisContext {
    /// The question to analyse.
    pub question: String,
    /// The query types the model chooses from.
    pub query_types: Vec<String>,
    /// The asker's situation as key/value pairs (`java_version` = `17`); may be empty.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
}

impl AnalysisContext {
    /// A context offering [`DEFAULT_QUERY_TYPES`].
    pub fn new(question: impl Into<String>) -> Self {
        Self {
            question: question.into(),
            query_types: DEFAULT_QUERY_TYPES
                .iter()
                .map(|kind| (*kind).to_owned())
                .collect(),
            context: BTreeMap::new(),
        }
    }
}

/// What the analysis found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnalysisReply {
    /// The one query type that fits best, from the list given.
    pub query_type: String,
    /// Names, products, versions, places, dates and key terms, copied as written.
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(max = 40)))]
    pub entities: Vec<String>,
    /// What the user wants to achieve, in a few words.
    #[serde(default)]
    #[schemars(length(max = 30))]
    pub intent: String,
    /// "simple" if one search can answer the question, "complex" if it needs several.
    pub complexity: String,
}

impl PromptContext for AnalysisContext {
    const STAGE: Stage = Stage::Analysis;
    const TEMPLATE: &'static str = include_str!("../templates/analysis.j2");
    type Reply = AnalysisReply;

    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<AnalysisReply>();
        let offered = self.query_types.iter().map(String::as_str);
        restrict_to_labels(&mut schema, "/properties/query_type", offered);
        let complexities = [crate::Complexity::Simple, crate::Complexity::Complex];
        restrict_to_labels(
            &mut schema,
            "/properties/complexity",
            complexities.map(crate::Complexity::as_str),
        );
        schema
    }
}

/// Context of query decomposition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecompositionContext {
    /// The complex question to split.
    pub question: String,
    /// Key terms found by the analysis, to keep in the sub-queries; may be empty.
    pub entities: Vec<String>,
    /// Most sub-queries wanted (from the budget).
    pub max_sub_queries: usize,
    /// The asker's situation as key/value pairs (`java_version` = `17`); may be empty.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
}

/// The sub-queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecompositionReply {
    /// Focused search queries, each under 100 characters, each covering one part of the question.
    #[schemars(inner(length(max = 100)))]
    pub sub_queries: Vec<String>,
    /// For an error, a brief hypothesis of what is wrong at the root, in one sentence.
    #[serde(default)]
    #[schemars(length(max = 160))]
    pub root_cause_hypothesis: Option<String>,
}

impl PromptContext for DecompositionContext {
    const STAGE: Stage = Stage::Decomposition;
    const TEMPLATE: &'static str = include_str!("../templates/decomposition.j2");
    type Reply = DecompositionReply;

    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<DecompositionReply>();
        let most = self.max_sub_queries.max(1);
        narrow(
            &mut schema,
            "/properties/sub_queries",
            [("minItems", 1.into()), ("maxItems", most.into())],
        );
        schema
    }
}

/// Context of query rewriting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewriteContext {
    /// The question or sub-query to rewrite.
    pub query: String,
    /// The engine the query is for, as a noun phrase, e.g. "a web search engine" or "a keyword
    /// index of journal entries".
    pub engine: String,
    /// Longest query accepted, in characters.
    pub max_chars: usize,
    /// "broaden" or "narrow" when rewriting for a retry; `None` for a first search.
    pub strategy: Option<String>,
    /// Queries already searched, which the rewrite must not repeat; may be empty.
    pub previous_queries: Vec<String>,
    /// Write for a web search engine: an affirmative phrase, not keywords alone.
    #[serde(default)]
    pub web: bool,
    /// The asker's situation as key/value pairs (`java_version` = `17`); may be empty.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
}

/// The rewritten query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RewriteReply {
    /// The search query, at most the requested number of characters.
    pub query: String,
}

impl PromptContext for RewriteContext {
    const STAGE: Stage = Stage::Rewrite;
    const TEMPLATE: &'static str = include_str!("../templates/rewrite.j2");
    type Reply = RewriteReply;

    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<RewriteReply>();
        // A search query, not a paragraph: small models otherwise write until the budget ends.
        let longest = self.max_chars.clamp(1, 100);
        narrow(
            &mut schema,
            "/properties/query",
            [("minLength", 1.into()), ("maxLength", longest.into())],
        );
        schema
    }
}

/// Context of one hop of a multi-hop search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextHopContext {
    /// The question being researched.
    pub question: String,
    /// The queries already searched, which the next query must not repeat; may be empty.
    pub searched: Vec<String>,
    /// The sources found so far; may be empty.
    pub sources: Vec<PromptSource>,
    /// Names the sources lead to, as the rules rank them, best first; may be empty.
    #[serde(default)]
    pub candidates: Vec<String>,
}

/// The next hop, or done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NextHopReply {
    /// What the sources show and what is still missing, in one or two sentences.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub reasoning: String,
    /// true if the sources answer every part of the question, false if another search is needed.
    #[serde(default)]
    pub done: bool,
    /// The next search query: usually a name the sources point to plus what the question asks about it; empty when done.
    #[serde(default, alias = "next_query", alias = "search_query")]
    #[schemars(length(max = 100))]
    pub query: String,
}

impl NextHopReply {
    /// Whether to stop: the model said done, or gave no query to search next.
    pub fn is_done(&self) -> bool {
        self.done || self.query.trim().is_empty()
    }
}

impl PromptContext for NextHopContext {
    const STAGE: Stage = Stage::NextHop;
    const TEMPLATE: &'static str = include_str!("../templates/next_hop.j2");
    type Reply = NextHopReply;
}

/// Context of reading a follow-up question against its thread's last turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FollowUpContext {
    /// The new question, as asked.
    pub question: String,
    /// The last turn's question.
    pub earlier_question: String,
    /// The last turn's answer in a few words, when it had one.
    pub earlier_answer: Option<String>,
    /// Titles of the results the last answer cited, in marker order; may be empty.
    pub cited: Vec<String>,
}

/// The question to search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FollowUpReply {
    /// true if the new question names everything it asks about and is searched as asked.
    #[serde(default)]
    pub standalone: bool,
    /// The new question rewritten to stand alone; empty when standalone.
    #[serde(default, alias = "rewritten", alias = "resolved")]
    #[schemars(length(max = 300))]
    pub question: String,
}

impl PromptContext for FollowUpContext {
    const STAGE: Stage = Stage::FollowUp;
    const TEMPLATE: &'static str = include_str!("../templates/follow_up.j2");
    type Reply = FollowUpReply;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_fields_are_restricted_to_the_labels_the_stages_read() {
        let intent = IntentContext {
            question: "hi".into(),
            domain: "anything".into(),
        }
        .reply_schema();
        assert_eq!(
            intent["properties"]["intent"]["enum"],
            serde_json::json!(["search", "unclear", "unrelated", "greeting"])
        );
        let mut analysis = AnalysisContext::new("How do I pin a crate?");
        analysis.query_types = vec!["how_to".into(), "factual".into()];
        let schema = analysis.reply_schema();
        assert_eq!(
            schema["properties"]["query_type"]["enum"],
            serde_json::json!(["how_to", "factual"])
        );
        assert_eq!(
            schema["properties"]["complexity"]["enum"],
            serde_json::json!(["simple", "complex"])
        );
    }

    #[test]
    fn a_hop_reply_tolerates_what_small_models_rename_or_leave_out() {
        let hop: NextHopReply =
            serde_json::from_str(r#"{"next_query": "Steven Spielberg date of birth"}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert!(!hop.done && !hop.is_done());
        let hop: NextHopReply = serde_json::from_str(r#"{"done": false, "query": "  "}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(hop.is_done(), "no query to search ends the search");
    }
}
