//! Stand-ins of the web search providers for a coding agent's scenarios: Tavily (`POST /search`,
//! the query in the JSON body) and Brave (`GET /res/v1/web/search`, the query in `q`), each
//! answering every request with one response written in the provider's documented shape
//! (Tavily: <https://docs.tavily.com/documentation/api-reference/endpoint/search>; Brave:
//! <https://api-dashboard.search.brave.com/app/documentation/web-search/responses>), and
//! recording the queries it was sent. Like the services, a stand-in answers only a request
//! that carries the provider's key where its documentation puts it (Tavily: an
//! `Authorization: Bearer` header; Brave: the `X-Subscription-Token` header,
//! <https://api-dashboard.search.brave.com/app/documentation/web-search/get-started>); any other
//! gets 401 with Tavily's documented error body, as `fixtures/web/*-fault-unauthorized` do.

use wiremock::matchers::{header_exists, method, path};
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
        let (verb, route, key_header) = match provider {
            WebProvider::Tavily => ("POST", "/search", "authorization"),
            WebProvider::Brave => ("GET", "/res/v1/web/search", "x-subscription-token"),
        };
        let server = MockServer::start().await;
        Mock::given(method(verb))
            .and(path(route))
            .and(header_exists(key_header))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/json"))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method(verb))
            .and(path(route))
            .respond_with(ResponseTemplate::new(401).set_body_raw(
                r#"{"detail": {"error": "Unauthorized: missing or invalid API key."}}"#,
                "application/json",
            ))
            .with_priority(2)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_without_the_documented_key_is_refused_as_the_services_do() {
        let client = reqwest::Client::new();
        let tavily = WebStandIn::start(WebProvider::Tavily, r#"{"results": []}"#.to_owned()).await;
        let search = format!("{}/search", tavily.uri());
        let body = r#"{"query": "x"}"#;
        let without = client.post(&search).body(body).send().await.unwrap();
        assert_eq!(without.status(), 401);
        let with = client
            .post(&search)
            .bearer_auth("tvly-test")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(with.status(), 200);

        let brave = WebStandIn::start(WebProvider::Brave, "{}".to_owned()).await;
        let search = format!("{}/res/v1/web/search?q=x", brave.uri());
        assert_eq!(client.get(&search).send().await.unwrap().status(), 401);
        let with = client
            .get(&search)
            .header("X-Subscription-Token", "brave-test")
            .send()
            .await
            .unwrap();
        assert_eq!(with.status(), 200);
        assert_eq!(brave.queries().await, ["x", "x"]);
    }
}
