//! A Qdrant collection made from a folder of notes and searched through the facade: the same
//! collection layout, BM25 and filters as the embedded index, on a Qdrant server. The server is
//! named by `QDRANT_URL` (its gRPC address, as `../shared/tools/qdrant/start` prints it);
//! without it the program says so and stops.
//!
//! `QDRANT_URL=http://127.0.0.1:6334 cargo run -p ferret-examples --bin qdrant-collection`

use ferret::backends::QdrantConfig;
use ferret::index::{read_path, IngestOptions, QdrantIndex};
use ferret::jobs::search::RetrievalMode;
use ferret::{Ferret, Query};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        println!("skipped: set QDRANT_URL to a Qdrant server's gRPC address");
        return Ok(());
    };
    let notes = std::env::temp_dir().join(format!("ferret-qdrant-notes-{}", std::process::id()));
    std::fs::create_dir_all(&notes)?;
    std::fs::write(
        notes.join("rotation.md"),
        "# Rotating API keys\n\nAPI keys are rotated every 90 days: create the new key, deploy \
         it, then revoke the old one.",
    )?;
    std::fs::write(
        notes.join("backups.md"),
        "# Backups\n\nThe database is backed up every night and kept for 30 days.",
    )?;

    // A collection of its own per run, so the program can run again on the same server.
    let collection = format!("ferret-example-{}", std::process::id());
    let config = QdrantConfig::new(url.clone(), collection.clone());
    // Without an embedder the collection holds BM25 vectors only.
    let mut index = QdrantIndex::connect_or_create(config, None).await?;
    let options = IngestOptions::default();
    let report = index
        .ingest_read(
            read_path(&notes, options.max_chunk_chars)?,
            options,
            &mut |_, _| {},
        )
        .await?;
    println!("ingested {} documents into `{collection}`", report.added);

    let ferret = Ferret::builder()
        .qdrant(url, collection)
        .retrieval(RetrievalMode::Bm25)
        .build()?;
    let response = ferret
        .search(Query::new("How often are API keys rotated?")?)
        .await?;
    let answer = response
        .answer
        .ok_or_else(|| anyhow::anyhow!("no answer: {:?}", response.message))?;
    println!("{answer}");
    anyhow::ensure!(
        response
            .citations
            .iter()
            .any(|c| c.title.contains("Rotating")),
        "the answer should cite the note on rotating keys"
    );
    std::fs::remove_dir_all(&notes)?;
    Ok(())
}
