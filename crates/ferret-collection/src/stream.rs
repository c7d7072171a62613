//! Reading files as an ingest goes: a folder's files one after the other, a JSONL file one line
//! at a time, so that what an ingest holds does not grow with its input.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, Read as _};
use std::path::{Path, PathBuf};

use ferret_core::Access;

use crate::documents::{chunk_text_file, Document, IngestIssue, JsonlRecords, Line};
use crate::PathDocuments;

type FileRecords = JsonlRecords<std::io::BufReader<std::fs::File>>;

/// The documents of a file or folder, read as they are asked for (see [`stream_path`]); what
/// reading found wrong is gathered as it goes, complete once the stream is drained.
#[derive(Default)]
pub struct DocumentStream {
    /// Files listed, read or still to read.
    pub files: usize,
    /// For each text file read, its source and the ids of the chunks it yields now: chunks of
    /// that source not in the set are stale.
    pub text_sources: Vec<(String, HashSet<String>)>,
    /// Lines or files skipped, with the reason.
    pub issues: Vec<IngestIssue>,
    unread: VecDeque<PathBuf>,
    max_chunk_chars: usize,
    reading: Option<FileRecords>,
    /// Documents read ahead: a text file's chunks, or documents given whole.
    queued: VecDeque<Document>,
    default_acl: Option<Vec<String>>,
    /// Whom the ingest writes for, when it is not the index's operator.
    writer: Option<Access>,
    /// Lines in the JSONL files not yet read to their end, counted when the stream was opened.
    lines_ahead: usize,
    /// Text files not yet read: how many chunks they hold is known once they are.
    text_files_ahead: usize,
}

impl std::fmt::Debug for DocumentStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentStream")
            .field("files", &self.files)
            .field("unread", &self.unread)
            .field("issues", &self.issues.len())
            .finish_non_exhaustive()
    }
}

/// List a file or a folder for reading: `.jsonl` files as records, `.md` / `.txt` files as
/// chunked text. Folders are walked recursively; other files in them are skipped. Unreadable
/// files and bad lines become issues as the stream reaches them; only a path that does not exist
/// is an error. JSONL lines are counted first (a fast pass that holds nothing), so the stream
/// knows how many documents it may still give.
pub fn stream_path(path: &Path, max_chunk_chars: usize) -> std::io::Result<DocumentStream> {
    let mut stream = DocumentStream {
        max_chunk_chars,
        ..Default::default()
    };
    if path.is_dir() {
        for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
            match entry {
                Ok(e) if e.file_type().is_file() && ingestible(e.path()) => {
                    stream.unread.push_back(e.into_path())
                }
                Ok(_) => {}
                Err(e) => stream.issues.push(IngestIssue {
                    file: e.path().unwrap_or(path).to_owned(),
                    line: None,
                    message: format!("cannot read: {e}"),
                }),
            }
        }
    } else if path.exists() {
        stream.unread.push_back(path.to_owned());
    } else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file or directory",
        ));
    }
    stream.files = stream.unread.len();
    for file in stream.unread.iter_mut() {
        // Sources are absolute so the same file has the same ids however it was named.
        if let Ok(absolute) = file.canonicalize() {
            *file = absolute;
        }
        if extension(file) == "jsonl" {
            // A file that cannot be counted is reported when it is read.
            stream.lines_ahead += count_lines(file).unwrap_or(0);
        } else {
            stream.text_files_ahead += 1;
        }
    }
    Ok(stream)
}

impl DocumentStream {
    /// Give `acl` to every document read that carries no list of its own (a folder's or an
    /// ingest request's default); a record's own `acl` wins.
    pub fn with_default_acl(mut self, acl: &[String]) -> Self {
        self.default_acl = Some(acl.to_vec());
        self
    }

    /// Write only what `writer` may: a document gets their groups when it lists none (after
    /// the default list), one listing a group they are not in is refused as an issue, and the
    /// ingest replaces no stored document they may not read (see
    /// [`ingest_read`](crate::ingest_read)). Without it the ingest writes as the index's
    /// operator: anything.
    pub fn written_by(mut self, writer: Access) -> Self {
        self.writer = Some(writer);
        self
    }

    /// Whom the ingest writes for, when it was restricted with [`DocumentStream::written_by`].
    pub fn writer(&self) -> Option<&Access> {
        self.writer.as_ref()
    }

    /// Start reading `file`, whose content `open` gives: `.jsonl` as records, `.md` / `.txt` as
    /// chunked text; anything else, or content that cannot be read, is an issue. Records from a
    /// source other than a file are read here whole.
    pub(crate) fn open<R: BufRead>(
        &mut self,
        file: &Path,
        max_chunk_chars: usize,
        open: impl FnOnce() -> std::io::Result<R>,
    ) {
        let unreadable = |e: std::io::Error| IngestIssue {
            file: file.to_owned(),
            line: None,
            message: format!("cannot read: {e}"),
        };
        match extension(file).as_str() {
            "jsonl" => match open() {
                Ok(input) => {
                    for line in JsonlRecords::new(input, file) {
                        match line {
                            Ok(Line::Document(document)) => self.queued.push_back(document),
                            Ok(Line::Issue(issue)) => self.issues.push(issue),
                            Err(e) => {
                                self.issues.push(unreadable(e));
                                break;
                            }
                        }
                    }
                }
                Err(e) => self.issues.push(unreadable(e)),
            },
            "md" | "markdown" | "txt" => {
                let mut content = String::new();
                match open().and_then(|mut input| input.read_to_string(&mut content)) {
                    Ok(_) => {
                        let source = file.display().to_string();
                        let chunks = chunk_text_file(file, &source, &content, max_chunk_chars);
                        self.text_sources
                            .push((source, chunks.iter().map(|d| d.id.clone()).collect()));
                        self.queued.extend(chunks);
                    }
                    Err(e) => self.issues.push(unreadable(e)),
                }
            }
            other => self.issues.push(IngestIssue {
                file: file.to_owned(),
                line: None,
                message: format!("unsupported file type `.{other}`: use .jsonl, .md or .txt"),
            }),
        }
    }

    /// The next document of the file being read or of the next file, before the default list.
    fn next_read(&mut self) -> Option<Document> {
        loop {
            if let Some(document) = self.queued.pop_front() {
                return Some(document);
            }
            if let Some(records) = &mut self.reading {
                let before = records.lines_read();
                let next = records.next();
                self.lines_ahead = self
                    .lines_ahead
                    .saturating_sub(records.lines_read() - before);
                match next {
                    Some(Ok(Line::Document(document))) => return Some(document),
                    Some(Ok(Line::Issue(issue))) => self.issues.push(issue),
                    Some(Err(e)) => {
                        self.issues.push(IngestIssue {
                            file: records.path().to_owned(),
                            line: Some(records.lines_read() + 1),
                            message: format!("cannot read the rest of the file: {e}"),
                        });
                        self.reading = None;
                    }
                    None => self.reading = None,
                }
                continue;
            }
            let file = self.unread.pop_front()?;
            if extension(&file) == "jsonl" {
                match std::fs::File::open(&file) {
                    Ok(f) => {
                        self.reading = Some(JsonlRecords::new(std::io::BufReader::new(f), &file))
                    }
                    Err(e) => self.issues.push(IngestIssue {
                        file,
                        line: None,
                        message: format!("cannot read: {e}"),
                    }),
                }
            } else {
                self.text_files_ahead -= 1;
                let max_chunk_chars = self.max_chunk_chars;
                self.open(&file, max_chunk_chars, || {
                    Ok(std::io::BufReader::new(std::fs::File::open(&file)?))
                });
            }
        }
    }
}

impl Iterator for DocumentStream {
    type Item = Document;

    fn next(&mut self) -> Option<Document> {
        loop {
            let mut document = self.next_read()?;
            if document.acl.is_none() {
                document.acl.clone_from(&self.default_acl);
            }
            let Some(writer) = &self.writer else {
                return Some(document);
            };
            let acl = document
                .acl
                .get_or_insert_with(|| writer.groups.iter().cloned().collect());
            let refused = if acl.is_empty() {
                Some(
                    "it would have no access list, and this writer is in no group to give it"
                        .to_owned(),
                )
            } else {
                acl.iter()
                    .find(|group| !writer.groups.contains(*group))
                    .map(|group| {
                        format!("its access list names `{group}`, a group this writer is not in")
                    })
            };
            match refused {
                Some(reason) => self.issues.push(IngestIssue {
                    file: document.source.clone().into(),
                    line: None,
                    message: format!("`{}` was not written: {reason}", document.id),
                }),
                None => return Some(document),
            }
        }
    }

    /// At most one document per JSONL line still to read, plus what is read ahead; no bound
    /// while a text file is still to be chunked.
    fn size_hint(&self) -> (usize, Option<usize>) {
        let lines = (self.text_files_ahead == 0).then_some(self.lines_ahead);
        (
            self.queued.len(),
            lines.map(|lines| self.queued.len() + lines),
        )
    }
}

impl From<PathDocuments> for DocumentStream {
    fn from(found: PathDocuments) -> Self {
        Self {
            files: found.files,
            text_sources: found.text_sources,
            issues: found.issues,
            queued: found.documents.into(),
            ..Default::default()
        }
    }
}

/// Lines in `file`: its newlines, plus a last line with none.
fn count_lines(file: &Path) -> std::io::Result<usize> {
    let mut input = std::fs::File::open(file)?;
    let mut buffer = vec![0u8; 1 << 20];
    let (mut lines, mut last) = (0, b'\n');
    loop {
        let read = input.read(&mut buffer)?;
        if read == 0 {
            return Ok(lines + usize::from(last != b'\n'));
        }
        lines += memchr::memchr_iter(b'\n', &buffer[..read]).count();
        last = buffer[read - 1];
    }
}

fn ingestible(path: &Path) -> bool {
    matches!(
        extension(path).as_str(),
        "jsonl" | "md" | "markdown" | "txt"
    )
}

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        dir
    }

    #[test]
    fn a_folder_streams_file_by_file_with_what_each_line_gave() {
        let dir = folder(&[
            (
                "a.jsonl",
                "{\"id\": \"1\", \"text\": \"one\"}\n\nnot json\n{\"id\": \"2\", \"text\": \"two\", \"metadata\": 3}",
            ),
            ("b.md", "# Heading\n\nSome prose."),
            ("c.csv", "skipped in a folder"),
        ]);
        let mut stream = stream_path(dir.path(), 1000).unwrap();
        assert_eq!(stream.files, 2);
        // The Markdown file's chunks are not counted until it is read.
        assert_eq!(stream.size_hint(), (0, None));
        let first = stream.next().unwrap();
        assert_eq!(first.id, "1");
        assert_eq!(stream.size_hint(), (0, None));
        let rest: Vec<Document> = stream.by_ref().collect();
        assert_eq!(rest[0].id, "2");
        assert!(rest[0].metadata.is_empty());
        assert!(rest[1].text.contains("Some prose."));
        assert_eq!(rest.len(), 2);
        let lines: Vec<Option<usize>> = stream.issues.iter().map(|i| i.line).collect();
        assert_eq!(lines, [Some(3), Some(4)], "{:?}", stream.issues);
        assert_eq!(stream.text_sources.len(), 1);
        assert_eq!(stream.size_hint(), (0, Some(0)));
    }

    #[test]
    fn a_jsonl_file_is_counted_before_it_is_read() {
        let dir = folder(&[(
            "a.jsonl",
            "{\"id\": \"1\", \"text\": \"one\"}\n\n{\"id\": \"2\", \"text\": \"two\"}",
        )]);
        let mut stream = stream_path(dir.path(), 1000).unwrap();
        // Three lines, the last without its newline; the blank one holds no document.
        assert_eq!(stream.size_hint(), (0, Some(3)));
        assert_eq!(stream.next().unwrap().id, "1");
        assert_eq!(stream.size_hint(), (0, Some(2)));
        assert_eq!(stream.next().unwrap().id, "2");
        assert_eq!(stream.size_hint(), (0, Some(0)));
        assert!(stream.next().is_none());
    }

    #[test]
    fn reading_whole_gives_what_streaming_gives() {
        let dir = folder(&[
            (
                "a.jsonl",
                "{\"id\": \"1\", \"text\": \"one\"}\n{\"text\": \"\"}\n",
            ),
            ("b.txt", "plain text"),
        ]);
        let whole = crate::read_path(dir.path(), 1000).unwrap();
        let mut stream = stream_path(dir.path(), 1000).unwrap();
        let streamed: Vec<Document> = stream.by_ref().collect();
        assert_eq!(whole.documents, streamed);
        assert_eq!(whole.issues.len(), 1);
        assert_eq!(whole.issues.len(), stream.issues.len());
        assert_eq!(whole.files, stream.files);
    }

    #[test]
    fn the_default_access_list_goes_to_records_without_their_own() {
        let dir = folder(&[(
            "a.jsonl",
            "{\"id\": \"open\", \"text\": \"x\"}\n{\"id\": \"own\", \"text\": \"y\", \"acl\": [\"staff\"]}\n",
        )]);
        let stream = stream_path(&dir.path().join("a.jsonl"), 1000)
            .unwrap()
            .with_default_acl(&["team".to_owned()]);
        let acls: Vec<Option<Vec<String>>> = stream.map(|d| d.acl).collect();
        assert_eq!(
            acls,
            [
                Some(vec!["team".to_owned()]),
                Some(vec!["staff".to_owned()])
            ]
        );
    }

    #[test]
    fn a_missing_path_is_an_error_and_an_unsupported_file_an_issue() {
        let dir = folder(&[("notes.pdf", "%PDF")]);
        assert!(stream_path(&dir.path().join("absent.jsonl"), 1000).is_err());
        let mut stream = stream_path(&dir.path().join("notes.pdf"), 1000).unwrap();
        assert!(stream.next().is_none());
        assert!(stream.issues[0].message.contains("unsupported file type"));
    }
}
