//! A fetched page as markdown, and how it is stored as a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use url::Url;

use crate::FetchError;

/// Characters of a file name before `.md`, at most: well under every file system's limit of
/// 255 bytes, with room for the hash that keeps long names apart.
const MAX_STEM: usize = 100;

/// One page, fetched and turned into markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    /// The address asked for (parsed, so normalised: `HTTP://Example.org` is
    /// `http://example.org/`).
    pub url: Url,
    /// The address the page was read from, after redirects.
    pub final_url: Url,
    /// The page's media type as served (`text/html`), without parameters; for a page served
    /// without one, the type its content was taken as.
    pub content_type: String,
    /// The page's title: HTML's `<title>`, else the first `# ` heading.
    pub title: Option<String>,
    /// The page's main content as markdown (a markdown or plain-text page as it was served).
    pub markdown: String,
}

/// `url` as it may be shown, stored and compared: without a user name, password or fragment.
pub fn shown_address(url: &Url) -> Url {
    let mut address = url.clone();
    // Both fail only on an address without a host, which carries no credentials.
    let _ = address.set_username("");
    let _ = address.set_password(None);
    address.set_fragment(None);
    address
}

impl FetchedPage {
    /// The page's address as it may be shown and stored: [`FetchedPage::final_url`] without
    /// a user name, password or fragment.
    pub fn address(&self) -> Url {
        shown_address(&self.final_url)
    }

    /// A file name for the page, from the host and path of [`FetchedPage::address`] (so two
    /// addresses redirecting to one page share a file), then a hash of the whole address (so
    /// two pages never do): lower case, only `[a-z0-9._-]`, never empty, never `..` or a
    /// leading dot, ending in `.md`.
    pub fn file_name(&self) -> String {
        file_name_for(&self.address())
    }

    /// Writes the markdown into `dir` under [`FetchedPage::file_name`], its first line an HTML
    /// comment naming the source (`<!-- source: URL -->`), and returns the file's path.
    ///
    /// The file is written under a temporary name in the same directory and renamed into place,
    /// so a reader (an indexer watching the directory) never sees half a page, and an existing
    /// file is replaced whole. A file that already holds exactly this text is left untouched:
    /// fetching an unchanged page again writes nothing.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, FetchError> {
        let path = dir.join(self.file_name());
        let failed = |source| FetchError::Save {
            path: path.clone(),
            source,
        };
        // A URL as the url crate writes it escapes `<`, `>` and spaces, so it cannot end the
        // comment early.
        let text = format!(
            "<!-- source: {} -->\n\n{}\n",
            self.address(),
            self.markdown.trim_end()
        );
        if std::fs::read(&path).is_ok_and(|held| held == text.as_bytes()) {
            return Ok(path);
        }
        // The folder is the caller's choice of where pages are kept: made when missing.
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".ferret-fetch-").suffix(".tmp");
        // A temporary file is private to its owner; what it becomes is an ordinary file, as
        // the user's umask makes them.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let mut file = builder.tempfile_in(dir).map_err(failed)?;
        file.write_all(text.as_bytes()).map_err(failed)?;
        file.as_file().sync_all().map_err(failed)?;
        file.persist(&path).map_err(|e| failed(e.error))?;
        Ok(path)
    }
}

fn file_name_for(url: &Url) -> String {
    let mut raw = url.host_str().unwrap_or_default().to_owned();
    if let Some(port) = url.port() {
        raw.push_str(&format!("-{port}"));
    }
    let path = url.path();
    // `page.html` and `page` are one page to a reader: the extension only adds noise before
    // `.md`.
    let path = [".html", ".htm", ".md", ".markdown", ".txt"]
        .iter()
        .find_map(|extension| path.strip_suffix(extension))
        .unwrap_or(path);
    raw.push_str(path);

    let mut stem = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        // Runs of separators collapse, so `..` can never appear.
        let last = stem.chars().last();
        if (c == '-' || c == '.') && last == Some(c) {
            continue;
        }
        stem.push(c);
    }
    let mut stem = trim_separators(&stem).to_owned();

    let too_long = stem.len() > MAX_STEM;
    if too_long {
        // Only ASCII is left, so any byte index is a character boundary.
        stem.truncate(MAX_STEM);
        stem = trim_separators(&stem).to_owned();
    }
    if stem.is_empty() {
        stem.push_str("page");
    }
    // Readable parts alone would give `/a/b` and `/a-b`, `/Docs` and `/docs`, `http:` and
    // `https:` one file, the second page silently replacing the first (and its chunks in the
    // index): the whole address's hash keeps them apart.
    let mut whole = url.clone();
    whole.set_fragment(None);
    stem.push_str(&format!("-{:016x}", fnv1a(whole.as_str())));
    stem.push_str(".md");
    stem
}

fn trim_separators(name: &str) -> &str {
    name.trim_matches(|c| matches!(c, '.' | '-' | '_'))
}

/// FNV-1a: a hash whose value is the same on every platform and Rust version, so a page keeps
/// its file name from one run to the next (std's hasher promises neither).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name(url: &str) -> String {
        file_name_for(&Url::parse(url).unwrap())
    }

    fn assert_safe(name: &str) {
        assert!(name.ends_with(".md"), "{name}");
        assert!(name.len() > ".md".len(), "{name}");
        assert!(name.len() <= MAX_STEM + 17 + 3, "{name}");
        assert!(!name.contains(".."), "{name}");
        assert!(!name.starts_with('.'), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c)),
            "{name}"
        );
    }

    /// The readable part of a name, before the address's hash.
    fn readable(name: &str) -> &str {
        name.strip_suffix(".md")
            .and_then(|stem| stem.rsplit_once('-'))
            .map_or(name, |(readable, _)| readable)
    }

    #[test]
    fn names_come_from_host_and_path_then_the_addresss_hash() {
        assert_eq!(
            readable(&name("https://Example.org/Docs/Guide.html")),
            "example.org-docs-guide"
        );
        assert_eq!(readable(&name("https://example.org/")), "example.org");
        assert_eq!(
            readable(&name("http://internal.example:8080/a/b/")),
            "internal.example-8080-a-b"
        );
        assert_eq!(
            readable(&name("https://example.org/caf%C3%A9")),
            "example.org-caf-c3-a9"
        );
        assert_eq!(readable(&name("http://[::1]:9/x")), "1-9-x");
        // The same address always gives the same name, so a page fetched again replaces itself.
        assert_eq!(
            name("https://example.org/docs"),
            name("https://example.org/docs#intro")
        );
    }

    #[test]
    fn queries_and_long_paths_add_a_hash_that_keeps_pages_apart() {
        let one = name("https://example.org/list?page=1");
        let two = name("https://example.org/list?page=2");
        assert_ne!(one, two);
        assert!(one.starts_with("example.org-list-"), "{one}");
        assert_eq!(one, name("https://example.org/list?page=1#top"));
        let long_a = name(&format!("https://example.org/{}a", "x".repeat(300)));
        let long_b = name(&format!("https://example.org/{}b", "x".repeat(300)));
        assert_ne!(long_a, long_b);
        assert_safe(&long_a);
    }

    #[test]
    fn hostile_paths_give_safe_names() {
        for url in [
            "http://example.org/../../etc/passwd",
            "http://example.org/%2e%2e/%2e%2e/etc",
            "http://example.org/....//...",
            "http://example.org/.hidden",
            "http://example.org/a\\b",
            "http://example.org/%00%2f",
            "http://0.0.0.0/",
            "http://x/---",
        ] {
            assert_safe(&name(url));
        }
    }

    proptest! {
        #[test]
        fn any_path_gives_a_safe_name(path in "\\PC{0,400}", query in proptest::option::of("\\PC{0,20}")) {
            let mut url = Url::parse("https://example.org/").unwrap();
            url.set_path(&path);
            url.set_query(query.as_deref());
            assert_safe(&file_name_for(&url));
        }
    }
}
