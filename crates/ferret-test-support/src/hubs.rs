//! Stand-ins of the two model hubs: a catalogue of repositories (the HuggingFace Hub) and
//! models (Civitai), answered as the providers document their APIs, including what they do not
//! do. Each rule names the page it follows:
//!
//! - The Hub, <https://huggingface.co/docs/hub/api>: `GET /api/models` "search: filter based on
//!   substrings for repos and their usernames" (the whole `search` value, case-insensitive, in
//!   the repository id; a file name inside a repository is not searched), `author`, `filter`
//!   (tags), `sort` (downloads, descending), `limit`, `full` (file names as `siblings`); "the
//!   response is paginated, use the Link header to get the next pages". `GET /api/models/{id}`
//!   gives one repository; `GET /api/models/{id}/tree/{revision}` its files with sizes and, in
//!   `lfs.oid`, their SHA-256. A gated repository's files are refused (401, `X-Error-Code:
//!   GatedRepo`) to a request without a token
//!   (<https://huggingface.co/docs/hub/models-gated>).
//! - Civitai, <https://developer.civitai.com/site/reference/models>: `GET /api/v1/models`
//!   with `query` is a full-text search of model names (Meilisearch: each word of the query
//!   matches a word of the name, the last as a prefix,
//!   <https://www.meilisearch.com/docs/learn/engine/prefix>; file names are not searched), `types`
//!   filters by model type, `limit` up to 100, and the next page is reached with
//!   `metadata.nextCursor` (`page` "is incompatible with `query`": 400).
//!   <https://developer.civitai.com/site/reference/model-versions>: `GET
//!   /api/v1/model-versions/{id}` and `/by-hash/{sha256}` give a version with its model's name
//!   and type, 404 when there is none.
//!
//! Rate limits: past its limit a stand-in answers 429 with `Retry-After`, as the Hub documents
//! for its API quota (<https://huggingface.co/docs/hub/rate-limits>) and Civitai answers its
//! throttled clients.
//!
//! Stricter than the services where they are lenient: no typo tolerance, and Meilisearch's
//! fallback of dropping the query's last words is not modelled, so a search that finds a file
//! here finds it there.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferret_core::ModelSource;
use serde::Deserialize;
use serde_json::{json, Value};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// What the stand-ins hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubCatalogue {
    /// The Hub's repositories, each as `GET /api/models?full=true` lists one (`id`, `tags`,
    /// `gated`, `downloads`, `siblings`), optionally with `tree`: its files as
    /// `GET /api/models/{id}/tree/{revision}` gives them (else the siblings, without sizes).
    #[serde(default)]
    pub huggingface: Vec<Value>,
    /// Civitai's models, each as `GET /api/v1/models` lists one (`id`, `name`, `type`,
    /// `stats.downloadCount`, `modelVersions[].files[]`).
    #[serde(default)]
    pub civitai: Vec<Value>,
}

impl HubCatalogue {
    /// Both catalogues together, the first's entries first.
    pub fn merged(mut self, other: HubCatalogue) -> Self {
        self.huggingface.extend(other.huggingface);
        self.civitai.extend(other.civitai);
        self
    }
}

/// One hub's stand-in, answering from its catalogue.
#[derive(Debug, Clone)]
pub struct HubStandIn {
    source: ModelSource,
    catalogue: Arc<HubCatalogue>,
    /// Results per page at most, whatever `limit` asks: the services may give fewer.
    page_size: usize,
    requests: Arc<AtomicUsize>,
    /// Requests answered per window at most, and the window.
    rate_limit: Option<(usize, Duration)>,
    answered: Arc<Mutex<VecDeque<Instant>>>,
}

impl HubStandIn {
    /// The stand-in of `source` over `catalogue`, with pages as long as asked.
    pub fn new(source: ModelSource, catalogue: Arc<HubCatalogue>) -> Self {
        Self {
            source,
            catalogue,
            page_size: 100,
            requests: Arc::new(AtomicUsize::new(0)),
            rate_limit: None,
            answered: Arc::new(Mutex::new(VecDeque::new())),
        }
    }

    /// The same stand-in answering at most `requests` requests in any `window`; past it, 429
    /// with `Retry-After` (the seconds until the oldest request leaves the window).
    pub fn with_rate_limit(mut self, requests: usize, window: Duration) -> Self {
        self.rate_limit = Some((requests, window));
        self
    }

    /// The 429 to answer when the limit is reached, counting this request otherwise.
    fn throttled(&self) -> Option<ResponseTemplate> {
        let (limit, window) = self.rate_limit?;
        let now = Instant::now();
        let mut answered = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        while answered
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            answered.pop_front();
        }
        if answered.len() < limit {
            answered.push_back(now);
            return None;
        }
        let oldest = answered.front().copied().unwrap_or(now);
        let wait = window
            .saturating_sub(now.duration_since(oldest))
            .as_secs()
            .max(1);
        Some(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", wait.to_string().as_str())
                .set_body_json(json!({"error": "Too Many Requests"})),
        )
    }

    /// The same stand-in giving at most `page_size` results a page.
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// Answer every GET on `server` not answered by a mock of higher priority (a lower number
    /// than `priority`).
    pub async fn mount(&self, server: &MockServer, priority: u8) {
        Mock::given(wiremock::matchers::method("GET"))
            .respond_with(self.clone())
            .with_priority(priority)
            .mount(server)
            .await;
    }

    /// A server answering as the hub does, and nothing else.
    pub async fn start(&self) -> MockServer {
        let server = MockServer::start().await;
        self.mount(&server, 5).await;
        server
    }

    fn huggingface(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        if path == "/api/models" {
            return self.huggingface_search(request);
        }
        let Some(rest) = path.strip_prefix("/api/models/") else {
            return not_found();
        };
        // `{owner}/{name}` or `{owner}/{name}/tree/{revision}`.
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        let id = match parts.as_slice() {
            [owner, name] | [owner, name, "tree", _] => format!("{owner}/{name}"),
            _ => return not_found(),
        };
        let Some(repo) = self
            .catalogue
            .huggingface
            .iter()
            .find(|r| r["id"].as_str() == Some(id.as_str()))
        else {
            return ResponseTemplate::new(404)
                .insert_header("X-Error-Code", "RepoNotFound")
                .set_body_json(json!({"error": "Repository not found"}));
        };
        if parts.len() == 2 {
            return ResponseTemplate::new(200).set_body_json(without(repo, "tree"));
        }
        let gated = !matches!(repo["gated"], Value::Null | Value::Bool(false));
        if gated && request.headers.get("authorization").is_none() {
            return ResponseTemplate::new(401)
                .insert_header("X-Error-Code", "GatedRepo")
                .set_body_json(json!({
                    "error": format!("Access to model {id} is restricted. You must have access to it and be authenticated to access it. Please log in.")
                }));
        }
        let tree = match repo.get("tree") {
            Some(tree) => tree.clone(),
            None => Value::Array(
                repo["siblings"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s["rfilename"].as_str())
                    .map(|path| json!({"type": "file", "path": path}))
                    .collect(),
            ),
        };
        ResponseTemplate::new(200).set_body_json(tree)
    }

    fn huggingface_search(&self, request: &Request) -> ResponseTemplate {
        let search = param(request, "search").unwrap_or_default().to_lowercase();
        let author = param(request, "author");
        let tags: Vec<String> = params(request, "filter");
        let full = param(request, "full").is_some_and(|f| f == "true" || f == "True");
        let mut found: Vec<&Value> = self
            .catalogue
            .huggingface
            .iter()
            .filter(|repo| {
                let id = repo["id"].as_str().unwrap_or_default();
                id.to_lowercase().contains(&search)
                    && author
                        .as_deref()
                        .is_none_or(|a| id.split('/').next() == Some(a))
                    && tags.iter().all(|t| {
                        repo["tags"]
                            .as_array()
                            .is_some_and(|have| have.iter().any(|h| h.as_str() == Some(t)))
                    })
            })
            .collect();
        found.sort_by_key(|repo| std::cmp::Reverse(repo["downloads"].as_u64().unwrap_or(0)));
        let (page, next) = self.page(request, &found);
        let body: Vec<Value> = page
            .iter()
            .map(|repo| {
                let listed = without(repo, "tree");
                if full {
                    listed
                } else {
                    without(&listed, "siblings")
                }
            })
            .collect();
        let mut response = ResponseTemplate::new(200).set_body_json(body);
        if let Some(next) = next {
            let mut url = request.url.clone();
            let kept: Vec<(String, String)> = url
                .query_pairs()
                .filter(|(k, _)| k != "cursor")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            url.query_pairs_mut()
                .clear()
                .extend_pairs(kept)
                .append_pair("cursor", &next.to_string());
            // The Hub writes the whole address; the stand-in knows only its path (the server's
            // own address is not in the request), which a client resolves against the page.
            let next_page = format!(
                "<{}?{}>; rel=\"next\"",
                url.path(),
                url.query().unwrap_or("")
            );
            response = response.insert_header("Link", next_page.as_str());
        }
        response
    }

    fn civitai(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        if path == "/api/v1/models" {
            return self.civitai_search(request);
        }
        let versions = || {
            self.catalogue.civitai.iter().flat_map(|model| {
                model["modelVersions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(move |version| (model, version))
            })
        };
        let civitai_not_found =
            || ResponseTemplate::new(404).set_body_json(json!({"error": "Model not found"}));
        if let Some(hash) = path.strip_prefix("/api/v1/model-versions/by-hash/") {
            let held = versions().find(|(_, version)| {
                version["files"].as_array().into_iter().flatten().any(|f| {
                    f["hashes"]["SHA256"]
                        .as_str()
                        .is_some_and(|h| h.eq_ignore_ascii_case(hash))
                })
            });
            return held.map_or_else(civitai_not_found, |(m, v)| version_body(m, v));
        }
        if let Some(id) = path.strip_prefix("/api/v1/model-versions/") {
            let held = versions()
                .find(|(_, v)| v["id"].as_u64().map(|n| n.to_string()).as_deref() == Some(id));
            return held.map_or_else(civitai_not_found, |(m, v)| version_body(m, v));
        }
        if let Some(id) = path.strip_prefix("/api/v1/models/") {
            let held = self
                .catalogue
                .civitai
                .iter()
                .find(|m| m["id"].as_u64().map(|n| n.to_string()).as_deref() == Some(id));
            return held.map_or_else(civitai_not_found, |m| {
                ResponseTemplate::new(200).set_body_json(m)
            });
        }
        not_found()
    }

    fn civitai_search(&self, request: &Request) -> ResponseTemplate {
        let query = param(request, "query").unwrap_or_default();
        if !query.is_empty() && param(request, "page").is_some() {
            return ResponseTemplate::new(400).set_body_json(json!({
                "error": "Cannot use page param with query search. Use cursor-based pagination."
            }));
        }
        let query_words = words(&query);
        let types: Vec<String> = params(request, "types")
            .iter()
            .flat_map(|t| t.split(','))
            .map(str::to_owned)
            .collect();
        let mut found: Vec<&Value> = self
            .catalogue
            .civitai
            .iter()
            .filter(|model| {
                let name = words(model["name"].as_str().unwrap_or_default());
                let named = query_words.iter().enumerate().all(|(i, q)| {
                    let last = i + 1 == query_words.len();
                    name.iter()
                        .any(|w| w == q || (last && w.starts_with(q.as_str())))
                });
                let typed = types.is_empty()
                    || model["type"]
                        .as_str()
                        .is_some_and(|t| types.iter().any(|w| w.eq_ignore_ascii_case(t)));
                named && typed
            })
            .collect();
        found.sort_by_key(|model| {
            std::cmp::Reverse(model["stats"]["downloadCount"].as_u64().unwrap_or(0))
        });
        let (page, next) = self.page(request, &found);
        let mut metadata = json!({});
        if let Some(next) = next {
            metadata["nextCursor"] = json!(next.to_string());
        }
        ResponseTemplate::new(200).set_body_json(json!({"items": page, "metadata": metadata}))
    }

    /// The page `request` asks for (its `cursor`, an offset here, and `limit`), and the next
    /// page's cursor when there is more.
    fn page<'a>(&self, request: &Request, found: &[&'a Value]) -> (Vec<&'a Value>, Option<usize>) {
        let limit = param(request, "limit")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(100)
            .clamp(1, 100)
            .min(self.page_size);
        let start = param(request, "cursor")
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0)
            .min(found.len());
        let end = (start + limit).min(found.len());
        let next = (end < found.len()).then_some(end);
        (found[start..end].to_vec(), next)
    }
}

impl Respond for HubStandIn {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(throttled) = self.throttled() {
            return throttled;
        }
        match self.source {
            ModelSource::HuggingFace => self.huggingface(request),
            ModelSource::Civitai => self.civitai(request),
        }
    }
}

/// A version as `GET /api/v1/model-versions/{id}` gives it: with its model's id, name and type.
fn version_body(model: &Value, version: &Value) -> ResponseTemplate {
    let mut body = version.clone();
    body["modelId"] = model["id"].clone();
    body["model"] = json!({"name": model["name"], "type": model["type"]});
    ResponseTemplate::new(200).set_body_json(body)
}

fn not_found() -> ResponseTemplate {
    ResponseTemplate::new(404).set_body_json(json!({"error": "Not found"}))
}

fn without(value: &Value, field: &str) -> Value {
    let mut value = value.clone();
    if let Some(map) = value.as_object_mut() {
        map.remove(field);
    }
    value
}

fn param(request: &Request, name: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn params(request: &Request, name: &str) -> Vec<String> {
    request
        .url
        .query_pairs()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// Lower-case words, split at anything not a letter or digit (as a full-text index tokenises
/// a name: "4x-UltraSharp" is `4x`, `ultrasharp`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Arc<HubCatalogue> {
        Arc::new(HubCatalogue {
            huggingface: vec![
                json!({"id": "stabilityai/stable-diffusion-xl-base-1.0", "downloads": 10,
                       "siblings": [{"rfilename": "sd_xl_base_1.0.safetensors"}]}),
                json!({"id": "someone/sdxl-base-mirror", "downloads": 1, "gated": "auto",
                       "siblings": [{"rfilename": "model.safetensors"}]}),
            ],
            civitai: vec![json!({"id": 1, "name": "Detail Tweaker XL", "type": "LORA",
                                 "modelVersions": [{"id": 11, "files": [
                                     {"name": "add-detail-xl.safetensors",
                                      "hashes": {"SHA256": "AB"}}]}]})],
        })
    }

    async fn get(server: &MockServer, path: &str) -> (u16, Value) {
        let response = reqwest::get(format!("{}{path}", server.uri()))
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn the_hub_matches_repository_ids_not_file_names() {
        let server = HubStandIn::new(ModelSource::HuggingFace, catalogue())
            .start()
            .await;
        let (_, by_file) = get(&server, "/api/models?search=sd_xl_base_1.0&full=true").await;
        assert_eq!(by_file, json!([]));
        let (_, by_id) = get(&server, "/api/models?search=Stable-Diffusion-XL&full=true").await;
        assert_eq!(by_id[0]["id"], "stabilityai/stable-diffusion-xl-base-1.0");
        assert!(by_id[0]["siblings"].is_array());
        let (status, _) = get(&server, "/api/models/someone/sdxl-base-mirror/tree/main").await;
        assert_eq!(status, 401, "a gated repository's files need a token");
    }

    #[tokio::test]
    async fn civitai_matches_model_names_not_file_names() {
        let server = HubStandIn::new(ModelSource::Civitai, catalogue())
            .start()
            .await;
        let (_, by_file) = get(&server, "/api/v1/models?query=add-detail-xl").await;
        assert_eq!(by_file["items"], json!([]));
        let (_, by_name) = get(&server, "/api/v1/models?query=detail%20twe").await;
        assert_eq!(by_name["items"][0]["name"], "Detail Tweaker XL");
        let (status, _) = get(&server, "/api/v1/models?query=detail&page=2").await;
        assert_eq!(status, 400);
        let (_, version) = get(&server, "/api/v1/model-versions/by-hash/ab").await;
        assert_eq!(version["model"]["name"], "Detail Tweaker XL");
    }

    #[tokio::test]
    async fn pages_follow_cursors() {
        let catalogue = Arc::new(HubCatalogue {
            civitai: (0..3)
                .map(|i| json!({"id": i, "name": format!("Detail {i}"), "type": "LORA"}))
                .collect(),
            ..HubCatalogue::default()
        });
        let server = HubStandIn::new(ModelSource::Civitai, catalogue)
            .with_page_size(2)
            .start()
            .await;
        let (_, first) = get(&server, "/api/v1/models?query=detail&limit=20").await;
        assert_eq!(first["items"].as_array().unwrap().len(), 2);
        let cursor = first["metadata"]["nextCursor"].as_str().unwrap().to_owned();
        let (_, second) = get(
            &server,
            &format!("/api/v1/models?query=detail&cursor={cursor}"),
        )
        .await;
        assert_eq!(second["items"].as_array().unwrap().len(), 1);
        assert!(second["metadata"].get("nextCursor").is_none());
    }

    #[tokio::test]
    async fn the_hubs_next_page_is_in_its_link_header() {
        let catalogue = Arc::new(HubCatalogue {
            huggingface: vec![
                json!({"id": "a/realistic-one", "downloads": 2}),
                json!({"id": "b/Realistic_two", "downloads": 1}),
            ],
            ..HubCatalogue::default()
        });
        let server = HubStandIn::new(ModelSource::HuggingFace, catalogue)
            .with_page_size(1)
            .start()
            .await;
        let first = reqwest::get(format!(
            "{}/api/models?search=realistic&limit=20",
            server.uri()
        ))
        .await
        .unwrap();
        let link = first.headers()["link"].to_str().unwrap().to_owned();
        let body: Value = first.json().await.unwrap();
        assert_eq!(body[0]["id"], "a/realistic-one");
        let next = link.trim_start_matches('<').split('>').next().unwrap();
        let second: Value = reqwest::get(format!("{}{next}", server.uri()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(second[0]["id"], "b/Realistic_two");
    }

    #[tokio::test]
    async fn past_its_rate_limit_a_hub_answers_429_with_retry_after() {
        let server = HubStandIn::new(ModelSource::Civitai, catalogue())
            .with_rate_limit(2, Duration::from_secs(60))
            .start()
            .await;
        for _ in 0..2 {
            let (status, _) = get(&server, "/api/v1/models?query=detail").await;
            assert_eq!(status, 200);
        }
        let third = reqwest::get(format!("{}/api/v1/models?query=detail", server.uri()))
            .await
            .unwrap();
        assert_eq!(third.status().as_u16(), 429);
        let wait: u64 = third.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
    }
}
