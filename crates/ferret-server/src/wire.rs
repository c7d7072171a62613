//! The JSON the API reads and writes. Requests refuse unknown fields, so a misspelt option is
//! an error rather than a silent default; responses are the library's own [`Response`] and
//! [`Event`] types.
//!
//! [`Response`]: ferret::Response
//! [`Event`]: ferret::Event

use std::collections::BTreeMap;

use ferret::jobs::find_model::{FindStatus, ModelFind, ModelSource, ModelType};
use ferret::jobs::search::{QueryError, SearchOptions};
use ferret::jobs::session::OnRepeat;
use ferret::{Budget, Filters, Query, Response, Strategy};
use serde::{Deserialize, Serialize};

/// The body of `POST /v1/search` and `POST /v1/search/stream`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// The question.
    pub query: String,
    /// The conversation the question belongs to: a question the thread already asked is
    /// answered again without a search (unless `options.on_repeat` says `search_again`). On a
    /// server with tokens, an id `POST /v1/chat` gave this principal; any other is 404.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The asker's situation as key/value pairs (`java_version` = `17`).
    #[serde(default)]
    pub context: BTreeMap<String, String>,
    /// How to search.
    #[serde(default)]
    pub options: SearchBodyOptions,
}

/// How to search: each field left out takes the server's configured default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SearchBodyOptions {
    /// `single_pass`, `refine`, `multi_hop`, `tool_loop`, `plan` or `auto`.
    pub strategy: Option<Strategy>,
    /// Hits listed at most.
    pub limit: Option<usize>,
    /// Date range and "most recent" restrictions passed to every backend.
    pub filters: Filters,
    /// Attempts, calls, tokens and time; its wall time is capped by the server's deadline.
    pub budget: Option<Budget>,
    /// Web provider options (depth, topic, freshness, domains, country, language, safe search).
    pub web: SearchOptions,
    /// What to do when the thread already asked this question.
    pub on_repeat: OnRepeat,
}

impl SearchBody {
    /// The library query this body asks for, validated as the library validates it, with its
    /// wall time capped at `deadline`.
    pub fn into_query(self, deadline: std::time::Duration) -> Result<Query, QueryError> {
        let options = self.options;
        let mut query = Query::new(self.query)?
            .with_filters(options.filters)?
            .with_options(options.web)?
            .with_context(self.context)?;
        if let Some(limit) = options.limit {
            query = query.with_limit(limit)?;
        }
        let mut budget = options.budget.unwrap_or(query.budget);
        budget.validate().map_err(|e| QueryError::InvalidField {
            field: "budget",
            reason: e.0,
        })?;
        budget.wall_time = budget.wall_time.min(deadline);
        query = query.with_budget(budget);
        if let Some(strategy) = options.strategy {
            query = query.with_strategy(strategy);
        }
        if let Some(thread) = self.thread_id {
            query = query.with_thread(thread);
        }
        query.on_repeat = options.on_repeat;
        Ok(query)
    }
}

/// The body of `POST /v1/chat`: one message of a conversation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ChatBody {
    /// The message: a question, or a follow-up to the thread's last one ("and in 2019?").
    pub message: String,
    /// The conversation; left out, a new one starts and its id comes back. On a server with
    /// tokens, only an id it gave this principal is taken; any other is 404.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The asker's situation as key/value pairs.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
    /// How to search.
    #[serde(default)]
    pub options: SearchBodyOptions,
}

impl ChatBody {
    /// The search this message asks for, in `thread`.
    pub fn into_search(self, thread: String) -> SearchBody {
        SearchBody {
            query: self.message,
            thread_id: Some(thread),
            context: self.context,
            options: self.options,
        }
    }
}

/// The answer to `POST /v1/chat`: the thread it belongs to and the response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatReply {
    /// The conversation: send it with the next message to continue it.
    pub thread_id: String,
    /// The response to the message.
    pub response: ferret::Response,
}

/// The body of `POST /v1/ingest` sent as `application/json`: a file or folder on the server,
/// under the root it was started with (a relative path is taken from the root).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct IngestPathBody {
    /// A `.jsonl`, `.md` or `.txt` file, or a folder of them.
    pub path: std::path::PathBuf,
}

/// The answer to `POST /v1/ingest`: what the ingest did, and the index's size after it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestReply {
    /// Documents added, updated, unchanged and removed, and each line or file skipped, with
    /// why.
    #[serde(flatten)]
    pub report: ferret::index::IngestReport,
    /// Documents in the index after the ingest; left out for a token that writes only its
    /// own groups' documents (the index's size counts others').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<usize>,
}

/// One Server-Sent Event of `POST /v1/ingest/stream`; the last is `done` or `error`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum IngestEvent {
    /// A batch was written: `done` of `total` documents read so far.
    Progress {
        /// Documents handled.
        done: usize,
        /// Documents the input holds, as far as known.
        total: usize,
    },
    /// The ingest ended.
    Done {
        /// What it did.
        #[serde(flatten)]
        reply: IngestReply,
    },
    /// The ingest failed; batches written before the failure stay written.
    Error {
        /// What went wrong.
        error: ErrorDetail,
    },
}

/// The body of every refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong with a request, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    /// A stable name: `unauthorized`, `quota_exceeded`, `invalid_json`, `invalid_request`,
    /// `too_large`, `overloaded`, `deadline_exceeded`, `search_failed`,
    /// `unsupported_media_type`, `forbidden`, `not_found`, `method_not_allowed`,
    /// `not_writable`, `ingest_failed`.
    pub kind: String,
    /// A sentence saying what is wrong and what to do.
    pub message: String,
    /// The field at fault, as a path (`options.limit`), when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Whether the same request may succeed later: true for 429, 503, 504 and 500 (wait
    /// `Retry-After` seconds when the response gives them), false for a request that must
    /// change first.
    pub retryable: bool,
}

/// The body of `POST /v1/find-model`: a ComfyUI workflow whose model files are found, or one
/// file by its name, its SHA-256, or both.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FindModelBody {
    /// A ComfyUI workflow as saved, in the UI or the API format: each model file its loader
    /// nodes reference is found. Not with `file_name` or `sha256`.
    #[serde(default)]
    pub workflow: Option<serde_json::Value>,
    /// One model file's name (`sd_xl_base_1.0.safetensors`).
    #[serde(default)]
    pub file_name: Option<String>,
    /// One model file's SHA-256 (Civitai looks files up by hash).
    #[serde(default)]
    pub sha256: Option<String>,
    /// The type the one file's loader expects.
    #[serde(default)]
    pub model_type: Option<ModelType>,
    /// The base model the files are for (`SDXL 1.0`); for a workflow, left out, its
    /// checkpoint says.
    #[serde(default)]
    pub base_model: Option<String>,
    /// The hub to rank higher when candidates are otherwise equal.
    #[serde(default)]
    pub prefer: Option<ModelSource>,
}

/// The answer to `POST /v1/find-model`: each file, in the workflow's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FindModelReply {
    /// The base model the workflow's checkpoint gave its other files, when the body named none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// One per file.
    pub files: Vec<FileFound>,
}

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileFound {
    /// The file's name.
    pub file_name: String,
    /// The workflow node that loads it, when from a workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// `FOUND`, `UNCERTAIN` or `UNSEARCHED` (no hub answered); left out when the file was not
    /// searched (`error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FindStatus>,
    /// The ranked candidates, the best first, with the reason for each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ModelFind>,
    /// What the finder says when there is no candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Hubs that failed while it was searched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Why it was not searched (a name no file can have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FileFound {
    /// The file `file_name` as the finder's `response` (or error) leaves it.
    pub fn of(file_name: String, found: Result<&Response, String>) -> Self {
        let mut file = Self {
            file_name,
            node_id: None,
            status: None,
            result: None,
            message: None,
            failures: Vec::new(),
            error: None,
        };
        match found {
            Ok(response) => {
                file.status = response.model_file.as_ref().map(|f| f.status);
                file.result = response.model_file.clone();
                file.message = response.message.clone();
                file.failures = response.distinct_failures();
            }
            Err(error) => file.error = Some(error),
        }
        file
    }
}
