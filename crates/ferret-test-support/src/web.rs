//! Stand-ins of the web search providers for a coding agent's scenarios: Tavily (`POST /search`,
//! the query in the JSON body) and Brave (`GET /res/v1/web/search`, the query in `q`), each
//! answering every request with one response written in the provider's documented shape
//! (Tavily: <https://docs.tavily.com/documentation/api-reference/endpoint/search>; Brave:
//! <https://api-dashboard.search.brave.com/app/documentation/web-search/responses>), and
//! recording the queries it was sent.

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Which provider a stand-in answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebProvider {
    /// Tavily's search API.
    Tavily,
    /// Brave's web search API.
    Brave,
}

/// One provider's stand-in, serving `body` on the provider's search route.
pub struct WebStandIn {
    server: MockServer,
}

impl WebStandIn {
    /// Start a stand-in of `provider` that answers every search with `body` (200, JSON).
    pub async fn start(provider: WebProvider, body: String) -> Self {
        let (verb, route) = match provider {
            WebProvider::Tavily => ("POST", "/search"),
            WebProvider::Brave => ("GET", "/res/v1/web/search"),
        };
        let server = MockServer::start().await;
        Mock::given(method(verb))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/json"))
            .mount(&server)
            .await;
        Self { server }
    }

    /// The address to give the provider's `base_url`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The query text of each request received, in order: the JSON body's `query` (Tavily) or
    /// the `q` parameter (Brave).
    pub async fn queries(&self) -> Vec<String> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(
                |r| match serde_json::from_slice::<serde_json::Value>(&r.body) {
                    Ok(body) => body["query"].as_str().unwrap_or_default().to_owned(),
                    Err(_) => r
                        .url
                        .query_pairs()
                        .find(|(k, _)| k == "q")
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default(),
                },
            )
            .collect()
    }
}
