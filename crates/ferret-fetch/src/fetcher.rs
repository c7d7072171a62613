//! The fetch itself: check the address, ask robots.txt, read a capped body, convert it.

use std::error::Error as StdError;
use std::sync::Arc;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use url::{Position, Url};

use crate::config::{FetchConfig, RobotsPolicy};
use crate::content::{self, ContentType, Kind};
use crate::guard::{
    self, AllowList, Blocked, GuardedResolver, NameResolver, RedirectRefused, Refusal,
    ResolveFailed, SystemResolver,
};
use crate::{FetchError, FetchedPage};

/// What we ask for: the types we ingest first, anything else last (so a server with one type
/// only still answers, and we refuse it by its type rather than a 406).
const ACCEPT_TYPES: &str =
    "text/html,application/xhtml+xml;q=0.9,text/markdown;q=0.9,text/plain;q=0.8,*/*;q=0.1";

/// Bytes of robots.txt read at most; RFC 9309 lets a crawler stop at 500 KiB and obey what it
/// read.
const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// Fetches web pages and turns them into markdown, refusing internal addresses (see the crate
/// documentation). One fetcher serves many fetches; its connections are pooled.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    config: FetchConfig,
    allow: Arc<AllowList>,
    /// The user agent's product token, which robots.txt groups are matched against.
    robots_agent: String,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher resolving host names with the system's resolver.
    pub fn new(config: FetchConfig) -> Result<Self, FetchError> {
        Self::with_resolver(config, Arc::new(SystemResolver))
    }

    /// A fetcher resolving host names with `resolver` (every address it returns still goes
    /// through the address check).
    pub fn with_resolver(
        config: FetchConfig,
        resolver: Arc<dyn NameResolver>,
    ) -> Result<Self, FetchError> {
        let allow =
            Arc::new(AllowList::new(&config.allow).map_err(|reason| FetchError::Setup { reason })?);
        let client = reqwest::Client::builder()
            .user_agent(config.user_agent.as_str())
            .timeout(config.timeout)
            // A system proxy would connect on our behalf to whatever address it resolves: the
            // address check would see only the proxy.
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver {
                names: resolver,
                allow: Arc::clone(&allow),
            }))
            .redirect(guard::redirect_policy(
                Arc::clone(&allow),
                config.max_redirects,
            ))
            .referer(false)
            .build()
            .map_err(|e| FetchError::Setup {
                reason: format!("the HTTP client could not be built: {e}"),
            })?;
        let robots_agent = config
            .user_agent
            .split(|c: char| c == '/' || c.is_whitespace())
            .next()
            .filter(|token| !token.is_empty())
            .unwrap_or("ferret")
            .to_owned();
        Ok(Self {
            client,
            config,
            allow,
            robots_agent,
        })
    }

    /// The configuration this fetcher was built with.
    pub fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// Fetches `url` and returns its main content as markdown.
    ///
    /// Refused before anything is sent: a URL that is not http(s) with a host, and a host that
    /// is an internal IP address; refused before connecting: a host name whose addresses are
    /// all internal; refused at a redirect: a target that would be refused if asked for. Then
    /// robots.txt is obeyed (unless [`RobotsPolicy::Ignore`]), for the address asked and, after
    /// a redirect, for the page reached, whose content is dropped when it is disallowed; the
    /// body is read up to
    /// [`FetchConfig::max_body_bytes`], and HTML is converted while markdown and plain text are
    /// taken as they are; any other type is refused.
    pub async fn fetch(&self, url: &str) -> Result<FetchedPage, FetchError> {
        let asked = Url::parse(url.trim()).map_err(|e| FetchError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        guard::check_target(&asked, &self.allow).map_err(|r| refusal_error(&asked, r))?;
        tracing::debug!(url = %asked, "fetching");
        if self.config.robots == RobotsPolicy::Respect {
            self.obey_robots(&asked).await?;
        }

        let response = self
            .client
            .get(asked.clone())
            .header(ACCEPT, ACCEPT_TYPES)
            .send()
            .await
            .map_err(|e| self.transport_error(&asked, &e))?;
        let final_url = response.url().clone();
        let status = response.status();
        if status.is_redirection() {
            // reqwest hands back, unfollowed, a redirect to a scheme it cannot fetch (`file:`)
            // without asking the policy: say what was refused rather than "302".
            let target = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|location| final_url.join(location).ok());
            if let Some(target) = target {
                if let Err(refusal) = guard::check_target(&target, &self.allow) {
                    return Err(refusal_error(&target, refusal));
                }
            }
        }
        // A redirect leads to a page robots.txt has not been asked about: ask before its body
        // is read. The request has been made by then; what it returned is dropped.
        if self.config.robots == RobotsPolicy::Respect && status.is_success() && final_url != asked
        {
            self.obey_robots(&final_url).await?;
        }
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            return Err(FetchError::Status {
                url: final_url.to_string(),
                status: status.as_u16(),
                retry_after,
            });
        }
        let declared = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(ContentType::parse)
            .filter(|t| !t.essence.is_empty());
        // No decompression is asked for or done: a body the server encoded anyway would be read
        // as garbage text, so it is refused by its encoding.
        let encoding = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| !v.is_empty() && v != "identity");
        if let Some(encoding) = encoding {
            return Err(FetchError::UnsupportedType {
                url: final_url.to_string(),
                content_type: format!("a body encoded as {encoding}"),
            });
        }
        // Refused by its type before a byte of it is read.
        if let Some(declared) = &declared {
            if declared.kind().is_none() {
                return Err(FetchError::UnsupportedType {
                    url: final_url.to_string(),
                    content_type: declared.essence.clone(),
                });
            }
        }
        let body = self.read_body(response, &final_url).await?;
        let (kind, charset, served_as) = match declared {
            Some(declared) => (declared.kind(), declared.charset, Some(declared.essence)),
            None => (content::sniff(&body), None, None),
        };
        let Some(kind) = kind else {
            return Err(FetchError::UnsupportedType {
                url: final_url.to_string(),
                content_type: "not given, and the body looks binary".to_owned(),
            });
        };
        // The type as served (`application/xhtml+xml` stays that), else what it was taken as.
        let content_type = served_as.unwrap_or_else(|| {
            match kind {
                Kind::Html => "text/html",
                Kind::Markdown => "text/markdown",
                Kind::Plain => "text/plain",
            }
            .to_owned()
        });
        let text = content::decode(&body, charset.as_deref(), kind == Kind::Html);
        drop(body);
        let (title, markdown) = match kind {
            Kind::Html => {
                let base = final_url.clone();
                // Parsing and walking a large page takes a while: off the async threads.
                let converted =
                    tokio::task::spawn_blocking(move || content::html_to_markdown(&text, &base))
                        .await
                        .map_err(|e| format!("the conversion failed ({e})"))
                        .and_then(|converted| converted)
                        .map_err(|reason| FetchError::Unconvertible {
                            url: final_url.to_string(),
                            reason,
                        })?;
                (converted.title, converted.markdown)
            }
            Kind::Markdown | Kind::Plain => (content::first_heading(&text), text),
        };
        tracing::debug!(url = %final_url, bytes = markdown.len(), "fetched");
        Ok(FetchedPage {
            url: asked,
            final_url,
            content_type,
            title,
            markdown,
        })
    }

    /// Reads robots.txt for `page`'s origin and refuses `page` when it is disallowed or when
    /// robots.txt cannot be read; a 4xx means the site has no rules for us.
    async fn obey_robots(&self, page: &Url) -> Result<(), FetchError> {
        let mut robots_url = page.clone();
        robots_url.set_path("/robots.txt");
        robots_url.set_query(None);
        robots_url.set_fragment(None);
        let unavailable = |reason: String| FetchError::RobotsUnavailable {
            robots_url: robots_url.to_string(),
            reason,
        };
        let response = match self.client.get(robots_url.clone()).send().await {
            Ok(response) => response,
            Err(e) => {
                let error = self.transport_error(&robots_url, &e);
                // Refused on the page's own host, the page would be refused for the same
                // reason: say that one (naming the page). A refusal elsewhere (robots.txt
                // redirected to an internal address) only means the rules could not be read.
                let same_host = match &error {
                    FetchError::Blocked { host, .. } | FetchError::Resolve { host, .. } => {
                        page.host_str() == Some(host.as_str())
                    }
                    _ => false,
                };
                return Err(match error {
                    FetchError::Blocked {
                        host,
                        address,
                        reason,
                        ..
                    } if same_host => FetchError::Blocked {
                        url: page.to_string(),
                        host,
                        address,
                        reason,
                    },
                    error if same_host => error,
                    other => unavailable(other.to_string()),
                });
            }
        };
        let status = response.status().as_u16();
        match status {
            200..=299 => {}
            // A rate limit is the server being busy, not a statement that there are no rules.
            429 => return Err(unavailable("the server answered 429".to_owned())),
            400..=499 => {
                tracing::debug!(%robots_url, status, "no robots.txt: allowed");
                return Ok(());
            }
            _ => return Err(unavailable(format!("the server answered {status}"))),
        }
        let body = read_up_to(response, MAX_ROBOTS_BYTES)
            .await
            .map_err(|e| unavailable(format!("its body was cut short ({e})")))?;
        let robot = texting_robots::Robot::new(&self.robots_agent, &body)
            .map_err(|e| unavailable(format!("it could not be parsed ({e})")))?;
        if robot.allowed(&page[Position::BeforePath..Position::AfterQuery]) {
            Ok(())
        } else {
            Err(FetchError::RobotsDisallowed {
                url: page.to_string(),
                agent: self.robots_agent.clone(),
            })
        }
    }

    /// The body, refused past [`FetchConfig::max_body_bytes`]: at once when `Content-Length`
    /// says so, else as soon as the chunks read pass it.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        url: &Url,
    ) -> Result<Vec<u8>, FetchError> {
        let limit = self.config.max_body_bytes;
        let too_large = || FetchError::TooLarge {
            url: url.to_string(),
            limit,
        };
        let declared = response.content_length();
        if declared.is_some_and(|length| length > limit as u64) {
            return Err(too_large());
        }
        let capacity = declared.map_or(0, |length| length as usize);
        let mut body = Vec::with_capacity(capacity.min(limit));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(url, &e))?
        {
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// A reqwest failure as what it means: our own refusals (carried inside reqwest's error
    /// from the resolver or the redirect policy) first, then timeouts and broken connections.
    fn transport_error(&self, url: &Url, error: &reqwest::Error) -> FetchError {
        let mut source: Option<&(dyn StdError + 'static)> = Some(error);
        while let Some(e) = source {
            if let Some(redirect) = e.downcast_ref::<RedirectRefused>() {
                return match &redirect.refusal {
                    Refusal::TooManyRedirects(limit) => FetchError::TooManyRedirects {
                        url: url.to_string(),
                        limit: *limit,
                    },
                    refusal => refusal_error(&redirect.target, refusal.clone()),
                };
            }
            if let Some(blocked) = e.downcast_ref::<Blocked>() {
                return blocked_error(url, blocked.clone());
            }
            if let Some(failed) = e.downcast_ref::<ResolveFailed>() {
                return FetchError::Resolve {
                    host: failed.host.clone(),
                    reason: failed.reason.clone(),
                };
            }
            source = e.source();
        }
        if error.is_timeout() {
            return FetchError::Timeout {
                url: url.to_string(),
                timeout: self.config.timeout,
            };
        }
        FetchError::Transport {
            url: url.to_string(),
            reason: error_chain(error),
        }
    }
}

fn refusal_error(url: &Url, refusal: Refusal) -> FetchError {
    let unsupported = |reason: String| FetchError::UnsupportedUrl {
        url: url.to_string(),
        reason,
    };
    match refusal {
        Refusal::Scheme(scheme) => unsupported(format!("its scheme is `{scheme}:`")),
        Refusal::NoHost => unsupported("it has no host".to_owned()),
        Refusal::Blocked(blocked) => blocked_error(url, blocked),
        Refusal::TooManyRedirects(limit) => FetchError::TooManyRedirects {
            url: url.to_string(),
            limit,
        },
        Refusal::AllowedOnlyDirectly => unsupported(
            "it is an allowed internal target reached by a redirect from a page that is not: an \
             allowance covers pages asked for, not where a public page sends the fetcher"
                .to_owned(),
        ),
    }
}

fn blocked_error(url: &Url, blocked: Blocked) -> FetchError {
    tracing::debug!(%url, %blocked, "refused");
    FetchError::Blocked {
        url: url.to_string(),
        host: blocked.host,
        address: blocked.address,
        reason: blocked.reason.to_string(),
    }
}

/// An error and its causes, each once: reqwest's own message says little ("error sending
/// request"), its sources say what failed (connection refused, a certificate).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = error.source();
    while let Some(e) = source {
        let said = e.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = e.source();
    }
    text
}

/// Up to `limit` bytes of a body; the rest is not read.
async fn read_up_to(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    Ok(body)
}
