//! The network-facing parts against a local mock server: the OpenAI-compatible embeddings
//! provider (answers, failures, retries) and model download from a HuggingFace-compatible hub.
//! Also the disk cache that sits in front of any embedder.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{EmbedError, Embedder, RetryClass};
use ferret_embed::{CachedEmbedder, HubSource, OpenAiEmbedder};
use ferret_openai::OpenAiConfig;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn embedder(server: &MockServer, dimension: usize) -> OpenAiEmbedder {
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "text-embedding-3-small")
        .api_key("sk-test");
    config.timeout = Duration::from_millis(500);
    OpenAiEmbedder::new(config, dimension).unwrap()
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn answer(vectors: &[(u32, Vec<f32>)]) -> serde_json::Value {
    json!({
        "object": "list",
        "model": "text-embedding-3-small",
        "data": vectors.iter().map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v})).collect::<Vec<_>>(),
        "usage": {"prompt_tokens": 4, "total_tokens": 4}
    })
}

#[tokio::test]
async fn vectors_come_back_in_input_order_and_the_request_names_the_model() {
    let server = MockServer::start().await;
    // The server lists them out of order: `index` decides.
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer(&[(1, vec![0.0, 1.0]), (0, vec![1.0, 0.0])])),
        )
        .expect(1)
        .mount(&server)
        .await;
    let vectors = embedder(&server, 2)
        .embed(&texts(&["first", "second"]))
        .await
        .unwrap();
    assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    let request: serde_json::Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(request["model"], "text-embedding-3-small");
    assert_eq!(request["input"], json!(["first", "second"]));
}

#[tokio::test]
async fn a_wrong_dimension_or_a_missing_vector_is_a_permanent_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer(&[(0, vec![1.0, 0.0, 0.0])])))
        .mount(&server)
        .await;
    let err = embedder(&server, 2)
        .embed(&texts(&["a"]))
        .await
        .unwrap_err();
    assert_eq!(err.retry, RetryClass::Permanent);
    assert!(
        err.message.contains("3 values") && err.message.contains("configured for 2"),
        "{}",
        err.message
    );
    let err = embedder(&server, 3)
        .embed(&texts(&["a", "b"]))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("no vector for text 1"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_500_is_retried_once_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer(&[(0, vec![1.0])])))
        .mount(&server)
        .await;
    assert_eq!(
        embedder(&server, 1).embed(&texts(&["a"])).await.unwrap(),
        vec![vec![1.0]]
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn failures_keep_their_retry_class() {
    type Case = (ResponseTemplate, fn(RetryClass) -> bool, usize);
    let cases: Vec<Case> = vec![
        (
            ResponseTemplate::new(429).insert_header("Retry-After", "60"),
            |r| matches!(r, RetryClass::RateLimited { .. }),
            1,
        ),
        (
            ResponseTemplate::new(401).set_body_string("bad key"),
            |r| r == RetryClass::Permanent,
            1,
        ),
        (
            ResponseTemplate::new(200).set_body_string("{not json"),
            |r| r == RetryClass::Transient,
            2,
        ),
        (
            ResponseTemplate::new(200).set_delay(Duration::from_secs(2)),
            |r| r == RetryClass::Transient,
            2,
        ),
    ];
    for (response, expected, requests) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response)
            .mount(&server)
            .await;
        let err = embedder(&server, 1)
            .embed(&texts(&["a"]))
            .await
            .unwrap_err();
        assert!(expected(err.retry), "{err:?}");
        assert!(
            !err.message.contains("sk-test"),
            "the key never shows: {}",
            err.message
        );
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            requests,
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn the_hub_download_fetches_each_file_once_and_names_a_missing_one() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/org/model/resolve/main/config.json"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let hub = HubSource {
        endpoint: server.uri(),
        cache_dir: cache.path().to_owned(),
        token: None,
        timeout: Duration::from_secs(5),
    };
    for _ in 0..2 {
        let files = hub.download("org/model", &["config.json"]).await.unwrap();
        assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), "{}");
    }
    let err = hub
        .download("org/model", &["config.json", "model.safetensors"])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model.safetensors") && err.contains("404"),
        "{err}"
    );
    let err = hub
        .download("../etc", &["passwd"])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("organisation/name"), "{err}");
}

/// Counts the texts it is asked to embed.
struct Counting(AtomicUsize);

#[async_trait]
impl Embedder for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn dimension(&self) -> usize {
        2
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

#[tokio::test]
async fn the_cache_embeds_each_text_once_across_reopenings() {
    let dir = tempfile::tempdir().unwrap();
    let inner = Arc::new(Counting(AtomicUsize::new(0)));
    let cached = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
    let first = cached.embed(&texts(&["a", "bb", "a"])).await.unwrap();
    assert_eq!(first, vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![1.0, 1.0]]);
    drop(cached);
    // A crash mid-write leaves a torn record: it is skipped, the rest is kept.
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&[7; 10]);
    std::fs::write(&file, bytes).unwrap();

    let reopened = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
    assert_eq!(reopened.len(), 2);
    let again = reopened.embed(&texts(&["bb", "ccc"])).await.unwrap();
    assert_eq!(again, vec![vec![2.0, 1.0], vec![3.0, 1.0]]);
    // "a" and "bb" once each (the repeated "a" in one call included), then only "ccc".
    assert_eq!(inner.0.load(Ordering::SeqCst), 3);
    drop(reopened);
    assert_eq!(CachedEmbedder::open(inner, dir.path()).unwrap().len(), 3);
}
