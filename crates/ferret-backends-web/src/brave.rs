//! Brave Search's web search API: `GET /res/v1/web/search` with the key in
//! `X-Subscription-Token`; results with a description, extra snippets and an age.

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{
    BackendCapabilities, BackendError, CallRate, Freshness, Hit, PaidCost, PaidUnit, QueryForm,
    SafeSearch, SearchBackend, SearchRequest,
};
use reqwest::header::HeaderName;
use serde::Deserialize;

use crate::hits::{self, Found};
use crate::{base_url, endpoint, WebError};
use ferret_http::{ApiKey, Http, KeyForm};

/// The variable holding another address for Brave's API (a proxy, a gateway), used when the
/// configuration leaves the provider's own.
pub const BRAVE_URL_VARIABLE: &str = "BRAVE_BASE_URL";

/// The provider's own API address.
const BRAVE_API: &str = "https://api.search.brave.com";

/// The variable Brave's key is read from.
pub const BRAVE_KEY_VARIABLE: &str = "BRAVE_API_KEY";

fn safe_search(level: SafeSearch) -> &'static str {
    match level {
        SafeSearch::Off => "off",
        SafeSearch::Moderate => "moderate",
        SafeSearch::Strict => "strict",
    }
}

/// Brave's codes for the past day, week, month and year.
fn freshness(freshness: Freshness) -> &'static str {
    match freshness {
        Freshness::Day => "pd",
        Freshness::Week => "pw",
        Freshness::Month => "pm",
        Freshness::Year => "py",
    }
}

/// How a [`BraveBackend`] searches. Every option here is the default of every query. It reads
/// from `ferret.toml`'s `[web.brave]` table as it is (`timeout_seconds` for the timeout); what
/// the table leaves out keeps its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BraveConfig {
    /// The subscription token; when `None`, it is read from `key_variable` as the backend is
    /// made.
    #[serde(skip)]
    pub key: Option<ApiKey>,
    /// The variable the token is read from when `key` is `None` (default `BRAVE_API_KEY`).
    pub key_variable: String,
    /// Where the API lives (a proxy, a gateway, a compatible service; a mock server in tests);
    /// left at the provider's own, the variable `BRAVE_BASE_URL` replaces it when set.
    pub base_url: String,
    /// The country results come from, as a two-letter code ("US", "DE").
    pub country: Option<String>,
    /// The language of results, as a code ("en").
    pub search_lang: Option<String>,
    /// The adult-content filter.
    pub safe_search: SafeSearch,
    /// Only pages from the past day, week, month or year, when a query sets neither a date
    /// range nor a freshness of its own.
    pub freshness: Option<Freshness>,
    /// Only pages from these domains (sent as `site:` operators, which Brave's query accepts).
    pub include_domains: Vec<String>,
    /// Never pages from these domains (sent as `-site:` operators).
    pub exclude_domains: Vec<String>,
    /// Ask for up to five more excerpts of each page, read with its description.
    pub extra_snippets: bool,
    /// Longest wait for one answer.
    #[serde(rename = "timeout_seconds", deserialize_with = "ferret_http::seconds")]
    pub timeout: Duration,
    /// Calls per second at most: Brave's free plan allows one.
    pub rate_per_second: NonZeroU32,
}

impl BraveConfig {
    /// The defaults, with the key read from `BRAVE_API_KEY`.
    pub fn from_env() -> Result<Self, WebError> {
        Ok(Self::with_key(ApiKey::from_env(BRAVE_KEY_VARIABLE)?))
    }

    /// The defaults, with `key`.
    pub fn with_key(key: ApiKey) -> Self {
        Self {
            key: Some(key),
            ..Self::default()
        }
    }
}

impl Default for BraveConfig {
    /// The defaults, the token read from `BRAVE_API_KEY` when the backend is made.
    fn default() -> Self {
        Self {
            key: None,
            key_variable: BRAVE_KEY_VARIABLE.to_owned(),
            base_url: BRAVE_API.into(),
            country: None,
            search_lang: None,
            safe_search: SafeSearch::Moderate,
            freshness: None,
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
            extra_snippets: false,
            timeout: Duration::from_secs(15),
            rate_per_second: NonZeroU32::MIN,
        }
    }
}

/// Brave web search as a [`SearchBackend`].
#[derive(Debug, Clone)]
pub struct BraveBackend {
    config: BraveConfig,
    url: url::Url,
    http: Http,
}

impl BraveBackend {
    /// The backend `config` describes.
    pub fn new(config: BraveConfig) -> Result<Self, WebError> {
        let address = crate::api_address(
            &config.base_url,
            BRAVE_API,
            std::env::var(BRAVE_URL_VARIABLE).ok(),
        );
        let url = endpoint(&base_url(&address)?, "res/v1/web/search");
        let key = ApiKey::given_or_from_env(config.key.as_ref(), &config.key_variable)?;
        let http = Http::new("brave", config.timeout)?.with_key(
            HeaderName::from_static("x-subscription-token"),
            key,
            KeyForm::Plain,
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
            // Brave returns at most 20 results a call.
            query.append_pair("count", &request.limit.clamp(1, 20).to_string());
            query.append_pair(
                "safesearch",
                safe_search(options.safe_search.unwrap_or(self.config.safe_search)),
            );
            if let Some(country) = options.country.as_ref().or(self.config.country.as_ref()) {
                query.append_pair("country", country);
            }
            if let Some(lang) = options
                .language
                .as_ref()
                .or(self.config.search_lang.as_ref())
            {
                query.append_pair("search_lang", lang);
            }
            if self.config.extra_snippets {
                query.append_pair("extra_snippets", "true");
            }
            let range = request.filters.date_range.as_ref();
            match (range.and_then(|r| r.from), range.and_then(|r| r.to)) {
                (None, None) => {
                    if let Some(fresh) = options.freshness.or(self.config.freshness) {
                        query.append_pair("freshness", freshness(fresh));
                    }
                }
                (from, to) => {
                    let from = from.map_or_else(|| "1970-01-01".to_owned(), |d| d.to_string());
                    let to = to.map_or_else(
                        || chrono::Utc::now().date_naive().to_string(),
                        |d| d.to_string(),
                    );
                    query.append_pair("freshness", &format!("{from}to{to}"));
                }
            }
        }
        url
    }
}

#[derive(Deserialize)]
struct BraveResponse {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    extra_snippets: Vec<String>,
    #[serde(default)]
    page_age: Option<String>,
}

#[async_trait]
impl SearchBackend for BraveBackend {
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

    fn cost(&self, _request: &SearchRequest) -> Option<PaidCost> {
        Some(PaidCost {
            unit: PaidUnit::Requests,
            amount: 1,
        })
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let reply: BraveResponse = self.http.json(self.http.get(self.url_for(request))).await?;
        let results = reply.web.map(|web| web.results).unwrap_or_default();
        let count = results.len().max(1) as f32;
        Ok(results
            .into_iter()
            .enumerate()
            .filter_map(|(rank, result)| {
                let mut text = strip_tags(result.description.as_deref().unwrap_or_default());
                for snippet in &result.extra_snippets {
                    text.push(' ');
                    text.push_str(&strip_tags(snippet));
                }
                hits::hit(
                    self.name(),
                    "brave",
                    Found {
                        url: result.url.as_deref(),
                        title: result.title.as_deref().map(strip_tags).as_deref(),
                        text,
                        // Brave gives no score: its order is the ranking.
                        score: 1.0 - rank as f32 / count,
                        date: hits::date(result.page_age.as_deref()),
                    },
                )
            })
            .take(request.limit)
            .collect())
    }
}

/// Brave marks the query's words in titles and descriptions with `<strong>`: the hit keeps the
/// words only.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_owned()
}
