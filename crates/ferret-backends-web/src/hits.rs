//! Provider results as hits: canonical URL as the id, title, text, date, and what the provider
//! said about the result kept in the payload.

use chrono::NaiveDate;
use ferret_core::{canonical_url, Hit};

/// Payload field naming the provider a hit came from.
pub const PROVIDER_FIELD: &str = "provider";
/// Payload field set on the hit holding a provider's own answer.
pub const PROVIDER_ANSWER_FIELD: &str = "provider_answer";
/// Payload field of a provider's answer: the URLs of the results it came with.
pub const SOURCES_FIELD: &str = "sources";

/// One result as a provider gives it, before it becomes a hit.
pub(crate) struct Found<'a> {
    pub(crate) url: Option<&'a str>,
    pub(crate) title: Option<&'a str>,
    pub(crate) text: String,
    pub(crate) score: f32,
    pub(crate) date: Option<NaiveDate>,
}

/// The hit of `found`, or `None` when it has no text to show: a result with no URL or no title
/// is kept only if it has text.
pub(crate) fn hit(backend: &str, provider: &str, found: Found<'_>) -> Option<Hit> {
    // Providers return titles and snippets as HTML text (`&#x27;`, `&amp;`): a hit holds text.
    let text = html_escape::decode_html_entities(found.text.trim()).into_owned();
    let text = text.trim();
    let url = found.url.map(str::trim).filter(|u| !u.is_empty());
    let title = found
        .title
        .map(|t| html_escape::decode_html_entities(t.trim()).into_owned())
        .filter(|t| !t.trim().is_empty());
    let title = title.as_deref().map(str::trim);
    if text.is_empty() && (url.is_none() || title.is_none()) {
        return None;
    }
    let id = match url {
        Some(url) => canonical_url(url),
        None => format!("{provider}:{}", short_digest(text)),
    };
    let title = title
        .map(str::to_owned)
        .or_else(|| url.map(str::to_owned))
        .unwrap_or_else(|| first_words(text, 10));
    let mut hit = Hit::new(id, title, text, found.score, backend);
    hit.url = url.map(canonical_url);
    hit.date = found.date;
    hit.payload
        .insert(PROVIDER_FIELD.into(), provider.to_owned().into());
    Some(hit)
}

/// A provider's own answer as a hit: marked as such and listing the results it came with, so a
/// citation of it resolves like any other and shows what it rests on.
pub(crate) fn provider_answer(
    backend: &str,
    provider: &str,
    query: &str,
    answer: &str,
    score: f32,
    sources: &[Hit],
) -> Option<Hit> {
    let answer = answer.trim();
    if answer.is_empty() {
        return None;
    }
    let mut hit = Hit::new(
        format!("{provider}:answer:{}", short_digest(query)),
        format!(
            "{}'s answer to \u{201c}{query}\u{201d}",
            display_name(provider)
        ),
        answer,
        score,
        backend,
    );
    hit.payload
        .insert(PROVIDER_FIELD.into(), provider.to_owned().into());
    hit.payload
        .insert(PROVIDER_ANSWER_FIELD.into(), true.into());
    hit.payload.insert(
        SOURCES_FIELD.into(),
        sources
            .iter()
            .filter_map(|h| h.url.clone())
            .collect::<Vec<_>>()
            .into(),
    );
    Some(hit)
}

/// `text` cut to `max_chars` characters, on a character boundary.
pub(crate) fn capped(text: &str, max_chars: usize) -> String {
    ferret_core::text::cut(text, max_chars, ferret_core::text::CutMark::Ellipsis)
}

/// A date written as `YYYY-MM-DD`, RFC 3339 or RFC 2822 (as providers variously send them).
pub(crate) fn date(raw: Option<&str>) -> Option<NaiveDate> {
    let raw = raw?.trim();
    let head = raw.get(..10).unwrap_or(raw);
    NaiveDate::parse_from_str(head, "%Y-%m-%d")
        .ok()
        .or_else(|| {
            chrono::DateTime::parse_from_rfc3339(raw)
                .ok()
                .map(|t| t.date_naive())
        })
        .or_else(|| {
            chrono::DateTime::parse_from_rfc2822(raw)
                .ok()
                .map(|t| t.date_naive())
        })
}

/// "tavily" → "Tavily".
fn display_name(provider: &str) -> String {
    let mut chars = provider.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn short_digest(text: &str) -> String {
    // FNV-1a: stable across runs and platforms, enough to tell answers apart.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_snippets_are_text_not_html() {
        let found = Found {
            url: Some("https://example.com/a"),
            title: Some(" It&#x27;s &amp; <b>more</b> "),
            text: "Use &quot;pip install&quot; &lt;pkg&gt;".into(),
            score: 1.0,
            date: None,
        };
        let hit = hit("web", "brave", found).unwrap();
        assert_eq!(&*hit.title, "It's & <b>more</b>");
        assert_eq!(&*hit.text, "Use \"pip install\" <pkg>");
    }
}
