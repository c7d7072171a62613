//! The one ingest loop both stores run: documents deduplicated by id, the embedder checked, the
//! average length measured once, the BM25 encoder built, then batch by batch the stored hashes
//! read, only new or changed documents embedded and written. A store supplies its own I/O through
//! [`PointStore`].

use std::collections::{HashMap, HashSet};
use std::path::Path;

use ferret_core::{Access, EmbedError, Embedder};
use qdrant_edge::bm25_embed::EdgeBm25;

use crate::{
    bm25_encoder, changed_points, mean_token_count, point_id, stream_path, unique_by_id,
    Bm25Params, Document, DocumentStream, IngestIssue, IngestOptions, IngestReport, PendingPoint,
};

/// What the ingest loop needs of a store: its settings, its stored hashes, its writes.
#[async_trait::async_trait]
pub trait PointStore: Send {
    /// What a failed read, write or embedding becomes.
    type Error: From<EmbedError> + Send;

    /// The BM25 parameters; `avg_doc_len` is `None` until the first ingest measures it.
    fn bm25(&self) -> Bm25Params;

    /// The embedder that writes the store's dense vectors, when it holds any.
    fn embedder(&self) -> Option<&dyn Embedder>;

    /// Fail when the store holds dense vectors and has no embedder for them.
    fn check_embedder(&self) -> Result<(), Self::Error>;

    /// The error for BM25 parameters the encoder refuses.
    fn encoder_error(&self, reason: String) -> Self::Error;

    /// The error for a file or folder that cannot be read.
    fn input_error(&self, path: &Path, source: std::io::Error) -> Self::Error;

    /// Delete the documents read from `source` whose ids are not in `kept`, only those
    /// `writer` may read when there is one; returns how many.
    async fn remove_stale(
        &mut self,
        source: &str,
        kept: &HashSet<String>,
        writer: Option<&Access>,
    ) -> Result<usize, Self::Error>;

    /// Of the stored documents `ids`, those `access` may read, by the lists stored now.
    async fn readable_ids(
        &mut self,
        ids: &[String],
        access: &Access,
    ) -> Result<HashSet<String>, Self::Error>;

    /// Record the average document length the first ingest measured.
    async fn set_avg_doc_len(&mut self, avg_doc_len: f64) -> Result<(), Self::Error>;

    /// The content hashes stored for `ids`, by point id.
    async fn stored_hashes(&mut self, ids: &[u64]) -> Result<HashMap<u64, String>, Self::Error>;

    /// Write `points`, their sparse vectors encoded with `encoder`.
    async fn upsert(
        &mut self,
        points: Vec<PendingPoint<'_>>,
        encoder: &EdgeBm25,
    ) -> Result<(), Self::Error>;

    /// Make what was written durable before the ingest reports it.
    async fn flush(&mut self) -> Result<(), Self::Error>;
}

/// Ingest a file or a folder into `store`: `.jsonl` files as records, `.md` / `.txt` files as
/// chunked text, folders walked recursively (other files in them skipped). A text file's chunks
/// are replaced whole: what the file no longer yields is deleted.
pub async fn ingest_path<S: PointStore>(
    store: &mut S,
    path: &Path,
    options: IngestOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<IngestReport, S::Error> {
    let found = stream_path(path, options.max_chunk_chars)
        .map_err(|source| store.input_error(path, source))?;
    ingest_read(store, found, options, progress).await
}

/// Ingest documents being read ([`stream_path`]) or already read (sent: see
/// [`PathDocuments::add_upload`](crate::PathDocuments::add_upload)); the report carries what reading them found wrong.
pub async fn ingest_read<S: PointStore>(
    store: &mut S,
    found: impl Into<DocumentStream>,
    options: IngestOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<IngestReport, S::Error> {
    let mut found: DocumentStream = found.into();
    let mut report = IngestReport::default();
    let writer = found.writer().cloned();
    let documents = found.by_ref();
    ingest_batches(
        store,
        documents,
        options,
        &mut report,
        progress,
        writer.as_ref(),
    )
    .await?;
    report.files = found.files;
    // What reading found wrong comes first, then what writing refused.
    let refused = std::mem::take(&mut report.issues);
    report.issues = std::mem::take(&mut found.issues);
    report.issues.extend(refused);
    for (source, kept) in found.text_sources {
        report.removed += store.remove_stale(&source, &kept, writer.as_ref()).await?;
    }
    Ok(report)
}

/// Ingest `documents` into `store`: only new or changed documents are embedded and written,
/// `report` counts each, and `progress(done, total)` is called after each commit (see
/// [`IngestOptions::commit_every`]), `done` counting the documents that a process killed from
/// then on keeps (`total` is what the input says it holds; an input that cannot tell grows it as
/// it goes). A re-run skips what was kept, unchanged, and writes the rest.
///
/// The input is read as a stream: the BM25 encoder needs the corpus's average document length
/// before the first write, so a store that has none yet takes it from the first
/// [`IngestOptions::average_sample`] documents, and after them the input flows through one batch
/// at a time. A corpus larger than memory can be ingested from an iterator that reads it lazily.
/// Within those first documents, and within each later batch, a repeated id is written once and
/// the later record wins; a record repeating an id from an earlier batch rewrites it (counted as
/// updated or unchanged), so the later record still wins.
pub async fn ingest_documents<S: PointStore>(
    store: &mut S,
    documents: impl IntoIterator<Item = Document>,
    options: IngestOptions,
    report: &mut IngestReport,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(), S::Error> {
    ingest_batches(store, documents, options, report, progress, None).await
}

/// [`ingest_documents`], for `writer` when there is one: a stored document they may not read is
/// not replaced, and is named in `report.issues` in the same words whatever it holds.
async fn ingest_batches<S: PointStore>(
    store: &mut S,
    documents: impl IntoIterator<Item = Document>,
    options: IngestOptions,
    report: &mut IngestReport,
    progress: &mut (dyn FnMut(usize, usize) + Send),
    writer: Option<&Access>,
) -> Result<(), S::Error> {
    let mut input = documents.into_iter();
    let first = unique_by_id(input.by_ref().take(options.average_sample.max(1)).collect());
    if first.is_empty() {
        return Ok(());
    }
    store.check_embedder()?;
    if store.bm25().avg_doc_len.is_none() {
        store.set_avg_doc_len(mean_token_count(&first)).await?;
    }
    let encoder = bm25_encoder(store.bm25()).map_err(|e| store.encoder_error(e))?;
    let batch_size = options.batch_size.max(1);
    let (at_least, at_most) = input.size_hint();
    let mut total = first.len() + at_most.unwrap_or(at_least);
    let mut first = first.into_iter();
    let mut done = 0;
    let mut unflushed = false;
    let mut reported = 0;
    let mut last_commit = std::time::Instant::now();
    let outcome = async {
        loop {
            let mut batch: Vec<Document> = first.by_ref().take(batch_size).collect();
            if batch.len() < batch_size {
                batch.extend(input.by_ref().take(batch_size - batch.len()));
                batch = unique_by_id(batch);
            }
            if batch.is_empty() {
                return Ok(());
            }
            let ids: Vec<u64> = batch.iter().map(|d| point_id(&d.id)).collect();
            let stored = store.stored_hashes(&ids).await?;
            if let Some(writer) = writer {
                keep_replaceable(store, &mut batch, &stored, writer, report).await?;
            }
            let changed = changed_points(&batch, &stored, store.embedder(), report).await?;
            if !changed.is_empty() {
                store.upsert(changed, &encoder).await?;
                unflushed = true;
            }
            done += batch.len();
            total = total.max(done);
            if last_commit.elapsed() >= options.commit_every {
                if unflushed {
                    store.flush().await?;
                    unflushed = false;
                }
                last_commit = std::time::Instant::now();
                reported = done;
                progress(done, total);
            }
        }
    }
    .await;
    // Batches written before a failure stay written: they are made durable as well.
    if unflushed {
        store.flush().await?;
    }
    // The input's count was an upper bound (blank and skipped lines hold no document): at the
    // end, what it held is known.
    if outcome.is_ok() && (reported < done || total > done) {
        progress(done, done);
    }
    outcome
}

/// Take out of `batch` the documents whose id is stored and not readable by `writer`, each
/// named in `report.issues`: an ingest may replace only what its writer may read.
async fn keep_replaceable<S: PointStore>(
    store: &mut S,
    batch: &mut Vec<Document>,
    stored: &HashMap<u64, String>,
    writer: &Access,
    report: &mut IngestReport,
) -> Result<(), S::Error> {
    let taken: Vec<String> = batch
        .iter()
        .filter(|d| stored.contains_key(&point_id(&d.id)))
        .map(|d| d.id.clone())
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    let readable = store.readable_ids(&taken, writer).await?;
    batch.retain(|d| {
        let refused = taken.contains(&d.id) && !readable.contains(&d.id);
        if refused {
            report.issues.push(IngestIssue {
                file: d.source.clone().into(),
                line: None,
                message: format!(
                    "`{}` was not written: this writer may not replace a document of that id",
                    d.id
                ),
            });
        }
        !refused
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store in memory: what it holds, by point id, and what each call did.
    #[derive(Default)]
    struct Memory {
        hashes: HashMap<u64, String>,
        avg_doc_len: Option<f64>,
        upserts: usize,
        flushes: usize,
        /// Upserts that succeed before every later one fails.
        fail_after: Option<usize>,
    }

    #[async_trait::async_trait]
    impl PointStore for Memory {
        type Error = EmbedError;
        fn bm25(&self) -> Bm25Params {
            Bm25Params {
                avg_doc_len: self.avg_doc_len,
                ..Bm25Params::default()
            }
        }
        fn embedder(&self) -> Option<&dyn Embedder> {
            None
        }
        fn check_embedder(&self) -> Result<(), EmbedError> {
            Ok(())
        }
        fn encoder_error(&self, reason: String) -> EmbedError {
            EmbedError {
                message: reason,
                retry: ferret_core::RetryClass::Permanent,
            }
        }
        fn input_error(&self, path: &Path, source: std::io::Error) -> EmbedError {
            self.encoder_error(format!("{}: {source}", path.display()))
        }
        async fn remove_stale(
            &mut self,
            _source: &str,
            _kept: &HashSet<String>,
            _writer: Option<&Access>,
        ) -> Result<usize, EmbedError> {
            Ok(0)
        }
        async fn readable_ids(
            &mut self,
            ids: &[String],
            _access: &Access,
        ) -> Result<HashSet<String>, EmbedError> {
            // Documents whose id starts with `secret` are the ones the writer may not read.
            Ok(ids
                .iter()
                .filter(|id| !id.starts_with("secret"))
                .cloned()
                .collect())
        }
        async fn set_avg_doc_len(&mut self, avg_doc_len: f64) -> Result<(), EmbedError> {
            self.avg_doc_len = Some(avg_doc_len);
            Ok(())
        }
        async fn stored_hashes(&mut self, ids: &[u64]) -> Result<HashMap<u64, String>, EmbedError> {
            Ok(ids
                .iter()
                .filter_map(|id| self.hashes.get(id).map(|h| (*id, h.clone())))
                .collect())
        }
        async fn upsert(
            &mut self,
            points: Vec<PendingPoint<'_>>,
            _encoder: &EdgeBm25,
        ) -> Result<(), EmbedError> {
            if self.fail_after.is_some_and(|n| self.upserts >= n) {
                return Err(self.encoder_error("the disk is full".into()));
            }
            self.upserts += 1;
            for point in points {
                self.hashes.insert(point.id, point.hash);
            }
            Ok(())
        }
        async fn flush(&mut self) -> Result<(), EmbedError> {
            self.flushes += 1;
            Ok(())
        }
    }

    fn doc(id: &str, text: &str) -> Document {
        Document {
            metadata: serde_json::Map::new(),
            acl: None,
            id: id.into(),
            title: String::new(),
            text: text.into(),
            url: None,
            source: "notes.jsonl".into(),
            date: None,
        }
    }

    #[tokio::test]
    async fn a_writer_replaces_only_what_it_may_read_and_gives_only_its_own_groups() {
        let mut store = Memory::default();
        let options = IngestOptions::default();
        let seeded = vec![doc("secret-memo", "legal text"), doc("notes", "old notes")];
        ingest_documents(
            &mut store,
            seeded,
            options,
            &mut IngestReport::default(),
            &mut |_, _| {},
        )
        .await
        .unwrap();
        let lines = concat!(
            r#"{"id": "secret-memo", "text": "overwritten"}"#,
            "\n",
            r#"{"id": "notes", "text": "new notes"}"#,
            "\n",
            r#"{"id": "fresh", "text": "a new page"}"#,
            "\n",
            r#"{"id": "widened", "text": "for legal", "acl": ["legal"]}"#,
            "\n",
        );
        let mut sent = crate::PathDocuments::default();
        sent.add_upload("sent.jsonl", lines.as_bytes(), options.max_chunk_chars);
        let writer = Access::new(["finance"], ferret_core::Unlisted::Public);
        let stream = DocumentStream::from(sent).written_by(writer);
        let report = ingest_read(&mut store, stream, options, &mut |_, _| {})
            .await
            .unwrap();
        assert_eq!((report.added, report.updated), (1, 1), "{report:?}");
        let refused: Vec<String> = report.issues.iter().map(ToString::to_string).collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].contains("`widened`") && refused[0].contains("`legal`"));
        assert!(refused[1].contains("`secret-memo`") && !refused[1].contains("legal"));
        let original = doc("secret-memo", "legal text").content_hash();
        assert_eq!(
            store.hashes[&point_id("secret-memo")],
            original,
            "not replaced"
        );
    }

    #[tokio::test]
    async fn batches_written_before_a_failure_are_made_durable() {
        let mut store = Memory {
            fail_after: Some(1),
            ..Memory::default()
        };
        let options = IngestOptions {
            batch_size: 1,
            ..IngestOptions::default()
        };
        let outcome = ingest_documents(
            &mut store,
            vec![doc("a", "one"), doc("b", "two")],
            options,
            &mut IngestReport::default(),
            &mut |_, _| {},
        )
        .await;
        assert!(outcome.is_err(), "the failure is reported");
        assert_eq!(
            (store.upserts, store.flushes),
            (1, 1),
            "the first batch is flushed"
        );
    }

    #[tokio::test]
    async fn progress_counts_only_committed_documents() {
        // Every batch committed: each is flushed, then reported. Committed rarely: nothing is
        // reported before the one commit at the end.
        for (commit_every, flushes, reported) in [
            (std::time::Duration::ZERO, 3, vec![1, 2, 3]),
            (std::time::Duration::from_secs(3600), 1, vec![3]),
        ] {
            let mut store = Memory::default();
            let mut reports = Vec::new();
            let options = IngestOptions {
                batch_size: 1,
                commit_every,
                ..IngestOptions::default()
            };
            ingest_documents(
                &mut store,
                vec![doc("a", "one"), doc("b", "two"), doc("c", "three")],
                options,
                &mut IngestReport::default(),
                &mut |done, _| reports.push(done),
            )
            .await
            .unwrap();
            assert_eq!((store.flushes, reports), (flushes, reported));
        }
    }

    #[tokio::test]
    async fn only_new_or_changed_documents_are_written_and_a_second_run_writes_nothing() {
        let mut store = Memory::default();
        let mut report = IngestReport::default();
        let options = IngestOptions {
            batch_size: 2,
            ..IngestOptions::default()
        };
        let mut batches = Vec::new();
        let documents = vec![
            doc("a", "one two"),
            doc("b", "three"),
            doc("a", "one two four"),
            doc("c", "five"),
        ];
        ingest_documents(
            &mut store,
            documents,
            options,
            &mut report,
            &mut |done, total| batches.push((done, total)),
        )
        .await
        .unwrap();
        assert_eq!(
            report.added, 3,
            "a duplicate id counts once, the later one wins"
        );
        assert_eq!(batches, [(2, 3), (3, 3)]);
        assert_eq!(
            (store.upserts, store.flushes),
            (2, 2),
            "each batch that wrote is committed"
        );
        assert!(store.avg_doc_len.is_some(), "measured on the first ingest");

        let mut again = IngestReport::default();
        let documents = vec![
            doc("a", "one two four"),
            doc("b", "three, changed"),
            doc("c", "five"),
        ];
        ingest_documents(&mut store, documents, options, &mut again, &mut |_, _| {})
            .await
            .unwrap();
        assert_eq!((again.unchanged, again.updated, again.added), (2, 1, 0));
        assert_eq!((store.upserts, store.flushes), (3, 3));
    }

    #[tokio::test]
    async fn a_stream_is_measured_on_its_first_documents_and_written_batch_by_batch() {
        let mut store = Memory::default();
        let mut report = IngestReport::default();
        let options = IngestOptions {
            batch_size: 2,
            average_sample: 3,
            ..IngestOptions::default()
        };
        let mut batches = Vec::new();
        // A lazy input that cannot tell its length; "b" repeats after its batch was written.
        let records = [
            ("a", "alpha words"),
            ("b", "beta words"),
            ("c", "gamma words"),
            ("d", "delta has many more words than the others"),
            ("b", "beta words"),
            ("e", "epsilon too has many more words than the first"),
        ];
        let first_three: Vec<Document> = records[..3].iter().map(|(i, t)| doc(i, t)).collect();
        let documents = records
            .into_iter()
            .map(|(id, text)| doc(id, text))
            .filter(|_| true);
        ingest_documents(
            &mut store,
            documents,
            options,
            &mut report,
            &mut |done, total| batches.push((done, total)),
        )
        .await
        .unwrap();
        assert_eq!(store.hashes.len(), 5, "every id is stored once");
        assert_eq!((report.added, report.unchanged), (5, 1));
        assert_eq!(
            store.upserts, 3,
            "the repeat of b was unchanged: nothing written"
        );
        assert_eq!(batches.iter().map(|b| b.0).collect::<Vec<_>>(), [2, 4, 6]);
        assert!(batches.iter().all(|(done, total)| done <= total));
        assert_eq!(
            store.avg_doc_len,
            Some(mean_token_count(&first_three)),
            "measured on the first three documents"
        );
    }
}
