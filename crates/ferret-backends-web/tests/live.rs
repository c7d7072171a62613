//! Each provider for real, when its variable is set (`TAVILY_API_KEY`, `BRAVE_API_KEY`,
//! `SEARXNG_URL`); otherwise the test says it was skipped. Nothing here runs in CI, which has no
//! keys: the fixture cases pin behaviour there.

use ferret_backends_web::{
    BraveBackend, BraveConfig, SearxngBackend, SearxngConfig, TavilyBackend, TavilyConfig,
    BRAVE_KEY_VARIABLE, SEARXNG_URL_VARIABLE, TAVILY_KEY_VARIABLE,
};
use ferret_core::{Filters, SearchBackend, SearchRequest};

const QUESTION: &str = "Spring Boot 3 minimum Java version";

async fn searched(backend: &dyn SearchBackend) {
    let request = SearchRequest {
        query: QUESTION.into(),
        limit: 5,
        filters: Filters::default(),
        options: Default::default(),
        text_for: None,
    };
    let hits = backend
        .search(&request)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", backend.name()));
    assert!(
        !hits.is_empty(),
        "{} found nothing for {QUESTION:?}",
        backend.name()
    );
    assert!(
        hits.iter()
            .all(|h| h.url.is_some() || h.payload.get("provider_answer").is_some()),
        "every result has an address: {hits:#?}"
    );
}

fn skipped(variable: &str) {
    eprintln!("skipped: set {variable} to run this test against the live service");
}

#[tokio::test]
async fn tavily_live() {
    match TavilyConfig::from_env() {
        Ok(config) => searched(&TavilyBackend::new(config).unwrap()).await,
        Err(_) => skipped(TAVILY_KEY_VARIABLE),
    }
}

#[tokio::test]
async fn brave_live() {
    match BraveConfig::from_env() {
        Ok(config) => searched(&BraveBackend::new(config).unwrap()).await,
        Err(_) => skipped(BRAVE_KEY_VARIABLE),
    }
}

#[tokio::test]
async fn searxng_live() {
    match SearxngConfig::from_env() {
        Ok(config) => searched(&SearxngBackend::new(config).unwrap()).await,
        Err(_) => skipped(SEARXNG_URL_VARIABLE),
    }
}
