//! How Ferret reads plain text, in one place so every stage reads it alike: content terms, stop
//! and question words, stemming (the guardrail, the grader and the synthesizer agree on what a
//! "term" is), proper names ([`names`]) and what a question asks for ([`question`]). Sentences
//! are cut by [`crate::sentences`].

pub mod names;
pub mod question;

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;
use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::{FxHashMap, FxHashSet};

/// Common English words that carry no topic, question words included: what a question asks for
/// (how, why, when) is read by the analyzer from the raw text, not from these terms.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "either", "for", "from", "had", "has", "have", "having", "he",
    "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "me", "more", "most", "my", "neither", "no", "nor", "not", "of", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why",
    "will", "with", "would", "you", "your", "yours", "tell", "show", "find", "give", "know",
    "please", "many", "much", "s", "t",
];

/// Question words, lowercase; most are stop words too, but the stages need to recognise them as such.
pub const QUESTION_WORDS: &[&str] = &[
    "what", "whats", "how", "hows", "why", "when", "where", "who", "whos", "which", "whose", "whom",
];

/// Auxiliary verbs that open a yes/no question ("Were X and Y both ...?").
pub const AUX_VERBS: &[&str] = &[
    "is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "can", "could", "would",
    "will", "should", "shall", "may", "might", "must",
];

/// Is `lower` a question word ("what", "whose")?
pub fn is_question_word(lower: &str) -> bool {
    QUESTION_WORDS.contains(&lower)
}

/// Is `lower` an auxiliary verb that may open a yes/no question ("were", "can")?
pub fn is_aux_verb(lower: &str) -> bool {
    AUX_VERBS.contains(&lower)
}

fn stop_words() -> &'static FxHashSet<&'static str> {
    static SET: OnceLock<FxHashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Words stemmed on a thread are kept, cleared past this many so memory stays bounded.
const STEM_MEMO_CAPACITY: usize = 100_000;

thread_local! {
    /// The heuristics stem the same words of the same hits again and again (each grading round,
    /// each stage reading the hits), and looking a word up costs a fraction of stemming it.
    static STEMS: RefCell<FxHashMap<String, String>> = RefCell::new(FxHashMap::default());
}

/// Texts whose terms are kept on a thread, cleared past this many.
const TERMS_MEMO_CAPACITY: usize = 1_024;
/// Longest text, in bytes, whose terms are kept.
const TERMS_MEMO_LONGEST: usize = 16 * 1024;

thread_local! {
    static TERMS: RefCell<FxHashMap<String, std::rc::Rc<[String]>>> =
        RefCell::new(FxHashMap::default());
}

/// The English stem of `word` (lowercase).
fn stem(word: &str) -> String {
    STEMS.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(stem) = memo.get(word) {
            return stem.clone();
        }
        let stem = stemmer().stem(word).into_owned();
        if memo.len() >= STEM_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(word.to_owned(), stem.clone());
        stem
    })
}

/// Is `word` (lowercase) a stop word?
pub fn is_stop_word(word: &str) -> bool {
    stop_words().contains(word)
}

/// Lowercase words of `text`: runs of letters and digits, everything else a separator.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The stemmed content terms of `text`, in order, stop words removed, duplicates kept.
///
/// The terms of the last texts read on a thread are kept: the stages read the same hits again
/// and again (each grading round, the bridge, the answer), and a lookup costs a fraction of
/// reading.
pub fn content_terms(text: &str) -> Vec<String> {
    with_content_terms(text, <[String]>::to_vec)
}

/// `read` given the [`content_terms`] of `text`, without copying them.
pub fn with_content_terms<R>(text: &str, read: impl FnOnce(&[String]) -> R) -> R {
    TERMS.with(|memo| {
        let kept = memo.borrow().get(text).cloned();
        if let Some(terms) = kept {
            return read(&terms);
        }
        let terms: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .filter_map(|word| {
                // Most words are lowercase ASCII already: read in place, with no copy.
                let lower: std::borrow::Cow<'_, str> = if word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                {
                    word.into()
                } else {
                    word.to_lowercase().into()
                };
                (!is_stop_word(&lower)).then(|| stem(&lower))
            })
            .collect();
        let terms: std::rc::Rc<[String]> = terms.into();
        // Whole documents (a page being condensed) are read once: only hit-sized texts are kept,
        // so the memo stays within about TERMS_MEMO_CAPACITY x 16 KB a thread.
        if text.len() <= TERMS_MEMO_LONGEST {
            let mut memo = memo.borrow_mut();
            if memo.len() >= TERMS_MEMO_CAPACITY {
                memo.clear();
            }
            memo.insert(text.to_owned(), std::rc::Rc::clone(&terms));
        }
        read(&terms)
    })
}

/// The distinct stemmed content terms of `text`.
pub fn term_set(text: &str) -> HashSet<String> {
    content_terms(text).into_iter().collect()
}

/// Share of `query_terms` present in `document_terms`, in `0.0..=1.0`; 0 when the query has none.
pub fn coverage<S: std::hash::BuildHasher>(
    query_terms: &HashSet<String, S>,
    document_terms: &HashSet<String, S>,
) -> f32 {
    if query_terms.is_empty() {
        return 0.0;
    }
    let found = query_terms
        .iter()
        .filter(|t| document_terms.contains(*t))
        .count();
    found as f32 / query_terms.len() as f32
}

/// How a text that [`cut`] shortened ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutMark {
    /// Nothing marks the cut: for queries, which a search engine reads word by word.
    Plain,
    /// `…` marks the cut: for text a person or a model reads.
    Ellipsis,
}

/// `text` trimmed and, when longer than `max_chars` characters, cut to at most `max_chars`
/// characters, the mark included: on a word boundary, or mid-word when one word is longer than
/// the limit. An ellipsis also drops the punctuation left dangling before it (`Etna,…` would
/// read as a list), though not closing brackets or quotes. The one text-cutting rule of Ferret.
pub fn cut(text: &str, max_chars: usize, mark: CutMark) -> String {
    let text = text.trim();
    match mark {
        CutMark::Plain => cut_on_word(text, max_chars).to_owned(),
        CutMark::Ellipsis if text.chars().nth(max_chars).is_none() => text.to_owned(),
        CutMark::Ellipsis => {
            let head = cut_on_word(text, max_chars.saturating_sub(1));
            format!(
                "{}…",
                head.trim_end_matches(|c: char| !c.is_alphanumeric() && !is_closing(c))
            )
        }
    }
}

/// The longest head of `text` (already trimmed) of at most `max_chars` characters that ends at
/// a word boundary; a single word longer than that is cut mid-word.
fn cut_on_word(text: &str, max_chars: usize) -> &str {
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let head = &text[..end];
    if text[end..].starts_with(char::is_whitespace) {
        return head.trim_end();
    }
    match head.rfind(char::is_whitespace) {
        Some(i) if !head[..i].trim().is_empty() => head[..i].trim_end(),
        _ => head,
    }
}

/// Closes a parenthesis or a quotation, and so may follow a sentence's final punctuation.
pub fn is_closing(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | '\u{201d}' | '\u{2019}' | '\u{bb}')
}

/// `text` on one line: line breaks as spaces, runs of whitespace as one space, trimmed.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Byte ranges of the years in `text`: four digits from 1000 to 2099 standing as a word of
/// their own ("in 1999.", "(2019)"; not "12345" or "1990s").
pub fn years(text: &str) -> Vec<(usize, usize)> {
    static YEAR: OnceLock<Regex> = OnceLock::new();
    YEAR.get_or_init(|| Regex::new(r"\b(1[0-9]{3}|20[0-9]{2})\b").expect("valid pattern"))
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn years_stand_alone_as_words() {
        let text = "In 1999, (2019) and 2100; not 12345, 1990s, x1850 or 0999; 1066.";
        let found: Vec<&str> = super::years(text)
            .into_iter()
            .map(|(start, end)| &text[start..end])
            .collect();
        assert_eq!(found, ["1999", "2019", "1066"]);
    }

    use super::*;

    #[test]
    fn content_terms_drop_stop_words_and_stem() {
        assert_eq!(
            content_terms("What are the Running costs of cats?"),
            ["run", "cost", "cat"]
        );
    }

    #[test]
    fn coverage_is_the_share_of_query_terms_found() {
        let q = term_set("solar panel efficiency");
        let d = term_set("Solar panels convert light.");
        assert!(
            (coverage(&q, &d) - 2.0 / 3.0).abs() < 1e-6,
            "panel and panels share a stem"
        );
        assert_eq!(
            coverage(&q, &term_set("Efficient solar panels")),
            1.0,
            "so do efficiency and efficient"
        );
        assert_eq!(coverage(&term_set("the of"), &d), 0.0);
    }

    #[test]
    fn cuts_end_on_a_word_and_stay_within_the_limit() {
        assert_eq!(cut("alpha beta gamma", 10, CutMark::Plain), "alpha beta");
        assert_eq!(cut("alpha beta gamma", 11, CutMark::Plain), "alpha beta");
        assert_eq!(cut("alphabetagamma", 5, CutMark::Plain), "alpha");
        assert_eq!(cut("  short  ", 100, CutMark::Plain), "short");
        assert_eq!(cut("one two three four", 12, CutMark::Ellipsis), "one two…");
        assert_eq!(cut("éééééé", 5, CutMark::Ellipsis), "éééé…");
        assert_eq!(cut("one, two, three", 10, CutMark::Ellipsis), "one, two…");
        assert_eq!(
            cut("He said \"yes\" then left", 16, CutMark::Ellipsis),
            "He said \"yes\"…"
        );
        assert_eq!(cut("short", 5, CutMark::Ellipsis), "short");
    }

    proptest::proptest! {
        #[test]
        fn a_cut_never_exceeds_its_limit(text in ".{0,80}", max in 0usize..40, ellipsis: bool) {
            let mark = if ellipsis { CutMark::Ellipsis } else { CutMark::Plain };
            let out = cut(&text, max, mark);
            proptest::prop_assert!(out.chars().count() <= max.max(usize::from(ellipsis)), "{out:?}");
            if text.trim().chars().count() <= max {
                proptest::prop_assert_eq!(out, text.trim());
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn coverage_stays_in_unit_range(q in ".{0,60}", d in ".{0,200}") {
            let c = coverage(&term_set(&q), &term_set(&d));
            proptest::prop_assert!((0.0..=1.0).contains(&c));
        }
    }

    proptest::proptest! {
        /// Read in place and remembered, the terms are those of lowercasing, dropping stop
        /// words and stemming each word, every time.
        #[test]
        fn content_terms_are_each_words_stem(text in "(?s)[a-zA-ZÀ-ɏΑ-ω0-9İ .,'-]{0,120}") {
            let plain: Vec<String> = words(&text)
                .filter(|w| !is_stop_word(w))
                .map(|w| stemmer().stem(&w).into_owned())
                .collect();
            proptest::prop_assert_eq!(&content_terms(&text), &plain);
            proptest::prop_assert_eq!(&content_terms(&text), &plain);
        }
    }
}
