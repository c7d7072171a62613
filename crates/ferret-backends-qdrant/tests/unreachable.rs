//! A server that is not there, or does not answer, fails fast with an error naming its URL.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use ferret_backends_qdrant::{QdrantConfig, QdrantError, QdrantIndex};

fn config(url: &str) -> QdrantConfig {
    let mut config = QdrantConfig::new(url, "journal");
    config.timeout = Duration::from_secs(2);
    config
}

async fn assert_unreachable(url: &str) {
    let started = Instant::now();
    let error = QdrantIndex::connect_or_create(config(url), None)
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(
        matches!(error, QdrantError::Unreachable { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    eprintln!("{message}");
    assert!(message.contains(url), "{message}");
    assert!(
        message.contains("6334"),
        "hints at the gRPC port: {message}"
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    assert_unreachable(&format!("http://127.0.0.1:{port}")).await;
}

#[tokio::test]
async fn a_server_that_never_answers_is_unreachable_after_the_timeout() {
    // The kernel completes the TCP handshake for a listener nobody accepts from: the client
    // connects, then waits for an HTTP/2 answer that never comes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    assert_unreachable(&url).await;
    drop(listener);
}

#[test]
fn the_config_defaults_to_ten_seconds_and_keeps_the_key_out_of_debug_output() {
    let config = QdrantConfig::new("http://localhost:6334", "docs").api_key("s3cret-key");
    assert_eq!(config.timeout, Duration::from_secs(10));
    assert!(config.api_key.is_some());
    let debug = format!("{config:?}");
    assert!(!debug.contains("s3cret-key"), "{debug}");
}
