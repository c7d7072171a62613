//! `--web tavily,brave,searxng`: which web providers to search beside (or instead of) the local
//! index (the configuration file's when not given), and this search's provider options.

use clap::{Args, ValueEnum};
use ferret::config::WebProvider;
use ferret::jobs::search::{Freshness, SafeSearch, SearchDepth, SearchOptions, Topic};
use serde::de::DeserializeOwned;

/// Provider options of this search; each set one overrides the providers' defaults.
#[derive(Debug, Clone, Args)]
pub(crate) struct WebOptionArgs {
    /// Tavily's search depth: basic (1 credit) or advanced (2 credits).
    #[arg(long, value_parser = parse_name::<SearchDepth>)]
    depth: Option<SearchDepth>,
    /// general, news or finance pages.
    #[arg(long, value_parser = parse_name::<Topic>)]
    topic: Option<Topic>,
    /// Only web pages from the last day, week, month or year.
    #[arg(long, value_parser = parse_name::<Freshness>)]
    freshness: Option<Freshness>,
    /// Only web pages from this domain (repeat for more).
    #[arg(long = "include-domain", value_name = "DOMAIN")]
    include_domains: Vec<String>,
    /// Never web pages from this domain (repeat for more).
    #[arg(long = "exclude-domain", value_name = "DOMAIN")]
    exclude_domains: Vec<String>,
    /// The country results come from, as the provider names it (Brave: DE; Tavily: germany).
    #[arg(long)]
    country: Option<String>,
    /// The language of results (en, de, ...).
    #[arg(long)]
    language: Option<String>,
    /// off, moderate or strict.
    #[arg(long = "safe-search", value_parser = parse_name::<SafeSearch>)]
    safe_search: Option<SafeSearch>,
    /// Credits or requests each paid provider may bill this search.
    #[arg(long, value_name = "N")]
    pub(crate) max_paid_units: Option<u32>,
}

impl WebOptionArgs {
    /// The options as a query carries them.
    pub(crate) fn options(&self) -> SearchOptions {
        SearchOptions {
            depth: self.depth,
            topic: self.topic,
            freshness: self.freshness,
            include_domains: self.include_domains.clone(),
            exclude_domains: self.exclude_domains.clone(),
            country: self.country.clone(),
            language: self.language.clone(),
            safe_search: self.safe_search,
            model_type: None,
        }
    }
}

/// A lowercase option name read the way the query's JSON reads it, so the two never disagree.
fn parse_name<T: DeserializeOwned>(name: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(name.to_lowercase()))
        .map_err(|e| e.to_string())
}

/// A web search provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WebChoice {
    /// Tavily (key in TAVILY_API_KEY).
    Tavily,
    /// Brave Search (key in BRAVE_API_KEY).
    Brave,
    /// A SearXNG instance (address in SEARXNG_URL).
    Searxng,
}

impl WebChoice {
    /// The provider, as a configuration file names it.
    pub(crate) fn provider(self) -> WebProvider {
        match self {
            WebChoice::Tavily => WebProvider::Tavily,
            WebChoice::Brave => WebProvider::Brave,
            WebChoice::Searxng => WebProvider::Searxng,
        }
    }
}
