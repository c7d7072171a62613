use std::sync::Arc;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// A result's identity, stable across searches and re-ingests of the same content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct HitId(pub String);

impl std::fmt::Display for HitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for HitId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

/// One result from one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Hit {
    /// Stable identity (document id for indexes, canonical URL for the web).
    pub id: HitId,
    // Title and text are shared: a hit is copied as it passes through caches, fusion and
    // the response, and copying an `Arc` costs no allocation.
    /// Title, or the first words of the text when the source has none.
    pub title: Arc<str>,
    /// Where the result lives, when it has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The text retrieved: a passage, a chunk, or a snippet.
    pub text: Arc<str>,
    /// The backend's own score; higher is better, scales differ between backends.
    pub score: f32,
    /// Name of the backend that returned it.
    pub backend: String,
    /// Date of the content, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<NaiveDate>,
    /// Anything else the backend knows (source file, chunk number, tags).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub payload: serde_json::Map<String, serde_json::Value>,
}

impl Hit {
    /// A hit with the required fields and nothing else.
    pub fn new(
        id: impl Into<String>,
        title: impl Into<Arc<str>>,
        text: impl Into<Arc<str>>,
        score: f32,
        backend: impl Into<String>,
    ) -> Self {
        Self {
            id: HitId(id.into()),
            title: title.into(),
            url: None,
            text: text.into(),
            score,
            backend: backend.into(),
            date: None,
            payload: serde_json::Map::new(),
        }
    }

    /// What the hit holds on the heap, roughly: its text, the strings beside it, and its
    /// payload (each field as its JSON, plus the map's node). Stores that keep hits weigh them
    /// by it to stay within a byte budget.
    pub fn heap_bytes(&self) -> usize {
        let payload: usize = (self.payload.iter())
            .map(|(key, value)| 64 + key.len() + value.to_string().len())
            .sum();
        self.id.0.len()
            + self.title.len()
            + self.text.len()
            + self.url.as_ref().map_or(0, String::len)
            + self.backend.len()
            + payload
    }
}
