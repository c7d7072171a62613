//! Proper names in text: runs of capitalised words with the lowercase words names hold inside
//! ("Bank of England"), middle initials and possessives read, and quoted titles. Every stage
//! that looks for names (the analyzer, the bridge, follow-ups, the extractive answer) reads them
//! here, so a fix to the reading reaches all of them. Offsets are bytes on char boundaries.

use std::sync::LazyLock;

use regex::Regex;

use super::{is_question_word, is_stop_word};

/// How a lone capitalised word that opens a sentence is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoneOpener {
    /// A name: in a passage, "Paris is the capital" names Paris.
    Name,
    /// Not a name: in a question or command it is more often a verb or a question word.
    NotName,
}

/// Capitalised words that open a sentence without being a name: verbs of a command ("Upgrade
/// Spring Boot ..."), and words that open a statement ("However", "Born in ...").
const SENTENCE_OPENERS: &[&str] = &[
    "however",
    "although",
    "since",
    "following",
    "born",
    "one",
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

/// Lowercase words that may join the capitalised words of one name ("Bank of England",
/// "Leonardo da Vinci", "Kenan & Kel"). Not "and": "X and Y" are two names.
const NAME_JOINERS: &[&str] = &[
    "of", "de", "van", "von", "der", "den", "da", "del", "della", "di", "du", "la", "le", "y", "&",
    "the",
];

/// The months, as names are written: a number after one makes a date, not a name.
const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Words ending in '.' that do not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "vs", "e.g", "i.e", "etc", "mr", "mrs", "ms", "dr", "st", "jr", "sr", "no", "vol", "fig",
    "approx", "ca",
];

/// One whitespace-delimited token, with the punctuation around its word noted.
#[derive(Debug, Clone)]
pub struct Token<'a> {
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
    /// The word in lowercase.
    pub fn lower(&self) -> String {
        self.word.to_lowercase()
    }
}

/// Split `text` on whitespace; each token's word is trimmed of non-alphanumeric characters.
pub fn tokenize(text: &str) -> Vec<Token<'_>> {
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
        if raw == "&" {
            // The one joiner written without letters ("Kenan & Kel").
            tokens.push(Token {
                word: raw,
                start: raw_start,
                end: raw_end,
                sentence_start: next_is_start,
                trailing_punct: false,
                leading_punct: false,
                initial: false,
            });
            next_is_start = false;
            continue;
        }
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
pub fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .unwrap_or(word)
}

/// Is `class` a CamelCase error class name such as `NoClassDefFoundError`?
pub fn is_error_class(word: &str) -> bool {
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
    !(tok.sentence_start && SENTENCE_OPENERS.contains(&lower.as_str()))
}

/// Byte spans of capitalised word runs ("Spring Boot", "Bank of England") in `text`.
///
/// A single capitalised word that opens a sentence is ambiguous ("Paris is ..." against
/// "Upgrade ..."): `lone_opener` says how to read it.
pub fn name_runs(text: &str, lone_opener: LoneOpener) -> Vec<(usize, usize)> {
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
                && NAME_JOINERS.contains(&tokens[k].word)
            {
                k += 1;
            }
            // A number right after a name word is part of it ("Saab 36", "Apollo 11"); after a
            // month it is a date ("December 1899").
            let numbered = |next: &Token<'_>| {
                k == last + 1
                    && !next.word.is_empty()
                    && next.word.bytes().all(|b| b.is_ascii_digit())
                    && !MONTHS.contains(&tokens[last].word)
            };
            match tokens.get(k) {
                Some(next)
                    if !next.leading_punct
                        && !next.sentence_start
                        && (is_name_word(next) || numbered(next)) =>
                {
                    last = k;
                    name_words += 1;
                }
                _ => break,
            }
        }
        if name_words >= 2 || !tokens[first].sentence_start || lone_opener == LoneOpener::Name {
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
pub fn quoted_spans(text: &str) -> Vec<(usize, usize)> {
    QUOTED
        .captures_iter(text)
        .filter_map(|caps| caps.iter().skip(1).flatten().next())
        .filter(|inner| !inner.as_str().trim().is_empty())
        .map(|inner| (inner.start(), inner.end()))
        .collect()
}

/// Byte spans of the titles written in quotes: a quoted run of one to eight words opening with a
/// capital or a digit ("\"Hey Jude\"", "'Nevermind'").
pub fn quoted_titles(text: &str) -> Vec<(usize, usize)> {
    quoted_spans(text)
        .into_iter()
        .filter(|&(start, end)| {
            let title = &text[start..end];
            let opens_as_title = title
                .trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
            opens_as_title && (1..=MAX_TITLE_WORDS).contains(&title.split_whitespace().count())
        })
        .collect()
}

/// Most words a quoted title holds; a longer quote is a quotation.
const MAX_TITLE_WORDS: usize = 8;

/// Byte spans of every proper name in a passage, in order: capitalised runs (a lone word opening
/// a sentence included) and quoted titles, a title that is also a run given once.
pub fn proper_names(text: &str) -> Vec<(usize, usize)> {
    let mut found = name_runs(text, LoneOpener::Name);
    for title in quoted_titles(text) {
        if !found.contains(&title) {
            found.push(title);
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, lone_opener: LoneOpener) -> Vec<&str> {
        name_runs(text, lone_opener)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect()
    }

    #[test]
    fn name_runs_follow_the_sentence_start_rule() {
        assert_eq!(
            names("Who was Marie Curie's teacher?", LoneOpener::NotName),
            ["Marie Curie"]
        );
        assert_eq!(
            names("Was it Arthur's Magazine?", LoneOpener::NotName),
            ["Arthur's Magazine"]
        );
        assert_eq!(
            names("Paris is the capital of France.", LoneOpener::NotName),
            ["France"]
        );
        assert_eq!(
            names(
                "It was born of Harry S. Truman. Then Fly540 flew.",
                LoneOpener::NotName
            ),
            ["Harry S. Truman", "Fly540"]
        );
        assert_eq!(
            names("Paris is the capital of France.", LoneOpener::Name),
            ["Paris", "France"]
        );
        assert_eq!(
            names("Upgrade Spring Boot to 3", LoneOpener::NotName),
            ["Spring Boot"]
        );
        assert_eq!(
            names("Where is the Bank of England?", LoneOpener::NotName),
            ["Bank of England"]
        );
        assert_eq!(
            names("Is Python or Java faster?", LoneOpener::NotName),
            ["Python", "Java"]
        );
        assert_eq!(
            names("Python vs. Java", LoneOpener::NotName),
            ["Java"],
            "'vs.' does not end a sentence"
        );
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
