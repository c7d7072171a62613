//! The search-grade-retry loop that single pass, refine and multi-hop share: search, grade what
//! all attempts found so far, and while the results are weak (or a multi-hop question has a hop
//! left) search again, with a refined query or the hop's, within the budget. Results accumulate
//! over attempts, the earliest ranking first; every attempt is recorded with its decision.

use std::collections::HashSet;

use ferret_core::text::{one_line, term_set};
use ferret_core::{Hit, Implementation, StopReason, TraceStep};
use ferret_exec::{dedup_heads_first, normalize_query};
use ferret_grading::{Grades, Quality, RetryStrategy, RetrySuggestion};
use ferret_query_intel::{Complexity, Hop, HopRequest, QuestionShape};
use tracing::Instrument;

use super::linking::{self, FIRST_SEARCH_LEAD};
use crate::run::{Ending, SearchRun};

/// How a question is searched by the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Attempts {
    /// The question's shape: a simple one refines; a bridge hops to the name its results give;
    /// a comparison is graded by its parts and hops to a compared name it lacks.
    pub(super) shape: QuestionShape,
    /// Most attempts, the first included.
    pub(super) max_attempts: u32,
}

/// What a decomposition's parts are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parts {
    /// Searched beside the whole question, and graded as aspects.
    Search,
    /// Only graded as aspects: the first search is the whole question.
    GradeOnly,
}

impl Attempts {
    /// Search until the results answer the question or nothing is left to try.
    pub(super) async fn run(self, run: &mut SearchRun<'_>) -> Ending {
        let question = run.question();
        let budget = run.query.budget;
        let shape = self.shape;
        let mut lists: Vec<Vec<Hit>> = Vec::new();
        let mut searched: HashSet<String> = HashSet::new();
        let mut searched_queries: Vec<String> = Vec::new();
        // A bridge's second part is unnamed, so it is found by hopping. A comparison's parts are
        // graded as aspects, but searched only when the question's own results lack a compared
        // name: the whole question usually finds both, and fusing the parts in would dilute it.
        let sub_queries = if shape == QuestionShape::Bridge {
            0
        } else {
            budget.max_sub_queries as usize
        };
        let parts = if shape == QuestionShape::Comparison {
            Parts::GradeOnly
        } else {
            Parts::Search
        };
        let (mut queries, aspects) = first_queries(run, sub_queries, parts).await;
        // The hops made so far: a hop's page is relevant through the result that named it.
        let mut hops: Vec<Hop> = Vec::new();
        // The hop the coming attempt runs, if it is one.
        let mut current_hop: Option<Hop> = None;

        let mut number = 0;
        let (stop_reason, accumulated, grades) = loop {
            number += 1;
            searched.extend(queries.iter().map(|q| normalize_query(q)));
            searched_queries.extend(queries.iter().cloned());
            // The question's own ranking stands: a decomposed question's parts are searched
            // beside it and add, after it, what they newly find.
            let (round, parts) = if number == 1 && queries.len() > 1 {
                let mut rounds = run
                    .search_each(&[&queries[..1], &queries[1..]], number)
                    .await
                    .into_iter();
                match (rounds.next(), rounds.next()) {
                    (Some(whole), parts) => (whole, parts),
                    (None, _) => (run.search(&queries, number).await, None),
                }
            } else {
                (run.search(&queries, number).await, None)
            };
            let budget_exhausted =
                round.budget_exhausted || parts.as_ref().is_some_and(|p| p.budget_exhausted);
            let new_hits = round.new_hits + parts.as_ref().map_or(0, |p| p.new_hits);
            let mut found = round.hits;
            // A hop's document leads its list; a hop that missed it would only push the first
            // search's results down.
            let hop_missed = match current_hop
                .as_ref()
                .map(|hop: &Hop| hop.document_in(&found))
            {
                Some(None) => {
                    found.clear();
                    true
                }
                Some(Some(at)) => {
                    found[..=at].rotate_right(1);
                    false
                }
                None => false,
            };
            lists.push(found);
            lists.extend(parts.map(|p| p.hits));

            // The verdict is on everything found so far. The first search's ranking stands: a
            // refinement only adds what it newly found after it; a hop's head joins after the
            // first search's lead.
            let lead = if hops.is_empty() {
                usize::MAX
            } else {
                FIRST_SEARCH_LEAD
            };
            let mut accumulated = dedup_heads_first(&lists, lead);
            let mut linked = Vec::new();
            if shape == QuestionShape::Bridge {
                let bridge = &run.stages.bridge;
                (accumulated, linked) = match run
                    .stages
                    .hop_finder
                    .rank_bridges(question, &accumulated)
                    .await
                {
                    Some(ranked) => {
                        bridge.linked_first_among(ranked, accumulated, FIRST_SEARCH_LEAD)
                    }
                    None => bridge.linked_first(question, accumulated, FIRST_SEARCH_LEAD),
                };
            }
            let (mut grades, implementation) = grade(run, shape, &aspects, &hops, &accumulated)
                .instrument(tracing::info_span!("grading"))
                .await;
            linking::keep_named_pages(&mut grades, &linked);
            run.rec.step(grades.trace_step(number, implementation));

            let hop = if shape == QuestionShape::Simple {
                None
            } else {
                let request = HopRequest {
                    question,
                    shape,
                    hits: &accumulated,
                    searched: &searched_queries,
                    fingerprint: normalize_query,
                };
                let (hop, implementation) =
                    run.rec.stage(run.stages.hop_finder.next_hop(request).await);
                hop.map(|hop| (hop, implementation))
            };
            // A hop that found nothing new will not find it by hopping on.
            let hops_exhausted = hop.is_none() || (number > 1 && new_hits == 0);
            let (decision, stop) = if grades.quality != Quality::Low && hops_exhausted && hop_missed
            {
                // The question led somewhere its results do not reach: what was found is
                // usable, but not the whole answer.
                (
                    "stop: the hop found no page".to_owned(),
                    Some(StopReason::NoProgress),
                )
            } else if grades.quality != Quality::Low && hops_exhausted {
                ("stop: answered".to_owned(), Some(StopReason::Answered))
            } else if budget_exhausted || run.budget_spent() {
                (
                    "stop: budget spent".to_owned(),
                    Some(StopReason::BudgetExhausted),
                )
            } else if number > 1 && new_hits == 0 {
                (
                    "stop: no new results".to_owned(),
                    Some(StopReason::NoProgress),
                )
            } else if number >= self.max_attempts {
                (
                    "stop: attempts used".to_owned(),
                    Some(StopReason::MaxAttempts),
                )
            } else if let Some((hop, implementation)) = hop {
                current_hop = Some(hop.clone());
                hops.push(hop.clone());
                queries = vec![hop.query.clone()];
                run.rec.step(TraceStep::Queries {
                    attempt: number + 1,
                    queries: queries.clone(),
                    reason: format!("hop ({}): {}", shape.as_str(), hop.entity),
                    implementation,
                });
                (format!("hop: {}", hop.entity), None)
            } else {
                let mut next = fresh_refinement(run, grades.suggestion.clone(), &searched).await;
                if next.is_none() && number > 1 {
                    // The question's own refinement was tried already: refine the last query instead.
                    let last_query = queries.join(" ");
                    let (again, _) = run
                        .rec
                        .stage(run.stages.grader.grade(&last_query, &accumulated).await);
                    next = fresh_refinement(run, again.suggestion, &searched).await;
                }
                match next {
                    Some((strategy, rewritten, implementation)) => {
                        current_hop = None;
                        queries = vec![rewritten];
                        run.rec.step(TraceStep::Queries {
                            attempt: number + 1,
                            queries: queries.clone(),
                            reason: format!("refined: {}", strategy.as_str()),
                            implementation,
                        });
                        (format!("retry: {}", strategy.as_str()), None)
                    }
                    None => (
                        "stop: no new query to try".to_owned(),
                        Some(StopReason::NoProgress),
                    ),
                }
            };
            run.rec.step(TraceStep::Attempt {
                attempt: number,
                new_hits,
                decision,
            });
            if let Some(stop) = stop {
                break (stop, accumulated, grades);
            }
        };

        // The ranking stands as the searches made it (the first search's, with what hops and
        // refinements added for a stated reason): the grades, a weaker signal, choose what the
        // answer is written from, not what is shown. When nothing relevant (good) was found, the
        // answer says so instead of answering from results that merely share a word.
        let (hits, relevant) =
            linking::shown_and_relevant(accumulated, &grades, shape, run.query.limit);
        let relevant = if grades.quality == Quality::Low {
            Vec::new()
        } else if shape == QuestionShape::Simple {
            relevant
        } else {
            // A multi-hop answer is written from the pages on the question's chain: the first
            // result and a page per hop (or per compared thing), which the ranking put first.
            relevant.into_iter().take(hops.len().max(1) + 1).collect()
        };
        // The question as asked: the synthesizer reads from its wording what kind of answer it
        // wants.
        let answer = run.answer(question, &relevant).await;
        Ending {
            stop_reason,
            hits,
            answer,
            report: None,
            model_file: None,
            message: None,
        }
    }
}

/// The first attempt's queries: the question as asked, plus sub-queries when it is complex,
/// rewritten for search engines. The whole question is always searched, so decomposition can
/// only add evidence. Also returns the sub-queries alone: the aspects grading must cover.
async fn first_queries(
    run: &mut SearchRun<'_>,
    max_sub_queries: usize,
    parts_use: Parts,
) -> (Vec<String>, Vec<String>) {
    let question = run.question();
    let stages = run.stages;
    let analysis = &run.analysis;
    let rec = &mut run.rec;
    let (parts, implementation, reason) =
        if analysis.complexity == Complexity::Complex && max_sub_queries > 0 {
            let (decomposition, implementation) = rec.stage(
                stages
                    .decomposer
                    .decompose(question, analysis, max_sub_queries)
                    .await,
            );
            let reason = match parts_use {
                Parts::Search => "decomposed, the whole question searched as asked",
                Parts::GradeOnly => "decomposed into aspects to grade; the whole question searched",
            };
            let reason = match &decomposition.root_cause {
                Some(hypothesis) => format!("{reason}; root cause: {hypothesis}"),
                None => reason.to_owned(),
            };
            (decomposition.sub_queries, Some(implementation), reason)
        } else {
            (Vec::new(), None, "searched as asked".to_owned())
        };
    // The first search is the question as asked, the search a user would run: the engines read
    // whole questions, and the rules' rewriting (dropping words, cutting) only loses what they
    // would have found. A model's rewrite may name what the question does not: it is searched
    // beside the question, adding candidates after the question's own ranking.
    let (rewrite, rewriter) = rec.stage(stages.rewriter.rewrite(question, analysis).await);
    let mut queries = vec![one_line(question)];
    if matches!(rewriter, Implementation::Llm { .. }) && term_set(&rewrite) != term_set(question) {
        queries.push(rewrite);
    }
    let mut implementation = implementation;
    implementation.get_or_insert(rewriter);
    let whole_question = queries.len();
    let mut aspects = Vec::new();
    for part in parts {
        let (rewritten, _) = rec.stage(stages.rewriter.rewrite(&part, analysis).await);
        if !queries
            .iter()
            .any(|q| normalize_query(q) == normalize_query(&rewritten))
        {
            aspects.push(rewritten.clone());
            queries.push(rewritten);
        }
    }
    if parts_use == Parts::GradeOnly {
        queries.truncate(whole_question);
    }
    let implementation = implementation.unwrap_or_else(Implementation::heuristic_default);
    rec.step(TraceStep::Queries {
        attempt: 1,
        queries: queries.clone(),
        reason,
        implementation,
    });
    (queries, aspects)
}

/// The query a suggestion leads to, rewritten for search engines, unless that exact query was
/// already searched in this search (the fingerprint check that keeps the loop from repeating).
async fn fresh_refinement(
    run: &mut SearchRun<'_>,
    suggestion: Option<RetrySuggestion>,
    searched: &HashSet<String>,
) -> Option<(RetryStrategy, String, Implementation)> {
    let suggestion = suggestion?;
    let (rewritten, implementation) = run.rec.stage(
        run.stages
            .rewriter
            .rewrite(&suggestion.query, &run.analysis)
            .await,
    );
    (!searched.contains(&normalize_query(&rewritten))).then_some((
        suggestion.strategy,
        rewritten,
        implementation,
    ))
}

/// Grade `hits` against the question and, for a decomposed question, against each aspect.
///
/// A comparison is rarely answered by one document: a hit counts as relevant when it answers
/// the question or one aspect, and the results are good only when every aspect is covered (or
/// some hit answers the whole question). A weak aspect's refinement comes first, so the next
/// attempt looks for what is missing.
///
/// A hop's page is kept, though it may share few words with the question; the hop's other
/// results are judged by the question like any hit (a search for "Donny" finds many pages that
/// hold the name and nothing asked). Whether the question is covered stays the question's and
/// the aspects' verdict. A multi-hop question may be covered by its top results together.
async fn grade(
    run: &mut SearchRun<'_>,
    shape: QuestionShape,
    aspects: &[String],
    hops: &[Hop],
    hits: &[Hit],
) -> (Grades, Implementation) {
    let question = run.graded_question().to_owned();
    let question = question.as_str();
    let stages = run.stages;
    let grader = stages.grader.as_ref();
    let (mut merged, implementation) = run.rec.stage(grader.grade(question, hits).await);
    if aspects.is_empty() && hops.is_empty() && shape == QuestionShape::Simple {
        return (merged, implementation);
    }
    linking::keep_hop_pages(&mut merged, hits, hops);
    if shape != QuestionShape::Simple {
        if let Some(joint) = linking::grade_jointly(grader, question, hits, &mut merged).await {
            run.rec.stage(joint);
        }
    }
    if aspects.is_empty() {
        return (merged, implementation);
    }
    let mut per_aspect = Vec::with_capacity(aspects.len());
    for aspect in aspects {
        let (graded, _) = run.rec.stage(grader.grade(aspect, hits).await);
        per_aspect.push(graded);
    }
    for grades in &per_aspect {
        for (best, other) in merged.per_hit.iter_mut().zip(&grades.per_hit) {
            if other.relevance > best.relevance {
                *best = other.clone();
            }
        }
    }
    let Some(weakest) = per_aspect.iter().min_by_key(|g| g.quality) else {
        return (merged, implementation);
    };
    if weakest.quality > merged.quality {
        merged.quality = weakest.quality;
        merged.should_retry = weakest.should_retry;
        merged.suggestion = weakest.suggestion.clone();
    } else if merged.quality == Quality::Low && weakest.suggestion.is_some() {
        merged.suggestion = weakest.suggestion.clone();
    }
    (merged, implementation)
}
