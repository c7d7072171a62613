use std::collections::HashSet;

use ferret_core::text::{cut, CutMark};
use ferret_core::{text, Hit, ShortAnswer, StageOutput};
use serde::{Deserialize, Serialize};

use crate::factoid::{self, Draft};
use crate::question::{Asked, Question};
use crate::{
    check_citations, split_sentences, strip_markers, Answer, AnswerSynthesizer, Situation,
};
use ferret_core::sentences::{is_closer, is_terminator};

/// Limits of the extractive answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SynthesisConfig {
    /// Sentences in the answer, at most.
    pub max_sentences: usize,
    /// Distinct hits cited, at most.
    pub max_sources: usize,
    /// Characters of one sentence, at most; longer ones are cut at a word and end with `…`.
    pub max_sentence_chars: usize,
    /// Words of an answer to a question that asks for a fact (a name, a date, a number, yes or
    /// no, one of two options), at most: a longer sentence is cut around what answers.
    pub factoid_words: usize,
    /// Words of an answer to any other question (how to, why), at most.
    pub open_words: usize,
}

impl Default for SynthesisConfig {
    fn default() -> Self {
        Self {
            max_sentences: 3,
            max_sources: 3,
            max_sentence_chars: 400,
            // Two sentences, the fact's and the one linking it to the question, each cut around
            // what it offers: answers average under 40 words.
            factoid_words: 45,
            open_words: 120,
        }
    }
}

/// Shortest sentence limit accepted: below it a cut sentence says nothing.
const MIN_SENTENCE_CHARS: usize = 20;
/// Shortest answer limit accepted, in words.
const MIN_WORDS: usize = 10;

/// A [`SynthesisConfig`] that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SynthesisConfigError {
    /// A limit is too small to produce an answer.
    #[error("synthesis.{name} must be at least {min}, got {value}")]
    TooSmall {
        /// The field's name.
        name: &'static str,
        /// The smallest value accepted.
        min: usize,
        /// The value given.
        value: usize,
    },
}

impl SynthesisConfig {
    /// Check the limits: at least one sentence and one source, sentences of at least 20 characters.
    pub fn validate(&self) -> Result<(), SynthesisConfigError> {
        for (name, value, min) in [
            ("max_sentences", self.max_sentences, 1),
            ("max_sources", self.max_sources, 1),
            (
                "max_sentence_chars",
                self.max_sentence_chars,
                MIN_SENTENCE_CHARS,
            ),
            ("factoid_words", self.factoid_words, MIN_WORDS),
            ("open_words", self.open_words, MIN_WORDS),
        ] {
            if value < min {
                return Err(SynthesisConfigError::TooSmall { name, min, value });
            }
        }
        Ok(())
    }
}

/// Hits looked at beyond `max_sources`: the best few are enough, and hits are already ranked.
const CANDIDATE_HITS: usize = 10;
/// Sentences taken from one hit, at most.
const MAX_PER_HIT: usize = 2;
/// Bonus for the hit's title sharing the question's terms: the title is context for its sentences.
const TITLE_WEIGHT: f32 = 0.1;
/// Bonus for the hit's rank: `RANK_WEIGHT / (rank + 1)`.
const RANK_WEIGHT: f32 = 0.1;
/// While picking: bonus per share of question terms not yet covered by the sentences picked.
const NEW_TERMS_WEIGHT: f32 = 0.5;
/// While picking: penalty for a second sentence from the same hit.
const SAME_HIT_PENALTY: f32 = 0.2;

/// Answers by extraction: the sentences of the best hits that share the most terms with the
/// question, each followed by the marker of its hit. No model needed.
///
/// Each sentence of the first `max(10, max_sources)` hits (footnote markers stripped) is scored
/// `coverage(question, sentence) + 0.1 * coverage(question, title) + 0.1 / (rank + 1)`; sentences
/// sharing no term with the question are not candidates. Sentences are then picked greedily, up
/// to `max_sentences`, at most two per hit and `max_sources` hits in all, no sentence twice, each
/// pick preferring sentences that cover question terms the earlier picks did not. The answer
/// lists them by score, best first. When no sentence shares a term with the question, the answer
/// is the first sentence of the first hit that has one.
#[derive(Debug, Clone, Default)]
pub struct ExtractiveSynthesizer {
    config: SynthesisConfig,
}

struct Candidate {
    hit: usize,
    text: String,
    terms: HashSet<String>,
    score: f32,
}

impl ExtractiveSynthesizer {
    /// A synthesizer with these limits. Zero limits give an empty answer; a sentence limit of 0
    /// means sentences are never cut.
    pub fn new(config: SynthesisConfig) -> Self {
        Self { config }
    }

    /// The limits in use.
    pub fn config(&self) -> &SynthesisConfig {
        &self.config
    }

    /// The synthesis itself, without the async wrapper.
    pub fn answer(&self, question: &str, hits: &[Hit]) -> Answer {
        self.answer_as_asked(question, Asked::read(question), hits)
    }

    /// [`answer`](Self::answer) to a question asking for what `asked` says (the analysis's
    /// reading, through [`Situation::asked`]), so the question is not read again.
    fn answer_as_asked(&self, question: &str, asked: Asked, hits: &[Hit]) -> Answer {
        let c = &self.config;
        if hits.is_empty() || c.max_sentences == 0 || c.max_sources == 0 {
            return Answer::default();
        }
        let asked = Question::as_asked(question, asked);
        if asked.is_factoid() {
            return self.factoid(&asked, hits);
        }
        self.open(question, hits)
    }

    /// The answer to a question asking for a fact: the sentence stating it (and the one linking
    /// it to the question), and the fact in a few words.
    fn factoid(&self, asked: &Question, hits: &[Hit]) -> Answer {
        let c = &self.config;
        match factoid::draft(asked, hits, c.max_sources, c.factoid_words) {
            Draft::Stated { sentences, short } => {
                let draft: Vec<String> = sentences
                    .iter()
                    .map(|s| with_marker(&truncate(&s.text, c.max_sentence_chars), s.hit + 1))
                    .collect();
                let mut answer = check_citations(&draft.join(" "), hits);
                answer.short = short.map(|(text, from)| ShortAnswer {
                    text,
                    citations: from
                        .iter()
                        .filter_map(|&h| {
                            answer
                                .citations
                                .iter()
                                .find(|c| c.hit_id == hits[h].id)
                                .cloned()
                        })
                        .collect(),
                });
                answer
            }
            // Nothing to read at all: no answer, and the caller says so.
            Draft::NotStated { closest } if closest.is_empty() => Answer::default(),
            Draft::NotStated { closest } => {
                let named: Vec<String> = closest
                    .iter()
                    .map(|&h| match hits[h].title.trim() {
                        "" => format!("[{}]", h + 1),
                        title => format!("{title} [{}]", h + 1),
                    })
                    .collect();
                let closest = match named.as_slice() {
                    [one] => format!("the closest is {one}"),
                    _ => format!("the closest are {}", named.join(" and ")),
                };
                let text = format!("None of the sources found states this; {closest}.");
                check_citations(&text, hits)
            }
        }
    }

    /// The answer to an open question: the sentences sharing the most of its terms.
    fn open(&self, question: &str, hits: &[Hit]) -> Answer {
        let c = &self.config;
        let q = text::term_set(question);
        let considered = &hits[..hits.len().min(CANDIDATE_HITS.max(c.max_sources))];
        let mut candidates = Vec::new();
        for (rank, hit) in considered.iter().enumerate() {
            let title = text::coverage(&q, &text::term_set(&hit.title));
            for sentence in split_sentences(&strip_markers(&hit.text)) {
                let terms = text::term_set(&sentence);
                let coverage = text::coverage(&q, &terms);
                if coverage > 0.0 {
                    let score = coverage + TITLE_WEIGHT * title + RANK_WEIGHT / (rank as f32 + 1.0);
                    candidates.push(Candidate {
                        hit: rank,
                        text: sentence,
                        terms,
                        score,
                    });
                }
            }
        }

        let mut picked = self.pick(&q, &candidates);
        if picked.is_empty() {
            // Nothing shares a term with the question: lead with the top hit rather than say nothing.
            let first = considered.iter().enumerate().find_map(|(rank, hit)| {
                split_sentences(&strip_markers(&hit.text))
                    .into_iter()
                    .next()
                    .map(|s| (rank, s))
            });
            match first {
                Some((hit, text)) => {
                    candidates = vec![Candidate {
                        hit,
                        text,
                        terms: HashSet::new(),
                        score: 0.0,
                    }];
                    picked = vec![0];
                }
                None => return Answer::default(),
            }
        }
        // Stable: equal scores keep the order they were found in (hit rank, then position).
        picked.sort_by(|&a, &b| candidates[b].score.total_cmp(&candidates[a].score));
        // Within the length limit; the best sentence stays whatever its length.
        let mut words = 0;
        picked.retain(|&i| {
            words += candidates[i].text.split_whitespace().count();
            words <= c.open_words || words == candidates[i].text.split_whitespace().count()
        });

        // Markers are hit positions here; check_citations renumbers them in order of first use.
        let draft: Vec<String> = picked
            .iter()
            .map(|&i| {
                with_marker(
                    &truncate(&candidates[i].text, c.max_sentence_chars),
                    candidates[i].hit + 1,
                )
            })
            .collect();
        check_citations(&draft.join(" "), hits)
    }

    /// Indices of the candidates picked, in the order picked.
    fn pick(&self, q: &HashSet<String>, candidates: &[Candidate]) -> Vec<usize> {
        let c = &self.config;
        let mut picked: Vec<usize> = Vec::new();
        let mut covered: HashSet<&String> = HashSet::new();
        let mut per_hit: Vec<usize> =
            vec![0; candidates.iter().map(|k| k.hit + 1).max().unwrap_or(0)];
        let mut seen: HashSet<String> = HashSet::new();
        let mut sources = 0;
        while picked.len() < c.max_sentences {
            let mut best: Option<(usize, f32)> = None;
            for (i, k) in candidates.iter().enumerate() {
                let from_hit = per_hit[k.hit];
                if from_hit >= MAX_PER_HIT
                    || (from_hit == 0 && sources >= c.max_sources)
                    || seen.contains(&k.text.to_lowercase())
                {
                    continue;
                }
                let new_terms = k
                    .terms
                    .iter()
                    .filter(|t| q.contains(*t) && !covered.contains(t))
                    .count();
                let gain = k.score + NEW_TERMS_WEIGHT * new_terms as f32 / q.len().max(1) as f32
                    - SAME_HIT_PENALTY * from_hit as f32;
                // Strictly greater: ties go to the earlier candidate (better hit, earlier sentence).
                if best.is_none_or(|(_, g)| gain > g) {
                    best = Some((i, gain));
                }
            }
            let Some((i, _)) = best else { break };
            let k = &candidates[i];
            if per_hit[k.hit] == 0 {
                sources += 1;
            }
            per_hit[k.hit] += 1;
            seen.insert(k.text.to_lowercase());
            covered.extend(k.terms.iter().filter(|t| q.contains(*t)));
            picked.push(i);
        }
        picked
    }
}

#[async_trait::async_trait]
impl AnswerSynthesizer for ExtractiveSynthesizer {
    async fn synthesize(&self, question: &str, hits: &[Hit]) -> StageOutput<Answer> {
        StageOutput::heuristic(self.answer(question, hits))
    }

    async fn synthesize_in(
        &self,
        question: &str,
        hits: &[Hit],
        situation: &Situation,
    ) -> StageOutput<Answer> {
        let asked = situation.asked_by(question);
        StageOutput::heuristic(self.answer_as_asked(question, asked, hits))
    }
}

/// Cut `sentence` to `max` characters at a word boundary, ending with `…`; 0 means no limit.
fn truncate(sentence: &str, max: usize) -> String {
    if max == 0 {
        return sentence.to_owned();
    }
    cut(sentence, max, CutMark::Ellipsis)
}

/// `sentence` with ` [n]` before its closing punctuation (terminators, then closing quotes), or
/// followed by `[n].` when it has none.
fn with_marker(sentence: &str, n: usize) -> String {
    let closers = sentence.len() - sentence.trim_end_matches(is_closer).len();
    let body_and_terminators = &sentence[..sentence.len() - closers];
    let body = body_and_terminators.trim_end_matches(is_terminator);
    if body.len() == body_and_terminators.len() {
        format!("{sentence} [{n}].")
    } else {
        format!("{} [{n}]{}", body.trim_end(), &sentence[body.len()..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_goes_before_closing_punctuation() {
        assert_eq!(with_marker("Batik is old.", 1), "Batik is old [1].");
        assert_eq!(with_marker("Is it?!", 2), "Is it [2]?!");
        assert_eq!(with_marker("He said \"stop.\"", 3), "He said \"stop [3].\"");
        assert_eq!(with_marker("A heading", 1), "A heading [1].");
        assert_eq!(with_marker("(see above).", 1), "(see above) [1].");
    }

    #[test]
    fn truncation_cuts_at_a_word_and_respects_char_boundaries() {
        assert_eq!(truncate("short", 400), "short");
        assert_eq!(truncate("one two three four", 12), "one two\u{2026}");
        assert_eq!(truncate("ééééééééééé", 5), "éééé\u{2026}");
        assert_eq!(truncate("one, two three", 9), "one, two\u{2026}");
    }

    #[test]
    fn config_validation() {
        assert!(SynthesisConfig::default().validate().is_ok());
        let zero = SynthesisConfig {
            max_sources: 0,
            ..Default::default()
        };
        assert_eq!(
            zero.validate(),
            Err(SynthesisConfigError::TooSmall {
                name: "max_sources",
                min: 1,
                value: 0
            })
        );
    }
}
