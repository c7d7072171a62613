//! The query analyzer: what kind of question this is, which entities
//! it names, and whether it needs decomposing.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use ferret_core::text::{content_terms, words};
use ferret_core::StageOutput;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::util::{find_word, has_word};
use ferret_core::text::names::{
    is_error_class, name_runs, quoted_spans, strip_possessive, tokenize, LoneOpener, Token,
};
use ferret_core::text::question::Asked;
use ferret_core::text::{is_aux_verb, is_question_word};

/// The kind of question, which decides how it is decomposed and what a good answer looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryType {
    /// Something fails: an exception, an error message, a crash.
    ErrorDiagnosis,
    /// Versions, upgrades, migrations and what works with what.
    VersionCompatibility,
    /// How to do something: guides and tutorials.
    HowTo,
    /// How to call an API, method, function or annotation.
    ApiUsage,
    /// Two or more things set against each other.
    Comparison,
    /// Anything else: a question of fact.
    Factual,
}

impl QueryType {
    /// The snake_case name, as in traces and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            QueryType::ErrorDiagnosis => "error_diagnosis",
            QueryType::VersionCompatibility => "version_compatibility",
            QueryType::HowTo => "how_to",
            QueryType::ApiUsage => "api_usage",
            QueryType::Comparison => "comparison",
            QueryType::Factual => "factual",
        }
    }

    /// The short intent label that goes with this type.
    pub fn intent_label(self) -> &'static str {
        match self {
            QueryType::ErrorDiagnosis => "fix_error",
            QueryType::VersionCompatibility => "check_compatibility",
            QueryType::HowTo => "learn_how",
            QueryType::ApiUsage => "use_api",
            QueryType::Comparison => "compare",
            QueryType::Factual => "find_facts",
        }
    }
}

/// What sort of thing an [`Entity`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// A version, with its product when adjacent: "1.1.9", "v2", "Java 17", "Spring Boot 1.1.9".
    Version,
    /// An error or exception class name: "NoClassDefFoundError".
    ErrorClass,
    /// Text the user put in quotes.
    QuotedPhrase,
    /// A capitalised name: "Spring Boot", "Marie Curie".
    Name,
}

impl EntityKind {
    /// The snake_case name, as in traces and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Version => "version",
            EntityKind::ErrorClass => "error_class",
            EntityKind::QuotedPhrase => "quoted_phrase",
            EntityKind::Name => "name",
        }
    }
}

/// Something the question names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entity {
    /// What sort of thing it is.
    pub kind: EntityKind,
    /// Its text as written in the question (an error class without its package).
    pub text: String,
}

impl Entity {
    /// `kind: text`, as the trace shows it: "version: 1.1.9".
    pub fn label(&self) -> String {
        format!("{}: {}", self.kind.as_str(), self.text)
    }
}

/// Whether a question can be searched as it is or needs splitting first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    /// One search answers it.
    Simple,
    /// It needs several searches: a comparison, several questions, or an error in a version
    /// context ("multi_hop").
    Complex,
}

impl Complexity {
    /// The snake_case name, as in traces and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::Simple => "simple",
            Complexity::Complex => "complex",
        }
    }
}

/// The analyzer's description of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Analysis {
    /// The kind of question.
    pub query_type: QueryType,
    /// Entities, in the order they appear.
    pub entities: Vec<Entity>,
    /// Short snake_case label of what the user wants: fix_error, compare, learn_how, find_facts...
    pub intent: String,
    /// Whether it needs decomposing.
    pub complexity: Complexity,
    /// The asker's situation as the query gave it (`java_version` = `17`), for the stages that
    /// read the analysis; the analyzer leaves it empty and the search fills it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, String>,
    /// What the question asks for (a year, a person, one of two options…), read by rules
    /// whichever analyzer ran; the answer's writer takes it from here. `None` when nothing read
    /// it (an analyzer of one's own may leave it): the writer then reads the question itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Asked>,
}

impl Analysis {
    /// The entities as `kind: text` labels, for the trace.
    pub fn entity_labels(&self) -> Vec<String> {
        self.entities.iter().map(Entity::label).collect()
    }

    /// The entities of one kind, in order.
    pub fn entities_of(&self, kind: EntityKind) -> impl Iterator<Item = &Entity> + '_ {
        self.entities.iter().filter(move |e| e.kind == kind)
    }
}

/// Describes a question: type, entities, intent, complexity.
#[async_trait::async_trait]
pub trait QueryAnalyzer: Send + Sync {
    /// Analyse `question`. Never fails: a model-backed analyzer falls back to rules.
    async fn analyze(&self, question: &str) -> StageOutput<Analysis>;

    /// Analyse `question` asked in `context` (`java_version` = `17`), which the analysis then
    /// carries. The default analyses the question alone and adds the context after
    /// ([`Analysis::with_context`]); a model reads it beside the question.
    async fn analyze_in(
        &self,
        question: &str,
        context: &BTreeMap<String, String>,
    ) -> StageOutput<Analysis> {
        let analysis = self.analyze(question).await;
        StageOutput {
            value: analysis.value.with_context(context.clone()),
            ..analysis
        }
    }
}

/// The deterministic analyzer: keyword lists and patterns, no model.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicAnalyzer;

impl HeuristicAnalyzer {
    /// Analyse synchronously; [`QueryAnalyzer::analyze`] wraps this.
    pub fn analysis(&self, question: &str) -> Analysis {
        let entities = extract_entities(question);
        let asked = Asked::read(question);
        let query_type = query_type(question, &entities, &asked);
        let has = |kind| entities.iter().any(|e: &Entity| e.kind == kind);
        let complex = query_type == QueryType::Comparison
            || is_multi_question(question)
            || (has(EntityKind::ErrorClass) && has(EntityKind::Version));
        Analysis {
            query_type,
            intent: query_type.intent_label().to_owned(),
            entities,
            complexity: if complex {
                Complexity::Complex
            } else {
                Complexity::Simple
            },
            context: BTreeMap::new(),
            asked: Some(asked),
        }
    }
}

#[async_trait::async_trait]
impl QueryAnalyzer for HeuristicAnalyzer {
    async fn analyze(&self, question: &str) -> StageOutput<Analysis> {
        StageOutput::heuristic(self.analysis(question))
    }
}

const ERROR_WORDS: &[&str] = &[
    "error",
    "errors",
    "exception",
    "exceptions",
    "failed",
    "fails",
    "failing",
    "failure",
    "failures",
    "cannot",
    "can t",
    "crash",
    "crashes",
    "crashed",
    "traceback",
    "stacktrace",
    "stack trace",
    "segfault",
    "not working",
    "doesn t work",
    "does not work",
    "nosuchmethod",
    "noclassdeffound",
];
const VERSION_WORDS: &[&str] = &[
    "version",
    "versions",
    "upgrade",
    "upgrading",
    "downgrade",
    "migrate",
    "migrating",
    "migration",
    "compatibility",
    "compatible",
    "incompatible",
    "incompatibility",
    "jdk",
    "deprecated",
];
const HOW_TO_WORDS: &[&str] = &[
    "how to",
    "how do i",
    "how can i",
    "how do you",
    "how should i",
    "how would i",
    "guide",
    "tutorial",
    "step by step",
    "steps to",
    "instructions for",
];
const API_WORDS: &[&str] = &[
    "api",
    "apis",
    "method",
    "methods",
    "function",
    "functions",
    "class",
    "annotation",
    "annotations",
    "parameter",
    "parameters",
    "endpoint",
    "endpoints",
    "signature",
    "sdk",
];
const COMPARISON_WORDS: &[&str] = &[
    "vs",
    "versus",
    "compare",
    "compared",
    "compares",
    "comparing",
    "comparison",
    "difference between",
    "differences between",
    "differ from",
    "differ between",
    "which is better",
    "which one is better",
    "which is best",
    "pros and cons",
];
/// Words that make "which ..., X or Y" a comparison even without a comma.
const COMPARATIVE_HINTS: &[&str] = &[
    "more", "less", "first", "earlier", "later", "better", "worse",
];

fn query_type(question: &str, entities: &[Entity], asked: &Asked) -> QueryType {
    let lower = normalized_lower(question);
    let any = |list: &[&str]| list.iter().any(|w| has_word(&lower, w));
    // A pasted error line (a compiler's, a runtime's, a package manager's) makes the question
    // about that error, whatever else its log says ("Collecting", "Building wheel for x or y").
    // An explicit comparison ("ValueError vs TypeError: which should I raise?") stays one; in a
    // pasted log such words are flags and file names (`-Wsign-compare`).
    let pasted_log = question.lines().count() > 3;
    if any(COMPARISON_WORDS) && !pasted_log {
        QueryType::Comparison
    } else if crate::signature::read_error(question).is_some() {
        QueryType::ErrorDiagnosis
    } else if any(COMPARISON_WORDS) || is_comparison_question(question, asked) {
        QueryType::Comparison
    } else if any(ERROR_WORDS) || entities.iter().any(|e| e.kind == EntityKind::ErrorClass) {
        QueryType::ErrorDiagnosis
    } else if any(VERSION_WORDS) {
        QueryType::VersionCompatibility
    } else if any(HOW_TO_WORDS) {
        QueryType::HowTo
    } else if any(API_WORDS) {
        QueryType::ApiUsage
    } else {
        QueryType::Factual
    }
}

/// Lowercase words joined by single spaces ("can't" becomes "can t"), for phrase lookups.
fn normalized_lower(text: &str) -> String {
    words(text).collect::<Vec<_>>().join(" ")
}

/// Comparisons without a marker word: "Which is older, X or Y?", "Is X or Y faster?",
/// "Were X and Y both ...?", "Is X longer than Y?".
pub(crate) fn is_comparison_question(question: &str, asked: &Asked) -> bool {
    let lower = question.to_ascii_lowercase();
    let first = words(question).next().unwrap_or_default();
    let names = name_runs(question, LoneOpener::Name);
    let names_before = |at: usize| names.iter().any(|(_, e)| *e <= at);
    let names_after = |at: usize| names.iter().any(|(s, _)| *s >= at);

    // A choice between two named options ("Who was born first, X or Y?").
    if asked.options.is_some() {
        return true;
    }
    if let Some(or) = find_word(&lower, "or", 0) {
        let separated = lower[..or].contains([',', ':']);
        let comparative = crate::util::has_comparative(question) || {
            let l = normalized_lower(question);
            COMPARATIVE_HINTS.iter().any(|w| has_word(&l, w))
        };
        if matches!(first.as_str(), "which" | "who" | "whose") && (separated || comparative) {
            return true;
        }
        if is_aux_verb(&first) && names_before(or) && names_after(or + 2) {
            return true;
        }
    }
    if find_word(&lower, "and", 0).is_some() {
        let l = normalized_lower(question);
        let pairing = ["both", "same", "similar", "different", "alike", "in common"]
            .iter()
            .any(|w| has_word(&l, w));
        if pairing && (is_aux_verb(&first) || has_word(&l, "in common") || has_word(&l, "both")) {
            return true;
        }
    }
    if let Some(than) = find_word(&lower, "than", 0) {
        let idiom = [
            "rather than",
            "other than",
            "more than",
            "less than",
            "fewer than",
        ]
        .iter()
        .any(|p| find_word(&lower, p, 0).is_some_and(|at| at + p.len() == than + 4));
        if !idiom && names_before(than) && names_after(than + 4) {
            return true;
        }
    }
    false
}

/// Two '?'-terminated questions, or clauses joined by "and" that each carry a question word
/// ("What is X and how does Y work"), or "X and also Y".
pub(crate) fn is_multi_question(question: &str) -> bool {
    let asked = question
        .split('?')
        .rev()
        .skip(1)
        .filter(|part| !content_terms(part).is_empty())
        .count();
    if asked >= 2 {
        return true;
    }
    let lower = question.to_ascii_lowercase();
    if let Some(at) = find_word(&lower, "and also", 0) {
        return !content_terms(&question[..at]).is_empty()
            && !content_terms(&question[at + 8..]).is_empty();
    }
    let mut from = 0;
    while let Some(at) = find_word(&lower, "and", from) {
        let left_has_question = words(&question[..at]).any(|w| is_question_word(&w));
        let right_opens_with_question = words(&question[at + 3..])
            .find(|w| w != "then" && w != "also")
            .is_some_and(|w| is_question_word(&w));
        if left_has_question && right_opens_with_question {
            return true;
        }
        from = at + 3;
    }
    false
}

/// Products that take a version number even in lowercase ("java 17", "python 3.12").
const KNOWN_PRODUCTS: &[&str] = &[
    "java",
    "jdk",
    "jre",
    "python",
    "py",
    "node",
    "nodejs",
    "es",
    "html",
    "css",
    "php",
    "net",
    "dotnet",
    "ios",
    "android",
    "ubuntu",
    "debian",
    "centos",
    "rhel",
    "windows",
    "win",
    "macos",
    "junit",
    "spring",
    "gradle",
    "maven",
    "vue",
    "angular",
    "react",
    "kotlin",
    "scala",
    "go",
    "golang",
    "rust",
    "ruby",
    "rails",
    "django",
    "postgres",
    "postgresql",
    "mysql",
    "hibernate",
    "tomcat",
    "kernel",
    "linux",
    "typescript",
    "swift",
    "perl",
    "cuda",
    "sdxl",
    "sd",
];
/// Words that introduce a version number ("version 2").
const VERSION_INTRODUCERS: &[&str] = &["version", "release", "v"];

static DOTTED_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[vV]?\d+(?:\.(?:\d+|[xX*]))+(?:[.-][A-Za-z][A-Za-z0-9]*)?$").expect("valid regex")
});
static V_VERSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[vV]\d+$").expect("valid regex"));
static SHORT_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{1,3}$").expect("valid regex"));
static GLUED_VERSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z]+)(\d{1,3}(?:\.\d+)*)$").expect("valid regex"));
static ERROR_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[A-Za-z_][\w$]*[./])*([A-Z][A-Za-z0-9_$]*(?:Error|Exception))\b")
        .expect("valid regex")
});

/// All entities of `question`, in order of appearance, without duplicates.
pub(crate) fn extract_entities(question: &str) -> Vec<Entity> {
    let mut found: Vec<(usize, Entity)> = Vec::new();
    let tokens = tokenize(question);

    for (i, tok) in tokens.iter().enumerate() {
        if let Some(start) = version_start(&tokens, i) {
            found.push((
                start,
                Entity {
                    kind: EntityKind::Version,
                    text: question[start..tok.end].to_owned(),
                },
            ));
        }
    }

    for caps in ERROR_CLASS.captures_iter(question) {
        if let Some(class) = caps.get(1).filter(|m| is_error_class(m.as_str())) {
            found.push((
                class.start(),
                Entity {
                    kind: EntityKind::ErrorClass,
                    text: class.as_str().to_owned(),
                },
            ));
        }
    }

    let quoted_spans = quoted_spans(question);
    for &(start, end) in &quoted_spans {
        found.push((
            start,
            Entity {
                kind: EntityKind::QuotedPhrase,
                text: question[start..end].trim().to_owned(),
            },
        ));
    }

    let version_ends: Vec<usize> = found
        .iter()
        .filter(|(_, e)| e.kind == EntityKind::Version)
        .map(|(start, e)| start + e.text.len())
        .collect();
    for (start, end) in name_runs(question, LoneOpener::NotName) {
        // A number that ends a version ("Java 21") is the version's; the name is the product's.
        let end = if version_ends.contains(&end) {
            let name = question[start..end].trim_end_matches(|c: char| c.is_ascii_digit());
            start + name.trim_end().len()
        } else {
            end
        };
        let inside_quotes = quoted_spans
            .iter()
            .any(|(qs, qe)| start >= *qs && end <= *qe);
        if !inside_quotes {
            found.push((
                start,
                Entity {
                    kind: EntityKind::Name,
                    text: question[start..end].to_owned(),
                },
            ));
        }
    }

    found.sort_by_key(|(pos, _)| *pos);
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| seen.insert((e.kind, e.text.to_lowercase())))
        .collect()
}

/// If token `i` is a version number, the byte offset where the version entity starts (its product
/// words included when adjacent).
fn version_start(tokens: &[Token<'_>], i: usize) -> Option<usize> {
    let tok = &tokens[i];
    let word = tok.word;
    if let Some(caps) = GLUED_VERSION.captures(word) {
        let product = caps.get(1).map_or("", |m| m.as_str()).to_lowercase();
        if KNOWN_PRODUCTS.contains(&product.as_str()) {
            return Some(tok.start);
        }
    }
    let dotted = DOTTED_VERSION.is_match(word);
    let strong = V_VERSION.is_match(word)
        || (dotted
            && (word.starts_with(['v', 'V'])
                || word.matches('.').count() >= 2
                || word.contains(['x', 'X', '*'])));
    let needs_context = (dotted && !strong) || SHORT_NUMBER.is_match(word);
    if !strong && !needs_context {
        return None;
    }
    let product = product_start(tokens, i);
    match product {
        Some(start) => Some(start),
        None if strong => Some(tok.start),
        None => None,
    }
}

/// Start of the product words right before token `i` ("Spring Boot" before "1.1.9"), if any.
fn product_start(tokens: &[Token<'_>], i: usize) -> Option<usize> {
    let mut j = i.checked_sub(1)?;
    let adjacent = |t: &Token<'_>| !t.trailing_punct && !t.word.is_empty();
    if !adjacent(&tokens[j]) {
        return None;
    }
    // "Spring Boot version 2.7": step over the introducer to the product before it.
    let introducer = VERSION_INTRODUCERS.contains(&tokens[j].lower().as_str());
    if introducer {
        match j
            .checked_sub(1)
            .filter(|&k| adjacent(&tokens[k]) && is_product_word(&tokens[k]))
        {
            Some(k) => j = k,
            None => return Some(tokens[j].start),
        }
    } else if !is_product_word(&tokens[j]) {
        return None;
    }
    // Extend back over capitalised words of a multiword product, at most three words in all.
    let mut first = j;
    while first > 0 && j - first < 2 {
        let prev = &tokens[first - 1];
        let capitalised = prev.word.chars().next().is_some_and(char::is_uppercase);
        let spans_name = joins_product(tokens, first - 1);
        if adjacent(prev) && capitalised && is_product_word(prev) && spans_name {
            first -= 1;
        } else {
            break;
        }
    }
    Some(tokens[first].start)
}

/// Could this token name a product: capitalised or a known product, not a stop or question word.
fn is_product_word(tok: &Token<'_>) -> bool {
    let word = strip_possessive(tok.word);
    let lower = word.to_lowercase();
    if ferret_core::text::is_stop_word(&lower) || is_question_word(&lower) || is_error_class(word) {
        return false;
    }
    if KNOWN_PRODUCTS.contains(&lower.as_str()) {
        return true;
    }
    word.chars().next().is_some_and(char::is_uppercase)
        && word.chars().all(|c| c.is_alphabetic() || c == '-')
}

/// A sentence-opening verb ("Upgrade Spring Boot 2.7") is not part of the product.
fn joins_product(tokens: &[Token<'_>], k: usize) -> bool {
    let tok = &tokens[k];
    !tok.sentence_start || {
        let lower = tok.lower();
        !matches!(
            lower.as_str(),
            "upgrade"
                | "upgrading"
                | "install"
                | "installing"
                | "use"
                | "using"
                | "migrate"
                | "migrating"
                | "update"
                | "updating"
                | "run"
                | "running"
                | "fix"
                | "with"
                | "on"
                | "downgrade"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze(q: &str) -> Analysis {
        HeuristicAnalyzer.analysis(q)
    }

    fn labels(q: &str) -> Vec<String> {
        analyze(q).entity_labels()
    }

    #[test]
    fn query_types_follow_their_keyword_lists() {
        let cases = [
            ("Spring Boot 1.1.9 NoClassDefFoundError with Java 21", QueryType::ErrorDiagnosis),
            ("mvn test failed with exit code 1", QueryType::ErrorDiagnosis),
            (
                "Spring Boot AbstractApplicationContext invokeBeanFactoryPostProcessors test failure fix solution",
                QueryType::ErrorDiagnosis,
            ),
            ("cannot resolve symbol in IntelliJ", QueryType::ErrorDiagnosis),
            (
                "ValueError vs TypeError: which should I raise for a bad argument?",
                QueryType::Comparison,
            ),
            (
                "$ pip install cchardet\n  gcc -Wall -Wsign-compare -c src/cchardet.c\n  src/cchardet.c:1:10: fatal error: Python.h: No such file or directory\n  error: command 'gcc' failed\nHow do I fix it?",
                QueryType::ErrorDiagnosis,
            ),
            ("upgrade Spring Boot to 3.2", QueryType::VersionCompatibility),
            ("Is Hibernate 5 compatible with JDK 21", QueryType::VersionCompatibility),
            ("how to mock a spring bean in a test", QueryType::HowTo),
            ("JUnit 5 migration guide", QueryType::VersionCompatibility),
            ("a tutorial on wayang kulit puppets", QueryType::HowTo),
            ("which annotation marks a bean as primary", QueryType::ApiUsage),
            ("Python vs Java for data science", QueryType::Comparison),
            ("What is the difference between TCP and UDP?", QueryType::Comparison),
            ("Which is longer, the Nile or the Amazon?", QueryType::Comparison),
            ("Who was born first, Kurt Cobain or Dave Grohl?", QueryType::Comparison),
            ("Were Scott Derrickson and Ed Wood of the same nationality?", QueryType::Comparison),
            ("Is Python or Java faster?", QueryType::Comparison),
            ("Is the Nile longer than the Amazon?", QueryType::Comparison),
            ("Compare the economies of Japan and Germany", QueryType::Comparison),
            ("Who discovered penicillin?", QueryType::Factual),
            ("traditional batik from Kelantan", QueryType::Factual),
            ("Is it more than 5 km from Paris to Versailles?", QueryType::Factual),
        ];
        for (q, want) in cases {
            assert_eq!(analyze(q).query_type, want, "{q}");
        }
    }

    #[test]
    fn an_error_with_a_version_is_a_complex_error_diagnosis() {
        let a = analyze("Spring Boot 1.1.9 NoClassDefFoundError with Java 21");
        assert_eq!(a.query_type, QueryType::ErrorDiagnosis);
        assert_eq!(a.intent, "fix_error");
        assert_eq!(a.complexity, Complexity::Complex);
        assert_eq!(
            a.entity_labels(),
            [
                "version: Spring Boot 1.1.9",
                "name: Spring Boot",
                "error_class: NoClassDefFoundError",
                "version: Java 21",
                "name: Java"
            ]
        );
    }

    #[test]
    fn versions_keep_their_product_word() {
        assert_eq!(labels("works on 1.1.9 only"), ["version: 1.1.9"]);
        assert_eq!(labels("the v2 api"), ["version: v2"]);
        assert!(labels("does it run on java 17").contains(&"version: java 17".to_owned()));
        assert!(labels("crash on JDK 21").contains(&"version: JDK 21".to_owned()));
        assert!(labels("Upgrade Spring Boot version 2.7")
            .contains(&"version: Spring Boot version 2.7".to_owned()));
        assert!(labels("Python3 or Java17").contains(&"version: Python3".to_owned()));
        assert!(labels("Spring Boot 1.x CGLIB").contains(&"version: Spring Boot 1.x".to_owned()));
        assert!(!labels("it costs 3.5 million")
            .iter()
            .any(|l| l.starts_with("version")));
        assert!(!labels("born in 1879 in Ulm")
            .iter()
            .any(|l| l.starts_with("version")));
    }

    #[test]
    fn error_classes_lose_their_package() {
        assert_eq!(
            labels("java.lang.NullPointerException at startup"),
            ["error_class: NullPointerException"]
        );
        assert_eq!(
            labels("TypeError: x is undefined"),
            ["error_class: TypeError"]
        );
        assert!(labels("an Error occurred")
            .iter()
            .all(|l| !l.starts_with("error_class")));
    }

    #[test]
    fn quoted_phrases_in_double_single_and_curly_quotes() {
        assert_eq!(
            labels(r#"meaning of "carpe diem""#),
            ["quoted_phrase: carpe diem"]
        );
        assert_eq!(
            labels("songs with 'love' in the title"),
            ["quoted_phrase: love"]
        );
        assert_eq!(
            labels("who said “veni vidi vici”"),
            ["quoted_phrase: veni vidi vici"]
        );
        assert!(labels("it's Bob's car, isn't it")
            .iter()
            .all(|l| !l.starts_with("quoted")));
    }

    #[test]
    fn names_are_capitalised_runs_but_not_a_lone_sentence_opener() {
        assert_eq!(labels("Who was Marie Curie?"), ["name: Marie Curie"]);
        assert_eq!(
            labels("Marie Curie won which prizes?"),
            ["name: Marie Curie"]
        );
        assert_eq!(labels("Paris is the capital of France"), ["name: France"]);
        assert_eq!(labels("What is the capital of France?"), ["name: France"]);
        assert_eq!(
            labels("how does the Bank of England set rates"),
            ["name: Bank of England"]
        );
        assert_eq!(
            labels("Where Is The Louvre"),
            ["name: Louvre"],
            "stop and question words are never names"
        );
    }

    #[test]
    fn complexity() {
        let cases = [
            ("What is the capital of France?", Complexity::Simple),
            ("Python vs Java", Complexity::Complex),
            (
                "What is BM25? How does dense retrieval work?",
                Complexity::Complex,
            ),
            (
                "What is BM25 and how does dense retrieval work",
                Complexity::Complex,
            ),
            (
                "Tell me about batik and also wayang kulit",
                Complexity::Complex,
            ),
            ("What are salt and pepper?", Complexity::Simple),
            ("NoClassDefFoundError with Java 21", Complexity::Complex),
            ("NoClassDefFoundError in my tests", Complexity::Simple),
            ("Why did Apollo 13 fail?", Complexity::Simple),
        ];
        for (q, want) in cases {
            assert_eq!(analyze(q).complexity, want, "{q}");
        }
    }

    #[test]
    fn intents_are_snake_case_labels() {
        assert_eq!(analyze("Python vs Java").intent, "compare");
        assert_eq!(analyze("how to install Rust").intent, "learn_how");
        assert_eq!(analyze("Who wrote Hamlet?").intent, "find_facts");
    }

    #[test]
    fn serde_round_trip_uses_snake_case() {
        let a = analyze("Spring Boot 1.1.9 NoClassDefFoundError with Java 21");
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["query_type"], "error_diagnosis");
        assert_eq!(json["complexity"], "complex");
        assert_eq!(json["entities"][0]["kind"], "version");
        assert_eq!(serde_json::from_value::<Analysis>(json).unwrap(), a);
    }

    proptest::proptest! {
        #[test]
        fn the_analyzer_never_panics(q in "\\PC{0,200}") {
            let a = analyze(&q);
            proptest::prop_assert_eq!(a.intent.as_str(), a.query_type.intent_label());
        }
    }
}
