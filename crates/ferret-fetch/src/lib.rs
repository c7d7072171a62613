//! `ferret-fetch` fetches one web page safely and turns it into markdown for ingestion into a
//! search index. Safely means: only http and https; no connection to loopback, private,
//! link-local (cloud metadata), shared, multicast or otherwise internal addresses unless the
//! operator allows them ([`FetchConfig::allow`]), checked on every address actually connected
//! to, including after each redirect; robots.txt obeyed ([`RobotsPolicy`]); a bounded time, a
//! bounded number of redirects and a bounded body. HTML is reduced to its main content and
//! converted with `htmd`; markdown and plain text are taken as they are; anything else is
//! refused. A [`FetchedPage`] can be saved as a file atomically.
//!
//! It knows HTTP and HTML, not search: it must not depend on any backend crate, the executor,
//! the agent or a model crate. Whoever ingests pages (a collection, a backend, the CLI) calls it.

mod config;
mod content;
mod error;
mod fetcher;
mod guard;
mod page;

pub use config::{AllowedTarget, FetchConfig, RobotsPolicy, DEFAULT_USER_AGENT};
pub use error::FetchError;
pub use fetcher::Fetcher;
pub use guard::{NameResolver, SystemResolver};
pub use ipnet::IpNet;
pub use page::{shown_address, FetchedPage};
