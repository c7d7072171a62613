//! The query rewriter: turn a pasted error log or a question into
//! one search query of at most 100 characters, without stack-trace noise.
//!
//! A plain question passes through with its words in order: keyword backends (BM25) score the
//! user's own words best, so the rewriter only removes what is noise.

use std::collections::HashSet;
use std::sync::LazyLock;

use ferret_core::{QueryForm, StageOutput};
use regex::Regex;

use crate::analyzer::{Analysis, EntityKind, QueryType};
use crate::context::missing_versions;
use crate::error_question::{error_component, root_error};
use crate::signature::read_error;
use ferret_core::text::{cut, one_line, CutMark};

use ferret_core::text::names::is_error_class;

/// Rewrites a query for the backends.
#[async_trait::async_trait]
pub trait QueryRewriter: Send + Sync {
    /// A search query for `query`: at most 100 characters, never empty for non-blank input.
    async fn rewrite(&self, query: &str, analysis: &Analysis) -> StageOutput<String>;

    /// The queries that together search `query`: [`rewrite`](Self::rewrite)'s, and when that
    /// had to cut words a second one holding the end. A long question often asks its thing last
    /// ("…, which was founded in what year"). The default asks `rewrite` alone.
    async fn rewrite_covering(&self, query: &str, analysis: &Analysis) -> StageOutput<Vec<String>> {
        let StageOutput {
            value,
            implementation,
            llm_calls,
        } = self.rewrite(query, analysis).await;
        StageOutput {
            value: vec![value],
            implementation,
            llm_calls,
        }
    }

    /// `query` in `form`: [`rewrite`](Self::rewrite)'s keywords, the question without noise for a
    /// dense index, an affirmative web query for a search engine. The default writes the last
    /// two by rule.
    async fn rewrite_for(
        &self,
        query: &str,
        analysis: &Analysis,
        form: QueryForm,
    ) -> StageOutput<String> {
        match form {
            QueryForm::Keywords => self.rewrite(query, analysis).await,
            QueryForm::Question => StageOutput::heuristic(HeuristicRewriter.question(query)),
            QueryForm::Web => StageOutput::heuristic(HeuristicRewriter.web(query, analysis)),
        }
    }
}

/// The deterministic rewriter: strips log and stack-trace noise, no model.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicRewriter;

impl HeuristicRewriter {
    /// Longest rewritten query, in characters.
    pub const MAX_CHARS: usize = 100;
    /// Longest question form, in characters: about what a small embedding model reads.
    pub const MAX_QUESTION_CHARS: usize = 1_000;

    /// Rewrite synchronously; [`QueryRewriter::rewrite`] wraps this.
    ///
    /// Drops stack frames ("at ..."), "... N more", Python traceback lines, timestamps, log
    /// levels, file:line references and hex addresses; reduces package paths to the class and
    /// "Caused by:" lines to the class name; collapses whitespace and drops a trailing '?'. When
    /// the result is too long, stop words go first, then error class names move to the front so
    /// the cut keeps them. Blank
    /// input gives an empty string; any other input gives a non-empty one.
    pub fn rewritten(&self, query: &str, analysis: &Analysis) -> String {
        head_query(&self.cleaned(query, analysis), query)
    }

    /// [`rewritten`](Self::rewritten), then the last [`MAX_CHARS`](Self::MAX_CHARS) of the
    /// cleaned text when the cut lost words from its end. A text over twice the limit loses its
    /// middle: the head names the subject, the end what is asked of it.
    pub fn covering(&self, query: &str, analysis: &Analysis) -> Vec<String> {
        let text = self.cleaned(query, analysis);
        let head = head_query(&text, query);
        let tail = tail_to_chars(trim_question(&text), Self::MAX_CHARS);
        if tail.is_empty() || head.ends_with(tail.as_str()) {
            vec![head]
        } else {
            vec![head, tail]
        }
    }

    /// The question for a dense index: stack-frame lines gone, the words as asked (package paths
    /// too: `net/sf/cglib` names what an embedding should match), nothing cut but what passes
    /// [`MAX_QUESTION_CHARS`] of an embedder's reach.
    ///
    /// [`MAX_QUESTION_CHARS`]: Self::MAX_QUESTION_CHARS
    pub fn question(&self, query: &str) -> String {
        let lines: Vec<&str> = query
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !is_trace_noise(line))
            .collect();
        let text = drop_repeated_classes(&one_line(&lines.join(" ")));
        let text = cut(text.trim(), Self::MAX_QUESTION_CHARS, CutMark::Plain);
        if text.is_empty() {
            cut(&one_line(query), Self::MAX_QUESTION_CHARS, CutMark::Plain)
        } else {
            text
        }
    }

    /// An affirmative web query of at most [`MAX_CHARS`](Self::MAX_CHARS): the question's
    /// opening ("how do I", "what is", "why does") and its question mark go, names and versions
    /// stay, and an error gets "fix" unless it asks for a fix already.
    pub fn web(&self, query: &str, analysis: &Analysis) -> String {
        if let Some(failure) =
            failure_query(query, analysis).or_else(|| error_line_query(query, analysis))
        {
            return failure;
        }
        let cleaned = self.cleaned(query, analysis);
        let affirmative = QUESTION_OPENING.replace(trim_question(&cleaned), "");
        let affirmative = affirmative.trim();
        let body = if affirmative.is_empty() {
            trim_question(&cleaned)
        } else {
            affirmative
        };
        let asks_fix = body.split(|c: char| !c.is_alphanumeric()).any(|w| {
            matches!(
                w.to_lowercase().as_str(),
                "fix" | "solution" | "resolve" | "solve"
            )
        });
        // The asker's versions the question leaves out ("Java 17"), then "fix" for an error.
        let mut tail: Vec<String> = match analysis.query_type {
            QueryType::ErrorDiagnosis | QueryType::VersionCompatibility => {
                missing_versions(body, analysis)
            }
            _ => Vec::new(),
        };
        if analysis.query_type == QueryType::ErrorDiagnosis && !asks_fix {
            tail.push("fix".to_owned());
        }
        let tail = tail.join(" ");
        // A tail longer than half the query would crowd the question out: it is left off.
        if tail.is_empty() || tail.chars().count() > Self::MAX_CHARS / 2 {
            return head_query(body, query);
        }
        let head = cut(
            body,
            Self::MAX_CHARS - tail.chars().count() - 1,
            CutMark::Plain,
        );
        format!("{} {tail}", trim_question(&head))
    }

    /// The text without noise, its stop words gone if it is long and its error classes first if
    /// the cut would lose them: everything but the cut.
    fn cleaned(&self, query: &str, analysis: &Analysis) -> String {
        let mut classes: Vec<String> = analysis
            .entities_of(EntityKind::ErrorClass)
            .map(|e| e.text.clone())
            .collect();
        let mut pieces = Vec::new();
        for line in query.lines() {
            let line = line.trim();
            if line.is_empty() || is_trace_noise(line) {
                continue;
            }
            if let Some(rest) = line.strip_prefix("Caused by:") {
                if let Some(class) = class_name(rest) {
                    classes.push(class.clone());
                    pieces.push(class);
                }
                continue;
            }
            pieces.push(clean_line(line));
        }
        let text = drop_repeated_classes(&one_line(&pieces.join(" ")));
        let text = drop_stop_words_if_long(&text);
        classes_first_if_cut(&text, &classes)
    }
}

#[async_trait::async_trait]
impl QueryRewriter for HeuristicRewriter {
    async fn rewrite(&self, query: &str, analysis: &Analysis) -> StageOutput<String> {
        StageOutput::heuristic(self.rewritten(query, analysis))
    }

    async fn rewrite_covering(&self, query: &str, analysis: &Analysis) -> StageOutput<Vec<String>> {
        StageOutput::heuristic(self.covering(query, analysis))
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

const LEVELS: &str = "TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL";

static FRAME: LazyLock<Regex> = LazyLock::new(|| regex(r"^at\s+(?:[\w$<>.]+\.[\w$<>]+|.*\(.*\))"));
static MORE_FRAMES: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^\.\.\.\s*\d+\s+(?:more|common frames omitted)"));
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"\[?\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\]?|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
    )
});
static LEADING_LEVEL: LazyLock<Regex> =
    LazyLock::new(|| regex(&format!(r"^\s*\[?(?:{LEVELS})\]?:?\s+")));
static BRACKETED_LEVEL: LazyLock<Regex> = LazyLock::new(|| regex(&format!(r"\[(?:{LEVELS})\]")));
static PID_AND_THREAD: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^\s*(?:\d+\s+---\s+)?(?:\[[^\]\s]{1,60}\]\s*)?"));
static THREAD_HEADER: LazyLock<Regex> =
    LazyLock::new(|| regex(r#"Exception in thread "[^"]*"\s*"#));
static NO_SOURCE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\((?:Unknown Source|Native Method)\)"));
static FILE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"\(?[\w$.-]+\.(?:java|kt|kts|scala|groovy|py|rb|rs|go|js|mjs|cjs|ts|tsx|jsx|cs|cpp|cc|c|h|hpp|php|swift):\d+(?::\d+)?\)?",
    )
});
static HEX: LazyLock<Regex> = LazyLock::new(|| regex(r"\b0x[0-9a-fA-F]{6,}\b|@[0-9a-fA-F]{6,}\b"));
static PACKAGE_PATH: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?:[a-z_][a-z0-9_]*[./]){2,}([A-Z][\w$]*)(?:\.[a-z_][\w$]*)*"));
static QUALIFIED: LazyLock<Regex> =
    LazyLock::new(|| regex(r"[A-Za-z_$][\w$]*(?:[./][A-Za-z_$][\w$]*)*"));

/// How a question opens, which a web query leaves out: "how do I", "what is the", "why does",
/// "can I", "is there a way to".
static QUESTION_OPENING: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)^(?:please\s+)?(?:(?:how|what|why|when|where|which|who)\s+(?:do|does|did|can|could|should|would|is|are|was|were|to)(?:\s+(?:i|we|you|one|it|there))?(?:\s+the)?|how\s+to|(?:can|could|should)\s+(?:i|we|you)|is\s+there\s+(?:a\s+way\s+to|an?)|(?:what|which|why))\s+",
    )
});

/// The web query of an error message that names what failed ("NoClassDefFoundError:
/// net/sf/cglib/proxy/Enhancer"): the versions in play, the innermost error, what it is about and
/// "fix", the words an engine matches a report of the same failure by; the story around a
/// stack trace ("tests fail after moving the build") only dilutes them. `None` without both an
/// error class and what it is about, or when it would not fit.
fn failure_query(query: &str, analysis: &Analysis) -> Option<String> {
    if analysis.query_type != QueryType::ErrorDiagnosis {
        return None;
    }
    let error = root_error(query, analysis)?;
    let component = error_component(query, error)?;
    let versions: Vec<String> = analysis
        .entities_of(EntityKind::Version)
        .map(|e| e.text.clone())
        .chain(missing_versions(query, analysis))
        .collect();
    // The error and what it is about stay whatever the context holds; versions join while
    // they fit, the question's own first.
    let core = format!("{error} {component} fix");
    if core.chars().count() > HeuristicRewriter::MAX_CHARS {
        return None;
    }
    let mut kept: Vec<&str> = Vec::new();
    for version in &versions {
        let longer = kept.iter().map(|v| v.len() + 1).sum::<usize>() + version.len() + 1;
        if core.chars().count() + longer <= HeuristicRewriter::MAX_CHARS {
            kept.push(version);
        }
    }
    kept.push(&core);
    Some(kept.join(" "))
}

/// The web query of a pasted error with no class and subject to search by (a compiler's,
/// a linker's, a package manager's): the error's own line, its code and message without paths,
/// then the asker's versions it leaves out while they fit, then "fix". The log around it (the
/// command typed, progress lines) matches nothing a report of the failure says.
fn error_line_query(query: &str, analysis: &Analysis) -> Option<String> {
    let reading = read_error(query)?;
    if reading.line.trim().is_empty()
        || (reading.line.split_whitespace().count() < 2 && reading.kind.is_empty())
    {
        return None;
    }
    let mut words = vec![reading.line.clone()];
    let fits = |words: &[String], more: &str| {
        words.iter().map(|w| w.chars().count() + 1).sum::<usize>() + more.chars().count()
            <= HeuristicRewriter::MAX_CHARS
    };
    for version in missing_versions(&reading.line, analysis) {
        if fits(&words, &version) {
            words.push(version);
        }
    }
    if fits(&words, "fix") {
        words.push("fix".to_owned());
    }
    Some(words.join(" "))
}

/// Whole lines that are only stack-trace plumbing.
fn is_trace_noise(line: &str) -> bool {
    FRAME.is_match(line)
        || MORE_FRAMES.is_match(line)
        || line.starts_with("Traceback (most recent call last)")
        || (line.starts_with("File \"") && line.contains(", line "))
        || line.chars().all(|c| matches!(c, '^' | '~' | ' '))
}

/// The class a "Caused by:" line names, without its package.
fn class_name(rest: &str) -> Option<String> {
    let qualified = QUALIFIED.find(rest)?.as_str();
    let class = qualified.rsplit(['.', '/']).next().unwrap_or(qualified);
    (!class.is_empty()).then(|| class.to_owned())
}

/// One line without timestamps, log levels, thread headers, file:line refs, addresses and
/// package paths.
fn clean_line(line: &str) -> String {
    let mut text = TIMESTAMP.replace_all(line, " ").into_owned();
    let mut is_log = text != line;
    let without_level = LEADING_LEVEL.replace(&text, "").into_owned();
    is_log |= without_level != text;
    text = BRACKETED_LEVEL
        .replace_all(&without_level, " ")
        .into_owned();
    if is_log {
        text = PID_AND_THREAD.replace(&text, "").into_owned();
    }
    text = THREAD_HEADER.replace_all(&text, "").into_owned();
    text = NO_SOURCE.replace_all(&text, "").into_owned();

    let mut tokens = Vec::new();
    for token in text.split_whitespace() {
        if token.contains("://") {
            tokens.push(token.to_owned());
            continue;
        }
        let cleaned = FILE_LINE.replace_all(token, "");
        let cleaned = HEX.replace_all(&cleaned, "");
        let cleaned = PACKAGE_PATH.replace_all(&cleaned, "${1}").into_owned();
        let has_word = cleaned.chars().any(char::is_alphanumeric);
        // A token left as bare punctuation by a removal, or log punctuation (":" "---"), goes.
        if has_word || (cleaned == token && !is_log) {
            tokens.push(cleaned);
        }
    }
    tokens.join(" ")
}

/// Later copies of an error class (a trace repeats it) go; the first stays where it is.
fn drop_repeated_classes(text: &str) -> String {
    let mut seen = HashSet::new();
    text.split_whitespace()
        .filter(|tok| {
            let core = tok.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '$');
            !is_error_class(core) || seen.insert(core.to_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A text over the limit loses its stop words before anything is cut, so the cut takes as few
/// content words as it can.
fn drop_stop_words_if_long(text: &str) -> String {
    if text.chars().count() <= HeuristicRewriter::MAX_CHARS {
        return text.to_owned();
    }
    let is_stop = |w: &str| {
        let core: String = w
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        !core.is_empty() && ferret_core::text::is_stop_word(&core)
    };
    text.split_whitespace()
        .filter(|w| !is_stop(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// When cutting to the limit would lose an error class, put the classes first.
fn classes_first_if_cut(text: &str, classes: &[String]) -> String {
    let kept = cut(
        trim_question(text),
        HeuristicRewriter::MAX_CHARS,
        CutMark::Plain,
    );
    let mut lost: Vec<&str> = Vec::new();
    for class in classes {
        if text.contains(class.as_str())
            && !kept.contains(class.as_str())
            && !lost.contains(&class.as_str())
        {
            lost.push(class);
        }
    }
    if lost.is_empty() {
        return text.to_owned();
    }
    let rest = text.split_whitespace().filter(|tok| {
        let core = tok.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '$');
        !lost.contains(&core)
    });
    lost.iter()
        .copied()
        .chain(rest)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The cleaned `text` cut to the limit, or the cut raw `query` when nothing of it is left.
fn head_query(text: &str, query: &str) -> String {
    let out = trim_question(&cut(
        trim_question(text),
        HeuristicRewriter::MAX_CHARS,
        CutMark::Plain,
    ))
    .to_owned();
    if out.is_empty() {
        cut(query, HeuristicRewriter::MAX_CHARS, CutMark::Plain)
    } else {
        out
    }
}

/// The end of `text` in at most `max_chars` characters, starting at a word.
fn tail_to_chars(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let (start, _) = text
        .char_indices()
        .nth(count - max_chars)
        .expect("count > max_chars");
    let tail = &text[start..];
    if text[..start].ends_with(char::is_whitespace) {
        return tail.trim_start().to_owned();
    }
    match tail.find(char::is_whitespace) {
        Some(i) if !tail[i..].trim().is_empty() => tail[i..].trim_start().to_owned(),
        _ => tail.to_owned(),
    }
}

fn trim_question(text: &str) -> &str {
    text.trim_end_matches(|c: char| c == '?' || c.is_whitespace())
        .trim_start()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::HeuristicAnalyzer;
    use proptest::prelude::*;

    fn rewrite(q: &str) -> String {
        HeuristicRewriter.rewritten(q, &HeuristicAnalyzer.analysis(q))
    }

    #[test]
    fn plain_questions_keep_their_words_in_order() {
        let cases = [
            "What is the capital of France?",
            "How did the Roman Empire fall?",
            "Who wrote 'Pride and Prejudice'?",
            "Is Python 3.12 faster than Python 3.11?",
            "At what temperature does water boil?",
            "at what time did the Titanic sink?",
            "What does e.g. mean in Latin?",
            "What happened on 2024-01-01?",
            "café culture in Paris",
            "Were Scott Derrickson and Ed Wood of the same nationality?",
            "Spring Boot 1.1.9 NoClassDefFoundError with Java 21",
            "what is 0x1F in decimal",
        ];
        for q in cases {
            assert_eq!(rewrite(q), q.trim_end_matches('?'), "{q}");
        }
        assert_eq!(
            rewrite("  why   is the\n sky blue ??  "),
            "why is the sky blue"
        );
    }

    #[test]
    fn stack_trace_noise_goes_and_error_classes_stay() {
        let log = "2024-05-01 12:00:00.123 ERROR 4242 --- [main] o.s.boot.SpringApplication : Application run failed
java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer
\tat org.springframework.context.support.AbstractApplicationContext.invokeBeanFactoryPostProcessors(AbstractApplicationContext.java:686)
\tat org.springframework.boot.SpringApplication.run(SpringApplication.java:320)
\t... 42 more
Caused by: java.lang.ClassNotFoundException: net.sf.cglib.proxy.Enhancer
\tat java.base/jdk.internal.loader.BuiltinClassLoader.loadClass(BuiltinClassLoader.java:641)";
        assert_eq!(
            rewrite(log),
            "SpringApplication Application run failed NoClassDefFoundError: Enhancer ClassNotFoundException"
        );
    }

    #[test]
    fn each_kind_of_noise_is_removed() {
        let cases = [
            ("Exception in thread \"main\" java.lang.NullPointerException", "NullPointerException"),
            ("NullPointerException at Foo.bar(Foo.java:42)", "NullPointerException at Foo.bar"),
            ("segfault at 0x7ffd5e8c3a10 in libfoo", "segfault at in libfoo"),
            ("com.example.Widget@1a2b3c4d is null", "Widget is null"),
            ("[ERROR] build failed", "build failed"),
            ("WARN 12:01:02 disk almost full", "disk almost full"),
            ("see https://example.com/a/b/Page for details", "see https://example.com/a/b/Page for details"),
            (
                "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nValueError: bad input",
                "main() ValueError: bad input",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(rewrite(input), want, "{input:?}");
        }
    }

    #[test]
    fn long_input_is_cut_on_a_word_boundary_keeping_error_classes() {
        let long = format!("{} IllegalStateException", "word ".repeat(40));
        let out = rewrite(&long);
        assert!(out.chars().count() <= 100);
        assert!(out.starts_with("IllegalStateException word"), "{out}");
        assert!(
            !out.ends_with(' ')
                && out
                    .split(' ')
                    .all(|w| w == "word" || w == "IllegalStateException")
        );

        // Stop words go before the cut, so the words that carry the question survive it.
        let question = "Why ".to_owned() + &"very ".repeat(30) + "long question?";
        assert_eq!(rewrite(&question), "long question");
    }

    #[test]
    fn a_question_too_long_for_one_query_gets_a_second_holding_its_end() {
        let q = "The 2011–12 VCU Rams men's basketball team, led by third year head coach Shaka Smart, \
                 represented Virginia Commonwealth University which was founded in what year?";
        let queries = HeuristicRewriter.covering(q, &HeuristicAnalyzer.analysis(q));
        assert_eq!(queries.len(), 2, "{queries:?}");
        assert_eq!(queries[0], rewrite(q), "the first is the rewrite");
        assert!(
            !queries[0].contains("Commonwealth"),
            "the cut lost the end: {queries:?}"
        );
        assert!(
            queries[1].ends_with("Virginia Commonwealth University founded year"),
            "{queries:?}"
        );
        assert!(
            queries[1].starts_with(char::is_alphanumeric),
            "starts at a word: {queries:?}"
        );

        let short = "Where was Shaka Smart born?";
        assert_eq!(
            HeuristicRewriter.covering(short, &HeuristicAnalyzer.analysis(short)),
            ["Where was Shaka Smart born"]
        );
    }

    #[test]
    fn never_empty_for_non_blank_input() {
        assert_eq!(rewrite("?"), "?", "falls back to the trimmed input");
        assert_eq!(rewrite("\tat a.b(C.java:1)"), "at a.b(C.java:1)");
        assert_eq!(rewrite("   "), "");
    }

    fn web(q: &str) -> String {
        HeuristicRewriter.web(q, &HeuristicAnalyzer.analysis(q))
    }

    #[test]
    fn a_web_query_is_affirmative_keeps_versions_and_asks_an_error_for_its_fix() {
        assert_eq!(
            web("How do I upgrade Spring Boot 2.7 to 3.2 with Java 17?"),
            "upgrade Spring Boot 2.7 to 3.2 with Java 17"
        );
        assert_eq!(
            web("What is the minimum Java version for Gradle 8.5?"),
            "minimum Java version for Gradle 8.5"
        );
        let log = "java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer\n\tat org.springframework.boot.SpringApplication.run(SpringApplication.java:320)";
        let query = web(log);
        assert!(query.ends_with(" fix"), "{query}");
        assert!(query.contains("NoClassDefFoundError"), "{query}");
        assert!(!query.contains("SpringApplication.java"), "{query}");
        assert_eq!(
            web("NoClassDefFoundError Enhancer solution"),
            "NoClassDefFoundError Enhancer solution",
            "a query asking for the fix already gets no second one"
        );
        let long = format!("IllegalStateException {}", "word ".repeat(40));
        let query = web(&long);
        assert!(
            query.chars().count() <= HeuristicRewriter::MAX_CHARS && query.ends_with(" fix"),
            "{query}"
        );
    }

    #[test]
    fn the_askers_versions_join_an_error_query_unless_it_names_them() {
        let q = "NoClassDefFoundError: net/sf/cglib/proxy/Enhancer";
        let context = std::collections::BTreeMap::from([
            ("java_version".to_owned(), "17".to_owned()),
            ("spring_boot_version".to_owned(), "1.5.22".to_owned()),
        ]);
        let analysis = HeuristicAnalyzer.analysis(q).with_context(context.clone());
        let query = HeuristicRewriter.web(q, &analysis);
        assert_eq!(
            query, "Java 17 Spring Boot 1.5.22 NoClassDefFoundError cglib proxy Enhancer fix",
            "an error naming what failed: versions, error, component, fix"
        );
        assert!(query.chars().count() <= HeuristicRewriter::MAX_CHARS);
        let named = "NoClassDefFoundError Enhancer on Java 17";
        let analysis = HeuristicAnalyzer.analysis(named).with_context(context);
        let query = HeuristicRewriter.web(named, &analysis);
        assert_eq!(query.matches("Java 17").count(), 1, "{query}");
    }

    #[test]
    fn the_question_form_keeps_the_words_as_asked_without_trace_noise() {
        assert_eq!(
            HeuristicRewriter.question("Why does my Spring app fail on Java 17?"),
            "Why does my Spring app fail on Java 17?"
        );
        let asked = "Why does this fail?\n\tat org.example.App.main(App.java:12)\n\t... 3 more";
        assert_eq!(HeuristicRewriter.question(asked), "Why does this fail?");
        let long = "word ".repeat(400);
        assert!(
            HeuristicRewriter.question(&long).chars().count()
                <= HeuristicRewriter::MAX_QUESTION_CHARS
        );
    }

    #[tokio::test]
    async fn the_trait_reports_the_heuristic() {
        let analysis = HeuristicAnalyzer.analysis("x");
        let out = (&HeuristicRewriter as &dyn QueryRewriter)
            .rewrite("What is BM25?", &analysis)
            .await;
        assert_eq!(out.value, "What is BM25");
        assert_eq!(
            out.implementation,
            ferret_core::Implementation::heuristic_default()
        );
    }

    proptest! {
        #[test]
        fn a_web_query_is_short_and_non_empty(q in "\\PC{0,300}|(\\PC{0,40}\n\tat \\PC{0,40}){0,5}") {
            let out = web(&q);
            prop_assert!(out.chars().count() <= HeuristicRewriter::MAX_CHARS, "{:?}", out);
            prop_assert_eq!(out.trim().is_empty(), q.trim().is_empty());
        }

        #[test]
        fn output_is_short_and_non_empty(q in "\\PC{0,300}|(\\PC{0,40}\n\tat \\PC{0,40}){0,5}") {
            let out = rewrite(&q);
            prop_assert!(out.chars().count() <= HeuristicRewriter::MAX_CHARS, "{:?}", out);
            prop_assert_eq!(out.is_empty(), q.trim().is_empty());
        }

        #[test]
        fn covering_queries_are_short_and_hold_every_word_of_a_question_up_to_twice_the_limit(
            ws in proptest::collection::vec("[a-z]{3,12}", 1..40),
        ) {
            let q = ws.join(" ");
            let queries = HeuristicRewriter.covering(&q, &HeuristicAnalyzer.analysis(&q));
            prop_assert!(!queries.is_empty() && queries.len() <= 2, "{:?}", queries);
            for query in &queries {
                prop_assert!(!query.is_empty() && query.chars().count() <= HeuristicRewriter::MAX_CHARS, "{:?}", query);
            }
            let cleaned = HeuristicRewriter.cleaned(&q, &HeuristicAnalyzer.analysis(&q));
            // Each cut loses at most a word of 12 letters and its space.
            if cleaned.chars().count() <= 2 * (HeuristicRewriter::MAX_CHARS - 13) + 1 {
                let held: HashSet<&str> = queries.iter().flat_map(|query| query.split(' ')).collect();
                for word in cleaned.split(' ') {
                    prop_assert!(held.contains(word), "{:?} lost from {:?}", word, queries);
                }
            }
        }

        #[test]
        fn plain_word_sequences_pass_through(ws in proptest::collection::vec("[a-zA-Z]{1,10}", 1..12)) {
            let q = ws.join(" ");
            prop_assume!(q.chars().count() <= 100);
            prop_assert_eq!(rewrite(&q), q);
        }
    }
}
