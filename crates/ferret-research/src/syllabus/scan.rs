//! Scanning a block of a syllabus for what it refers to: link destinations, bare web addresses
//! and file names in prose, keywords lines, and the passage around each address.

use std::ops::Range;

use ferret_core::sentences::sentence_bounds;
use ferret_core::text::one_line;
use url::Url;

use super::{is_web, Target, NOT_TEXT};

/// Extensions of the text files a knowledge base holds. Only these (and [`NOT_TEXT`]) make a
/// word a file name: "Node.js" or "e.g." must not be one.
const TEXT_EXTENSIONS: [&str; 9] = [
    "txt", "md", "markdown", "rst", "adoc", "org", "html", "htm", "tex",
];

/// Link schemes that never name a reference (contacts, scripts, inline data): skipped while
/// reading. Other schemes than http and https are kept and classified [`Classification::not_web`](super::Classification::not_web).
const IGNORED_SCHEMES: [&str; 4] = ["mailto", "tel", "javascript", "data"];

/// Words that, followed by a colon, introduce a reference's keywords ("Keywords: a, b").
const KEYWORD_MARKERS: [&str; 5] = ["keywords", "key words", "mots-clés", "mots clés", "tags"];

/// Longest passage kept around an address in a module, in characters.
pub(super) const MAX_PASSAGE: usize = 300;

/// The target of a link's destination: an absolute address, or a relative path naming a file.
pub(super) fn link_target(dest: &str) -> Option<Target> {
    let dest = dest.trim();
    if dest.is_empty() || dest.starts_with('#') {
        return None;
    }
    match Url::parse(dest) {
        Ok(url) if IGNORED_SCHEMES.contains(&url.scheme()) => None,
        Ok(url) => Some(Target::Url(url)),
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let path = dest.split(['?', '#']).next().unwrap_or_default();
            file_name(path).map(|name| Target::File(name.to_owned()))
        }
        Err(_) => None,
    }
}

/// A bare address in prose: http or https with a host.
pub(super) fn web_target(text: &str) -> Option<Target> {
    Url::parse(text)
        .ok()
        .filter(|url| is_web(url) && url.host().is_some())
        .map(Target::Url)
}

/// The parts of `text` outside the masked ranges.
pub(super) fn unmasked(text: &str, masked: &[Range<usize>]) -> impl Iterator<Item = Range<usize>> {
    let mut sorted = masked.to_vec();
    sorted.sort_by_key(|r| r.start);
    let len = text.len();
    let mut from = 0;
    sorted
        .into_iter()
        .chain(std::iter::once(len..len))
        .filter_map(move |r| {
            let gap = from..r.start.max(from);
            from = from.max(r.end);
            (!gap.is_empty()).then_some(gap)
        })
}

/// Where bare http and https addresses are in `text[gap]`, trailing punctuation left out.
pub(super) fn bare_addresses(text: &str, gap: Range<usize>) -> Vec<Range<usize>> {
    let part = &text[gap.clone()];
    // ASCII lower-casing keeps every byte where it was.
    let lower = part.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("http") {
        let start = from + i;
        from = start + 4;
        let rest = &lower[start..];
        let glued = part[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        if glued || !(rest.starts_with("http://") || rest.starts_with("https://")) {
            continue;
        }
        let end = part[start..]
            .find(|c: char| c.is_whitespace() || "<>\"`".contains(c))
            .map_or(part.len(), |len| start + len);
        let end = start + trim_address(&part[start..end]).len();
        found.push(gap.start + start..gap.start + end);
        from = end.max(from);
    }
    found
}

/// An address without the punctuation of the sentence around it: "(see https://x.org/a)." gives
/// "https://x.org/a", but "https://x.org/A_(b)" keeps its balanced parenthesis.
pub(super) fn trim_address(address: &str) -> &str {
    // Brackets counted once: a run of closing ones must not cost a count each.
    let count = |c: char| address.matches(c).count();
    let open = ['(', '[', '{'].map(count);
    let mut close = [')', ']', '}'].map(count);
    let mut end = address.len();
    for c in address.chars().rev() {
        let bracket = ")]}".find(c);
        let trailing = match bracket {
            Some(kind) => close[kind] > open[kind],
            None => ".,;:!?'\"*_»…".contains(c),
        };
        if !trailing {
            break;
        }
        if let Some(kind) = bracket {
            close[kind] -= 1;
        }
        end -= c.len_utf8();
    }
    &address[..end]
}

pub(super) fn is_file_char(c: char) -> bool {
    c.is_alphanumeric() || "_-./\\".contains(c)
}

/// Where words that are file names are in `text[gap]` ("see notes.md." gives "notes.md").
pub(super) fn file_names(text: &str, gap: Range<usize>) -> Vec<Range<usize>> {
    let part = &text[gap.clone()];
    let mut found = Vec::new();
    let mut word_start = None;
    for (i, c) in part
        .char_indices()
        .chain(std::iter::once((part.len(), ' ')))
    {
        match (word_start, is_file_char(c)) {
            (None, true) => word_start = Some(i),
            (Some(start), false) => {
                word_start = None;
                let word = part[start..i].trim_end_matches('.');
                // "example.org/page.html" is an address without its scheme, not a file.
                let host = word
                    .split_once('/')
                    .is_some_and(|(first, _)| first.contains('.'));
                if !host && file_name(word).is_some() {
                    found.push(gap.start + start..gap.start + start + word.len());
                }
            }
            _ => {}
        }
    }
    found
}

/// The file name a path ends with, when its extension is one of a text or known non-text file.
pub(super) fn file_name(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next()?;
    let (stem, extension) = name.rsplit_once('.')?;
    let extension = extension.to_ascii_lowercase();
    let known = TEXT_EXTENSIONS.contains(&extension.as_str())
        || NOT_TEXT.iter().any(|(e, _)| *e == extension);
    (known && stem.chars().any(char::is_alphanumeric)).then_some(name)
}

/// The lines holding keywords (from their marker to the line's end) and the keywords.
pub(super) fn keywords(text: &str) -> (Vec<Range<usize>>, Vec<String>) {
    let mut lines = Vec::new();
    let mut keywords: Vec<String> = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        if let Some((marker, list)) = keyword_marker(line) {
            lines.push(line_start + marker..line_start + line.len());
            for keyword in list.split([',', ';']) {
                let keyword = keyword.trim().trim_end_matches('.').trim();
                if !keyword.is_empty() && !keywords.iter().any(|k| k == keyword) {
                    keywords.push(keyword.to_owned());
                }
            }
        }
        line_start += line.len() + 1;
    }
    (lines, keywords)
}

/// Where a keywords marker ("Keywords:", "Mots-clés :", "Tags:") starts in a line, and the text
/// after its colon.
pub(super) fn keyword_marker(line: &str) -> Option<(usize, &str)> {
    line.char_indices().find_map(|(i, _)| {
        let word_start = !line[..i]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        let after = KEYWORD_MARKERS
            .iter()
            .find_map(|marker| strip_prefix_ignoring_case(&line[i..], marker))?;
        let list = after.trim_start().strip_prefix(':')?;
        word_start.then_some((i, list))
    })
}

pub(super) fn strip_prefix_ignoring_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let mut chars = text.char_indices();
    for expected in prefix.chars() {
        let (_, c) = chars.next()?;
        if !c.to_lowercase().eq(expected.to_lowercase()) {
            return None;
        }
    }
    Some(&text[chars.offset()..])
}

/// The text of a References block once its addresses, link titles and keywords are cut out.
pub(super) fn describe(text: &str, cut: &[Range<usize>]) -> Option<String> {
    let kept: String = unmasked(text, cut).map(|gap| &text[gap]).collect();
    let mut description = one_line(&kept);
    // What wrapped an address that is gone: "Guide (https://a.org)" gives "Guide ()".
    for empty in ["()", "[]", "<>", "“”", "\"\""] {
        description = description.replace(empty, "");
    }
    let separators = |c: char| c.is_whitespace() || ":-–—|,;•·".contains(c);
    let description = one_line(description.trim_matches(separators));
    (!description.is_empty()).then_some(description)
}

/// The passages of one block: the whole block when short, else the sentence around an address,
/// cut around it when still too long. Work done once per block, not once per address.
pub(super) struct Passages<'t> {
    text: &'t str,
    /// The whole block, when short enough to be every address's passage.
    whole: Option<String>,
    ends: Vec<usize>,
}

impl<'t> Passages<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        let whole = Some(one_line(text)).filter(|whole| whole.chars().count() <= MAX_PASSAGE);
        let ends = match whole {
            Some(_) => Vec::new(),
            None => sentence_bounds(text).into_iter().map(|s| s.end).collect(),
        };
        Passages { text, whole, ends }
    }

    pub(super) fn around(&self, at: &Range<usize>) -> String {
        if let Some(whole) = &self.whole {
            return whole.clone();
        }
        let text = self.text;
        let start = match self.ends.partition_point(|&end| end <= at.start) {
            0 => 0,
            i => self.ends[i - 1],
        };
        let after = self.ends.partition_point(|&end| end < at.end);
        let end = self.ends.get(after).copied().unwrap_or(text.len());
        // Past this many bytes there are more than enough characters for a passage.
        let enough = 8 * MAX_PASSAGE;
        if end - start <= enough {
            let sentence = one_line(&text[start..end]);
            if sentence.chars().count() <= MAX_PASSAGE {
                return sentence;
            }
        }
        let mut from = at.start.saturating_sub(MAX_PASSAGE / 3).max(start);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let mut until = end.min(from + enough);
        while !text.is_char_boundary(until) {
            until += 1;
        }
        let window = one_line(&text[from..until]);
        let mut clipped: String = window.chars().take(MAX_PASSAGE).collect();
        if clipped.len() < window.len() || until < end {
            clipped.push('…');
        }
        if from > start {
            clipped.insert(0, '…');
        }
        clipped
    }
}
