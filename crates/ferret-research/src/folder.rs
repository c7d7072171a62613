//! A research run's folder: the syllabus it read, the brief, the classification, the plan, the
//! record of every step and the note, each in its own file so a reader can open any of them.

use std::path::{Path, PathBuf};

use crate::ResearchRecord;

/// The record's file in a run folder: what `ferret research --replay` reads.
pub const RECORD_FILE: &str = "record.json";

/// A run folder that could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunFolderError {
    /// A file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The record is not one this version reads.
    #[error("{} is not a research record: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What does not parse.
        source: serde_json::Error,
    },
}

impl ResearchRecord {
    /// Save the run in `dir` (made when missing): `syllabus.md`, `classification.json`,
    /// `brief.json` and `brief.md`, `plan.txt`, `record.json` and `report.md`.
    pub fn save(&self, dir: &Path, syllabus: &str) -> Result<(), RunFolderError> {
        std::fs::create_dir_all(dir).map_err(|source| RunFolderError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let files: [(&str, String); 7] = [
            ("syllabus.md", syllabus.to_owned()),
            (
                "classification.json",
                pretty(&self.classification, dir, "classification.json")?,
            ),
            ("brief.json", pretty(&self.brief, dir, "brief.json")?),
            ("brief.md", self.brief.to_markdown()),
            ("plan.txt", self.run.plan.clone()),
            (RECORD_FILE, pretty(self, dir, RECORD_FILE)?),
            ("report.md", self.report.clone()),
        ];
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|source| RunFolderError::Io { path, source })?;
        }
        Ok(())
    }

    /// The record of the run saved in `dir` (or the record file itself).
    pub fn load(path: &Path) -> Result<Self, RunFolderError> {
        let path = if path.is_dir() {
            path.join(RECORD_FILE)
        } else {
            path.to_owned()
        };
        let text = std::fs::read_to_string(&path).map_err(|source| RunFolderError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| RunFolderError::Format { path, source })
    }
}

/// A run folder's name: when it started and the syllabus's title, as `20261126-034100-title`.
pub fn run_folder_name(title: &str, started: chrono::DateTime<chrono::Utc>) -> String {
    let slug: String = title
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(8)
        .collect::<Vec<_>>()
        .join("-");
    let stamp = started.format("%Y%m%d-%H%M%S");
    if slug.is_empty() {
        stamp.to_string()
    } else {
        format!("{stamp}-{slug}")
    }
}

/// `value` as indented JSON, for the file `name` in `dir`.
fn pretty<T: serde::Serialize>(
    value: &T,
    dir: &Path,
    name: &str,
) -> Result<String, RunFolderError> {
    serde_json::to_string_pretty(value)
        .map(|json| json + "\n")
        .map_err(|source| RunFolderError::Format {
            path: dir.join(name),
            source,
        })
}
