//! `knowledge_db.json`: one entry per document, read from disk at every lookup, written whole
//! under a temporary name and renamed into place.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use url::Url;

use crate::DescribedBy;

/// The registry's format; a file of another version is refused rather than misread.
const VERSION: u32 = 1;

/// What the registry knows of one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeEntry {
    /// The document's file name, unique in the registry: the name a syllabus or a plan refers
    /// to it by.
    pub name: String,
    /// The file it was ingested from, as an absolute path: the one document of that name.
    #[serde(default)]
    pub source: String,
    /// The web address it was fetched from, when it was (after redirects; credentials and
    /// fragment removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The address asked for, when a redirect led elsewhere: found by [`KnowledgeRegistry::find_by_url`] too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_url: Option<String>,
    /// Its title, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Words a search for it would use.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// What it is about, in a few sentences.
    #[serde(default)]
    pub summary: String,
    /// Who wrote the summary and keywords.
    pub described_by: DescribedBy,
    /// `sha256:` and the hex SHA-256 of the file's bytes when it was last ingested.
    pub content_hash: String,
    /// When its current content was ingested.
    pub ingested_at: DateTime<Utc>,
    /// The index it went to: an index folder or a Qdrant collection.
    pub index: String,
}

impl KnowledgeEntry {
    /// The same entry, apart from when it was ingested: re-recording it would say nothing new.
    fn same_as(&self, other: &KnowledgeEntry) -> bool {
        KnowledgeEntry {
            ingested_at: other.ingested_at,
            ..self.clone()
        } == *other
    }
}

/// `sha256:` followed by the hex SHA-256 of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The registry could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Reading or writing the file failed; the registry on disk is as it was.
    #[error("the knowledge registry {path} could not be {action}: {source}")]
    Io {
        /// The registry's file.
        path: PathBuf,
        /// "read" or "written".
        action: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a registry this version can read. Nothing is written over it.
    #[error(
        "the knowledge registry {path} is not readable: {reason}; move it aside to start a new one"
    )]
    Unreadable {
        /// The registry's file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl RegistryError {
    /// Whether trying again may help: a failed read or write may be passing (a full disk
    /// emptied); a file the registry cannot read stays unreadable.
    pub fn is_retryable(&self) -> bool {
        matches!(self, RegistryError::Io { .. })
    }
}

#[derive(Serialize, Deserialize)]
struct RegistryFile {
    version: u32,
    entries: Vec<KnowledgeEntry>,
}

/// The knowledge registry: a JSON file that each lookup reads and each change rewrites whole.
///
/// A [`Documentalist`](crate::Documentalist) records one document at a time; two processes
/// recording into one registry at once (possible beside a Qdrant collection, whose server
/// admits several writers, not beside the embedded index, which admits one process) may lose
/// one's entry, never tear the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeRegistry {
    path: PathBuf,
}

impl KnowledgeRegistry {
    /// The registry's file name.
    pub const FILE_NAME: &'static str = "knowledge_db.json";

    /// The registry of the index kept in the folder `index_dir`: `knowledge_db.json` in it.
    pub fn beside(index_dir: &Path) -> Self {
        Self::at(index_dir.join(Self::FILE_NAME))
    }

    /// The registry in the file `path` (made by the first record).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The registry's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry, in the order they were first recorded; none when the file does not exist.
    pub fn entries(&self) -> Result<Vec<KnowledgeEntry>, RegistryError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(self.io("read", source)),
        };
        let file: RegistryFile =
            serde_json::from_slice(&bytes).map_err(|e| RegistryError::Unreadable {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        if file.version != VERSION {
            return Err(RegistryError::Unreadable {
                path: self.path.clone(),
                reason: format!(
                    "it is version {}, this Ferret reads version {VERSION}",
                    file.version
                ),
            });
        }
        Ok(file.entries)
    }

    /// The entry of the document named `name` (its file name, exactly).
    pub fn find_by_name(&self, name: &str) -> Result<Option<KnowledgeEntry>, RegistryError> {
        Ok(self.entries()?.into_iter().find(|e| e.name == name))
    }

    /// The entry of the document fetched from `url`. Addresses are compared as the url crate
    /// writes them, without fragment or credentials: `HTTP://Example.org/a#b` finds
    /// `http://example.org/a`.
    pub fn find_by_url(&self, url: &str) -> Result<Option<KnowledgeEntry>, RegistryError> {
        let wanted = comparable_url(url);
        Ok(self.entries()?.into_iter().find(|e| {
            [&e.url, &e.requested_url]
                .into_iter()
                .flatten()
                .any(|url| comparable_url(url) == wanted)
        }))
    }

    /// Remove the entry named `name`; false, having written nothing, when there is none.
    pub fn remove(&self, name: &str) -> Result<bool, RegistryError> {
        let mut entries = self.entries()?;
        let before = entries.len();
        entries.retain(|e| e.name != name);
        if entries.len() == before {
            return Ok(false);
        }
        self.write(entries)?;
        Ok(true)
    }

    /// Record `entry`, replacing the entry of the same name. Returns false, having written
    /// nothing, when the registry already holds the same entry (ingestion time aside).
    pub fn record(&self, entry: KnowledgeEntry) -> Result<bool, RegistryError> {
        let mut entries = self.entries()?;
        match entries.iter_mut().find(|e| e.name == entry.name) {
            Some(existing) if existing.same_as(&entry) => return Ok(false),
            Some(existing) => *existing = entry,
            None => entries.push(entry),
        }
        self.write(entries)?;
        Ok(true)
    }

    /// Write `entries` under a temporary name in the registry's folder, flush it to disk, then
    /// rename it over the registry: a crash leaves the old file or the new one, never half of
    /// one.
    fn write(&self, entries: Vec<KnowledgeEntry>) -> Result<(), RegistryError> {
        let failed = |source| self.io("written", source);
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".knowledge_db-").suffix(".tmp");
        // A temporary file is private to its owner; what it becomes is an ordinary file, as
        // the user's umask makes them.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let mut file = builder.tempfile_in(dir).map_err(failed)?;
        let body = RegistryFile {
            version: VERSION,
            entries,
        };
        serde_json::to_writer_pretty(&mut file, &body).map_err(|e| failed(e.into()))?;
        file.write_all(b"\n").map_err(failed)?;
        file.as_file().sync_all().map_err(failed)?;
        file.persist(&self.path).map_err(|e| failed(e.error))?;
        Ok(())
    }

    fn io(&self, action: &'static str, source: std::io::Error) -> RegistryError {
        RegistryError::Io {
            path: self.path.clone(),
            action,
            source,
        }
    }
}

/// `url` as the url crate writes it, without fragment or credentials; as given when it does not
/// parse.
pub(crate) fn comparable_url(url: &str) -> String {
    match Url::parse(url.trim()) {
        Ok(parsed) => ferret_fetch::shown_address(&parsed).to_string(),
        Err(_) => url.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, url: Option<&str>) -> KnowledgeEntry {
        KnowledgeEntry {
            name: name.into(),
            source: format!("/notes/{name}"),
            url: url.map(str::to_owned),
            requested_url: None,
            title: Some("Agents".into()),
            keywords: vec!["agents".into(), "planning".into()],
            summary: "What an agent is.".into(),
            described_by: DescribedBy::Given,
            content_hash: content_hash(b"text"),
            ingested_at: Utc::now(),
            index: "index".into(),
        }
    }

    #[test]
    fn entries_are_found_by_name_and_by_address_as_written_or_normalised() {
        let dir = tempfile::tempdir().unwrap();
        let registry = KnowledgeRegistry::beside(dir.path());
        assert_eq!(registry.entries().unwrap(), vec![], "no file is no entry");
        registry
            .record(entry("agents.md", Some("https://example.org/agents.html")))
            .unwrap();
        registry.record(entry("notes.txt", None)).unwrap();

        assert_eq!(
            registry.find_by_name("notes.txt").unwrap().unwrap().name,
            "notes.txt"
        );
        assert_eq!(registry.find_by_name("Notes.txt").unwrap(), None);
        for asked in [
            "https://example.org/agents.html",
            "HTTPS://Example.org/agents.html#planning",
            "https://someone@example.org/agents.html",
        ] {
            assert_eq!(
                registry.find_by_url(asked).unwrap().unwrap().name,
                "agents.md",
                "{asked}"
            );
        }
        assert_eq!(
            registry.find_by_url("https://example.org/other").unwrap(),
            None
        );
    }

    #[test]
    fn recording_the_same_entry_again_writes_nothing_and_a_changed_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let registry = KnowledgeRegistry::beside(dir.path());
        let first = entry("agents.md", None);
        assert!(registry.record(first.clone()).unwrap());
        let written = std::fs::read(registry.path()).unwrap();

        let again = KnowledgeEntry {
            ingested_at: first.ingested_at + chrono::Duration::seconds(60),
            ..first.clone()
        };
        assert!(!registry.record(again).unwrap());
        assert_eq!(std::fs::read(registry.path()).unwrap(), written);

        let changed = KnowledgeEntry {
            content_hash: content_hash(b"new text"),
            ..first
        };
        assert!(registry.record(changed.clone()).unwrap());
        assert_eq!(registry.entries().unwrap(), vec![changed]);
    }

    #[test]
    fn a_crash_before_the_rename_leaves_the_old_registry_readable() {
        let dir = tempfile::tempdir().unwrap();
        let registry = KnowledgeRegistry::beside(dir.path());
        registry.record(entry("agents.md", None)).unwrap();
        // What a crash mid-write leaves: a temporary file cut short beside the registry.
        std::fs::write(
            dir.path().join(".knowledge_db-crash.tmp"),
            br#"{"version": 1, "entries": [{"name": "half"#,
        )
        .unwrap();

        let entries = registry.entries().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "agents.md");
        registry.record(entry("notes.txt", None)).unwrap();
        assert_eq!(registry.entries().unwrap().len(), 2);
    }

    #[test]
    fn a_file_that_is_not_a_registry_is_refused_and_never_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let registry = KnowledgeRegistry::beside(dir.path());
        for (content, says) in [
            (&b"not json"[..], "not readable"),
            (br#"{"version": 9, "entries": []}"#, "version 9"),
        ] {
            std::fs::write(registry.path(), content).unwrap();
            let error = registry.record(entry("agents.md", None)).unwrap_err();
            assert!(error.to_string().contains(says), "{error}");
            assert!(!error.is_retryable());
            assert_eq!(std::fs::read(registry.path()).unwrap(), content);
        }
    }

    #[test]
    fn content_hashes_name_their_algorithm() {
        assert_eq!(
            content_hash(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
