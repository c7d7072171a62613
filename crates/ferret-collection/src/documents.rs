//! Turning files into documents: JSONL records (BEIR `corpus.jsonl` included) and Markdown or
//! plain-text files chunked on headings and paragraphs.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// One unit of retrieval, as stored in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Stable id: the record's own id, or the file path and chunk number.
    pub id: String,
    /// Title: the record's title, or the file and section heading.
    pub title: String,
    /// The text that is searched and shown.
    pub text: String,
    /// Where the content lives, when it has an address.
    pub url: Option<String>,
    /// The file it came from.
    pub source: String,
    /// Date of the content, when known.
    pub date: Option<NaiveDate>,
    /// Further fields kept with the document and returned in each hit's payload under
    /// `metadata` (a record's `metadata` object); empty for most documents.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The groups that may read the document; `None` when it carries no list, and is then
    /// readable by everyone unless the searcher treats such documents as private.
    pub acl: Option<Vec<String>>,
}

impl Document {
    /// A digest of everything stored for the document; re-ingesting the same digest is a no-op.
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            &self.id,
            &self.title,
            &self.text,
            self.url.as_deref().unwrap_or(""),
            &self.source,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(
            self.date
                .map(|d| d.to_string())
                .unwrap_or_default()
                .as_bytes(),
        );
        // Hashed only when present, so documents without metadata keep the digests they were
        // stored with; keys in sorted order, so the digest does not depend on how they were
        // written.
        if !self.metadata.is_empty() {
            let sorted: std::collections::BTreeMap<_, _> = self.metadata.iter().collect();
            h.update([0]);
            h.update(
                serde_json::to_string(&sorted)
                    .unwrap_or_default()
                    .as_bytes(),
            );
        }
        // Hashed only when present, for the same reason; a changed list is a changed document,
        // so re-ingesting it rewrites who may read it.
        if let Some(acl) = &self.acl {
            h.update([1]);
            for group in acl {
                h.update(group.as_bytes());
                h.update([0]);
            }
        }
        format!("{:x}", h.finalize())
    }
}

/// A line or file that could not be ingested; the rest of the input still is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestIssue {
    /// The file at fault.
    pub file: PathBuf,
    /// 1-based line number, for JSONL input.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for IngestIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

#[derive(Deserialize)]
struct Record {
    #[serde(alias = "_id")]
    id: Option<IdValue>,
    #[serde(default)]
    title: Option<String>,
    text: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    acl: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue {
    Text(String),
    Number(i64),
}

/// Parse a date given as `YYYY-MM-DD` or as an RFC 3339 timestamp.
pub fn parse_date(s: &str) -> Result<NaiveDate, String> {
    let s = s.trim();
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(s).map(|t| t.date_naive()))
        .map_err(|_| format!("date `{s}` is neither YYYY-MM-DD nor RFC 3339"))
}

/// Read a JSONL file of records `{"_id"|"id", "title", "text", "url", "date"}` (BEIR corpus
/// layout included). A malformed line becomes an [`IngestIssue`] and the other lines still load.
pub fn read_jsonl(path: &Path, each: impl FnMut(Document)) -> std::io::Result<Vec<IngestIssue>> {
    let file = std::fs::File::open(path)?;
    read_jsonl_from(std::io::BufReader::new(file), path, each)
}

/// Read JSONL records from `input` as [`read_jsonl`] reads a file; `path` names the input in
/// issues and is each document's source (an uploaded file's name, say).
pub fn read_jsonl_from(
    input: impl BufRead,
    path: &Path,
    mut each: impl FnMut(Document),
) -> std::io::Result<Vec<IngestIssue>> {
    let mut issues = Vec::new();
    for line in JsonlRecords::new(input, path) {
        match line? {
            Line::Document(document) => each(document),
            Line::Issue(issue) => issues.push(issue),
        }
    }
    Ok(issues)
}

/// What one line of a JSONL input gave.
#[derive(Debug)]
pub(crate) enum Line {
    Document(Document),
    /// A line skipped, or a record kept with something dropped (its document comes next).
    Issue(IngestIssue),
}

/// The records of a JSONL input, read one line at a time so that an input of any size is read
/// in bounded memory. A read error ends the input.
pub(crate) struct JsonlRecords<R> {
    lines: std::io::Split<R>,
    line: usize,
    path: PathBuf,
    source: String,
    /// A record whose issue was given first.
    held: Option<Document>,
}

impl<R: BufRead> JsonlRecords<R> {
    pub(crate) fn new(input: R, path: &Path) -> Self {
        Self {
            lines: input.split(b'\n'),
            line: 0,
            path: path.to_owned(),
            source: path.display().to_string(),
            held: None,
        }
    }

    /// Lines read so far.
    pub(crate) fn lines_read(&self) -> usize {
        self.line
    }

    /// The input's name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What the line just read gives; `None` for a blank line.
    fn parse(&mut self, line: Vec<u8>) -> Option<Line> {
        let n = self.line;
        let path = &self.path;
        let issue = |message: String| IngestIssue {
            file: path.to_owned(),
            line: Some(n),
            message,
        };
        let mut kept_with_issue = None;
        let line = match String::from_utf8(line) {
            Ok(line) => line,
            Err(_) => {
                return Some(Line::Issue(issue("the line is not valid UTF-8".into())));
            }
        };
        if line.trim().is_empty() {
            return None;
        }
        let record: Record = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                return Some(Line::Issue(issue(format!("not a valid record: {e}"))));
            }
        };
        if record.text.trim().is_empty()
            && record.title.as_deref().is_none_or(|t| t.trim().is_empty())
        {
            return Some(Line::Issue(issue(
                "the record has no text and no title".into(),
            )));
        }
        let date = match record.date.as_deref().map(parse_date).transpose() {
            Ok(d) => d,
            Err(e) => {
                return Some(Line::Issue(issue(e)));
            }
        };
        let id = match record.id {
            Some(IdValue::Text(s)) if !s.trim().is_empty() => s,
            Some(IdValue::Number(n)) => n.to_string(),
            _ => short_hash(&record.text),
        };
        let metadata = match record.metadata {
            Some(serde_json::Value::Object(fields)) => fields,
            None | Some(serde_json::Value::Null) => serde_json::Map::new(),
            Some(_) => {
                kept_with_issue = Some(issue(
                    "`metadata` is not an object; the record is kept without it".into(),
                ));
                serde_json::Map::new()
            }
        };
        let acl = match record.acl.map(checked_acl).transpose() {
            Ok(acl) => acl,
            Err(e) => {
                // Kept out rather than kept readable by everyone.
                return Some(Line::Issue(issue(e)));
            }
        };
        // A title is a plain-text label; one scraped from a web page may still carry its HTML
        // escapes ("Jekyll &amp; Hyde"), which no reader of the title wants and no text names.
        let title = record
            .title
            .filter(|t| !t.trim().is_empty())
            .map(|t| html_escape::decode_html_entities(&t).into_owned())
            .unwrap_or_else(|| first_words(&record.text, 8));
        let document = Document {
            id,
            title,
            text: record.text,
            url: record.url,
            source: self.source.clone(),
            date,
            metadata,
            acl,
        };
        match kept_with_issue {
            Some(issue) => {
                self.held = Some(document);
                Some(Line::Issue(issue))
            }
            None => Some(Line::Document(document)),
        }
    }
}

impl<R: BufRead> Iterator for JsonlRecords<R> {
    type Item = std::io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(document) = self.held.take() {
            return Some(Ok(Line::Document(document)));
        }
        loop {
            let line = match self.lines.next()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            self.line += 1;
            if let Some(parsed) = self.parse(line) {
                return Some(Ok(parsed));
            }
        }
    }
}

/// An access list as given: group names trimmed, none empty, at least one. An empty list would
/// read as "no list" to the engines' filters and so as public: refused instead.
pub fn checked_acl(groups: Vec<String>) -> Result<Vec<String>, String> {
    let groups: Vec<String> = groups.into_iter().map(|g| g.trim().to_owned()).collect();
    if groups.is_empty() {
        return Err(
            "`acl` is empty: list the groups that may read the document, or leave \
                    `acl` out"
                .into(),
        );
    }
    if groups.iter().any(String::is_empty) {
        return Err("`acl` holds an empty group name".into());
    }
    Ok(groups)
}

/// Split a Markdown or plain-text file into chunks on headings and paragraphs.
///
/// Paragraphs are merged up to `max_chars` characters so that a chunk carries enough context to be
/// found; a heading starts a new chunk and becomes part of its title. Lines inside fenced code
/// blocks are never headings or paragraph breaks.
pub fn chunk_text_file(
    path: &Path,
    source: &str,
    content: &str,
    max_chars: usize,
) -> Vec<Document> {
    let content = content.replace("\r\n", "\n");
    let (url, content) = source_address(&content);
    let file_title = content
        .lines()
        .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_owned()))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let mut sections: Vec<(String, Vec<String>)> = vec![(String::new(), Vec::new())];
    let mut paragraph = String::new();
    let mut in_fence = false;
    let end_paragraph = |sections: &mut Vec<(String, Vec<String>)>, paragraph: &mut String| {
        let text = std::mem::take(paragraph).trim().to_owned();
        if !text.is_empty() {
            sections
                .last_mut()
                .expect("there is always a section")
                .1
                .push(text);
        }
    };
    for line in content.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence {
            if let Some(heading) = heading_text(line) {
                end_paragraph(&mut sections, &mut paragraph);
                sections.push((heading, Vec::new()));
                continue;
            }
            if line.trim().is_empty() {
                end_paragraph(&mut sections, &mut paragraph);
                continue;
            }
        }
        paragraph.push_str(line.trim_end());
        paragraph.push('\n');
    }
    end_paragraph(&mut sections, &mut paragraph);

    let mut chunks: Vec<(String, String)> = Vec::new();
    for (section, paragraphs) in sections {
        let mut current = String::new();
        for paragraph in paragraphs {
            let len = |s: &str| s.chars().count();
            if !current.is_empty() && len(&current) + 2 + len(&paragraph) > max_chars {
                chunks.push((section.clone(), std::mem::take(&mut current)));
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(&paragraph);
        }
        if !current.is_empty() {
            chunks.push((section, current));
        }
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, (section, text))| Document {
            metadata: serde_json::Map::new(),
            acl: None,
            id: format!("{source}#{i}"),
            title: if section.is_empty() || section == file_title {
                file_title.clone()
            } else {
                format!("{file_title}: {section}")
            },
            text,
            url: url.clone(),
            source: source.to_owned(),
            date: None,
        })
        .collect()
}

/// The address a fetched page's file names on its first line (`<!-- source: https://… -->`, as
/// `ferret ingest <url>` writes it), and the content after that line; no address, and the
/// content whole, for any other file.
fn source_address(content: &str) -> (Option<String>, &str) {
    let (first, rest) = content.split_once('\n').unwrap_or((content, ""));
    let address = first
        .trim()
        .strip_prefix("<!-- source:")
        .and_then(|r| r.strip_suffix("-->"))
        .map(str::trim)
        .filter(|a| {
            (a.starts_with("https://") || a.starts_with("http://"))
                && !a.contains(char::is_whitespace)
        });
    match address {
        Some(address) => (Some(address.to_owned()), rest),
        None => (None, content),
    }
}

/// A Markdown ATX heading: one to six `#` and a space (`#tag` and `#!/bin/sh` are not headings).
fn heading_text(line: &str) -> Option<String> {
    let trimmed = line.trim_start();
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    let rest = &trimmed[hashes..];
    ((1..=6).contains(&hashes) && rest.starts_with(' '))
        .then(|| rest.trim().to_owned())
        .filter(|t| !t.is_empty())
}

fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetched_pages_source_line_becomes_every_chunks_address() {
        let content = "<!-- source: https://example.org/runbook -->\n\n# Runbook\n\nRotate keys.\n";
        let docs = chunk_text_file(Path::new("runbook.md"), "runbook.md", content, 800);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].url.as_deref(), Some("https://example.org/runbook"));
        assert!(!docs[0].text.contains("source:"), "{}", docs[0].text);
        let plain = chunk_text_file(Path::new("a.md"), "a.md", "<!-- note -->\ntext\n", 800);
        assert_eq!(plain[0].url, None);
    }

    #[test]
    fn a_malformed_line_is_reported_with_file_and_line_and_the_rest_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        std::fs::write(
            &path,
            "{\"_id\":\"a\",\"title\":\"A\",\"text\":\"alpha\"}\n{not json\n\n{\"id\":7,\"text\":\"seven\",\"date\":\"2024-03-01\"}\n{\"id\":\"d\",\"text\":\"bad date\",\"date\":\"yesterday\"}\n",
        )
        .unwrap();
        let mut docs = Vec::new();
        let issues = read_jsonl(&path, |d| docs.push(d)).unwrap();
        assert_eq!(
            docs.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            ["a", "7"]
        );
        assert_eq!(docs[1].date, NaiveDate::from_ymd_opt(2024, 3, 1));
        assert_eq!(
            issues.iter().map(|i| i.line).collect::<Vec<_>>(),
            [Some(2), Some(5)]
        );
        assert!(issues[0]
            .to_string()
            .starts_with(&format!("{}:2: ", path.display())));
    }

    #[test]
    fn a_records_metadata_is_kept_is_hashed_and_reaches_the_hit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        std::fs::write(
            &path,
            "{\"id\":\"a\",\"text\":\"alpha\",\"metadata\":{\"groups\":[\"staff\"]}}\n\
             {\"id\":\"b\",\"text\":\"beta\",\"metadata\":\"staff\"}\n\
             {\"id\":\"c\",\"text\":\"gamma\"}\n",
        )
        .unwrap();
        let mut docs = Vec::new();
        let issues = read_jsonl(&path, |d| docs.push(d)).unwrap();
        assert_eq!(docs.len(), 3, "a record with bad metadata still loads");
        assert_eq!(issues.len(), 1);
        assert!(issues[0].message.contains("metadata"), "{}", issues[0]);
        assert_eq!(docs[0].metadata["groups"], serde_json::json!(["staff"]));
        assert!(docs[1].metadata.is_empty() && docs[2].metadata.is_empty());

        let mut bare = docs[0].clone();
        bare.metadata.clear();
        assert_ne!(docs[0].content_hash(), bare.content_hash());
        let hash = docs[0].content_hash();
        let hit = crate::to_hit(1.0, crate::payload(&docs[0], &hash), "local")
            .unwrap_or_else(|| panic!("a stored payload reads back as a hit"));
        assert_eq!(
            hit.payload[crate::METADATA_FIELD]["groups"],
            serde_json::json!(["staff"])
        );
        assert!(!crate::payload(&docs[2], "h").contains_key(crate::METADATA_FIELD));
    }

    #[test]
    fn markdown_is_chunked_on_headings_with_the_section_in_the_title() {
        let md = "# Guide\n\nIntro text.\n\n## Install\n\nRun the installer.\n\nThen restart.\n\n## Use\n\nType a question.";
        let docs = chunk_text_file(Path::new("guide.md"), "guide.md", md, 1000);
        let view: Vec<_> = docs
            .iter()
            .map(|d| (d.id.as_str(), d.title.as_str(), d.text.as_str()))
            .collect();
        assert_eq!(
            view,
            [
                ("guide.md#0", "Guide", "Intro text."),
                (
                    "guide.md#1",
                    "Guide: Install",
                    "Run the installer.\n\nThen restart."
                ),
                ("guide.md#2", "Guide: Use", "Type a question."),
            ]
        );
    }

    #[test]
    fn code_fences_hashtags_and_windows_line_endings_do_not_fool_the_chunker() {
        let md = "# Ops\r\n\r\nIntro #tag here.\r\n\r\n```sh\r\n#!/bin/sh\r\n# not a heading\r\n\r\necho hi\r\n```\r\nbefore\r\n## Next\r\nafter";
        let docs = chunk_text_file(Path::new("ops.md"), "ops.md", md, 1000);
        let view: Vec<_> = docs
            .iter()
            .map(|d| (d.title.as_str(), d.text.as_str()))
            .collect();
        assert_eq!(
            view,
            [
                (
                    "Ops",
                    "Intro #tag here.\n\n```sh\n#!/bin/sh\n# not a heading\n\necho hi\n```\nbefore"
                ),
                ("Ops: Next", "after"),
            ]
        );
    }

    #[test]
    fn a_records_title_reads_as_plain_text_and_its_text_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        std::fs::write(
            &path,
            "{\"id\":\"a\",\"title\":\"Jekyll &amp; Hyde (musical) &#8211; &quot;Lucy&quot;\",\"text\":\"if a &lt; b &amp;&amp; c\"}\n",
        )
        .unwrap();
        let mut docs = Vec::new();
        read_jsonl(&path, |d| docs.push(d)).unwrap();
        assert_eq!(docs[0].title, "Jekyll & Hyde (musical) \u{2013} \"Lucy\"");
        assert_eq!(
            docs[0].text, "if a &lt; b &amp;&amp; c",
            "text may hold escapes on purpose (code)"
        );
    }

    #[test]
    fn a_non_utf8_line_is_an_issue_and_the_rest_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.jsonl");
        let mut bytes = b"{\"id\":\"a\",\"text\":\"alpha\"}\n".to_vec();
        bytes.extend_from_slice(
            b"{\"id\":\"b\",\"text\":\"\xff\xfe\"}\n{\"id\":\"c\",\"text\":\"gamma\"}\n",
        );
        std::fs::write(&path, bytes).unwrap();
        let mut docs = Vec::new();
        let issues = read_jsonl(&path, |d| docs.push(d.id)).unwrap();
        assert_eq!(docs, ["a", "c"]);
        assert_eq!(
            (issues[0].line, issues[0].message.as_str()),
            (Some(2), "the line is not valid UTF-8")
        );
    }

    #[test]
    fn long_sections_split_on_paragraphs() {
        let text = (0..6)
            .map(|i| format!("Paragraph {i} {}", "word ".repeat(30)))
            .collect::<Vec<_>>()
            .join("\n\n");
        let docs = chunk_text_file(Path::new("notes.txt"), "notes.txt", &text, 400);
        assert!(docs.len() >= 3, "{} chunks", docs.len());
        assert!(docs
            .iter()
            .all(|d| d.text.len() <= 400 && d.title == "notes"));
    }
}
