//! An embedded index built from a folder of notes and asked a question: the answer cites the
//! notes it comes from. No network, no model, no key.
//!
//! `cargo run -p ferret-examples --bin local-index`

use ferret::index::{read_path, IngestOptions, LocalIndex};
use ferret::jobs::search::RetrievalMode;
use ferret::{Ferret, Query};

const NOTES: [(&str, &str); 3] = [
    (
        "rotation.md",
        "# Rotating API keys\n\nAPI keys are rotated every 90 days. Create the new key in the \
         console, deploy it, then revoke the old key after one day.",
    ),
    (
        "backups.md",
        "# Backups\n\nThe database is backed up every night at 02:00 and kept for 30 days.",
    ),
    (
        "oncall.md",
        "# On call\n\nThe on-call engineer answers pages within 15 minutes.",
    ),
];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let work = std::env::temp_dir().join(format!("ferret-local-index-{}", std::process::id()));
    let (notes, index) = (work.join("notes"), work.join("index"));
    std::fs::create_dir_all(&notes)?;
    for (name, text) in NOTES {
        std::fs::write(notes.join(name), text)?;
    }

    // An index without an embedder ranks by BM25; `ferret ingest` makes the same kind.
    LocalIndex::open_or_create_with(&index, None)?;
    let ferret = Ferret::builder()
        .local_index(&index)
        .retrieval(RetrievalMode::Bm25)
        .build()?;
    let options = IngestOptions::default();
    let documents = read_path(&notes, options.max_chunk_chars)?;
    let report = ferret.ingest(documents, options, &mut |_, _| {}).await?;
    println!("ingested {} documents", report.added);

    let response = ferret
        .search(Query::new("How often are API keys rotated?")?)
        .await?;
    let answer = response
        .answer
        .ok_or_else(|| anyhow::anyhow!("no answer: {:?}", response.message))?;
    println!("{answer}");
    for citation in &response.citations {
        println!("[{}] {}", citation.marker, citation.title);
    }
    anyhow::ensure!(
        response
            .citations
            .iter()
            .any(|c| c.title.contains("Rotating")),
        "the answer should cite the note on rotating keys"
    );
    drop(ferret);
    std::fs::remove_dir_all(&work)?;
    Ok(())
}
