//! The fetcher against local servers only: wiremock (and, for a chunked body, a bare TCP
//! server) on 127.0.0.1, which the serving tests allow explicitly; the refusal tests use the
//! default configuration and prove that nothing was connected to.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferret_core::RetryClass;
use ferret_fetch::{
    AllowedTarget, FetchConfig, FetchError, FetchedPage, Fetcher, NameResolver, RobotsPolicy,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ARTICLE: &str = include_str!("../../../fixtures/fetch/article.html");
const NOTES: &str = include_str!("../../../fixtures/fetch/notes.md");
const PLAIN: &str = include_str!("../../../fixtures/fetch/plain.txt");
const ROBOTS: &str = include_str!("../../../fixtures/fetch/robots-disallow.txt");

/// Refusals must come back at once: well under the default 20-second timeout, which a
/// connection attempt to an unroutable address would run into.
const PROMPTLY: Duration = Duration::from_secs(2);

/// The default configuration, plus the loopback address the mock servers listen on.
fn local() -> FetchConfig {
    FetchConfig {
        allow: vec![AllowedTarget::Range("127.0.0.1/32".parse().unwrap())],
        ..FetchConfig::default()
    }
}

fn fetcher(config: FetchConfig) -> Fetcher {
    Fetcher::new(config).unwrap()
}

/// Resolves the names it was given, and nothing else.
struct MapResolver(HashMap<String, Vec<IpAddr>>);

impl MapResolver {
    fn new(entries: &[(&str, &str)]) -> Arc<Self> {
        let mut map: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (host, address) in entries {
            map.entry((*host).to_owned())
                .or_default()
                .push(address.parse().unwrap());
        }
        Arc::new(Self(map))
    }
}

#[async_trait::async_trait]
impl NameResolver for MapResolver {
    async fn resolve(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        self.0
            .get(host)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not in the test map"))
    }
}

/// A listening socket nobody should connect to: if a refused fetch had connected, the
/// connection would be waiting in its backlog.
struct Trap(std::net::TcpListener);

impl Trap {
    fn new() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Self(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn assert_untouched(&self) {
        match self.0.accept() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Ok((_, peer)) => panic!("a connection was made from {peer}"),
            Err(e) => panic!("the trap failed: {e}"),
        }
    }
}

async fn serve(server: &MockServer, at: &str, content_type: &str, body: &str) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .mount(server)
        .await;
}

async fn redirect(server: &MockServer, from: &str, to: &str) {
    Mock::given(method("GET"))
        .and(path(from))
        .respond_with(ResponseTemplate::new(302).insert_header("location", to))
        .mount(server)
        .await;
}

#[tokio::test]
async fn an_html_page_becomes_its_main_content_as_markdown() {
    let server = MockServer::start().await;
    serve(&server, "/article", "text/html; charset=utf-8", ARTICLE).await;
    let url = format!("{}/article", server.uri());

    let page = fetcher(local()).fetch(&url).await.unwrap();

    assert_eq!(page.title.as_deref(), Some("Ferret & the Burrow Guide"));
    assert_eq!(page.content_type, "text/html");
    assert_eq!(page.url.as_str(), url);
    assert_eq!(page.final_url.as_str(), url);
    let md = &page.markdown;
    assert!(md.starts_with("# Burrow Guide\n"), "{md}");
    assert!(md.contains("\n## What to bring\n"), "{md}");
    for item in ["Hammock", "Tunnel"] {
        assert!(
            md.lines()
                .any(|line| line.starts_with('*') && line.trim_end().ends_with(item)),
            "no list item {item} in {md}"
        );
    }
    assert!(
        md.contains("```rust\nfn main() {\n    println!(\"dig\");\n}\n```"),
        "{md}"
    );
    assert!(
        md.contains("[ferret facts](https://example.org/ferrets)"),
        "{md}"
    );
    // A relative link is made absolute against the page's address.
    assert!(
        md.contains(&format!("[setup notes]({}/guide/setup)", server.uri())),
        "{md}"
    );
    for chrome in [
        "NAV-HOME",
        "NAV-ABOUT",
        "SITE-HEADER",
        "SITE-FOOTER",
        "ASIDE-ADVERT",
        "TRACKER-SCRIPT",
        "INLINE-SCRIPT",
        "hotpink",
        "NOSCRIPT-TEXT",
        "FORM-BUTTON",
        "<",
    ] {
        assert!(!md.contains(chrome), "{chrome} leaked into {md}");
    }
}

#[tokio::test]
async fn markdown_and_plain_text_are_taken_as_they_are() {
    let server = MockServer::start().await;
    serve(&server, "/notes.md", "text/markdown; charset=utf-8", NOTES).await;
    serve(&server, "/log.txt", "text/plain", PLAIN).await;
    let fetcher = fetcher(local());

    let notes = fetcher
        .fetch(&format!("{}/notes.md", server.uri()))
        .await
        .unwrap();
    assert_eq!(notes.markdown, NOTES);
    assert_eq!(notes.content_type, "text/markdown");
    assert_eq!(notes.title.as_deref(), Some("Field Notes"));

    let log = fetcher
        .fetch(&format!("{}/log.txt", server.uri()))
        .await
        .unwrap();
    assert_eq!(log.markdown, PLAIN);
    assert_eq!(log.content_type, "text/plain");
}

#[tokio::test]
async fn a_redirect_is_followed_and_the_final_address_kept() {
    let server = MockServer::start().await;
    redirect(&server, "/old", "/new").await;
    serve(&server, "/new", "text/plain", "moved here").await;

    let page = fetcher(local())
        .fetch(&format!("{}/old", server.uri()))
        .await
        .unwrap();

    assert_eq!(page.url.as_str(), format!("{}/old", server.uri()));
    assert_eq!(page.final_url.as_str(), format!("{}/new", server.uri()));
    assert_eq!(page.markdown, "moved here");
}

#[tokio::test]
async fn a_redirect_chain_longer_than_the_limit_is_refused() {
    let server = MockServer::start().await;
    for hop in 0..4 {
        redirect(&server, &format!("/r{hop}"), &format!("/r{}", hop + 1)).await;
    }
    serve(&server, "/r4", "text/plain", "end of the chain").await;
    let fetcher = fetcher(FetchConfig {
        max_redirects: 2,
        ..local()
    });

    // Two redirects are within the limit...
    let page = fetcher
        .fetch(&format!("{}/r2", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.markdown, "end of the chain");
    // ...four are not.
    let error = fetcher
        .fetch(&format!("{}/r0", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::TooManyRedirects { limit: 2, .. }),
        "{error:?}"
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn a_body_declared_larger_than_the_limit_is_refused() {
    let server = MockServer::start().await;
    serve(&server, "/huge", "text/plain", &"a".repeat(4096)).await;
    serve(&server, "/small", "text/plain", &"a".repeat(1024)).await;
    let fetcher = fetcher(FetchConfig {
        max_body_bytes: 1024,
        ..local()
    });

    let error = fetcher
        .fetch(&format!("{}/huge", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::TooLarge { limit: 1024, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("max_body_bytes"), "{error}");
    assert!(!error.is_retryable());
    // Exactly at the limit is fine.
    let page = fetcher
        .fetch(&format!("{}/small", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.markdown.len(), 1024);
}

/// A server answering every request with a chunked `text/plain` body of `total` bytes and no
/// `Content-Length`, for at most `connections` connections.
async fn chunked_server(total: usize, connections: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buffer = [0_u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buffer[..n]),
                    }
                }
                let response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
                                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
                if socket.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'a'; 8192];
                let mut sent = 0;
                while sent < total {
                    let size = chunk.len().min(total - sent);
                    let frame = [
                        format!("{size:x}\r\n").as_bytes(),
                        &chunk[..size],
                        b"\r\n".as_slice(),
                    ]
                    .concat();
                    // The client hangs up once it has read enough: stop there.
                    if socket.write_all(&frame).await.is_err() {
                        return;
                    }
                    sent += size;
                }
                let _ = socket.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn a_chunked_body_is_cut_off_at_the_limit() {
    let config = FetchConfig {
        max_body_bytes: 64 * 1024,
        robots: RobotsPolicy::Ignore,
        ..local()
    };
    let fetcher = fetcher(config);

    // Under the limit, the same server's body is read whole: the server works.
    let small = chunked_server(20_000, 1).await;
    let page = fetcher.fetch(&format!("{small}/page")).await.unwrap();
    assert_eq!(page.markdown.len(), 20_000);

    let huge = chunked_server(8 * 1024 * 1024, 1).await;
    let error = fetcher.fetch(&format!("{huge}/page")).await.unwrap_err();
    assert!(
        matches!(error, FetchError::TooLarge { limit: 65536, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn types_other_than_html_markdown_and_text_are_refused() {
    let server = MockServer::start().await;
    serve(&server, "/paper.pdf", "application/pdf", "%PDF-1.7 ...").await;
    serve(&server, "/photo", "image/png", "\u{89}PNG").await;
    Mock::given(method("GET"))
        .and(path("/blob"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![0_u8, 159, 146, 150, 0, 1]))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/untyped-text"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"just words".to_vec()))
        .mount(&server)
        .await;
    let fetcher = fetcher(local());

    for (at, named) in [
        ("/paper.pdf", "application/pdf"),
        ("/photo", "image/png"),
        ("/blob", "the body looks binary"),
    ] {
        let error = fetcher
            .fetch(&format!("{}{at}", server.uri()))
            .await
            .unwrap_err();
        let FetchError::UnsupportedType { content_type, .. } = &error else {
            panic!("{at}: {error:?}");
        };
        assert!(content_type.contains(named), "{at}: {content_type}");
        assert!(
            error
                .to_string()
                .contains("only HTML, markdown and plain text pages are ingested"),
            "{error}"
        );
        assert!(!error.is_retryable());
    }
    // Text sent without a type is still text.
    let page = fetcher
        .fetch(&format!("{}/untyped-text", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.markdown, "just words");
    assert_eq!(page.content_type, "text/plain");
}

#[tokio::test]
async fn robots_txt_is_obeyed() {
    let server = MockServer::start().await;
    serve(&server, "/robots.txt", "text/plain", ROBOTS).await;
    for at in ["/private/page", "/drafts/plan", "/drafts/public", "/open"] {
        serve(&server, at, "text/plain", "content").await;
    }
    let fetcher = fetcher(local());

    for at in ["/private/page", "/drafts/plan"] {
        let error = fetcher
            .fetch(&format!("{}{at}", server.uri()))
            .await
            .unwrap_err();
        let FetchError::RobotsDisallowed { agent, .. } = &error else {
            panic!("{at}: {error:?}");
        };
        assert_eq!(agent, "ferret");
        assert!(error.to_string().contains("robots.txt"), "{error}");
        assert!(!error.is_retryable());
    }
    for at in ["/drafts/public", "/open"] {
        fetcher
            .fetch(&format!("{}{at}", server.uri()))
            .await
            .unwrap_or_else(|e| panic!("{at}: {e}"));
    }
}

#[tokio::test]
async fn a_redirect_to_a_page_robots_txt_disallows_is_refused() {
    let server = MockServer::start().await;
    serve(&server, "/robots.txt", "text/plain", ROBOTS).await;
    serve(&server, "/drafts/plan", "text/plain", "a draft").await;
    serve(&server, "/drafts/public", "text/plain", "public").await;
    redirect(&server, "/old-plan", "/drafts/plan").await;
    redirect(&server, "/old-public", "/drafts/public").await;
    let fetcher = fetcher(local());

    let error = fetcher
        .fetch(&format!("{}/old-plan", server.uri()))
        .await
        .unwrap_err();
    let FetchError::RobotsDisallowed { url, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(url.ends_with("/drafts/plan"), "{url}");
    let page = fetcher
        .fetch(&format!("{}/old-public", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.markdown, "public");
}

#[tokio::test]
async fn a_missing_robots_txt_allows_everything() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .expect(1)
        .mount(&server)
        .await;
    serve(&server, "/private/page", "text/plain", "content").await;

    let page = fetcher(local())
        .fetch(&format!("{}/private/page", server.uri()))
        .await
        .unwrap();
    assert_eq!(page.markdown, "content");
}

#[tokio::test]
async fn an_unreadable_robots_txt_refuses_the_page_unless_ignored() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(500))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("content", "text/plain"))
        // Only the fetch that ignores robots.txt reaches the page.
        .expect(1)
        .mount(&server)
        .await;
    let url = format!("{}/page", server.uri());

    let error = fetcher(local()).fetch(&url).await.unwrap_err();
    assert!(
        matches!(error, FetchError::RobotsUnavailable { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("robots.txt") && message.contains("could not be read"),
        "{message}"
    );
    assert!(message.contains("500"), "{message}");
    assert!(error.is_retryable());

    // Ignoring robots.txt does not even ask for it (the `expect(1)` above is checked when the
    // server is dropped).
    let ignoring = fetcher(FetchConfig {
        robots: RobotsPolicy::Ignore,
        ..local()
    });
    assert_eq!(ignoring.fetch(&url).await.unwrap().markdown, "content");
}

#[tokio::test]
async fn a_robots_txt_redirected_to_an_internal_address_is_unreadable_not_followed() {
    let server = MockServer::start().await;
    redirect(&server, "/robots.txt", "http://127.0.0.2:9/robots.txt").await;
    serve(&server, "/page", "text/plain", "content").await;

    let error = fetcher(local())
        .fetch(&format!("{}/page", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::RobotsUnavailable { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("127.0.0.2 is a loopback address"),
        "{message}"
    );
}

/// Fetches `url` and returns the refusal, checking that it names the address and the reason,
/// says how to allow it, and came back at once.
async fn refused(fetcher: &Fetcher, url: &str, address: &str, reason: &str) -> FetchError {
    let started = Instant::now();
    let error = fetcher.fetch(url).await.unwrap_err();
    assert!(
        started.elapsed() < PROMPTLY,
        "{url} took {:?}",
        started.elapsed()
    );
    let FetchError::Blocked {
        address: refused,
        reason: why,
        ..
    } = &error
    else {
        panic!("{url}: {error:?}");
    };
    assert_eq!(refused.to_string(), address, "{url}");
    assert!(why.starts_with(reason), "{url}: {why}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("{address} is {reason}")),
        "{url}: {message}"
    );
    assert!(message.contains("[fetch] allow"), "{url}: {message}");
    assert_eq!(error.retry_class(), RetryClass::Permanent);
    error
}

#[tokio::test]
async fn internal_ip_literals_are_refused_without_connecting() {
    let trap = Trap::new();
    let fetcher = fetcher(FetchConfig::default());
    let table = [
        (
            format!("http://127.0.0.1:{}/", trap.port()),
            "127.0.0.1",
            "a loopback address",
        ),
        ("http://[::1]:9/".to_owned(), "::1", "a loopback address"),
        (
            "http://10.0.0.1/".to_owned(),
            "10.0.0.1",
            "a private address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "169.254.169.254",
            "a link-local address (the cloud metadata service)",
        ),
        (
            "http://[::ffff:127.0.0.1]:9/".to_owned(),
            "::ffff:127.0.0.1",
            "a loopback address (it embeds the IPv4 address 127.0.0.1)",
        ),
        (
            "http://[fd00:ec2::254]/".to_owned(),
            "fd00:ec2::254",
            "a cloud metadata address",
        ),
        (
            "http://100.100.100.200/".to_owned(),
            "100.100.100.200",
            "a cloud metadata address",
        ),
    ];
    for (url, address, reason) in &table {
        refused(&fetcher, url, address, reason).await;
    }
    trap.assert_untouched();
}

#[tokio::test]
async fn a_name_resolving_to_an_internal_address_is_refused_without_connecting() {
    let trap = Trap::new();
    let resolver = MapResolver::new(&[("internal.example", "127.0.0.1")]);
    let fetcher = Fetcher::with_resolver(FetchConfig::default(), resolver).unwrap();

    let url = format!("http://internal.example:{}/", trap.port());
    let error = refused(&fetcher, &url, "127.0.0.1", "a loopback address").await;
    let FetchError::Blocked {
        host,
        url: refused_url,
        ..
    } = &error
    else {
        unreachable!()
    };
    assert_eq!(host, "internal.example");
    // Refused while asking for robots.txt, the refusal still names the page.
    assert_eq!(refused_url, &url);
    assert!(
        error
            .to_string()
            .contains("[fetch] allow = [\"internal.example\"]"),
        "{error}"
    );
    trap.assert_untouched();
}

#[tokio::test]
async fn localhost_through_the_system_resolver_is_refused() {
    let trap = Trap::new();
    let fetcher = fetcher(FetchConfig::default());
    let error = fetcher
        .fetch(&format!("http://localhost:{}/", trap.port()))
        .await
        .unwrap_err();
    let FetchError::Blocked { host, reason, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(host, "localhost");
    assert!(reason.starts_with("a loopback address"), "{reason}");
    trap.assert_untouched();
}

#[tokio::test]
async fn a_redirect_to_an_internal_address_is_refused_at_the_redirect() {
    let server = MockServer::start().await;
    redirect(&server, "/start", "http://10.0.0.1/secret").await;
    let fetcher = fetcher(local());

    let error = refused(
        &fetcher,
        &format!("{}/start", server.uri()),
        "10.0.0.1",
        "a private address",
    )
    .await;
    let FetchError::Blocked { url, .. } = &error else {
        unreachable!()
    };
    assert_eq!(url, "http://10.0.0.1/secret");
}

#[tokio::test]
async fn a_redirect_to_an_unallowed_loopback_literal_is_refused_without_connecting() {
    // The whole of 127.0.0.0/8 is loopback on Linux; only 127.0.0.1 is allowed here.
    let Ok(listener) = std::net::TcpListener::bind("127.0.0.2:0") else {
        eprintln!("127.0.0.2 cannot be bound here: skipped");
        return;
    };
    listener.set_nonblocking(true).unwrap();
    let trap = Trap(listener);
    let server = MockServer::start().await;
    let target = format!("http://127.0.0.2:{}/", trap.port());
    redirect(&server, "/start", &target).await;

    let error = refused(
        &fetcher(local()),
        &format!("{}/start", server.uri()),
        "127.0.0.2",
        "a loopback address",
    )
    .await;
    let FetchError::Blocked { url, .. } = &error else {
        unreachable!()
    };
    assert_eq!(url, &target);
    trap.assert_untouched();
}

#[tokio::test]
async fn a_redirect_to_a_name_resolving_internally_is_refused_without_connecting() {
    let trap = Trap::new();
    let server = MockServer::start().await;
    let target = format!("http://evil.example:{}/", trap.port());
    redirect(&server, "/start", &target).await;
    // The mock server is allowed by its literal host only: the name it redirects to is not,
    // although it resolves to the same address.
    let config = FetchConfig {
        allow: vec![AllowedTarget::Host("127.0.0.1".into())],
        ..FetchConfig::default()
    };
    let resolver = MapResolver::new(&[("evil.example", "127.0.0.1")]);
    let fetcher = Fetcher::with_resolver(config, resolver).unwrap();

    let error = refused(
        &fetcher,
        &format!("{}/start", server.uri()),
        "127.0.0.1",
        "a loopback address",
    )
    .await;
    let FetchError::Blocked { host, .. } = &error else {
        unreachable!()
    };
    // Refused by the resolver, the host is what names the redirect's target.
    assert_eq!(host, "evil.example");
    trap.assert_untouched();
}

#[tokio::test]
async fn an_allowed_host_may_resolve_to_an_internal_address() {
    let server = MockServer::start().await;
    serve(&server, "/page", "text/markdown", "# Intranet\n\nhello").await;
    let port = server.address().port();
    let resolver = MapResolver::new(&[("internal.example", "127.0.0.1")]);
    let config = FetchConfig {
        allow: vec![AllowedTarget::Host("internal.example".into())],
        ..FetchConfig::default()
    };
    let fetcher = Fetcher::with_resolver(config, resolver).unwrap();

    let page = fetcher
        .fetch(&format!("http://internal.example:{port}/page"))
        .await
        .unwrap();
    assert_eq!(page.title.as_deref(), Some("Intranet"));
    assert_eq!(page.markdown, "# Intranet\n\nhello");
    // The allowance is for that name, not for the address.
    let error = fetcher
        .fetch(&format!("http://127.0.0.1:{port}/page"))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Blocked { .. }), "{error:?}");
}

#[tokio::test]
async fn only_http_and_https_urls_are_fetched() {
    let fetcher = fetcher(FetchConfig::default());
    for url in [
        "file:///etc/passwd",
        "ftp://x",
        "data:text/plain,hello",
        "gopher://x/",
    ] {
        let error = fetcher.fetch(url).await.unwrap_err();
        assert!(
            matches!(error, FetchError::UnsupportedUrl { .. }),
            "{url}: {error:?}"
        );
        assert!(error.to_string().contains("only http and https"), "{error}");
        assert!(!error.is_retryable());
    }
    for url in ["not a url", "http://", ""] {
        let error = fetcher.fetch(url).await.unwrap_err();
        assert!(
            matches!(error, FetchError::InvalidUrl { .. }),
            "{url}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    let server = MockServer::start().await;
    redirect(&server, "/start", "file:///etc/passwd").await;

    let error = fetcher(local())
        .fetch(&format!("{}/start", server.uri()))
        .await
        .unwrap_err();
    let FetchError::UnsupportedUrl { url, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(url, "file:///etc/passwd");
}

#[tokio::test]
async fn error_statuses_say_whether_a_retry_can_help() {
    let server = MockServer::start().await;
    for (at, status) in [("/gone", 404), ("/down", 503), ("/busy", 429)] {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(ResponseTemplate::new(status).insert_header("retry-after", "7"))
            .mount(&server)
            .await;
    }
    let fetcher = fetcher(local());
    let at = |path: &str| format!("{}{path}", server.uri());

    let gone = fetcher.fetch(&at("/gone")).await.unwrap_err();
    assert!(
        matches!(gone, FetchError::Status { status: 404, .. }),
        "{gone:?}"
    );
    assert_eq!(gone.retry_class(), RetryClass::Permanent);
    let down = fetcher.fetch(&at("/down")).await.unwrap_err();
    assert_eq!(down.retry_class(), RetryClass::Transient);
    let busy = fetcher.fetch(&at("/busy")).await.unwrap_err();
    assert_eq!(
        busy.retry_class(),
        RetryClass::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        }
    );
}

#[tokio::test]
async fn a_slow_server_times_out_as_a_transient_failure() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw("late", "text/plain")
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let fetcher = fetcher(FetchConfig {
        timeout: Duration::from_millis(300),
        robots: RobotsPolicy::Ignore,
        ..local()
    });

    let started = Instant::now();
    let error = fetcher
        .fetch(&format!("{}/slow", server.uri()))
        .await
        .unwrap_err();
    assert!(started.elapsed() < PROMPTLY, "{:?}", started.elapsed());
    assert!(matches!(error, FetchError::Timeout { .. }), "{error:?}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_page_is_saved_atomically_under_a_safe_name() {
    let server = MockServer::start().await;
    serve(&server, "/Article.html", "text/html", ARTICLE).await;
    // The URL parser resolves the dot segments: `/Article.html` is what is asked for.
    let page = fetcher(local())
        .fetch(&format!("{}/Guide/../Article.html", server.uri()))
        .await
        .unwrap();

    let name = page.file_name();
    assert!(!name.is_empty());
    assert!(!name.contains('/') && !name.contains(".."), "{name}");
    assert!(name.ends_with(".md"), "{name}");
    assert!(name.contains("article"), "{name}");

    let dir = tempfile::tempdir().unwrap();
    let saved = page.save(dir.path()).unwrap();
    assert_eq!(saved, dir.path().join(&name));
    let written = std::fs::read_to_string(&saved).unwrap();
    let first_line = written.lines().next().unwrap();
    assert_eq!(first_line, format!("<!-- source: {} -->", page.final_url));
    assert!(written.contains("# Burrow Guide"), "{written}");
    // Saved again, the file is replaced, and no temporary file is left behind.
    page.save(dir.path()).unwrap();
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from(&name)]);

    // A missing folder is made; one that cannot be (under a file) is a typed error.
    let nested = dir.path().join("pages").join("2026");
    assert_eq!(page.save(&nested).unwrap(), nested.join(&name));
    let error = page.save(&saved.join("under-a-file")).unwrap_err();
    assert!(matches!(error, FetchError::Save { .. }), "{error:?}");
}

#[test]
fn file_names_are_never_empty_or_paths() {
    let page = |url: &str| FetchedPage {
        url: url.parse().unwrap(),
        final_url: url.parse().unwrap(),
        content_type: "text/plain".into(),
        title: None,
        markdown: String::new(),
    };
    for url in [
        "http://example.org/",
        "http://example.org/../../../etc/passwd",
        "http://example.org/%2F..%2F..%2Fetc",
        "http://[::1]/",
        "https://example.org/.../....",
        "https://EXAMPLE.org/A/B/C?q=1&r=../../x",
    ] {
        let name = page(url).file_name();
        assert!(name.len() > 3 && name.ends_with(".md"), "{url}: {name}");
        assert!(
            !name.contains('/') && !name.contains('\\') && !name.contains(".."),
            "{url}: {name}"
        );
        assert!(!name.starts_with('.'), "{url}: {name}");
    }
}

#[tokio::test]
async fn a_public_page_cannot_redirect_into_an_allowed_internal_host() {
    let server = MockServer::start().await;
    let port = server.address().port();
    Mock::given(method("GET"))
        .and(path("/start"))
        .respond_with(ResponseTemplate::new(302).insert_header(
            "location",
            format!("http://internal.example:{port}/admin").as_str(),
        ))
        .mount(&server)
        .await;
    serve(&server, "/admin", "text/plain", "secret").await;
    // `public.example` stands for any page not on the allow list (it reaches the mock server
    // through the allowed range, which its name is not).
    let resolver = MapResolver::new(&[
        ("internal.example", "127.0.0.1"),
        ("public.example", "127.0.0.1"),
    ]);
    let config = FetchConfig {
        allow: vec![
            AllowedTarget::Host("internal.example".into()),
            AllowedTarget::Range("127.0.0.1/32".parse().unwrap()),
        ],
        robots: RobotsPolicy::Ignore,
        ..FetchConfig::default()
    };
    let fetcher = Fetcher::with_resolver(config, resolver).unwrap();
    let error = fetcher
        .fetch(&format!("http://public.example:{port}/start"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("allowed internal target"),
        "{error}"
    );
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_owned())
        .collect();
    assert_eq!(asked, ["/start"], "the internal page was never asked for");
    // Asked for directly, it is fetched.
    let page = fetcher
        .fetch(&format!("http://internal.example:{port}/admin"))
        .await
        .unwrap();
    assert_eq!(page.markdown, "secret");
}

#[tokio::test]
async fn different_addresses_keep_different_files_and_credentials_are_never_kept() {
    let page = |url: &str| FetchedPage {
        url: url.parse().unwrap(),
        final_url: url.parse().unwrap(),
        content_type: "text/plain".into(),
        title: None,
        markdown: "text".into(),
    };
    let names: Vec<String> = [
        "https://example.org/a/b",
        "https://example.org/a-b",
        "https://example.org/Docs",
        "https://example.org/docs",
        "http://example.org/docs",
        "https://example.org/page.html",
        "https://example.org/page",
    ]
    .iter()
    .map(|u| page(u).file_name())
    .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");

    let secret = page("https://alice:hunter2@example.org/wiki#top");
    assert_eq!(secret.address().as_str(), "https://example.org/wiki");
    assert!(!secret.file_name().contains("alice"));
    let dir = tempfile::tempdir().unwrap();
    let saved = std::fs::read_to_string(secret.save(dir.path()).unwrap()).unwrap();
    assert!(
        !saved.contains("hunter2") && !saved.contains("alice"),
        "{saved}"
    );
}

#[tokio::test]
async fn a_body_the_server_compressed_anyway_is_refused() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/zipped"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-encoding", "gzip")
                .set_body_raw(vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0], "text/html"),
        )
        .mount(&server)
        .await;
    let error = fetcher(local())
        .fetch(&format!("{}/zipped", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FetchError::UnsupportedType { content_type, .. } if content_type.contains("gzip")),
        "{error:?}"
    );
}
