//! Proper names in a sentence: runs of capitalised words, with the connectors names hold
//! inside, and quoted titles.

use std::sync::OnceLock;

use regex::Regex;

/// A piece of a sentence, by byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn text<'a>(&self, sentence: &'a str) -> &'a str {
        &sentence[self.start..self.end]
    }
}

/// Lowercase words that may join the capitalised words of one name ("University of Texas",
/// "Ludwig van Beethoven", "Kenan & Kel"). Not "and": "X and Y" are two names.
const CONNECTORS: &[&str] = &[
    "of", "de", "van", "von", "der", "den", "da", "del", "della", "di", "du", "la", "le", "y", "&",
    "the",
];

/// Capitalised words that start sentences without naming anything.
const NOT_NAMES: &[&str] = &[
    "The",
    "A",
    "An",
    "He",
    "She",
    "It",
    "They",
    "His",
    "Her",
    "Its",
    "Their",
    "This",
    "That",
    "These",
    "Those",
    "In",
    "On",
    "At",
    "After",
    "Before",
    "During",
    "As",
    "From",
    "With",
    "By",
    "For",
    "When",
    "While",
    "Although",
    "However",
    "Since",
    "Following",
    "There",
    "We",
    "I",
    "Is",
    "Was",
    "Are",
    "Were",
    "Do",
    "Does",
    "Did",
    "Has",
    "Have",
    "Had",
    "Can",
    "Could",
    "Which",
    "What",
    "Who",
    "Where",
    "How",
    "Why",
    "Some",
    "Many",
    "Most",
    "Other",
    "Both",
    "Each",
    "One",
    "Also",
    "Born",
];

/// Proper names in `sentence`, in order.
pub(crate) fn names(sentence: &str) -> Vec<Span> {
    let mut out = Vec::new();
    // Words with their byte ranges.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in sentence.char_indices() {
        let part_of_word = c.is_alphanumeric() || matches!(c, '.' | '-' | '\'' | '&');
        match (part_of_word, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, sentence.len()));
    }
    let word = |(s, e): (usize, usize)| sentence[s..e].trim_end_matches(['.', '\'']);
    let capitalised = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
    let mut i = 0;
    while i < words.len() {
        if !capitalised(word(words[i])) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut last = i;
        while j < words.len() {
            // A comma, bracket or quote between two words ends the name.
            let gap = &sentence[words[j - 1].1..words[j].0];
            if gap.trim().chars().any(|c| !c.is_whitespace()) {
                break;
            }
            let w = word(words[j]);
            if capitalised(w) || w.chars().all(|c| c.is_ascii_digit()) && last == j - 1 {
                last = j;
            } else if !CONNECTORS.contains(&w) {
                break;
            }
            j += 1;
        }
        let mut first = i;
        while first <= last && NOT_NAMES.contains(&word(words[first])) {
            first += 1;
        }
        if first <= last {
            let end = words[last].0 + word(words[last]).len();
            out.push(Span {
                start: words[first].0,
                end,
            });
        }
        i = last + 1;
    }
    for quoted in quoted_titles(sentence) {
        if !out
            .iter()
            .any(|s| s.start == quoted.start && s.end == quoted.end)
        {
            out.push(quoted);
        }
    }
    out.sort_by_key(|s| s.start);
    out
}

/// Text between straight or curly double quotes, up to eight words.
fn quoted_titles(sentence: &str) -> Vec<Span> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r#"["“]([^"”]{1,80})["”]"#).expect("valid pattern"));
    re.captures_iter(sentence)
        .filter_map(|c| c.get(1))
        .filter(|m| (1..=8).contains(&m.as_str().split_whitespace().count()))
        .map(|m| Span {
            start: m.start(),
            end: m.end(),
        })
        .collect()
}
