//! A web search backend (SearXNG) searched through the facade, pointed at a stand-in on this
//! machine that answers as a SearXNG instance does: `GET /search?q=…&format=json`, results with
//! `url`, `title` and `content` (https://docs.searxng.org/dev/search_api.html). Point
//! `SearxngConfig::new` at a real instance to search the web; the backend keeps the rate it
//! declares.
//!
//! `cargo run -p ferret-examples --bin web-backend`

use std::sync::Arc;

use ferret::backends::{SearxngBackend, SearxngConfig};
use ferret::{Ferret, Query};
use serde_json::json;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let instance = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("format", "json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": "ferret",
            "number_of_results": 2,
            "results": [
                {
                    "url": "https://en.wikipedia.org/wiki/Ferret",
                    "title": "Ferret",
                    "content": "The ferret is a small, domesticated species of the family \
                                Mustelidae, kept as a pet since at least 2,500 years ago.",
                    "engine": "wikipedia"
                },
                {
                    "url": "https://example.org/ferret-care",
                    "title": "Ferret care",
                    "content": "Ferrets sleep 14 to 18 hours a day.",
                    "engine": "duckduckgo"
                }
            ],
            "answers": [],
            "suggestions": [],
            "unresponsive_engines": []
        })))
        .mount(&instance)
        .await;

    let web = SearxngBackend::new(SearxngConfig::new(instance.uri()))?;
    let ferret = Ferret::builder().backend(Arc::new(web)).build()?;
    let response = ferret.search(Query::new("What is a ferret?")?).await?;
    let answer = response
        .answer
        .ok_or_else(|| anyhow::anyhow!("no answer: {:?}", response.message))?;
    println!("{answer}");
    for citation in &response.citations {
        let url = citation.url.as_deref().unwrap_or("");
        println!("[{}] {} {url}", citation.marker, citation.title);
    }
    anyhow::ensure!(!response.citations.is_empty(), "the answer cites the web");
    Ok(())
}
