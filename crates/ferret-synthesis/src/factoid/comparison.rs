//! Questions about two named things: a choice between them ("which is longer, X or Y?") reads
//! the compared value on each one's page; a yes/no question ("are both X and Y …?") checks what
//! it asks on each one's page. Both answer with a sentence from each side.

use std::collections::HashSet;

use ferret_core::text::term_set;
use ferret_core::Hit;

use super::{clip_named, page_of, title_name, Chosen, Draft};
use crate::question::{AnswerKind, Compared, Direction, Question};
use crate::spans;
use crate::{split_sentences, strip_markers};

/// One side of a comparison: its page, the sentence read there, and the value found in it.
struct Side {
    /// The thing, as the question names it.
    name: String,
    hit: usize,
    sentence: String,
    value: Option<f64>,
}

/// "Which is longer, X or Y?": each option's compared value, read on its page; the option that
/// wins by the question's direction. Without a direction or a value on both sides, the option
/// whose page holds more of the question's other words.
pub(super) fn choice(asked: &Question, hits: &[Hit], max_words: usize) -> Option<Draft> {
    let options = asked.options.as_ref()?;
    let option_terms: HashSet<String> = options.iter().flat_map(|o| term_set(o)).collect();
    let rest: HashSet<String> = asked.terms.difference(&option_terms).cloned().collect();
    let sides: Vec<Side> = options
        .iter()
        .map(|option| side(hits, option, &rest, asked.comparison.map(|(_, c)| c)))
        .collect::<Option<_>>()?;
    let winner = match (asked.comparison, sides[0].value, sides[1].value) {
        (Some((direction, _)), Some(a), Some(b)) if a != b => {
            let first_wins = match direction {
                Direction::Least => a < b,
                Direction::Most => a > b,
            };
            Some(if first_wins { 0 } else { 1 })
        }
        _ => {
            let held = |side: &Side| {
                let page = term_set(&format!("{} {}", hits[side.hit].title, hits[side.hit].text));
                rest.iter().filter(|t| page.contains(*t)).count()
            };
            let (a, b) = (held(&sides[0]), held(&sides[1]));
            (a != b).then_some(if a > b { 0 } else { 1 })
        }
    };
    // "Which film was not …": the other one.
    let winner = winner.map(|w| if asked.is_negated() { 1 - w } else { w });
    Some(two_sided(
        sides,
        winner.map(|w| options[w].clone()),
        max_words,
    ))
}

/// "Are both X and Y …?", "Were X and Y of the same …?": what the question asks of them, checked
/// on each one's page.
pub(super) fn yes_or_no(asked: &Question, hits: &[Hit], max_words: usize) -> Option<Draft> {
    let question_names = question_subjects(asked, hits);
    if question_names.is_empty() {
        return None;
    }
    // The things are the subjects of their pages ("Neil Jordan" in "… and Neil Jordan
    // American?"); what is asked of them is the rest.
    let name_terms: HashSet<String> = question_names
        .iter()
        .filter_map(|n| page_of(hits, n))
        .flat_map(|page| term_set(title_name(&hits[page].title)))
        .collect();
    let property: HashSet<String> = asked
        .terms
        .difference(&name_terms)
        .filter(|t| !matches!(t.as_str(), "both" | "same" | "common" | "also"))
        .cloned()
        .collect();
    let sides: Vec<Side> = question_names
        .iter()
        .map(|name| side(hits, name, &property, None))
        .collect::<Option<_>>()?;
    let same = asked.words.iter().any(|w| w == "same" || w == "common");
    let verdict = if same && sides.len() >= 2 {
        // The same what? Compare the proper names and the property's words each side's sentence
        // holds (nationalities, places, kinds).
        let traits = |side: &Side| -> HashSet<String> {
            spans::names(&side.sentence)
                .iter()
                .map(|s| s.text(&side.sentence).to_lowercase())
                .filter(|n| !term_set(n).is_subset(&name_terms))
                .collect()
        };
        let (a, b) = (traits(&sides[0]), traits(&sides[1]));
        !a.is_disjoint(&b)
    } else {
        // Each side's page holds at least half of what is asked of it.
        sides.iter().all(|side| {
            let page = term_set(&format!("{} {}", hits[side.hit].title, hits[side.hit].text));
            let held = property.iter().filter(|t| page.contains(*t)).count();
            !property.is_empty() && held * 2 >= property.len()
        })
    };
    let verdict = if verdict { "yes" } else { "no" };
    Some(two_sided(sides, Some(verdict.to_owned()), max_words))
}

/// The things a yes/no question names, as written: its proper names that have a page among
/// `hits`, at most two.
fn question_subjects(asked: &Question, hits: &[Hit]) -> Vec<String> {
    asked
        .names
        .iter()
        .filter(|name| page_of(hits, name).is_some())
        .take(2)
        .cloned()
        .collect()
}

/// The side of a comparison about `name`: its page among `hits` and the sentence there that holds
/// the `compared` value (or the most of `rest`).
fn side(
    hits: &[Hit],
    name: &str,
    rest: &HashSet<String>,
    compared: Option<Compared>,
) -> Option<Side> {
    let hit = page_of(hits, name)?;
    let sentences = split_sentences(&strip_markers(&hits[hit].text));
    let value_of = |s: &str| -> Option<f64> {
        match compared? {
            Compared::Date => spans::spans(s, AnswerKind::Year)
                .first()
                .and_then(|span| span.text(s).parse().ok()),
            Compared::Quantity => spans::spans(s, AnswerKind::Number)
                .iter()
                .filter_map(|span| quantity(span.text(s)))
                .next(),
        }
    };
    let held = |s: &str| {
        let terms = term_set(s);
        rest.iter().filter(|t| terms.contains(*t)).count()
    };
    let sentence = sentences
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| {
            (
                usize::from(value_of(s).is_some()),
                held(s),
                std::cmp::Reverse(*i),
            )
        })
        .map(|(_, s)| s.clone())?;
    Some(Side {
        name: name.to_owned(),
        hit,
        value: value_of(&sentence),
        sentence,
    })
}

/// A number as written ("6,650", "1.2 million", "three"), as a value.
fn quantity(written: &str) -> Option<f64> {
    let lower = written.to_lowercase();
    let mut parts = lower.split_whitespace();
    let head = parts.next()?;
    let base: f64 = match head {
        "one" => 1.0,
        "two" => 2.0,
        "three" => 3.0,
        "four" => 4.0,
        "five" => 5.0,
        "six" => 6.0,
        "seven" => 7.0,
        "eight" => 8.0,
        "nine" => 9.0,
        "ten" => 10.0,
        _ => head.replace(',', "").parse().ok()?,
    };
    let scale = match parts.next() {
        Some("thousand") => 1e3,
        Some("million") => 1e6,
        Some("billion") => 1e9,
        Some("hundred") => 1e2,
        _ => 1.0,
    };
    Some(base * scale)
}

/// A two-sided answer: each side's sentence, within `max_words` together, and the short answer
/// cited from both.
fn two_sided(sides: Vec<Side>, short: Option<String>, max_words: usize) -> Draft {
    let per_side = max_words / sides.len().max(1);
    let mut seen = HashSet::new();
    let sentences: Vec<Chosen> = sides
        .iter()
        .filter(|s| seen.insert((s.hit, s.sentence.clone())))
        .map(|s| {
            // "Its length is …" says whose only on its page: the answer names it.
            Chosen {
                hit: s.hit,
                text: clip_named(&s.sentence, None, Some(&s.name), per_side),
            }
        })
        .collect();
    let cited: Vec<usize> = sentences.iter().map(|c| c.hit).collect();
    Draft::Stated {
        sentences,
        short: short.map(|s| (s, cited)),
    }
}
