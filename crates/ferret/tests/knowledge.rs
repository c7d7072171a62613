//! The Documentalist over a real embedded index: what the index's own content hashes say of a
//! document decides what is written, and the registry follows.

use std::sync::Arc;

use ferret::index::{IngestOptions, LocalIndex};
use ferret::knowledge::{
    Change, Documentalist, DocumentalistError, Given, KnowledgeSource, LocalKnowledgeIndex,
};

fn documentalist(index: &std::path::Path) -> Documentalist {
    let index = Arc::new(LocalIndex::open_or_create_with(index, None).unwrap());
    let index = LocalKnowledgeIndex::new(index, IngestOptions::default());
    Documentalist::new(index.registry(), Arc::new(index))
}

#[tokio::test]
async fn an_edited_file_is_updated_an_untouched_one_writes_nothing_and_an_emptied_one_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let documentalist = documentalist(&dir.path().join("index"));
    let file = dir.path().join("agents.md");
    std::fs::write(&file, "# Agents\n\nAn agent plans, then calls tools.\n").unwrap();
    let add = || documentalist.add(KnowledgeSource::File(file.clone()), Given::default());

    assert_eq!(add().await.unwrap().change, Change::New);
    let registry = documentalist.registry().path().to_owned();
    let written = std::fs::read(&registry).unwrap();
    let again = add().await.unwrap();
    assert_eq!((again.change, again.recorded), (Change::Unchanged, false));
    assert_eq!(std::fs::read(&registry).unwrap(), written);

    // A section added at the end is a new chunk beside unchanged ones: the file is updated,
    // and described again.
    std::fs::write(
        &file,
        "# Agents\n\nAn agent plans, then calls tools.\n\n## Memory\n\nAgents keep notes between steps.\n",
    )
    .unwrap();
    let edited = add().await.unwrap();
    assert_eq!(edited.change, Change::Updated);
    assert!(
        edited.entry.summary.contains("notes between steps"),
        "{}",
        edited.entry.summary
    );

    std::fs::write(&file, "   \n").unwrap();
    let emptied = add().await.unwrap_err();
    assert!(
        matches!(emptied, DocumentalistError::Empty { ref name } if name == "agents.md"),
        "{emptied}"
    );
    assert_eq!(
        documentalist.registry().find_by_name("agents.md").unwrap(),
        None
    );
}

#[tokio::test]
async fn two_files_of_one_name_or_a_file_that_is_not_text_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let documentalist = documentalist(&dir.path().join("index"));
    for folder in ["a", "b"] {
        std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        std::fs::write(
            dir.path().join(folder).join("README.md"),
            format!("# Notes {folder}\n\nWhat folder {folder} holds.\n"),
        )
        .unwrap();
    }
    documentalist
        .add(
            KnowledgeSource::File(dir.path().join("a/README.md")),
            Given::default(),
        )
        .await
        .unwrap();
    let taken = documentalist
        .add(
            KnowledgeSource::File(dir.path().join("b/README.md")),
            Given::default(),
        )
        .await
        .unwrap_err();
    let DocumentalistError::NameTaken { name, existing } = &taken else {
        panic!("{taken:?}");
    };
    assert_eq!(name, "README.md");
    assert!(existing.ends_with("a/README.md"), "{existing}");
    let entry = documentalist
        .registry()
        .find_by_name("README.md")
        .unwrap()
        .unwrap();
    assert_eq!(entry.title.as_deref(), Some("Notes a"));

    std::fs::write(dir.path().join("corpus.jsonl"), "{\"text\": \"x\"}\n").unwrap();
    let jsonl = documentalist
        .add(
            KnowledgeSource::File(dir.path().join("corpus.jsonl")),
            Given::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(jsonl, DocumentalistError::Unsupported { .. }),
        "{jsonl}"
    );
    assert!(
        jsonl.to_string().contains("not a markdown or text file"),
        "{jsonl}"
    );
}
