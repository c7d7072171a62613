//! `ferret ingest`: corpora and folders in bulk; one file or one web page through the
//! Documentalist, which also records it in the knowledge registry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use ferret::index::{IngestOptions, IngestReport, LocalIndex, QdrantIndex, SegmentPolicy};
use ferret::knowledge::{
    Added, Change, Describer, Documentalist, ExtractiveDescriber, Given, KnowledgeSource,
    LlmDescriber, LocalKnowledgeIndex, QdrantKnowledgeIndex,
};
use ferret::models::{Stage, StageModel};
use indicatif::{ProgressBar, ProgressStyle};

use crate::llm_args::LlmArgs;
use crate::store_args::{self, EmbedderChoice, StoreArgs};

/// Options of `ferret ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// A file, a folder, or an http(s) address.
    path: PathBuf,
    /// Where a fetched page's markdown is kept (default: `fetched/` in Ferret's home).
    #[arg(long, value_name = "DIR")]
    fetched_dir: Option<PathBuf>,
    /// The configuration file (its [fetch] table: hosts or ranges allowed although private,
    /// robots.txt, limits); default as for `search`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The index directory; created if missing.
    #[arg(long, default_value_os_t = store_args::default_index())]
    index: PathBuf,
    /// Dense vectors for dense and hybrid search.
    #[arg(long, value_enum, default_value = "auto")]
    embedder: EmbedderChoice,
    /// The groups that may read the documents (comma-separated), for those that do not
    /// list their own `acl`; without it such documents are readable by every principal
    /// unless `[server] private_by_default` says otherwise.
    #[arg(long, value_delimiter = ',')]
    acl: Vec<String>,
    /// A single file's or page's title in the registry (default: the page's title or the
    /// file's first heading).
    #[arg(long)]
    title: Option<String>,
    /// A single file's or page's summary in the registry, kept instead of one written from
    /// its text.
    #[arg(long)]
    summary: Option<String>,
    /// A single file's or page's keywords in the registry (comma-separated), kept instead of
    /// those taken from its text.
    #[arg(long, value_delimiter = ',')]
    keywords: Vec<String>,
    /// Compact the index after the ingest when the engine's write-ahead log (which keeps every
    /// write) holds this many megabytes more than one copy of the index; 0: never (`ferret
    /// index compact` does it by hand).
    #[arg(long, value_name = "MB", default_value_t = 256)]
    compact_wal_over: u64,
    /// Seal the segment of the local index that takes new documents once its vectors pass
    /// this many kilobytes, and keep that in the index (default when the index is made: 32000).
    /// A smaller segment holds less memory while ingesting; a larger one makes fewer segments
    /// for each search to visit.
    #[arg(long, value_name = "KB", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    seal_segment_at: Option<usize>,
    #[command(flatten)]
    store: StoreArgs,
    /// The model that writes a new or changed document's summary and keywords (default: none,
    /// they are taken from the text).
    #[command(flatten)]
    llm: LlmArgs,
}

impl IngestArgs {
    /// The local index, made if it is not there, with the sealing size asked for kept in it.
    fn open_local(
        &self,
        embedder: Option<Arc<dyn ferret::models::Embedder>>,
    ) -> anyhow::Result<LocalIndex> {
        let index = LocalIndex::open_or_create_with(&self.index, embedder)
            .with_context(|| format!("opening the index at {}", self.index.display()))?;
        if let Some(seal_at_kb) = self.seal_segment_at {
            index.set_segment_policy(SegmentPolicy::sealing_at(seal_at_kb))?;
        }
        Ok(index)
    }

    /// Ingest, print what changed, and exit 1 when something was skipped.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let local = self.store.qdrant().is_none().then(|| self.index.clone());
        let compact_over = self.compact_wal_over * 1_048_576;
        let code = self.ingest(&runtime)?;
        if let Some(index) = local.filter(|_| compact_over > 0) {
            if LocalIndex::log_history_bytes(&index) > compact_over {
                // The ingest is done and counted: a compaction that cannot run now is noted.
                match LocalIndex::compact(&index) {
                    Ok(done) => eprintln!(
                        "compacted the index: its write-ahead log had passed {} MB of history ({:.1} MB -> {:.1} MB)",
                        compact_over / 1_048_576,
                        done.bytes_before as f64 / 1_048_576.0,
                        done.bytes_after as f64 / 1_048_576.0
                    ),
                    Err(error) => eprintln!(
                        "note: the index was not compacted ({error}); `ferret index compact` can do it later"
                    ),
                }
            }
        }
        Ok(code)
    }

    fn ingest(self, runtime: &tokio::runtime::Runtime) -> anyhow::Result<ExitCode> {
        match web_address(&self.path) {
            Some(address) => {
                let address = address.to_owned();
                runtime.block_on(self.add_one(KnowledgeSource::Url(address)))
            }
            // Checked first so a mistyped path does not leave an empty index behind.
            None if !self.path.exists() => anyhow::bail!(
                "cannot read {}: no such file or directory",
                self.path.display()
            ),
            None if is_one_document(&self.path) => {
                let path = self.path.clone();
                runtime.block_on(self.add_one(KnowledgeSource::File(path)))
            }
            None => self.ingest_many(runtime),
        }
    }

    /// One file or page, through the Documentalist: ingested, described, recorded.
    async fn add_one(self, source: KnowledgeSource) -> anyhow::Result<ExitCode> {
        let started = std::time::Instant::now();
        let acl = self.checked_acl()?;
        let documentalist = self.documentalist(acl).await?;
        let given = Given {
            title: self.title,
            summary: self.summary,
            keywords: self.keywords,
        };
        let asked = match &source {
            KnowledgeSource::File(path) => path.display().to_string(),
            KnowledgeSource::Url(url) => without_credentials(url),
        };
        let added = documentalist
            .add(source, given)
            .await
            .with_context(|| format!("adding {asked}"))?;
        print_added(&added, documentalist.registry().path(), started.elapsed());
        Ok(ExitCode::SUCCESS)
    }

    async fn documentalist(&self, acl: Option<Vec<String>>) -> anyhow::Result<Documentalist> {
        let qdrant = self.store.qdrant();
        let embedder =
            store_args::ingest_embedder(self.embedder, qdrant.is_none().then_some(&self.index))?;
        let options = IngestOptions::default();
        let mut documentalist = match qdrant {
            Some(config) => {
                let (collection, url) = (config.collection.clone(), config.url.clone());
                let index = QdrantIndex::connect_or_create(config, embedder)
                    .await
                    .with_context(|| format!("opening collection `{collection}` at {url}"))?;
                let mut index = QdrantKnowledgeIndex::new(index, &collection, &url);
                if let Some(acl) = acl {
                    index = index.with_default_acl(acl)?;
                }
                Documentalist::new(
                    QdrantKnowledgeIndex::registry_of(&collection, &url),
                    Arc::new(index),
                )
            }
            None => {
                let index = self.open_local(embedder)?;
                let mut index = LocalKnowledgeIndex::new(Arc::new(index), options);
                if let Some(acl) = acl {
                    index = index.with_default_acl(acl)?;
                }
                Documentalist::new(index.registry(), Arc::new(index))
            }
        };
        let model = self.llm.model()?;
        let stages = self.llm.stage_config()?;
        let model = model
            .map(|m| StageModel::new(m, stages))
            .filter(|m| m.asks(Stage::Description));
        if let Some(model) = model {
            let describer: Arc<dyn Describer> =
                Arc::new(LlmDescriber::new(model, ExtractiveDescriber::default()));
            documentalist = documentalist.with_describer(describer);
        }
        if web_address(&self.path).is_some() {
            let file = ferret::config::FileConfig::located(self.config.as_deref())?;
            let fetch = file.fetch.fetch_config().map_err(anyhow::Error::msg)?;
            let dir = self
                .fetched_dir
                .clone()
                .unwrap_or_else(ferret::index::default_fetched_dir);
            documentalist = documentalist.with_fetcher(ferret::fetch::Fetcher::new(fetch)?, dir);
        }
        Ok(documentalist)
    }

    fn checked_acl(&self) -> anyhow::Result<Option<Vec<String>>> {
        if self.acl.is_empty() {
            return Ok(None);
        }
        let acl = ferret::index::checked_acl(self.acl.clone())
            .map_err(|e| anyhow::anyhow!("--acl: {e}"))?;
        Ok(Some(acl))
    }

    /// A folder or a corpus file, in bulk, with a progress bar; not recorded in the registry.
    fn ingest_many(self, runtime: &tokio::runtime::Runtime) -> anyhow::Result<ExitCode> {
        if self.title.is_some() || self.summary.is_some() || !self.keywords.is_empty() {
            anyhow::bail!(
                "--title, --summary and --keywords describe one markdown or text file or one page; {} holds many documents",
                self.path.display()
            );
        }
        let qdrant = self.store.qdrant();
        let embedder =
            store_args::ingest_embedder(self.embedder, qdrant.is_none().then_some(&self.index))?;
        let bar = ProgressBar::new(0);
        bar.set_style(ProgressStyle::with_template(
            "{spinner} {bar:40} {pos}/{len} documents ({per_sec}, {eta} left)",
        )?);
        // Without a terminal the bar is hidden: each commit is a line instead, so a log (or a
        // script that may kill the ingest) knows what a re-run will find written.
        let lines = !std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mut progress = |done: usize, total: usize| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if lines {
                eprintln!("{done}/{total} documents written");
            }
        };
        let options = IngestOptions::default();
        let mut found = ferret::index::stream_path(&self.path, options.max_chunk_chars)
            .with_context(|| format!("reading {}", self.path.display()))?;
        if let Some(acl) = self.checked_acl()? {
            found = found.with_default_acl(&acl);
        }
        let started = std::time::Instant::now();
        let (report, documents, place): (IngestReport, usize, String) = match qdrant {
            Some(config) => {
                let place = format!("collection `{}` at {}", config.collection, config.url);
                runtime.block_on(async {
                    let mut index = QdrantIndex::connect_or_create(config, embedder)
                        .await
                        .with_context(|| format!("opening {place}"))?;
                    let report = index.ingest_read(found, options, &mut progress).await?;
                    anyhow::Ok((report, index.len().await?, place))
                })?
            }
            None => {
                let index = self.open_local(embedder)?;
                let report = runtime.block_on(index.ingest_read(found, options, &mut progress))?;
                (report, index.len(), self.index.display().to_string())
            }
        };
        bar.finish_and_clear();
        for issue in &report.issues {
            eprintln!("skipped {issue}");
        }
        println!(
            "{} files: {} added, {} updated, {} unchanged, {} removed, {} skipped, {} embedded; {documents} documents in {place} ({:.1}s)",
            report.files,
            report.added,
            report.updated,
            report.unchanged,
            report.removed,
            report.issues.len(),
            report.embedded,
            started.elapsed().as_secs_f64()
        );
        Ok(if report.issues.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

/// What adding one document did, and where it is recorded.
fn print_added(added: &Added, registry: &Path, took: std::time::Duration) {
    let entry = &added.entry;
    let what = match added.change {
        Change::New => "added",
        Change::Updated => "updated",
        Change::Unchanged => "unchanged",
    };
    let from = entry
        .url
        .as_deref()
        .map(|url| format!(" from {url}"))
        .unwrap_or_default();
    let chunks = added.report.added + added.report.updated + added.report.unchanged;
    println!(
        "{what} {}{from}: {chunks} chunk{} in {} ({:.1}s)",
        entry.name,
        if chunks == 1 { "" } else { "s" },
        entry.index,
        took.as_secs_f64()
    );
    if entry.url.is_some() {
        println!("  kept in: {}", added.path.display());
    }
    if let Some(title) = &entry.title {
        println!("  title: {title}");
    }
    println!("  summary: {}", entry.summary);
    println!("  keywords: {}", entry.keywords.join(", "));
    let described_by = match entry.described_by {
        ferret::knowledge::DescribedBy::Given => "given",
        ferret::knowledge::DescribedBy::Extractive => "taken from the text",
        ferret::knowledge::DescribedBy::Model => "written by the model",
    };
    println!("  described: {described_by}");
    let registry = registry.display();
    if added.recorded {
        println!("  registry: recorded in {registry}");
    } else {
        println!("  registry: already up to date in {registry}, nothing written");
    }
}

/// The http(s) address `path` holds, when it is one rather than a file.
fn web_address(path: &Path) -> Option<&str> {
    let text = path.to_str()?.trim();
    let scheme = text.split_once("://")?.0;
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")).then_some(text)
}

/// `url` as it may be shown: without a user name, password or fragment.
fn without_credentials(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(parsed) => ferret::fetch::shown_address(&parsed).to_string(),
        Err(_) => url.to_owned(),
    }
}

/// A markdown or text file is one document the registry records; a folder or a JSONL corpus
/// holds many.
fn is_one_document(path: &Path) -> bool {
    path.is_file()
        && path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["md", "markdown", "txt"]
                .iter()
                .any(|known| e.eq_ignore_ascii_case(known))
        })
}
