//! Citation markers: `[n]` (or `[n, m]`) in an answer, pointing at hits.

use std::collections::HashMap;
use std::sync::OnceLock;

use ferret_core::{Citation, Hit, HitId};
use regex::Regex;

use crate::{split_sentences, Answer};

/// `[1]`, `[ 2 ]`, `[1, 3]`: ASCII digits only, so that no other script's digits become markers.
fn marker_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\[\s*([0-9]+(?:\s*,\s*[0-9]+)*)\s*\]").expect("marker regex is valid")
    })
}

fn numbers(group: &str) -> impl Iterator<Item = Option<usize>> + '_ {
    group.split(',').map(|n| n.trim().parse::<usize>().ok())
}

/// The marker numbers `text` holds, in order (`[1, 3]` gives 1 and 3).
pub(crate) fn markers_in(text: &str) -> Vec<usize> {
    marker_regex()
        .captures_iter(text)
        .flat_map(|caps| numbers(&caps[1]).flatten().collect::<Vec<_>>())
        .collect()
}

/// Remove everything that looks like a citation marker (a source's own footnote numbers, like
/// Wikipedia's `[3]`), so that retrieved text can never bring markers into an answer.
pub fn strip_markers(text: &str) -> String {
    let mut out = text.to_owned();
    // Removing one marker can join its neighbours into a new one ("[[1]2]"); repeat until none.
    while marker_regex().is_match(&out) {
        out = marker_regex().replace_all(&out, "").into_owned();
    }
    out
}

/// Check the markers of an answer written elsewhere (a language model) against `hits`.
///
/// A marker's numbers are 1-based positions in `hits`. Numbers that point at no hit (0, past the
/// end, unparseable) are removed and counted in `dropped_markers`, and a marker left empty is
/// removed with the space before it. The remaining markers are renumbered `1..=k` in order of first
/// use, consistently (every mention of a hit gets the same number; two positions holding the same
/// hit id share one number), duplicates inside one marker are merged, `[1,2]` is written `[1, 2]`,
/// and `[1][2]` stays two markers. `citations` lists one entry per number, in order; `sentences`
/// counts the sentences of the result with [`split_sentences`].
///
/// Anything of the marker form counts, even inside code; `a[0]` loses its `[0]`.
pub fn check_citations(text: &str, hits: &[Hit]) -> Answer {
    let valid = |n: Option<usize>| n.filter(|&n| (1..=hits.len()).contains(&n));
    let (text, dropped_markers) = drop_invalid(text, &valid);

    let mut number_of: HashMap<&HitId, usize> = HashMap::new();
    let mut citations: Vec<Citation> = Vec::new();
    let text = marker_regex()
        .replace_all(&text, |caps: &regex::Captures<'_>| {
            let mut group: Vec<usize> = Vec::new();
            for position in numbers(&caps[1]).filter_map(valid) {
                let hit = &hits[position - 1];
                let number = *number_of.entry(&hit.id).or_insert_with(|| {
                    citations.push(Citation {
                        marker: citations.len() + 1,
                        hit_id: hit.id.clone(),
                        title: hit.title.to_string(),
                        url: hit.url.clone(),
                    });
                    citations.len()
                });
                if !group.contains(&number) {
                    group.push(number);
                }
            }
            let group: Vec<String> = group.iter().map(usize::to_string).collect();
            format!("[{}]", group.join(", "))
        })
        .into_owned();
    let sentences = split_sentences(&text).len();
    Answer {
        text,
        citations,
        short: None,
        sentences,
        dropped_markers,
    }
}

/// Remove the numbers `valid` rejects, and markers left empty; returns the text and how many
/// numbers went. Repeats because a removal can form a new marker from its neighbours.
fn drop_invalid(text: &str, valid: &dyn Fn(Option<usize>) -> Option<usize>) -> (String, usize) {
    let mut text = text.to_owned();
    let mut dropped = 0;
    loop {
        let mut changed = false;
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut skip_leading_space = false;
        for caps in marker_regex().captures_iter(&text) {
            let whole = caps.get(0).expect("group 0 always matches");
            let all: Vec<Option<usize>> = numbers(&caps[1]).collect();
            let kept: Vec<String> = all
                .iter()
                .filter_map(|&n| valid(n))
                .map(|n| n.to_string())
                .collect();
            let before = &text[last..whole.start()];
            let before = if skip_leading_space {
                before.trim_start()
            } else {
                before
            };
            out.push_str(before);
            skip_leading_space = false;
            last = whole.end();
            if kept.len() == all.len() {
                out.push_str(whole.as_str());
                continue;
            }
            changed = true;
            dropped += all.len() - kept.len();
            if !kept.is_empty() {
                out.push_str(&format!("[{}]", kept.join(", ")));
                continue;
            }
            // Removing the whole marker: take the space before it with it; keep words apart.
            let trimmed = out.trim_end_matches([' ', '\t']).len();
            out.truncate(trimmed);
            let next = text[last..].chars().next();
            if out.is_empty() || out.ends_with('\n') {
                skip_leading_space = true;
            } else if next.is_some_and(|c| c.is_alphanumeric() || c == '[') {
                out.push(' ');
            }
        }
        let rest = &text[last..];
        out.push_str(if skip_leading_space {
            rest.trim_start_matches([' ', '\t'])
        } else {
            rest
        });
        if !changed {
            return (text, dropped);
        }
        text = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(n: usize) -> Vec<Hit> {
        (1..=n)
            .map(|i| Hit::new(format!("h{i}"), format!("Title {i}"), "text", 1.0, "test"))
            .collect()
    }

    #[test]
    fn strip_markers_removes_footnotes_even_when_nested() {
        assert_eq!(
            strip_markers("born in 1950[3][12]. Died [4, 5]."),
            "born in 1950. Died ."
        );
        assert_eq!(strip_markers("odd [[1]2] case"), "odd  case");
        assert_eq!(strip_markers("array[i] and [a]"), "array[i] and [a]");
    }

    #[test]
    fn invalid_markers_are_removed_with_their_space() {
        let a = check_citations("[9] Starts here [0]. Middle [7] word. End [x].", &hits(2));
        assert_eq!(a.text, "Starts here. Middle word. End [x].");
        assert_eq!(a.dropped_markers, 3);
        assert!(a.citations.is_empty());
    }

    #[test]
    fn removal_that_forms_a_new_marker_is_checked_again() {
        let a = check_citations("odd [[9]2] case", &hits(2));
        assert_eq!(a.text, "odd [1] case");
        assert_eq!(a.citations[0].hit_id.0, "h2");
        assert_eq!(a.dropped_markers, 1);
    }

    #[test]
    fn huge_numbers_are_invalid_not_a_panic() {
        let a = check_citations("x [99999999999999999999999999]. y [1].", &hits(1));
        assert_eq!(a.text, "x. y [1].");
        assert_eq!(a.dropped_markers, 1);
    }
}
