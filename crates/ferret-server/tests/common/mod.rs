//! Requests and readings the API tests share.
// Each test binary uses its own share of these.
#![allow(dead_code)]

use axum::body::Body;
use axum::http::{header, Request};
use ferret::index::{IngestOptions, LocalIndex, PathDocuments};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A JSON `POST` to `route`.
pub fn post(route: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(route)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap()
}

/// The body of `response` as JSON.
pub async fn read_json(response: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}

/// The SSE events of a stream body: (name, data) pairs.
pub fn sse_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ").or(line.strip_prefix("event:")) {
                    name = Some(n.trim().to_owned());
                }
                if let Some(d) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    data.push_str(d);
                }
            }
            Some((name?, serde_json::from_str(&data).ok()?))
        })
        .collect()
}

/// An index holding one page, in a folder of its own.
pub async fn seeded_index() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let mut seed = PathDocuments::default();
    seed.add_upload(
        "seed.jsonl",
        json!({"id": "tiber", "title": "Tiber", "text": "The Tiber is the river that flows through Rome."})
            .to_string()
            .as_bytes(),
        IngestOptions::default().max_chunk_chars,
    );
    index
        .ingest_read(seed, IngestOptions::default(), &mut |_, _| {})
        .await
        .unwrap();
    dir
}
