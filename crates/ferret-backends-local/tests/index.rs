//! The embedded index, end to end on small corpora written by the tests.

use std::path::Path;
use std::sync::Arc;

use chrono::NaiveDate;
use ferret_backends_local::{
    IndexError, IngestOptions, IngestReport, LocalBackend, LocalIndex, SegmentPolicy,
};
use ferret_core::{
    Access, DateRange, Filters, RetrievalMode, SearchBackend, SearchRequest, Unlisted,
};
use ferret_test_support::copy_dir;
use futures::executor::block_on;

fn ingest(index: &mut LocalIndex, path: &Path) -> IngestReport {
    block_on(index.ingest_path(path, IngestOptions::default(), &mut |_, _| {})).unwrap()
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

fn ids(index: &LocalIndex, query: &str, filters: Filters) -> Vec<String> {
    scored(index, query, filters)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

fn scored(index: &LocalIndex, query: &str, filters: Filters) -> Vec<(String, f32)> {
    index
        .search_blocking(&request(query, filters), RetrievalMode::Bm25, None, "local")
        .unwrap()
        .into_iter()
        .map(|h| (h.id.0, h.score))
        .collect()
}

const JOURNAL: &str = r#"{"id":"j1","title":"Garden","text":"Planted tomatoes and basil in the garden.","date":"2024-03-02"}
{"id":"j2","title":"Run","text":"Ran ten kilometres along the river, legs tired.","date":"2024-05-10"}
{"id":"j3","title":"Garden again","text":"The tomatoes are flowering; watered the garden twice.","date":"2024-06-21"}
{"id":"j4","title":"Undated","text":"A note about gardening with no date."}
"#;

/// A fresh index holding `JOURNAL`, ingested from `journal.jsonl` in the returned folder.
fn journal() -> (tempfile::TempDir, LocalIndex, IngestReport) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("journal.jsonl");
    std::fs::write(&file, JOURNAL).unwrap();
    let mut index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let report = ingest(&mut index, &file);
    (dir, index, report)
}

#[test]
fn bm25_finds_stemmed_terms_and_ranks_the_better_match_first() {
    let (_dir, index, report) = journal();
    assert_eq!((report.added, report.issues.len()), (4, 0));
    let found = ids(&index, "watering the tomato garden", Filters::default());
    assert_eq!(found.first().map(String::as_str), Some("j3"), "{found:?}");
    assert!(!found.contains(&"j2".to_owned()), "no shared term, no hit");
    assert!(
        ids(&index, "the of and", Filters::default()).is_empty(),
        "stop words alone match nothing"
    );
}

#[test]
fn hits_past_those_whose_text_is_read_come_with_their_id_and_score_only() {
    let (dir, mut index, _) = journal();
    let whole_request = request("garden tomatoes gardening", Filters::default());
    let whole = index
        .search_blocking(&whole_request, RetrievalMode::Bm25, None, "local")
        .unwrap();
    assert!(whole.len() >= 3, "{whole:?}");
    let partial = index
        .search_blocking(
            &SearchRequest {
                text_for: Some(1),
                ..whole_request.clone()
            },
            RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap();
    let ranking = |hits: &[ferret_core::Hit]| -> Vec<(String, f32)> {
        hits.iter().map(|h| (h.id.0.clone(), h.score)).collect()
    };
    assert_eq!(ranking(&partial), ranking(&whole), "the same ranking");
    assert_eq!(partial[0], whole[0], "the first hit whole");
    assert!(partial[1..]
        .iter()
        .all(|h| h.text.is_empty() && h.title.is_empty()));

    // A write is seen by the next search: the ids read before it are not reused.
    let more = dir.path().join("more.jsonl");
    std::fs::write(
        &more,
        r#"{"id":"j9","title":"Garden tomatoes","text":"Garden tomatoes, gardening and more garden tomatoes."}"#,
    )
    .unwrap();
    ingest(&mut index, &more);
    let after = index
        .search_blocking(
            &SearchRequest {
                text_for: Some(0),
                ..whole_request
            },
            RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap();
    assert!(after.iter().any(|h| h.id.0 == "j9"), "{after:?}");
}

#[test]
fn date_range_and_most_recent_filters() {
    let (_dir, index, _) = journal();
    let day = |s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    let spring = Filters {
        date_range: Some(DateRange {
            from: day("2024-03-01"),
            to: day("2024-05-31"),
        }),
        most_recent: None,
        ..Default::default()
    };
    assert_eq!(ids(&index, "garden tomatoes", spring), ["j1"]);
    let recent = Filters {
        most_recent: Some(2),
        ..Default::default()
    };
    assert_eq!(
        ids(&index, "anything", recent),
        ["j3", "j2"],
        "newest first, undated entries excluded"
    );
    let recent_in_range = Filters {
        most_recent: Some(5),
        date_range: Some(DateRange {
            from: None,
            to: day("2024-05-31"),
        }),
        ..Default::default()
    };
    assert_eq!(ids(&index, "", recent_in_range), ["j2", "j1"]);
    let hits = index
        .search_blocking(
            &request("garden", Filters::default()),
            RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap();
    let j1 = hits.iter().find(|h| h.id.0 == "j1").unwrap();
    assert_eq!(j1.date, day("2024-03-02"));
    assert_eq!(j1.title, "Garden".into());
}

const TEAMS: &str = r#"{"id":"pay","title":"Salaries","text":"The garden team's salaries for 2024.","acl":["finance"]}
{"id":"plan","title":"Plan","text":"The garden plan: tomatoes by the wall.","acl":["garden","finance"]}
{"id":"open","title":"Open day","text":"The garden is open to visitors on Sundays."}
"#;

/// The ids `groups` may read among the hits for "garden", sorted.
fn readable(
    index: &LocalIndex,
    groups: &[&str],
    unlisted: Unlisted,
    recent: Option<usize>,
) -> Vec<String> {
    let filters = Filters {
        access: Some(Access::new(groups.iter().copied(), unlisted)),
        most_recent: recent,
        ..Default::default()
    };
    let mut found = ids(index, "garden", filters);
    found.sort();
    found
}

#[test]
fn an_asker_finds_only_what_their_groups_may_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("teams.jsonl");
    std::fs::write(&file, TEAMS).unwrap();
    let mut index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let report = ingest(&mut index, &file);
    assert_eq!((report.added, report.issues.len()), (3, 0));
    assert_eq!(
        readable(&index, &["garden"], Unlisted::Public, None),
        ["open", "plan"]
    );
    assert_eq!(
        readable(&index, &["finance"], Unlisted::Private, None),
        ["pay", "plan"]
    );
    assert_eq!(readable(&index, &[], Unlisted::Public, None), ["open"]);
    assert!(readable(&index, &[], Unlisted::Private, None).is_empty());
    assert!(readable(&index, &["visitors"], Unlisted::Private, None).is_empty());
    // Undated documents are not among the most recent, whoever asks.
    assert!(readable(&index, &["finance"], Unlisted::Public, Some(5)).is_empty());
    // Read whole by id, under the same rule.
    let read = |id: &str, groups: &[&str]| {
        let access = Access::new(groups.iter().copied(), Unlisted::Public);
        index
            .document(id, Some(&access), "local")
            .unwrap()
            .map(|h| h.id.0)
    };
    assert_eq!(read("pay", &["finance"]).as_deref(), Some("pay"));
    assert_eq!(read("pay", &["garden"]), None);
    assert_eq!(read("open", &[]).as_deref(), Some("open"));
    assert_eq!(read("missing", &["finance"]), None);
    // No one's groups: no restriction at all.
    assert_eq!(ids(&index, "garden", Filters::default()).len(), 3);

    // The list is not handed to readers, and changing it rewrites the document.
    let hits = index
        .search_blocking(
            &request("salaries", Filters::default()),
            RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap();
    assert!(
        hits.iter().all(|h| !h.payload.contains_key("acl")),
        "{hits:?}"
    );
    std::fs::write(
        &file,
        TEAMS.replace(r#""acl":["finance"]"#, r#""acl":["garden"]"#),
    )
    .unwrap();
    let changed = ingest(&mut index, &file);
    assert_eq!((changed.updated, changed.unchanged), (1, 2));
    assert_eq!(
        readable(&index, &["garden"], Unlisted::Private, None),
        ["pay", "plan"]
    );

    // An empty list would read as public: the record is refused, and said so.
    std::fs::write(&file, r#"{"id":"x","text":"secret garden","acl":[]}"#).unwrap();
    let refused = ingest(&mut index, &file);
    assert_eq!(refused.added, 0);
    assert!(
        refused.issues[0].message.contains("`acl` is empty"),
        "{refused:?}"
    );
    // A list that is not of strings: the line is named and skipped, the others kept.
    std::fs::write(
        &file,
        "{\"id\":\"y\",\"text\":\"garden shed\",\"acl\":\"finance\"}\n{\"id\":\"z\",\"text\":\"garden gate\",\"acl\":[\"finance\", 7]}\n{\"id\":\"w\",\"text\":\"garden well\"}\n",
    )
    .unwrap();
    let named = ingest(&mut index, &file);
    assert_eq!(named.added, 1, "{named:?}");
    let lines: Vec<Option<usize>> = named.issues.iter().map(|i| i.line).collect();
    assert_eq!(lines, [Some(1), Some(2)], "{named:?}");
}

#[test]
fn reingesting_the_same_content_writes_nothing_and_changes_update_in_place() {
    let (dir, mut index, _) = journal();
    let file = dir.path().join("journal.jsonl");
    let again = ingest(&mut index, &file);
    assert_eq!((again.added, again.updated, again.unchanged), (0, 0, 4));
    assert_eq!(index.len(), 4);

    std::fs::write(&file, JOURNAL.replace("basil", "parsley")).unwrap();
    let changed = ingest(&mut index, &file);
    assert_eq!(
        (changed.added, changed.updated, changed.unchanged),
        (0, 1, 3)
    );
    assert_eq!(index.len(), 4);
    assert_eq!(ids(&index, "parsley", Filters::default()), ["j1"]);
    assert!(ids(&index, "basil", Filters::default()).is_empty());
}

#[test]
fn a_second_opener_is_refused_naming_the_directory_and_the_holder_until_the_first_closes() {
    let (dir, index, _) = journal();
    let path = dir.path().join("index");
    for second in [LocalIndex::open(&path), LocalIndex::open_or_create(&path)] {
        match second {
            Err(error @ IndexError::Locked { .. }) => {
                let IndexError::Locked { holder, .. } = &error else {
                    unreachable!()
                };
                assert_eq!(*holder, Some(std::process::id()));
                let message = error.to_string();
                assert!(
                    message.contains(&path.display().to_string())
                        && message.contains(&format!("process {}", std::process::id())),
                    "{message}"
                );
            }
            other => panic!("the second opener got {other:?}"),
        }
    }
    // Closing the first lets the next one in, with everything the first wrote.
    drop(index);
    assert_eq!(LocalIndex::open(&path).expect("reopens").len(), 4);
}

#[test]
fn compaction_gives_back_the_log_and_keeps_every_document_and_ranking() {
    let (dir, mut index, _) = journal();
    // Rewritten many times over, the log holds every version.
    let rewritten = dir.path().join("rewritten.jsonl");
    for round in 0..30 {
        std::fs::write(
            &rewritten,
            JOURNAL.replace("garden", &format!("garden{round}")),
        )
        .unwrap();
        ingest(&mut index, &rewritten);
    }
    ingest(&mut index, &dir.path().join("journal.jsonl"));
    let before = ids(&index, "watering the tomato garden", Filters::default());
    drop(index);
    let path = dir.path().join("index");
    let wal_before = LocalIndex::wal_bytes(&path);
    // What else the folder holds (a knowledge registry) is kept.
    std::fs::write(path.join("knowledge_db.json"), "{\"kept\": true}").unwrap();

    let done = LocalIndex::compact(&path).expect("compacts");
    assert_eq!(done.points, 4);
    assert!(done.bytes_after < done.bytes_before, "{done:?}");
    assert!(LocalIndex::wal_bytes(&path) < wal_before);
    assert_eq!(
        std::fs::read_to_string(path.join("knowledge_db.json")).unwrap(),
        "{\"kept\": true}"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("index.") && n != "index.lock"),
        "nothing left beside the index but its lock file: {names:?}"
    );
    let index = LocalIndex::open(&path).unwrap();
    assert_eq!(index.len(), 4);
    assert_eq!(
        ids(&index, "watering the tomato garden", Filters::default()),
        before
    );
    let recent = Filters {
        most_recent: Some(1),
        ..Default::default()
    };
    assert_eq!(
        ids(&index, "", recent),
        ["j3"],
        "the payload indexes come along"
    );
}

#[test]
fn a_compaction_killed_between_its_renames_is_finished_or_undone_by_the_next_open() {
    for complete in [true, false] {
        let (dir, index, _) = journal();
        drop(index);
        let path = dir.path().join("index");
        // The state a kill between the swap's renames leaves: the old index moved aside, the
        // new one beside it, complete (its meta file written) or not.
        let staged = dir.path().join("index.compacting");
        copy_dir(&path, &staged);
        if !complete {
            std::fs::remove_file(staged.join("ferret-index.json")).unwrap();
        }
        std::fs::rename(&path, dir.path().join("index.replaced")).unwrap();

        let index = LocalIndex::open(&path).expect("the next open recovers");
        assert_eq!(index.len(), 4, "complete: {complete}");
        assert_eq!(ids(&index, "kilometres river", Filters::default()), ["j2"]);
        // What the compaction left is cleared once the index is open.
        assert!(!dir.path().join("index.replaced").exists());
        assert!(!dir.path().join("index.compacting").exists());
    }
}

#[test]
fn a_creation_a_kill_interrupted_is_cleared_and_engine_files_without_its_mark_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // A shard with no meta file: without the creation mark it is not ours to clear.
    let shard = dir.path().join("shard");
    let (source, index, _) = journal();
    drop(index);
    copy_dir(&source.path().join("index"), &shard);
    std::fs::remove_file(shard.join("ferret-index.json")).unwrap();
    assert!(LocalIndex::open_or_create(&shard).is_err());
    assert!(shard.join("segments").is_dir(), "left alone");
    // With the mark, it is a creation that never finished: cleared and made again.
    std::fs::write(shard.join("ferret-creating"), "").unwrap();
    let made = LocalIndex::open_or_create(&shard).expect("made again");
    assert_eq!(made.len(), 0);
    assert!(!shard.join("ferret-creating").exists());
}

#[test]
fn the_index_reopens_from_disk_with_its_contents() {
    let (dir, index, _) = journal();
    drop(index);
    let reopened = LocalIndex::open(dir.path().join("index")).unwrap();
    assert_eq!(reopened.len(), 4);
    assert_eq!(
        ids(&reopened, "kilometres river", Filters::default()),
        ["j2"]
    );
    let recent = Filters {
        most_recent: Some(1),
        ..Default::default()
    };
    assert_eq!(
        ids(&reopened, "", recent),
        ["j3"],
        "the date index survives a reopen"
    );
}

#[test]
fn a_folder_of_markdown_is_chunked_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("ops")).unwrap();
    std::fs::write(docs.join("ops/keys.md"), "# Key rotation\n\nRotate API keys every 90 days.\n\n## Emergency\n\nRevoke a leaked key at once.").unwrap();
    std::fs::write(docs.join("readme.txt"), "Welcome to the handbook.").unwrap();
    std::fs::write(docs.join("logo.png"), [0u8, 1, 2]).unwrap();
    let mut index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let report = ingest(&mut index, &docs);
    assert_eq!(
        (report.files, report.added),
        (2, 3),
        "the .png is not walked"
    );
    let hits = index
        .search_blocking(
            &request("leaked key", Filters::default()),
            RetrievalMode::Bm25,
            None,
            "local",
        )
        .unwrap();
    assert_eq!(hits[0].title, "Key rotation: Emergency".into());
    assert!(
        hits[0].payload["source"]
            .as_str()
            .unwrap()
            .ends_with("ops/keys.md"),
        "{:?}",
        hits[0].payload
    );
}

#[test]
fn a_malformed_line_is_skipped_with_its_location_and_the_rest_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("corpus.jsonl");
    std::fs::write(&file, "{\"_id\":\"1\",\"title\":\"A\",\"text\":\"alpha\"}\n{\"_id\":\"2\",\"text\":\n{\"_id\":\"3\",\"title\":\"C\",\"text\":\"gamma\"}\n").unwrap();
    let mut index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let report = ingest(&mut index, &file);
    assert_eq!(report.added, 2);
    assert_eq!(report.issues.len(), 1);
    assert_eq!(report.issues[0].line, Some(2));
    assert!(report.issues[0].to_string().contains("corpus.jsonl:2:"));
}

#[test]
fn a_missing_or_unreadable_index_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let err = LocalIndex::open(&missing).unwrap_err();
    assert!(matches!(err, IndexError::Missing { .. }));
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );

    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let err = LocalIndex::open(&not_a_dir).unwrap_err();
    assert!(
        err.to_string().contains(&not_a_dir.display().to_string()),
        "{err}"
    );

    let corrupt = dir.path().join("corrupt");
    std::fs::create_dir_all(&corrupt).unwrap();
    std::fs::write(corrupt.join("ferret-index.json"), "{ not json").unwrap();
    let err = LocalIndex::open(&corrupt).unwrap_err();
    assert!(matches!(err, IndexError::Unreadable { .. }), "{err}");
    assert!(err.to_string().contains(&corrupt.display().to_string()));

    let index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    let err = block_on(index.ingest_path(
        &dir.path().join("absent.jsonl"),
        IngestOptions::default(),
        &mut |_, _| {},
    ))
    .unwrap_err();
    assert!(err.to_string().contains("absent.jsonl"), "{err}");
}

#[tokio::test]
async fn the_backend_serves_the_index_with_its_capabilities() {
    let (_dir, index, _) = journal();
    let backend = LocalBackend::new("journal", Arc::new(index));
    assert!(backend.capabilities().date_range && backend.capabilities().most_recent);
    let hits = backend
        .search(&request("river", Filters::default()))
        .await
        .unwrap();
    assert_eq!(
        (hits[0].id.0.as_str(), hits[0].backend.as_str()),
        ("j2", "journal")
    );
}

#[test]
fn an_edited_file_replaces_its_chunks_and_the_same_file_named_differently_is_the_same_document() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let file = docs.join("guide.md");
    std::fs::write(&file, "# Guide\n\n## One\n\nAlpha section.\n\n## Two\n\nBravo section.\n\n## Three\n\nCharlie section.").unwrap();
    let mut index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    assert_eq!(ingest(&mut index, &docs).added, 3);
    // The same file through another path: same documents, nothing written.
    let again = ingest(&mut index, &docs.join("..").join("docs").join("guide.md"));
    assert_eq!((again.added, again.updated, again.unchanged), (0, 0, 3));

    std::fs::write(&file, "# Guide\n\n## One\n\nAlpha section.").unwrap();
    let shrunk = ingest(&mut index, &docs);
    assert_eq!((shrunk.unchanged, shrunk.removed), (1, 2));
    assert_eq!(index.len(), 1);
    assert!(
        ids(&index, "charlie", Filters::default()).is_empty(),
        "a removed section is no longer found"
    );
}

/// A toy embedder: each word adds weight to one of 16 dimensions, so texts sharing words are near.
struct WordHash {
    name: &'static str,
    dimension: usize,
    calls: std::sync::atomic::AtomicUsize,
}

impl WordHash {
    fn new(name: &'static str, dimension: usize) -> Arc<Self> {
        Arc::new(Self {
            name,
            dimension,
            calls: Default::default(),
        })
    }
}

#[async_trait::async_trait]
impl ferret_core::Embedder for WordHash {
    fn name(&self) -> &str {
        self.name
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ferret_core::EmbedError> {
        self.calls
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
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

fn dense_journal(embedder: Arc<WordHash>) -> (tempfile::TempDir, LocalIndex) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("journal.jsonl");
    std::fs::write(&file, JOURNAL).unwrap();
    let mut index =
        LocalIndex::open_or_create_with(dir.path().join("index"), Some(embedder)).unwrap();
    let report = ingest(&mut index, &file);
    assert_eq!((report.added, report.embedded), (4, 4));
    (dir, index)
}

#[tokio::test]
async fn dense_and_hybrid_search_rank_by_meaning_and_both_signals() {
    let embedder = WordHash::new("word-hash", 16);
    let (_dir, index) = dense_journal(embedder.clone());
    let index = Arc::new(index);
    for mode in [RetrievalMode::Dense, RetrievalMode::Hybrid] {
        let backend = LocalBackend::new("journal", index.clone())
            .with_mode(mode)
            .unwrap();
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
    // Filters hold in every mode.
    let day = |s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    let summer = Filters {
        date_range: Some(DateRange {
            from: day("2024-06-01"),
            to: None,
        }),
        most_recent: None,
        ..Default::default()
    };
    let backend = LocalBackend::new("journal", index)
        .with_mode(RetrievalMode::Hybrid)
        .unwrap();
    let hits = backend
        .search(&request("tomatoes garden", summer))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.0.as_str()).collect::<Vec<_>>(),
        ["j3"]
    );
}

#[test]
fn reopening_or_reingesting_does_not_embed_again() {
    let embedder = WordHash::new("word-hash", 16);
    let (dir, index) = dense_journal(embedder.clone());
    drop(index);
    let mut reopened =
        LocalIndex::open_with(dir.path().join("index"), Some(embedder.clone())).unwrap();
    let report = ingest(&mut reopened, &dir.path().join("journal.jsonl"));
    assert_eq!((report.unchanged, report.embedded), (4, 0));
    assert_eq!(
        embedder.calls.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "each document embedded once"
    );
    assert_eq!(reopened.dense_embedder(), Some("word-hash"));
}

#[test]
fn an_embedder_that_does_not_fit_the_index_is_refused_and_nothing_is_written() {
    let (dir, index) = dense_journal(WordHash::new("word-hash", 16));
    drop(index);
    let path = dir.path().join("index");
    let before = std::fs::read(path.join("ferret-index.json")).unwrap();
    for other in [
        WordHash::new("word-hash", 8),
        WordHash::new("another-model", 16),
    ] {
        let err = LocalIndex::open_or_create_with(&path, Some(other)).unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::EmbedderMismatch {
                    index_dimension: 16,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("word-hash"), "{err}");
    }
    assert_eq!(
        std::fs::read(path.join("ferret-index.json")).unwrap(),
        before
    );
    // Still searchable with its own embedder.
    let index = LocalIndex::open_with(&path, Some(WordHash::new("word-hash", 16))).unwrap();
    assert_eq!(index.len(), 4);
}

#[test]
fn dense_search_needs_dense_vectors_and_their_embedder() {
    let (_dir, index, _) = journal();
    let err = LocalBackend::new("journal", Arc::new(index))
        .with_mode(RetrievalMode::Hybrid)
        .unwrap_err();
    assert!(matches!(err, IndexError::NoDenseVectors { .. }), "{err}");

    let (dir, index) = dense_journal(WordHash::new("word-hash", 16));
    drop(index);
    let without = LocalIndex::open(dir.path().join("index")).unwrap();
    let err = LocalBackend::new("journal", Arc::new(without))
        .with_mode(RetrievalMode::Dense)
        .unwrap_err();
    assert!(
        err.to_string().contains("word-hash"),
        "names the embedder to use: {err}"
    );
}

/// `records` JSONL records under `dir`, with words drawn so that terms recur across documents
/// in varied proportions, as real text does.
fn varied_corpus(dir: &Path, records: usize) -> std::path::PathBuf {
    const WORDS: [&str; 24] = [
        "river", "bridge", "town", "harbour", "granite", "lantern", "orchard", "ferry", "mill",
        "quarry", "meadow", "tower", "canal", "market", "chapel", "forge", "valley", "summit",
        "glacier", "delta", "marsh", "cliff", "reef", "dune",
    ];
    let lines: Vec<String> = (0..records)
        .map(|i| {
            let text: Vec<&str> = (0..12)
                .map(|k| WORDS[(i * 7 + k * k * 3 + i / (k + 1)) % WORDS.len()])
                .collect();
            format!(
                r#"{{"id":"r{i}","title":"Record {i}","text":"{} marker m{i}x"}}"#,
                text.join(" ")
            )
        })
        .collect();
    let path = dir.join(format!("varied-{records}.jsonl"));
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// A small segment policy, so a few thousand documents fill several segments.
fn small_segments() -> SegmentPolicy {
    SegmentPolicy {
        seal_at_kb: 48,
        segments: 3,
        max_segment_kb: 256,
    }
}

/// The BM25 hits for `query`, with their scores.
fn ranked(index: &LocalIndex, query: &str) -> Vec<(String, f32)> {
    scored(index, query, Filters::default())
}

#[test]
fn an_ingest_seals_full_segments_and_finds_what_one_segment_finds() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = varied_corpus(dir.path(), 3_000);
    let mut whole = LocalIndex::open_or_create(dir.path().join("whole")).unwrap();
    ingest(&mut whole, &corpus);
    assert_eq!(
        whole.segment_count(),
        1,
        "the default seals nothing this small"
    );
    let mut sealed = LocalIndex::open_or_create(dir.path().join("sealed")).unwrap();
    sealed.set_segment_policy(small_segments()).unwrap();
    ingest(&mut sealed, &corpus);
    let segments = sealed.segment_count();
    assert!(segments > 1, "{segments} segment(s)");
    // Merged down to the policy's count, plus the growing one.
    assert!(
        segments <= small_segments().segments + 1,
        "{segments} segments"
    );
    assert_eq!(sealed.len(), 3_000);
    for query in [
        "granite quarry",
        "ferry across the canal",
        "m2718x",
        "glacier",
    ] {
        let expected = ranked(&whole, query);
        let found = ranked(&sealed, query);
        assert_eq!(
            found.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            expected.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            "{query}"
        );
        for ((_, a), (_, b)) in found.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-4, "{query}: {a} against {b}");
        }
    }
    // The policy and the segments stay with the index; re-ingesting writes nothing.
    drop(sealed);
    let mut sealed = LocalIndex::open(dir.path().join("sealed")).unwrap();
    assert_eq!(sealed.segment_count(), segments);
    let again = ingest(&mut sealed, &corpus);
    assert_eq!((again.added, again.updated, again.unchanged), (0, 0, 3_000));
    assert_eq!(ranked(&sealed, "m17x")[0].0, "r17");
    // A compaction keeps the policy: it seals as it writes.
    drop(sealed);
    LocalIndex::compact(dir.path().join("sealed")).unwrap();
    let sealed = LocalIndex::open(dir.path().join("sealed")).unwrap();
    assert!(sealed.segment_count() > 1, "{}", sealed.segment_count());
    assert_eq!(
        ranked(&sealed, "granite quarry"),
        ranked(&whole, "granite quarry")
    );
}

#[test]
fn documents_a_killed_seal_left_in_two_segments_are_kept_once() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = varied_corpus(dir.path(), 2_000);
    let path = dir.path().join("index");
    let mut index = LocalIndex::open_or_create(&path).unwrap();
    index.set_segment_policy(small_segments()).unwrap();
    ingest(&mut index, &corpus);
    let before = ranked(&index, "orchard lantern");
    let segments = index.segment_count();
    drop(index);
    // What a process killed between a seal's swap and its clean-up leaves: documents in the
    // new segment and in the old, and the seal's mark. Here every segment is doubled.
    let segments_dir = path.join("segments");
    let originals: Vec<_> = std::fs::read_dir(&segments_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for segment in &originals {
        copy_dir(segment, &segments_dir.join(uuid_like(segment)));
    }
    std::fs::write(path.join("ferret-sealing"), "").unwrap();

    let index = LocalIndex::open(&path).unwrap();
    assert_eq!(index.len(), 2_000);
    let after = ranked(&index, "orchard lantern");
    let ids: std::collections::HashSet<_> = after.iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), after.len(), "no document twice: {after:?}");
    // The copies deleted from sealed segments still count in their term statistics until the
    // engine vacuums them, so scores move a little; the best matches stay.
    for ((id, score), (was, score_before)) in after.iter().zip(&before).take(5) {
        assert_eq!(id, was, "{after:?} against {before:?}");
        assert!(
            (score - score_before).abs() < 1e-2 * score_before,
            "{id}: {score}"
        );
    }
    assert!(!path.join("ferret-sealing").exists());
    assert!(index.segment_count() >= segments);
}

/// A new segment directory name for a copy of `segment`.
fn uuid_like(segment: &Path) -> String {
    let name = segment.file_name().unwrap().to_string_lossy().into_owned();
    let flipped = if name.starts_with('0') { '1' } else { '0' };
    format!("{flipped}{}", &name[1..])
}

/// Seals run beside searches: on a multi-threaded runtime the seal leaves the async workers
/// free, and on a single-threaded one it simply runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_go_on_while_an_ingest_seals_on_a_multi_threaded_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = varied_corpus(dir.path(), 3_000);
    let index = Arc::new(LocalIndex::open_or_create(dir.path().join("index")).unwrap());
    index.set_segment_policy(small_segments()).unwrap();
    let searcher = {
        let index = index.clone();
        tokio::spawn(async move {
            let mut searches = 0;
            while index.segment_count() < 3 && searches < 100_000 {
                index
                    .search_blocking(
                        &request("granite quarry", Filters::default()),
                        RetrievalMode::Bm25,
                        None,
                        "local",
                    )
                    .unwrap();
                searches += 1;
                tokio::task::yield_now().await;
            }
            searches
        })
    };
    let report = index
        .ingest_path(&corpus, IngestOptions::default(), &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!(report.added, 3_000);
    assert!(searcher.await.unwrap() > 0);
    assert!(index.segment_count() > 1);
    assert_eq!(ranked(&index, "m2718x")[0].0, "r2718");
}

#[tokio::test]
async fn an_ingest_seals_on_a_single_threaded_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = varied_corpus(dir.path(), 2_000);
    let index = LocalIndex::open_or_create(dir.path().join("index")).unwrap();
    index.set_segment_policy(small_segments()).unwrap();
    index
        .ingest_path(&corpus, IngestOptions::default(), &mut |_, _| {})
        .await
        .unwrap();
    assert!(index.segment_count() > 1);
}
