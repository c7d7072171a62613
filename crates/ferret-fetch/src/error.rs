//! What can go wrong fetching a page, each failure saying what failed and whether a retry can
//! help.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ferret_core::RetryClass;

/// A page could not be fetched, converted or saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The fetcher could not be set up (no TLS backend, an empty allowed host).
    #[error("the fetcher could not be set up: {reason}")]
    Setup {
        /// What is wrong.
        reason: String,
    },
    /// The address is not a URL at all.
    #[error("`{url}` is not a URL: {reason}")]
    InvalidUrl {
        /// The address as given.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// The URL is not http or https (file:, ftp:, data:, …), or has no host.
    #[error("`{url}` is not fetched: {reason}; only http and https URLs with a host are")]
    UnsupportedUrl {
        /// The address as given (or redirected to).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host is, or resolves to, an address that is refused by default (loopback, private,
    /// link-local, cloud metadata, …). No connection was made.
    #[error(
        "refused to connect to {host} for {url}: {address} is {reason}; if it is meant to be \
         reached, allow it: `[fetch] allow = [\"{host}\"]` (or a range holding {address}) in \
         ferret.toml, or an AllowedTarget in FetchConfig::allow"
    )]
    Blocked {
        /// The URL being fetched: the redirect's target when an IP-literal target was refused
        /// at a redirect, else the URL asked for (`host` then says which host was refused,
        /// which may be one redirected to).
        url: String,
        /// The host refused, as written in its URL.
        host: String,
        /// The address refused.
        address: IpAddr,
        /// Why, as a phrase: "a private address".
        reason: String,
    },
    /// The host name could not be resolved.
    #[error("{host} could not be resolved: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// The site's robots.txt disallows the page for our user agent.
    #[error("{url} is disallowed for `{agent}` by the site's robots.txt")]
    RobotsDisallowed {
        /// The page.
        url: String,
        /// The user-agent token the rules were matched against.
        agent: String,
    },
    /// The site's robots.txt could not be read (a 5xx, a 429, no answer), so the page is not
    /// fetched: a site whose rules are unknown is treated as closed.
    #[error(
        "robots.txt at {robots_url} could not be read ({reason}), so the page is not fetched; \
         retry later, or set RobotsPolicy::Ignore for a site you may read regardless"
    )]
    RobotsUnavailable {
        /// The robots.txt address.
        robots_url: String,
        /// What went wrong reading it.
        reason: String,
    },
    /// More redirects than `FetchConfig::max_redirects`.
    #[error("{url} redirected more than {limit} times")]
    TooManyRedirects {
        /// The page asked for.
        url: String,
        /// The configured limit.
        limit: usize,
    },
    /// No answer within `FetchConfig::timeout`.
    #[error("{url} did not answer within {timeout:?}")]
    Timeout {
        /// The address asked for.
        url: String,
        /// The configured bound.
        timeout: Duration,
    },
    /// The connection failed or broke (refused, reset, TLS).
    #[error("{url} could not be read: {reason}")]
    Transport {
        /// The address asked for.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered {status}")]
    Status {
        /// The address that answered.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header of a 429 or 503, as sent.
        retry_after: Option<String>,
    },
    /// The body is larger than `FetchConfig::max_body_bytes`.
    #[error("{url} is larger than the {limit}-byte limit (FetchConfig::max_body_bytes)")]
    TooLarge {
        /// The address that answered.
        url: String,
        /// The configured limit.
        limit: usize,
    },
    /// The page is neither HTML, markdown nor plain text.
    #[error("{url} is {content_type}: only HTML, markdown and plain text pages are ingested")]
    UnsupportedType {
        /// The address that answered.
        url: String,
        /// The content type, or what the body looked like when none was given.
        content_type: String,
    },
    /// The HTML could not be turned into markdown (nested too deep to walk safely).
    #[error("{url} could not be converted to markdown: {reason}")]
    Unconvertible {
        /// The address that answered.
        url: String,
        /// Why.
        reason: String,
    },
    /// The markdown could not be written.
    #[error("{} could not be written: {source}", path.display())]
    Save {
        /// The file (or its directory).
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

impl FetchError {
    /// Whether trying the same fetch again may succeed, and when.
    ///
    /// A refusal on principle (a blocked address, robots.txt, a type or size we do not take) is
    /// permanent; what the network or the server may do differently next time (a timeout, a
    /// 5xx, a 429, an unreadable robots.txt) is not.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Self::Resolve { .. }
            | Self::RobotsUnavailable { .. }
            | Self::Timeout { .. }
            | Self::Transport { .. } => RetryClass::Transient,
            Self::Status {
                status,
                retry_after,
                ..
            } => match status {
                429 => RetryClass::rate_limited(retry_after.as_deref()),
                408 | 500..=599 => RetryClass::Transient,
                _ => RetryClass::Permanent,
            },
            Self::Setup { .. }
            | Self::InvalidUrl { .. }
            | Self::UnsupportedUrl { .. }
            | Self::Blocked { .. }
            | Self::RobotsDisallowed { .. }
            | Self::TooManyRedirects { .. }
            | Self::TooLarge { .. }
            | Self::UnsupportedType { .. }
            | Self::Unconvertible { .. }
            | Self::Save { .. } => RetryClass::Permanent,
        }
    }

    /// True when the same fetch, unchanged, may succeed if tried again.
    pub fn is_retryable(&self) -> bool {
        self.retry_class().is_retryable()
    }
}
