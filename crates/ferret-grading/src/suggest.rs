//! The retry suggestion; the rules are on [`RetrySuggestion`](crate::RetrySuggestion).

use ferret_core::text;

use crate::relevance::HitTerms;
use crate::{RetryStrategy, RetrySuggestion};

/// A word of the question as typed.
struct Token {
    surface: String,
    terms: Vec<String>,
    quoted: bool,
    /// Capitalised but not the question's first word: likely a name.
    name_like: bool,
    has_digit: bool,
}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201c}' | '\u{201d}')
}

/// The content words of `query`, first occurrence of each, with whether they were in quotes.
fn tokens(query: &str) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    let mut in_quote = false;
    let mut piece = String::new();
    let mut piece_quoted = false;
    let mut position = 0usize;
    let flush = |piece: &mut String, quoted: bool, position: &mut usize, out: &mut Vec<Token>| {
        if piece.is_empty() {
            return;
        }
        let surface = piece
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_owned();
        let terms = text::content_terms(&surface);
        if !terms.is_empty() && !out.iter().any(|t| t.terms == terms) {
            out.push(Token {
                name_like: *position > 0 && surface.chars().any(char::is_uppercase),
                has_digit: surface.chars().any(|c| c.is_numeric()),
                surface,
                terms,
                quoted,
            });
        }
        *position += 1;
        piece.clear();
    };
    for c in query.chars() {
        if is_quote(c) || c.is_whitespace() {
            flush(&mut piece, piece_quoted, &mut position, &mut out);
            if is_quote(c) {
                in_quote = !in_quote;
            }
        } else {
            if piece.is_empty() {
                piece_quoted = in_quote;
            }
            piece.push(c);
        }
    }
    flush(&mut piece, piece_quoted, &mut position, &mut out);
    out
}

/// Same content terms in the same order with the same quoting: the backends would see the same query.
fn same_query(a: &str, b: &str) -> bool {
    let key = |q: &str| {
        tokens(q)
            .into_iter()
            .map(|t| (t.terms, t.quoted))
            .collect::<Vec<_>>()
    };
    key(a) == key(b)
}

/// The suggestion for results whose quality is low. `kept` is the number of kept hits.
pub(crate) fn suggest(
    question: &str,
    hit_terms: &[HitTerms],
    kept: usize,
) -> Option<RetrySuggestion> {
    let toks = tokens(question);
    if toks.is_empty() {
        return None;
    }
    let df: Vec<f32> = toks
        .iter()
        .map(|t| {
            if hit_terms.is_empty() {
                return 0.0;
            }
            let n = hit_terms
                .iter()
                .filter(|h| t.terms.iter().all(|term| h.set.contains(term)))
                .count();
            n as f32 / hit_terms.len() as f32
        })
        .collect();
    let usable = |q: String| (!q.trim().is_empty() && !same_query(&q, question)).then_some(q);
    let broaden = || {
        usable(broaden(&toks, &df)).map(|query| RetrySuggestion {
            strategy: RetryStrategy::Broaden,
            query,
        })
    };
    if hit_terms.is_empty() || kept * 2 < hit_terms.len() {
        broaden()
    } else {
        usable(narrow(&toks, &df))
            .map(|query| RetrySuggestion {
                strategy: RetryStrategy::Narrow,
                query,
            })
            .or_else(broaden)
    }
}

fn broaden(toks: &[Token], df: &[f32]) -> String {
    let mut keep: Vec<usize> = (0..toks.len()).collect();
    let without_digits: Vec<usize> = keep
        .iter()
        .copied()
        .filter(|&i| !toks[i].has_digit)
        .collect();
    if !without_digits.is_empty() && without_digits.len() < keep.len() {
        keep = without_digits;
    } else if keep.len() >= 2 && !toks.iter().any(|t| t.quoted) {
        let most_specific = keep
            .iter()
            .copied()
            .min_by(|&a, &b| {
                df[a]
                    .total_cmp(&df[b])
                    .then(toks[b].name_like.cmp(&toks[a].name_like))
                    .then(
                        toks[b]
                            .surface
                            .chars()
                            .count()
                            .cmp(&toks[a].surface.chars().count()),
                    )
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        keep.retain(|&i| i != most_specific);
    }
    keep.iter()
        .map(|&i| toks[i].surface.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn narrow(toks: &[Token], df: &[f32]) -> String {
    let mut stress: Vec<bool> = df.iter().map(|&d| d < 0.5).collect();
    if !stress.contains(&true) {
        let lo = df.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = df.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if lo < hi {
            stress = df.iter().map(|&d| d == lo).collect();
        } else {
            let phrase = toks
                .iter()
                .map(|t| t.surface.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            return format!("\"{phrase}\"");
        }
    }
    toks.iter()
        .zip(stress)
        .map(|(t, s)| {
            if s || t.quoted {
                format!("\"{}\"", t.surface)
            } else {
                t.surface.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferret_core::Hit;

    fn terms_of(texts: &[&str]) -> Vec<HitTerms> {
        texts
            .iter()
            .map(|t| HitTerms::new(&Hit::new("x", "", *t, 1.0, "test")))
            .collect()
    }

    #[test]
    fn tokens_keep_surface_forms_and_quoting() {
        let t = tokens("What is \u{201c}Kelantan batik\u{201d} from 1950?");
        let surfaces: Vec<(&str, bool)> =
            t.iter().map(|t| (t.surface.as_str(), t.quoted)).collect();
        assert_eq!(
            surfaces,
            [("Kelantan", true), ("batik", true), ("1950", false)]
        );
        assert!(t[0].name_like && !t[1].name_like && t[2].has_digit);
    }

    #[test]
    fn broaden_drops_digits_first() {
        let s = suggest("Spring Boot 1.1.9 NoClassDefFoundError on Java 21", &[], 0).unwrap();
        assert_eq!(s.strategy, RetryStrategy::Broaden);
        assert_eq!(s.query, "Spring Boot NoClassDefFoundError Java");
    }

    #[test]
    fn broaden_drops_the_name_when_no_hit_helps_choose() {
        let s = suggest("traditional Kelantan batik textiles", &[], 0).unwrap();
        assert_eq!(s.query, "traditional batik textiles");
    }

    #[test]
    fn broaden_drops_the_word_fewest_hits_contain() {
        let hits = terms_of(&[
            "Kelantan batik",
            "batik textiles",
            "Kelantan textiles batik",
            "weather",
        ]);
        let s = suggest("traditional Kelantan batik textiles", &hits, 0).unwrap();
        assert_eq!(
            (s.strategy, s.query.as_str()),
            (RetryStrategy::Broaden, "Kelantan batik textiles")
        );
    }

    #[test]
    fn broaden_removes_quotes_before_dropping_words() {
        let s = suggest("\"Kelantan batik\"", &[], 0).unwrap();
        assert_eq!(s.query, "Kelantan batik");
    }

    #[test]
    fn no_suggestion_when_nothing_can_change() {
        assert_eq!(suggest("batik?", &[], 0), None);
        assert_eq!(suggest("what is the", &[], 0), None);
        assert_eq!(suggest("", &[], 0), None);
    }

    #[test]
    fn narrow_quotes_the_words_most_hits_miss() {
        let hits = terms_of(&[
            "traditional batik",
            "batik patterns",
            "batik shirts",
            "Kelantan batik",
        ]);
        let s = suggest("traditional Kelantan batik textiles", &hits, 4).unwrap();
        assert_eq!(s.strategy, RetryStrategy::Narrow);
        assert_eq!(s.query, "\"traditional\" \"Kelantan\" batik \"textiles\"");
    }

    #[test]
    fn narrow_quotes_the_whole_question_when_every_word_is_common() {
        let hits = terms_of(&["solar", "panel", "solar", "panel"]);
        let s = suggest("solar panel", &hits, 4).unwrap();
        assert_eq!(s.query, "\"solar panel\"");
        assert!(!same_query(&s.query, "solar panel"));
    }

    #[test]
    fn narrow_falls_back_to_broaden_when_it_cannot_change_the_query() {
        let hits = terms_of(&["batik", "batik"]);
        let s = suggest("\"batik\" Kelantan", &hits, 2).unwrap();
        assert_eq!(
            s.strategy,
            RetryStrategy::Narrow,
            "Kelantan can still be stressed"
        );
        let s = suggest("\"batik\"", &hits, 2).unwrap();
        assert_eq!(
            (s.strategy, s.query.as_str()),
            (RetryStrategy::Broaden, "batik")
        );
    }
}
