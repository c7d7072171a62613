//! Against a real Qdrant server, when `QDRANT_URL` names one (its gRPC port, e.g.
//! `QDRANT_URL=http://localhost:6334`); skipped otherwise. Each test uses a collection of its own
//! and deletes it at the end.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::NaiveDate;
use ferret_backends_qdrant::{
    IngestOptions, IngestReport, QdrantBackend, QdrantConfig, QdrantError, QdrantIndex,
};
use ferret_core::{
    Access, DateRange, Embedder, Filters, RetrievalMode, SearchBackend, SearchRequest, Unlisted,
};

const JOURNAL: &str = r#"{"id":"j1","title":"Garden","text":"Planted tomatoes and basil in the garden.","date":"2024-03-02"}
{"id":"j2","title":"Run","text":"Ran ten kilometres along the river, legs tired.","date":"2024-05-10"}
{"id":"j3","title":"Garden again","text":"The tomatoes are flowering; watered the garden twice.","date":"2024-06-21"}
{"id":"j4","title":"Undated","text":"A note about gardening with no date."}
"#;

/// A collection of its own on the server, deleted when dropped (even when the test fails).
struct Scratch {
    url: String,
    name: String,
}

impl Scratch {
    fn new(test: &str) -> Option<Self> {
        let Ok(url) = std::env::var("QDRANT_URL") else {
            eprintln!("skipped: QDRANT_URL is not set");
            return None;
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Some(Self {
            url,
            name: format!("ferret-test-{test}-{}-{nanos}", std::process::id()),
        })
    }

    fn config(&self) -> QdrantConfig {
        let config = QdrantConfig::new(&self.url, &self.name);
        match std::env::var("QDRANT_API_KEY") {
            Ok(key) => config.api_key(key),
            Err(_) => config,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        let api_key = std::env::var("QDRANT_API_KEY").ok();
        // Drop cannot await, and may run inside the test's runtime: a thread of its own.
        let _ = std::thread::spawn(move || {
            let client = qdrant_client::Qdrant::from_url(&url)
                .api_key(api_key)
                .skip_compatibility_check()
                .build()
                .ok()?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(client.delete_collection(name)).ok()
        })
        .join();
    }
}

/// A toy embedder: each word adds weight to one of `dimension` slots, so texts sharing words are near.
struct WordHash {
    name: &'static str,
    dimension: usize,
    calls: AtomicUsize,
}

impl WordHash {
    fn new(name: &'static str, dimension: usize) -> Arc<Self> {
        Arc::new(Self {
            name,
            dimension,
            calls: AtomicUsize::new(0),
        })
    }
}

#[async_trait::async_trait]
impl Embedder for WordHash {
    fn name(&self) -> &str {
        self.name
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ferret_core::EmbedError> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; self.dimension];
                for word in t
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 3)
                {
                    let slot = word
                        .bytes()
                        .fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize))
                        % self.dimension;
                    v[slot] += 1.0;
                }
                v
            })
            .collect())
    }
}

async fn ingest(index: &mut QdrantIndex, path: &Path) -> IngestReport {
    index
        .ingest_path(path, IngestOptions::default(), &mut |_, _| {})
        .await
        .unwrap()
}

fn request(query: &str, filters: Filters) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        limit: 10,
        filters,
        options: Default::default(),
        text_for: None,
    }
}

async fn ids(
    index: &QdrantIndex,
    mode: RetrievalMode,
    query: &str,
    filters: Filters,
) -> Vec<String> {
    index
        .search(&request(query, filters), mode, "qdrant")
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.id.0)
        .collect()
}

fn day(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

#[tokio::test]
async fn a_journal_is_searched_by_keywords_meaning_and_both_with_filters() {
    let Some(scratch) = Scratch::new("journal") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("journal.jsonl");
    std::fs::write(&file, JOURNAL).unwrap();
    let embedder = WordHash::new("word-hash", 16);
    let mut index = QdrantIndex::connect_or_create(scratch.config(), Some(embedder.clone()))
        .await
        .unwrap();
    let report = ingest(&mut index, &file).await;
    assert_eq!(
        (report.added, report.embedded, report.issues.len()),
        (4, 4, 0)
    );
    assert_eq!(index.len().await.unwrap(), 4);

    // BM25: stemmed terms, the better match first, stop words match nothing.
    let found = ids(
        &index,
        RetrievalMode::Bm25,
        "watering the tomato garden",
        Filters::default(),
    )
    .await;
    assert_eq!(found.first().map(String::as_str), Some("j3"), "{found:?}");
    assert!(!found.contains(&"j2".to_owned()), "no shared term, no hit");
    assert!(ids(
        &index,
        RetrievalMode::Bm25,
        "the of and",
        Filters::default()
    )
    .await
    .is_empty());

    // Dense and hybrid through the backend.
    let index = Arc::new(index);
    for mode in [RetrievalMode::Dense, RetrievalMode::Hybrid] {
        let backend = QdrantBackend::new("journal", index.clone(), mode).unwrap();
        assert!(backend.capabilities().date_range && backend.capabilities().most_recent);
        let hits = backend
            .search(&request("tomatoes garden", Filters::default()))
            .await
            .unwrap();
        let top: Vec<&str> = hits.iter().take(2).map(|h| h.id.0.as_str()).collect();
        assert!(
            top.contains(&"j1") && top.contains(&"j3"),
            "{mode}: {top:?}"
        );
        assert!(hits.iter().all(|h| h.backend == "journal"));
    }

    // Filters, in every mode.
    let spring = Filters {
        date_range: Some(DateRange {
            from: day("2024-03-01"),
            to: day("2024-05-31"),
        }),
        most_recent: None,
        ..Default::default()
    };
    assert_eq!(
        ids(&index, RetrievalMode::Bm25, "garden tomatoes", spring).await,
        ["j1"]
    );
    let summer = Filters {
        date_range: Some(DateRange {
            from: day("2024-06-01"),
            to: None,
        }),
        most_recent: None,
        ..Default::default()
    };
    assert_eq!(
        ids(&index, RetrievalMode::Hybrid, "tomatoes garden", summer).await,
        ["j3"]
    );
    let recent = Filters {
        most_recent: Some(2),
        ..Default::default()
    };
    assert_eq!(
        ids(&index, RetrievalMode::Bm25, "anything", recent).await,
        ["j3", "j2"],
        "newest first, undated excluded"
    );
    let recent_in_range = Filters {
        most_recent: Some(5),
        date_range: Some(DateRange {
            from: None,
            to: day("2024-05-31"),
        }),
        ..Default::default()
    };
    assert_eq!(
        ids(&index, RetrievalMode::Dense, "", recent_in_range).await,
        ["j2", "j1"]
    );
    let hits = index
        .search(
            &request("garden", Filters::default()),
            RetrievalMode::Bm25,
            "qdrant",
        )
        .await
        .unwrap();
    let j1 = hits.iter().find(|h| h.id.0 == "j1").unwrap();
    assert_eq!((j1.title.as_ref(), j1.date), ("Garden", day("2024-03-02")));

    // Re-ingesting the same content writes and embeds nothing; a change updates in place.
    let mut index = QdrantIndex::connect(scratch.config(), Some(embedder.clone()))
        .await
        .unwrap();
    let again = ingest(&mut index, &file).await;
    assert_eq!(
        (again.added, again.updated, again.unchanged, again.embedded),
        (0, 0, 4, 0)
    );
    assert_eq!(
        embedder.calls.load(Ordering::SeqCst),
        4 + 3,
        "documents once, then one per dense or hybrid query"
    );
    std::fs::write(&file, JOURNAL.replace("basil", "parsley")).unwrap();
    let changed = ingest(&mut index, &file).await;
    assert_eq!(
        (
            changed.added,
            changed.updated,
            changed.unchanged,
            changed.embedded
        ),
        (0, 1, 3, 1)
    );
    assert_eq!(
        ids(&index, RetrievalMode::Bm25, "parsley", Filters::default()).await,
        ["j1"]
    );
    assert!(
        ids(&index, RetrievalMode::Bm25, "basil", Filters::default())
            .await
            .is_empty()
    );
    assert_eq!(index.dense_embedder(), Some("word-hash"));
}

#[tokio::test]
async fn an_embedder_that_does_not_fit_is_refused_and_the_collection_is_untouched() {
    let Some(scratch) = Scratch::new("mismatch") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("journal.jsonl");
    std::fs::write(&file, JOURNAL).unwrap();
    let mut index =
        QdrantIndex::connect_or_create(scratch.config(), Some(WordHash::new("word-hash", 16)))
            .await
            .unwrap();
    ingest(&mut index, &file).await;
    for other in [
        WordHash::new("word-hash", 8),
        WordHash::new("another-model", 16),
    ] {
        let error = QdrantIndex::connect_or_create(scratch.config(), Some(other))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                QdrantError::EmbedderMismatch {
                    index_dimension: 16,
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("word-hash"), "{error}");
    }
    // Still whole, and still searchable with its own embedder.
    let index = QdrantIndex::connect(scratch.config(), Some(WordHash::new("word-hash", 16)))
        .await
        .unwrap();
    assert_eq!(index.len().await.unwrap(), 4);
    assert_eq!(
        ids(
            &index,
            RetrievalMode::Dense,
            "kilometres river",
            Filters::default()
        )
        .await
        .first()
        .map(String::as_str),
        Some("j2")
    );

    // Without its embedder: BM25 only, and ingesting would need the embedder.
    let mut without = QdrantIndex::connect(scratch.config(), None).await.unwrap();
    let error = QdrantBackend::new(
        "journal",
        Arc::new(QdrantIndex::connect(scratch.config(), None).await.unwrap()),
        RetrievalMode::Dense,
    )
    .unwrap_err();
    assert!(
        matches!(error, QdrantError::EmbedderNeeded { .. })
            && error.to_string().contains("word-hash"),
        "{error}"
    );
    let error = without
        .ingest_path(&file, IngestOptions::default(), &mut |_, _| {})
        .await
        .unwrap_err();
    assert!(
        matches!(error, QdrantError::EmbedderNeeded { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn an_asker_finds_only_what_their_groups_may_read() {
    let Some(scratch) = Scratch::new("access") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("teams.jsonl");
    std::fs::write(
        &file,
        r#"{"id":"pay","title":"Salaries","text":"The garden team's salaries.","acl":["finance"]}
{"id":"plan","title":"Plan","text":"The garden plan.","acl":["garden","finance"]}
{"id":"open","title":"Open day","text":"The garden is open on Sundays."}
"#,
    )
    .unwrap();
    let mut index = QdrantIndex::connect_or_create(scratch.config(), None)
        .await
        .unwrap();
    assert_eq!(ingest(&mut index, &file).await.added, 3);
    let readable = |groups: &[&str], unlisted: Unlisted| Filters {
        access: Some(Access::new(groups.iter().copied(), unlisted)),
        ..Default::default()
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let bm25 = RetrievalMode::Bm25;
    let garden = |filters| ids(&index, bm25, "garden", filters);
    assert_eq!(
        sorted(garden(readable(&["garden"], Unlisted::Public)).await),
        ["open", "plan"]
    );
    assert_eq!(
        sorted(garden(readable(&["finance"], Unlisted::Private)).await),
        ["pay", "plan"]
    );
    assert_eq!(garden(readable(&[], Unlisted::Public)).await, ["open"]);
    assert!(garden(readable(&[], Unlisted::Private)).await.is_empty());
    assert_eq!(garden(Filters::default()).await.len(), 3);
}

#[tokio::test]
async fn a_bm25_collection_refuses_dense_search_and_edited_files_replace_their_chunks() {
    let Some(scratch) = Scratch::new("chunks") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("my docs");
    std::fs::create_dir_all(&docs).unwrap();
    let file = docs.join("guide.md");
    std::fs::write(&file, "# Guide\n\n## One\n\nAlpha section.\n\n## Two\n\nBravo section.\n\n## Three\n\nCharlie section.").unwrap();
    let mut index = QdrantIndex::connect_or_create(scratch.config(), None)
        .await
        .unwrap();
    assert_eq!(ingest(&mut index, &docs).await.added, 3);
    let error = QdrantBackend::new(
        "docs",
        Arc::new(QdrantIndex::connect(scratch.config(), None).await.unwrap()),
        RetrievalMode::Hybrid,
    )
    .unwrap_err();
    assert!(
        matches!(error, QdrantError::NoDenseVectors { .. }),
        "{error}"
    );
    let error = QdrantIndex::connect(scratch.config(), Some(WordHash::new("word-hash", 16)))
        .await
        .unwrap_err();
    assert!(
        matches!(error, QdrantError::NoDenseVectors { .. }),
        "{error}"
    );

    // The source path has a space: it must still match exactly, not as full text.
    std::fs::write(&file, "# Guide\n\n## One\n\nAlpha section.").unwrap();
    let shrunk = ingest(&mut index, &docs).await;
    assert_eq!((shrunk.unchanged, shrunk.removed), (1, 2));
    assert_eq!(index.len().await.unwrap(), 1);
    assert!(
        ids(&index, RetrievalMode::Bm25, "charlie", Filters::default())
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_missing_collection_is_named_with_the_command_that_creates_it() {
    let Some(scratch) = Scratch::new("missing") else {
        return;
    };
    let error = QdrantIndex::connect(scratch.config(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, QdrantError::MissingCollection { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&scratch.name)
            && message.contains("ferret ingest")
            && message.contains(&scratch.url),
        "{message}"
    );
}
