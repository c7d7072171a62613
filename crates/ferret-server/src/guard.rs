//! Requests from other web sites are refused before anything else reads them.
//!
//! - `Host` must name this server: a loopback name (`localhost`, `127.0.0.1`, `::1`) or one of
//!   the accepted hosts (`--allowed-host`). A page on another site that rebinds its own name to
//!   this server's address (DNS rebinding) sends its own name, and is refused. A request with
//!   no `Host`, which no browser sends, is served.
//! - A request carrying `Origin` is served only when the origin is the server's own (its host
//!   and port are the request's `Host`, itself accepted) or one configured
//!   (`--allowed-origin`). `Origin: null` (sandboxed frames, local files) is refused. Browsers
//!   send `Origin` on every cross-site `POST`, forms included, so a page elsewhere cannot use
//!   the browser of someone on this server's network (CSRF); curl, SDKs and MCP clients send
//!   none and are served as before.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;
use crate::ApiError;

/// Host names a server always answers to: its loopback names.
pub(crate) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Refuse a request whose `Host` is not this server's, or whose `Origin` is another site's.
pub(crate) async fn same_site(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match check(
        request.uri(),
        request.headers(),
        state.allowed_hosts(),
        state.allowed_origins(),
    ) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// Refuse a body on a JSON route that does not say it is JSON (`application/json`, or a type
/// ending in `+json`): a form a browser sends from any page without asking is not read as one.
pub(crate) async fn json_body(request: Request, next: Next) -> Response {
    let found = request
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    let media = found
        .as_deref()
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase());
    match media {
        Some(media) if media == "application/json" || media.ends_with("+json") => {
            next.run(request).await
        }
        _ => ApiError::NotJson {
            found: found.unwrap_or_else(|| "none".to_owned()),
        }
        .into_response(),
    }
}

fn check(
    uri: &Uri,
    headers: &HeaderMap,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> Result<(), ApiError> {
    let host = match headers.get(header::HOST) {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(Authority::parse)
                .ok_or(ApiError::HostNotAllowed)?,
        ),
        None => uri.authority().and_then(|a| Authority::parse(a.as_str())),
    };
    if let Some(host) = &host {
        if !host.is_allowed(allowed_hosts) {
            return Err(ApiError::HostNotAllowed);
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().map_err(|_| ApiError::ForeignOrigin)?.trim();
    if allowed_origins
        .iter()
        .any(|allowed| same_origin(allowed, origin))
    {
        return Ok(());
    }
    // `null` parses as no authority, and so is never the server's own.
    let own = Origin::parse(origin)
        .zip(host)
        .is_some_and(|(origin, host)| origin.authority == host);
    if own {
        Ok(())
    } else {
        Err(ApiError::ForeignOrigin)
    }
}

/// Do two origins name one site: scheme, host and port alike (a default port written or not)?
fn same_origin(a: &str, b: &str) -> bool {
    matches!((Origin::parse(a), Origin::parse(b)), (Some(a), Some(b)) if a == b)
}

/// A host and its port, as `Host` or an origin writes them, lowercased and without brackets.
#[derive(Debug, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    fn parse(text: &str) -> Option<Self> {
        let authority = text.trim().parse::<axum::http::uri::Authority>().ok()?;
        // User information has no place in a Host header or an origin.
        if authority.as_str().contains('@') {
            return None;
        }
        Some(Self {
            host: authority
                .host()
                .trim_matches(|c| c == '[' || c == ']')
                .to_ascii_lowercase(),
            port: authority.port_u16(),
        })
    }

    /// Is this one of the loopback names, or an accepted host (with its port, when the entry
    /// gives one)?
    fn is_allowed(&self, allowed_hosts: &[String]) -> bool {
        LOOPBACK_HOSTS.contains(&self.host.as_str())
            || allowed_hosts
                .iter()
                .filter_map(|allowed| Self::parse(allowed))
                .any(|allowed| {
                    allowed.host == self.host
                        && allowed.port.is_none_or(|port| Some(port) == self.port)
                })
    }
}

/// An origin: a scheme and an authority, its default port made explicit.
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    authority: Authority,
}

impl Origin {
    fn parse(text: &str) -> Option<Self> {
        let (scheme, rest) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        // An origin has no path; a configured one may end with a slash.
        let mut authority = Authority::parse(rest.trim_end_matches('/'))?;
        authority.port.get_or_insert(default_port);
        Some(Self { scheme, authority })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn verdict(pairs: &[(&'static str, &str)]) -> Result<(), &'static str> {
        let allowed_hosts = ["search.example.org".to_owned()];
        let allowed_origins = ["https://portal.example.org".to_owned()];
        check(
            &Uri::from_static("/v1/search"),
            &headers(pairs),
            &allowed_hosts,
            &allowed_origins,
        )
        .map_err(|e| match e {
            ApiError::HostNotAllowed => "host",
            ApiError::ForeignOrigin => "origin",
            _ => "other",
        })
    }

    #[test]
    fn only_this_servers_hosts_and_origins_pass() {
        assert_eq!(verdict(&[]), Ok(()), "curl without Host");
        assert_eq!(verdict(&[("host", "127.0.0.1:8080")]), Ok(()));
        assert_eq!(verdict(&[("host", "[::1]:8080")]), Ok(()));
        assert_eq!(verdict(&[("host", "search.example.org")]), Ok(()));
        assert_eq!(verdict(&[("host", "attacker.example")]), Err("host"));
        assert_eq!(verdict(&[("host", "user@localhost")]), Err("host"));
        let from = |origin| verdict(&[("host", "localhost:8080"), ("origin", origin)]);
        assert_eq!(
            from("http://localhost:8080"),
            Ok(()),
            "the server's own page"
        );
        assert_eq!(from("https://portal.example.org"), Ok(()), "configured");
        assert_eq!(
            from("https://portal.example.org:443/"),
            Ok(()),
            "configured"
        );
        assert_eq!(from("http://localhost:9999"), Err("origin"), "another port");
        assert_eq!(from("https://evil.example"), Err("origin"));
        assert_eq!(from("null"), Err("origin"));
        assert_eq!(from(""), Err("origin"));
        assert_eq!(
            verdict(&[("origin", "http://localhost:8080")]),
            Err("origin"),
            "no Host to be the origin of"
        );
    }
}
