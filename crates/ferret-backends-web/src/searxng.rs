//! A SearXNG instance's JSON API: `GET /search?format=json` (the instance must allow the json
//! format in its settings, or it answers 403); results from the engines it asks.

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{Duration as Days, Utc};
use ferret_core::{
    BackendCapabilities, BackendError, CallRate, Freshness, Hit, QueryForm, SafeSearch,
    SearchBackend, SearchRequest, Topic,
};
use serde::Deserialize;

use crate::hits::{self, Found};
use crate::{base_url, endpoint, WebError};
use ferret_http::Http;

/// The variable a SearXNG instance's address is read from.
pub const SEARXNG_URL_VARIABLE: &str = "SEARXNG_URL";

/// How a [`SearxngBackend`] searches. Every option here is the default of every query. It reads
/// from `ferret.toml`'s `[web.searxng]` table as it is (`url` for the address, `timeout_seconds`
/// for the timeout); what the table leaves out keeps its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearxngConfig {
    /// The instance's address, e.g. `http://localhost:8888`; when empty, it is read from
    /// `url_variable` as the backend is made.
    #[serde(rename = "url")]
    pub base_url: String,
    /// The variable the address is read from when `base_url` is empty (default `SEARXNG_URL`).
    pub url_variable: String,
    /// The language of results ("en", "de"), or the instance's default.
    pub language: Option<String>,
    /// The adult-content filter.
    pub safe_search: SafeSearch,
    /// Categories to search ("general", "it", "science"), or the instance's default.
    pub categories: Vec<String>,
    /// Engines to ask, or the instance's default.
    pub engines: Vec<String>,
    /// Only results from the past day, week, month or year, when a query sets no freshness of
    /// its own.
    pub time_range: Option<Freshness>,
    /// Only pages from these domains (sent as `site:` operators, which engines behind the
    /// instance accept).
    pub include_domains: Vec<String>,
    /// Never pages from these domains (sent as `-site:` operators).
    pub exclude_domains: Vec<String>,
    /// Longest wait for one answer.
    #[serde(rename = "timeout_seconds", deserialize_with = "ferret_http::seconds")]
    pub timeout: Duration,
    /// Calls per second at most: an instance of one's own, but each call fans out to public
    /// engines, which block bursts.
    pub rate_per_second: NonZeroU32,
}

impl SearxngConfig {
    /// The defaults for the instance at `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            ..Self::default()
        }
    }

    /// The defaults for the instance named by `SEARXNG_URL`.
    pub fn from_env() -> Result<Self, WebError> {
        let config = Self::default();
        config.address().map(Self::new)
    }

    /// The instance's address: `base_url`, else the variable `url_variable` names.
    fn address(&self) -> Result<String, WebError> {
        let given = self.base_url.trim();
        if !given.is_empty() {
            return Ok(given.to_owned());
        }
        match std::env::var(&self.url_variable) {
            Ok(url) if !url.trim().is_empty() => Ok(url.trim().to_owned()),
            _ => Err(WebError::InvalidUrl {
                url: String::new(),
                reason: format!(
                    "no instance address: give one (`url` in ferret.toml's [web.searxng]) or set {}",
                    self.url_variable
                ),
            }),
        }
    }
}

impl Default for SearxngConfig {
    /// The defaults, the address read from `SEARXNG_URL` when the backend is made.
    fn default() -> Self {
        Self {
            base_url: String::new(),
            url_variable: SEARXNG_URL_VARIABLE.to_owned(),
            language: None,
            safe_search: SafeSearch::Moderate,
            categories: Vec::new(),
            engines: Vec::new(),
            time_range: None,
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
            timeout: Duration::from_secs(15),
            rate_per_second: NonZeroU32::MIN.saturating_add(1),
        }
    }
}

/// A SearXNG instance as a [`SearchBackend`].
#[derive(Debug, Clone)]
pub struct SearxngBackend {
    config: SearxngConfig,
    url: url::Url,
    http: Http,
}

impl SearxngBackend {
    /// The backend `config` describes; fails when its address is not an http(s) URL.
    pub fn new(config: SearxngConfig) -> Result<Self, WebError> {
        let url = endpoint(&base_url(&config.address()?)?, "search");
        let http = Http::new("searxng", config.timeout)?.with_refusal_hint(
            "an instance refuses format=json unless `json` is in `search.formats` of its settings.yml",
        );
        Ok(Self { config, url, http })
    }

    fn url_for(&self, request: &SearchRequest) -> url::Url {
        let options = &request.options;
        let mut url = self.url.clone();
        {
            let mut query = url.query_pairs_mut();
            let include = crate::domains(&options.include_domains, &self.config.include_domains);
            let exclude = crate::domains(&options.exclude_domains, &self.config.exclude_domains);
            query.append_pair(
                "q",
                &crate::with_site_operators(&request.query, include, exclude),
            );
            query.append_pair("format", "json");
            let level = match options.safe_search.unwrap_or(self.config.safe_search) {
                SafeSearch::Off => "0",
                SafeSearch::Moderate => "1",
                SafeSearch::Strict => "2",
            };
            query.append_pair("safesearch", level);
            if let Some(language) = options.language.as_ref().or(self.config.language.as_ref()) {
                query.append_pair("language", language);
            }
            match options.topic {
                Some(Topic::News) => {
                    query.append_pair("categories", "news");
                }
                _ if !self.config.categories.is_empty() => {
                    query.append_pair("categories", &self.config.categories.join(","));
                }
                _ => {}
            }
            if !self.config.engines.is_empty() {
                query.append_pair("engines", &self.config.engines.join(","));
            }
            if let Some(fresh) = self.freshness(request) {
                // The API documents day, month and year: a week asks for the month, and the
                // results dated earlier than a week are dropped after.
                let range = match fresh {
                    Freshness::Day => "day",
                    Freshness::Week | Freshness::Month => "month",
                    Freshness::Year => "year",
                };
                query.append_pair("time_range", range);
            }
        }
        url
    }

    fn freshness(&self, request: &SearchRequest) -> Option<Freshness> {
        request.options.freshness.or(self.config.time_range)
    }
}

#[derive(Deserialize)]
struct SearxngResponse {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    score: Option<f32>,
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

#[async_trait]
impl SearchBackend for SearxngBackend {
    fn name(&self) -> &str {
        &self.http.backend
    }

    fn call_rate(&self) -> Option<CallRate> {
        Some(CallRate::PerSecond(self.config.rate_per_second))
    }

    fn capabilities(&self) -> BackendCapabilities {
        // Its time ranges are "the past day/month/year", not dates: it cannot honour a range.
        // Web results are public: an asker's groups do not restrict them.
        BackendCapabilities {
            access: true,
            ..BackendCapabilities::default()
        }
    }

    fn query_form(&self) -> QueryForm {
        QueryForm::Web
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let reply: SearxngResponse = self.http.json(self.http.get(self.url_for(request))).await?;
        let week_ago = (self.freshness(request) == Some(Freshness::Week))
            .then(|| Utc::now().date_naive() - Days::days(7));
        Ok(reply
            .results
            .into_iter()
            .filter_map(|result| {
                hits::hit(
                    self.name(),
                    "searxng",
                    Found {
                        url: result.url.as_deref(),
                        title: result.title.as_deref(),
                        text: result.content.unwrap_or_default(),
                        score: result.score.unwrap_or(0.0),
                        date: hits::date(result.published_date.as_deref()),
                    },
                )
            })
            .filter(|hit| week_ago.is_none_or(|start| hit.date.is_none_or(|d| d >= start)))
            .take(request.limit)
            .collect())
    }
}
