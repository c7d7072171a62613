//! Multi-hop questions without a model. A bridge question names one thing and asks about another
//! that only the first one's document names ("the university where Tokarev was a professor"):
//! the next query is a name found in the top results that the question does not contain. A
//! comparison names both things: the next query is the one whose document the results lack.

use std::collections::HashSet;

use ferret_core::text::term_set;
use ferret_core::Hit;

use crate::util::name_runs;
use crate::{Analysis, Complexity, QueryType};

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
    /// Did the hop's search find the document it went for: is its best result about the name?
    /// A hop that did not (the name was an adjective, or the collection has no page on it)
    /// adds nothing worth ranking.
    pub fn found_in(&self, hits: &[Hit]) -> bool {
        hits.first().is_some_and(|hit| is_about(hit, &self.entity))
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
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self { min_bridge_words: 8, hits_read: 3 }
    }
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
        let comparative = ferret_core::text::words(question).any(|w| COMPARATIVE_WORDS.contains(&w.as_str()));
        if names.len() >= 2 && (analysis.query_type == QueryType::Comparison || comparative) {
            QuestionShape::Comparison
        } else if !names.is_empty()
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
    pub fn next_hop(
        &self,
        question: &str,
        shape: QuestionShape,
        hits: &[Hit],
        searched: &HashSet<String>,
        normalize: impl Fn(&str) -> String,
    ) -> Option<Hop> {
        let names = question_names(question);
        let top = &hits[..hits.len().min(self.config.hits_read * 2)];
        let fresh = |entity: &String| !searched.contains(&normalize(entity));
        // Each name the question holds should have a result about it.
        let missing = names.iter().filter(|name| !top.iter().any(|h| is_about(h, name)));
        let entity = match shape {
            QuestionShape::Simple => return None,
            QuestionShape::Comparison => missing.into_iter().find(|name| fresh(name))?.clone(),
            // The name the results lead to comes before a name the question mentions in passing.
            QuestionShape::Bridge => {
                // One document that holds every word of the question answers it without a hop.
                let asked = term_set(question);
                if top.iter().take(self.config.hits_read).any(|h| asked.is_subset(&term_set(&format!("{} {}", h.title, h.text)))) {
                    return None;
                }
                let ranked = self.bridge_entities(question, &names, hits);
                // Covered: the best bridge already has a result of its own.
                if ranked.first().is_some_and(|best| top.iter().any(|h| is_about(h, best))) {
                    return None;
                }
                ranked.into_iter().chain(missing.cloned()).find(|name| fresh(name))?
            }
        };
        // The name alone: the hop fetches its document, and the question's other words would
        // pull back the documents the first search already found.
        Some(Hop { query: entity.clone(), entity })
    }

    /// Names in the top results that the question does not contain, best first: a name that
    /// holds the question's remaining words ("university" in "Moscow State University"), or
    /// stands in a sentence that does, ranks first; earlier results break ties.
    pub fn bridge_entities(&self, question: &str, question_names: &[String], hits: &[Hit]) -> Vec<String> {
        let asked = term_set(question);
        let rest = remainder_terms(question, question_names);
        let mut scored: Vec<(String, f32)> = Vec::new();
        for (rank, hit) in hits.iter().take(self.config.hits_read).enumerate() {
            let rank_weight = 1.0 / (rank as f32 + 1.0);
            let sentences = std::iter::once(hit.title.as_str()).chain(hit.text.split_inclusive(['.', '!', '?', ';']));
            for sentence in sentences {
                let sentence_terms = term_set(sentence);
                let context = sentence_terms.intersection(&rest).count() as f32;
                for (start, end) in name_runs(sentence, true) {
                    let name = sentence[start..end].trim();
                    let terms = term_set(name);
                    // A name the question already has, or a hit's own subject, leads nowhere new.
                    if terms.is_empty() || terms.is_subset(&asked) || is_about(hit, name) {
                        continue;
                    }
                    let own = terms.intersection(&rest).count() as f32;
                    let words = name.split_whitespace().count() as f32;
                    let score = 2.0 * own + 0.5 * context + rank_weight + 0.25 * words.min(3.0);
                    match scored.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                        Some((_, best)) => *best = best.max(score) + 0.1,
                        None => scored.push((name.to_owned(), score)),
                    }
                }
            }
        }
        // Stable: equal scores keep their order of appearance.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.into_iter().map(|(name, _)| name).collect()
    }
}

/// Words that set named things side by side ("which is older", "both", "in common").
const COMPARATIVE_WORDS: &[&str] = &[
    "both", "same", "common", "either", "between", "more", "less", "most", "least", "first", "older", "oldest",
    "younger", "youngest", "earlier", "later", "larger", "smaller", "bigger", "higher", "lower", "longer", "shorter",
    "taller", "further", "farther",
];

/// The names the question holds, as written, without duplicates.
fn question_names(question: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (start, end) in name_runs(question, false) {
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
    term_set(question).into_iter().filter(|t| !named.contains(t)).collect()
}

/// Is `hit` a document about `name`: its title is the name, or the name is most of the title?
fn is_about(hit: &Hit, name: &str) -> bool {
    let title = term_set(&hit.title);
    let name = term_set(name);
    !name.is_empty() && !title.is_empty() && name.is_subset(&title) && name.len() * 2 >= title.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeuristicAnalyzer;

    fn hit(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "index")
    }

    fn finder() -> BridgeFinder {
        BridgeFinder::default()
    }

    fn shape(question: &str) -> QuestionShape {
        finder().shape(question, &HeuristicAnalyzer.analysis(question))
    }

    #[test]
    fn shapes() {
        assert_eq!(shape("What is BM25?"), QuestionShape::Simple);
        assert_eq!(shape("Who founded Apple?"), QuestionShape::Simple);
        assert_eq!(
            shape("In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?"),
            QuestionShape::Bridge
        );
        assert_eq!(shape("Were Scott Derrickson and Ed Wood of the same nationality?"), QuestionShape::Comparison);
        assert_eq!(shape("how do I configure retries for the http client in this library"), QuestionShape::Simple);
        assert_eq!(shape("How often must API keys be rotated, and what do I do if one leaks?"), QuestionShape::Simple);
        assert_eq!(shape("Between Greyia and Calibanus, which genus contains more species?"), QuestionShape::Comparison);
    }

    #[test]
    fn a_bridge_question_hops_to_the_name_its_first_document_gives() {
        let question = "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?";
        let hits = [
            hit(
                "1",
                "Sergei Aleksandrovich Tokarev",
                "Sergei Aleksandrovich Tokarev was a Russian ethnographer. He was a professor at Moscow State University.",
            ),
            hit("2", "Tokarev pistol", "The TT pistol was designed by Fedor Tokarev in the Soviet Union."),
        ];
        let hop = finder().next_hop(question, QuestionShape::Bridge, &hits, &HashSet::new(), |q| q.to_lowercase()).unwrap();
        assert_eq!(hop.entity, "Moscow State University");
        assert_eq!(hop.query, "Moscow State University");
    }

    #[test]
    fn a_bridge_whose_document_is_already_found_needs_no_hop() {
        let question = "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?";
        let hits = [
            hit("1", "Sergei Aleksandrovich Tokarev", "He was a professor at Moscow State University."),
            hit("2", "Moscow State University", "Moscow State University was founded in 1755."),
        ];
        assert_eq!(finder().next_hop(question, QuestionShape::Bridge, &hits, &HashSet::new(), |q| q.to_lowercase()), None);
    }

    #[test]
    fn a_document_holding_the_whole_question_ends_the_hops() {
        let question = "Who were the members of the Final Five gymnastics team?";
        let hits = [hit("1", "Final Five (gymnastics)", "The five members of the Final Five gymnastics team were Simone Biles and Aly Raisman.")];
        assert_eq!(finder().next_hop(question, QuestionShape::Bridge, &hits, &HashSet::new(), |q| q.to_lowercase()), None);
    }

    #[test]
    fn a_comparison_searches_the_name_without_a_document() {
        let question = "Were Scott Derrickson and Ed Wood of the same nationality?";
        let hits = [hit("1", "Scott Derrickson", "Scott Derrickson is an American director."), hit("2", "Doctor Strange", "A film.")];
        let hop = finder().next_hop(question, QuestionShape::Comparison, &hits, &HashSet::new(), |q| q.to_lowercase()).unwrap();
        assert_eq!(hop.entity, "Ed Wood");
        assert_eq!(hop.query, "Ed Wood");
        let both = [hits[0].clone(), hit("3", "Ed Wood", "Edward Davis Wood Jr. was an American filmmaker.")];
        assert_eq!(finder().next_hop(question, QuestionShape::Comparison, &both, &HashSet::new(), |q| q.to_lowercase()), None);
    }

    #[test]
    fn a_query_already_searched_is_not_proposed_again() {
        let question = "Were Scott Derrickson and Ed Wood of the same nationality?";
        let hits = [hit("2", "Doctor Strange", "A film.")];
        let searched: HashSet<String> = ["scott derrickson".to_owned()].into();
        let hop = finder().next_hop(question, QuestionShape::Comparison, &hits, &searched, |q| q.to_lowercase()).unwrap();
        assert_eq!(hop.entity, "Ed Wood", "the first name was searched already");
    }
}
