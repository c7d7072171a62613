use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use ferret_collection::{
    bm25_encoder, embedder_fit, Bm25Params, DenseMeta, Document, DocumentStream, EmbedderMisfit,
    IngestOptions, IngestReport, PendingPoint, PointStore,
};
use ferret_core::{Access, Embedder, Hit, RetrievalMode, RetryClass, SearchRequest};
use qdrant_client::qdrant::SparseVector;
use qdrant_client::Qdrant;
use qdrant_edge::bm25_embed::EdgeBm25;
use secrecy::ExposeSecret;

use crate::error::CallError;
use crate::requests::{
    collection_request, count_request, delete_request, field_index_request, hits_from,
    meta_from_info, metadata_update, missing_indexes, most_recent_request, point, query_request,
    readable_ids, readable_request, recent_hits, source_page_request, stale_points, stored_hashes,
    stored_hashes_request, upsert_request, CollectionMeta,
};
use crate::{QdrantConfig, QdrantError};

/// The oldest server that keeps collection metadata, where the collection's BM25 parameters and
/// embedder are recorded.
const MIN_SERVER: (u64, u64) = (1, 16);

/// A Ferret collection on a Qdrant server.
///
/// Reads run concurrently; writes take `&mut self` so that one process does not interleave two
/// ingests of the same collection. Nothing guards against two processes writing at once.
pub struct QdrantIndex {
    client: Qdrant,
    config: QdrantConfig,
    meta: CollectionMeta,
    query_encoder: EdgeBm25,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for QdrantIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantIndex")
            .field("url", &self.config.url)
            .field("collection", &self.config.collection)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// Run one server call, bounded by `timeout` whatever the client does (it may reconnect and
/// retry once inside a call).
async fn bounded<T>(
    timeout: std::time::Duration,
    call: impl Future<Output = Result<T, qdrant_client::QdrantError>>,
) -> Result<T, CallError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result.map_err(CallError::Client),
        Err(_) => Err(CallError::TimedOut(timeout)),
    }
}

impl QdrantIndex {
    /// Open the collection `config` names, which must exist. With an embedder, the collection
    /// must hold dense vectors made by an embedder of the same name and dimension.
    pub async fn connect(
        config: QdrantConfig,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Self, QdrantError> {
        Self::open(config, embedder, false).await
    }

    /// Open the collection `config` names, creating an empty one if the server holds none. A new
    /// collection made with an embedder holds dense vectors of its dimension beside the BM25 ones.
    pub async fn connect_or_create(
        config: QdrantConfig,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<Self, QdrantError> {
        Self::open(config, embedder, true).await
    }

    async fn open(
        config: QdrantConfig,
        embedder: Option<Arc<dyn Embedder>>,
        create: bool,
    ) -> Result<Self, QdrantError> {
        let (url, name, timeout) = (
            config.url.clone(),
            config.collection.clone(),
            config.timeout,
        );
        let server_error = |e: CallError| e.into_error(&url, &name);
        // The client connects lazily and, left to itself, checks the server's version with a
        // blocking call that prints to stdout: that check is done here instead, bounded.
        let client = Qdrant::from_url(&url)
            .api_key(
                config
                    .api_key
                    .as_ref()
                    .map(|k| k.expose_secret().to_owned()),
            )
            .timeout(timeout)
            .connect_timeout(timeout)
            .skip_compatibility_check()
            .build()
            .map_err(|e| QdrantError::Unreachable {
                url: url.clone(),
                reason: format!("not a usable gRPC URL: {e}"),
            })?;
        let health = bounded(timeout, client.health_check())
            .await
            .map_err(|e| e.into_connect_error(&url, &name))?;
        check_version(&url, &health.version)?;

        let exists = bounded(timeout, client.collection_exists(&name))
            .await
            .map_err(server_error)?;
        if !exists {
            if !create {
                return Err(QdrantError::MissingCollection {
                    collection: name,
                    url,
                });
            }
            let dense = embedder.as_deref().map(DenseMeta::of);
            match bounded(
                timeout,
                client.create_collection(collection_request(&name, &CollectionMeta::new(dense))),
            )
            .await
            {
                // Another process created it meanwhile: it is validated below like any other.
                Err(e) if e.is_already_exists() => {}
                other => {
                    other.map_err(server_error)?;
                    tracing::info!(url = %url, collection = %name, "created Qdrant collection");
                }
            }
        }
        let info = bounded(timeout, client.collection_info(&name))
            .await
            .map_err(server_error)?
            .result
            .ok_or_else(|| QdrantError::IncompatibleSchema {
                collection: name.clone(),
                reason: "the server returned no description of it".into(),
            })?;
        let meta = meta_from_info(&name, &info)?;
        // Checked before anything is written: a mismatched embedder must not touch the collection.
        check_embedder(&name, meta.dense.as_ref(), embedder.as_deref())?;
        if create {
            for (field, field_type) in missing_indexes(&name, &info)? {
                bounded(
                    timeout,
                    client.create_field_index(field_index_request(&name, field, field_type)),
                )
                .await
                .map_err(server_error)?;
            }
        }
        let query_encoder = bm25_encoder(Bm25Params {
            avg_doc_len: Some(1.0),
            ..meta.bm25()
        })
        .map_err(|e| QdrantError::IncompatibleSchema {
            collection: name.clone(),
            reason: format!("BM25 parameters: {e}"),
        })?;
        Ok(Self {
            client,
            config,
            meta,
            query_encoder,
            embedder,
        })
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.config.collection
    }

    /// The server's address.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// The embedder the collection's dense vectors came from, when it has them.
    pub fn dense_embedder(&self) -> Option<&str> {
        self.meta.dense.as_ref().map(|d| d.embedder.as_str())
    }

    /// Whether `mode` can run on this collection as opened: dense and hybrid need dense vectors
    /// and the embedder that made them.
    pub fn supports(&self, mode: RetrievalMode) -> Result<(), QdrantError> {
        if !mode.needs_embeddings() {
            return Ok(());
        }
        let collection = self.config.collection.clone();
        match (&self.meta.dense, &self.embedder) {
            (None, _) => Err(QdrantError::NoDenseVectors { collection, mode }),
            (Some(dense), None) => Err(QdrantError::EmbedderNeeded {
                collection,
                mode,
                embedder: dense.embedder.clone(),
            }),
            (Some(_), Some(_)) => Ok(()),
        }
    }

    fn server_error(&self) -> impl Fn(CallError) -> QdrantError + '_ {
        |e| e.into_error(&self.config.url, &self.config.collection)
    }

    /// Documents in the collection, counted exactly.
    pub async fn len(&self) -> Result<usize, QdrantError> {
        let response = bounded(
            self.config.timeout,
            self.client.count(count_request(&self.config.collection)),
        )
        .await
        .map_err(self.server_error())?;
        let count = response.result.map_or(0, |r| r.count);
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// True when nothing has been ingested.
    pub async fn is_empty(&self) -> Result<bool, QdrantError> {
        Ok(self.len().await? == 0)
    }

    /// Ingest a file or a folder: `.jsonl` files as records, `.md` / `.txt` files as chunked text.
    /// Folders are walked recursively; other files in them are skipped. `progress(done, total)` is
    /// called after each batch.
    pub async fn ingest_path(
        &mut self,
        path: &Path,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, QdrantError> {
        ferret_collection::ingest_path(self, path, options, progress).await
    }

    /// Ingest documents being read from files ([`ferret_collection::stream_path`]) or already
    /// read (sent: see [`PathDocuments::add_upload`](ferret_collection::PathDocuments::add_upload)); the report carries what reading them
    /// found wrong.
    pub async fn ingest_read(
        &mut self,
        found: impl Into<DocumentStream> + Send,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, QdrantError> {
        ferret_collection::ingest_read(self, found, options, progress).await
    }

    /// Delete the documents of `source` whose ids are not in `kept`, only those `writer` may
    /// read when there is one; returns how many.
    async fn remove_stale(
        &mut self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, QdrantError> {
        let (collection, timeout) = (&self.config.collection, self.config.timeout);
        let mut stale = Vec::new();
        let mut offset = None;
        loop {
            let Some(request) = source_page_request(collection, source, writer, offset) else {
                return Ok(0);
            };
            let page = bounded(timeout, self.client.scroll(request))
                .await
                .map_err(self.server_error())?;
            stale.extend(stale_points(page.result, kept));
            match page.next_page_offset {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
        if stale.is_empty() {
            return Ok(0);
        }
        let removed = stale.len();
        bounded(
            timeout,
            self.client.delete_points(delete_request(collection, stale)),
        )
        .await
        .map_err(self.server_error())?;
        Ok(removed)
    }

    /// Ingest documents already in memory. Only new or changed documents are embedded and
    /// written; every write is applied on the server before this returns.
    pub async fn ingest_documents(
        &mut self,
        documents: Vec<Document>,
        options: IngestOptions,
        report: &mut IngestReport,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<(), QdrantError> {
        ferret_collection::ingest_documents(self, documents, options, report, progress).await
    }

    /// Of `ids`, those the collection holds and `access` lets the asker read, by the lists
    /// stored now.
    pub async fn readable(
        &self,
        ids: &[String],
        access: &Access,
    ) -> Result<HashSet<String>, QdrantError> {
        let Some(scroll) = readable_request(&self.config.collection, ids, access) else {
            return Ok(HashSet::new());
        };
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        let page = bounded(self.config.timeout, self.client.scroll(scroll))
            .await
            .map_err(self.server_error())?;
        Ok(readable_ids(page.result, ids))
    }

    /// Run one search: `mode` ranks, `backend_name` is written into each hit.
    pub async fn search(
        &self,
        request: &SearchRequest,
        mode: RetrievalMode,
        backend_name: &str,
    ) -> Result<Vec<Hit>, QdrantError> {
        let (collection, timeout) = (&self.config.collection, self.config.timeout);
        let admits_nothing = request
            .filters
            .access
            .as_ref()
            .is_some_and(Access::admits_nothing);
        if request.limit == 0 || admits_nothing {
            return Ok(Vec::new());
        }
        if let Some(n) = request.filters.most_recent {
            if n == 0 {
                return Ok(Vec::new());
            }
            let Some(scroll) = most_recent_request(collection, request) else {
                return Ok(Vec::new());
            };
            let page = bounded(timeout, self.client.scroll(scroll))
                .await
                .map_err(self.server_error())?;
            return Ok(recent_hits(page.result, backend_name));
        }
        self.supports(mode)?;
        let sparse = (mode != RetrievalMode::Dense).then(|| {
            let vector = self.query_encoder.embed_query(&request.query);
            SparseVector {
                indices: vector.indices,
                values: vector.values,
            }
        });
        let dense = match &self.embedder {
            Some(embedder) if mode.needs_embeddings() => embedder
                .embed(std::slice::from_ref(&request.query))
                .await?
                .pop(),
            _ => None,
        };
        if mode.needs_embeddings() && dense.is_none() {
            return Err(QdrantError::Embed(ferret_core::EmbedError {
                message: "the embedder returned no vector for the query".into(),
                retry: RetryClass::Permanent,
            }));
        }
        let Some(query) = query_request(collection, request, mode, sparse, dense) else {
            return Ok(Vec::new());
        };
        let response = bounded(timeout, self.client.query(query))
            .await
            .map_err(self.server_error())?;
        Ok(hits_from(response.result, backend_name, request.limit))
    }
}

/// Servers before 1.16 drop collection metadata; a version that does not parse is let through.
fn check_version(url: &str, version: &str) -> Result<(), QdrantError> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>());
    if let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) {
        if (major, minor) < MIN_SERVER {
            return Err(QdrantError::Server {
                url: url.to_owned(),
                message: format!(
                    "Qdrant {version} is too old: Ferret needs {}.{} or later, which keeps collection metadata",
                    MIN_SERVER.0, MIN_SERVER.1
                ),
                retry: RetryClass::Permanent,
            });
        }
    }
    Ok(())
}

/// An embedder may open a collection only if it made the collection's vectors.
fn check_embedder(
    collection: &str,
    dense: Option<&DenseMeta>,
    embedder: Option<&dyn Embedder>,
) -> Result<(), QdrantError> {
    embedder_fit(dense, embedder).map_err(|misfit| match misfit {
        EmbedderMisfit::NoDenseVectors => QdrantError::NoDenseVectors {
            collection: collection.to_owned(),
            mode: RetrievalMode::Dense,
        },
        EmbedderMisfit::Mismatch { stored, offered } => QdrantError::EmbedderMismatch {
            collection: collection.to_owned(),
            index_embedder: stored.embedder,
            index_dimension: stored.dimension,
            embedder: offered.embedder,
            embedder_dimension: offered.dimension,
        },
    })
}

/// The Qdrant server's own I/O for the shared ingest loop. Writes wait for the server to apply
/// them, so there is nothing to flush.
#[async_trait::async_trait]
impl PointStore for QdrantIndex {
    type Error = QdrantError;

    fn bm25(&self) -> Bm25Params {
        self.meta.bm25()
    }

    fn embedder(&self) -> Option<&dyn Embedder> {
        self.embedder
            .as_deref()
            .filter(|_| self.meta.dense.is_some())
    }

    fn check_embedder(&self) -> Result<(), QdrantError> {
        match (&self.meta.dense, &self.embedder) {
            (Some(dense), None) => Err(QdrantError::EmbedderNeeded {
                collection: self.config.collection.clone(),
                mode: RetrievalMode::Dense,
                embedder: dense.embedder.clone(),
            }),
            _ => Ok(()),
        }
    }

    fn input_error(&self, path: &Path, source: std::io::Error) -> QdrantError {
        QdrantError::Input {
            path: path.to_owned(),
            source,
        }
    }

    async fn remove_stale(
        &mut self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, QdrantError> {
        QdrantIndex::remove_stale(self, source, kept, writer).await
    }

    async fn readable_ids(
        &mut self,
        ids: &[String],
        access: &Access,
    ) -> Result<HashSet<String>, QdrantError> {
        self.readable(ids, access).await
    }

    fn encoder_error(&self, reason: String) -> QdrantError {
        QdrantError::IncompatibleSchema {
            collection: self.config.collection.clone(),
            reason: format!("BM25 parameters: {reason}"),
        }
    }

    async fn set_avg_doc_len(&mut self, avg_doc_len: f64) -> Result<(), QdrantError> {
        let mut meta = self.meta.clone();
        meta.avg_doc_len = Some(avg_doc_len);
        bounded(
            self.config.timeout,
            self.client
                .update_collection(metadata_update(&self.config.collection, &meta)),
        )
        .await
        .map_err(self.server_error())?;
        self.meta = meta;
        Ok(())
    }

    async fn stored_hashes(&mut self, ids: &[u64]) -> Result<HashMap<u64, String>, QdrantError> {
        let stored = bounded(
            self.config.timeout,
            self.client
                .get_points(stored_hashes_request(&self.config.collection, ids)),
        )
        .await
        .map_err(self.server_error())?;
        Ok(stored_hashes(stored.result))
    }

    async fn upsert(
        &mut self,
        points: Vec<PendingPoint<'_>>,
        encoder: &EdgeBm25,
    ) -> Result<(), QdrantError> {
        let points = points
            .into_iter()
            .map(|p| point(p.doc, p.id, &p.hash, encoder, p.dense))
            .collect();
        bounded(
            self.config.timeout,
            self.client
                .upsert_points(upsert_request(&self.config.collection, points)),
        )
        .await
        .map_err(self.server_error())?;
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), QdrantError> {
        Ok(())
    }
}
