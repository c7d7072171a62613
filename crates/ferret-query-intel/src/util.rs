//! Small text helpers shared by the stages: word search, comparatives, joining words (tokens
//! and names are read by `ferret_core::text::names`). Offsets are bytes on char boundaries, so
//! callers can slice the original text without panicking.

use ferret_core::text::{one_line, words};

/// Byte offset of the first whole-word occurrence of `needle` in `haystack` at or after `from`.
///
/// `haystack` should be the ASCII-lowercased text so offsets carry over to the original.
pub(crate) fn find_word(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    let bytes = haystack.as_bytes();
    let is_word_byte = |b: u8| b.is_ascii_alphanumeric() || b >= 0x80 || b == b'_';
    let mut start = from;
    while start <= haystack.len() {
        let rel = haystack.get(start..)?.find(needle)?;
        let at = start + rel;
        let end = at + needle.len();
        let before_ok = at == 0 || !is_word_byte(bytes[at - 1]);
        let after_ok = end >= bytes.len() || !is_word_byte(bytes[end]);
        if before_ok && after_ok {
            return Some(at);
        }
        // Step past this match to the next char boundary.
        start = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Does `haystack` contain `needle` as a whole word or phrase?
pub(crate) fn has_word(haystack: &str, needle: &str) -> bool {
    find_word(haystack, needle, 0).is_some()
}

/// Lowercased, whitespace-collapsed form used to deduplicate queries.
pub(crate) fn dedup_key(text: &str) -> String {
    one_line(&text.to_lowercase())
}

/// Comparative and superlative adjectives, mapped to the attribute they compare, so
/// "Which is longer, X or Y?" searches "X length" and "Y length".
pub(crate) const COMPARATIVES: &[(&str, &str)] = &[
    ("older", "age"),
    ("oldest", "age"),
    ("younger", "age"),
    ("youngest", "age"),
    ("longer", "length"),
    ("longest", "length"),
    ("shorter", "length"),
    ("shortest", "length"),
    ("taller", "height"),
    ("tallest", "height"),
    ("higher", "height"),
    ("highest", "height"),
    ("bigger", "size"),
    ("biggest", "size"),
    ("larger", "size"),
    ("largest", "size"),
    ("smaller", "size"),
    ("smallest", "size"),
    ("heavier", "weight"),
    ("heaviest", "weight"),
    ("lighter", "weight"),
    ("lightest", "weight"),
    ("faster", "speed"),
    ("fastest", "speed"),
    ("slower", "speed"),
    ("slowest", "speed"),
    ("quicker", "speed"),
    ("quickest", "speed"),
    ("deeper", "depth"),
    ("deepest", "depth"),
    ("shallower", "depth"),
    ("wider", "width"),
    ("widest", "width"),
    ("narrower", "width"),
    ("hotter", "temperature"),
    ("hottest", "temperature"),
    ("colder", "temperature"),
    ("coldest", "temperature"),
    ("warmer", "temperature"),
    ("richer", "wealth"),
    ("richest", "wealth"),
    ("poorer", "wealth"),
    ("wealthier", "wealth"),
    ("cheaper", "price"),
    ("cheapest", "price"),
    ("pricier", "price"),
    ("populous", "population"),
    ("first", "date"),
    ("earlier", "date"),
    ("earliest", "date"),
    ("later", "date"),
    ("latest", "date"),
    ("sooner", "date"),
];

/// Does the question use a comparative or superlative ("longer", "oldest", "first")?
pub(crate) fn has_comparative(question: &str) -> bool {
    words(question).any(|w| COMPARATIVES.iter().any(|(c, _)| *c == w))
}

/// Join phrases, dropping words already present (case-insensitively).
pub(crate) fn join_words(parts: impl IntoIterator<Item = String>) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        for word in part.split_whitespace() {
            if seen.insert(word.to_lowercase()) {
                out.push(word.to_owned());
            }
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_word_respects_word_boundaries() {
        assert_eq!(find_word("xor or nor", "or", 0), Some(4));
        assert_eq!(find_word("café or tea", "or", 0), Some(6));
        assert!(find_word("ors", "or", 0).is_none());
        assert!(has_word("difference between a and b", "difference between"));
    }
}
