//! Which addresses a fetch may connect to, and the places that enforce it.
//!
//! A page given to the fetcher comes from a search result or a user, so it may name (or redirect
//! to, or resolve to) an address inside our own network: a cloud metadata service, an admin
//! interface on loopback. Host names are checked in the resolver reqwest connects through, on
//! the very addresses it then connects to (so a name that resolves differently the second time
//! cannot slip past); IP-literal hosts skip the resolver, so they are checked before the first
//! request and at every redirect.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use url::{Host, Url};

use crate::config::AllowedTarget;

/// Resolves a host name to its addresses. The fetcher resolves every name through one, then
/// drops the addresses it refuses before anything connects.
///
/// The default, [`SystemResolver`], asks the system; tests and callers with their own name
/// service supply another.
#[async_trait::async_trait]
pub trait NameResolver: Send + Sync {
    /// The addresses of `host` (a name, never an IP literal), in the order to try them.
    async fn resolve(&self, host: &str) -> io::Result<Vec<IpAddr>>;
}

/// Resolves with the system's resolver (`getaddrinfo`, through `tokio::net::lookup_host`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait::async_trait]
impl NameResolver for SystemResolver {
    async fn resolve(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        // The port is needed by the call, not by us: reqwest puts the URL's port back.
        let addresses = tokio::net::lookup_host((host, 0)).await?;
        Ok(addresses.map(|address| address.ip()).collect())
    }
}

/// Why an address is refused: a phrase completing "ADDRESS is …", and the IPv4 address an IPv6
/// one embeds when that is what was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Forbidden {
    pub(crate) kind: &'static str,
    pub(crate) embedded: Option<Ipv4Addr>,
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind)?;
        if let Some(v4) = self.embedded {
            write!(f, " (it embeds the IPv4 address {v4})")?;
        }
        Ok(())
    }
}

/// Why `ip` may not be reached without an allowance, or `None` for a public address.
pub(crate) fn forbidden(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4).map(|kind| Forbidden {
            kind,
            embedded: None,
        }),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    // The metadata addresses first: each sits inside a broader range, and its own name tells
    // the reader why it matters more.
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        return Some("a link-local address (the cloud metadata service)");
    }
    if ip == Ipv4Addr::new(100, 100, 100, 200) {
        return Some("a cloud metadata address (Alibaba Cloud)");
    }
    if ip.is_broadcast() {
        return Some("the broadcast address");
    }
    let [a, b, ..] = ip.octets();
    let kind = match (a, b) {
        (0, _) => "an unspecified address (0.0.0.0/8)",
        (127, _) => "a loopback address",
        (10, _) | (172, 16..=31) | (192, 168) => "a private address",
        (100, 64..=127) => "a shared (carrier-grade NAT) address",
        (169, 254) => "a link-local address",
        (224..=239, _) => "a multicast address",
        // Inter-network benchmarking, often used inside data centres.
        (198, 18..=19) => "a benchmarking address (198.18.0.0/15)",
        (192, 0) if ip.octets()[2] == 0 => "an IETF protocol address (192.0.0.0/24)",
        // Reserved, never routed on the internet: nothing public lives there.
        (240..=255, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    };
    Some(kind)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<Forbidden> {
    let plain = |kind| {
        Some(Forbidden {
            kind,
            embedded: None,
        })
    };
    if ip.is_unspecified() {
        return plain("an unspecified address");
    }
    if ip.is_loopback() {
        return plain("a loopback address");
    }
    if let Some(v4) = embedded_v4(ip) {
        // `::ffff:127.0.0.1` reaches 127.0.0.1: an IPv6 spelling must not get past the IPv4
        // rules.
        return forbidden_v4(v4).map(|kind| Forbidden {
            kind,
            embedded: Some(v4),
        });
    }
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return plain("a cloud metadata address (AWS, IPv6)");
    }
    let segments = ip.segments();
    let first = segments[0];
    if first == 0x2001 && segments[1] == 0 {
        // Teredo hides an IPv4 server (obfuscated) behind a relay: nothing to check it by.
        return plain("a Teredo address (an IPv4 host behind a relay)");
    }
    if first & 0xfe00 == 0xfc00 {
        return plain("a unique-local address");
    }
    if first & 0xffc0 == 0xfe80 {
        return plain("a link-local address");
    }
    if first & 0xffc0 == 0xfec0 {
        return plain("a site-local address");
    }
    if first & 0xff00 == 0xff00 {
        return plain("a multicast address");
    }
    None
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, deprecated but still routed by some stacks), the NAT64
/// prefixes (`64:ff9b::a.b.c.d` and the local-use `64:ff9b:1::/48`, which a gateway forwards to
/// the IPv4 address) and 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let [_, _, _, _, _, _, _, _, _, _, _, _, a, b, c, d] = ip.octets();
    let v4 = Ipv4Addr::new(a, b, c, d);
    match ip.segments() {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(v4),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(v4),
        // The local-use NAT64 prefix: the same forwarding, a network's own.
        [0x64, 0xff9b, 1, _, _, _, _, _] => Some(v4),
        // 6to4 carries its IPv4 address in bits 16 to 47.
        [0x2002, high, low, _, _, _, _, _] => {
            let [a, b] = high.to_be_bytes();
            let [c, d] = low.to_be_bytes();
            Some(Ipv4Addr::new(a, b, c, d))
        }
        _ => None,
    }
}

/// An address refused for a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocked {
    pub(crate) host: String,
    pub(crate) address: IpAddr,
    pub(crate) reason: Forbidden,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} is {}", self.host, self.address, self.reason)
    }
}

impl StdError for Blocked {}

/// The operator's exceptions to the refused addresses, normalised once.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowList {
    hosts: Vec<String>,
    ranges: Vec<IpNet>,
}

impl AllowList {
    /// The list from the configuration; an empty host name is refused rather than ignored,
    /// since it was surely meant to allow something.
    pub(crate) fn new(targets: &[AllowedTarget]) -> Result<Self, String> {
        let mut list = Self::default();
        for target in targets {
            match target {
                AllowedTarget::Host(host) => {
                    let host = normalise_host(host);
                    if host.is_empty() {
                        return Err("an AllowedTarget::Host is empty".to_owned());
                    }
                    list.hosts.push(host);
                }
                AllowedTarget::Range(range) => list.ranges.push(range.trunc()),
            }
        }
        Ok(list)
    }

    /// Whether `ip`, reached through `host`, may be connected to.
    pub(crate) fn check(&self, host: &str, ip: IpAddr) -> Result<(), Blocked> {
        let Some(reason) = forbidden(ip) else {
            return Ok(());
        };
        if self.permits(host, ip, reason.embedded) {
            return Ok(());
        }
        Err(Blocked {
            host: host.to_owned(),
            address: ip,
            reason,
        })
    }

    /// Whether `url` names an allowed target itself: an allowed host, or an address in an
    /// allowed range. (A public name that resolves into an allowed range is not seen here.)
    pub(crate) fn names(&self, url: &Url) -> bool {
        match url.host() {
            Some(Host::Domain(name)) => self.hosts.contains(&normalise_host(name)),
            Some(Host::Ipv4(v4)) => self.ranges.iter().any(|r| r.contains(&IpAddr::V4(v4))),
            Some(Host::Ipv6(v6)) => self.ranges.iter().any(|r| r.contains(&IpAddr::V6(v6))),
            None => false,
        }
    }

    fn permits(&self, host: &str, ip: IpAddr, embedded: Option<Ipv4Addr>) -> bool {
        let host = normalise_host(host);
        self.hosts.contains(&host)
            || self.ranges.iter().any(|range| {
                // An allowed 127.0.0.1/32 allows its IPv6 spellings too: they reach the same
                // place.
                range.contains(&ip) || embedded.is_some_and(|v4| range.contains(&IpAddr::V4(v4)))
            })
    }
}

/// A host as compared against the allowed hosts: lower case, without an IPv6 literal's
/// brackets or a fully-qualified name's trailing dot.
fn normalise_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Why a URL (asked for, or redirected to) is not fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not http or https.
    Scheme(String),
    /// No host to connect to.
    NoHost,
    /// An IP-literal host that is refused.
    Blocked(Blocked),
    /// A redirect beyond the limit.
    TooManyRedirects(usize),
    /// A redirect into an allowed internal target from a page that is not one: an allowance
    /// covers what is asked for, not where a public page sends the fetcher.
    AllowedOnlyDirectly,
}

/// A refusal at a redirect, with the address redirected to (reqwest's error does not say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedirectRefused {
    pub(crate) target: Url,
    pub(crate) refusal: Refusal,
}

impl fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the redirect to {} was refused: {:?}",
            self.target, self.refusal
        )
    }
}

impl StdError for RedirectRefused {}

/// Whether `url` may be requested: http or https, with a host, and an IP-literal host that is
/// not refused. A host name is checked later, on its addresses, by [`GuardedResolver`].
pub(crate) fn check_target(url: &Url, allow: &AllowList) -> Result<(), Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Scheme(url.scheme().to_owned()));
    }
    let host = url.host_str().unwrap_or_default();
    let address = match url.host() {
        None => return Err(Refusal::NoHost),
        Some(Host::Domain("")) => return Err(Refusal::NoHost),
        Some(Host::Domain(_)) => return Ok(()),
        Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
    };
    allow.check(host, address).map_err(Refusal::Blocked)
}

/// The redirect policy: at most `max` redirects, each to a target [`check_target`] accepts.
pub(crate) fn redirect_policy(allow: Arc<AllowList>, max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        // `previous` holds the URL first asked for as well as each redirect followed.
        let started_allowed = attempt
            .previous()
            .first()
            .is_some_and(|first| allow.names(first));
        let refusal = if attempt.previous().len() > max {
            Some(Refusal::TooManyRedirects(max))
        } else if allow.names(attempt.url()) && !started_allowed {
            Some(Refusal::AllowedOnlyDirectly)
        } else {
            check_target(attempt.url(), &allow).err()
        };
        match refusal {
            Some(refusal) => {
                let target = attempt.url().clone();
                attempt.error(RedirectRefused { target, refusal })
            }
            None => attempt.follow(),
        }
    })
}

/// A host name that could not be resolved, or resolved to nothing.
#[derive(Debug)]
pub(crate) struct ResolveFailed {
    pub(crate) host: String,
    pub(crate) reason: String,
}

impl fmt::Display for ResolveFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} could not be resolved: {}", self.host, self.reason)
    }
}

impl StdError for ResolveFailed {}

/// The resolver reqwest connects through: the [`NameResolver`]'s addresses less the refused
/// ones, or an error naming the first refused address when none is left. Since the connector
/// only ever sees what this returns, a refused address is never connected to.
pub(crate) struct GuardedResolver {
    pub(crate) names: Arc<dyn NameResolver>,
    pub(crate) allow: Arc<AllowList>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let names = Arc::clone(&self.names);
        let allow = Arc::clone(&self.allow);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = names.resolve(&host).await.map_err(|e| ResolveFailed {
                host: host.clone(),
                reason: e.to_string(),
            })?;
            if addresses.is_empty() {
                return Err(ResolveFailed {
                    host,
                    reason: "no addresses".to_owned(),
                }
                .into());
            }
            let mut kept = Vec::new();
            let mut first_refused = None;
            for address in addresses {
                match allow.check(&host, address) {
                    // Port 0: reqwest puts the URL's port (or the scheme's) in its place.
                    Ok(()) => kept.push(SocketAddr::new(address, 0)),
                    Err(blocked) => {
                        tracing::debug!(%blocked, "address refused");
                        first_refused.get_or_insert(blocked);
                    }
                }
            }
            match first_refused {
                Some(blocked) if kept.is_empty() => Err(blocked.into()),
                _ => Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(address: &str) -> Option<String> {
        forbidden(address.parse().unwrap()).map(|f| f.to_string())
    }

    #[test]
    fn internal_addresses_are_refused_with_their_reason() {
        let table = [
            ("127.0.0.1", "a loopback address"),
            ("127.255.0.9", "a loopback address"),
            ("::1", "a loopback address"),
            ("10.0.0.1", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.1", "a private address"),
            ("100.64.0.1", "a shared (carrier-grade NAT) address"),
            ("100.127.255.255", "a shared (carrier-grade NAT) address"),
            (
                "169.254.169.254",
                "a link-local address (the cloud metadata service)",
            ),
            ("169.254.1.1", "a link-local address"),
            (
                "100.100.100.200",
                "a cloud metadata address (Alibaba Cloud)",
            ),
            ("fe80::1", "a link-local address"),
            ("fc00::1", "a unique-local address"),
            ("fd12:3456::1", "a unique-local address"),
            ("fd00:ec2::254", "a cloud metadata address (AWS, IPv6)"),
            ("224.0.0.1", "a multicast address"),
            ("239.255.255.250", "a multicast address"),
            ("ff02::1", "a multicast address"),
            ("0.0.0.0", "an unspecified address (0.0.0.0/8)"),
            ("0.1.2.3", "an unspecified address (0.0.0.0/8)"),
            ("::", "an unspecified address"),
            ("255.255.255.255", "the broadcast address"),
            ("240.0.0.1", "a reserved address (240.0.0.0/4)"),
            (
                "::ffff:127.0.0.1",
                "a loopback address (it embeds the IPv4 address 127.0.0.1)",
            ),
            (
                "::ffff:10.1.2.3",
                "a private address (it embeds the IPv4 address 10.1.2.3)",
            ),
            (
                "::ffff:169.254.169.254",
                "a link-local address (the cloud metadata service) (it embeds the IPv4 address \
                 169.254.169.254)",
            ),
            (
                "::127.0.0.1",
                "a loopback address (it embeds the IPv4 address 127.0.0.1)",
            ),
            (
                "64:ff9b::a00:1",
                "a private address (it embeds the IPv4 address 10.0.0.1)",
            ),
        ];
        for (address, expected) in table {
            assert_eq!(reason(address).as_deref(), Some(expected), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "172.15.255.255",
            "100.63.255.255",
            "100.128.0.1",
            "192.169.0.1",
            "169.253.0.1",
            "223.255.255.255",
            "2606:2800:220:1:248:1893:25c8:1946",
            "::ffff:8.8.8.8",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(reason(address), None, "{address}");
        }
    }

    #[test]
    fn the_allow_list_admits_hosts_and_ranges() {
        let allow = AllowList::new(&[
            AllowedTarget::Host("Wiki.Internal.".into()),
            AllowedTarget::Range("10.1.0.0/16".parse().unwrap()),
            AllowedTarget::Range("127.0.0.1/32".parse().unwrap()),
        ])
        .unwrap();
        let ten = "10.0.0.1".parse().unwrap();
        assert!(allow.check("wiki.internal", ten).is_ok());
        assert!(allow.check("WIKI.internal.", ten).is_ok());
        assert!(allow
            .check("other.internal", "10.1.2.3".parse().unwrap())
            .is_ok());
        assert!(allow
            .check("other", "::ffff:127.0.0.1".parse().unwrap())
            .is_ok());
        let blocked = allow.check("other.internal", ten).unwrap_err();
        assert_eq!(
            blocked.to_string(),
            "other.internal: 10.0.0.1 is a private address"
        );
        assert!(allow.check("other", "127.0.0.2".parse().unwrap()).is_err());
        assert!(AllowList::new(&[AllowedTarget::Host(" ".into())]).is_err());
    }

    #[test]
    fn literal_hosts_and_schemes_are_checked_before_any_request() {
        let allow = AllowList::default();
        let check = |url: &str| check_target(&Url::parse(url).unwrap(), &allow);
        assert!(check("https://example.com/").is_ok());
        assert!(check("http://93.184.216.34/").is_ok());
        assert!(matches!(check("file:///etc/passwd"), Err(Refusal::Scheme(s)) if s == "file"));
        assert!(matches!(check("ftp://x/"), Err(Refusal::Scheme(_))));
        assert!(matches!(
            check("data:text/plain,hi"),
            Err(Refusal::Scheme(_))
        ));
        for url in [
            "http://127.0.0.1:9/",
            "http://[::1]:9/",
            "http://10.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[fd00:ec2::254]/",
            // Other spellings of 127.0.0.1 that the URL parser normalises.
            "http://2130706433/",
            "http://0x7f.1/",
        ] {
            assert!(
                matches!(check(url), Err(Refusal::Blocked(_))),
                "{url} was not refused"
            );
        }
    }

    struct Fixed(Vec<IpAddr>);

    #[async_trait::async_trait]
    impl NameResolver for Fixed {
        async fn resolve(&self, _host: &str) -> io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    fn guarded(addresses: &[&str]) -> GuardedResolver {
        GuardedResolver {
            names: Arc::new(Fixed(
                addresses.iter().map(|a| a.parse().unwrap()).collect(),
            )),
            allow: Arc::new(AllowList::default()),
        }
    }

    async fn resolve(resolver: &GuardedResolver) -> Result<Vec<SocketAddr>, String> {
        use reqwest::dns::Resolve;
        let name = "mixed.example".parse().unwrap();
        resolver
            .resolve(name)
            .await
            .map(|addrs| addrs.collect())
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn the_resolver_hands_on_only_allowed_addresses() {
        let kept = resolve(&guarded(&["10.0.0.1", "93.184.216.34", "::1"]))
            .await
            .unwrap();
        assert_eq!(kept, vec!["93.184.216.34:0".parse().unwrap()]);
        let refused = resolve(&guarded(&["10.0.0.1", "127.0.0.1"]))
            .await
            .unwrap_err();
        assert_eq!(refused, "mixed.example: 10.0.0.1 is a private address");
        let empty = resolve(&guarded(&[])).await.unwrap_err();
        assert!(empty.contains("no addresses"), "{empty}");
    }
}
