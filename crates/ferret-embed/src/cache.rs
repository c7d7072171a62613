use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ferret_core::{EmbedError, Embedder, RetryClass};
use sha2::{Digest, Sha256};

use crate::EmbedderError;

type Key = [u8; 32];

/// An [`Embedder`] that remembers every vector on disk, keyed by the SHA-256 of the text, so
/// that a text is embedded once per model however many times it is ingested, into however many
/// indexes.
///
/// Vectors live in one append-only file per embedder name and dimension under the cache folder.
/// A record cut short by a crash is ignored when the file is read again.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    file: PathBuf,
    state: Mutex<State>,
}

struct State {
    vectors: HashMap<Key, Vec<f32>>,
    writer: Option<std::fs::File>,
}

impl std::fmt::Debug for CachedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("embedder", &self.inner.name())
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl CachedEmbedder {
    /// Cache the vectors of `inner` in `cache_dir`, reading what earlier runs stored there.
    pub fn open(inner: Arc<dyn Embedder>, cache_dir: &Path) -> Result<Self, EmbedderError> {
        let safe_name: String = inner
            .name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.@".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let file = cache_dir.join(format!("{safe_name}-{}.vectors", inner.dimension()));
        let unreadable = |e: std::io::Error| EmbedderError::Invalid {
            file: file.clone(),
            reason: e.to_string(),
        };
        let vectors = match std::fs::read(&file) {
            Ok(bytes) => decode(&bytes, inner.dimension()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(unreadable(e)),
        };
        Ok(Self {
            inner,
            file,
            state: Mutex::new(State {
                vectors,
                writer: None,
            }),
        })
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.lock().vectors.len()
    }

    /// True when nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file the vectors are kept in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn store(&self, state: &mut State, key: Key, vector: &[f32]) -> std::io::Result<()> {
        if state.writer.is_none() {
            if let Some(parent) = self.file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.file)?;
            // Drop a torn tail left by a crash, so new records stay aligned.
            let record = record_len(self.inner.dimension()) as u64;
            let len = file.metadata()?.len();
            if len % record != 0 {
                file.set_len(len - len % record)?;
            }
            file.flush()?;
            state.writer = Some(file);
        }
        let writer = state.writer.as_mut().expect("opened above");
        let mut bytes = Vec::with_capacity(record_len(vector.len()));
        bytes.extend_from_slice(&key);
        for value in vector {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        writer.write_all(&bytes)
    }
}

fn record_len(dimension: usize) -> usize {
    32 + 4 * dimension
}

fn decode(bytes: &[u8], dimension: usize) -> HashMap<Key, Vec<f32>> {
    bytes
        .chunks_exact(record_len(dimension))
        .map(|record| {
            let key: Key = record[..32].try_into().expect("32 bytes");
            let vector = record[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            (key, vector)
        })
        .collect()
}

fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        let mut found: Vec<Option<Vec<f32>>> = {
            let state = self.lock();
            keys.iter().map(|k| state.vectors.get(k).cloned()).collect()
        };
        // The first of each missing text; repeats in one call are embedded once.
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| found[i].is_none() && seen.insert(keys[i]))
            .collect();
        if !missing.is_empty() {
            let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let computed = self.inner.embed(&batch).await?;
            if computed.len() != batch.len() {
                return Err(EmbedError {
                    message: format!(
                        "{} returned {} vectors for {} texts",
                        self.inner.name(),
                        computed.len(),
                        batch.len()
                    ),
                    retry: RetryClass::Permanent,
                });
            }
            let mut state = self.lock();
            for (&i, vector) in missing.iter().zip(computed) {
                if !state.vectors.contains_key(&keys[i]) {
                    // A cache that cannot be written costs speed, not correctness.
                    if let Err(e) = self.store(&mut state, keys[i], &vector) {
                        tracing::warn!(file = %self.file.display(), error = %e, "cannot store an embedding");
                    }
                    state.vectors.insert(keys[i], vector.clone());
                }
                found[i] = Some(vector);
            }
            for (slot, key) in found.iter_mut().zip(&keys) {
                if slot.is_none() {
                    *slot = state.vectors.get(key).cloned();
                }
            }
            if let Some(writer) = state.writer.as_mut() {
                let _ = writer.flush();
            }
        }
        Ok(found.into_iter().map(|v| v.unwrap_or_default()).collect())
    }
}
