//! The recording's folder: what it holds and how it is read and written.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use ferret_core::{
    BackendCapabilities, BackendError, Completion, CompletionRequest, EmbedError, Hit, LlmError,
    PaidCost, Query, QueryForm, Response, RetryClass, SearchRequest, Strategy,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{RecordingError, ReplayError};

/// The format version this build writes and reads.
pub const RECORDING_FORMAT: u32 = 1;
/// The query, the strategy and the recorded world, in a recording's folder.
pub const CASE_FILE: &str = "case.json";
/// The exchanges, one JSON object a line, in the order they finished.
pub const EXCHANGES_FILE: &str = "exchanges.jsonl";
/// The response the recorded search gave.
pub const RESPONSE_FILE: &str = "response.json";

/// What a recorded backend said of itself: a replay presents the same face to the executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendProfile {
    /// Its name, as traces and failures give it.
    pub name: String,
    /// The filters it honours.
    #[serde(default)]
    pub capabilities: BackendCapabilities,
    /// The form of query it takes.
    #[serde(default)]
    pub query_form: QueryForm,
}

/// What the recorded language model said of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProfile {
    /// Its name.
    pub name: String,
    /// Whether the stages asked it to write answers.
    pub writes_answers: bool,
}

/// What the recorded embedder said of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderProfile {
    /// Its name.
    pub name: String,
    /// The length of its vectors.
    pub dimension: usize,
}

/// The parts of the world a search talked to, as they described themselves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct World {
    /// The recording format ([`RECORDING_FORMAT`]).
    pub format: u32,
    /// The backends, in the order they were added.
    pub backends: Vec<BackendProfile>,
    /// The language model, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelProfile>,
    /// The embedder the stages used, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<EmbedderProfile>,
    /// How the stages used the model (which stages asked it, how much of each result they
    /// showed), as the searcher wrote it: a replay uses the same, or its prompts differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_settings: Option<Value>,
}

impl Default for World {
    fn default() -> Self {
        Self {
            format: RECORDING_FORMAT,
            backends: Vec::new(),
            model: None,
            embedder: None,
            stage_settings: None,
        }
    }
}

/// A recording's `case.json`: the search to run again and the world it ran in. The pipeline's
/// fixture cases read the same file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedCase {
    /// The query.
    pub query: Query,
    /// The strategy configured (the automatic choice records `auto`).
    pub strategy: Strategy,
    /// The world the search talked to.
    pub recorded: World,
}

/// A failed model or embedder call, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallError {
    /// What happened.
    pub message: String,
    /// Whether and when a retry could help.
    pub retry: RetryClass,
}

impl From<&LlmError> for CallError {
    fn from(error: &LlmError) -> Self {
        Self {
            message: error.message.clone(),
            retry: error.retry,
        }
    }
}

impl From<&EmbedError> for CallError {
    fn from(error: &EmbedError) -> Self {
        Self {
            message: error.message.clone(),
            retry: error.retry,
        }
    }
}

/// How a backend call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendOutcome {
    /// The hits, best first.
    Hits(Vec<Hit>),
    /// The failure.
    Error(BackendError),
    /// The caller stopped waiting before it ended (its deadline passed): a replay answers
    /// with a deadline error.
    Abandoned,
}

/// How a model call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelOutcome {
    /// The completion.
    Completion(Completion),
    /// The failure.
    Error(CallError),
    /// The caller stopped waiting before it ended (its deadline passed): a replay answers
    /// with a deadline error.
    Abandoned,
}

/// How an embedding call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedOutcome {
    /// One vector per text, in order.
    Vectors(Vec<Vec<f32>>),
    /// The failure.
    Error(CallError),
    /// The caller stopped waiting before it ended (its deadline passed): a replay answers
    /// with a deadline error.
    Abandoned,
}

/// One call to the world and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Exchange {
    /// A search of one backend.
    Backend {
        /// The backend's name.
        backend: String,
        /// The request.
        request: SearchRequest,
        /// What the backend said the call costs, for a paid one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<PaidCost>,
        /// The outcome.
        outcome: BackendOutcome,
    },
    /// A language model call.
    Model {
        /// The model's name.
        model: String,
        /// The request (its deadline is not kept: it is a moment of the recorded run).
        request: CompletionRequest,
        /// The outcome.
        outcome: ModelOutcome,
    },
    /// What a paid backend said a request would cost, asked before the call (a call the
    /// budget then refused has this and no search).
    Cost {
        /// The backend's name.
        backend: String,
        /// The request.
        request: SearchRequest,
        /// The cost.
        cost: PaidCost,
    },
    /// An embedding call.
    Embed {
        /// The embedder's name.
        embedder: String,
        /// The texts.
        texts: Vec<String>,
        /// The outcome.
        outcome: EmbedOutcome,
    },
}

/// Everything one search exchanged with the world, and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The query, the strategy and the world.
    pub case: RecordedCase,
    /// The exchanges, in the order they finished.
    pub exchanges: Vec<Exchange>,
    /// The response, as JSON; absent in a folder written without one.
    pub response: Option<Value>,
}

impl Recording {
    /// Write the folder `dir` (created if missing; files of an earlier recording there are
    /// replaced).
    pub fn save(&self, dir: &Path) -> Result<(), RecordingError> {
        fs::create_dir_all(dir).map_err(|source| RecordingError::io(dir, source))?;
        write_json(&dir.join(CASE_FILE), &self.case)?;
        let path = dir.join(EXCHANGES_FILE);
        let mut lines = Vec::new();
        for exchange in &self.exchanges {
            serde_json::to_writer(&mut lines, exchange)
                .map_err(|e| RecordingError::format(&path, None, e))?;
            lines.push(b'\n');
        }
        write_file(&path, &lines)?;
        match &self.response {
            Some(response) => write_json(&dir.join(RESPONSE_FILE), response),
            None => Ok(()),
        }
    }

    /// Read the folder `dir`.
    pub fn load(dir: &Path) -> Result<Self, RecordingError> {
        let case_path = dir.join(CASE_FILE);
        if !case_path.is_file() {
            return Err(RecordingError::NotARecording {
                dir: dir.to_owned(),
            });
        }
        let text = read(&case_path)?;
        // The format is checked before the rest, so a newer folder says so instead of naming
        // a field this build does not know.
        let case = serde_json::from_str::<Value>(&text)
            .map_err(|e| RecordingError::format(&case_path, None, e))?;
        // A fixture case written by hand has a case.json and no recorded world.
        if case.get("recorded").is_none() {
            return Err(RecordingError::NotARecording {
                dir: dir.to_owned(),
            });
        }
        let format = case.pointer("/recorded/format").and_then(Value::as_u64);
        if format != Some(u64::from(RECORDING_FORMAT)) {
            return Err(RecordingError::Version {
                path: case_path,
                found: format,
                supported: RECORDING_FORMAT,
            });
        }
        let case: RecordedCase =
            serde_json::from_str(&text).map_err(|e| RecordingError::format(&case_path, None, e))?;
        let path = dir.join(EXCHANGES_FILE);
        let exchanges = read(&path)?
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, line)| {
                serde_json::from_str(line)
                    .map_err(|e| RecordingError::format(&path, Some(n + 1), e))
            })
            .collect::<Result<Vec<Exchange>, _>>()?;
        let response_path = dir.join(RESPONSE_FILE);
        let response = if response_path.is_file() {
            let text = read(&response_path)?;
            Some(
                serde_json::from_str(&text)
                    .map_err(|e| RecordingError::format(&response_path, None, e))?,
            )
        } else {
            None
        };
        Ok(Self {
            case,
            exchanges,
            response,
        })
    }

    /// Whether `question` is the one recorded (spacing aside), or the error that says which was.
    pub fn check_question(&self, question: &str) -> Result<(), ReplayError> {
        let words = ferret_core::text::one_line;
        let recorded = self.case.query.text();
        if words(recorded) == words(question) {
            Ok(())
        } else {
            Err(ReplayError::OtherQuestion {
                recorded: recorded.to_owned(),
                asked: question.to_owned(),
            })
        }
    }

    /// Whether `response` is the one recorded, leaving out what differs between two runs of
    /// the same search ([`comparable`]); false when the folder holds no response.
    pub fn same_response(&self, response: &Response) -> bool {
        self.difference(response).is_none()
    }

    /// Where `response` first differs from the one recorded ([`comparable`] as for
    /// [`Recording::same_response`]), as a JSON pointer with both values; `None` when it does not.
    pub fn difference(&self, response: &Response) -> Option<String> {
        let Some(recorded) = &self.response else {
            return Some(format!("the folder holds no {RESPONSE_FILE}"));
        };
        first_difference(
            &comparable_value(recorded.clone()),
            &comparable(response),
            String::new(),
        )
    }
}

fn first_difference(recorded: &Value, replayed: &Value, at: String) -> Option<String> {
    match (recorded, replayed) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| {
                let (x, y) = (
                    a.get(key).unwrap_or(&Value::Null),
                    b.get(key).unwrap_or(&Value::Null),
                );
                first_difference(x, y, format!("{at}/{key}"))
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{at}/{i}"))),
        _ if recorded == replayed => None,
        _ => {
            let cut = |v: &Value| {
                let text = v.to_string();
                match text.char_indices().nth(160) {
                    Some((end, _)) => format!("{}…", &text[..end]),
                    None => text,
                }
            };
            Some(format!(
                "at {}: recorded {}, now {}",
                if at.is_empty() { "/" } else { &at },
                cut(recorded),
                cut(replayed)
            ))
        }
    }
}

/// `response` as JSON, without what differs between two runs of the same search with the same
/// exchanges: durations, whether an identical call was joined in flight or answered from the
/// cache, and the order in which concurrent backend calls finished.
pub fn comparable(response: &Response) -> Value {
    // Through text, as the recorded file went: a float is read back as written.
    let text = serde_json::to_string(response).unwrap_or_default();
    comparable_value(serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn comparable_value(mut value: Value) -> Value {
    settle(&mut value);
    value
}

fn settle(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if key.ends_with("_ms") && field.is_number() {
                    *field = Value::from(0);
                }
            }
            // A call joined in flight in one run may be answered from the cache in another.
            if let (Some(Value::Bool(cached)), Some(Value::Bool(joined))) =
                (map.get("cache_hit"), map.get("coalesced"))
            {
                let served = *cached || *joined;
                map.insert("cache_hit".into(), Value::Bool(served));
                map.insert("coalesced".into(), Value::Bool(false));
            }
            if let (Some(cached), Some(joined)) = (
                map.get("cache_hits").and_then(Value::as_u64),
                map.get("coalesced").and_then(Value::as_u64),
            ) {
                map.insert("cache_hits".into(), Value::from(cached + joined));
                map.insert("coalesced".into(), Value::from(0));
            }
            for field in map.values_mut() {
                settle(field);
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                settle(item);
            }
            sort_concurrent_calls(items);
        }
        _ => {}
    }
}

/// Sort each run of consecutive backend-call trace steps: calls that ran together are traced
/// in the order they finished.
fn sort_concurrent_calls(items: &mut [Value]) {
    let is_call = |v: &Value| v.get("cache_hit").is_some() && v.get("backend").is_some();
    let mut start = 0;
    while start < items.len() {
        if !is_call(&items[start]) {
            start += 1;
            continue;
        }
        let end = (start..items.len())
            .find(|&i| !is_call(&items[i]))
            .unwrap_or(items.len());
        items[start..end].sort_by_cached_key(|v| v.to_string());
        start = end;
    }
}

fn read(path: &Path) -> Result<String, RecordingError> {
    fs::read_to_string(path).map_err(|source| RecordingError::io(path, source))
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), RecordingError> {
    let mut text =
        serde_json::to_vec_pretty(value).map_err(|e| RecordingError::format(path, None, e))?;
    text.push(b'\n');
    write_file(path, &text)
}

/// Write through a temporary file renamed into place, so a folder is never left half written.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RecordingError> {
    let temporary = path.with_extension("partial");
    let mut file = fs::File::create(&temporary).map_err(|e| RecordingError::io(&temporary, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| RecordingError::io(&temporary, e))?;
    fs::rename(&temporary, path).map_err(|e| RecordingError::io(path, e))
}
