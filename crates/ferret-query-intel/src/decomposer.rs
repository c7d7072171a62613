//! The query decomposer: split a complex question into a few
//! focused, affirmative sub-queries, one search each.

use std::collections::HashSet;
use std::sync::LazyLock;

use ferret_core::text::{content_terms, cut, is_stop_word, one_line, words, CutMark};
use ferret_core::StageOutput;
use regex::Regex;

use crate::analyzer::{is_comparison_question, Analysis, Complexity, QueryType};
use crate::error_question::{error_version_queries, root_cause};
use crate::util::{dedup_key, find_word, join_words, COMPARATIVES};
use ferret_core::text::names::{name_runs, strip_possessive, tokenize, LoneOpener, Token};
use ferret_core::text::question::Asked;
use ferret_core::text::{is_aux_verb, is_question_word};

/// A question split into focused queries, with what the decomposer thinks is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decomposition {
    /// The sub-queries: the question itself when it is simple, never none.
    pub sub_queries: Vec<String>,
    /// For an error, a brief hypothesis of its root cause, when the decomposer has one.
    pub root_cause: Option<String>,
}

/// Splits a question into sub-queries.
#[async_trait::async_trait]
pub trait QueryDecomposer: Send + Sync {
    /// Sub-queries for `question`: the question itself when it is simple, otherwise 2-3 focused
    /// queries, never more than `max_sub_queries` (0 is treated as 1) and never none; for an
    /// error, a root-cause hypothesis beside them.
    async fn decompose(
        &self,
        question: &str,
        analysis: &Analysis,
        max_sub_queries: usize,
    ) -> StageOutput<Decomposition>;
}

/// The deterministic decomposer: comparison sides, question parts, error + version, no model.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicDecomposer;

impl HeuristicDecomposer {
    /// Longest sub-query, in characters.
    pub const MAX_SUB_QUERY_CHARS: usize = 99;

    /// Decompose synchronously; [`QueryDecomposer::decompose`] wraps this.
    ///
    /// A simple question comes back as it is. A complex one is split, first match wins: into its
    /// parts when it asks several questions; into one query per side (with the shared topic
    /// words) when it compares; into error, compatibility and fix queries when it names an error
    /// class and a version. When no rule applies the question comes back as it is.
    pub fn sub_queries(
        &self,
        question: &str,
        analysis: &Analysis,
        max_sub_queries: usize,
    ) -> Vec<String> {
        let max = max_sub_queries.max(1);
        if analysis.complexity == Complexity::Simple {
            return vec![question.to_owned()];
        }
        let comparison = analysis.query_type == QueryType::Comparison || {
            let asked = analysis
                .asked
                .clone()
                .unwrap_or_else(|| Asked::read(question));
            is_comparison_question(question, &asked)
        };
        let queries = question_parts(question)
            .or_else(|| comparison.then(|| comparison_queries(question)).flatten())
            .or_else(|| error_version_queries(question, analysis))
            .or_else(|| comparison_queries(question))
            .map(|qs| finish(qs, max))
            .unwrap_or_default();
        if queries.is_empty() {
            vec![question.to_owned()]
        } else {
            queries
        }
    }
}

#[async_trait::async_trait]
impl QueryDecomposer for HeuristicDecomposer {
    async fn decompose(
        &self,
        question: &str,
        analysis: &Analysis,
        max_sub_queries: usize,
    ) -> StageOutput<Decomposition> {
        StageOutput::heuristic(Decomposition {
            sub_queries: self.sub_queries(question, analysis, max_sub_queries),
            root_cause: root_cause(question, analysis),
        })
    }
}

/// Affirmative, trimmed, cut, non-empty, distinct, at most `max`.
fn finish(queries: Vec<String>, max: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    queries
        .into_iter()
        .map(|q| {
            let q = one_line(&q);
            let q = trim_punctuation(&q);
            trim_punctuation(&cut(
                q,
                HeuristicDecomposer::MAX_SUB_QUERY_CHARS,
                CutMark::Plain,
            ))
            .to_owned()
        })
        .filter(|q| !q.is_empty() && seen.insert(dedup_key(q)))
        .take(max)
        .collect()
}

fn trim_punctuation(text: &str) -> &str {
    text.trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '?' | '.' | ',' | ';' | ':' | '!' | '"' | '(' | ')')
    })
}

// ---------------------------------------------------------------------------------------------
// Several questions in one.

/// Leading words that only join a part to the previous one.
const PART_CONNECTORS: &[&str] = &["and", "also", "then", "plus", "or", "so", "but"];

/// The parts of a question that asks several ("What is X? And how does Y work?", "X and also Y").
fn question_parts(question: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    for segment in question.split('?') {
        for piece in split_on(segment, |lower, from| {
            find_word(lower, "and also", from).map(|at| (at, at + 8))
        }) {
            parts.extend(split_on(piece, question_and));
        }
    }
    let parts: Vec<String> = parts
        .into_iter()
        .map(strip_part_connectors)
        .filter(|p| !content_terms(p).is_empty())
        .collect();
    (parts.len() >= 2).then_some(parts)
}

/// Split `text` at every separator `find(lowercase, from)` reports as `(start, end)`.
fn split_on(text: &str, find: impl Fn(&str, usize) -> Option<(usize, usize)>) -> Vec<&str> {
    let lower = text.to_ascii_lowercase();
    let mut pieces = Vec::new();
    let mut last = 0;
    let mut from = 0;
    while let Some((start, end)) = find(&lower, from) {
        if start >= last {
            pieces.push(&text[last..start]);
            last = end;
        }
        from = end;
    }
    pieces.push(&text[last..]);
    pieces
}

/// An "and" whose right side opens with a question word while its left side has one.
fn question_and(lower: &str, from: usize) -> Option<(usize, usize)> {
    let mut at_from = from;
    while let Some(at) = find_word(lower, "and", at_from) {
        let left_asks = words(&lower[from..at]).any(|w| is_question_word(&w));
        let right_asks = words(&lower[at + 3..])
            .find(|w| w != "then" && w != "also")
            .is_some_and(|w| is_question_word(&w));
        if left_asks && right_asks {
            return Some((at, at + 3));
        }
        at_from = at + 3;
    }
    None
}

fn strip_part_connectors(part: &str) -> String {
    let mut rest = trim_punctuation(part);
    loop {
        let first = rest.split_whitespace().next().unwrap_or("");
        let bare = first
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if !first.is_empty() && PART_CONNECTORS.contains(&bare.as_str()) {
            rest = trim_punctuation(&rest[first.len()..]);
        } else {
            return rest.to_owned();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// Event verbs mapped to nouns, so "born first" searches "birth date".
const EVENT_NOUNS: &[(&str, &str)] = &[
    ("born", "birth"),
    ("died", "death"),
    ("founded", "founding"),
    ("established", "founding"),
    ("released", "release"),
    ("published", "publication"),
    ("built", "construction"),
    ("opened", "opening"),
    ("formed", "formation"),
];

/// Words of a comparison that are not its topic.
const NOT_TOPIC: &[&str] = &[
    "vs",
    "versus",
    "compare",
    "compared",
    "compares",
    "comparing",
    "comparison",
    "difference",
    "differences",
    "different",
    "differ",
    "differs",
    "similar",
    "similarity",
    "similarities",
    "same",
    "alike",
    "common",
    "better",
    "worse",
    "best",
    "worst",
    "prefer",
    "preferable",
    "choose",
    "pick",
    "use",
    "using",
    "used",
    "get",
    "than",
    "either",
    "one",
    "ones",
    "like",
    "whether",
    "rather",
    "really",
    "actually",
    "pros",
    "cons",
    "whats",
];

/// Verbs that say nothing about the topic ("Which came first?") but may be a side ("Rust vs Go").
const NOT_TOPIC_VERBS: &[&str] = &["came", "come", "go", "goes", "went"];

static VS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\s+(?:vs\.?|versus)\s+").expect("valid regex"));
static COMPARED_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:compared?|compares|comparing|comparison)\s+(?:to|with|against)\s")
        .expect("valid regex")
});
static COMPARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:compare|comparing|comparison\s+(?:of|between))\s").expect("valid regex")
});

/// One query per compared side, each carrying the shared topic words.
fn comparison_queries(question: &str) -> Option<Vec<String>> {
    let text = trim_punctuation(question);
    let sides = vs_sides(text)
        .or_else(|| between_sides(text))
        .or_else(|| compare_sides(text))
        .or_else(|| or_sides(text))
        .or_else(|| pair_sides(text, "and"))
        .or_else(|| pair_sides(text, "than"))?;
    let topic = topic_words(question, &sides);
    Some(
        sides
            .into_iter()
            .map(|side| join_words(std::iter::once(side).chain(topic.iter().cloned())))
            .collect(),
    )
}

/// At least two distinct, non-empty sides, or nothing.
fn two_or_more(sides: Vec<String>) -> Option<Vec<String>> {
    let mut seen = HashSet::new();
    let sides: Vec<String> = sides
        .into_iter()
        .filter(|s| !s.is_empty() && seen.insert(dedup_key(s)))
        .collect();
    (sides.len() >= 2).then_some(sides)
}

fn vs_sides(text: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = VS.split(text).collect();
    let (first, rest) = parts.split_first()?;
    let (last, middle) = rest.split_last()?;
    let mut sides = vec![left_side(first)];
    sides.extend(middle.iter().map(|m| clean_side(m)));
    sides.push(right_side(last));
    two_or_more(sides)
}

fn between_sides(text: &str) -> Option<Vec<String>> {
    let lower = text.to_ascii_lowercase();
    let at = find_word(&lower, "between", 0)?;
    let segment = &text[at + "between".len()..];
    let (left, right) = split_pair(segment, &["and"])?;
    two_or_more(vec![clean_side(left), right_side(right)])
}

fn compare_sides(text: &str) -> Option<Vec<String>> {
    if let Some(m) = COMPARED_TO.find(text) {
        let sides = two_or_more(vec![
            left_side(&text[..m.start()]),
            right_side(&text[m.end()..]),
        ]);
        if sides.is_some() {
            return sides;
        }
    }
    let m = COMPARE.find(text)?;
    let (left, right) = split_pair(&text[m.end()..], &["and", "with", "to", "against"])?;
    two_or_more(vec![left_side(left), right_side(right)])
}

/// "Which is older, X or Y?", "Which is oldest: X, Y or Z?", "Is X or Y faster?".
fn or_sides(text: &str) -> Option<Vec<String>> {
    let lower = text.to_ascii_lowercase();
    let or = find_word(&lower, "or", 0)?;
    let before = &text[..or];
    let list_start = before
        .rfind(':')
        .or_else(|| before.find(','))
        .map(|i| i + 1);
    match list_start {
        Some(start) => {
            let mut items: Vec<&str> = Vec::new();
            for item in text[start..].split(',') {
                items.extend(split_on(item, |l, from| {
                    find_word(l, "or", from).map(|at| (at, at + 2))
                }));
            }
            let items: Vec<&str> = items
                .into_iter()
                .filter(|i| !clean_side(i).is_empty())
                .collect();
            // The list's separators already delimit each item, so no item needs trimming to a name.
            two_or_more(items.iter().map(|i| clean_side(i)).collect())
        }
        None => two_or_more(vec![left_side(before), right_side(&text[or + 2..])]),
    }
}

/// "Were X and Y both ...?", "Is X longer than Y?": the two sides around `word`.
fn pair_sides(text: &str, word: &str) -> Option<Vec<String>> {
    let (left, right) = split_pair(text, &[word])?;
    two_or_more(vec![left_side(left), right_side(right)])
}

/// `text` split at the earliest of `separators` (whole words).
fn split_pair<'a>(text: &'a str, separators: &[&str]) -> Option<(&'a str, &'a str)> {
    let lower = text.to_ascii_lowercase();
    let (at, sep) = separators
        .iter()
        .filter_map(|s| find_word(&lower, s, 0).map(|at| (at, s.len())))
        .min()?;
    Some((&text[..at], &text[at + sep..]))
}

/// Is this word no part of a side ("the", "which", "is", "both", "vs")?
fn is_side_filler(lower: &str) -> bool {
    is_stop_word(lower)
        || is_question_word(lower)
        || is_aux_verb(lower)
        || NOT_TOPIC.contains(&lower)
}

/// The side named at the end of `part`: its last name ("Should I use React" -> "React"), or the
/// words after its last preposition ("the economies of japan" -> "japan"), or its trailing words.
fn left_side(part: &str) -> String {
    let part = part.trim();
    if let Some(&(start, end)) = name_runs(part, LoneOpener::Name).last() {
        return clean_side(&part[start..with_version(part, end)]);
    }
    let lower = part.to_ascii_lowercase();
    let after_prep = ["of", "for", "in", "between", "about", "on"]
        .iter()
        .filter_map(|p| find_last_word(&lower, p).map(|at| at + p.len()))
        .max();
    if let Some(at) = after_prep {
        let side = clean_side(&part[at..]);
        if !side.is_empty() {
            return side;
        }
    }
    let tokens = tokenize(part);
    let kept: Vec<_> = tokens
        .iter()
        .rev()
        .take_while(|t| !is_side_filler(&t.lower()))
        .take(4)
        .collect();
    match (kept.last(), kept.first()) {
        (Some(first), Some(last)) => clean_side(&part[first.start..last.end]),
        _ => clean_side(part),
    }
}

/// The side named at the start of `part`: a leading name ("Java for data science" -> "Java"),
/// or its leading words up to the first stop word ("tuples for speed" -> "tuples").
fn right_side(part: &str) -> String {
    let part = part.trim();
    let tokens = tokenize(part);
    let Some(first) = tokens.iter().position(|t| !is_side_filler(&t.lower())) else {
        return String::new();
    };
    let start = tokens[first].start;
    if let Some(&(s, e)) = name_runs(part, LoneOpener::Name)
        .iter()
        .find(|(s, _)| *s == start)
    {
        // A title with small words ("First for Women") runs to the end when nothing else follows.
        let rest = &tokens[tokens
            .iter()
            .position(|t| t.start >= e)
            .unwrap_or(tokens.len())..];
        let title_like = rest.len() <= 4
            && rest
                .last()
                .is_some_and(|t| t.word.starts_with(char::is_uppercase))
            && rest
                .iter()
                .all(|t| t.word.starts_with(char::is_uppercase) || TITLE_WORDS.contains(&t.word));
        let end = if title_like {
            tokens[tokens.len() - 1].end
        } else {
            with_version(part, e)
        };
        return clean_side(&part[s..end]);
    }
    let mut end = tokens[first].end;
    for t in tokens[first..].iter().take(4) {
        if is_side_filler(&t.lower()) {
            break;
        }
        end = t.end;
        if t.trailing_punct {
            break;
        }
    }
    clean_side(&part[start..end])
}

/// Small words inside titles ("First for Women", "Gone with the Wind").
const TITLE_WORDS: &[&str] = &[
    "for", "of", "the", "and", "a", "an", "in", "on", "to", "with",
];

/// Extend a name ending at `end` over a following version number ("Windows" -> "Windows 11").
fn with_version(part: &str, end: usize) -> usize {
    let rest = &part[end..];
    let Some(next) = rest.split_whitespace().next() else {
        return end;
    };
    let word = next.trim_end_matches(|c: char| !c.is_alphanumeric());
    let versionish = word.starts_with(|c: char| c.is_ascii_digit())
        || (word.len() > 1
            && word.starts_with(['v', 'V'])
            && word[1..].starts_with(|c: char| c.is_ascii_digit()));
    let gap = rest.len() - rest.trim_start().len();
    if versionish && !word.is_empty() && gap > 0 && !rest[..gap].contains('\n') {
        end + gap + word.len()
    } else {
        end
    }
}

/// Offset of the last whole-word occurrence of `needle`.
fn find_last_word(lower: &str, needle: &str) -> Option<usize> {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = find_word(lower, needle, from) {
        found = Some(at);
        from = at + needle.len();
    }
    found
}

/// `side` without leading or trailing filler words and punctuation.
fn clean_side(side: &str) -> String {
    let tokens = tokenize(side);
    let keep = |t: &&Token<'_>| !t.word.is_empty() && !is_side_filler(&t.lower());
    let first = tokens.iter().position(|t| keep(&t));
    let last = tokens.iter().rposition(|t| keep(&t));
    match (first, last) {
        (Some(f), Some(l)) => trim_punctuation(&side[tokens[f].start..tokens[l].end]).to_owned(),
        _ => String::new(),
    }
}

/// The question's content words that belong to no side, comparatives mapped to attributes.
fn topic_words(question: &str, sides: &[String]) -> Vec<String> {
    let side_words: HashSet<String> = sides
        .iter()
        .flat_map(|s| words(s).collect::<Vec<_>>())
        .collect();
    let mut seen = HashSet::new();
    let mut topic = Vec::new();
    for tok in tokenize(question) {
        let word = strip_possessive(tok.word);
        let lower = word.to_lowercase();
        if word.is_empty()
            || is_side_filler(&lower)
            || NOT_TOPIC_VERBS.contains(&lower.as_str())
            || words(word).any(|w| side_words.contains(&w))
        {
            continue;
        }
        let mapped = COMPARATIVES
            .iter()
            .chain(EVENT_NOUNS)
            .find(|(w, _)| *w == lower)
            .map(|(_, attr)| (*attr).to_owned());
        let term = mapped.unwrap_or_else(|| word.to_owned());
        if seen.insert(term.to_lowercase()) {
            topic.push(term);
        }
    }
    topic.truncate(6);
    topic
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::{EntityKind, HeuristicAnalyzer};
    use proptest::prelude::*;

    fn decompose(q: &str, max: usize) -> Vec<String> {
        HeuristicDecomposer.sub_queries(q, &HeuristicAnalyzer.analysis(q), max)
    }

    #[test]
    fn simple_questions_come_back_untouched() {
        for q in [
            "What is the capital of France?",
            "batik",
            "  how do magnets work?  ",
        ] {
            assert_eq!(decompose(q, 3), [q]);
        }
    }

    #[test]
    fn comparisons_split_into_one_query_per_side_with_the_topic() {
        let cases: &[(&str, &[&str])] = &[
            (
                "Which is longer, the Nile or the Amazon?",
                &["Nile length", "Amazon length"],
            ),
            (
                "Who was born first, Kurt Cobain or Dave Grohl?",
                &["Kurt Cobain birth date", "Dave Grohl birth date"],
            ),
            (
                "Were Scott Derrickson and Ed Wood of the same nationality?",
                &["Scott Derrickson nationality", "Ed Wood nationality"],
            ),
            ("Is Python or Java faster?", &["Python speed", "Java speed"]),
            (
                "Is the Nile longer than the Amazon?",
                &["Nile length", "Amazon length"],
            ),
            (
                "Python vs Java for data science",
                &["Python data science", "Java data science"],
            ),
            ("Postgres vs. MySQL", &["Postgres", "MySQL"]),
            (
                "What is the difference between TCP and UDP?",
                &["TCP", "UDP"],
            ),
            (
                "Compare the economies of Japan and Germany",
                &["Japan economies", "Germany economies"],
            ),
            (
                "How does Rust compare to Go in performance?",
                &["Rust performance", "Go performance"],
            ),
            (
                "Windows 10 vs Windows 11 battery life",
                &["Windows 10 battery life", "Windows 11 battery life"],
            ),
            ("python lists vs tuples", &["python lists", "tuples"]),
            (
                "Which is oldest: Rome, Athens, or Jerusalem?",
                &["Rome age", "Athens age", "Jerusalem age"],
            ),
            (
                "Which came first, the chicken or the egg?",
                &["chicken date", "egg date"],
            ),
            (
                "Which is heavier, a kilogram of feathers or a kilogram of steel?",
                &["kilogram of feathers weight", "kilogram of steel weight"],
            ),
            (
                "Are Local H and Blur both from the United States?",
                &["Local H United States", "Blur United States"],
            ),
            (
                "Which magazine was started first Arthur's Magazine or First for Women?",
                &["Arthur's Magazine started", "First for Women started"],
            ),
            (
                "Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?",
                &[
                    "Laleli Mosque located neighborhood",
                    "Esma Sultan Mansion located neighborhood",
                ],
            ),
            (
                "Were both Ansel Adams and Dorothea Lange photographers?",
                &["Ansel Adams photographers", "Dorothea Lange photographers"],
            ),
        ];
        for (q, want) in cases {
            assert_eq!(decompose(q, 3), *want, "{q}");
        }
    }

    #[test]
    fn multi_part_questions_split_into_their_parts() {
        assert_eq!(
            decompose("What is BM25? And how does dense retrieval work?", 3),
            ["What is BM25", "how does dense retrieval work"]
        );
        assert_eq!(
            decompose("What is BM25 and how does dense retrieval work", 3),
            ["What is BM25", "how does dense retrieval work"]
        );
        assert_eq!(
            decompose("Tell me about batik and also wayang kulit", 3),
            ["Tell me about batik", "wayang kulit"]
        );
    }

    #[test]
    fn an_error_and_a_version_become_error_compatibility_and_fix_queries() {
        assert_eq!(
            decompose("Spring Boot 1.1.9 NoClassDefFoundError with Java 21", 3),
            [
                "Spring Boot 1.1.9 NoClassDefFoundError",
                "Spring Boot 1.1.9 Java 21 compatibility",
                "Spring Boot NoClassDefFoundError fix",
            ]
        );
        assert_eq!(
            decompose("java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer in Spring Boot 1.x on JDK 17", 3),
            [
                "Spring Boot 1.x NoClassDefFoundError cglib proxy Enhancer",
                "Spring Boot 1.x JDK 17 compatibility",
                "Spring Boot cglib proxy Enhancer NoClassDefFoundError fix",
            ]
        );
    }

    #[test]
    fn never_more_than_the_maximum_and_never_none() {
        assert_eq!(
            decompose("React vs Vue vs Angular", 3),
            ["React", "Vue", "Angular"]
        );
        assert_eq!(decompose("React vs Vue vs Angular", 2), ["React", "Vue"]);
        assert_eq!(
            decompose("React vs Vue vs Angular", 0),
            ["React"],
            "0 is treated as 1"
        );
    }

    #[test]
    fn duplicates_collapse() {
        assert_eq!(
            decompose("What is BM25? what is  bm25?", 3),
            ["What is BM25"]
        );
    }

    #[test]
    fn an_error_gets_a_root_cause_hypothesis_naming_its_innermost_cause_and_versions() {
        let q = "Tests fail on JDK 17: IllegalStateException: Failed to load ApplicationContext\nCaused by: java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer";
        let analysis = HeuristicAnalyzer.analysis(q);
        assert_eq!(
            root_cause(q, &analysis).as_deref(),
            Some("NoClassDefFoundError from cglib proxy Enhancer, likely incompatible with JDK 17")
        );
        assert_eq!(
            root_cause(
                "Who wrote Hamlet?",
                &HeuristicAnalyzer.analysis("Who wrote Hamlet?")
            ),
            None
        );
    }

    #[test]
    fn a_complex_question_no_rule_understands_comes_back_whole() {
        let analysis = Analysis {
            query_type: QueryType::Factual,
            entities: vec![],
            intent: "find_facts".into(),
            complexity: Complexity::Complex,
            context: Default::default(),
            asked: None,
        };
        assert_eq!(
            HeuristicDecomposer.sub_queries("zebra stripes", &analysis, 3),
            ["zebra stripes"]
        );
    }

    /// Tokens that exercise every rule: markers, versions, error classes, names, quotes, Unicode.
    const TRICKY: &[&str] = &[
        "Spring",
        "Boot",
        "1.1.9",
        "v2",
        "NoClassDefFoundError:",
        "net/sf/x/Y",
        "vs",
        "or",
        "and",
        "also",
        "both",
        "same",
        "than",
        "which",
        "Which",
        "between",
        "compare",
        ",",
        "?",
        ":",
        "'quoted'",
        "\"q\"",
        "Java",
        "17",
        "the",
        "of",
        "é",
        "Über",
        "İstanbul",
        "older",
        "born",
        "first",
        "what",
        "how",
    ];

    fn any_analysis() -> impl Strategy<Value = Analysis> {
        let types = prop_oneof![
            Just(QueryType::ErrorDiagnosis),
            Just(QueryType::VersionCompatibility),
            Just(QueryType::HowTo),
            Just(QueryType::ApiUsage),
            Just(QueryType::Comparison),
            Just(QueryType::Factual),
        ];
        let entity = (
            prop_oneof![
                Just(EntityKind::Version),
                Just(EntityKind::ErrorClass),
                Just(EntityKind::Name)
            ],
            "\\PC{0,20}",
        )
            .prop_map(|(kind, text)| crate::analyzer::Entity { kind, text });
        (types, proptest::collection::vec(entity, 0..4)).prop_map(|(query_type, entities)| {
            Analysis {
                query_type,
                entities,
                intent: String::new(),
                complexity: Complexity::Complex,
                context: Default::default(),
                asked: None,
            }
        })
    }

    proptest::proptest! {
        #[test]
        fn returns_one_to_max_non_empty_queries(
            q in "\\PC{0,200}".prop_filter("non-blank", |s| !s.trim().is_empty()),
            max in 0usize..5,
        ) {
            let out = decompose(&q, max);
            proptest::prop_assert!(!out.is_empty() && out.len() <= max.max(1), "{:?}", out);
            for sub in &out {
                proptest::prop_assert!(!sub.trim().is_empty());
                proptest::prop_assert!(sub == &q || (sub.chars().count() < 100 && !sub.ends_with('?')), "{:?}", sub);
            }
        }

        #[test]
        fn holds_for_questions_built_from_tricky_tokens(
            toks in proptest::collection::vec(proptest::sample::select(TRICKY.to_vec()), 1..14),
            max in 1usize..5,
        ) {
            let q = toks.join(" ");
            let out = decompose(&q, max);
            proptest::prop_assert!(!out.is_empty() && out.len() <= max, "{:?}", out);
            proptest::prop_assert!(out.iter().all(|s| !s.trim().is_empty()), "{:?}", out);
        }

        #[test]
        fn holds_for_any_analysis(
            q in "(\\PC{0,40}( vs | or | and |, |\\? |: ))*\\PC{1,40}".prop_filter("non-blank", |s| !s.trim().is_empty()),
            analysis in any_analysis(),
            max in 1usize..5,
        ) {
            let out = HeuristicDecomposer.sub_queries(&q, &analysis, max);
            proptest::prop_assert!(!out.is_empty() && out.len() <= max);
            proptest::prop_assert!(out.iter().all(|s| !s.trim().is_empty()));
        }
    }
}
