//! A document's summary and keywords, for the registry: given with the reference, written by a
//! model, or taken from the text (its leading sentences and its most frequent content words).

use std::collections::HashMap;

use ferret_core::text::{content_terms, is_stop_word, words};
use ferret_core::StageOutput;
use serde::{Deserialize, Serialize};

/// Who wrote an entry's summary and keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DescribedBy {
    /// They came with the reference (a syllabus line, the caller).
    Given,
    /// Taken from the text: leading sentences and most frequent content words.
    Extractive,
    /// Written by a language model from the text.
    Model,
}

/// What a document is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    /// A few sentences.
    pub summary: String,
    /// Words a search for it would use, most telling first.
    pub keywords: Vec<String>,
    /// Who wrote them.
    pub described_by: DescribedBy,
}

/// The describing stage: a document's summary and keywords from its title and text.
///
/// Implementations do not fail: a model that cannot describe falls back to the extractive
/// description and says so in the [`StageOutput`].
#[async_trait::async_trait]
pub trait Describer: Send + Sync {
    /// Describe the document titled `title` whose markdown or plain text is `text`.
    async fn describe(&self, title: Option<&str>, text: &str) -> StageOutput<Description>;
}

/// Describes by extraction: the leading sentences of the prose (headings, code, tables and
/// comments skipped) and the content words used most, title and headings counting thrice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractiveDescriber {
    /// Words of the summary, at most: whole sentences while they fit, the first one cut if it
    /// alone is longer.
    pub summary_words: usize,
    /// Keywords, at most.
    pub keywords: usize,
}

impl Default for ExtractiveDescriber {
    fn default() -> Self {
        Self {
            summary_words: 60,
            keywords: 8,
        }
    }
}

/// How much more a title or heading word counts than one in the prose: they name the subject.
const HEADING_WEIGHT: usize = 3;
/// Shortest keyword, in characters: shorter words are mostly abbreviations of nothing.
const MIN_KEYWORD_CHARS: usize = 3;

impl ExtractiveDescriber {
    /// The description, without the async wrapper.
    pub fn description(&self, title: Option<&str>, text: &str) -> Description {
        let (headings, prose) = read_markdown(text);
        Description {
            summary: self.summary(&prose),
            keywords: self.keywords(title, &headings, &prose),
            described_by: DescribedBy::Extractive,
        }
    }

    fn summary(&self, prose: &str) -> String {
        let mut summary = String::new();
        let mut used = 0;
        for sentence in sentences(prose) {
            let count = sentence.split_whitespace().count();
            if used + count > self.summary_words {
                if used == 0 {
                    let cut: Vec<&str> = sentence
                        .split_whitespace()
                        .take(self.summary_words)
                        .collect();
                    summary = format!("{}…", cut.join(" "));
                }
                break;
            }
            if !summary.is_empty() {
                summary.push(' ');
            }
            summary.push_str(sentence);
            used += count;
        }
        summary
    }

    fn keywords(&self, title: Option<&str>, headings: &str, prose: &str) -> Vec<String> {
        // By stem ("agent" and "agents" are one keyword): its weight, where it was first seen
        // (ties keep the text's order), and how often each spelling was used.
        let mut stems: HashMap<String, Keyword> = HashMap::new();
        let mut seen = 0;
        let weighted = [
            (title.unwrap_or_default(), HEADING_WEIGHT),
            (headings, HEADING_WEIGHT),
            (prose, 1),
        ];
        for (text, weight) in weighted {
            for word in words(text) {
                if word.chars().count() < MIN_KEYWORD_CHARS
                    || is_stop_word(&word)
                    || word.chars().all(|c| c.is_ascii_digit())
                {
                    continue;
                }
                let Some(stem) = content_terms(&word).pop() else {
                    continue;
                };
                seen += 1;
                let keyword = stems.entry(stem).or_insert_with(|| Keyword {
                    weight: 0,
                    first: seen,
                    spellings: Vec::new(),
                });
                keyword.weight += weight;
                match keyword.spellings.iter_mut().find(|(w, _)| *w == word) {
                    Some((_, uses)) => *uses += 1,
                    None => keyword.spellings.push((word, 1)),
                }
            }
        }
        let mut ranked: Vec<Keyword> = stems.into_values().collect();
        ranked.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.first.cmp(&b.first)));
        ranked
            .into_iter()
            .take(self.keywords)
            .filter_map(|k| {
                // The spelling used most; the first one seen on a tie.
                let most = k.spellings.iter().map(|(_, uses)| *uses).max()?;
                k.spellings
                    .into_iter()
                    .find(|(_, uses)| *uses == most)
                    .map(|(w, _)| w)
            })
            .collect()
    }
}

/// One keyword while counting.
struct Keyword {
    weight: usize,
    first: usize,
    spellings: Vec<(String, usize)>,
}

#[async_trait::async_trait]
impl Describer for ExtractiveDescriber {
    async fn describe(&self, title: Option<&str>, text: &str) -> StageOutput<Description> {
        StageOutput::heuristic(self.description(title, text))
    }
}

/// The headings and the prose of a markdown text, each as one line of plain words: code blocks,
/// tables, HTML comments and link targets left out.
fn read_markdown(text: &str) -> (String, String) {
    let mut headings = Vec::new();
    let mut prose = Vec::new();
    let mut in_code = false;
    let mut in_comment = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_comment {
            in_comment = !line.contains("-->");
            continue;
        }
        if line.starts_with("<!--") {
            in_comment = !line.contains("-->");
            continue;
        }
        if in_code || line.starts_with('|') || line.is_empty() {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            headings.push(plain(heading.trim_start_matches('#')));
            continue;
        }
        let item = line.trim_start_matches(['-', '*', '+', '>']).trim_start();
        prose.push(plain(item));
    }
    (headings.join(" "), prose.join(" "))
}

/// `line` without link targets, images, bare addresses or emphasis marks.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    // `[text](target)`: the text stays, the target goes.
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out.split_whitespace()
        .filter(|w| !w.contains("://"))
        // An image's `![` loses its `!`; a sentence's `!` stays.
        .map(|w| w.strip_prefix("![").unwrap_or(w))
        .map(|w| w.trim_matches(|c| matches!(c, '*' | '_' | '`' | '[' | ']')))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sentences of `prose`: each ends at `.`, `!` or `?` followed by a space and a capital
/// letter or digit, or at the end.
fn sentences(prose: &str) -> impl Iterator<Item = &str> {
    let mut rest = prose.trim();
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes: Vec<(usize, char)> = rest.char_indices().collect();
        let end = bytes.windows(3).find_map(|w| {
            let [(_, end), (_, space), (at, next)] = [w[0], w[1], w[2]];
            (matches!(end, '.' | '!' | '?')
                && space == ' '
                && (next.is_uppercase() || next.is_ascii_digit()))
            .then_some(at)
        });
        let (sentence, after) = match end {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        rest = after.trim_start();
        Some(sentence.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<!-- source: https://example.org/agents -->\n\n\
# Agents\n\n\
An agent is a model that plans and acts with tools. Planning decides which tool an agent calls next! \
Agents fail when their plans grow long.\n\n\
```python\nagent = Agent(tools=[search])\n```\n\n\
## Planning\n\n\
- A planner writes the [steps](https://example.org/steps) before any tool runs.\n\
| tool | cost |\n|---|---|\n| search | 1 |\n";

    #[test]
    fn the_summary_is_the_leading_prose_sentences_that_fit() {
        let describer = ExtractiveDescriber {
            summary_words: 20,
            keywords: 5,
        };
        let description = describer.description(Some("Agents"), PAGE);
        assert_eq!(
            description.summary,
            "An agent is a model that plans and acts with tools. Planning decides which tool an agent calls next!"
        );
        assert_eq!(description.described_by, DescribedBy::Extractive);
    }

    #[test]
    fn keywords_are_the_content_words_used_most_title_and_headings_first() {
        let description = ExtractiveDescriber::default().description(Some("Agents"), PAGE);
        assert_eq!(
            &description.keywords[..3],
            ["agents", "planning", "tool"],
            "{:?}",
            description.keywords
        );
        for left_out in ["python", "https", "example", "search", "cost"] {
            assert!(
                !description.keywords.iter().any(|k| k == left_out),
                "code, links and tables give no keyword: {:?}",
                description.keywords
            );
        }
    }

    #[test]
    fn a_first_sentence_longer_than_the_summary_is_cut_and_empty_text_gives_nothing() {
        let describer = ExtractiveDescriber {
            summary_words: 4,
            keywords: 2,
        };
        assert_eq!(
            describer
                .description(None, "One two three four five six.")
                .summary,
            "One two three four…"
        );
        let empty = describer.description(None, "");
        assert_eq!((empty.summary.as_str(), empty.keywords.len()), ("", 0));
        // Text with no sentence end is one sentence; text in another script still gives words.
        let greek = describer.description(None, "Η γάτα κάθεται στο χαλί και κοιτάζει");
        assert_eq!(greek.summary, "Η γάτα κάθεται στο…");
        assert_eq!(greek.keywords, ["γάτα", "κάθεται"]);
    }
}
