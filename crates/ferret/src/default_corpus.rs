use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ferret_backends_local::{IndexError, IngestOptions, IngestReport, LocalIndex};
use ferret_core::{Embedder, FerretError};
use ferret_embed::{CachedEmbedder, LocalEmbedder, LocalEmbedderConfig};
use sha2::{Digest, Sha256};

/// `error` of the index at `path`, as the facade reports it.
pub(crate) fn index_error(path: &std::path::Path, error: IndexError) -> FerretError {
    FerretError::Index {
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

/// The default corpus (a slice of Wikipedia, see `fixtures/corpora/wikipedia-slice/README.md`),
/// built into the binary so the first search works offline with no setup.
pub const DEFAULT_CORPUS_JSONL: &str =
    include_str!("../../../fixtures/corpora/wikipedia-slice/corpus.jsonl");

/// Where the default corpus is indexed: `$FERRET_HOME`, else `$XDG_CACHE_HOME/ferret`, else
/// `~/.cache/ferret`, in a folder named after the corpus's digest so a new corpus gets a new index.
pub fn default_index_dir() -> PathBuf {
    let base = ferret_home();
    let digest = Sha256::digest(DEFAULT_CORPUS_JSONL.as_bytes());
    let tag: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    base.join(format!("default-index-{tag}"))
}

/// Where `cargo xtask models` puts the models and `--llm local` looks for them:
/// `$FERRET_MODELS`, else `models/` under the folder of [`default_index_dir`].
pub fn default_models_dir() -> PathBuf {
    std::env::var_os("FERRET_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| ferret_home().join("models"))
}

/// Where `ferret ingest <url>` keeps the markdown of the pages it fetched: `fetched/` under the
/// folder of [`default_index_dir`].
pub fn default_fetched_dir() -> PathBuf {
    ferret_home().join("fetched")
}

/// Where threads kept on disk ([`FileSessions`](ferret_agent::FileSessions)) live by default:
/// `threads/` under Ferret's home.
pub fn default_threads_dir() -> PathBuf {
    ferret_home().join("threads")
}

/// Where `ferret research` makes each run's folder: `research/` under Ferret's home.
pub fn default_research_dir() -> PathBuf {
    ferret_home().join("research")
}

/// all-MiniLM-L6-v2 from [`default_models_dir`], its vectors cached under the Ferret home
/// directory so a text is embedded once however often it is ingested.
pub fn default_embedder() -> Result<Arc<dyn Embedder>, FerretError> {
    local_embedder(LocalEmbedderConfig::default())
}

/// The embedder of the index at `dir`: all-MiniLM-L6-v2 run as the index's vectors were made
/// (float, or one of its int8 graphs), so building a faster graph later does not leave the index
/// unsearchable; [`default_embedder`] for an index made by another embedder, which the index
/// then refuses by name.
pub fn default_embedder_for(dir: &Path) -> Result<Arc<dyn Embedder>, FerretError> {
    let recorded = LocalIndex::dense_embedder_of(dir).map_err(|e| index_error(dir, e))?;
    local_embedder(
        recorded
            .as_deref()
            .and_then(LocalEmbedderConfig::reproducing)
            .unwrap_or_default(),
    )
}

fn local_embedder(config: LocalEmbedderConfig) -> Result<Arc<dyn Embedder>, FerretError> {
    let model = LocalEmbedder::minilm(&default_models_dir(), config)
        .map_err(|e| FerretError::Config(e.to_string()))?;
    let cache = ferret_home().join("cache").join("embeddings");
    let cached = CachedEmbedder::open(Arc::new(model), &cache)
        .map_err(|e| FerretError::Config(e.to_string()))?;
    Ok(Arc::new(cached))
}

pub(crate) fn ferret_home() -> PathBuf {
    std::env::var_os("FERRET_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("ferret")))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("ferret"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("ferret"))
}

/// The default corpus's index, opened once per process and shared: the index's write-ahead log
/// admits one opener, and every [`Ferret`](crate::Ferret) built with `default_corpus()` reads it.
pub(crate) fn shared_default_index() -> Result<Arc<LocalIndex>, FerretError> {
    static OPENED: Mutex<Option<(PathBuf, Arc<LocalIndex>)>> = Mutex::new(None);
    let dir = default_index_dir();
    let mut opened = OPENED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match opened.as_ref() {
        // `FERRET_HOME` may change between builds (tests do that): a new place, a new index.
        Some((path, index)) if *path == dir => Ok(index.clone()),
        _ => {
            let index = Arc::new(open_default_index()?);
            *opened = Some((dir, index.clone()));
            Ok(index)
        }
    }
}

/// Open the default corpus's index, indexing it first if this is the first use.
///
/// The index is built in a temporary sibling folder and renamed into place, so two first runs at
/// once never see a half-built index.
pub fn open_default_index() -> Result<LocalIndex, FerretError> {
    let dir = default_index_dir();
    if dir.exists() {
        match LocalIndex::open(&dir) {
            Ok(index) => return Ok(index),
            // A damaged or outdated default index is only a cache of the built-in corpus: rebuild it.
            Err(
                IndexError::Missing { .. }
                | IndexError::Unreadable { .. }
                | IndexError::Format { .. },
            ) => {
                std::fs::remove_dir_all(&dir).map_err(|source| FerretError::Io {
                    context: format!("removing {}", dir.display()),
                    source,
                })?;
            }
            Err(other) => return Err(index_error(&dir, other)),
        }
    }
    let parent = dir.parent().unwrap_or(&dir).to_owned();
    std::fs::create_dir_all(&parent).map_err(|source| FerretError::Io {
        context: format!("creating {}", parent.display()),
        source,
    })?;
    // Unique per process, thread and moment, so concurrent first uses never share a folder.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let building = parent.join(
        format!(
            ".building-{}-{:?}-{nanos}",
            std::process::id(),
            std::thread::current().id()
        )
        .replace(['(', ')'], ""),
    );
    let _ = std::fs::remove_dir_all(&building);
    {
        let index = LocalIndex::open_or_create(&building).map_err(|e| index_error(&building, e))?;
        let file = building.join("corpus.jsonl");
        std::fs::write(&file, DEFAULT_CORPUS_JSONL).map_err(|source| FerretError::Io {
            context: format!("writing {}", file.display()),
            source,
        })?;
        // A BM25-only ingest awaits nothing but itself, so it can be driven here without a runtime.
        let report: IngestReport = futures::executor::block_on(index.ingest_path(
            &file,
            IngestOptions::default(),
            &mut |_, _| {},
        ))
        .map_err(|e| index_error(&building, e))?;
        std::fs::remove_file(&file).map_err(|source| FerretError::Io {
            context: format!("removing {}", file.display()),
            source,
        })?;
        debug_assert!(
            report.issues.is_empty(),
            "the built-in corpus is well formed"
        );
    }
    if std::fs::rename(&building, &dir).is_err() {
        // Another process finished first; its index is as good as ours.
        let _ = std::fs::remove_dir_all(&building);
    }
    // The building folder's lock file lies beside it, where nothing will take it again.
    let mut lock = building.into_os_string();
    lock.push(".lock");
    let _ = std::fs::remove_file(lock);
    LocalIndex::open(&dir).map_err(|e| index_error(&dir, e))
}
