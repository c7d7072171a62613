//! Bridge names ranked by what the results say about them. The rules find the names a bridge
//! question's top results lead to and score their shape; an embedder then reads the sentence each
//! name stands in against what the question asks beyond its own names ("the university where …
//! was a professor"), so the name the results tie to the question's unanswered part comes first,
//! whatever its shape.

use std::collections::HashSet;
use std::sync::Arc;

use ferret_core::{cosine, EmbedError, Embedder, Hit, Implementation, RetryClass, StageOutput};

use crate::bridge::{question_names, BridgeCandidate};
use crate::{BridgeFinder, Hop, HopFinder, HopRequest, QuestionShape};
use ferret_core::text::names::{name_runs, LoneOpener};

/// The bridge hop finder that ranks the rules' names by meaning with an embedder (the one the
/// index's vectors came from), falling back to the rules' order when embedding fails.
#[derive(Clone)]
pub struct MeaningHopFinder {
    rules: BridgeFinder,
    embedder: Arc<dyn Embedder>,
}

impl std::fmt::Debug for MeaningHopFinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeaningHopFinder")
            .field("rules", &self.rules)
            .field("embedder", &self.embedder.name())
            .finish()
    }
}

impl MeaningHopFinder {
    /// The rules' best names that are read for meaning; the rest keep the rules' order after them.
    pub const CANDIDATES: usize = 8;

    /// Rank `rules`' names with `embedder`.
    pub fn new(rules: BridgeFinder, embedder: Arc<dyn Embedder>) -> Self {
        Self { rules, embedder }
    }

    /// The names a bridge question's `hits` lead to, best first: the rules' best
    /// [`Self::CANDIDATES`] ordered by the rank their shape gets from the rules plus the rank
    /// their sentence gets for meaning (ties keep the rules' order), then the rest.
    pub async fn ranked(&self, question: &str, hits: &[Hit]) -> Result<Vec<String>, EmbedError> {
        let names = question_names(question);
        let mut candidates = self.rules.bridge_candidates(question, &names, hits);
        if candidates.len() < 2 {
            return Ok(candidates.into_iter().map(|c| c.name).collect());
        }
        let rest = candidates.split_off(candidates.len().min(Self::CANDIDATES));
        let similarity = self.similarity(question, &candidates).await?;
        let ranked = by_rank_sum(candidates, &similarity);
        Ok(ranked.into_iter().chain(rest).map(|c| c.name).collect())
    }

    /// Cosine similarity of each candidate's sentence to what `question` asks beyond its names.
    async fn similarity(
        &self,
        question: &str,
        candidates: &[BridgeCandidate],
    ) -> Result<Vec<f32>, EmbedError> {
        let mut texts = vec![unanswered_part(question)];
        texts.extend(candidates.iter().map(|c| c.context.clone()));
        let vectors = self.embedder.embed(&texts).await?;
        let (asked, contexts) = vectors.split_first().ok_or_else(|| EmbedError {
            message: "the embedder returned no vectors".into(),
            retry: RetryClass::Permanent,
        })?;
        Ok(contexts.iter().map(|v| cosine(asked, v)).collect())
    }
}

/// `candidates` (in the rules' order) reordered by the sum of their rank there and their rank by
/// `similarity`; a stable sort, so ties keep the rules' order.
fn by_rank_sum(candidates: Vec<BridgeCandidate>, similarity: &[f32]) -> Vec<BridgeCandidate> {
    let mut by_meaning: Vec<usize> = (0..candidates.len()).collect();
    by_meaning.sort_by(|&a, &b| similarity[b].total_cmp(&similarity[a]));
    let mut meaning_rank = vec![0; candidates.len()];
    for (rank, &i) in by_meaning.iter().enumerate() {
        meaning_rank[i] = rank;
    }
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&i| i + meaning_rank[i]);
    let mut slots: Vec<Option<BridgeCandidate>> = candidates.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// `question` without the names it holds: what it asks about them.
fn unanswered_part(question: &str) -> String {
    let mut rest = String::new();
    let mut at = 0;
    for (start, end) in name_runs(question, LoneOpener::Name) {
        rest.push_str(&question[at..start]);
        at = end;
    }
    rest.push_str(&question[at..]);
    let rest = ferret_core::text::one_line(&rest);
    if rest.is_empty() {
        question.to_owned()
    } else {
        rest
    }
}

#[async_trait::async_trait]
impl HopFinder for MeaningHopFinder {
    async fn next_hop(&self, request: HopRequest<'_>) -> StageOutput<Option<Hop>> {
        if request.shape != QuestionShape::Bridge {
            return self.rules.next_hop(request).await;
        }
        let searched: HashSet<String> = request
            .searched
            .iter()
            .map(|q| (request.fingerprint)(q))
            .collect();
        let (ranked, why) = match self.ranked(request.question, request.hits).await {
            Ok(ranked) => (
                ranked,
                format!("names ranked by meaning with {}", self.embedder.name()),
            ),
            Err(error) => (
                self.rules.bridge_entities(
                    request.question,
                    &question_names(request.question),
                    request.hits,
                ),
                format!("names ranked by the rules: {error}"),
            ),
        };
        let hop = self.rules.hop_among(
            request.question,
            request.shape,
            request.hits,
            ranked,
            &searched,
            request.fingerprint,
        );
        StageOutput::new(hop, Implementation::Heuristic { why })
    }

    async fn rank_bridges(&self, question: &str, hits: &[Hit]) -> Option<Vec<String>> {
        self.ranked(question, hits).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors of word counts over a small fixed vocabulary: texts that share words are close.
    struct WordCounts;

    const VOCABULARY: &[&str] = &["professor", "university", "born", "city", "founded", "film"];

    #[async_trait::async_trait]
    impl Embedder for WordCounts {
        fn name(&self) -> &str {
            "word-counts"
        }
        fn dimension(&self) -> usize {
            VOCABULARY.len()
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|text| {
                    let words: Vec<String> = ferret_core::text::words(text).collect();
                    VOCABULARY
                        .iter()
                        .map(|v| words.iter().filter(|w| w == v).count() as f32)
                        .collect()
                })
                .collect())
        }
    }

    struct Broken;

    #[async_trait::async_trait]
    impl Embedder for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn dimension(&self) -> usize {
            4
        }
        async fn embed(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Err(EmbedError {
                message: "model file missing".into(),
                retry: RetryClass::Permanent,
            })
        }
    }

    fn candidate(name: &str) -> BridgeCandidate {
        BridgeCandidate {
            name: name.into(),
            score: 0.0,
            context: String::new(),
        }
    }

    fn names(candidates: &[BridgeCandidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn meaning_reorders_only_what_it_disagrees_with_strongly() {
        let rules = ["A", "B", "C", "D"].map(candidate).to_vec();
        // Meaning puts C first and A last: A's sum is 0 + 3, C's 2 + 0, B's 1 + 1.
        let ranked = by_rank_sum(rules.clone(), &[0.1, 0.8, 0.9, 0.2]);
        assert_eq!(names(&ranked), ["B", "C", "A", "D"]);
        // Agreement changes nothing; ties keep the rules' order.
        assert_eq!(
            names(&by_rank_sum(rules.clone(), &[0.9, 0.8, 0.7, 0.6])),
            ["A", "B", "C", "D"]
        );
        assert_eq!(names(&by_rank_sum(rules, &[0.5; 4])), ["A", "B", "C", "D"]);
    }

    #[test]
    fn the_unanswered_part_is_the_question_without_its_names() {
        assert_eq!(
            unanswered_part(
                "In what year was the university where Sergei Tokarev was a professor founded?"
            ),
            "In what year was the university where was a professor founded?"
        );
        assert_eq!(unanswered_part("Sergei Tokarev"), "Sergei Tokarev");
    }

    fn tokarev_hits() -> Vec<Hit> {
        vec![Hit::new(
            "1",
            "Sergei Tokarev",
            "Sergei Tokarev was born in Tula City. He was a professor at Moscow State University.",
            1.0,
            "wiki",
        )]
    }

    const QUESTION: &str =
        "In what year was the university where Sergei Tokarev was a professor founded?";

    #[tokio::test]
    async fn a_bridge_hop_goes_to_the_name_its_sentence_ties_to_the_question() {
        let finder = MeaningHopFinder::new(BridgeFinder::default(), Arc::new(WordCounts));
        let ranked = finder.ranked(QUESTION, &tokarev_hits()).await.unwrap();
        assert_eq!(
            ranked.first().map(String::as_str),
            Some("Moscow State University")
        );
        let hits = tokarev_hits();
        let hop = finder
            .next_hop(HopRequest {
                question: QUESTION,
                shape: QuestionShape::Bridge,
                hits: &hits,
                searched: &[QUESTION.to_owned()],
                fingerprint: |q| q.to_lowercase(),
            })
            .await;
        assert_eq!(hop.value.unwrap().entity, "Moscow State University");
        assert!(
            matches!(&hop.implementation, Implementation::Heuristic { why } if why.contains("meaning with word-counts")),
            "{:?}",
            hop.implementation
        );
    }

    #[tokio::test]
    async fn an_embedder_that_fails_leaves_the_rules_order_and_says_so() {
        let finder = MeaningHopFinder::new(BridgeFinder::default(), Arc::new(Broken));
        let hits = tokarev_hits();
        let request = HopRequest {
            question: QUESTION,
            shape: QuestionShape::Bridge,
            hits: &hits,
            searched: &[],
            fingerprint: |q| q.to_lowercase(),
        };
        let hop = finder.next_hop(request).await;
        let rules = BridgeFinder::default().next_hop(request).await;
        assert_eq!(hop.value, rules.value);
        assert!(
            matches!(&hop.implementation, Implementation::Heuristic { why } if why.contains("model file missing")),
            "{:?}",
            hop.implementation
        );
        assert_eq!(finder.rank_bridges(QUESTION, &hits).await, None);
    }
}
