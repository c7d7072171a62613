//! Adding one document to the knowledge base: fetched when it is a web page, ingested by the
//! index, described when it is new or changed, recorded in the registry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use ferret_collection::IngestReport;
use ferret_core::LlmCall;
use ferret_fetch::{FetchError, Fetcher};

use crate::registry::comparable_url;
use crate::{
    content_hash, DescribedBy, Describer, Description, ExtractiveDescriber, KnowledgeEntry,
    KnowledgeRegistry, RegistryError,
};

/// Where a document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnowledgeSource {
    /// A markdown or text file on disk.
    File(PathBuf),
    /// A web page, fetched as markdown.
    Url(String),
}

/// What came with a reference (a syllabus line, the caller): kept instead of what would be
/// generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// The document's title.
    pub title: Option<String>,
    /// What it is about.
    pub summary: Option<String>,
    /// Words a search for it would use.
    pub keywords: Vec<String>,
}

/// The index documents go to, as the Documentalist needs it.
#[async_trait::async_trait]
pub trait KnowledgeIndex: Send + Sync {
    /// The index as registry entries name it: its folder, or its collection and server.
    fn name(&self) -> String;

    /// Ingest the file at `path`, replacing the chunks it had if its content changed. The
    /// report's counts say whether anything was written.
    async fn ingest_file(&self, path: &Path) -> Result<IngestReport, DocumentalistError>;
}

/// What adding a document did.
#[derive(Debug, Clone)]
pub struct Added {
    /// The document's entry, as the registry now holds it.
    pub entry: KnowledgeEntry,
    /// The file it was ingested from: the one given, or where a page was saved.
    pub path: PathBuf,
    /// Whether the index had it, and whether its content changed.
    pub change: Change,
    /// Whether the registry was written: not when nothing about the document changed.
    pub recorded: bool,
    /// What the index did.
    pub report: IngestReport,
    /// Model calls made to describe it.
    pub llm_calls: Vec<LlmCall>,
}

/// What the index said of a document added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Its chunks were not in the index.
    New,
    /// Its content changed: its chunks were replaced.
    Updated,
    /// The index holds the same content: nothing was written to it.
    Unchanged,
}

/// A document could not be added. Nothing was recorded for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentalistError {
    /// The page could not be fetched (refused, unreachable, not text, too large).
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// A web page was asked for, but this Documentalist has no fetcher.
    #[error("{url} is a web address, and fetching is not set up for this knowledge base")]
    NoFetcher {
        /// The address asked for.
        url: String,
    },
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The index refused the file or failed to write it.
    #[error("{index} could not ingest {name}: {message}")]
    Index {
        /// The index, as [`KnowledgeIndex::name`] gives it.
        index: String,
        /// The document's file name.
        name: String,
        /// What went wrong.
        message: String,
        /// Whether trying again may help (a server that did not answer, not a file it refuses).
        retryable: bool,
    },
    /// The registry could not be read or written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Only markdown and text files are documents the registry describes.
    #[error("{} is not a markdown or text file (.md, .markdown, .txt): ingest a corpus or a folder with `ferret ingest`, which does not record it", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
    },
    /// The document has no text to search: nothing is recorded for it (and an entry it had is
    /// removed).
    #[error("{name} has no text to search (an empty file, or a page whose main content is empty)")]
    Empty {
        /// The document's file name.
        name: String,
    },
    /// Another file of the same name is in the registry: names are how a syllabus or a plan
    /// refers to a document, so they must be unique.
    #[error(
        "the knowledge base already holds another {name}, from {existing}: rename one of them"
    )]
    NameTaken {
        /// The file name.
        name: String,
        /// Where the registered one came from.
        existing: String,
    },
}

impl DocumentalistError {
    /// Whether trying again may help.
    pub fn is_retryable(&self) -> bool {
        match self {
            DocumentalistError::Fetch(e) => e.is_retryable(),
            DocumentalistError::Index { retryable, .. } => *retryable,
            DocumentalistError::Registry(e) => e.is_retryable(),
            DocumentalistError::Read { .. }
            | DocumentalistError::NoFetcher { .. }
            | DocumentalistError::Unsupported { .. }
            | DocumentalistError::Empty { .. }
            | DocumentalistError::NameTaken { .. } => false,
        }
    }
}

/// Adds files and web pages to a knowledge base: the index searches them, the registry
/// remembers them. A web page is kept as a markdown file under the fetched-pages folder, so the
/// index and the registry refer to a file either way.
pub struct Documentalist {
    adding: tokio::sync::Mutex<()>,
    registry: KnowledgeRegistry,
    index: Arc<dyn KnowledgeIndex>,
    describer: Arc<dyn Describer>,
    fetcher: Option<(Fetcher, PathBuf)>,
}

impl std::fmt::Debug for Documentalist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Documentalist")
            .field("registry", &self.registry)
            .field("index", &self.index.name())
            .field("fetches", &self.fetcher.is_some())
            .finish()
    }
}

impl Documentalist {
    /// Adds files to `index`, recorded in `registry`, described by extraction; web pages are
    /// refused until [`Documentalist::with_fetcher`].
    pub fn new(registry: KnowledgeRegistry, index: Arc<dyn KnowledgeIndex>) -> Self {
        Self {
            adding: tokio::sync::Mutex::new(()),
            registry,
            index,
            describer: Arc::new(ExtractiveDescriber::default()),
            fetcher: None,
        }
    }

    /// Describe new and changed documents with `describer` (a model's, say).
    pub fn with_describer(mut self, describer: Arc<dyn Describer>) -> Self {
        self.describer = describer;
        self
    }

    /// Fetch web pages with `fetcher`, keeping their markdown in `dir`.
    pub fn with_fetcher(mut self, fetcher: Fetcher, dir: PathBuf) -> Self {
        self.fetcher = Some((fetcher, dir));
        self
    }

    /// The registry documents are recorded in.
    pub fn registry(&self) -> &KnowledgeRegistry {
        &self.registry
    }

    /// Add the document at `source`, with what came with its reference.
    ///
    /// Whether it changed is the index's word: an unchanged document already in the registry
    /// writes nothing anywhere (its page file included). A new or changed one is described,
    /// unless `given` holds both a summary and keywords, and recorded. Adds run one at a time.
    pub async fn add(
        &self,
        source: KnowledgeSource,
        given: Given,
    ) -> Result<Added, DocumentalistError> {
        let _one_at_a_time = self.adding.lock().await;
        let (path, url, page_title) = match source {
            KnowledgeSource::File(path) => (path, None, None),
            KnowledgeSource::Url(url) => {
                let Some((fetcher, dir)) = &self.fetcher else {
                    return Err(DocumentalistError::NoFetcher { url });
                };
                let page = fetcher.fetch(&url).await?;
                let path = page.save(dir)?;
                let address = page.address().to_string();
                let asked = comparable_url(page.url.as_str());
                let requested = (asked != comparable_url(&address)).then_some(asked);
                (path, Some((address, requested)), page.title)
            }
        };
        let read_failed = |source| DocumentalistError::Read {
            path: path.clone(),
            source,
        };
        let is_text = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| TEXT_EXTENSIONS.iter().any(|t| e.eq_ignore_ascii_case(t)));
        if !is_text {
            return Err(DocumentalistError::Unsupported { path });
        }
        let bytes = std::fs::read(&path).map_err(read_failed)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| read_failed(std::io::ErrorKind::InvalidInput.into()))?;
        let place = std::fs::canonicalize(&path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string();
        // Read before the index is written: a registry that cannot be read stops the add
        // before anything changes.
        let known = self.registry.find_by_name(&name)?;
        if let Some(other) = known.as_ref().filter(|k| k.source != place) {
            return Err(DocumentalistError::NameTaken {
                name,
                existing: other.source.clone(),
            });
        }
        let report = self.index.ingest_file(&path).await?;
        if !report.issues.is_empty() {
            return Err(DocumentalistError::Index {
                index: self.index.name(),
                name,
                message: report
                    .issues
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
                retryable: false,
            });
        }
        if report.added + report.updated + report.unchanged == 0 {
            // Nothing to search: the index dropped what it had of the file, and so does the
            // registry.
            if known.is_some() {
                self.registry.remove(&name)?;
            }
            return Err(DocumentalistError::Empty { name });
        }
        let change = if report.updated + report.unchanged + report.removed == 0 {
            Change::New
        } else if report.added + report.updated + report.removed > 0 {
            Change::Updated
        } else {
            Change::Unchanged
        };
        let text = String::from_utf8_lossy(&bytes);
        let hash = content_hash(&bytes);
        // The last description holds only for the content it was written from: the index may
        // have taken a new version through another door (a folder ingest).
        let still = known
            .as_ref()
            .filter(|k| change == Change::Unchanged && k.content_hash == hash);
        // A title given before (a syllabus's) holds while the content does.
        let title = given
            .title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| still.and_then(|k| k.title.clone()))
            .or(page_title)
            .or_else(|| first_heading(&text));
        let given_keywords: Vec<String> = given
            .keywords
            .iter()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        let given_summary = given.summary.filter(|s| !s.trim().is_empty());
        let mut llm_calls = Vec::new();
        let description = match (given_summary, given_keywords) {
            (Some(summary), keywords) if !keywords.is_empty() => Description {
                summary,
                keywords,
                described_by: DescribedBy::Given,
            },
            (summary, keywords) => {
                let mut description = match still {
                    Some(k) => Description {
                        summary: k.summary.clone(),
                        keywords: k.keywords.clone(),
                        described_by: k.described_by,
                    },
                    None => {
                        let described = self.describer.describe(title.as_deref(), &text).await;
                        llm_calls = described.llm_calls;
                        described.value
                    }
                };
                if let Some(summary) = summary {
                    description.summary = summary;
                }
                if !keywords.is_empty() {
                    description.keywords = keywords;
                }
                description
            }
        };
        let (url, requested_url) = match url {
            Some((address, requested)) => (Some(address), requested),
            None => match &known {
                Some(k) => (k.url.clone(), k.requested_url.clone()),
                None => (None, None),
            },
        };
        let entry = KnowledgeEntry {
            name,
            source: place,
            url,
            requested_url,
            title,
            keywords: description.keywords,
            summary: description.summary,
            described_by: description.described_by,
            content_hash: hash,
            ingested_at: still.map_or_else(Utc::now, |k| k.ingested_at),
            index: self.index.name(),
        };
        let recorded = self.registry.record(entry.clone())?;
        Ok(Added {
            entry,
            path,
            change,
            recorded,
            report,
            llm_calls,
        })
    }
}

/// The extensions of the files a Documentalist adds: one document each.
const TEXT_EXTENSIONS: [&str; 3] = ["md", "markdown", "txt"];

/// The text of the first `# ` heading, if the text has one.
fn first_heading(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("# "))
        .map(|title| title.trim().to_owned())
        .filter(|title| !title.is_empty())
}
