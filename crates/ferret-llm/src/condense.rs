//! Condensation of long results before a model reads them: a prompt shows each result in at
//! most a few hundred characters, and the first few hundred of a long page rarely hold what the
//! question asks. Extractively, a result longer than that keeps its opening sentence (which
//! names what the page is about) and then the sentences that mention the question's terms, in
//! their order, until the size is reached. A model that writes answers summarises it instead
//! ([`CondensationContext`]), a summary that adds words the result does not hold being refused
//! for the extractive cut. Only the prompt's copy is condensed: the hit keeps its text, and a
//! citation `[n]` still points at the whole result.

use std::collections::HashSet;

use ferret_core::sentences::split_sentences;
use ferret_core::text::term_set;
use ferret_core::Condensation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::prompts::{PromptContext, Stage};
use crate::structured::{narrow, reply_schema};
use crate::PromptSource;

/// Characters of a long result the summary prompt shows: enough for a page's few paragraphs,
/// within a small model's context.
pub const CONDENSATION_INPUT_CHARS: usize = 4000;

/// Share of a summary's words that must come from the result it summarises.
const FAITHFUL_SHARE: f64 = 0.8;

/// Tokens of a summary prompt besides the result: its instructions and the question.
pub(crate) const SUMMARY_PROMPT_TOKENS: u64 = 200;

/// Tokens of the call the summaries serve besides its sources: instructions, question, reply.
pub(crate) const SERVED_CALL_TOKENS: u64 = 1_000;

/// Summaries kept at most; the oldest go first.
const SUMMARIES_KEPT: usize = 256;

/// Summaries accepted so far, by question, result and size.
#[derive(Debug, Default)]
pub(crate) struct Summaries {
    kept: std::sync::Mutex<std::collections::VecDeque<(u64, String)>>,
}

impl Summaries {
    pub(crate) fn get(&self, key: &u64) -> Option<String> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter().find(|(k, _)| k == key).map(|(_, s)| s.clone())
    }

    pub(crate) fn keep(&self, key: u64, summary: String) {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= SUMMARIES_KEPT {
            kept.pop_front();
        }
        kept.push_back((key, summary));
    }
}

/// The key of a summary of `text` for `question` in at most `max_chars`.
pub(crate) fn summary_key(question: &str, text: &str, max_chars: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (question, text, max_chars).hash(&mut hasher);
    hasher.finish()
}

/// `text`'s passages about `question` in at most `max_chars` (its opening sentence, then the
/// sentences richest in the question's terms).
pub(crate) fn passages(question: &str, text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    condense(text, &term_set(question), max_chars)
}

/// The prompt that summarises one long result for a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CondensationContext {
    /// The question the summary serves.
    pub question: String,
    /// The result, its text cut to [`CONDENSATION_INPUT_CHARS`].
    pub source: PromptSource,
    /// Longest summary, in characters.
    pub max_chars: usize,
}

/// A long result, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CondensationReply {
    /// What the result says about the question, in its own words.
    pub summary: String,
}

impl PromptContext for CondensationContext {
    const STAGE: Stage = Stage::Condensation;
    const TEMPLATE: &'static str = include_str!("../templates/condensation.j2");
    type Reply = CondensationReply;

    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<CondensationReply>();
        narrow(
            &mut schema,
            "/properties/summary",
            [
                ("minLength", json!(1)),
                ("maxLength", json!(self.max_chars.max(1))),
            ],
        );
        schema
    }
}

/// `summary` of `source` when it is one: within `max_chars` and shorter than the source, with
/// words of substance, every number it gives written in the source, and made of the source's
/// words (most of them; a summary may join them with words of its own); else why not.
pub fn accept_summary(summary: &str, source: &str, max_chars: usize) -> Result<String, String> {
    let summary = summary.trim();
    let length = summary.chars().count();
    if length > max_chars {
        return Err(format!(
            "the summary has {length} characters, over {max_chars}"
        ));
    }
    if length >= source.chars().count() {
        return Err("the summary is no shorter than the result".into());
    }
    let words = term_set(summary);
    if words.is_empty() {
        return Err("the summary says nothing of substance".into());
    }
    let source_lower = source.to_lowercase();
    if let Some(number) = summary
        .split(|c: char| !c.is_alphanumeric() && c != '.' && c != ',')
        .map(|w| w.trim_matches(|c: char| c == '.' || c == ','))
        .find(|w| {
            w.chars().any(|c| c.is_ascii_digit()) && !source_lower.contains(&w.to_lowercase())
        })
    {
        return Err(format!(
            "the summary gives {number}, which the result does not"
        ));
    }
    let held: HashSet<String> = term_set(source);
    let own = words.iter().filter(|w| held.contains(*w)).count();
    if (own as f64) < FAITHFUL_SHARE * words.len() as f64 {
        return Err(format!(
            "the summary has {} of its {} words from the result: it adds what the result does not say",
            own,
            words.len()
        ));
    }
    Ok(summary.to_owned())
}

/// How many characters of tokens a prompt saves when `before` characters become `after`.
pub(crate) fn tokens_saved(before: usize, after: usize) -> u64 {
    before.saturating_sub(after).div_ceil(CHARS_PER_TOKEN) as u64
}

/// About four characters make a token in English text; the estimate the trace reports.
const CHARS_PER_TOKEN: usize = 4;

/// Shown between sentences that were not next to each other.
const GAP: &str = " … ";

/// Condense each source whose text is longer than `max_chars` to the passages of it that
/// mention `question`'s terms (see the module's description); what was condensed, and the
/// tokens saved, or `None` when every source fitted.
pub fn condense_sources(
    question: &str,
    sources: &mut [PromptSource],
    max_chars: usize,
) -> Option<Condensation> {
    let terms = term_set(question);
    let mut condensation = Condensation::default();
    for source in sources.iter_mut() {
        let before = source.text.chars().count();
        if before <= max_chars {
            continue;
        }
        source.text = condense(&source.text, &terms, max_chars);
        let after = source.text.chars().count();
        condensation.sources += 1;
        condensation.tokens_saved += tokens_saved(before, after);
    }
    (condensation.sources > 0).then_some(condensation)
}

/// `text` in at most `max_chars`: its first sentence, then the sentences richest in `terms`
/// that fit, shown in the text's order.
fn condense(text: &str, terms: &std::collections::HashSet<String>, max_chars: usize) -> String {
    let sentences = split_sentences(text);
    let Some(first) = sentences.first() else {
        return ferret_core::text::cut(text, max_chars, ferret_core::text::CutMark::Ellipsis);
    };
    let mut ranked: Vec<(usize, usize)> = sentences
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, sentence)| (i, term_set(sentence).intersection(terms).count()))
        .filter(|&(_, shared)| shared > 0)
        .collect();
    // Most terms first; the earlier sentence among equals.
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = vec![0];
    let mut used = first.chars().count();
    for (i, _) in ranked {
        let length = sentences[i].chars().count() + GAP.chars().count();
        if used + length <= max_chars {
            kept.push(i);
            used += length;
        }
    }
    kept.sort_unstable();
    let mut condensed = String::new();
    for (position, &i) in kept.iter().enumerate() {
        if position > 0 {
            let adjacent = kept[position - 1] + 1 == i;
            condensed.push_str(if adjacent { " " } else { GAP });
        }
        condensed.push_str(&sentences[i]);
    }
    ferret_core::text::cut(&condensed, max_chars, ferret_core::text::CutMark::Ellipsis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> PromptSource {
        PromptSource {
            number: 1,
            title: "Kiss and Tell".into(),
            text: text.into(),
            url: None,
        }
    }

    #[test]
    fn a_long_result_keeps_its_opening_and_the_sentences_about_the_question() {
        let text = "Kiss and Tell is a 1945 American comedy film. It was shot in Hollywood. \
                    The studio built new sets. Shirley Temple played Corliss Archer in the film. \
                    Critics liked the music. The film earned two million dollars.";
        let mut sources = vec![source(text), source("Short enough.")];
        let condensation = condense_sources(
            "Who played Corliss Archer in Kiss and Tell?",
            &mut sources,
            110,
        )
        .expect("the long source is condensed");
        assert_eq!(
            sources[0].text,
            "Kiss and Tell is a 1945 American comedy film. … Shirley Temple played Corliss Archer in the film."
        );
        assert_eq!(sources[1].text, "Short enough.");
        assert_eq!(condensation.sources, 1);
        assert!(condensation.tokens_saved > 0);
    }

    #[test]
    fn sources_that_fit_are_left_alone() {
        let mut sources = vec![source("One sentence. Two sentences.")];
        assert_eq!(condense_sources("anything", &mut sources, 600), None);
        assert_eq!(sources[0].text, "One sentence. Two sentences.");
    }

    #[test]
    fn a_text_without_sentences_is_cut() {
        let mut sources = vec![source(&"x".repeat(50))];
        condense_sources("x", &mut sources, 10).expect("condensed");
        assert!(sources[0].text.chars().count() <= 10);
    }
}
