//! Reading a markdown syllabus: its agenda (title, modules) and the references it holds, and
//! sorting those references by what a research run does with them.
//!
//! Where a reference sits decides what it is for: a web address in the References section is
//! lasting content to ingest, one in a module's text only seeds a one-off web search about the
//! passage around it. File names (`notes.md`) are looked up in the knowledge base wherever they
//! are. Code blocks and code spans are examples, not references: no web address is taken from
//! them (a code span holding nothing but a file name still names that file).

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ops::Range;

use ferret_core::text::one_line;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};
use url::Url;

mod scan;

use scan::{
    bare_addresses, describe, file_name, file_names, is_file_char, keywords, link_target, unmasked,
    web_target, Passages,
};

/// Headings that open the References section, lower-cased, once numbering and punctuation around
/// them are dropped ("5. References:" is one).
const REFERENCE_HEADINGS: [&str; 7] = [
    "references",
    "références",
    "bibliography",
    "bibliographie",
    "sources",
    "reading list",
    "further reading",
];

/// What is said of files that are not text, by extension.
const CONVERT: &str = "convert it to markdown or text and ingest the file";
const NOT_TEXT: [(&str, &str); 15] = [
    ("pdf", CONVERT),
    ("doc", CONVERT),
    ("docx", CONVERT),
    ("ppt", CONVERT),
    ("pptx", CONVERT),
    ("xls", CONVERT),
    ("xlsx", CONVERT),
    ("epub", CONVERT),
    ("zip", "unpack it and ingest its text files"),
    ("png", "an image has no text to ingest"),
    ("jpg", "an image has no text to ingest"),
    ("jpeg", "an image has no text to ingest"),
    ("gif", "an image has no text to ingest"),
    ("mp4", "ingest a transcript instead"),
    ("mp3", "ingest a transcript instead"),
];

/// What a syllabus says: the agenda a research brief is written from, and its references.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Syllabus {
    /// The first level-1 heading (not a References one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The plain text before the first module (under the title), when there is any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introduction: Option<String>,
    /// Every heading but the title and the References section (with its sub-headings), in order.
    pub modules: Vec<Module>,
    /// Every reference found, once each, in the order of the place that counts (see
    /// [`Syllabus::read`]).
    pub references: Vec<Reference>,
}

/// One heading of the syllabus and the text under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// The heading as plain text.
    pub heading: String,
    /// Its level, 1 to 6.
    pub level: u8,
    /// The headings it sits under, outermost first, the title left out.
    pub path: Vec<String>,
    /// The plain text between this heading and the next one, one line per paragraph or list
    /// item: markdown removed, links as their text, code blocks left out.
    pub text: String,
    /// Its line in the syllabus, from 1.
    pub line: usize,
}

/// What a reference points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// An absolute address (http and https, but also others such as ftp, to be reported).
    Url(Url),
    /// A file name ("notes.md"), without the folders it was written with.
    File(String),
}

/// Where in the syllabus a reference sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Place {
    /// In the References section (or one of its sub-headings).
    References,
    /// In the text of a module.
    Module {
        /// The heading it sits under: the module's, else the title (text before any module),
        /// else empty.
        heading: String,
        /// The paragraph holding it as plain text, or only its sentence when the paragraph is
        /// longer than about 300 characters.
        passage: String,
    },
}

/// One reference of the syllabus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// What it points at.
    pub target: Target,
    /// The link's text, when it is not the address itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// In References: the text that comes with it, without its address, title or keywords.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// In References: the keywords given with it ("Keywords: a, b").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Where it sits.
    pub place: Place,
    /// Its line in the syllabus, from 1.
    pub line: usize,
}

/// The file names a knowledge base already holds.
pub trait KnownFiles {
    /// Whether the knowledge base holds a file of this name.
    fn contains(&self, file_name: &str) -> bool;
}

impl<F: Fn(&str) -> bool + ?Sized> KnownFiles for F {
    fn contains(&self, file_name: &str) -> bool {
        self(file_name)
    }
}

impl<T: Borrow<str> + Hash + Eq, S: BuildHasher> KnownFiles for HashSet<T, S> {
    fn contains(&self, file_name: &str) -> bool {
        HashSet::contains(self, file_name)
    }
}

impl<T: Borrow<str> + Ord> KnownFiles for BTreeSet<T> {
    fn contains(&self, file_name: &str) -> bool {
        BTreeSet::contains(self, file_name)
    }
}

/// A reference that is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unread {
    /// The reference.
    pub reference: Reference,
    /// Why it is not read and what to do instead, for the user.
    pub reason: String,
}

/// A syllabus's references sorted by what a research run does with them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    /// File names the knowledge base holds: searched there.
    pub known: Vec<Reference>,
    /// Web addresses in References: lasting content to fetch and ingest.
    pub to_ingest: Vec<Reference>,
    /// Web addresses in a module's text: a one-off web search about their passage.
    pub ephemeral: Vec<Reference>,
    /// File names the knowledge base does not hold.
    pub missing_files: Vec<Reference>,
    /// Files and addresses whose content is not text (PDF, images, archives…).
    pub not_text: Vec<Unread>,
    /// Addresses that are not http or https (ftp, file…).
    pub not_web: Vec<Unread>,
}

impl Syllabus {
    /// Reads a markdown syllabus. Any text is a syllabus, perhaps an empty one: this never fails.
    ///
    /// The same target found twice is one reference: a mention in References wins over one in a
    /// module (the address is then ingested, not searched once), else the first wins; it takes
    /// the title, text and keywords it lacks from the others. Addresses are compared without
    /// their fragment (`#section`).
    pub fn read(markdown: &str) -> Syllabus {
        Reader::new(markdown).read(markdown)
    }

    /// Sorts the references: file names by whether `known` holds them, web addresses by where
    /// they sit, and aside what cannot be read (not text, not a web address).
    pub fn classify(&self, known: &dyn KnownFiles) -> Classification {
        let mut sorted = Classification::default();
        for reference in self.references.iter().cloned() {
            if let Some(reason) = unreadable(&reference.target) {
                let list = match reference.target {
                    Target::Url(ref url) if !is_web(url) => &mut sorted.not_web,
                    _ => &mut sorted.not_text,
                };
                list.push(Unread { reference, reason });
                continue;
            }
            let list = match (&reference.target, &reference.place) {
                (Target::File(name), _) if known.contains(name) => &mut sorted.known,
                (Target::File(_), _) => &mut sorted.missing_files,
                (Target::Url(_), Place::References) => &mut sorted.to_ingest,
                (Target::Url(_), Place::Module { .. }) => &mut sorted.ephemeral,
            };
            list.push(reference);
        }
        sorted
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Url(url) => f.write_str(url.as_str()),
            Target::File(name) => f.write_str(name),
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::References => f.write_str("References"),
            Place::Module { heading, .. } if heading.is_empty() => f.write_str("(no heading)"),
            Place::Module { heading, .. } => write!(f, "\"{heading}\""),
        }
    }
}

/// A reference as [`Classification`] prints it, with why it is not read, if so.
type Row<'a> = (&'a Reference, Option<&'a str>);

impl Classification {
    /// Each kind's label and its rows.
    fn kinds(&self) -> [(&'static str, Vec<Row<'_>>); 6] {
        fn read(refs: &[Reference]) -> Vec<Row<'_>> {
            refs.iter().map(|r| (r, None)).collect()
        }
        fn unread(refs: &[Unread]) -> Vec<Row<'_>> {
            refs.iter()
                .map(|u| (&u.reference, Some(u.reason.as_str())))
                .collect()
        }
        [
            ("known", read(&self.known)),
            ("to ingest", read(&self.to_ingest)),
            ("ephemeral", read(&self.ephemeral)),
            ("missing file", read(&self.missing_files)),
            ("not text", unread(&self.not_text)),
            ("not web", unread(&self.not_web)),
        ]
    }
}

/// A count line, then one line per reference: kind, target, where it sits and, for those not
/// read, why.
impl fmt::Display for Classification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = self.kinds();
        let total: usize = kinds.iter().map(|(_, rows)| rows.len()).sum();
        if total == 0 {
            return writeln!(f, "no references");
        }
        let counts: Vec<String> = kinds
            .iter()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(label, rows)| match (*label, rows.len()) {
                ("missing file", many @ 2..) => format!("{many} missing files"),
                (label, count) => format!("{count} {label}"),
            })
            .collect();
        let noun = if total == 1 {
            "reference"
        } else {
            "references"
        };
        writeln!(f, "{total} {noun}: {}", counts.join(", "))?;
        for (label, rows) in &kinds {
            for (reference, reason) in rows {
                let (target, line, place) = (&reference.target, reference.line, &reference.place);
                write!(f, "  {label:<13}{target} (line {line}, {place})")?;
                match reason {
                    Some(reason) => writeln!(f, ": {reason}")?,
                    None => writeln!(f)?,
                }
            }
        }
        Ok(())
    }
}

fn is_web(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// Why a target cannot be read, if so: not a web address, or a file that is not text.
fn unreadable(target: &Target) -> Option<String> {
    let name = match target {
        Target::Url(url) if !is_web(url) => {
            let scheme = url.scheme();
            return Some(format!(
                "{scheme}: is not a web address: only http and https are read"
            ));
        }
        Target::Url(url) => url.path().rsplit('/').next().unwrap_or_default(),
        Target::File(name) => name,
    };
    let (_, extension) = name.rsplit_once('.')?;
    let extension = extension.to_ascii_lowercase();
    let (_, advice) = NOT_TEXT.iter().find(|(e, _)| *e == extension)?;
    Some(format!(
        "{} is not read: {advice}",
        extension.to_ascii_uppercase()
    ))
}

/// The section the reader is in.
#[derive(Debug, Clone, Copy)]
enum Section {
    /// Before the first module (under the title, if any).
    Introduction,
    /// Under this module (its index).
    Module(usize),
    /// In References, opened by a heading of this level.
    References(u8),
}

/// A target found in a block, before it becomes a [`Reference`].
#[derive(Debug)]
struct Mention {
    target: Target,
    title: Option<String>,
    /// Its text in the block (link text, address, file name).
    at: Range<usize>,
    line: usize,
}

impl Mention {
    fn into_reference(
        self,
        place: Place,
        text: Option<String>,
        keywords: Vec<String>,
    ) -> Reference {
        let Mention {
            target,
            title,
            line,
            ..
        } = self;
        Reference {
            target,
            title,
            text,
            keywords,
            place,
            line,
        }
    }
}

/// A link or image whose text is being read.
#[derive(Debug)]
struct OpenLink {
    dest: String,
    from: usize,
    line: usize,
}

/// The plain text of one leaf block (paragraph, list item's own text, heading, table row) and
/// what it references.
#[derive(Debug, Default)]
struct Block {
    /// Soft and hard line breaks kept as `\n`: a keywords line ends at one.
    text: String,
    /// Where each run of text starts in `text`, and its line.
    runs: Vec<(usize, usize)>,
    /// Link text and code spans: no bare address or file name is looked for there.
    masked: Vec<Range<usize>>,
    /// Links, images and file names in code spans.
    mentions: Vec<Mention>,
}

impl Block {
    fn mention(&mut self, target: Target, title: Option<String>, at: Range<usize>, line: usize) {
        self.mentions.push(Mention {
            target,
            title,
            at,
            line,
        });
    }

    fn line_at(&self, at: usize) -> usize {
        let run = self.runs.partition_point(|&(start, _)| start <= at);
        self.runs
            .get(run.saturating_sub(1))
            .map_or(1, |&(_, line)| line)
    }

    /// All its mentions in text order: links, then bare addresses and file names in the prose.
    fn into_mentions(mut self) -> (String, Vec<Mention>) {
        let mut masked = std::mem::take(&mut self.masked);
        let addresses: Vec<Range<usize>> = unmasked(&self.text, &masked)
            .flat_map(|gap| bare_addresses(&self.text, gap))
            .collect();
        for at in addresses {
            if let Some(target) = web_target(&self.text[at.clone()]) {
                self.mention(target, None, at.clone(), self.line_at(at.start));
            }
            // Even an address that does not parse holds no file name.
            masked.push(at);
        }
        let files: Vec<Range<usize>> = unmasked(&self.text, &masked)
            .flat_map(|gap| file_names(&self.text, gap))
            .collect();
        for at in files {
            if let Some(name) = file_name(&self.text[at.clone()]) {
                let line = self.line_at(at.start);
                self.mention(Target::File(name.to_owned()), None, at, line);
            }
        }
        self.mentions.sort_by_key(|m| m.at.start);
        (self.text, self.mentions)
    }
}

/// Walks the parser's events, block by block.
struct Reader {
    line_starts: Vec<usize>,
    syllabus: Syllabus,
    introduction: Vec<String>,
    /// The headings above the current one (level, text), the title and References left out.
    parents: Vec<(u8, String)>,
    section: Section,
    block: Block,
    open_links: Vec<OpenLink>,
    /// The level and line of the heading being read.
    heading: Option<(u8, usize)>,
    /// Depth inside code and metadata blocks, whose text is not read.
    skipping: usize,
    /// References in document order, duplicates included.
    found: Vec<Reference>,
    /// The references of the last References block, which a following keywords line completes.
    last_entry: Range<usize>,
}

impl Reader {
    fn new(markdown: &str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(markdown.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Reader {
            line_starts,
            syllabus: Syllabus::default(),
            introduction: Vec::new(),
            parents: Vec::new(),
            section: Section::Introduction,
            block: Block::default(),
            open_links: Vec::new(),
            heading: None,
            skipping: 0,
            found: Vec::new(),
            last_entry: 0..0,
        }
    }

    fn read(mut self, markdown: &str) -> Syllabus {
        let options = Options::ENABLE_TABLES
            | Options::ENABLE_FOOTNOTES
            | Options::ENABLE_STRIKETHROUGH
            | Options::ENABLE_TASKLISTS
            | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
        for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
            match event {
                Event::Start(tag) => self.start(tag, range.start),
                Event::End(tag) => self.end(tag),
                Event::Text(text) => self.push_text(&text, range.start),
                Event::Code(code) => self.push_code(&code, range.start),
                Event::SoftBreak | Event::HardBreak => self.block.text.push('\n'),
                Event::Rule => self.flush(),
                // Raw HTML, footnote marks, task boxes and math are no prose.
                _ => {}
            }
        }
        self.flush();
        let introduction = self.introduction.join("\n");
        self.syllabus.introduction = (!introduction.is_empty()).then_some(introduction);
        self.syllabus.references = merge(self.found);
        self.syllabus
    }

    fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset)
    }

    fn start(&mut self, tag: Tag<'_>, offset: usize) {
        match tag {
            Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript => {}
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                let line = self.line(offset);
                let (dest, from) = (dest_url.into_string(), self.block.text.len());
                self.open_links.push(OpenLink { dest, from, line });
            }
            Tag::TableCell => {
                if !self.block.text.is_empty() {
                    self.block.text.push_str(" | ");
                }
            }
            Tag::CodeBlock(_) | Tag::MetadataBlock(_) => {
                self.flush();
                self.skipping += 1;
            }
            Tag::Heading { level, .. } => {
                self.flush();
                self.heading = Some((level as u8, self.line(offset)));
            }
            _ => self.flush(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::TableCell => {}
            TagEnd::Link | TagEnd::Image => self.close_link(),
            TagEnd::CodeBlock | TagEnd::MetadataBlock(_) => {
                self.skipping = self.skipping.saturating_sub(1);
            }
            TagEnd::Heading(_) => self.end_heading(),
            _ => self.flush(),
        }
    }

    fn push_text(&mut self, text: &str, offset: usize) {
        if self.skipping == 0 {
            let line = self.line(offset);
            self.block.runs.push((self.block.text.len(), line));
            self.block.text.push_str(text);
        }
    }

    /// A code span reads as text, but only a lone file name in it is a reference.
    fn push_code(&mut self, code: &str, offset: usize) {
        let from = self.block.text.len();
        self.push_text(code, offset);
        let at = from..self.block.text.len();
        let name = code.trim();
        if let Some(name) = file_name(name).filter(|_| name.chars().all(is_file_char)) {
            let line = self.line(offset);
            let target = Target::File(name.to_owned());
            self.block.mention(target, None, at.clone(), line);
        }
        self.block.masked.push(at);
    }

    fn close_link(&mut self) {
        let Some(link) = self.open_links.pop() else {
            return;
        };
        let at = link.from.min(self.block.text.len())..self.block.text.len();
        self.block.masked.push(at.clone());
        let Some(target) = link_target(&link.dest) else {
            return;
        };
        let text = one_line(&self.block.text[at.clone()]);
        let is_address = text.is_empty()
            || text == link.dest.trim()
            || match &target {
                Target::Url(url) => Url::parse(&text).is_ok_and(|t| t == *url),
                Target::File(name) => text == *name,
            };
        let title = (!is_address).then_some(text);
        self.block.mention(target, title, at, link.line);
    }

    fn end_heading(&mut self) {
        let Some((level, line)) = self.heading.take() else {
            return;
        };
        let (text, mentions) = std::mem::take(&mut self.block).into_mentions();
        self.open_links.clear();
        self.enter(level, one_line(&text), line);
        // A heading's own links belong to the section it opens.
        self.place(&text, mentions);
    }

    /// Opens the section of a heading.
    fn enter(&mut self, level: u8, heading: String, line: usize) {
        self.last_entry = 0..0;
        if matches!(self.section, Section::References(opened) if level > opened) {
            return;
        }
        self.parents.retain(|&(above, _)| above < level);
        if is_references_heading(&heading) {
            self.section = Section::References(level);
        } else if level == 1 && self.syllabus.title.is_none() && !heading.is_empty() {
            self.syllabus.title = Some(heading);
            self.section = Section::Introduction;
        } else {
            let path = self.parents.iter().map(|(_, h)| h.clone()).collect();
            self.parents.push((level, heading.clone()));
            let text = String::new();
            let module = Module {
                heading,
                level,
                path,
                text,
                line,
            };
            self.syllabus.modules.push(module);
            self.section = Section::Module(self.syllabus.modules.len() - 1);
        }
    }

    /// Ends the current block: its references found, its text added to its section's.
    fn flush(&mut self) {
        self.open_links.clear();
        let block = std::mem::take(&mut self.block);
        if block.text.trim().is_empty() && block.mentions.is_empty() {
            return;
        }
        let (text, mentions) = block.into_mentions();
        self.place(&text, mentions);
        let plain = one_line(&text);
        match self.section {
            Section::Introduction => self.introduction.push(plain),
            Section::Module(index) => {
                let module = &mut self.syllabus.modules[index];
                if !module.text.is_empty() {
                    module.text.push('\n');
                }
                module.text.push_str(&plain);
            }
            Section::References(_) => {}
        }
    }

    /// Turns a block's mentions into references of the section it sits in.
    fn place(&mut self, text: &str, mentions: Vec<Mention>) {
        let heading = match self.section {
            Section::References(_) => return self.add_entry(text, mentions),
            Section::Module(index) => &self.syllabus.modules[index].heading,
            Section::Introduction => self.syllabus.title.as_deref().unwrap_or_default(),
        };
        let heading = heading.to_owned();
        let passages = Passages::new(text);
        for mention in mentions {
            let passage = passages.around(&mention.at);
            let place = Place::Module {
                heading: heading.clone(),
                passage,
            };
            self.found
                .push(mention.into_reference(place, None, Vec::new()));
        }
    }

    /// A block of References: its mentions share its text and keywords. A block with keywords
    /// and no mention completes the block before it ("- https://a.org/x" then "Keywords: b").
    fn add_entry(&mut self, text: &str, mentions: Vec<Mention>) {
        let (mut cut, keywords) = keywords(text);
        // Several targets in one entry ("[A](…) and [B](…): …"): what joins them goes too.
        if let (Some(first), Some(last)) = (mentions.first(), mentions.last()) {
            cut.push(first.at.start..last.at.end);
        }
        let description = describe(text, &cut);
        if mentions.is_empty() {
            if keywords.is_empty() {
                self.last_entry = 0..0;
            }
            for reference in &mut self.found[self.last_entry.clone()] {
                reference.text = match (reference.text.take(), &description) {
                    (Some(text), Some(more)) => Some(format!("{text} {more}")),
                    (text, more) => text.or_else(|| more.clone()),
                };
                for keyword in &keywords {
                    if !reference.keywords.contains(keyword) {
                        reference.keywords.push(keyword.clone());
                    }
                }
            }
            return;
        }
        let first = self.found.len();
        for mention in mentions {
            let (text, keywords) = (description.clone(), keywords.clone());
            self.found
                .push(mention.into_reference(Place::References, text, keywords));
        }
        self.last_entry = first..self.found.len();
    }
}

/// Merges the references to one target (see [`Syllabus::read`]), in document order.
fn merge(found: Vec<Reference>) -> Vec<Reference> {
    let mut kept: Vec<Reference> = Vec::with_capacity(found.len());
    let mut index: HashMap<(bool, String), usize> = HashMap::new();
    for reference in found {
        let key = match &reference.target {
            Target::Url(url) => {
                let mut url = url.clone();
                url.set_fragment(None);
                (false, url.into())
            }
            Target::File(name) => (true, name.clone()),
        };
        let Some(&i) = index.get(&key) else {
            index.insert(key, kept.len());
            kept.push(reference);
            continue;
        };
        let mut other = reference;
        if other.place == Place::References && kept[i].place != Place::References {
            std::mem::swap(&mut kept[i], &mut other);
        }
        let first = &mut kept[i];
        first.title = first.title.take().or(other.title);
        first.text = first.text.take().or(other.text);
        if first.keywords.is_empty() {
            first.keywords = other.keywords;
        }
    }
    // Stable: references of one line keep their order.
    kept.sort_by_key(|r| r.line);
    kept
}

fn is_references_heading(heading: &str) -> bool {
    let name = heading
        .trim_matches(|c: char| !c.is_alphabetic())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    REFERENCE_HEADINGS.contains(&name.as_str())
}

#[cfg(test)]
mod tests;
