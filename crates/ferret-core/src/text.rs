//! Plain-text helpers the heuristic stages share: splitting into content terms, stop words,
//! stemming. Kept here so the guardrail, the grader and the synthesizer agree on what a "term" is.

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Common English words that carry no topic, question words included: what a question asks for
/// (how, why, when) is read by the analyzer from the raw text, not from these terms.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
    "during", "each", "either", "for", "from", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me",
    "more", "most", "my", "neither", "no", "nor", "not", "of", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "whose", "why", "will", "with", "would", "you", "your",
    "yours", "tell", "show", "find", "give", "know", "please", "many", "much", "s", "t",
];

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Is `word` (lowercase) a stop word?
pub fn is_stop_word(word: &str) -> bool {
    stop_words().contains(word)
}

/// Lowercase words of `text`: runs of letters and digits, everything else a separator.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The stemmed content terms of `text`, in order, stop words removed, duplicates kept.
pub fn content_terms(text: &str) -> Vec<String> {
    words(text).filter(|w| !is_stop_word(w)).map(|w| stemmer().stem(&w).into_owned()).collect()
}

/// The distinct stemmed content terms of `text`.
pub fn term_set(text: &str) -> HashSet<String> {
    content_terms(text).into_iter().collect()
}

/// Share of `query_terms` present in `document_terms`, in `0.0..=1.0`; 0 when the query has none.
pub fn coverage(query_terms: &HashSet<String>, document_terms: &HashSet<String>) -> f32 {
    if query_terms.is_empty() {
        return 0.0;
    }
    let found = query_terms.iter().filter(|t| document_terms.contains(*t)).count();
    found as f32 / query_terms.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_terms_drop_stop_words_and_stem() {
        assert_eq!(content_terms("What are the Running costs of cats?"), ["run", "cost", "cat"]);
    }

    #[test]
    fn coverage_is_the_share_of_query_terms_found() {
        let q = term_set("solar panel efficiency");
        let d = term_set("Solar panels convert light.");
        assert!((coverage(&q, &d) - 2.0 / 3.0).abs() < 1e-6, "panel and panels share a stem");
        assert_eq!(coverage(&q, &term_set("Efficient solar panels")), 1.0, "so do efficiency and efficient");
        assert_eq!(coverage(&term_set("the of"), &d), 0.0);
    }

    proptest::proptest! {
        #[test]
        fn coverage_stays_in_unit_range(q in ".{0,60}", d in ".{0,200}") {
            let c = coverage(&term_set(&q), &term_set(&d));
            proptest::prop_assert!((0.0..=1.0).contains(&c));
        }
    }
}
