use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::{Budget, SearchOptions, Strategy};

/// Longest question accepted, in characters. Longer input is refused, never truncated silently.
pub const MAX_QUESTION_CHARS: usize = 10_000;

/// Why a question was refused before any search ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The question was empty or only whitespace.
    #[error("the question is empty: give Ferret something to search for")]
    Empty,
    /// The question was longer than [`MAX_QUESTION_CHARS`].
    #[error(
        "the question is {chars} characters long; the limit is {limit}: shorten it or split it"
    )]
    TooLong {
        /// Length of the question that was given.
        chars: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A limit or filter made no sense (for example a date range that ends before it starts).
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// The field at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// An inclusive range of calendar dates; either end may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DateRange {
    /// First day included.
    pub from: Option<NaiveDate>,
    /// Last day included.
    pub to: Option<NaiveDate>,
}

impl DateRange {
    /// Does `date` fall inside the range?
    pub fn contains(&self, date: NaiveDate) -> bool {
        self.from.is_none_or(|from| date >= from) && self.to.is_none_or(|to| date <= to)
    }
}

/// Restrictions a backend applies to what it returns.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Only results dated inside this range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_range: Option<DateRange>,
    /// Only the N most recent dated results, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_recent: Option<usize>,
    /// Only results the asker may read. Set by whoever authenticated the asker (a server, a
    /// service linking the library), never read from a request body, so a client cannot widen
    /// it.
    #[serde(skip)]
    pub access: Option<Access>,
}

impl Filters {
    /// True when no restriction is set.
    pub fn is_empty(&self) -> bool {
        self.date_range.is_none() && self.most_recent.is_none() && self.access.is_none()
    }
}

/// The documents of an index an asker may read: those whose access list (`acl`) names one of
/// the asker's groups, and those with no list unless documents are private by default.
///
/// An index filters on it in its engine, so a document outside the groups never leaves the
/// index; results from the web are public and pass.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Access {
    /// The asker's groups.
    pub groups: std::collections::BTreeSet<String>,
    /// May the asker read documents that carry no access list?
    pub unlisted: Unlisted,
}

/// Whom a search is run for, as a server authenticated them: a name (for logs, and the threads
/// they own) and what they may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The name their token stands for.
    pub name: String,
    /// The documents they may read.
    pub access: Access,
}

/// Who may read a document that carries no access list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Unlisted {
    /// Everyone: only documents with a list are restricted.
    #[default]
    Public,
    /// No one: a document is read only through a group its list names.
    Private,
}

impl Access {
    /// An asker in `groups`, reading documents with no list as `unlisted` says.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>, unlisted: Unlisted) -> Self {
        Self {
            groups: groups.into_iter().map(Into::into).collect(),
            unlisted,
        }
    }

    /// Can no document pass (no group, and unlisted documents private)? A backend then returns
    /// nothing without asking its engine.
    pub fn admits_nothing(&self) -> bool {
        self.groups.is_empty() && self.unlisted == Unlisted::Private
    }
}

/// A question as it enters Ferret: its text, the conversation it belongs to, filters and limits.
///
/// The text is validated on construction, so a `Query` in hand is always searchable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "RawQuery")]
pub struct Query {
    text: String,
    /// Conversation this question belongs to, for follow-up resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Restrictions passed to every backend.
    #[serde(default)]
    pub filters: Filters,
    /// How many hits the response lists at most.
    pub limit: usize,
    /// Limits on attempts, sub-queries, tokens and time.
    #[serde(default)]
    pub budget: Budget,
    /// Provider options (depth, topic, freshness, domains, country, language, safe search) for
    /// the web backends; each one set overrides the backend's configured default.
    #[serde(default, skip_serializing_if = "SearchOptions::is_empty")]
    pub options: SearchOptions,
    /// The asker's situation as free key/value pairs (`java_version` = `17`,
    /// `spring_boot_version` = `1.5.22`), which the stages read beside the question.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, String>,
    /// What to do when the question repeats one its thread already asked.
    #[serde(default, skip_serializing_if = "OnRepeat::is_default")]
    pub on_repeat: OnRepeat,
    /// The strategy for this question; `None` runs the one the searcher is configured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
}

/// What a search does with a question its thread has already asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnRepeat {
    /// Give the earlier answer again, calling no backend.
    #[default]
    Reuse,
    /// Search again.
    SearchAgain,
}

impl OnRepeat {
    fn is_default(&self) -> bool {
        *self == OnRepeat::Reuse
    }
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct RawQuery {
    text: String,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    filters: Filters,
    #[serde(default = "default_limit")]
    limit: usize,
    #[serde(default)]
    budget: Budget,
    #[serde(default)]
    options: SearchOptions,
    #[serde(default)]
    context: BTreeMap<String, String>,
    #[serde(default)]
    on_repeat: OnRepeat,
    #[serde(default)]
    strategy: Option<Strategy>,
}

fn default_limit() -> usize {
    Query::DEFAULT_LIMIT
}

impl TryFrom<RawQuery> for Query {
    type Error = QueryError;

    fn try_from(raw: RawQuery) -> Result<Self, Self::Error> {
        raw.budget
            .validate()
            .map_err(|e| QueryError::InvalidField {
                field: "budget",
                reason: e.0,
            })?;
        Query::new(raw.text)?
            .with_filters(raw.filters)?
            .with_limit(raw.limit)?
            .with_options(raw.options)?
            .with_context(raw.context)
            .map(|q| Query {
                thread_id: raw.thread_id,
                budget: raw.budget,
                on_repeat: raw.on_repeat,
                strategy: raw.strategy,
                ..q
            })
    }
}

/// Words of a log line that reports a failure.
const FAILURE_WORDS: [&str; 9] = [
    "error",
    "exception",
    "panic",
    "caused by",
    "fatal",
    "failed",
    "traceback",
    "cannot",
    "not found",
];

/// Lines kept from the end of a long log, where the asker's question is.
const LOG_TAIL_LINES: usize = 20;

/// A long log cut to [`MAX_QUESTION_CHARS`]: its failure lines (and the two after each) and its
/// last lines, in order; a `…` line stands for each run of lines left out. When that is still
/// too long, the lines nearest the end stay; `None` when a single line is over the limit.
fn condensed_log(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_lowercase();
        if FAILURE_WORDS.iter().any(|w| lower.contains(w)) {
            for k in keep.iter_mut().skip(i).take(3) {
                *k = true;
            }
        }
    }
    for k in keep.iter_mut().rev().take(LOG_TAIL_LINES) {
        *k = true;
    }
    let mut out: Vec<&str> = Vec::new();
    let mut skipped = false;
    for (line, kept) in lines.iter().zip(&keep) {
        if *kept {
            if skipped {
                out.push("…");
            }
            out.push(line);
            skipped = false;
        } else {
            skipped = true;
        }
    }
    // Still too long: the end of it, where the innermost failure and the question are, from a
    // line's start; `None` when one line alone is too long (no line is cut).
    let mut taken = 0;
    let mut first = out.len();
    for (i, line) in out.iter().enumerate().rev() {
        let with_break = line.chars().count() + usize::from(i + 1 < out.len());
        if taken + with_break > MAX_QUESTION_CHARS {
            break;
        }
        taken += with_break;
        first = i;
    }
    (first < out.len()).then(|| out[first..].join("\n"))
}

impl Query {
    /// Hits listed in a response unless the caller asks otherwise.
    pub const DEFAULT_LIMIT: usize = 10;
    /// Most hits one query may ask for.
    pub const MAX_LIMIT: usize = 1_000;
    /// Most context pairs one query carries.
    pub const MAX_CONTEXT_ENTRIES: usize = 32;
    /// Longest context value, in characters.
    pub const MAX_CONTEXT_VALUE_CHARS: usize = 1_000;

    /// A query for `text`, refused when it is empty, only whitespace or over [`MAX_QUESTION_CHARS`].
    pub fn new(text: impl Into<String>) -> Result<Self, QueryError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(QueryError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_QUESTION_CHARS {
            return Err(QueryError::TooLong {
                chars,
                limit: MAX_QUESTION_CHARS,
            });
        }
        Ok(Self {
            text: text.trim().to_owned(),
            thread_id: None,
            filters: Filters::default(),
            limit: Self::DEFAULT_LIMIT,
            budget: Budget::default(),
            options: SearchOptions::default(),
            context: BTreeMap::new(),
            on_repeat: OnRepeat::Reuse,
            strategy: None,
        })
    }

    /// A query for a pasted log, which may be longer than [`MAX_QUESTION_CHARS`]: a log within
    /// the limit is taken whole; a longer one keeps the lines that report a failure (with the
    /// two after each, where a message goes on) and the log's last lines (where the asker's
    /// question is), in order, a `…` line where lines were left out. Empty input, and a single
    /// line over the limit, are refused as by [`Query::new`].
    pub fn from_log(text: impl Into<String>) -> Result<Self, QueryError> {
        let text = text.into();
        if text.chars().count() <= MAX_QUESTION_CHARS || text.trim().is_empty() {
            return Self::new(text);
        }
        match condensed_log(&text) {
            Some(condensed) => Self::new(condensed),
            None => Err(QueryError::TooLong {
                chars: text.chars().count(),
                limit: MAX_QUESTION_CHARS,
            }),
        }
    }

    /// The question, trimmed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The same query for another question (a follow-up resolved against its thread), refused
    /// like a new one when the text is empty or too long.
    pub fn with_text(self, text: impl Into<String>) -> Result<Self, QueryError> {
        let fresh = Query::new(text)?;
        Ok(Query {
            text: fresh.text,
            ..self
        })
    }

    /// Attach the query to a conversation.
    pub fn with_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Set the filters, refusing a date range that ends before it starts or a zero "most recent".
    pub fn with_filters(mut self, filters: Filters) -> Result<Self, QueryError> {
        if let Some(DateRange {
            from: Some(from),
            to: Some(to),
        }) = filters.date_range
        {
            if to < from {
                return Err(QueryError::InvalidField {
                    field: "date_range",
                    reason: format!("it ends ({to}) before it starts ({from})"),
                });
            }
        }
        if filters.most_recent == Some(0) {
            return Err(QueryError::InvalidField {
                field: "most_recent",
                reason: "asking for the 0 most recent entries returns nothing".into(),
            });
        }
        // The asker's access is not the caller's filter to replace.
        self.filters = Filters {
            access: self.filters.access.take(),
            ..filters
        };
        Ok(self)
    }

    /// Search only what `access` lets the asker read (see [`Access`]).
    pub fn with_access(mut self, access: Access) -> Self {
        self.filters.access = Some(access);
        self
    }

    /// Set how many hits the response lists, between 1 and [`Query::MAX_LIMIT`].
    pub fn with_limit(mut self, limit: usize) -> Result<Self, QueryError> {
        if limit == 0 || limit > Self::MAX_LIMIT {
            return Err(QueryError::InvalidField {
                field: "limit",
                reason: format!("{limit} is outside 1..={}", Self::MAX_LIMIT),
            });
        }
        self.limit = limit;
        Ok(self)
    }

    /// Set the provider options, refusing a domain that is not a host or a value out of bounds.
    pub fn with_options(mut self, options: SearchOptions) -> Result<Self, QueryError> {
        if let Some(reason) = options.problem() {
            return Err(QueryError::InvalidField {
                field: "options",
                reason,
            });
        }
        self.options = options;
        Ok(self)
    }

    /// Set the context, refusing more than [`Query::MAX_CONTEXT_ENTRIES`] pairs, a key that is
    /// not a short identifier, or a value empty or over [`Query::MAX_CONTEXT_VALUE_CHARS`].
    pub fn with_context(mut self, context: BTreeMap<String, String>) -> Result<Self, QueryError> {
        let invalid = |reason: String| QueryError::InvalidField {
            field: "context",
            reason,
        };
        if context.len() > Self::MAX_CONTEXT_ENTRIES {
            return Err(invalid(format!(
                "{} entries; at most {} are read",
                context.len(),
                Self::MAX_CONTEXT_ENTRIES
            )));
        }
        for (key, value) in &context {
            let identifier = key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if key.is_empty() || key.len() > 64 || !identifier {
                return Err(invalid(format!(
                    "`{key}` is not a key: use 1 to 64 letters, digits, `_`, `-` or `.`"
                )));
            }
            let chars = value.chars().count();
            if value.trim().is_empty() || chars > Self::MAX_CONTEXT_VALUE_CHARS {
                return Err(invalid(format!(
                    "the value of `{key}` has {chars} characters; give 1 to {}",
                    Self::MAX_CONTEXT_VALUE_CHARS
                )));
            }
        }
        self.context = context;
        Ok(self)
    }

    /// Replace the budget.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Run `strategy` for this question instead of the searcher's configured one.
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = Some(strategy);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_log_keeps_its_failure_and_its_question() {
        let log = format!(
            "{}Traceback (most recent call last):\n  File \"/srv/app.py\", line 3, in <module>\nImportError: cannot import name 'soft_unicode' from 'markupsafe'\n{}How do I fix this?",
            "INFO 2024-05-01T10:00:00Z worker 17 started, queue depth 3\n".repeat(300),
            "DEBUG request served in 12 ms\n".repeat(100),
        );
        assert!(log.chars().count() > 20_000);
        assert!(matches!(
            Query::new(log.clone()),
            Err(QueryError::TooLong { .. })
        ));
        let query = Query::from_log(log).expect("a long log is condensed");
        let text = query.text();
        assert!(text.chars().count() <= MAX_QUESTION_CHARS);
        assert!(
            text.contains("ImportError: cannot import name 'soft_unicode'"),
            "{text}"
        );
        assert!(text.ends_with("How do I fix this?"), "{text}");
        assert!(text.contains('…'));
        assert!(matches!(Query::from_log("  "), Err(QueryError::Empty)));
        assert_eq!(
            Query::from_log("short").map(|q| q.text().to_owned()),
            Ok("short".to_owned())
        );
        // One line over the limit is not a log to condense: it is refused, not cut.
        assert!(matches!(
            Query::from_log("a".repeat(MAX_QUESTION_CHARS + 1)),
            Err(QueryError::TooLong { .. })
        ));
    }

    #[test]
    fn context_is_read_from_json_and_an_oversized_value_is_a_typed_error() {
        let query: Query = serde_json::from_str(
            r#"{"text": "NoClassDefFoundError", "context": {"java_version": "17"}}"#,
        )
        .unwrap();
        assert_eq!(query.context["java_version"], "17");
        let long = serde_json::json!({"text": "q", "context": {"stack": "x".repeat(1_001)}});
        let error = serde_json::from_value::<Query>(long)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("context") && error.contains("1001"),
            "{error}"
        );
        let key = Query::new("q")
            .unwrap()
            .with_context(BTreeMap::from([("java version".into(), "17".into())]));
        assert!(matches!(
            key,
            Err(QueryError::InvalidField {
                field: "context",
                ..
            })
        ));
    }

    #[test]
    fn empty_and_whitespace_questions_are_refused() {
        assert_eq!(Query::new(""), Err(QueryError::Empty));
        assert_eq!(Query::new(" \n\t "), Err(QueryError::Empty));
    }

    #[test]
    fn an_oversized_question_is_refused_not_truncated() {
        let err = Query::new("a".repeat(MAX_QUESTION_CHARS + 1)).unwrap_err();
        assert_eq!(
            err,
            QueryError::TooLong {
                chars: MAX_QUESTION_CHARS + 1,
                limit: MAX_QUESTION_CHARS
            }
        );
        assert!(
            Query::new("é".repeat(MAX_QUESTION_CHARS)).is_ok(),
            "the limit counts characters, not bytes"
        );
    }

    #[test]
    fn a_backwards_date_range_is_refused() {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        let filters = Filters {
            date_range: Some(DateRange {
                from: d("2024-02-01"),
                to: d("2024-01-01"),
            }),
            ..Default::default()
        };
        assert!(matches!(
            Query::new("x").unwrap().with_filters(filters),
            Err(QueryError::InvalidField {
                field: "date_range",
                ..
            })
        ));
    }

    #[test]
    fn deserialising_validates_like_the_constructor() {
        assert!(serde_json::from_str::<Query>(r#"{"text":"   "}"#).is_err());
        assert!(
            serde_json::from_str::<Query>(r#"{"text":"x","filters":{"recent":3}}"#).is_err(),
            "a misspelt filter is refused"
        );
        assert!(
            serde_json::from_str::<Query>(r#"{"text":"x","budget":{"max_attempts":0}}"#).is_err()
        );
        let q: Query = serde_json::from_str(r#"{"text":" why? ","limit":3}"#).unwrap();
        assert_eq!((q.text(), q.limit), ("why?", 3));
    }
}
