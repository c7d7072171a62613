//! Web addresses: what identifies a page, so the same page found twice is one hit.

/// A URL reduced to what identifies the page: lowercase scheme and host (url does that), no
/// fragment, no tracking parameters, no trailing slash. Unparseable input is returned trimmed.
pub fn canonical_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw.trim()) else {
        return raw.trim().to_owned();
    };
    url.set_fragment(None);
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !k.starts_with("utm_") && k != "ref" && k != "fbclid" && k != "gclid")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
    let trimmed = url.path().trim_end_matches('/').to_owned();
    if !trimmed.is_empty() {
        url.set_path(&trimmed);
    }
    let mut s = url.to_string();
    if url.query().is_none() && s.ends_with('/') {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_urls_ignore_fragments_tracking_and_trailing_slashes() {
        let canon = canonical_url("HTTPS://Example.com/docs/?utm_source=x&id=3#intro");
        assert_eq!(canon, "https://example.com/docs?id=3");
        assert_eq!(
            canonical_url("https://example.com/"),
            canonical_url("https://example.com")
        );
        assert_eq!(
            canonical_url("https://example.com/a/"),
            "https://example.com/a"
        );
        assert_eq!(canonical_url(" not a url "), "not a url");
    }
}
