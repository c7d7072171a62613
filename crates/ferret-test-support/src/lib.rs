//! `ferret-test-support` holds the test doubles Ferret's tests share: [`ScriptedBackend`], a
//! search backend whose documents, matching rule, failures and delay are set by the test (in
//! Rust, or as JSON in a fixture case), and which records every request it gets; the model hubs'
//! stand-ins ([`hubs::HubStandIn`]), answering from a catalogue as the hubs' documented APIs do;
//! the web search providers' ([`web::WebStandIn`]);
//! and [`copy_dir`], for tests that need a second copy of an index to damage or compact.
//!
//! It is a dev-dependency only: no library crate may depend on it (xtask runs evaluations
//! against the stand-ins). It depends on nothing of Ferret but `ferret-core`.

pub mod hubs;
pub mod web;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{
    Access, BackendCapabilities, BackendError, BackendErrorKind, Hit, PaidCost, QueryForm,
    RetryClass, SearchBackend, SearchRequest,
};
use serde::Deserialize;

/// Copy the folder `from`, with everything under it, to `to`.
///
/// # Panics
/// When a file cannot be read or written: a test's setup failed.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
    for entry in entries.map(Result::unwrap) {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copying {}: {e}", entry.path().display()));
        }
    }
}

/// How a [`ScriptedBackend`] picks the documents that answer a query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule", deny_unknown_fields)]
pub enum Matching {
    /// Every document, in order, whatever the query.
    All,
    /// Documents holding at least `min_shared` of the query's words of `min_letters` letters or
    /// more (in title or text, case aside, each word of the query counted), most first, ties in
    /// order.
    SharedWords {
        /// Words a document must share with the query.
        #[serde(default = "one")]
        min_shared: usize,
        /// Shorter words of the query are ignored ("I", "my", "the").
        #[serde(default = "four")]
        min_letters: usize,
    },
    /// For each key the query contains (case aside), the documents listed under it, by id, in
    /// key order, each once: a library of shelves. An empty key is in every query.
    Shelves {
        /// Keys and the ids of their documents.
        shelves: Vec<(String, Vec<String>)>,
        /// Only the first shelf whose key the query contains answers.
        #[serde(default)]
        first_only: bool,
    },
    /// Every document, each with the query as its text: shows what was asked.
    EchoQuery,
    /// One new document per call, a copy of the first with its id and title numbered: a backend
    /// that never runs dry.
    Fresh,
}

fn one() -> usize {
    1
}

fn four() -> usize {
    4
}

/// A failure a scripted backend reports, as a fixture writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFailure {
    /// The category.
    pub kind: BackendErrorKind,
    /// What happened.
    pub message: String,
    /// Whether retrying can help (default: no).
    #[serde(default)]
    pub transient: bool,
}

/// A [`ScriptedBackend`] as a fixture case describes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendScript {
    /// The backend's name.
    pub name: String,
    /// Its documents.
    #[serde(default)]
    pub documents: Vec<ScriptedDocument>,
    /// How a query picks documents (default: shared words).
    #[serde(default = "shared_words")]
    pub matching: Matching,
    /// Which filters it honours (default: date range and most recent).
    #[serde(default = "dated")]
    pub capabilities: BackendCapabilities,
    /// Every call fails so.
    #[serde(default)]
    pub failure: Option<ScriptedFailure>,
    /// The first calls fail so, in order; later calls answer.
    #[serde(default)]
    pub fail_first: Vec<ScriptedFailure>,
    /// Each call takes this long before answering.
    #[serde(default)]
    pub delay_ms: u64,
    /// The form of query it asks for (default: keywords).
    #[serde(default)]
    pub query_form: QueryForm,
    /// What each call costs, for a paid backend.
    #[serde(default)]
    pub cost: Option<PaidCost>,
}

/// A document of a [`BackendScript`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedDocument {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its text.
    #[serde(default)]
    pub text: String,
    /// Its URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Its date, `YYYY-MM-DD`.
    #[serde(default)]
    pub date: Option<chrono::NaiveDate>,
}

impl ScriptedDocument {
    fn hit(self) -> Hit {
        let mut hit = Hit::new(self.id, self.title, self.text, 1.0, "");
        hit.url = self.url;
        hit.date = self.date;
        hit
    }
}

fn shared_words() -> Matching {
    Matching::SharedWords {
        min_shared: 1,
        min_letters: 4,
    }
}

fn dated() -> BackendCapabilities {
    BackendCapabilities {
        date_range: true,
        most_recent: true,
        access: false,
        model_hub: None,
    }
}

/// A search backend whose answers a test scripts, counting its calls and recording each
/// request. Date filters are honoured for real: a date range keeps the documents dated inside
/// it, most-recent keeps the newest dated ones.
#[derive(Debug)]
pub struct ScriptedBackend {
    name: String,
    documents: Vec<Hit>,
    matching: Matching,
    capabilities: BackendCapabilities,
    failure: Option<BackendError>,
    fail_first: Mutex<VecDeque<BackendError>>,
    delay: Duration,
    query_form: QueryForm,
    cost: Option<PaidCost>,
    requests: Mutex<Vec<SearchRequest>>,
    calls: AtomicU32,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Each document's access list, when the test gives the backend lists to apply.
    acl: Option<Mutex<HashMap<String, Vec<String>>>>,
}

impl ScriptedBackend {
    /// A backend named `name` holding `documents` (their `backend` set to `name`), matching by
    /// shared words, honouring date filters, answering at once.
    pub fn new(name: impl Into<String>, documents: Vec<Hit>) -> Self {
        let name = name.into();
        let documents = documents
            .into_iter()
            .map(|h| Hit {
                backend: name.clone(),
                ..h
            })
            .collect();
        Self {
            name,
            documents,
            matching: shared_words(),
            capabilities: dated(),
            failure: None,
            fail_first: Mutex::new(VecDeque::new()),
            delay: Duration::ZERO,
            query_form: QueryForm::Keywords,
            cost: None,
            requests: Mutex::new(Vec::new()),
            calls: AtomicU32::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            acl: None,
        }
    }

    /// Apply access lists, as an index does: a search with [`ferret_core::Filters::access`]
    /// finds only what the asker may read, and [`SearchBackend::readable`] answers from the
    /// lists as they are when asked. `lists` gives documents' lists by id (none: unlisted).
    pub fn with_access_lists(mut self, lists: &[(&str, &[&str])]) -> Self {
        self.capabilities.access = true;
        let lists = lists
            .iter()
            .map(|(id, groups)| {
                (
                    (*id).to_owned(),
                    groups.iter().map(|g| (*g).to_owned()).collect(),
                )
            })
            .collect();
        self.acl = Some(Mutex::new(lists));
        self
    }

    /// Change document `id`'s access list, as a re-ingest does (an empty list: unlisted).
    ///
    /// # Panics
    /// When the backend was not given access lists.
    pub fn set_access_list(&self, id: &str, groups: &[&str]) {
        let lists = self.acl.as_ref().expect("with_access_lists first");
        let mut lists = lists
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        lists.insert(
            id.to_owned(),
            groups.iter().map(|g| (*g).to_owned()).collect(),
        );
    }

    /// May `access` read document `id`, by the lists as they are now?
    fn may_read(&self, id: &str, access: &Access) -> bool {
        let Some(lists) = &self.acl else {
            return true;
        };
        let lists = lists
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match lists.get(id).filter(|groups| !groups.is_empty()) {
            Some(groups) => groups.iter().any(|g| access.groups.contains(g)),
            None => access.unlisted == ferret_core::Unlisted::Public,
        }
    }

    /// The backend a fixture describes.
    pub fn from_script(script: BackendScript) -> Self {
        let name = script.name.clone();
        let error = |f: ScriptedFailure| {
            let retry = if f.transient {
                RetryClass::Transient
            } else {
                RetryClass::Permanent
            };
            BackendError {
                backend: name.clone(),
                kind: f.kind,
                message: f.message,
                retry,
            }
        };
        let documents = script
            .documents
            .into_iter()
            .map(ScriptedDocument::hit)
            .collect();
        let mut backend = Self::new(script.name.clone(), documents)
            .matching(script.matching)
            .capabilities(script.capabilities)
            .delay(Duration::from_millis(script.delay_ms))
            .query_form(script.query_form)
            .fail_first(script.fail_first.into_iter().map(error).collect());
        backend.failure = script.failure.map(error);
        backend.cost = script.cost;
        backend
    }

    /// Pick documents by `matching`.
    pub fn matching(mut self, matching: Matching) -> Self {
        self.matching = matching;
        self
    }

    /// Honour only these filters.
    pub fn capabilities(mut self, capabilities: BackendCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Fail every call with `error`.
    pub fn failing(mut self, error: BackendError) -> Self {
        self.failure = Some(error);
        self
    }

    /// Fail the first calls with `errors`, in order.
    pub fn fail_first(self, errors: Vec<BackendError>) -> Self {
        *self
            .fail_first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = errors.into();
        self
    }

    /// Ask for queries in `form`.
    pub fn query_form(mut self, form: QueryForm) -> Self {
        self.query_form = form;
        self
    }

    /// Bill every call `cost`, as a paid provider does.
    pub fn paid(mut self, cost: PaidCost) -> Self {
        self.cost = Some(cost);
        self
    }

    /// Take `delay` before each answer.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The requests received, in order.
    pub fn requests(&self) -> Vec<SearchRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The query texts received, in order.
    pub fn queries(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.query).collect()
    }

    /// The most calls that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    fn answer(&self, request: &SearchRequest, call: u32) -> Vec<Hit> {
        let query = request.query.to_lowercase();
        let mut hits: Vec<Hit> = match &self.matching {
            Matching::All => self.documents.clone(),
            Matching::SharedWords {
                min_shared,
                min_letters,
            } => {
                let words: Vec<&str> = query
                    .split_whitespace()
                    .filter(|w| w.chars().count() >= *min_letters)
                    .collect();
                let mut scored: Vec<(usize, &Hit)> = self
                    .documents
                    .iter()
                    .map(|doc| {
                        let text = format!("{} {}", doc.title, doc.text).to_lowercase();
                        (words.iter().filter(|w| text.contains(**w)).count(), doc)
                    })
                    .filter(|(shared, _)| *shared >= (*min_shared).max(1))
                    .collect();
                scored.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
                scored.into_iter().map(|(_, doc)| doc.clone()).collect()
            }
            Matching::Shelves {
                shelves,
                first_only,
            } => {
                let mut hits: Vec<Hit> = Vec::new();
                let matching = shelves
                    .iter()
                    .filter(|(key, _)| query.contains(&key.to_lowercase()));
                for (_, ids) in matching.take(if *first_only { 1 } else { usize::MAX }) {
                    for id in ids {
                        if let Some(doc) = self.documents.iter().find(|d| &d.id.0 == id) {
                            if !hits.iter().any(|h| h.id == doc.id) {
                                hits.push(doc.clone());
                            }
                        }
                    }
                }
                hits
            }
            Matching::EchoQuery => self
                .documents
                .iter()
                .map(|d| Hit {
                    text: request.query.as_str().into(),
                    ..d.clone()
                })
                .collect(),
            Matching::Fresh => self
                .documents
                .first()
                .map(|d| {
                    let mut hit = d.clone();
                    hit.id.0 = format!("{}-{call}", d.id.0);
                    hit.title = format!("{} {call}", d.title).into();
                    vec![hit]
                })
                .unwrap_or_default(),
        };
        if let Some(access) = &request.filters.access {
            hits.retain(|h| self.may_read(&h.id.0, access));
        }
        if let Some(range) = request.filters.date_range {
            hits.retain(|h| {
                h.date.is_some_and(|d| {
                    range.from.is_none_or(|f| d >= f) && range.to.is_none_or(|t| d <= t)
                })
            });
        }
        if let Some(n) = request.filters.most_recent {
            hits.retain(|h| h.date.is_some());
            hits.sort_by_key(|h| std::cmp::Reverse(h.date));
            hits.truncate(n);
        }
        hits.truncate(request.limit);
        hits
    }
}

#[async_trait]
impl SearchBackend for ScriptedBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> BackendCapabilities {
        self.capabilities
    }

    fn query_form(&self) -> QueryForm {
        self.query_form
    }

    fn cost(&self, _request: &SearchRequest) -> Option<PaidCost> {
        self.cost
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let first_failure = self
            .fail_first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        if let Some(error) = first_failure.or_else(|| self.failure.clone()) {
            return Err(error);
        }
        Ok(self.answer(request, call))
    }

    async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<Option<HashSet<String>>, BackendError> {
        if self.acl.is_none() {
            return Ok(None);
        }
        let held = |id: &String| self.documents.iter().any(|d| &d.id.0 == id);
        Ok(Some(
            ids.iter()
                .filter(|id| held(id) && self.may_read(id, access))
                .cloned()
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use ferret_core::{DateRange, Filters};

    use super::*;

    fn request(query: &str, filters: Filters) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            limit: 10,
            filters,
            options: Default::default(),
            text_for: None,
        }
    }

    fn entry(id: &str, text: &str, date: &str) -> Hit {
        let mut hit = Hit::new(id, id, text, 1.0, "");
        hit.date = Some(date.parse().unwrap());
        hit
    }

    #[tokio::test]
    async fn shared_words_rank_by_overlap_and_filters_apply() {
        let journal = ScriptedBackend::new(
            "journal",
            vec![
                entry("a", "thesis stress", "2024-01-02"),
                entry("b", "stress at work", "2024-03-01"),
                entry("c", "garden", "2024-02-01"),
            ],
        );
        let ids = |hits: Vec<Hit>| hits.into_iter().map(|h| h.id.0).collect::<Vec<_>>();
        assert_eq!(
            ids(journal
                .search(&request("thesis stress", Filters::default()))
                .await
                .unwrap()),
            ["a", "b"]
        );
        let march = DateRange {
            from: Some("2024-02-15".parse().unwrap()),
            to: None,
        };
        let filtered = Filters {
            date_range: Some(march),
            most_recent: None,
            ..Default::default()
        };
        assert_eq!(
            ids(journal.search(&request("stress", filtered)).await.unwrap()),
            ["b"]
        );
        let newest = Filters {
            date_range: None,
            most_recent: Some(2),
            ..Default::default()
        };
        assert_eq!(
            ids(journal
                .search(&request("anything", Filters::default()))
                .await
                .unwrap()),
            Vec::<String>::new()
        );
        let all = journal.matching(Matching::All);
        assert_eq!(
            ids(all.search(&request("anything", newest)).await.unwrap()),
            ["b", "c"]
        );
        assert_eq!(all.calls(), 4, "calls are counted over the backend's life");
    }

    #[tokio::test]
    async fn scripted_failures_come_first_then_answers() {
        let script: BackendScript = serde_json::from_value(serde_json::json!({
            "name": "flaky",
            "documents": [{"id": "x", "title": "X", "text": "volcano"}],
            "matching": {"rule": "all"},
            "fail_first": [{"kind": "unavailable", "message": "down", "transient": true}]
        }))
        .unwrap();
        let backend = ScriptedBackend::from_script(script);
        let error = backend
            .search(&request("q", Filters::default()))
            .await
            .unwrap_err();
        assert_eq!(
            (error.backend.as_str(), error.retry),
            ("flaky", RetryClass::Transient)
        );
        let hits = backend
            .search(&request("q", Filters::default()))
            .await
            .unwrap();
        assert_eq!(hits[0].backend, "flaky");
        assert_eq!(backend.queries(), ["q", "q"]);
    }
}
