//! What multi-hop search reads from how results link to each other, which a grader reading one
//! hit against the question cannot see: a hop's page is relevant through the result that named
//! it, a page the top results name is relevant through them, and the top results may cover a
//! question together though none does alone. Each decision is a [`LinkedRelevance`] in the
//! grades.

use ferret_core::{Hit, StageOutput};
use ferret_grading::{Grades, LinkedRelevance, Quality, RelevanceGrader};
use ferret_query_intel::Hop;

/// Results of the first search that stay ahead of every hop's: what the question as asked finds
/// first is its best-grounded material.
pub(super) const FIRST_SEARCH_LEAD: usize = 2;

/// Top results a multi-hop question's grading may judge as one document when none covers it alone.
const JOINTLY_GRADED: usize = 3;

/// Keep each hit that is the page of one of `hops`.
pub(super) fn keep_hop_pages(grades: &mut Grades, hits: &[Hit], hops: &[Hop]) {
    for (grade, hit) in grades.per_hit.iter_mut().zip(hits) {
        if let Some(hop) = hops.iter().find(|hop| hop.is_document(hit)).filter(|_| !grade.kept) {
            grade.keep_as(LinkedRelevance::HopPage { entity: hop.entity.clone() });
        }
    }
}

/// Keep the `linked` pages the best results name, which
/// [`BridgeFinder::linked_first`](ferret_query_intel::BridgeFinder::linked_first) placed right
/// after the first search's lead.
pub(super) fn keep_named_pages(grades: &mut Grades, linked: usize) {
    for grade in grades.per_hit.iter_mut().skip(FIRST_SEARCH_LEAD).take(linked) {
        if !grade.kept {
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
    joint.text = top.iter().skip(1).fold(top[0].text.clone(), |text, hit| format!("{text}\n{}\n{}", hit.title, hit.text));
    let graded = grader.grade(question, &[joint]).await;
    if graded.value.quality != Quality::Low {
        grades.quality = Quality::Medium;
        grades.should_retry = false;
        grades.suggestion = None;
        for grade in &mut grades.per_hit[..top.len()] {
            grade.keep_as(LinkedRelevance::CoversJointly);
        }
    }
    Some(graded)
}

/// The hits a multi-hop search shows, at most `limit`, and those the answer is written from.
///
/// A multi-hop question's documents are linked through each other, not each through the
/// question's words, which is all a grader judges one hit by. So the hops' ranking chooses which
/// hits are shown (a page the first search ranked second stays, though it shares few words with
/// the question); the grades only order them: relevant ones first, and the answer is written
/// from those.
pub(super) fn shown_and_relevant(ranked: Vec<Hit>, grades: &Grades, limit: usize) -> (Vec<Hit>, Vec<Hit>) {
    let graded = ranked.into_iter().zip(&grades.per_hit).map(|(h, g)| (h, g.kept));
    let (kept, rest): (Vec<_>, Vec<_>) = graded.take(limit).partition(|(_, kept)| *kept);
    let relevant: Vec<Hit> = kept.into_iter().map(|(h, _)| h).collect();
    let shown = relevant.iter().cloned().chain(rest.into_iter().map(|(h, _)| h)).collect();
    (shown, relevant)
}
