//! The tools a tool-selection loop or a plan may call: a search over every backend,
//! a search over one named backend, the most recent entries, and a date range. Each is a search
//! through the executor with its own backend choice and filters, so caching, retries, rate limits
//! and the call budget apply to tools exactly as to the refine loop's searches.

use crate::ToolDescription;
use chrono::NaiveDate;
use ferret_core::{DateRange, Filters};
use ferret_exec::Executor;

/// The search over every backend: keyword and, where a backend has embeddings, vector search.
pub const SEARCH_TOOL: &str = "search";
/// The newest dated entries that match.
pub const RECENT_TOOL: &str = "recent";
/// Entries dated inside a range that match.
pub const DATE_RANGE_TOOL: &str = "date_range";

#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolKind {
    /// A search over `backend`, or every backend.
    Search {
        backend: Option<String>,
    },
    Recent,
    DateRange,
}

/// One tool: its name, what it does and what its argument is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The name a selector or a plan calls it by.
    pub name: String,
    /// What it finds, in one sentence.
    pub description: String,
    /// What its argument is.
    pub argument: String,
    kind: ToolKind,
}

/// A tool call that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("there is no tool `{tool}`; the tools are: {known}")]
    Unknown {
        /// The name asked for.
        tool: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// The argument does not say what the tool needs.
    #[error("tool `{tool}`: {problem}")]
    BadArgument {
        /// The tool called.
        tool: String,
        /// What is wrong with the argument.
        problem: String,
    },
}

/// What a tool call searches: a query, on one backend or all, with filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRequest {
    /// The tool's name, as the tool box spells it.
    pub tool: String,
    /// The query sent.
    pub query: String,
    /// Only this backend; `None` for all.
    pub backend: Option<String>,
    /// The filters the call carries: the query's own plus the tool's.
    pub filters: Filters,
}

/// The tools offered for one search, built from the executor's backends and what they can
/// filter by: a tool no backend could serve is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBox {
    tools: Vec<Tool>,
    recent_entries: usize,
}

impl ToolBox {
    /// The tools `executor` can serve; `recent_entries` is how many entries the recent tool lists.
    pub fn new(executor: &Executor, recent_entries: usize) -> Self {
        // Model hubs answer only the model-file finder, never a question's search.
        let backends: Vec<_> = executor
            .backends()
            .into_iter()
            .filter(|(_, caps)| caps.model_hub.is_none())
            .collect();
        let mut tools = vec![Tool {
            name: SEARCH_TOOL.into(),
            description:
                "searches every backend (keyword and vector search) for passages matching a query"
                    .into(),
            argument: "a search query".into(),
            kind: ToolKind::Search { backend: None },
        }];
        if backends.len() > 1 {
            for (name, _) in &backends {
                tools.push(Tool {
                    name: format!("search_{name}"),
                    description: format!("searches only the `{name}` backend"),
                    argument: "a search query".into(),
                    kind: ToolKind::Search {
                        backend: Some((*name).to_owned()),
                    },
                });
            }
        }
        if backends.iter().any(|(_, caps)| caps.most_recent) {
            tools.push(Tool {
                name: RECENT_TOOL.into(),
                description: format!("lists the {recent_entries} most recent dated entries matching a query, newest first"),
                argument: "what to look for".into(),
                kind: ToolKind::Recent,
            });
        }
        if backends.iter().any(|(_, caps)| caps.date_range) {
            tools.push(Tool {
                name: DATE_RANGE_TOOL.into(),
                description: "searches only entries dated inside a range".into(),
                argument: "YYYY-MM-DD..YYYY-MM-DD (either end may be left out), a space, then what to look for".into(),
                kind: ToolKind::DateRange,
            });
        }
        Self {
            tools,
            recent_entries,
        }
    }

    /// The tools, in the order they are offered.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools' names.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The tools as a prompt describes them.
    pub fn descriptions(&self) -> Vec<ToolDescription> {
        self.tools
            .iter()
            .map(|t| ToolDescription {
                name: t.name.clone(),
                description: t.description.clone(),
                argument: Some(t.argument.clone()),
            })
            .collect()
    }

    /// The tool called `name`, ignoring case (small models shout).
    pub fn find(&self, name: &str) -> Option<&Tool> {
        self.tools
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name.trim()))
    }

    /// What calling `tool` with `argument` searches. `filters` are the query's own; an empty
    /// query part falls back to `question`.
    pub fn request(
        &self,
        tool: &str,
        argument: &str,
        filters: &Filters,
        question: &str,
    ) -> Result<ToolRequest, ToolError> {
        let found = self.find(tool).ok_or_else(|| ToolError::Unknown {
            tool: tool.to_owned(),
            known: self.names().join(", "),
        })?;
        let or_question = |text: &str| {
            if text.trim().is_empty() {
                question.to_owned()
            } else {
                text.trim().to_owned()
            }
        };
        let mut filters = filters.clone();
        let (query, backend) = match &found.kind {
            ToolKind::Search { backend } => (or_question(argument), backend.clone()),
            ToolKind::Recent => {
                filters.most_recent = Some(self.recent_entries);
                (or_question(argument), None)
            }
            ToolKind::DateRange => {
                let (range, rest) = argument
                    .trim()
                    .split_once(char::is_whitespace)
                    .unwrap_or((argument.trim(), ""));
                filters.date_range =
                    Some(
                        parse_range(range).map_err(|problem| ToolError::BadArgument {
                            tool: found.name.clone(),
                            problem,
                        })?,
                    );
                (or_question(rest), None)
            }
        };
        Ok(ToolRequest {
            tool: found.name.clone(),
            query,
            backend,
            filters,
        })
    }
}

/// `YYYY-MM-DD..YYYY-MM-DD`, either end empty for an open range.
fn parse_range(text: &str) -> Result<DateRange, String> {
    let (from, to) = text
        .split_once("..")
        .ok_or_else(|| format!("`{text}` is not a date range: write YYYY-MM-DD..YYYY-MM-DD"))?;
    let date = |s: &str| -> Result<Option<NaiveDate>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map(Some)
            .map_err(|e| format!("`{s}` is not a date (YYYY-MM-DD): {e}"))
    };
    let range = DateRange {
        from: date(from)?,
        to: date(to)?,
    };
    match (range.from, range.to) {
        (None, None) => Err("the date range has neither end: give at least one date".into()),
        (Some(from), Some(to)) if from > to => {
            Err(format!("the range starts ({from}) after it ends ({to})"))
        }
        _ => Ok(range),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use ferret_core::{BackendCapabilities, BackendError, Hit, SearchBackend, SearchRequest};

    use super::*;

    struct Named(&'static str, BackendCapabilities);

    #[async_trait]
    impl SearchBackend for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn capabilities(&self) -> BackendCapabilities {
            self.1
        }
        async fn search(&self, _: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
            Ok(Vec::new())
        }
    }

    fn toolbox(backends: &[(&'static str, BackendCapabilities)]) -> ToolBox {
        let mut builder = Executor::builder();
        for (name, caps) in backends {
            builder = builder.backend(Arc::new(Named(name, *caps)));
        }
        ToolBox::new(&builder.build().unwrap(), 5)
    }

    #[test]
    fn only_tools_some_backend_can_serve_are_offered() {
        let plain = toolbox(&[("docs", BackendCapabilities::default())]);
        assert_eq!(plain.names(), ["search"]);
        let dated = BackendCapabilities {
            date_range: true,
            most_recent: true,
            access: false,
            ..BackendCapabilities::default()
        };
        let both = toolbox(&[("docs", BackendCapabilities::default()), ("journal", dated)]);
        assert_eq!(
            both.names(),
            [
                "search",
                "search_docs",
                "search_journal",
                "recent",
                "date_range"
            ]
        );
    }

    #[test]
    fn arguments_become_queries_backends_and_filters() {
        let dated = BackendCapabilities {
            date_range: true,
            most_recent: true,
            access: false,
            ..BackendCapabilities::default()
        };
        let tools = toolbox(&[("docs", BackendCapabilities::default()), ("journal", dated)]);
        let none = Filters::default();
        let one = tools
            .request("SEARCH_JOURNAL", "stress", &none, "q")
            .unwrap();
        assert_eq!(
            (
                one.tool.as_str(),
                one.backend.as_deref(),
                one.query.as_str()
            ),
            ("search_journal", Some("journal"), "stress")
        );
        let recent = tools
            .request("recent", " ", &none, "what worried me")
            .unwrap();
        assert_eq!(
            (recent.query.as_str(), recent.filters.most_recent),
            ("what worried me", Some(5))
        );
        let range = tools
            .request("date_range", "2024-01-01.. exams", &none, "q")
            .unwrap();
        assert_eq!(range.query, "exams");
        assert_eq!(
            range.filters.date_range,
            Some(DateRange {
                from: NaiveDate::from_ymd_opt(2024, 1, 1),
                to: None
            })
        );
    }

    #[test]
    fn bad_calls_are_typed_errors_that_say_what_to_fix() {
        let dated = BackendCapabilities {
            date_range: true,
            most_recent: false,
            access: false,
            ..BackendCapabilities::default()
        };
        let tools = toolbox(&[("journal", dated)]);
        let none = Filters::default();
        let unknown = tools.request("browse", "x", &none, "q").unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "there is no tool `browse`; the tools are: search, date_range"
        );
        for (argument, says) in [
            ("last week", "not a date range"),
            ("2024-13-01..", "not a date"),
            ("..", "neither end"),
            ("2024-05-01..2024-01-01", "starts"),
        ] {
            let error = tools
                .request("date_range", argument, &none, "q")
                .unwrap_err();
            assert!(
                matches!(&error, ToolError::BadArgument { problem, .. } if problem.contains(says)),
                "{argument}: {error}"
            );
        }
    }
}
