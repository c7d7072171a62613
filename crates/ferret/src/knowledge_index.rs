//! The indexes as the Documentalist's knowledge index: the embedded one in a folder, or a
//! collection on a Qdrant server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferret_backends_local::{
    checked_acl, read_path, IndexError, IngestOptions, IngestReport, LocalIndex, PathDocuments,
};
use ferret_backends_qdrant::{backend_error, QdrantIndex};
use ferret_core::FerretError;
use ferret_knowledge::{content_hash, DocumentalistError, KnowledgeIndex, KnowledgeRegistry};

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

    /// The groups that may read what is ingested, for documents that do not list their own;
    /// an empty or blank list is refused (see [`checked_acl`](crate::checked_acl)).
    pub fn with_default_acl(mut self, acl: Vec<String>) -> Result<Self, FerretError> {
        self.acl = Some(checked_acl(acl).map_err(FerretError::Config)?);
        Ok(self)
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
            .map_err(|e| {
                // An embedder that did not answer may answer next time; a local write that
                // failed (a locked index, a file it refuses) needs someone to act.
                let retryable =
                    matches!(&e, IndexError::Embed(embed) if embed.retry.is_retryable());
                index_error(self.name(), path, e.to_string(), retryable)
            })
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

    /// The groups that may read what is ingested, for documents that do not list their own;
    /// an empty or blank list is refused (see [`checked_acl`](crate::checked_acl)).
    pub fn with_default_acl(mut self, acl: Vec<String>) -> Result<Self, FerretError> {
        self.acl = Some(checked_acl(acl).map_err(FerretError::Config)?);
        Ok(self)
    }

    /// The registry of the collection `collection` on the server at `url`, which has no folder
    /// of its own: `knowledge/<collection>-<hash of url>/knowledge_db.json` in Ferret's home,
    /// so collections of one name on two servers keep two registries.
    pub fn registry_of(collection: &str, url: &str) -> KnowledgeRegistry {
        let server = content_hash(url.trim_end_matches('/').as_bytes());
        let short = server
            .trim_start_matches("sha256:")
            .get(..12)
            .unwrap_or_default();
        KnowledgeRegistry::beside(&default_knowledge_dir().join(format!("{collection}-{short}")))
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
                let message = e.to_string();
                let retryable = backend_error("qdrant", e).retry.is_retryable();
                index_error(self.name.clone(), path, message, retryable)
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
