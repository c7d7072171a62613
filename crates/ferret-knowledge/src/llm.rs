//! The model's description of a document, checked before it is kept.

use ferret_core::StageOutput;
use ferret_llm::{PromptContext, Stage, StageModel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{DescribedBy, Describer, Description, ExtractiveDescriber};

/// Context of a document's description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DescriptionContext {
    /// The document's title, when it has one.
    pub title: Option<String>,
    /// Its text (markdown or plain), cut to `max_chars` in the prompt.
    pub text: String,
    /// Characters of the text the model reads.
    pub max_chars: usize,
}

/// The model's description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DescriptionReply {
    /// What the document covers, in one to three sentences.
    #[serde(default)]
    pub summary: String,
    /// Three to eight words or short phrases a search for it would use, most telling first.
    #[serde(default)]
    pub keywords: Vec<String>,
}

impl PromptContext for DescriptionContext {
    const STAGE: Stage = Stage::Description;
    const TEMPLATE: &'static str = include_str!("../templates/description.j2");
    type Reply = DescriptionReply;
}

/// Keywords kept from a reply, at most.
const MAX_KEYWORDS: usize = 12;
/// Characters of one keyword, at most: a longer one is a sentence.
const MAX_KEYWORD_CHARS: usize = 60;
/// Characters of the summary, at most.
const MAX_SUMMARY_CHARS: usize = 1200;
/// Characters of the document the model reads: its opening says what it covers.
const TEXT_CHARS: usize = 4000;

/// Describes with a language model, falling back to the extractive description when the reply
/// has no summary, no keyword, or a summary too long to be one.
#[derive(Debug, Clone)]
pub struct LlmDescriber {
    model: StageModel,
    extractive: ExtractiveDescriber,
}

impl LlmDescriber {
    /// Describe with `model`, falling back to `extractive`.
    pub fn new(model: StageModel, extractive: ExtractiveDescriber) -> Self {
        Self { model, extractive }
    }
}

#[async_trait::async_trait]
impl Describer for LlmDescriber {
    async fn describe(&self, title: Option<&str>, text: &str) -> StageOutput<Description> {
        if text.trim().is_empty() {
            return self.extractive.describe(title, text).await;
        }
        let context = DescriptionContext {
            title: title.map(str::to_owned),
            text: text.to_owned(),
            max_chars: TEXT_CHARS,
        };
        let accept = |reply: DescriptionReply| {
            let summary = reply
                .summary
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if summary.is_empty() {
                return Err("summary is empty: say what the document covers".to_owned());
            }
            if summary.chars().count() > MAX_SUMMARY_CHARS {
                return Err(format!(
                    "summary has {} characters: one to three sentences, at most {MAX_SUMMARY_CHARS}",
                    summary.chars().count()
                ));
            }
            let mut keywords: Vec<String> = Vec::new();
            for keyword in reply.keywords {
                let keyword = keyword.trim().to_owned();
                let fits = !keyword.is_empty() && keyword.chars().count() <= MAX_KEYWORD_CHARS;
                if fits && !keywords.iter().any(|k| k.eq_ignore_ascii_case(&keyword)) {
                    keywords.push(keyword);
                }
            }
            if keywords.is_empty() {
                return Err("keywords is empty: give three to eight words or short phrases".into());
            }
            keywords.truncate(MAX_KEYWORDS);
            Ok(Description {
                summary,
                keywords,
                described_by: DescribedBy::Model,
            })
        };
        self.model
            .run(&context, 300, accept, self.extractive.describe(title, text))
            .await
    }
}
