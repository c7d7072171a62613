//! How a [`crate::Fetcher`] behaves: who it says it is, how long and how much it reads, whether
//! it obeys robots.txt, and which private addresses it may reach after all.

use std::time::Duration;

/// The user agent sent with every request: it names Ferret, so a site owner can recognise (and
/// address in robots.txt, as `ferret`) what is reading their pages.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "ferret/",
    env!("CARGO_PKG_VERSION"),
    " (page fetcher for a search index)"
);

/// How a [`crate::Fetcher`] fetches: one value rather than a list of arguments, so a caller
/// changes the one setting it cares about (`FetchConfig { allow, ..Default::default() }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchConfig {
    /// Sent as `User-Agent`; its first token (before `/` or a space) is the name robots.txt
    /// rules are matched against.
    pub user_agent: String,
    /// Bound on each whole request (connecting, redirects and reading the body): a page that
    /// takes longer is not worth holding an ingestion for.
    pub timeout: Duration,
    /// Bytes of body read at most: a larger page is refused rather than cut, since a cut page
    /// would be ingested as if it were whole.
    pub max_body_bytes: usize,
    /// Redirects followed at most before giving up.
    pub max_redirects: usize,
    /// Whether robots.txt is fetched and obeyed before the page.
    pub robots: RobotsPolicy,
    /// Hosts and address ranges that may be reached although they are private, loopback or
    /// otherwise internal (every such address is refused by default).
    pub allow: Vec<AllowedTarget>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            timeout: Duration::from_secs(20),
            max_body_bytes: 5 * 1024 * 1024,
            max_redirects: 5,
            robots: RobotsPolicy::Respect,
            allow: Vec::new(),
        }
    }
}

/// Whether a site's robots.txt is obeyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RobotsPolicy {
    /// Fetch `/robots.txt` first and refuse a page it disallows for our user agent; a site whose
    /// robots.txt cannot be read (5xx, no answer) is treated as closed.
    #[default]
    Respect,
    /// Fetch the page without asking: for sites the operator owns or has permission to read.
    Ignore,
}

/// A target that may be reached although its address is one a fetch refuses by default
/// (loopback, private, link-local, …): an intranet wiki, a local test server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedTarget {
    /// A host name (or IP literal) whose addresses are all allowed, whatever they are. Matched
    /// without regard to case or a trailing dot.
    Host(String),
    /// Every address in this range, whichever host name led to it.
    Range(ipnet::IpNet),
}
