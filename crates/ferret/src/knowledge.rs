//! The indexes as the Documentalist's knowledge index: the embedded one in a folder, or a
//! collection on a Qdrant server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret_backends_local::{read_path, IngestOptions, IngestReport, LocalIndex, PathDocuments};
use ferret_backends_qdrant::{QdrantError, QdrantIndex};
use ferret_knowledge::{DocumentalistError, KnowledgeIndex, KnowledgeRegistry};

use crate::default_corpus::ferret_home;

/// The embedded index in its folder, taking one file at a time.
#[derive(Debug, Clone)]
pub struct LocalKnowledgeIndex {
    index: Arc<LocalIndex>,
    options: IngestOptions,
    acl: Option<Vec<String>>,
}

impl LocalKnowledgeIndex {
    /// Ingest into `index` with `options` (chunk size and batch).
    pub fn new(index: Arc<LocalIndex>, options: IngestOptions) -> Self {
        Self {
            index,
            options,
            acl: None,
        }
    }

    /// The groups that may read what is ingested (checked by
    /// [`checked_acl`](crate::checked_acl)).
    pub fn with_default_acl(mut self, acl: Vec<String>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// The registry beside this index: `knowledge_db.json` in its folder.
    pub fn registry(&self) -> KnowledgeRegistry {
        KnowledgeRegistry::beside(self.index.dir())
    }
}

#[async_trait::async_trait]
impl KnowledgeIndex for LocalKnowledgeIndex {
    fn name(&self) -> String {
        // The folder as the registry's readers find it from anywhere.
        let dir = self.index.dir();
        std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_owned())
            .display()
            .to_string()
    }

    async fn ingest_file(&self, path: &Path) -> Result<IngestReport, DocumentalistError> {
        let found = read_file(path, self.options, self.acl.as_deref())
            .map_err(|e| index_error(self.name(), path, e, false))?;
        self.index
            .ingest_read(found, self.options, &mut |_, _| {})
            .await
            // A local write that failed (a full disk, a locked index) fails again until someone
            // acts on it.
            .map_err(|e| index_error(self.name(), path, e.to_string(), false))
    }
}

/// A Qdrant collection, taking one file at a time.
pub struct QdrantKnowledgeIndex {
    index: tokio::sync::Mutex<QdrantIndex>,
    name: String,
    acl: Option<Vec<String>>,
}

impl std::fmt::Debug for QdrantKnowledgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantKnowledgeIndex")
            .field("name", &self.name)
            .finish()
    }
}

impl QdrantKnowledgeIndex {
    /// Ingest into `index`, named `collection at url` in registry entries.
    pub fn new(index: QdrantIndex, collection: &str, url: &str) -> Self {
        Self {
            index: tokio::sync::Mutex::new(index),
            name: format!("collection `{collection}` at {url}"),
            acl: None,
        }
    }

    /// The groups that may read what is ingested (checked by
    /// [`checked_acl`](crate::checked_acl)).
    pub fn with_default_acl(mut self, acl: Vec<String>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// The registry of a Qdrant collection, which has no folder of its own:
    /// `knowledge/<collection>/knowledge_db.json` in Ferret's home.
    pub fn registry_of(collection: &str) -> KnowledgeRegistry {
        KnowledgeRegistry::beside(&default_knowledge_dir().join(collection))
    }
}

#[async_trait::async_trait]
impl KnowledgeIndex for QdrantKnowledgeIndex {
    fn name(&self) -> String {
        self.name.clone()
    }

    async fn ingest_file(&self, path: &Path) -> Result<IngestReport, DocumentalistError> {
        let options = IngestOptions::default();
        let found = read_file(path, options, self.acl.as_deref())
            .map_err(|e| index_error(self.name(), path, e, false))?;
        let mut index = self.index.lock().await;
        index
            .ingest_read(found, options, &mut |_, _| {})
            .await
            .map_err(|e| {
                let retryable = matches!(e, QdrantError::Unreachable { .. });
                index_error(self.name.clone(), path, e.to_string(), retryable)
            })
    }
}

/// Where the registries of Qdrant collections are kept: `knowledge/` in Ferret's home.
pub fn default_knowledge_dir() -> PathBuf {
    ferret_home().join("knowledge")
}

/// The documents of the file at `path`, readable by `acl` where they do not say.
fn read_file(
    path: &Path,
    options: IngestOptions,
    acl: Option<&[String]>,
) -> Result<PathDocuments, String> {
    let found = read_path(path, options.max_chunk_chars).map_err(|e| e.to_string())?;
    Ok(match acl {
        Some(acl) => found.with_default_acl(acl),
        None => found,
    })
}

fn index_error(index: String, path: &Path, message: String, retryable: bool) -> DocumentalistError {
    DocumentalistError::Index {
        index,
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        message,
        retryable,
    }
}
