//! Turning a fetched body into markdown: which types are taken, how the bytes become text, and
//! how HTML is reduced to its main content.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};
use ferret_core::text::one_line;
use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};
use url::Url;

/// The kinds of page ingested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `text/html`, `application/xhtml+xml`: converted to markdown.
    Html,
    /// `text/markdown`, `text/x-markdown`: taken as it is.
    Markdown,
    /// `text/plain`: taken as it is.
    Plain,
}

/// A `Content-Type` header read: its media type (lower case, without parameters) and charset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentType {
    pub(crate) essence: String,
    pub(crate) charset: Option<String>,
}

impl ContentType {
    pub(crate) fn parse(header: &str) -> Self {
        let mut parts = header.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.find_map(|param| {
            let (name, value) = param.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
        });
        Self { essence, charset }
    }

    /// The kind of page this type is, or `None` for a type that is not ingested.
    pub(crate) fn kind(&self) -> Option<Kind> {
        match self.essence.as_str() {
            "text/html" | "application/xhtml+xml" => Some(Kind::Html),
            "text/markdown" | "text/x-markdown" => Some(Kind::Markdown),
            "text/plain" => Some(Kind::Plain),
            _ => None,
        }
    }
}

/// The kind of a body sent without a content type, from its first bytes: `None` when it looks
/// binary (a NUL byte, or bytes that are not UTF-8), which is refused rather than guessed at.
pub(crate) fn sniff(body: &[u8]) -> Option<Kind> {
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return None;
    }
    if let Err(e) = std::str::from_utf8(head) {
        // `error_len` is `None` when the head merely ends inside a character.
        if e.error_len().is_some() {
            return None;
        }
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(512)])
        .trim_start_matches('\u{feff}')
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(Kind::Html)
    } else {
        Some(Kind::Plain)
    }
}

/// The body as text, in the charset it declares: a byte-order mark first, then the
/// `Content-Type` header's charset, then (for HTML) a `<meta charset>` or `<meta http-equiv>` in
/// its first 1024 bytes, else UTF-8. Decoded by the WHATWG encoding standard (`encoding_rs`), so
/// a byte a charset cannot map becomes U+FFFD rather than losing the page, and an unknown label
/// is read as UTF-8.
pub(crate) fn decode(body: &[u8], charset: Option<&str>, html: bool) -> String {
    let label = charset
        .map(str::to_owned)
        .or_else(|| html.then(|| meta_charset(body)).flatten());
    let encoding = label
        .and_then(|label| Encoding::for_label(label.trim().as_bytes()))
        // A page that says it is UTF-16 in its own bytes is read as UTF-8, as browsers do: had
        // it been UTF-16, the ASCII of its `<meta>` could not have been read.
        .filter(|e| !(html && charset.is_none() && (*e == UTF_16LE || *e == UTF_16BE)))
        .unwrap_or(UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// The charset a `<meta>` in the first 1024 bytes of an HTML page declares, if any.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(at) = tag.find("charset=") {
            let value = tag[at + 8..].trim_start_matches(['"', '\'', ' ']);
            let end = value
                .find(['"', '\'', ' ', ';', '/', '>'])
                .unwrap_or(value.len());
            let value = &value[..end];
            if !value.is_empty() {
                return Some(value.to_owned());
            }
        }
    }
    None
}

/// Elements dropped with everything inside them: code, styling, navigation and page chrome,
/// none of which is the page's content.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe", "svg",
    "template", "head",
];

/// Elements nested deeper than this are not converted: the converter walks the tree
/// recursively, and a page of a million nested `<div>`s (easily within the body limit) would
/// overflow the stack and abort the process.
const MAX_DEPTH: usize = 512;

/// Nesting, as [`scanned_depth_exceeds`] estimates it, past which a page is not even parsed:
/// the HTML parser's time grows with the square of the depth (40,000 nested `<div>`s take
/// seconds, the million that fit in 5 MiB would take most of an hour). Twice [`MAX_DEPTH`], as
/// the estimate is rough.
const MAX_SCANNED_DEPTH: usize = 2 * MAX_DEPTH;

/// Elements whose content is text to the parser, not markup: skipped whole by the scan.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Elements the scan does not count as open: void elements, elements whose end tag may be left
/// out (the parser closes them when the next one starts) and elements that cannot nest in
/// themselves. Counting them would take a sloppy but ordinary page for a deep one.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "thead", "tbody", "tfoot", "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head",
    "body", "a", "button", "nobr", "form",
];

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// An HTML page turned into markdown, with its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Converted {
    pub(crate) title: Option<String>,
    pub(crate) markdown: String,
}

/// The main content of an HTML page as markdown: the `<main>` element when there is one, else
/// the page's only `<article>`, else the `<body>`, with the [`DROPPED`] elements left out and
/// relative links made absolute against the page's `<base href>`, else `base` (the page's final
/// address), so a link still
/// leads somewhere once the markdown is stored elsewhere. The title is the `<title>`'s text,
/// else the first `# ` heading.
pub(crate) fn html_to_markdown(html: &str, base: &Url) -> Result<Converted, String> {
    if scanned_depth_exceeds(html, MAX_SCANNED_DEPTH) {
        return Err(format!(
            "elements are nested more than {MAX_SCANNED_DEPTH} deep (estimated before parsing)"
        ));
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(DROPPED.to_vec())
        .build();
    let document = converter
        .html_to_tree(html)
        .map_err(|e| format!("the HTML could not be parsed ({e})"))?;
    let elements = elements_in_order(&document)?;
    let first = |tag: &str| {
        elements
            .iter()
            .find(|(name, _)| name == tag)
            .map(|(_, n)| n)
    };
    let articles = elements
        .iter()
        .filter(|(name, _)| name == "article")
        .count();
    let root = first("main")
        .or_else(|| (articles == 1).then(|| first("article")).flatten())
        .or_else(|| first("body"))
        .unwrap_or(&document);
    // A page's `<base href>` (the first one, resolved against its address) is what its
    // relative links are relative to.
    let declared = first("base")
        .and_then(|node| attribute(node, "href"))
        .and_then(|href| base.join(href.trim()).ok())
        .filter(|url| matches!(url.scheme(), "http" | "https"));
    let base = declared.as_ref().unwrap_or(base);
    for (name, node) in &elements {
        if name == "a" || name == "img" {
            absolutise(node, if name == "a" { "href" } else { "src" }, base);
        }
    }
    let markdown = tidy(&converter.tree_to_markdown(root));
    let title = first("title")
        .map(|node| one_line(&text_of(node)))
        .filter(|title| !title.is_empty())
        .or_else(|| first_heading(&markdown));
    Ok(Converted { title, markdown })
}

/// Whether the tags of `html` open elements more than `limit` deep, estimated in one linear
/// pass: an open tag pushes its name, an end tag pops back to the latest element of that name
/// (and is ignored when none is open, as the parser ignores it), comments and raw-text elements
/// are skipped.
fn scanned_depth_exceeds(html: &str, limit: usize) -> bool {
    // ASCII lower-casing keeps every byte where it was, so indexes found in `lower` are
    // character boundaries (each is at an ASCII byte).
    let lower = html.to_ascii_lowercase();
    let mut stack: Vec<&str> = Vec::new();
    let mut open: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut at = 0;
    while let Some(offset) = lower[at..].find('<') {
        let start = at + offset + 1;
        if lower[start..].starts_with("!--") {
            // The parser ends a comment at `-->` or at `--!>`, whichever comes first.
            let ends = [("-->", 3), ("--!>", 4)]
                .into_iter()
                .filter_map(|(mark, length)| lower[start..].find(mark).map(|i| i + length))
                .min();
            match ends {
                Some(end) => at = start + end,
                None => return false,
            }
            continue;
        }
        let closing = lower[start..].starts_with('/');
        let name_start = start + usize::from(closing);
        let name_length = lower[name_start..]
            .bytes()
            .take_while(u8::is_ascii_alphanumeric)
            .count();
        at = name_start + name_length;
        if name_length == 0 {
            // A `<` that starts no tag (`a < b`): text.
            continue;
        }
        let name = &lower[name_start..at];
        let Some(end) = lower[at..].find('>') else {
            return false;
        };
        let self_closing = lower[..at + end].ends_with('/');
        at += end + 1;
        if closing {
            if open.get(name).is_some_and(|count| *count > 0) {
                while let Some(top) = stack.pop() {
                    if let Some(count) = open.get_mut(top) {
                        *count -= 1;
                    }
                    if top == name {
                        break;
                    }
                }
            }
            continue;
        }
        // Inside SVG or MathML, `<x/>` closes itself and `style` is an element; in HTML, `/>`
        // on an element that is not void is ignored (`<div/>` opens a div).
        let foreign = ["svg", "math"]
            .iter()
            .any(|tag| open.get(tag).is_some_and(|count| *count > 0));
        if RAW_TEXT.contains(&name) && !foreign {
            match lower[at..].find(&format!("</{name}")) {
                Some(end) => at += end,
                None => return false,
            }
            continue;
        }
        if name == "plaintext" {
            // Everything after it is text.
            return false;
        }
        if (self_closing && foreign) || NOT_NESTING.contains(&name) {
            continue;
        }
        stack.push(name);
        *open.entry(name).or_default() += 1;
        if stack.len() > limit {
            return true;
        }
    }
    false
}

/// Every HTML element's local name and node, in document order, walked without recursion.
/// Fails when the tree is nested deeper than [`MAX_DEPTH`].
fn elements_in_order(document: &Rc<Node>) -> Result<Vec<(String, Rc<Node>)>, String> {
    let mut found = Vec::new();
    let mut stack = vec![(Rc::clone(document), 0_usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!("elements are nested more than {MAX_DEPTH} deep"));
        }
        if let NodeData::Element { name, .. } = &node.data {
            // SVG and MathML have their own `title` and `a`: not the page's.
            if &*name.ns == HTML_NAMESPACE {
                found.push((name.local.to_string(), Rc::clone(&node)));
            }
        }
        let children = node.children.borrow();
        stack.extend(
            children
                .iter()
                .rev()
                .map(|child| (Rc::clone(child), depth + 1)),
        );
    }
    Ok(found)
}

/// Rewrites `attribute` of `node` to an absolute http(s) URL when it is relative; leaves it as
/// it is when it is already absolute or resolves to another scheme (`mailto:`, `javascript:`).
fn absolutise(node: &Node, attribute: &str, base: &Url) {
    let NodeData::Element { attrs, .. } = &node.data else {
        return;
    };
    for attr in attrs.borrow_mut().iter_mut() {
        if &*attr.name.local != attribute {
            continue;
        }
        if let Ok(resolved) = base.join(attr.value.trim()) {
            if matches!(resolved.scheme(), "http" | "https") {
                attr.value = String::from(resolved).into();
            }
        }
    }
}

/// The value of `node`'s attribute `name`, if it has one.
fn attribute(node: &Node, name: &str) -> Option<String> {
    let NodeData::Element { attrs, .. } = &node.data else {
        return None;
    };
    let attrs = attrs.borrow();
    attrs
        .iter()
        .find(|attr| &*attr.name.local == name)
        .map(|attr| attr.value.to_string())
}

/// The text inside `node`, tags left out.
fn text_of(node: &Rc<Node>) -> String {
    let mut text = String::new();
    let mut stack = vec![Rc::clone(node)];
    while let Some(node) = stack.pop() {
        if let NodeData::Text { contents } = &node.data {
            text.push_str(&contents.borrow());
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    text
}

/// Trailing spaces trimmed from each line and runs of blank lines cut to one: what dropped
/// elements leave behind. Code blocks are left exactly as they are.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank_run = 0;
    let mut in_fence = false;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if in_fence || fence {
            if fence {
                in_fence = !in_fence;
            }
            blank_run = 0;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Two trailing spaces are a hard line break in markdown: keep those.
        let line = if line.ends_with("  ") && !line.trim().is_empty() {
            line
        } else {
            line.trim_end()
        };
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The text of the first level-one ATX heading (`# Title`) outside code fences.
pub(crate) fn first_heading(markdown: &str) -> Option<String> {
    let mut in_fence = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || line.len() - trimmed.len() > 3 {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("# ") {
            // A closing sequence of `#`s is not part of the heading.
            let text = rest.trim().trim_end_matches('#').trim();
            if !text.is_empty() {
                return Some(one_line(text));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://example.org/docs/page.html").unwrap()
    }

    #[test]
    fn content_types_are_read_with_their_charset() {
        let html = ContentType::parse("Text/HTML; charset=\"ISO-8859-1\"");
        assert_eq!(html.essence, "text/html");
        assert_eq!(html.charset.as_deref(), Some("iso-8859-1"));
        assert_eq!(html.kind(), Some(Kind::Html));
        assert_eq!(
            ContentType::parse("application/xhtml+xml").kind(),
            Some(Kind::Html)
        );
        assert_eq!(
            ContentType::parse("text/markdown").kind(),
            Some(Kind::Markdown)
        );
        assert_eq!(
            ContentType::parse("text/x-markdown").kind(),
            Some(Kind::Markdown)
        );
        assert_eq!(
            ContentType::parse("text/plain; charset=utf-8").kind(),
            Some(Kind::Plain)
        );
        for refused in [
            "application/pdf",
            "image/png",
            "application/octet-stream",
            "",
        ] {
            assert_eq!(ContentType::parse(refused).kind(), None, "{refused}");
        }
    }

    #[test]
    fn bodies_without_a_type_are_sniffed() {
        assert_eq!(sniff(b"<!DOCTYPE html><p>x"), Some(Kind::Html));
        assert_eq!(sniff(b"\n  <html><body>x"), Some(Kind::Html));
        assert_eq!(sniff(b"just words"), Some(Kind::Plain));
        assert_eq!(sniff(b"%PDF-1.7\n\x00\x01"), None);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\xff\xfe"), None);
    }

    #[test]
    fn latin_1_is_decoded_and_utf_8_is_lossy() {
        assert_eq!(
            decode(b"caf\xe9 \x93quoted\x94", Some("iso-8859-1"), false),
            "café “quoted”"
        );
        assert_eq!(decode("café".as_bytes(), Some("utf-8"), false), "café");
        assert_eq!(decode(b"caf\xe9", None, false), "caf\u{fffd}");
        assert_eq!(decode(b"\xef\xbb\xbfhello", None, false), "hello");
        // A charset beyond Latin-1, from the header or from the page's own <meta>.
        assert_eq!(
            decode(b"\x82\xb1\x82\xf1", Some("shift_jis"), false),
            "こん"
        );
        assert_eq!(
            decode(
                b"<meta charset=\"windows-1251\"><p>\xcf\xf0\xe8\xe2\xe5\xf2</p>",
                None,
                true
            ),
            "<meta charset=\"windows-1251\"><p>Привет</p>"
        );
        assert_eq!(
            decode(
                b"<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=ISO-8859-1\">caf\xe9",
                None,
                true
            ),
            "<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=ISO-8859-1\">café"
        );
        // The header wins over the page; a page claiming UTF-16 in ASCII is UTF-8.
        assert!(decode(
            b"<meta charset=\"windows-1251\">\xc3\xa9",
            Some("utf-8"),
            true
        )
        .ends_with('é'));
        assert_eq!(
            decode(b"<meta charset=utf-16>\xc3\xa9", None, true),
            "<meta charset=utf-16>é"
        );
    }

    #[test]
    fn relative_links_follow_the_pages_base_href() {
        let html = r#"<html><head><base href="https://cdn.example.net/manual/v2/"></head>
            <body><p>See <a href="install.html">install</a> and <a href="/faq">the FAQ</a>.</p></body></html>"#;
        let md = html_to_markdown(html, &base()).unwrap().markdown;
        assert!(
            md.contains("[install](https://cdn.example.net/manual/v2/install.html)"),
            "{md}"
        );
        assert!(
            md.contains("[the FAQ](https://cdn.example.net/faq)"),
            "{md}"
        );
        // A base that is not a web address is ignored.
        let md = html_to_markdown(
            r#"<head><base href="javascript:x()"></head><body><a href="a.html">a</a></body>"#,
            &base(),
        )
        .unwrap()
        .markdown;
        assert!(md.contains("[a](https://example.org/docs/a.html)"), "{md}");
    }

    #[test]
    fn main_content_is_kept_and_chrome_dropped() {
        let html = r#"<html><head><title> A &amp; B
            page </title><style>.x{color:red}</style></head><body>
            <nav><a href="/home">Home nav</a></nav>
            <main><h1>Heading</h1><p>See <a href="/guide">the guide</a> and
            <a href="mailto:a@b.c">mail</a>.</p><script>var secret = 1;</script>
            <ul><li>one</li><li>two</li></ul></main>
            <footer>Footer text</footer></body></html>"#;
        let converted = html_to_markdown(html, &base()).unwrap();
        assert_eq!(converted.title.as_deref(), Some("A & B page"));
        let md = &converted.markdown;
        assert!(md.starts_with("# Heading"), "{md}");
        assert!(
            md.contains("[the guide](https://example.org/guide)"),
            "{md}"
        );
        assert!(md.contains("[mail](mailto:a@b.c)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        for absent in ["Home nav", "secret", "Footer", "color:red"] {
            assert!(!md.contains(absent), "{absent} in {md}");
        }
    }

    #[test]
    fn without_main_the_only_article_or_the_body_is_taken() {
        let one = "<body><p>Outside</p><article><h2>Inside</h2></article></body>";
        let md = html_to_markdown(one, &base()).unwrap().markdown;
        assert_eq!(md, "## Inside");
        let two = "<body><p>Outside</p><article>A</article><article>B</article></body>";
        let md = html_to_markdown(two, &base()).unwrap().markdown;
        assert!(
            md.contains("Outside") && md.contains('A') && md.contains('B'),
            "{md}"
        );
    }

    #[test]
    fn the_title_falls_back_to_the_first_heading() {
        let converted = html_to_markdown("<body><h2>Sub</h2><h1>Top</h1></body>", &base()).unwrap();
        assert_eq!(converted.title.as_deref(), Some("Top"));
        assert_eq!(
            first_heading("```\n# not this\n```\n# This one #\n"),
            Some("This one".into())
        );
        assert_eq!(first_heading("## Only a second level"), None);
        assert_eq!(first_heading("    # indented code"), None);
    }

    #[test]
    fn code_blocks_survive_the_tidying() {
        let md = tidy("# T\n\n\n\ntext \n```\nfn a() {}   \n\n\n\nfn b() {}\n```\n\n\nend");
        assert_eq!(
            md,
            "# T\n\ntext\n```\nfn a() {}   \n\n\n\nfn b() {}\n```\n\nend"
        );
    }

    #[test]
    fn svg_titles_are_not_the_page_title() {
        let html = "<body><svg><title>icon</title></svg><h1>Real</h1></body>";
        let converted = html_to_markdown(html, &base()).unwrap();
        assert_eq!(converted.title.as_deref(), Some("Real"));
    }

    #[test]
    fn self_closing_divs_and_odd_comment_ends_still_count_as_nesting() {
        // The parser opens `<div/>` as a div: a page of them nests as deep as it is long.
        assert!(scanned_depth_exceeds(&"<div/>".repeat(5_000), 1_024));
        assert!(scanned_depth_exceeds(
            &format!("<!-- x --!>{}", "<div>".repeat(5_000)),
            1_024
        ));
        // Inside SVG, `<path/>` closes itself: a large drawing is not deep.
        let drawing = format!("<svg>{}</svg>", "<path d='M0 0'/>".repeat(5_000));
        assert!(!scanned_depth_exceeds(&drawing, 1_024));
    }

    #[test]
    fn deeply_nested_html_is_refused_before_parsing() {
        // A million nested elements: parsed, this would take most of an hour.
        let depth = 1_000_000;
        let html = format!("{}x{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let error = html_to_markdown(&html, &base()).unwrap_err();
        assert!(error.contains("estimated before parsing"), "{error}");
        // End tags of elements never opened do not close anything.
        let html = "<div></span>".repeat(5_000);
        assert!(scanned_depth_exceeds(&html, MAX_SCANNED_DEPTH));
    }

    #[test]
    fn nesting_past_the_walk_limit_is_refused_after_parsing() {
        let depth = 700;
        let html = format!("{}x{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let error = html_to_markdown(&html, &base()).unwrap_err();
        assert!(error.contains("nested more than 512 deep"), "{error}");
        // Just under it, the page converts.
        let depth = 400;
        let html = format!("{}x{}", "<div>".repeat(depth), "</div>".repeat(depth));
        assert_eq!(html_to_markdown(&html, &base()).unwrap().markdown, "x");
    }

    #[test]
    fn sloppy_but_shallow_pages_pass_the_scan() {
        let unclosed = "<p>para <li>item <a href=x>link <td>cell <br> <img src=y>".repeat(5_000);
        assert!(!scanned_depth_exceeds(&unclosed, MAX_SCANNED_DEPTH));
        let balanced = "<div><section><span>x</span></section></div>".repeat(5_000);
        assert!(!scanned_depth_exceeds(&balanced, MAX_SCANNED_DEPTH));
        let scripted = format!(
            "<script>{}</script><!-- {} --><div>ok</div>",
            "'<div>'".repeat(5_000),
            "<div>".repeat(5_000)
        );
        assert!(!scanned_depth_exceeds(&scripted, MAX_SCANNED_DEPTH));
        assert!(!scanned_depth_exceeds("a < b and c<d", 1));
    }
}
