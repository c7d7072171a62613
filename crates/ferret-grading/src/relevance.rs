//! The heuristic relevance of a hit to a question; the formula is on [`heuristic_relevance`].

use rustc_hash::FxHashSet as HashSet;

use ferret_core::{text, Hit};
use serde::{Deserialize, Serialize};

/// Weight of term coverage in the heuristic relevance.
pub const COVERAGE_WEIGHT: f32 = 0.7;
/// Weight of adjacent-pair (phrase) matches in the heuristic relevance.
pub const PHRASE_WEIGHT: f32 = 0.2;
/// Weight of the rank-normalised backend score in the heuristic relevance.
pub const SCORE_WEIGHT: f32 = 0.1;

/// One grader's judgement of one hit, before thresholds are applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// Relevance in `0..=1` (values outside, and NaN, are sanitised when grades are assembled).
    pub relevance: f32,
    /// Why, in a few words.
    pub reason: String,
}

/// The question's terms, as the heuristics need them.
pub(crate) struct QuestionTerms {
    /// Distinct stemmed content terms, in order of first appearance.
    pub ordered: Vec<String>,
    pub set: HashSet<String>,
    pub pairs: HashSet<(String, String)>,
}

impl QuestionTerms {
    pub fn new(question: &str) -> Self {
        let terms = text::content_terms(question);
        let pairs = adjacent_pairs(&terms);
        let mut set = HashSet::default();
        let ordered = terms
            .into_iter()
            .filter(|t| set.insert(t.clone()))
            .collect();
        Self {
            ordered,
            set,
            pairs,
        }
    }
}

/// A hit's terms, as the heuristics need them.
pub(crate) struct HitTerms {
    pub set: HashSet<String>,
    pub pairs: HashSet<(String, String)>,
}

impl HitTerms {
    pub fn new(hit: &Hit) -> Self {
        // Title and text are separate fields; the newline keeps a pair from spanning them.
        let terms = text::content_terms(&format!("{}\n{}", hit.title, hit.text));
        let pairs = adjacent_pairs(&terms);
        Self {
            set: terms.into_iter().collect(),
            pairs,
        }
    }

    /// The hit's terms and adjacent pairs that are also the question's: all that judging the
    /// hit against `question` reads, without building sets of every word the hit has.
    pub fn shared_with(hit: &Hit, question: &QuestionTerms) -> Self {
        text::with_content_terms(&format!("{}\n{}", hit.title, hit.text), |terms| {
            let pairs = terms
                .windows(2)
                .filter(|w| {
                    w[0] != w[1] && question.set.contains(&w[0]) && question.set.contains(&w[1])
                })
                .map(|w| ordered_pair(&w[0], &w[1]))
                .filter(|pair| question.pairs.contains(pair))
                .collect();
            Self {
                set: terms
                    .iter()
                    .filter(|term| question.set.contains(*term))
                    .cloned()
                    .collect(),
                pairs,
            }
        })
    }
}

fn ordered_pair(a: &str, b: &str) -> (String, String) {
    if a < b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

fn adjacent_pairs(terms: &[String]) -> HashSet<(String, String)> {
    terms
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| ordered_pair(&w[0], &w[1]))
        .collect()
}

/// Backend scores min-max normalised within the list; see the module docs for the edge cases.
pub(crate) fn rank_scores(hits: &[Hit]) -> Vec<f32> {
    let finite = hits
        .iter()
        .map(|h| f64::from(h.score))
        .filter(|s| s.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    hits.iter()
        .map(|h| {
            let s = f64::from(h.score);
            if s == f64::INFINITY {
                1.0
            } else if !s.is_finite() || hi <= lo {
                0.0
            } else {
                // f64 so that a spread of two huge f32 values cannot overflow.
                ((s - lo) / (hi - lo)).clamp(0.0, 1.0) as f32
            }
        })
        .collect()
}

/// Clamp to `0..=1`, NaN to 0.
pub(crate) fn sanitize(relevance: f32) -> f32 {
    if relevance.is_nan() {
        0.0
    } else {
        relevance.clamp(0.0, 1.0)
    }
}

/// The heuristic relevance of each hit to `question`, in the order of `hits`.
///
/// ```text
/// relevance = COVERAGE_WEIGHT * coverage + PHRASE_WEIGHT * phrase + SCORE_WEIGHT * rank
/// ```
///
/// - `coverage`: share of the question's distinct content terms (stemmed, stop words removed,
///   [`ferret_core::text`]) found anywhere in the hit's title and text.
/// - `phrase`: share of the question's adjacent term pairs (bigrams, order ignored) that are also
///   adjacent in the hit; equal to `coverage` when the question has fewer than two terms, so short
///   questions are not penalised for having no pairs.
/// - `rank`: the hit's backend score min-max normalised within the list (best 1, worst 0; 0 for all
///   when the scores do not differ; `+inf` counts as best, NaN and `-inf` as worst). Backends score
///   on different scales (unbounded BM25, tiny RRF values), so only a hit's place between the
///   best and the worst score of its own list counts, and with a small weight: under the default
///   thresholds the score alone never makes a hit kept.
///
/// The result is clamped to `0..=1` and is never NaN.
pub fn heuristic_relevance(question: &str, hits: &[Hit]) -> Vec<Judgement> {
    let q = QuestionTerms::new(question);
    let ranks = rank_scores(hits);
    hits.iter()
        .zip(ranks)
        .map(|(hit, rank)| judge(&q, &HitTerms::shared_with(hit, &q), rank))
        .collect()
}

fn judge(q: &QuestionTerms, hit: &HitTerms, rank: f32) -> Judgement {
    if q.ordered.is_empty() {
        return Judgement {
            relevance: 0.0,
            reason: "the question has no content terms".into(),
        };
    }
    let coverage = text::coverage(&q.set, &hit.set);
    let phrase = if q.pairs.is_empty() {
        coverage
    } else {
        q.pairs.iter().filter(|p| hit.pairs.contains(*p)).count() as f32 / q.pairs.len() as f32
    };
    let relevance =
        sanitize(COVERAGE_WEIGHT * coverage + PHRASE_WEIGHT * phrase + SCORE_WEIGHT * rank);

    let missing: Vec<&str> = q
        .ordered
        .iter()
        .filter(|t| !hit.set.contains(*t))
        .map(String::as_str)
        .collect();
    let found = q.ordered.len() - missing.len();
    let mut reason = format!("{found}/{} question terms", q.ordered.len());
    if !missing.is_empty() {
        reason.push_str(&format!(" (missing: {})", missing.join(", ")));
    }
    if !q.pairs.is_empty() {
        let pairs = q.pairs.iter().filter(|p| hit.pairs.contains(*p)).count();
        reason.push_str(&format!(", {pairs}/{} phrases", q.pairs.len()));
    }
    reason.push_str(&format!(", score rank {rank:.2}"));
    Judgement { relevance, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, title: &str, text: &str, score: f32) -> Hit {
        Hit::new(id, title, text, score, "test")
    }

    #[test]
    fn a_hit_judged_on_the_terms_it_shares_with_the_question_is_judged_as_on_all_its_terms() {
        let questions = [
            "Which river runs through the capital of Kelantan?",
            "batik Kelantan batik hand-drawn",
            "the of and",
        ];
        let hits = [
            hit(
                "a",
                "Kelantan batik",
                "Batik from Kelantan is hand-drawn; hand-drawn batik sells.",
                1.0,
            ),
            hit(
                "b",
                "Kota Bharu",
                "The Kelantan River runs through Kota Bharu, the capital.",
                0.5,
            ),
            hit("c", "", "", 0.1),
        ];
        for question in questions {
            let q = QuestionTerms::new(question);
            for h in &hits {
                let full = judge(&q, &HitTerms::new(h), 0.5);
                let shared = judge(&q, &HitTerms::shared_with(h, &q), 0.5);
                assert_eq!(
                    (full.relevance, &full.reason),
                    (shared.relevance, &shared.reason),
                    "{question} / {}",
                    h.id.0
                );
            }
        }
    }

    #[test]
    fn full_match_at_the_top_scores_one_and_no_overlap_scores_at_most_the_rank_weight() {
        let hits = [
            hit(
                "a",
                "Kelantan batik",
                "Batik from Kelantan is hand-drawn.",
                12.0,
            ),
            hit("b", "Weather", "Rain is expected tomorrow.", 30.0),
        ];
        let j = heuristic_relevance("Kelantan batik", &hits);
        assert!(
            (j[0].relevance - (COVERAGE_WEIGHT + PHRASE_WEIGHT)).abs() < 1e-6,
            "{j:?}"
        );
        assert!((j[1].relevance - SCORE_WEIGHT).abs() < 1e-6, "{j:?}");
        assert!(
            j[1].reason.contains("missing: kelantan, batik"),
            "{}",
            j[1].reason
        );
    }

    #[test]
    fn scores_on_any_scale_give_the_same_relevance() {
        let texts = [
            ("a", "solar panel efficiency tips"),
            ("b", "solar power"),
            ("c", "wind farms"),
        ];
        let bm25: Vec<Hit> = texts
            .iter()
            .zip([18.0, 10.0, 2.0])
            .map(|((id, t), s)| hit(id, "", t, s))
            .collect();
        let rrf: Vec<Hit> = texts
            .iter()
            .zip([0.03, 0.02, 0.01])
            .map(|((id, t), s)| hit(id, "", t, s))
            .collect();
        let a: Vec<f32> = heuristic_relevance("solar panel efficiency", &bm25)
            .iter()
            .map(|j| j.relevance)
            .collect();
        let b: Vec<f32> = heuristic_relevance("solar panel efficiency", &rrf)
            .iter()
            .map(|j| j.relevance)
            .collect();
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-4, "{a:?} vs {b:?}");
        }
        assert!(a[0] > a[1] && a[1] > a[2]);
    }

    #[test]
    fn adjacent_question_terms_count_as_a_phrase_in_either_order() {
        let q = "Kelantan batik motifs";
        let together = hit("a", "", "motifs of batik from Kelantan", 1.0);
        let apart = hit(
            "b",
            "",
            "Kelantan weavers and batik painters use many motifs",
            1.0,
        );
        let j = heuristic_relevance(q, &[together, apart]);
        assert!(j[0].relevance > j[1].relevance, "{j:?}");
    }

    #[test]
    fn rank_handles_non_finite_and_equal_scores() {
        let hits = [
            hit("a", "", "", f32::NAN),
            hit("b", "", "", f32::INFINITY),
            hit("c", "", "", 1.0),
            hit("d", "", "", 3.0),
        ];
        assert_eq!(rank_scores(&hits), [0.0, 1.0, 0.0, 1.0]);
        assert_eq!(
            rank_scores(&[hit("a", "", "", 2.0), hit("b", "", "", 2.0)]),
            [0.0, 0.0]
        );
        let extreme = [
            hit("a", "", "", f32::MAX),
            hit("b", "", "", f32::MIN),
            hit("c", "", "", 0.0),
        ];
        assert_eq!(rank_scores(&extreme), [1.0, 0.0, 0.5]);
    }
}
