use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::{Actions, BackendError, Hit, HitId, PaidUnit, Trace};

/// What kind of reply a search produced: results to show, or a message instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResponseType {
    /// Hits were found; `answer` and `hits` are set.
    Results,
    /// No search ran, or nothing relevant was found; `message` says why. After a search, `hits`
    /// still lists what was found, none of it judged to answer.
    Message,
}

/// Why the search stopped. Every search ends with exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The results were good enough and an answer was written.
    Answered,
    /// The last attempt brought no result that earlier attempts had not already found, or the
    /// page a multi-hop question led to was not found.
    NoProgress,
    /// The refine loop used all its attempts without reaching good results.
    MaxAttempts,
    /// Time, backend calls or tokens ran out; the response holds what was found until then.
    BudgetExhausted,
    /// The guardrail decided not to search (greeting, unclear or unrelated question).
    Guardrail,
    /// The search could not start: its budget or the configuration is unusable. The message
    /// says what to fix.
    Refused,
}

/// One `[n]` marker of the answer and the hit it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Citation {
    /// The number inside the marker, starting at 1.
    pub marker: usize,
    /// The hit the marker points at; always one of `Response::hits`.
    pub hit_id: HitId,
    /// The hit's title, for rendering a source list.
    pub title: String,
    /// The hit's address, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The answer in a few words, where the question asks for one: a name, a date or year, a number,
/// a place, yes or no, or one of the two options a comparison names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShortAnswer {
    /// The words, as a source writes them ("1755", "Moscow State University"), or `yes` / `no`.
    pub text: String,
    /// The sources it is read from, each one of [`Response::citations`]: one for a span, both
    /// sides' for a comparison or a yes/no over two things.
    pub citations: Vec<Citation>,
}

/// A backend call that failed while the search went on without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BackendFailure {
    /// The query that was sent.
    pub query: String,
    /// What failed, and whether a retry could help.
    pub error: BackendError,
}

/// The earlier question of a thread that a question repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RepeatOf {
    /// Its number in the thread, from 1.
    pub turn: u32,
    /// How the repeat was recognised.
    pub matched_by: RepeatMatch,
}

/// How a repeated question was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RepeatMatch {
    /// The same words, in any order and case.
    Text,
    /// The same error class and component (`NoClassDefFoundError:cglib.proxy.Enhancer`).
    ErrorSignature,
    /// Embeddings close enough (cosine at least the session's threshold).
    Meaning,
}

/// What a search spent at one paid provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PaidUsage {
    /// What the provider bills in.
    pub unit: PaidUnit,
    /// Units spent: credits or requests.
    pub amount: u32,
    /// Calls that spent them.
    pub calls: u32,
}

/// Counters for what a search spent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Usage {
    /// Backend calls actually made (cache hits and coalesced waits excluded).
    pub backend_calls: u32,
    /// Requests answered from the cache.
    pub cache_hits: u32,
    /// Requests that waited on an identical call already in flight.
    pub coalesced: u32,
    /// LLM calls made.
    pub llm_calls: u32,
    /// Prompt tokens sent to LLMs.
    pub prompt_tokens: u64,
    /// Completion tokens received from LLMs.
    pub completion_tokens: u64,
    /// What the LLM calls cost, in US dollars, at the configured prices.
    pub cost_usd: f64,
    /// Wall time of the whole search, in milliseconds.
    pub elapsed_ms: u64,
    /// What each paid backend billed, by backend name; free backends are absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paid: BTreeMap<String, PaidUsage>,
}

impl Usage {
    /// Add `cost` billed by `backend` for one call.
    pub fn add_paid(&mut self, backend: &str, cost: crate::PaidCost) {
        let entry = self.paid.entry(backend.to_owned()).or_insert(PaidUsage {
            unit: cost.unit,
            amount: 0,
            calls: 0,
        });
        entry.amount += cost.amount;
        entry.calls += 1;
    }

    /// Add what `paid` holds, backend by backend.
    pub fn merge_paid(&mut self, paid: BTreeMap<String, PaidUsage>) {
        for (backend, spent) in paid {
            let entry = self.paid.entry(backend).or_insert(PaidUsage {
                amount: 0,
                calls: 0,
                ..spent
            });
            entry.amount += spent.amount;
            entry.calls += spent.calls;
        }
    }
}

/// A research report: sections whose text cites the response's hits with `[n]` markers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// The report's title.
    pub title: String,
    /// The sections, in reading order.
    pub sections: Vec<ReportSection>,
}

/// One section of a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReportSection {
    /// The section's heading.
    pub heading: String,
    /// Its text, with `[n]` markers.
    pub text: String,
}

/// The outcome of a search.
///
/// With `response_type == Results`, `answer` is set and every `[n]` in it has a matching
/// [`Citation`] whose hit is in `hits`. With `Message`, `message` says why there is no answer
/// (and `hits` what a search found nonetheless, if it ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Response {
    /// Results, or a message instead.
    pub response_type: ResponseType,
    /// The message to show when there are no results to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The answer, with `[n]` markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The answer in a few words, when the question asks for one and a cited source states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_answer: Option<ShortAnswer>,
    /// What each marker of the answer points at, in marker order.
    pub citations: Vec<Citation>,
    /// The planner strategy's report, section by section; `answer` holds it rendered as text,
    /// and `citations` is its reference list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// What the answer tells its reader to do (versions, files, commands), each citing its hit;
    /// present for technical questions whose sources state an action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Actions>,
    /// For a model-file search: the status and the ranked candidates, each naming its hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_file: Option<crate::ModelFind>,
    /// Set when the question repeats an earlier one of its thread: which, and how it was
    /// recognised. The rest of the response is that question's, and no backend was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<RepeatOf>,
    /// The results, best first.
    pub hits: Vec<Hit>,
    /// Backend calls that failed; the search went on without them.
    pub failures: Vec<BackendFailure>,
    /// What each stage did and why.
    pub trace: Trace,
    /// What the search spent.
    pub usage: Usage,
    /// Why the search stopped.
    pub stop_reason: StopReason,
}

impl Response {
    /// Each distinct backend failure once, as `backend: what failed`, however many calls met it.
    pub fn distinct_failures(&self) -> Vec<String> {
        let mut failures: Vec<String> = self
            .failures
            .iter()
            .map(|f| format!("{}: {}", f.error.backend, f.error.message))
            .collect();
        failures.sort();
        failures.dedup();
        failures
    }

    /// A reply that carries a message and no results.
    pub fn message(message: impl Into<String>, stop_reason: StopReason, trace: Trace) -> Self {
        Self {
            response_type: ResponseType::Message,
            message: Some(message.into()),
            answer: None,
            short_answer: None,
            report: None,
            actions: None,
            model_file: None,
            repeat_of: None,
            citations: Vec::new(),
            hits: Vec::new(),
            failures: Vec::new(),
            trace,
            usage: Usage::default(),
            stop_reason,
        }
    }
}
