//! Answers to questions that ask for a fact: the sentence that states it, the sentence that links
//! it to the question when it sits on another page, and the fact itself in a few words.
//! Questions about two named things (a choice, a yes/no) are `comparison`'s.

use std::collections::{HashMap, HashSet};

use ferret_core::text::{self, term_set};
use ferret_core::Hit;

use crate::question::{AnswerKind, Question};
use crate::spans::{self, Span};
use crate::{split_sentences, strip_markers};

mod comparison;

use comparison::{choice, yes_or_no};

/// A sentence chosen for the answer: which hit it is from and its text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chosen {
    pub(crate) hit: usize,
    pub(crate) text: String,
}

/// What a factoid answer is made of, before markers are added.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Draft {
    /// The sentences (in the order to show them) and the short answer with the hits it is read
    /// from.
    Stated {
        sentences: Vec<Chosen>,
        short: Option<(String, Vec<usize>)>,
    },
    /// No hit states what the question asks: say so, and point at the closest hits.
    NotStated { closest: Vec<usize> },
}

/// A sentence of one hit with what it offers the question.
struct Sentence {
    hit: usize,
    text: String,
    /// The best span of the kind asked, not already in the question.
    span: Option<Span>,
    score: f32,
}

/// Hits a factoid answer is read from: a fact's page and the page leading to it.
const CHAIN_PAGES: usize = 2;
/// Bonus for a sentence holding an answer of the kind asked.
const KIND_WEIGHT: f32 = 0.6;
/// Bonus for the hit's rank: `RANK_WEIGHT / (rank + 1)`.
const RANK_WEIGHT: f32 = 0.15;
/// Bonus for a sentence on a page the question's named things lead to.
const REACHED_WEIGHT: f32 = 0.6;
/// Bonus for the opening sentence of a page the question does not name, which defines its
/// subject as the kind of thing asked for: that subject is the answer.
const DEFINED_WEIGHT: f32 = 1.0;
/// Bonus for a sentence naming the noun the question asks for ("what sports team" → a
/// sentence with "team"): the name beside it is of the kind asked.
const HEAD_WEIGHT: f32 = 0.2;
/// Words after a definition's verb ("is", "was") that may hold what the subject is.
const DEFINITION_WORDS: usize = 10;
/// Fewer words than this say nothing: no link sentence is cut that short.
const MIN_LINK_WORDS: usize = 8;

/// The factoid answer to `asked` from `hits` (best first; at most `sources` of them are read for
/// the answer sentence), at most `max_words` long.
pub(crate) fn draft(asked: &Question, hits: &[Hit], sources: usize, max_words: usize) -> Draft {
    match asked.kind {
        AnswerKind::Choice => {
            if let Some(draft) = choice(asked, hits, max_words) {
                return draft;
            }
        }
        AnswerKind::YesNo => {
            if let Some(draft) = yes_or_no(asked, hits, max_words) {
                return draft;
            }
        }
        _ => {}
    }
    let read = &hits[..hits.len().min(sources).min(CHAIN_PAGES)];
    // A second page neither linked to the first nor named by the question is not on its chain:
    // what it says answers another question.
    let connected = read.len() < 2
        || linked(&read[0], &read[1])
        || asked.names.iter().any(|name| is_about(&read[1], name));
    let read = if connected { read } else { &read[..1] };
    let sentences = sentences_of(asked, read);
    let best = sentences
        .iter()
        .enumerate()
        .filter(|(_, s)| s.span.is_some() || !asked.is_strictly_typed())
        .max_by(|(ia, a), (ib, b)| a.score.total_cmp(&b.score).then(ib.cmp(ia)));
    let Some((_, best)) = best else {
        // The closest: the best hits with any text to read.
        return Draft::NotStated {
            closest: (0..read.len())
                .filter(|&i| !read[i].text.trim().is_empty())
                .take(2)
                .collect(),
        };
    };
    let short = best.span.as_ref().map(|span| {
        let span = if asked.plural {
            listed_with(&best.text, span, asked.kind)
        } else {
            span.clone()
        };
        (span.text(&best.text).to_owned(), vec![best.hit])
    });
    // The other chain page's best sentence: the link to the answer's page, or the answer when
    // the chosen one is wrong. Each gets half the room, cut around what it offers.
    // Only a page linked to the answer's page is on the question's chain: one names the other's
    // subject, or the question names it.
    let on_chain: Vec<bool> = read
        .iter()
        .enumerate()
        .map(|(i, page)| {
            i != best.hit
                && (linked(page, &read[best.hit])
                    || asked.names.iter().any(|name| is_about(page, name)))
        })
        .collect();
    let other = sentences
        .iter()
        .filter(|s| on_chain[s.hit])
        .max_by(|a, b| a.score.total_cmp(&b.score));
    let room = match other {
        Some(_) => max_words / 2,
        None => max_words,
    };
    // A sentence opening with a pronoun is led by its page's subject.
    let cut = |s: &Sentence, room: usize| {
        let subject = title_name(&read[s.hit].title);
        let named = opens_with_pronoun(&s.text).then_some(subject);
        clip_named(&s.text, s.span.as_ref(), named, room)
    };
    let mut chosen = vec![Chosen {
        hit: best.hit,
        text: cut(
            best,
            room.max(max_words - other.map_or(0, |o| words(&o.text).min(room))),
        ),
    }];
    if let Some(other) = other {
        let left = max_words.saturating_sub(words(&chosen[0].text));
        if left >= MIN_LINK_WORDS {
            chosen.push(Chosen {
                hit: other.hit,
                text: cut(other, left),
            });
        }
    }
    chosen.sort_by_key(|c| c.hit);
    Draft::Stated {
        sentences: chosen,
        short,
    }
}

/// `span` widened over the spans of the same kind listed after it ("A, B, C and D"): a question
/// asking for several things is answered by the list.
fn listed_with(sentence: &str, span: &Span, kind: AnswerKind) -> Span {
    let mut end = span.end;
    for next in spans::spans(sentence, kind)
        .into_iter()
        .filter(|s| s.start >= span.end)
    {
        let gap = sentence[end..next.start].trim();
        if matches!(gap, "," | "and" | ", and" | "&" | "or") {
            end = next.end;
        } else {
            break;
        }
    }
    Span {
        start: span.start,
        end,
    }
}

/// The sentences of `hits` with their scores for `asked`.
///
/// What a sentence is scored on is what the question asks beyond the things it names: a
/// sentence on the page of a named thing restates the question's own words, while the answer is
/// often on the page the named thing leads to (a page no question word names, but a top hit's
/// text does).
fn sentences_of(asked: &Question, hits: &[Hit]) -> Vec<Sentence> {
    let named: HashSet<String> = asked.names.iter().flat_map(|n| term_set(n)).collect();
    let rest: HashSet<String> = asked.terms.difference(&named).cloned().collect();
    let rest = if rest.is_empty() {
        asked.terms.clone()
    } else {
        rest
    };
    let subjects: Vec<HashSet<String>> = hits
        .iter()
        .map(|h| term_set(title_name(&h.title)))
        .map(|subject| {
            if subject.is_subset(&asked.terms) {
                HashSet::new()
            } else {
                subject
            }
        })
        .collect();
    // A question word most sentences hold says little about which one answers; a word few hold
    // says much: coverage is weighted by how rare each word is among the sentences read.
    let split: Vec<Vec<String>> = hits
        .iter()
        .map(|hit| split_sentences(&strip_markers(&hit.text)))
        .collect();
    let mut holding: HashMap<&str, usize> = HashMap::new();
    let all = split.iter().flatten().count().max(1) as f32;
    let sentence_terms: Vec<Vec<HashSet<String>>> = split
        .iter()
        .map(|page| page.iter().map(|s| term_set(s)).collect())
        .collect();
    for terms in sentence_terms.iter().flatten() {
        for term in terms.iter().filter(|t| rest.contains(*t)) {
            *holding.entry(term.as_str()).or_default() += 1;
        }
    }
    let weight =
        |term: &str| (1.0 + all / (1.0 + holding.get(term).copied().unwrap_or(0) as f32)).ln();
    let rest_weight: f32 = rest.iter().map(|t| weight(t)).sum();
    let mut out = Vec::new();
    for (rank, hit) in hits.iter().enumerate() {
        let title = term_set(&hit.title);
        let subject = term_set(title_name(&hit.title));
        let other_subjects: Vec<HashSet<String>> = subjects
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != rank)
            .map(|(_, s)| s.clone())
            .collect();
        let reached = !subject.is_empty()
            && !subject.is_subset(&asked.terms)
            && hits.iter().enumerate().any(|(other, h)| {
                other != rank && subject.is_subset(&term_set(&format!("{} {}", h.title, h.text)))
            });
        let sentences = &split[rank];
        // "Which Victorian poet …": a page the question does not name, defined as a poet.
        let defined = matches!(
            asked.kind,
            AnswerKind::Person | AnswerKind::Name | AnswerKind::Place
        ) && !subject.is_empty()
            && !subject.is_subset(&asked.terms)
            && hits
                .iter()
                .enumerate()
                .any(|(other, page)| other != rank && linked(page, hit))
            && sentences
                .first()
                .is_some_and(|first| defines_as(first, &asked.heads));
        for (at, sentence) in sentences.iter().enumerate() {
            // Read once above for the words' rarity.
            let terms = &sentence_terms[rank][at];
            let with_title: HashSet<String> = terms.union(&title).cloned().collect();
            let opens_definition = defined && at == 0;
            // A page the chain leads to is read whole: what it says is why it was reached.
            if text::coverage(&asked.terms, &with_title) == 0.0 && !reached && !opens_definition {
                continue;
            }
            let coverage = rest
                .iter()
                .filter(|t| with_title.contains(*t))
                .map(|t| weight(t))
                .sum::<f32>()
                / rest_weight.max(f32::EPSILON);
            let mut span = best_span(asked, sentence, hit, &other_subjects);
            // "Which player …": a page the question leads to, or one defined as the kind of
            // thing asked for, whose sentence opens with its subject, is about the thing asked
            // for.
            let opening = spans::names(sentence).into_iter().next().filter(|first| {
                first.start == 0 && subject.is_subset(&term_set(first.text(sentence)))
            });
            let reached_answer =
                reached && matches!(asked.kind, AnswerKind::Person | AnswerKind::Name);
            let defined_answer = opens_definition && opening.is_some();
            if reached_answer || defined_answer {
                if let Some(opening) = opening {
                    span = Some(opening);
                }
            }
            let score = coverage
                + if span.is_some() { KIND_WEIGHT } else { 0.0 }
                + if reached { REACHED_WEIGHT } else { 0.0 }
                + if defined_answer { DEFINED_WEIGHT } else { 0.0 }
                + if span.is_some() && holds_head(asked, sentence) {
                    HEAD_WEIGHT
                } else {
                    0.0
                }
                + RANK_WEIGHT / (rank as f32 + 1.0);
            out.push(Sentence {
                hit: rank,
                text: sentence.clone(),
                span,
                score,
            });
        }
    }
    out
}

/// The span of `sentence` that best answers `asked`: of the kind asked, not made of the
/// question's own words, nearest to the question's words in the sentence.
///
/// A span naming another page's subject is the link to that page, not the answer: the answer is
/// what that page says.
fn best_span(
    asked: &Question,
    sentence: &str,
    page: &Hit,
    other_subjects: &[HashSet<String>],
) -> Option<Span> {
    let candidates = spans::spans(sentence, asked.kind);
    let anchors: Vec<usize> = anchor_positions(asked, sentence);
    candidates
        .into_iter()
        .filter(|span| {
            let own = term_set(span.text(sentence));
            let words: Vec<String> = text::words(span.text(sentence)).collect();
            // A span the question already holds answers nothing.
            let asked_already =
                own.is_subset(&asked.terms) && words.iter().all(|w| asked.words.contains(w));
            let empty = own.is_empty() && asked.kind != AnswerKind::Number;
            let links_elsewhere = other_subjects
                .iter()
                .any(|subject| !subject.is_empty() && subject.is_subset(&own));
            !asked_already
                && !empty
                && !links_elsewhere
                && (span.start > 0 || is_a_name_on(page, span.text(sentence)))
        })
        .min_by_key(|span| {
            anchors
                .iter()
                .map(|&a| a.abs_diff(span.start).min(a.abs_diff(span.end)))
                .min()
                .unwrap_or(usize::MAX / 2)
                // Earlier spans break ties: sentences lead with their subject.
                .saturating_mul(4)
                .saturating_add(span.start / 64)
        })
}

/// Is `word`, capitalised at the start of a sentence, a name? Only if the page writes it
/// capitalised where a sentence does not start, or its title holds it ("Volcanic eruptions…"
/// starts with an adjective).
fn is_a_name_on(page: &Hit, word: &str) -> bool {
    if word.contains(char::is_whitespace) {
        return true;
    }
    page.title.contains(word)
        || page.text.match_indices(word).any(|(at, _)| {
            page.text[..at]
                .trim_end()
                .chars()
                .last()
                .is_some_and(|c| !matches!(c, '.' | '!' | '?' | '"'))
        })
}

/// Byte positions of the question's content words in `sentence`.
fn anchor_positions(asked: &Question, sentence: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    for piece in sentence.split(|c: char| !c.is_alphanumeric()) {
        let start = at;
        at += piece.len() + 1;
        if piece.is_empty() {
            continue;
        }
        if term_set(piece).iter().any(|t| asked.terms.contains(t)) {
            out.push(start);
        }
    }
    out
}

/// `sentence` cut to `max_words`, keeping `span` inside. Asides in brackets that do not hold the
/// span go first (dates, pronunciations, other spellings); then words away from the span, those
/// before it first, but a name the sentence opens with (its subject) stays.
fn clip(sentence: &str, span: Option<&Span>, max_words: usize) -> String {
    if words(sentence) <= max_words {
        return sentence.to_owned();
    }
    let (sentence, span) = without_asides(sentence, span);
    let all: Vec<(usize, &str)> = word_offsets(&sentence);
    if all.len() <= max_words {
        return sentence;
    }
    // The subject: up to the verb of a sentence that opens with a name ("Rafael Souza dos
    // Anjos is …"), or the name alone when the verb comes late.
    let opening = spans::names(&sentence)
        .into_iter()
        .next()
        .filter(|name| name.start == 0)
        .map_or(0, |name| {
            let to_verb = all
                .iter()
                .position(|(_, w)| matches!(*w, "is" | "was" | "are" | "were"));
            let name_words = all.iter().take_while(|(at, _)| *at < name.end).count();
            to_verb
                .filter(|&verb| verb >= name_words && verb <= max_words / 3)
                .unwrap_or(name_words)
        })
        .min(max_words / 3);
    let room = max_words - opening;
    let at = span.map_or(0, |s| {
        all.iter().position(|(o, _)| *o >= s.start).unwrap_or(0)
    });
    let start = at.saturating_sub(room / 2).max(opening);
    let end = (start + room).min(all.len());
    let start = end.saturating_sub(room).max(opening);
    let joined =
        |words: &[(usize, &str)]| words.iter().map(|(_, w)| *w).collect::<Vec<_>>().join(" ");
    let mut text = joined(&all[..opening]);
    if start > opening {
        text = format!("{text} \u{2026}").trim_start().to_owned();
    }
    let window = joined(&all[start..end]);
    text = format!("{text} {window}").trim().to_owned();
    if end < all.len() {
        text.push_str(" \u{2026}");
    }
    text
}

/// `sentence` without its bracketed asides that do not overlap `span`, and `span` moved to
/// match.
fn without_asides(sentence: &str, span: Option<&Span>) -> (String, Option<Span>) {
    let mut kept = String::with_capacity(sentence.len());
    let mut removed_before = 0;
    // Open brackets, innermost last; a closing bracket that matches none is text (web text
    // has stray ones, as in "(] ; born 1984)").
    let mut open: Vec<char> = Vec::new();
    let mut aside_start = 0;
    let mut last = 0;
    for (i, c) in sentence.char_indices() {
        match c {
            '(' | '[' => {
                if open.is_empty() {
                    aside_start = i;
                }
                open.push(c);
            }
            ')' | ']' if open.last() == Some(&if c == ')' { '(' } else { '[' }) => {
                open.pop();
                if open.is_empty() {
                    let end = i + c.len_utf8();
                    let holds_span = span.is_some_and(|s| s.start < end && aside_start < s.end);
                    if !holds_span {
                        // The space before the aside goes with it.
                        let cut_from = sentence[..aside_start].trim_end().len().max(last);
                        kept.push_str(&sentence[last..cut_from]);
                        if span.is_some_and(|s| s.start >= end) {
                            removed_before += end - cut_from;
                        }
                        last = end;
                    }
                }
            }
            _ => {}
        }
    }
    kept.push_str(&sentence[last..]);
    let span = span.map(|s| Span {
        start: s.start - removed_before,
        end: s.end - removed_before,
    });
    (kept, span)
}

fn word_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Does `sentence` define its subject as one of `heads`: is one of them (or its singular) among
/// the first [`DEFINITION_WORDS`] words after its first "is", "was", "are" or "were"?
fn defines_as(sentence: &str, heads: &[String]) -> bool {
    let words: Vec<String> = text::words(sentence).collect();
    let Some(verb) = words
        .iter()
        .position(|w| matches!(w.as_str(), "is" | "was" | "are" | "were"))
    else {
        return false;
    };
    let singular = |w: &str| w.strip_suffix('s').unwrap_or(w).to_owned();
    words[verb + 1..]
        .iter()
        .take(DEFINITION_WORDS)
        .any(|w| heads.iter().any(|h| *h == *w || singular(h) == singular(w)))
}

/// Does `sentence` hold the noun the question asks for ("what sports team" → "team"), where
/// it is not part of a name the question gives?
fn holds_head(asked: &Question, sentence: &str) -> bool {
    if asked.heads.is_empty() || asked.heads.len() > 3 {
        return false;
    }
    let named: HashSet<String> = asked
        .names
        .iter()
        .flat_map(|n| text::words(n).collect::<Vec<_>>())
        .collect();
    let singular = |w: &str| w.strip_suffix('s').unwrap_or(w).to_owned();
    text::words(sentence).any(|w| {
        asked
            .heads
            .iter()
            .any(|h| !named.contains(h) && singular(h) == singular(&w))
    })
}

/// Does one of `a` and `b` name the other's subject?
fn linked(a: &Hit, b: &Hit) -> bool {
    names_subject_of(a, b) || names_subject_of(b, a)
}

/// Does `page` name `other`'s subject, as a phrase: its title name's terms in order, at most one
/// other term among them ("Iceal \"Gene\" Hambleton" names "Iceal Hambleton"; "final speaking
/// role … five months" does not name "Final Five"), or for a long title, most of its terms with
/// two of them in a row ("the 2016 World Junior Championships").
fn names_subject_of(page: &Hit, other: &Hit) -> bool {
    // Content terms in order, stemmed: "Battles of Tannenberg" names "Battle of Tannenberg".
    let title = text::content_terms(title_name(&other.title));
    if title.is_empty() {
        return false;
    }
    let terms = text::content_terms(&format!("{} {}", page.title, page.text));
    if in_order_within(&terms, &title, title.len() + 1) {
        return true;
    }
    let found = title.iter().filter(|t| terms.contains(*t)).count();
    title.len() >= 3
        && 3 * found >= 2 * title.len()
        && title
            .windows(2)
            .any(|pair| in_order_within(&terms, pair, pair.len()))
}

/// Does `sequence` hold `phrase`'s terms in order, spanning at most `window` terms?
fn in_order_within(sequence: &[String], phrase: &[String], window: usize) -> bool {
    sequence.iter().enumerate().any(|(start, term)| {
        if *term != phrase[0] {
            return false;
        }
        let mut next = 1;
        for candidate in sequence
            .iter()
            .skip(start + 1)
            .take(window.saturating_sub(1))
        {
            if next < phrase.len() && *candidate == phrase[next] {
                next += 1;
            }
        }
        next == phrase.len()
    })
}

/// A title without its parenthesis: "Styx (band)" is about "Styx".
fn title_name(title: &str) -> &str {
    title.split_once(" (").map_or(title, |(name, _)| name)
}

/// Is `hit` about `name`: does its title hold the name's terms, or the name its title's?
fn is_about(hit: &Hit, name: &str) -> bool {
    let title = term_set(title_name(&hit.title));
    let name = term_set(name);
    !title.is_empty() && !name.is_empty() && (name.is_subset(&title) || title.is_subset(&name))
}

/// The hit about `name` among `hits`, else the first whose opening sentence names it.
fn page_of(hits: &[Hit], name: &str) -> Option<usize> {
    hits.iter().position(|h| is_about(h, name)).or_else(|| {
        let terms = term_set(name);
        hits.iter().position(|h| {
            split_sentences(&strip_markers(&h.text))
                .first()
                .is_some_and(|s| terms.is_subset(&term_set(s)))
        })
    })
}

/// `sentence` cut to `max_words` around `span` (see [`clip`]), led by `name` when it does not
/// hold it: "He debuted …" says who only on its page, and the answer is read away from it. The
/// name counts in the words.
fn clip_named(sentence: &str, span: Option<&Span>, name: Option<&str>, max_words: usize) -> String {
    let lead = name.filter(|name| {
        let terms = term_set(name);
        !terms.is_empty() && !terms.is_subset(&term_set(sentence))
    });
    match lead {
        Some(name) => format!(
            "{name}: {}",
            clip(sentence, span, max_words.saturating_sub(words(name)))
        ),
        None => clip(sentence, span, max_words),
    }
}

/// Does `sentence` open with a pronoun standing for its page's subject?
fn opens_with_pronoun(sentence: &str) -> bool {
    let first = sentence
        .trim_start_matches(['\u{2026}', ' '])
        .split_whitespace()
        .next()
        .unwrap_or_default();
    matches!(
        first,
        "He" | "She" | "It" | "They" | "His" | "Her" | "Its" | "Their"
    )
}

#[cfg(test)]
mod tests;
