//! Small text helpers shared by the stages: tokens with byte offsets, name runs, word search and
//! cutting on a word boundary. Everything here works on byte offsets that are always char
//! boundaries, so callers can slice the original text without panicking.

use std::sync::LazyLock;

use ferret_core::text::{is_stop_word, one_line, words};
use regex::Regex;

/// Question words; most are stop words too, but the stages need to recognise them as such.
pub(crate) const QUESTION_WORDS: &[&str] = &[
    "what", "whats", "how", "hows", "why", "when", "where", "who", "whos", "which", "whose", "whom",
];

/// Auxiliary verbs that open a yes/no question ("Were X and Y both ...?").
pub(crate) const AUX_VERBS: &[&str] = &[
    "is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "can", "could", "would",
    "will", "should", "shall", "may", "might", "must",
];

/// Capitalised words that open a sentence without being a name ("Upgrade Spring Boot ...").
const LEADING_VERBS: &[&str] = &[
    "upgrade",
    "upgrading",
    "install",
    "installing",
    "use",
    "using",
    "migrate",
    "migrating",
    "update",
    "updating",
    "compare",
    "comparing",
    "run",
    "running",
    "fix",
    "fixing",
    "show",
    "find",
    "get",
    "getting",
    "set",
    "setting",
    "make",
    "build",
    "building",
    "explain",
    "describe",
    "list",
    "define",
    "name",
    "help",
    "search",
    "searching",
    "looking",
    "configure",
    "configuring",
    "deploy",
    "deploying",
    "create",
    "creating",
    "write",
    "writing",
    "read",
    "reading",
    "add",
    "adding",
    "remove",
    "removing",
    "enable",
    "disable",
    "convert",
    "converting",
    "debug",
    "debugging",
    "hi",
    "hello",
    "hey",
    "thanks",
    "ok",
    "okay",
    "yes",
    "so",
    "also",
    "then",
    "now",
    "please",
    "since",
    "although",
    "though",
    "because",
    "unless",
    "yet",
    "still",
    "maybe",
    "perhaps",
    "summarize",
    "summarise",
    "outline",
    "discuss",
    "identify",
    "suggest",
    "recommend",
    "provide",
    "draft",
    "translate",
    "calculate",
    "check",
    "research",
    "report",
    "review",
    "survey",
];

/// Lowercase words that may sit inside a multiword name ("Bank of England", "Leonardo da Vinci").
const NAME_CONNECTORS: &[&str] = &[
    "of", "de", "da", "del", "der", "van", "von", "la", "le", "du", "the",
];

/// Words ending in '.' that do not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "vs", "e.g", "i.e", "etc", "mr", "mrs", "ms", "dr", "st", "jr", "sr", "no", "vol", "fig",
    "approx", "ca",
];

pub(crate) fn is_question_word(lower: &str) -> bool {
    QUESTION_WORDS.contains(&lower)
}

pub(crate) fn is_aux_verb(lower: &str) -> bool {
    AUX_VERBS.contains(&lower)
}

/// One whitespace-delimited token, with the punctuation around its word noted.
#[derive(Debug, Clone)]
pub(crate) struct Token<'a> {
    /// The token without surrounding punctuation (may be empty for a token of pure punctuation).
    pub word: &'a str,
    /// Byte offset of `word` in the tokenized text.
    pub start: usize,
    /// Byte offset just past `word`.
    pub end: usize,
    /// First token of the text or of a sentence.
    pub sentence_start: bool,
    /// Punctuation followed the word inside the token ("Boot,").
    pub trailing_punct: bool,
    /// Punctuation preceded the word inside the token.
    pub leading_punct: bool,
    /// A capital letter and a full stop: a middle initial, part of the name around it.
    pub initial: bool,
}

impl Token<'_> {
    pub(crate) fn lower(&self) -> String {
        self.word.to_lowercase()
    }
}

/// Split `text` on whitespace; each token's word is trimmed of non-alphanumeric characters.
pub(crate) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut next_is_start = true;
    let mut last_end = 0usize;
    for raw in text.split_whitespace() {
        // `raw` is a subslice of `text`, so its offset is the pointer difference.
        let raw_start = raw.as_ptr() as usize - text.as_ptr() as usize;
        let raw_end = raw_start + raw.len();
        if text[last_end..raw_start].contains('\n') {
            next_is_start = true;
        }
        last_end = raw_end;
        let trimmed_front = raw.trim_start_matches(|c: char| !c.is_alphanumeric());
        let word = trimmed_front.trim_end_matches(|c: char| !c.is_alphanumeric());
        let start = raw_start + (raw.len() - trimmed_front.len());
        let end = start + word.len();
        let tail = &text[end..raw_end];
        // A middle initial ("Harry S. Truman") neither ends the name nor the sentence.
        let initial =
            tail == "." && word.len() == 1 && word.chars().all(|c| c.is_ascii_uppercase());
        tokens.push(Token {
            word,
            start,
            end,
            sentence_start: next_is_start,
            trailing_punct: !tail.is_empty() && !initial,
            leading_punct: start > raw_start,
            initial,
        });
        let tail_core = tail.trim_end_matches(['"', '\'', ')', ']', '”', '’']);
        let ends_sentence = tail_core.ends_with(['.', '!', '?', ':', ';'])
            && !initial
            && !(tail_core == "." && ABBREVIATIONS.contains(&word.to_lowercase().as_str()));
        next_is_start = ends_sentence;
    }
    tokens
}

/// Remove a possessive "'s" so "Curie's" is the name "Curie".
pub(crate) fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .unwrap_or(word)
}

/// Is `class` a CamelCase error class name such as `NoClassDefFoundError`?
pub(crate) fn is_error_class(word: &str) -> bool {
    let first_upper = word.chars().next().is_some_and(char::is_uppercase);
    let suffix = word
        .strip_suffix("Error")
        .or_else(|| word.strip_suffix("Exception"));
    first_upper
        && suffix.is_some_and(|s| !s.is_empty())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Could this token be part of a name? Verbs that open a sentence ("Upgrade ...") are not.
fn is_name_word(tok: &Token<'_>) -> bool {
    let word = strip_possessive(tok.word);
    let Some(first) = word.chars().next() else {
        return false;
    };
    if !first.is_uppercase() || is_error_class(word) {
        return false;
    }
    if !word
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '–' || c == '\'' || c == '’' || c == '&')
    {
        return false;
    }
    if tok.initial {
        return true;
    }
    let lower = word.to_lowercase();
    if is_stop_word(&lower) || is_question_word(&lower) {
        return false;
    }
    !(tok.sentence_start && LEADING_VERBS.contains(&lower.as_str()))
}

/// Byte spans of capitalised word runs ("Spring Boot", "Bank of England") in `text`.
///
/// A single capitalised word that opens a sentence is ambiguous ("Paris is ..." vs "Where ...");
/// it counts only when `allow_leading_single` is set.
pub(crate) fn name_runs(text: &str, allow_leading_single: bool) -> Vec<(usize, usize)> {
    let tokens = tokenize(text);
    let mut runs = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_name_word(&tokens[i]) {
            i += 1;
            continue;
        }
        let first = i;
        let mut last = i;
        let mut name_words = 1;
        loop {
            let cur = &tokens[last];
            // A possessive does not end a name: "Arthur's Magazine" is one title.
            if cur.trailing_punct {
                break;
            }
            // Up to two connectors ("of the") may join capitalised words.
            let mut k = last + 1;
            while k < tokens.len()
                && k - last <= 2
                && !tokens[k].trailing_punct
                && !tokens[k].leading_punct
                && NAME_CONNECTORS.contains(&tokens[k].word)
            {
                k += 1;
            }
            match tokens.get(k) {
                Some(next) if !next.leading_punct && !next.sentence_start && is_name_word(next) => {
                    last = k;
                    name_words += 1;
                }
                _ => break,
            }
        }
        if name_words >= 2 || !tokens[first].sentence_start || allow_leading_single {
            let end = tokens[last].start + strip_possessive(tokens[last].word).len();
            runs.push((tokens[first].start, end));
        }
        i = last + 1;
    }
    runs
}

static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""([^"\n]+)"|“([^”\n]+)”|(?:^|[\s(\[{])'([^'\n]+)'(?:$|[\s.,;:!?)\]}])|(?:^|[\s(\[{])‘([^’\n]+)’"#)
        .expect("valid regex")
});

/// Byte spans of what stands in double, single or curly quotes (an apostrophe is no quote), for
/// quotes holding more than blanks.
pub(crate) fn quoted_spans(text: &str) -> Vec<(usize, usize)> {
    QUOTED
        .captures_iter(text)
        .filter_map(|caps| caps.iter().skip(1).flatten().next())
        .filter(|inner| !inner.as_str().trim().is_empty())
        .map(|inner| (inner.start(), inner.end()))
        .collect()
}

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

    fn names(text: &str, allow: bool) -> Vec<&str> {
        name_runs(text, allow)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect()
    }

    #[test]
    fn name_runs_follow_the_sentence_start_rule() {
        assert_eq!(
            names("Who was Marie Curie's teacher?", false),
            ["Marie Curie"]
        );
        assert_eq!(
            names("Was it Arthur's Magazine?", false),
            ["Arthur's Magazine"]
        );
        assert_eq!(names("Paris is the capital of France.", false), ["France"]);
        assert_eq!(
            names("It was born of Harry S. Truman. Then Fly540 flew.", false),
            ["Harry S. Truman", "Fly540"]
        );
        assert_eq!(
            names("Paris is the capital of France.", true),
            ["Paris", "France"]
        );
        assert_eq!(names("Upgrade Spring Boot to 3", false), ["Spring Boot"]);
        assert_eq!(
            names("Where is the Bank of England?", false),
            ["Bank of England"]
        );
        assert_eq!(
            names("Is Python or Java faster?", false),
            ["Python", "Java"]
        );
        assert_eq!(
            names("Python vs. Java", false),
            ["Java"],
            "'vs.' does not end a sentence"
        );
    }

    #[test]
    fn find_word_respects_word_boundaries() {
        assert_eq!(find_word("xor or nor", "or", 0), Some(4));
        assert_eq!(find_word("café or tea", "or", 0), Some(6));
        assert!(find_word("ors", "or", 0).is_none());
        assert!(has_word("difference between a and b", "difference between"));
    }

    #[test]
    fn error_classes_need_a_camel_case_prefix() {
        assert!(is_error_class("NoClassDefFoundError"));
        assert!(is_error_class("IOException"));
        assert!(!is_error_class("Error"));
        assert!(!is_error_class("Exception"));
        assert!(!is_error_class("error"));
    }
}
