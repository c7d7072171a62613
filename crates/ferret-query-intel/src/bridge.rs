//! Multi-hop questions without a model. A bridge question names one thing and asks about another
//! that only the first one's document names ("the university where Tokarev was a professor"):
//! the next query is a name found in the top results that the question does not contain. A
//! comparison names both things: the next query is the one whose document the results lack.

use std::collections::HashSet;

use ferret_core::text::term_set;
use ferret_core::{Hit, StageOutput};

use crate::{Analysis, Complexity, QueryType};
use ferret_core::sentences::sentence_bounds;
use ferret_core::text::is_question_word;
use ferret_core::text::names::{name_runs, quoted_titles, tokenize, LoneOpener};

/// How a question is answered, as the strategy chooser sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionShape {
    /// One pass finds it: short, or naming nothing to hop from.
    Simple,
    /// Two or more named things set side by side; each needs its own document.
    Comparison,
    /// A named thing leads to an unnamed one whose document answers.
    Bridge,
}

impl QuestionShape {
    /// The snake_case name, as in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionShape::Simple => "simple",
            QuestionShape::Comparison => "comparison",
            QuestionShape::Bridge => "bridge",
        }
    }
}

/// The next search of a multi-hop question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The name the hop is about.
    pub entity: String,
    /// The query to run (the heuristic searches the name alone; a model may add words).
    pub query: String,
}

impl Hop {
    /// Where the hop's search put the document it went for: the first of its top results about
    /// the name (a search for a name can rank a page that mentions it often above the name's
    /// own). `None` when there is none: the name was an adjective, or the collection has no page
    /// on it, and the hop adds nothing worth ranking.
    pub fn document_in(&self, hits: &[Hit]) -> Option<usize> {
        hits.iter()
            .take(HOP_RESULTS_READ)
            .position(|hit| self.is_document(hit))
    }

    /// Is `hit` the page about the hop's name?
    pub fn is_document(&self, hit: &Hit) -> bool {
        is_about(hit, &self.entity)
    }

    /// The hop a written query makes ("Steven Spielberg date of birth"): it is about the first
    /// name in it that the question does not hold, or about the whole query when there is none.
    pub fn for_query(query: &str, question: &str) -> Self {
        let asked = term_set(question);
        let entity = name_runs(query, LoneOpener::Name)
            .into_iter()
            .map(|(start, end)| query[start..end].trim())
            .find(|name| !term_set(name).is_subset(&asked))
            .unwrap_or(query);
        Self {
            entity: entity.to_owned(),
            query: query.to_owned(),
        }
    }
}

/// A hop's top results searched for the document about its name.
const HOP_RESULTS_READ: usize = 3;

/// What a hop finder reads to choose the next search of a multi-hop question.
#[derive(Debug, Clone, Copy)]
pub struct HopRequest<'a> {
    /// The question as asked.
    pub question: &'a str,
    /// Its shape; a [`QuestionShape::Simple`] question has no hop.
    pub shape: QuestionShape,
    /// The results so far, best first.
    pub hits: &'a [Hit],
    /// The queries searched so far, as they were run.
    pub searched: &'a [String],
    /// The fingerprint two queries share when they are the same search (the executor's), so no
    /// hop repeats one.
    pub fingerprint: fn(&str) -> String,
}

impl HopRequest<'_> {
    fn fingerprints(&self) -> HashSet<String> {
        self.searched
            .iter()
            .map(|q| (self.fingerprint)(q))
            .collect()
    }
}

/// Chooses the next search of a multi-hop question, or none when the results hold what the
/// question leads to.
#[async_trait::async_trait]
pub trait HopFinder: Send + Sync {
    /// The next hop for `request`, or `None`.
    async fn next_hop(&self, request: HopRequest<'_>) -> StageOutput<Option<Hop>>;

    /// The names a bridge question's `hits` lead to, best first, when this finder ranks them
    /// otherwise than [`BridgeFinder::bridge_entities`].
    async fn rank_bridges(&self, _question: &str, _hits: &[Hit]) -> Option<Vec<String>> {
        None
    }
}

#[async_trait::async_trait]
impl HopFinder for BridgeFinder {
    async fn next_hop(&self, request: HopRequest<'_>) -> StageOutput<Option<Hop>> {
        let searched = request.fingerprints();
        StageOutput::heuristic(self.hop(
            request.question,
            request.shape,
            request.hits,
            &searched,
            request.fingerprint,
        ))
    }
}

/// Settings of [`BridgeFinder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BridgeConfig {
    /// Questions with fewer words are [`QuestionShape::Simple`]: a short question about a name is
    /// answered by that name's document.
    pub min_bridge_words: usize,
    /// Top results read for names.
    pub hits_read: usize,
    /// How the names a bridge question's results lead to are ranked.
    pub ranking: NameRanking,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self {
            min_bridge_words: 6,
            hits_read: 3,
            ranking: NameRanking::Rules,
        }
    }
}

/// How the names a bridge question's results lead to are ranked, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameRanking {
    /// By their shape: the question's words they hold and stand beside, quotes, length, and the
    /// rank of the result they are in.
    #[default]
    Rules,
    /// The rules' best names reordered by how close the sentence each stands in is to what the
    /// question asks beyond its own names, read by the index's embedder (rules alone when the
    /// index has none). Measured on HotpotQA it ties the rules at more embedding work, so it is
    /// not the default: see `docs/eval/bridge-ranking.md`.
    Meaning,
}

/// Does `text` ask something: a question mark, or a question word?
fn asks_something(text: &str) -> bool {
    text.contains('?') || ferret_core::text::words(text).any(|w| is_question_word(&w))
}

/// Finds the next hop of a multi-hop question in the results so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct BridgeFinder {
    config: BridgeConfig,
}

impl BridgeFinder {
    /// A finder with `config`.
    pub fn new(config: BridgeConfig) -> Self {
        Self { config }
    }

    /// The shape of `question`.
    pub fn shape(&self, question: &str, analysis: &Analysis) -> QuestionShape {
        let names = question_names(question);
        // A comparative word sets names side by side only when they are listed together
        // ("first, X or Y"); "her first Senate term" compares nothing.
        let listed = ferret_core::text::words(question).any(|w| w == "or" || w == "and");
        let comparative = listed
            && ferret_core::text::words(question).any(|w| COMPARATIVE_WORDS.contains(&w.as_str()));
        if names.len() >= 2 && (analysis.query_type == QueryType::Comparison || comparative) {
            QuestionShape::Comparison
        } else if !names.is_empty()
            // A statement (a claim to check, a title) asks for nothing unnamed: it is searched as
            // stated. A bridge is a question about something its names lead to.
            && asks_something(question)
            // Several questions in one are decomposed, not hopped.
            && analysis.complexity == Complexity::Simple
            && ferret_core::text::words(question).count() >= self.config.min_bridge_words
            && !remainder_terms(question, &names).is_empty()
        {
            QuestionShape::Bridge
        } else {
            QuestionShape::Simple
        }
    }

    /// The next query for `question` given the results so far (best first), or `None` when the
    /// results already hold what the question leads to. Queries in `searched` (normalised with
    /// `normalize`) are never proposed again.
    pub fn hop(
        &self,
        question: &str,
        shape: QuestionShape,
        hits: &[Hit],
        searched: &HashSet<String>,
        normalize: impl Fn(&str) -> String,
    ) -> Option<Hop> {
        let ranked = match shape {
            QuestionShape::Bridge => {
                self.bridge_entities(question, &question_names(question), hits)
            }
            _ => Vec::new(),
        };
        self.hop_among(question, shape, hits, ranked, searched, normalize)
    }

    /// [`BridgeFinder::hop`] with a bridge question's names already ranked, best first (by
    /// whatever reads them best: these rules, or their meaning).
    pub(crate) fn hop_among(
        &self,
        question: &str,
        shape: QuestionShape,
        hits: &[Hit],
        ranked: Vec<String>,
        searched: &HashSet<String>,
        normalize: impl Fn(&str) -> String,
    ) -> Option<Hop> {
        let names = question_names(question);
        let top = &hits[..hits.len().min(self.config.hits_read * 2)];
        let fresh = |entity: &String| !searched.contains(&normalize(entity));
        // Each name the question holds should have a result about it.
        let missing = names
            .iter()
            .filter(|name| !top.iter().any(|h| is_about(h, name)));
        let entity = match shape {
            QuestionShape::Simple => return None,
            QuestionShape::Comparison => missing.into_iter().find(|name| fresh(name))?.clone(),
            // The name the results lead to comes before a name the question mentions in passing.
            QuestionShape::Bridge => {
                if self.one_result_answers(question, hits) {
                    return None;
                }
                // Covered: the best bridge already has a result of its own.
                if ranked
                    .first()
                    .is_some_and(|best| top.iter().any(|h| is_about(h, best)))
                {
                    return None;
                }
                ranked
                    .into_iter()
                    .chain(missing.cloned())
                    .find(|name| fresh(name))?
            }
        };
        // The name alone: the hop fetches its document, and the question's other words would
        // pull back the documents the first search already found.
        Some(Hop {
            query: entity.clone(),
            entity,
        })
    }

    /// The names `hits` lead to for a question of `shape`, best first, at most `max`: for a
    /// bridge, the names the top results hold and the question does not; for a comparison, the
    /// compared names without a result of their own. What a model hop finder chooses among.
    pub fn candidates(
        &self,
        question: &str,
        shape: QuestionShape,
        hits: &[Hit],
        max: usize,
    ) -> Vec<String> {
        let names = question_names(question);
        let top = &hits[..hits.len().min(self.config.hits_read * 2)];
        let found = match shape {
            QuestionShape::Simple => Vec::new(),
            QuestionShape::Comparison => names
                .iter()
                .filter(|name| !top.iter().any(|h| is_about(h, name)))
                .cloned()
                .collect(),
            QuestionShape::Bridge => self.bridge_entities(question, &names, hits),
        };
        found.into_iter().take(max).collect()
    }

    /// Does one of the top results hold every word of the question? Then it answers without a hop.
    pub fn one_result_answers(&self, question: &str, hits: &[Hit]) -> bool {
        let asked = term_set(question);
        hits.iter()
            .take(self.config.hits_read)
            .any(|h| asked.is_subset(&term_set(&format!("{} {}", h.title, h.text))))
    }

    /// `hits` with the pages of the bridge names their top results give moved up to just after
    /// the first `lead`, and where the pages of those names now are (those already within the
    /// lead stay where they were): a page the question's search found low down is the one its
    /// best result points to, so it belongs beside it. At most [`BridgeConfig::hits_read`] names
    /// are followed, and only the best-ranked (a name merely mentioned is rarely a page's
    /// subject).
    pub fn linked_first(
        &self,
        question: &str,
        hits: Vec<Hit>,
        lead: usize,
    ) -> (Vec<Hit>, Vec<usize>) {
        let ranked = self.bridge_entities(question, &question_names(question), &hits);
        self.linked_first_among(ranked, hits, lead)
    }

    /// [`BridgeFinder::linked_first`] with the bridge names already ranked, best first.
    pub fn linked_first_among(
        &self,
        ranked: Vec<String>,
        hits: Vec<Hit>,
        lead: usize,
    ) -> (Vec<Hit>, Vec<usize>) {
        let lead = lead.min(hits.len());
        let mut in_lead: Vec<usize> = Vec::new();
        let mut promoted: Vec<usize> = Vec::new();
        for name in ranked.iter().take(self.config.hits_read) {
            let unclaimed = |i: &usize| !promoted.contains(i) && !in_lead.contains(i);
            if let Some(at) = (0..lead)
                .filter(unclaimed)
                .find(|&i| is_about(&hits[i], name))
            {
                in_lead.push(at);
            } else if let Some(at) = (lead..hits.len())
                .filter(unclaimed)
                .find(|&i| is_about(&hits[i], name))
            {
                promoted.push(at);
            }
        }
        let reached: Vec<usize> = in_lead
            .iter()
            .copied()
            .chain(lead..lead + promoted.len())
            .collect();
        if promoted.is_empty() {
            return (hits, reached);
        }
        let mut slots: Vec<Option<Hit>> = hits.into_iter().map(Some).collect();
        let mut ordered: Vec<Hit> = slots[..lead].iter_mut().filter_map(Option::take).collect();
        ordered.extend(promoted.iter().filter_map(|&i| slots[i].take()));
        ordered.extend(slots.into_iter().flatten());
        (ordered, reached)
    }

    /// Names in the top results that the question does not contain, best first.
    pub fn bridge_entities(
        &self,
        question: &str,
        question_names: &[String],
        hits: &[Hit],
    ) -> Vec<String> {
        self.bridge_candidates(question, question_names, hits)
            .into_iter()
            .map(|candidate| candidate.name)
            .collect()
    }

    /// Names in the top results that the question does not contain, best first, each with the
    /// sentence it was first found in.
    ///
    /// A result about a name the question holds is where the bridge is written, so when the top
    /// results include one, only such results are read. A name scores for the question's words
    /// it holds ("university" in "Moscow State University"), for the question's words standing
    /// next to it, for being quoted (titles of works are), for its length, and for having a page
    /// among `hits`; earlier results break ties.
    pub(crate) fn bridge_candidates(
        &self,
        question: &str,
        question_names: &[String],
        hits: &[Hit],
    ) -> Vec<BridgeCandidate> {
        let asked = term_set(question);
        let rest = remainder_terms(question, question_names);
        let top = &hits[..hits.len().min(self.config.hits_read)];
        let anchored = |hit: &Hit| question_names.iter().any(|name| is_about(hit, name));
        let any_anchor = top.iter().any(anchored);
        let mut scored: Vec<BridgeCandidate> = Vec::new();
        for (rank, hit) in top
            .iter()
            .enumerate()
            .filter(|(_, hit)| !any_anchor || anchored(hit))
        {
            let rank_weight = 1.0 / (rank as f32 + 1.0);
            for text in [hit.title.as_ref(), hit.text.as_ref()] {
                for mention in mentions(text, &asked) {
                    let terms = term_set(&mention.name);
                    // A name the question already has, or a hit's own subject, leads nowhere new.
                    if terms.is_empty() || terms.is_subset(&asked) || is_about(hit, &mention.name) {
                        continue;
                    }
                    let own = terms.intersection(&rest).count() as f32;
                    let words = mention.name.split_whitespace().count() as f32;
                    let quoted = if mention.quoted { 0.5 } else { 0.0 };
                    let score = 2.0 * own
                        + 0.5 * mention.near as f32
                        + quoted
                        + rank_weight
                        + 0.25 * words.min(3.0);
                    match scored
                        .iter_mut()
                        .find(|c| c.name.eq_ignore_ascii_case(&mention.name))
                    {
                        Some(seen) => seen.score = seen.score.max(score) + 0.1,
                        None => scored.push(BridgeCandidate {
                            name: mention.name,
                            score,
                            context: mention.context,
                        }),
                    }
                }
            }
        }
        // A name with a page among the results is a thing with a document of its own, not a
        // capitalised phrase, and the page is there to be promoted.
        for candidate in &mut scored {
            if hits.iter().any(|h| is_about(h, &candidate.name)) {
                candidate.score += PAGE_FOUND;
            }
        }
        // Stable: equal scores keep their order of appearance.
        scored.sort_by(|a, b| b.score.total_cmp(&a.score));
        scored
    }
}

/// A name a bridge question's results lead to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BridgeCandidate {
    /// The name, as written.
    pub(crate) name: String,
    /// How strongly the rules read it as the bridge.
    pub(crate) score: f32,
    /// The sentence it was first found in: what the results say about it.
    pub(crate) context: String,
}

/// What a bridge name's page among the results adds to its score: as much as being named by the
/// first result.
const PAGE_FOUND: f32 = 1.0;

/// Content terms read on each side of a mention for the question's words.
const NEAR_TERMS: usize = 4;

/// Single words that are dates, not things with a document of their own.
const CALENDAR_WORDS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// A name as a text mentions it.
#[derive(Debug, PartialEq)]
struct Mention {
    name: String,
    /// Distinct question terms among the content terms next to it, its own excluded.
    near: usize,
    /// Written in quotes, as titles of works are.
    quoted: bool,
    /// The sentence it stands in.
    context: String,
}

/// The names `text` mentions: capitalised runs and quoted titles.
///
/// A lone month, weekday or demonym used as an adjective ("American actor") is no name.
fn mentions(text: &str, asked: &HashSet<String>) -> Vec<Mention> {
    // The content terms of the text, in order, each with its token's byte span.
    let terms: Vec<(usize, usize, String)> = tokenize(text)
        .into_iter()
        .filter_map(|t| {
            term_set(t.word)
                .into_iter()
                .next()
                .map(|term| (t.start, t.end, term))
        })
        .collect();
    let near = |start: usize, end: usize, own: &HashSet<String>| -> usize {
        let first_inside = terms.partition_point(|(_, e, _)| *e <= start);
        let first_after = terms.partition_point(|(s, _, _)| *s < end);
        let before = &terms[first_inside.saturating_sub(NEAR_TERMS)..first_inside];
        let after = &terms[first_after..(first_after + NEAR_TERMS).min(terms.len())];
        let window = before.iter().chain(after).map(|(_, _, term)| term);
        window
            .filter(|t| asked.contains(*t) && !own.contains(*t))
            .collect::<HashSet<_>>()
            .len()
    };
    let sentences = sentence_bounds(text);
    let mut found = Vec::new();
    let mut push = |start: usize, end: usize, quoted: bool| {
        let name = text[start..end].trim();
        if name.is_empty() {
            return;
        }
        let own = term_set(name);
        found.push(Mention {
            name: name.to_owned(),
            near: near(start, end, &own),
            quoted,
            context: sentence_around(text, &sentences, start, end).to_owned(),
        });
    };
    for (start, end) in name_runs(text, LoneOpener::Name) {
        let run = &text[start..end];
        let single = !run.trim().contains(char::is_whitespace);
        let lower = run.trim().to_lowercase();
        let followed_by_lowercase = text[end..]
            .strip_prefix(' ')
            .is_some_and(|r| r.starts_with(char::is_lowercase));
        let demonym = ["an", "ese", "ish"]
            .iter()
            .any(|suffix| lower.ends_with(suffix))
            && followed_by_lowercase;
        if single && (CALENDAR_WORDS.contains(&lower.as_str()) || demonym) {
            continue;
        }
        push(start, end, false);
    }
    for (start, end) in quoted_titles(text) {
        push(start, end, true);
    }
    found
}

/// The sentence of `text` that holds the span `start..end` (through the one it ends in, should it
/// cross a sentence's end), as `sentences` cuts `text` into byte ranges.
fn sentence_around<'t>(
    text: &'t str,
    sentences: &[std::ops::Range<usize>],
    start: usize,
    end: usize,
) -> &'t str {
    let from = sentences
        .iter()
        .find(|s| s.end > start)
        .map_or(0, |s| s.start);
    let to = sentences
        .iter()
        .find(|s| s.end >= end)
        .map_or(text.len(), |s| s.end);
    text[from.min(start)..to.max(end)].trim()
}

/// Words that set named things side by side ("which is older", "both", "in common"). Narrower
/// than the comparison words `ferret_core::text::question` reads a comparison's direction from,
/// on purpose: those also hold "before", "after", "last", "largest", …, and reading a listed
/// question with any of them as a comparison found fewer supporting pages in measurement.
const COMPARATIVE_WORDS: &[&str] = &[
    "both", "same", "common", "either", "between", "more", "less", "most", "least", "first",
    "older", "oldest", "younger", "youngest", "earlier", "later", "larger", "smaller", "bigger",
    "higher", "lower", "longer", "shorter", "taller", "further", "farther",
];

/// The names the question holds, as written, without duplicates.
pub(crate) fn question_names(question: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (start, end) in name_runs(question, LoneOpener::Name) {
        let name = question[start..end].trim().to_owned();
        if !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            names.push(name);
        }
    }
    names
}

/// The question's content terms outside its names: what is asked about them.
fn remainder_terms(question: &str, names: &[String]) -> HashSet<String> {
    let named: HashSet<String> = names.iter().flat_map(|n| term_set(n)).collect();
    term_set(question)
        .into_iter()
        .filter(|t| !named.contains(t))
        .collect()
}

/// Is `hit` a document about `name`: does one of its title and the name hold the other, and is
/// that at least half of it ("Harry S. Truman" is about "President Harry S. Truman")? A
/// parenthesis in the title is left out.
fn is_about(hit: &Hit, name: &str) -> bool {
    // "Styx (band)": the parenthesis tells pages of one name apart; the name is before it.
    let title = hit
        .title
        .split_once(" (")
        .map_or(hit.title.as_ref(), |(name, _)| name);
    let title = term_set(title);
    let name = term_set(name);
    let holds = |big: &HashSet<String>, small: &HashSet<String>| {
        small.is_subset(big) && small.len() * 2 >= big.len()
    };
    // A one-word title inside a longer name is a place or a kind it names ("Tanzania" in
    // "Fly540 Tanzania"), not the thing.
    !name.is_empty()
        && !title.is_empty()
        && (holds(&title, &name) || (title.len() >= 2 && holds(&name, &title)))
}

#[cfg(test)]
mod tests;
