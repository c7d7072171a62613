//! `--web tavily,brave,searxng`: web backends beside (or instead of) the local index, each with its
//! key from the environment and its provider's rate limit.

use std::sync::Arc;

use clap::ValueEnum;
use ferret::{
    BraveBackend, BraveConfig, FerretBuilder, SearchBackend, SearxngBackend, SearxngConfig,
    TavilyBackend, TavilyConfig,
};

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

/// `builder` with each chosen provider added, and how many were. A provider that cannot be set
/// up (its key or address missing) is left out with a warning naming the variable, so the others
/// still run.
pub(crate) fn add_web(mut builder: FerretBuilder, choices: &[WebChoice]) -> (FerretBuilder, usize) {
    let mut added = 0;
    for choice in choices {
        let backend = match choice {
            WebChoice::Tavily => TavilyConfig::from_env()
                .and_then(TavilyBackend::new)
                .map(|b| (b.rate_per_second(), shared(b))),
            WebChoice::Brave => BraveConfig::from_env()
                .and_then(BraveBackend::new)
                .map(|b| (b.rate_per_second(), shared(b))),
            WebChoice::Searxng => SearxngConfig::from_env()
                .and_then(SearxngBackend::new)
                .map(|b| (b.rate_per_second(), shared(b))),
        };
        match backend {
            Ok((rate, backend)) => {
                builder = builder.rate_limited_backend(backend, rate);
                added += 1;
            }
            Err(error) => eprintln!("warning: {choice:?} left out: {error}"),
        }
    }
    (builder, added)
}

fn shared(backend: impl SearchBackend + 'static) -> Arc<dyn SearchBackend> {
    Arc::new(backend)
}
