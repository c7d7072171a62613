//! What multi-hop search reads from how results link to each other, which a grader reading one
//! hit against the question cannot see: a hop's page is relevant through the result that named
//! it, a page the top results name is relevant through them, and the top results may cover a
//! question together though none does alone. Each decision is a [`LinkedRelevance`] in the
//! grades.

use ferret_core::{Hit, StageOutput};
use ferret_grading::{Grades, HitGrade, LinkedRelevance, Quality, RelevanceGrader};
use ferret_query_intel::{Hop, QuestionShape};

/// Results of the first search a hop's head is placed after while results accumulate (what is
/// shown then promotes a bridge's reached pages after the first result).
pub(super) const FIRST_SEARCH_LEAD: usize = 2;

/// Top results a multi-hop question's grading may judge as one document when none covers it alone.
const JOINTLY_GRADED: usize = 3;

/// Keep each hit that is the page of one of `hops`, and mark it so, whether or not the grader
/// kept it for its words.
pub(super) fn keep_hop_pages(grades: &mut Grades, hits: &[Hit], hops: &[Hop]) {
    for (grade, hit) in grades.per_hit.iter_mut().zip(hits) {
        if let Some(hop) = hops.iter().find(|hop| hop.is_document(hit)) {
            grade.keep_as(LinkedRelevance::HopPage {
                entity: hop.entity.clone(),
            });
        }
    }
}

/// Keep the pages the best results name, at the positions
/// [`BridgeFinder::linked_first`](ferret_query_intel::BridgeFinder::linked_first) gives: the
/// answer is written from them whether or not they share the question's words.
pub(super) fn keep_named_pages(grades: &mut Grades, reached: &[usize]) {
    for &at in reached {
        if let Some(grade) = grades.per_hit.get_mut(at) {
            grade.keep_as(LinkedRelevance::NamedByTopResult);
        }
    }
}

/// When no hit covers `question` alone, judge the top results as one document; if together they
/// cover it, the results are usable and those hits are kept. Returns the grader's output for
/// the joint document, whose model calls the caller records.
pub(super) async fn grade_jointly(
    grader: &dyn RelevanceGrader,
    question: &str,
    hits: &[Hit],
    grades: &mut Grades,
) -> Option<StageOutput<Grades>> {
    if grades.quality != Quality::Low || hits.len() < 2 {
        return None;
    }
    let top = &hits[..JOINTLY_GRADED.min(hits.len())];
    let mut joint = top[0].clone();
    let mut text = top[0].text.to_string();
    for hit in &top[1..] {
        text.extend(["\n", &hit.title, "\n", &hit.text]);
    }
    joint.text = text.into();
    let graded = grader.grade(question, &[joint]).await;
    if graded.value.quality != Quality::Low {
        grades.quality = Quality::Medium;
        grades.should_retry = false;
        grades.suggestion = None;
        // A grader may grade fewer hits than it was given: keep only what it graded.
        for grade in grades.per_hit.iter_mut().take(top.len()) {
            grade.keep_as(LinkedRelevance::CoversJointly);
        }
    }
    Some(graded)
}

/// The hits a search shows and those the answer is written from: the first `limit` in the order
/// the searches ranked them, and the hits the grades keep, best ranked first, at most `limit`
/// (any of these beyond the first `limit` are listed after them, so every citation resolves).
///
/// A grader judges one hit by the question's words, a weaker signal than the engine's ranking: it
/// chooses what the answer cites, not the order shown. The one reordering is a promotion for a
/// stated reason: for a bridge question, the pages reached through the top results (a hop's own
/// page, a page they name) come right after the first result, since the question asks about
/// what they are pages of and no search of its words could rank them. A comparison's names are
/// in the question, so its first search already targets them: nothing is promoted.
pub(super) fn shown_and_relevant(
    ranked: Vec<Hit>,
    grades: &Grades,
    shape: QuestionShape,
    limit: usize,
) -> (Vec<Hit>, Vec<Hit>) {
    let mut graded: Vec<(Hit, &HitGrade)> = ranked.into_iter().zip(&grades.per_hit).collect();
    let mut beyond = graded.split_off(limit.min(graded.len()));
    if shape == QuestionShape::Bridge && graded.len() > 1 {
        let reached = |g: &HitGrade| {
            matches!(
                g.linked,
                Some(LinkedRelevance::HopPage { .. } | LinkedRelevance::NamedByTopResult)
            )
        };
        let rest = graded.split_off(1);
        let (promoted, others): (Vec<_>, Vec<_>) = rest.into_iter().partition(|(_, g)| reached(g));
        graded.extend(promoted);
        graded.extend(others);
    }
    let relevant: Vec<Hit> = graded
        .iter()
        .chain(&beyond)
        .filter(|(_, g)| g.kept)
        .map(|(h, _)| h.clone())
        .take(limit)
        .collect();
    beyond.retain(|(h, _)| {
        relevant
            .iter()
            .any(|r| r.backend == h.backend && r.id == h.id)
    });
    let shown = graded.into_iter().chain(beyond).map(|(h, _)| h).collect();
    (shown, relevant)
}

#[cfg(test)]
mod tests {
    use ferret_grading::{GradingConfig, HeuristicGrader};
    use ferret_query_intel::Hop;

    use super::*;

    fn page(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "wiki")
    }

    fn graded(question: &str, hits: &[Hit]) -> Grades {
        HeuristicGrader::new(GradingConfig::default()).grade_now(question, hits)
    }

    #[test]
    fn a_hops_page_is_kept_as_a_typed_decision_and_its_reason_stays_the_graders() {
        let question =
            "In what year was the university where Sergei Tokarev was a professor founded?";
        let hits = [
            page("msu", "Moscow State University", "It opened in 1755."),
            page("x", "Kent", "A county."),
        ];
        let mut grades = graded(question, &hits);
        let reason = grades.per_hit[0].reason.clone();
        assert!(
            !grades.per_hit[0].kept,
            "the page shares too few words with the question to be kept on its own"
        );
        keep_hop_pages(
            &mut grades,
            &hits,
            &[Hop::for_query("Moscow State University", question)],
        );
        let entity = match &grades.per_hit[0].linked {
            Some(LinkedRelevance::HopPage { entity }) => entity.clone(),
            other => panic!("expected the hop's page: {other:?}"),
        };
        assert_eq!(entity, "Moscow State University");
        assert!(grades.per_hit[0].kept);
        assert_eq!(
            grades.per_hit[0].reason, reason,
            "the decision is a value, not text appended to the reason"
        );
        assert_eq!(grades.per_hit[1].linked, None);
    }

    #[test]
    fn pages_the_top_results_name_are_kept_where_they_are() {
        let hits: Vec<Hit> = (0..5)
            .map(|i| page(&i.to_string(), "Weather", "Rain is expected."))
            .collect();
        let mut grades = graded("volcano eruption", &hits);
        keep_named_pages(&mut grades, &[1, 2, 3, 9]);
        let linked: Vec<bool> = grades
            .per_hit
            .iter()
            .map(|g| g.linked == Some(LinkedRelevance::NamedByTopResult))
            .collect();
        assert_eq!(
            linked,
            [false, true, true, true, false],
            "a position past the end is ignored"
        );
    }

    #[tokio::test]
    async fn top_results_that_cover_the_question_together_are_kept_together() {
        let question = "Which river did the founder of Acme Rivers sail?";
        let hits = [
            page("a", "Acme Rivers", "Acme Rivers was founded by Jane Doe."),
            page(
                "b",
                "Jane Doe",
                "Jane Doe sailed the Danube river as a founder of trips.",
            ),
        ];
        let grader = HeuristicGrader::new(GradingConfig::default());
        let mut grades = grader.grade_now(question, &hits);
        grades.quality = Quality::Low;
        let joint = grade_jointly(&grader, question, &hits, &mut grades).await;
        assert!(
            joint.is_some(),
            "weak results of two or more are judged together"
        );
        assert_eq!(
            grades.quality,
            Quality::Medium,
            "together they hold every word of the question"
        );
        assert!(grades
            .per_hit
            .iter()
            .all(|g| g.kept && g.linked == Some(LinkedRelevance::CoversJointly)));
        assert!(grades.suggestion.is_none() && !grades.should_retry);
        let mut good = grader.grade_now("Acme Rivers founder", &hits[..1]);
        good.quality = Quality::High;
        assert!(
            grade_jointly(&grader, question, &hits, &mut good)
                .await
                .is_none(),
            "good results need no joint reading"
        );
    }

    #[test]
    fn the_ranking_is_shown_as_searched_and_a_bridges_reached_page_follows_the_first_result() {
        let hits: Vec<Hit> = ["a", "b", "c", "d"]
            .iter()
            .map(|id| page(id, id, "text"))
            .collect();
        let mut grades = graded("volcano eruption", &hits);
        for g in &mut grades.per_hit {
            g.kept = false;
        }
        grades.per_hit[2].keep_as(LinkedRelevance::HopPage { entity: "C".into() });
        grades.per_hit[3].kept = true;
        let ids = |hits: &[Hit]| hits.iter().map(|h| h.id.0.clone()).collect::<Vec<_>>();

        let (shown, relevant) = shown_and_relevant(hits.clone(), &grades, QuestionShape::Simple, 3);
        assert_eq!(
            ids(&shown),
            ["a", "b", "c", "d"],
            "the first three as ranked, then the kept hit the answer may cite"
        );
        assert_eq!(ids(&relevant), ["c", "d"]);

        let (shown, _) = shown_and_relevant(hits.clone(), &grades, QuestionShape::Bridge, 4);
        assert_eq!(
            ids(&shown),
            ["a", "c", "b", "d"],
            "the hop's page right after the first result"
        );
        let (shown, _) = shown_and_relevant(hits, &grades, QuestionShape::Comparison, 4);
        assert_eq!(
            ids(&shown),
            ["a", "b", "c", "d"],
            "a comparison promotes nothing"
        );
    }
}
