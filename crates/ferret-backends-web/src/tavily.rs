//! Tavily's search API: `POST /search` with a bearer key; results with content and a score, and
//! when asked, an answer of Tavily's own.

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{
    BackendCapabilities, BackendError, CallRate, Freshness, Hit, PaidCost, PaidUnit, QueryForm,
    SearchBackend, SearchDepth, SearchRequest, Topic,
};
use reqwest::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};

use crate::hits::{self, Found};
use crate::{base_url, endpoint, WebError};
use ferret_http::{ApiKey, Http, KeyForm};

/// The variable holding another address for Tavily's API (a proxy, a gateway), used when the
/// configuration leaves the provider's own.
pub const TAVILY_URL_VARIABLE: &str = "TAVILY_BASE_URL";

/// The provider's own API address.
const TAVILY_API: &str = "https://api.tavily.com";

/// The variable Tavily's key is read from.
pub const TAVILY_KEY_VARIABLE: &str = "TAVILY_API_KEY";

/// How a [`TavilyBackend`] searches. Every option here is the default of every query. It reads
/// from `ferret.toml`'s `[web.tavily]` table as it is (`timeout_seconds` for the timeout); what
/// the table leaves out keeps its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TavilyConfig {
    /// The API key; when `None`, it is read from `key_variable` as the backend is made.
    #[serde(skip)]
    pub key: Option<ApiKey>,
    /// The variable the key is read from when `key` is `None` (default `TAVILY_API_KEY`).
    pub key_variable: String,
    /// Where the API lives (a proxy, a gateway, a compatible service; a mock server in tests);
    /// left at the provider's own, the variable `TAVILY_BASE_URL` replaces it when set.
    pub base_url: String,
    /// Basic (one credit a call) or advanced (two) search.
    pub search_depth: SearchDepth,
    /// General, news or finance.
    pub topic: Topic,
    /// Only pages from the last day, week, month or year, when a query sets no date range.
    pub time_range: Option<Freshness>,
    /// Ask for Tavily's own short answer, which becomes a hit of its own.
    pub include_answer: bool,
    /// Ask for each page's full text (as the hit's text, capped at `max_content_chars`).
    pub include_raw_content: bool,
    /// Only pages from these domains.
    pub include_domains: Vec<String>,
    /// Never pages from these domains.
    pub exclude_domains: Vec<String>,
    /// Boost results from this country (a country name, as Tavily takes it).
    pub country: Option<String>,
    /// Characters of a page's text kept at most.
    pub max_content_chars: usize,
    /// Longest wait for one answer.
    #[serde(rename = "timeout_seconds", deserialize_with = "ferret_http::seconds")]
    pub timeout: Duration,
    /// Calls per second at most: Tavily documents 100 requests a minute for development keys,
    /// which whole seconds round down to one.
    pub rate_per_second: NonZeroU32,
}

impl TavilyConfig {
    /// The defaults, with the key read from `TAVILY_API_KEY`.
    pub fn from_env() -> Result<Self, WebError> {
        Ok(Self::with_key(ApiKey::from_env(TAVILY_KEY_VARIABLE)?))
    }

    /// The defaults, with `key`.
    pub fn with_key(key: ApiKey) -> Self {
        Self {
            key: Some(key),
            ..Self::default()
        }
    }
}

impl Default for TavilyConfig {
    /// The defaults, the key read from `TAVILY_API_KEY` when the backend is made.
    fn default() -> Self {
        Self {
            key: None,
            key_variable: TAVILY_KEY_VARIABLE.to_owned(),
            base_url: TAVILY_API.into(),
            search_depth: SearchDepth::Basic,
            topic: Topic::General,
            time_range: None,
            include_answer: false,
            include_raw_content: false,
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
            country: None,
            max_content_chars: 4_000,
            timeout: Duration::from_secs(20),
            rate_per_second: NonZeroU32::MIN,
        }
    }
}

/// Tavily web search as a [`SearchBackend`].
#[derive(Debug, Clone)]
pub struct TavilyBackend {
    config: TavilyConfig,
    url: url::Url,
    http: Http,
}

impl TavilyBackend {
    /// The backend `config` describes.
    pub fn new(config: TavilyConfig) -> Result<Self, WebError> {
        let address = crate::api_address(
            &config.base_url,
            TAVILY_API,
            std::env::var(TAVILY_URL_VARIABLE).ok(),
        );
        let url = endpoint(&base_url(&address)?, "search");
        let key = ApiKey::given_or_from_env(config.key.as_ref(), &config.key_variable)?;
        let http =
            Http::new("tavily", config.timeout)?.with_key(AUTHORIZATION, key, KeyForm::Bearer);
        Ok(Self { config, url, http })
    }

    /// The depth `request` searches at: its own, else the configured one.
    fn depth(&self, request: &SearchRequest) -> SearchDepth {
        request.options.depth.unwrap_or(self.config.search_depth)
    }

    fn body<'a>(&'a self, request: &'a SearchRequest) -> TavilyRequest<'a> {
        let options = &request.options;
        let range = request.filters.date_range.as_ref();
        TavilyRequest {
            query: &request.query,
            search_depth: self.depth(request),
            topic: options.topic.unwrap_or(self.config.topic),
            // Tavily returns at most 20 results a call.
            max_results: request.limit.clamp(1, 20),
            include_answer: self.config.include_answer,
            include_raw_content: self.config.include_raw_content,
            include_domains: crate::domains(&options.include_domains, &self.config.include_domains),
            exclude_domains: crate::domains(&options.exclude_domains, &self.config.exclude_domains),
            country: options
                .country
                .as_deref()
                .or(self.config.country.as_deref()),
            // A date range is exact; a freshness only counts back from today.
            time_range: range
                .is_none()
                .then(|| options.freshness.or(self.config.time_range))
                .flatten()
                .map(Freshness::as_str),
            start_date: range.and_then(|r| r.from).map(|d| d.to_string()),
            end_date: range.and_then(|r| r.to).map(|d| d.to_string()),
        }
    }
}

#[derive(Serialize)]
struct TavilyRequest<'a> {
    query: &'a str,
    search_depth: SearchDepth,
    topic: Topic,
    max_results: usize,
    include_answer: bool,
    include_raw_content: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    include_domains: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    exclude_domains: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    country: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_range: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_date: Option<String>,
}

#[derive(Deserialize)]
struct TavilyResponse {
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    results: Vec<TavilyResult>,
}

#[derive(Deserialize)]
struct TavilyResult {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    raw_content: Option<String>,
    #[serde(default)]
    score: Option<f32>,
    #[serde(default)]
    published_date: Option<String>,
}

#[async_trait]
impl SearchBackend for TavilyBackend {
    fn name(&self) -> &str {
        &self.http.backend
    }

    fn call_rate(&self) -> Option<CallRate> {
        Some(CallRate::PerSecond(self.config.rate_per_second))
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            date_range: true,
            most_recent: false,
            // Web results are public: an asker's groups do not restrict them.
            access: true,
            ..BackendCapabilities::default()
        }
    }

    fn query_form(&self) -> QueryForm {
        QueryForm::Web
    }

    fn cost(&self, request: &SearchRequest) -> Option<PaidCost> {
        let amount = match self.depth(request) {
            SearchDepth::Basic => 1,
            SearchDepth::Advanced => 2,
        };
        Some(PaidCost {
            unit: PaidUnit::Credits,
            amount,
        })
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let reply: TavilyResponse = self
            .http
            .json(self.http.post(self.url.clone()).json(&self.body(request)))
            .await?;
        let mut hits: Vec<Hit> = reply
            .results
            .into_iter()
            .filter_map(|result| {
                let text = match (&result.raw_content, self.config.include_raw_content) {
                    (Some(raw), true) if !raw.trim().is_empty() => raw.as_str(),
                    _ => result.content.as_deref().unwrap_or_default(),
                };
                hits::hit(
                    self.name(),
                    "tavily",
                    Found {
                        url: result.url.as_deref(),
                        title: result.title.as_deref(),
                        text: hits::capped(text, self.config.max_content_chars),
                        score: result.score.unwrap_or(0.0),
                        date: hits::date(result.published_date.as_deref()),
                    },
                )
            })
            .take(request.limit)
            .collect();
        let top = hits.first().map_or(1.0, |h| h.score);
        if let Some(answer) = reply.answer.as_deref().and_then(|answer| {
            hits::provider_answer(self.name(), "tavily", &request.query, answer, top, &hits)
        }) {
            hits.push(answer);
        }
        Ok(hits)
    }
}
