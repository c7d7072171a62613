use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use std::collections::HashSet;

use crate::{Access, BackendError, Filters, Hit, SearchOptions};

/// One request to one backend: a query already rewritten for it, a limit and the filters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// How many hits to return at most.
    pub limit: usize,
    /// Restrictions on what to return.
    pub filters: Filters,
    /// Provider options; backends without a provider ignore them.
    #[serde(default, skip_serializing_if = "SearchOptions::is_empty")]
    pub options: SearchOptions,
    /// How many of the best hits the caller reads; the rest may come back with their id and
    /// score only (no title, text, url or date), which a backend that can skip reading them
    /// does. Enough for recall and for fusing one backend's ranking by rank; not for merging
    /// results of several backends by address. `None`: every hit whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_for: Option<usize>,
}

/// The shape of query a backend searches best with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueryForm {
    /// The question's own words without noise, in order: what a keyword (BM25) or hybrid index
    /// scores best.
    #[default]
    Keywords,
    /// The question as asked, in natural language: what a dense (embedding) index matches best.
    Question,
    /// An affirmative web-style query: technology names and versions kept, "fix" added to an
    /// error, at most 100 characters.
    Web,
}

/// One query in each form; the executor sends each backend the form it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchQuery {
    /// For keyword and hybrid indexes.
    pub keywords: String,
    /// For dense indexes.
    pub question: String,
    /// For web search engines.
    pub web: String,
}

impl SearchQuery {
    /// The same text in every form: a name to look up reads the same to every backend.
    pub fn plain(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            keywords: text.clone(),
            question: text.clone(),
            web: text,
        }
    }

    /// The text in `form`.
    pub fn form(&self, form: QueryForm) -> &str {
        match form {
            QueryForm::Keywords => &self.keywords,
            QueryForm::Question => &self.question,
            QueryForm::Web => &self.web,
        }
    }
}

/// What a provider bills a call in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PaidUnit {
    /// Credits of a plan (Tavily: one a basic search, two an advanced one).
    Credits,
    /// Requests of a plan (Brave).
    Requests,
}

/// What one call costs at a paid provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PaidCost {
    /// What the provider bills in.
    pub unit: PaidUnit,
    /// How many of them the call costs.
    pub amount: u32,
}

/// What a backend can do beyond plain text search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BackendCapabilities {
    /// Honours [`Filters::date_range`].
    pub date_range: bool,
    /// Honours [`Filters::most_recent`].
    pub most_recent: bool,
    /// Honours [`Filters::access`]: an index returns only documents the asker may read; a web
    /// or hub backend, whose results are public, says so by setting this.
    #[serde(default)]
    pub access: bool,
    /// Searches the files of this model hub only: a search of every backend leaves it out, and
    /// the model-file finder asks it for that hub's files, whatever the backend is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_hub: Option<crate::ModelSource>,
}

/// How often a backend may be called: a provider states its limit per second or per minute
/// (a minute's worth may then come at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRate {
    /// At most this many calls a second.
    PerSecond(std::num::NonZeroU32),
    /// At most this many calls a minute.
    PerMinute(std::num::NonZeroU32),
}

/// The one trait every search backend implements: the embedded index, a Qdrant server, web and
/// hub search alike.
///
/// A backend does one call and reports failure as a [`BackendError`] with its retry class; it
/// does not retry, cache or rate-limit itself: the executor wraps every backend in those layers,
/// so there is exactly one of each per call.
#[async_trait]
pub trait SearchBackend: Send + Sync {
    /// A short stable name, used in traces, failures and cache keys.
    fn name(&self) -> &str;

    /// How often the service allows calls, as its provider documents it (`None`: as often as
    /// asked, as an in-process index). The executor paces the backend to it.
    fn call_rate(&self) -> Option<CallRate> {
        None
    }

    /// Which filters this backend honours. A filter a backend does not honour is reported as a
    /// failure for that backend rather than silently ignored.
    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::default()
    }

    /// The form of query this backend gets (keywords unless it says otherwise).
    fn query_form(&self) -> QueryForm {
        QueryForm::Keywords
    }

    /// What `request` costs at the provider, for a paid backend; `None` for a free one (a local
    /// index, a self-hosted instance). The executor counts it in the response's usage and holds
    /// it to the search's budget.
    fn cost(&self, _request: &SearchRequest) -> Option<PaidCost> {
        None
    }

    /// Run one search.
    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError>;

    /// Of `ids` (ids of hits this backend returned), those `access` lets the asker read now,
    /// by the access lists the backend holds at this moment. A result kept from an earlier read
    /// (a cached call, a thread's turn, a hit remembered for a fetch) is checked here before it
    /// is shown again, because a list may have changed since, even from another process.
    ///
    /// `None` says the backend's results carry no access lists (the web, a hub): every id
    /// passes. A backend that applies [`Filters::access`] to stored documents must answer with
    /// the ids that pass; an id it does not hold does not pass.
    async fn readable(
        &self,
        _ids: &[String],
        _access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        Ok(None)
    }
}
