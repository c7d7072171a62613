//! Writing the index: ingests through the shared ingest loop, holding the writer lock, and the
//! stale documents of a source removed.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::PoisonError;

use async_trait::async_trait;
use ferret_collection::{
    payload, Bm25Params, Document, DocumentStream, IngestOptions, IngestReport, PendingPoint,
    PointStore, DENSE_VECTOR, SOURCE_FIELD, SPARSE_VECTOR,
};
use ferret_core::{Access, Embedder, Filters, RetrievalMode};
use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::{
    Condition, FieldCondition, Filter, Match, MatchValue, PayloadSelector, PayloadSelectorInclude,
    PointId, PointInsertOperations, PointOperations, PointStruct, UpdateOperation, ValueVariants,
    Vectors, WithPayloadInterface,
};

use crate::error::IndexError;
use crate::index::{each_doc_id, field, LocalIndex};
use crate::seal;
use crate::search::*;

impl LocalIndex {
    /// Ingest a file or a folder: `.jsonl` files as records, `.md` / `.txt` files as chunked text.
    /// Folders are walked recursively; other files in them are skipped. `progress(done, total)` is
    /// called after each batch. Waits for an ingest already running.
    pub async fn ingest_path(
        &self,
        path: &Path,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_path(&mut Writer(self), path, options, progress).await
    }

    /// Ingest documents being read from files ([`ferret_collection::stream_path`]) or already
    /// read (sent: see [`PathDocuments::add_upload`](ferret_collection::PathDocuments::add_upload)); the report carries what reading them
    /// found wrong. Waits for an ingest already running.
    pub async fn ingest_read(
        &self,
        found: impl Into<DocumentStream> + Send,
        options: IngestOptions,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<IngestReport, IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_read(&mut Writer(self), found, options, progress).await
    }

    /// Delete the documents of `source` whose ids are not in `kept`; returns how many.
    pub(crate) fn remove_stale(
        &self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, IndexError> {
        if writer.is_some_and(Access::admits_nothing) {
            return Ok(0);
        }
        let of_source = Filter::new_must(Condition::Field(FieldCondition::new_match(
            field(SOURCE_FIELD),
            Match::Value(MatchValue {
                value: ValueVariants::String(source.to_owned()),
            }),
        )));
        // A writer removes only chunks it may read: another group's file of the same name stays.
        let readable = engine_filter(&Filters {
            access: writer.cloned(),
            ..Filters::default()
        });
        let filter = match readable {
            Some(readable) => of_source.merge_owned(readable),
            None => of_source,
        };
        let mut stale = Vec::new();
        each_doc_id(&self.shard(), Some(filter), |point, doc_id| {
            if doc_id.is_none_or(|id| !kept.contains(id)) {
                stale.push(point);
            }
        })?;
        if !stale.is_empty() {
            let removed = stale.len();
            let shard = self.shard_mut();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids: stale },
                ))
                .map_err(|e| IndexError::Engine(e.to_string()))?;
            shard.flush();
            return Ok(removed);
        }
        Ok(0)
    }

    /// Ingest documents already in memory. Only new or changed documents are embedded and
    /// written; the index is flushed before this returns, so what it reports is on disk. Waits
    /// for an ingest already running.
    pub async fn ingest_documents(
        &self,
        documents: Vec<Document>,
        options: IngestOptions,
        report: &mut IngestReport,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<(), IndexError> {
        let _writing = self.writer.lock().await;
        ferret_collection::ingest_documents(&mut Writer(self), documents, options, report, progress)
            .await
    }

    pub(crate) fn stored_hashes(
        &self,
        ids: &[PointId],
    ) -> Result<HashMap<u64, String>, IndexError> {
        let include =
            WithPayloadInterface::Selector(PayloadSelector::Include(PayloadSelectorInclude {
                include: vec![field("hash")],
            }));
        let records = self
            .shard()
            .retrieve(ids, Some(include), None)
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        Ok(records
            .into_iter()
            .filter_map(|r| {
                let hash = r.payload?.0.get("hash")?.as_str()?.to_owned();
                match r.id {
                    PointId::NumId(id) => Some((id, hash)),
                    PointId::Uuid(_) => None,
                }
            })
            .collect())
    }
}

/// The embedded index's own I/O for the shared ingest loop, while its ingest holds the writer.
pub(crate) struct Writer<'a>(&'a LocalIndex);

#[async_trait]
impl PointStore for Writer<'_> {
    type Error = IndexError;

    fn bm25(&self) -> Bm25Params {
        self.0.bm25()
    }

    fn embedder(&self) -> Option<&dyn Embedder> {
        self.0.embedder.as_deref()
    }

    fn check_embedder(&self) -> Result<(), IndexError> {
        let index = self.0;
        if index.meta.dense.is_some() && index.embedder.is_none() {
            let embedder = index.dense_embedder().unwrap_or_default().to_owned();
            return Err(IndexError::EmbedderNeeded {
                path: index.dir.clone(),
                mode: RetrievalMode::Dense,
                embedder,
            });
        }
        Ok(())
    }

    fn encoder_error(&self, reason: String) -> IndexError {
        IndexError::Engine(reason)
    }

    fn input_error(&self, path: &Path, source: std::io::Error) -> IndexError {
        IndexError::Input {
            path: path.to_owned(),
            source,
        }
    }

    async fn remove_stale(
        &mut self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, IndexError> {
        self.0.remove_stale(source, kept, writer)
    }

    async fn readable_ids(
        &mut self,
        ids: &[String],
        access: &Access,
    ) -> Result<HashSet<String>, IndexError> {
        self.0.readable(ids, access)
    }

    async fn set_avg_doc_len(&mut self, avg_doc_len: f64) -> Result<(), IndexError> {
        *self
            .0
            .avg_doc_len
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(avg_doc_len);
        self.0.save_meta()
    }

    async fn stored_hashes(&mut self, ids: &[u64]) -> Result<HashMap<u64, String>, IndexError> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::NumId(id)).collect();
        self.0.stored_hashes(&ids)
    }

    async fn upsert(
        &mut self,
        points: Vec<PendingPoint<'_>>,
        encoder: &EdgeBm25,
    ) -> Result<(), IndexError> {
        let ids: Vec<(u64, &str)> = points.iter().map(|p| (p.id, p.doc.id.as_str())).collect();
        let points = points
            .into_iter()
            .map(|p| to_point(p.doc, PointId::NumId(p.id), &p.hash, encoder, p.dense).0)
            .collect();
        let shard = self.0.shard_mut();
        shard
            .update(UpdateOperation::PointOperation(
                PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
            ))
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        self.0.note_doc_ids(ids.into_iter());
        drop(shard);
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), IndexError> {
        let index = self.0;
        let sealed = outside_the_async_workers(|| {
            index.shard_mut().flush();
            seal::seal_if_full(&index.shard(), &index.dir)
        });
        // The batches are on disk whatever the seal does: one that fails is noted, and the
        // next commit tries again.
        if let Err(error) = sealed {
            tracing::warn!(index = %index.dir.display(), %error, "a segment was not sealed");
        }
        Ok(())
    }
}

/// Run `work`, which may take seconds (a flush, a seal building segments), so that on a multi-threaded
/// tokio runtime the worker's other tasks move elsewhere meanwhile; elsewhere, just run it.
pub(crate) fn outside_the_async_workers<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

pub(crate) fn to_point(
    doc: &Document,
    id: PointId,
    hash: &str,
    encoder: &EdgeBm25,
    dense: Option<Vec<f32>>,
) -> PointStruct {
    // The title is searched with the text: BEIR's BM25 baselines index both.
    let sparse = encoder.embed_document(&format!("{}\n{}", doc.title, doc.text));
    let mut vectors = vec![(SPARSE_VECTOR, qdrant_edge::Vector::from(sparse))];
    if let Some(dense) = dense {
        vectors.push((DENSE_VECTOR, qdrant_edge::Vector::from(dense)));
    }
    PointStruct::new(
        id,
        Vectors::new_named(vectors),
        serde_json::Value::Object(payload(doc, hash)),
    )
}
