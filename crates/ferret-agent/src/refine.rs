use std::collections::HashSet;
use std::time::Instant;

use ferret_core::{
    Event, FerretError, Hit, Implementation, Query, Report, Response, ResponseType, StageOutput, StopReason, TraceStep,
    Usage,
};
use ferret_exec::{dedup_and_fuse, dedup_heads_first, normalize_query, CallBudget, ExecOutcome, Executor, RRF_K};
use ferret_grading::{Grades, Quality, RetryStrategy, RetrySuggestion};
use ferret_synthesis::Answer;
use ferret_query_intel::{Analysis, BridgeFinder, Complexity, Hop, HopRequest, Intent, QuestionShape};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use crate::gathered::Gathered;
use crate::planner::PlanConfig;
use crate::tool_loop::ToolLoopConfig;
use crate::recorder::Recorder;
use crate::Stages;

/// How hard the agent tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// One attempt: search, grade, answer.
    SinglePass,
    /// Seed 001's loop: retry with a refined query while results are weak, within the budget.
    Refine,
    /// Multi-hop: after each search, follow the name the results lead to (a bridge) or the
    /// compared name they lack, until the results cover the question; weak results still refine.
    MultiHop,
    /// Seed 004's tool-selection loop: at each step a selector picks a tool (a search over every
    /// backend or one, the most recent entries, a date range) or DONE, up to
    /// [`ToolLoopConfig::max_steps`].
    ToolLoop,
    /// Seed 003's ReWOO planner: a plan of `#En = Tool[args]` steps runs as a dependency graph,
    /// and a writer turns the evidence into a report with sections and references.
    Plan,
    /// Choose per question: a simple one takes the refine loop's cheapest path (one search when
    /// its results are good), a comparison is decomposed, a bridge question escalates to
    /// multi-hop, and a request for a report or overview of a complex subject to a plan.
    #[default]
    Auto,
}

/// Settings of the agent that are not part of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentConfig {
    /// Which strategy runs.
    pub strategy: Strategy,
    /// Hits asked of each backend per query; more than the answer shows, so fusion has material.
    pub hits_per_call: usize,
    /// Settings of the tool-selection loop.
    pub tool_loop: ToolLoopConfig,
    /// Settings of the planner.
    pub plan: PlanConfig,
}

impl AgentConfig {
    /// Check that the chosen strategy can take a step at all.
    pub fn validate(&self) -> Result<(), FerretError> {
        let zero = match self.strategy {
            Strategy::ToolLoop if self.tool_loop.max_steps == 0 => Some("tool_loop.max_steps"),
            Strategy::Plan | Strategy::Auto if self.plan.max_steps == 0 => Some("plan.max_steps"),
            _ => None,
        };
        match zero {
            Some(name) => Err(FerretError::Config(format!("{name} is zero, so the strategy could take no step"))),
            None => Ok(()),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { strategy: Strategy::Auto, hits_per_call: 20, tool_loop: ToolLoopConfig::default(), plan: PlanConfig::default() }
    }
}

const NOTHING_FOUND: &str = "I couldn't find relevant material matching your question. Try describing what you're \
                             looking for in different words.";

/// Results of the first search that stay ahead of every hop's: what the question as asked finds
/// first is its best-grounded material.
const FIRST_SEARCH_LEAD: usize = 2;

/// Top results a multi-hop question's grading may judge as one document when none covers it alone.
const JOINTLY_GRADED: usize = 3;

/// What a decomposition's parts are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parts {
    /// Searched beside the whole question, and graded as aspects.
    Search,
    /// Only graded as aspects: the first search is the whole question.
    GradeOnly,
}

/// How a search ended: why, the hits it shows and the answer written from them.
pub(crate) struct Ending {
    pub(crate) stop_reason: StopReason,
    pub(crate) hits: Vec<Hit>,
    pub(crate) answer: Option<Answer>,
    /// The report the answer renders, for the planner strategy.
    pub(crate) report: Option<Report>,
}

/// Runs a strategy over the stages and the executor.
#[derive(Debug, Clone)]
pub struct Agent {
    pub(crate) stages: Stages,
    pub(crate) executor: Executor,
    pub(crate) config: AgentConfig,
}

impl Agent {
    /// An agent running `stages` over `executor`.
    pub fn new(stages: Stages, executor: Executor, config: AgentConfig) -> Self {
        Self { stages, executor, config }
    }

    /// Answer `query`, sending every step to `events` as it happens when a sender is given.
    ///
    /// Fails only when the search cannot start (an unusable budget); backend failures are listed
    /// in `Response::failures`.
    pub async fn run(&self, query: &Query, events: Option<UnboundedSender<Event>>) -> Result<Response, FerretError> {
        query.budget.validate()?;
        self.config.validate()?;
        let span = tracing::info_span!("search", question = %query.text());
        self.run_inner(query, Recorder::new(events)).instrument(span).await
    }

    async fn run_inner(&self, query: &Query, mut rec: Recorder) -> Result<Response, FerretError> {
        let started = Instant::now();
        let question = query.text();
        let budget = &query.budget;

        let intent = self.stages.classifier.classify(question).instrument(tracing::info_span!("intent")).await;
        let (intent, implementation) = rec.stage(intent);
        rec.step(TraceStep::Intent {
            outcome: intent.intent.as_str().to_owned(),
            reason: intent.reason.clone(),
            implementation,
        });
        if intent.intent != Intent::Search {
            let message = self.stages.guardrail.message_for(intent.intent).unwrap_or(NOTHING_FOUND).to_owned();
            rec.emit(Event::Message { text: message.clone() });
            let mut response = Response::message(message, StopReason::Guardrail, rec.trace.clone());
            response.usage = Usage { elapsed_ms: elapsed_ms(started), ..rec.llm };
            rec.emit(Event::Done { response: Box::new(response.clone()) });
            return Ok(response);
        }

        let analysis = self.analyze(question, &mut rec).await;
        match self.config.strategy {
            Strategy::ToolLoop => return Ok(self.run_tool_loop(query, &analysis, rec, started).await),
            Strategy::Plan => return Ok(self.run_plan(query, &analysis, rec, started).await),
            Strategy::Auto if asks_for_report(question, &analysis) => {
                rec.step(TraceStep::Strategy { chosen: "plan".into(), reason: "a complex question asking for a report".into() });
                return Ok(self.run_plan(query, &analysis, rec, started).await);
            }
            _ => {}
        }

        let calls = CallBudget::new(budget.max_backend_calls, budget.wall_time);
        let mut gathered = Gathered::default();
        let mut lists: Vec<Vec<Hit>> = Vec::new();
        let mut searched: HashSet<String> = HashSet::new();
        let mut searched_queries: Vec<String> = Vec::new();
        let bridge = BridgeFinder::default();
        let shape = match self.config.strategy {
            Strategy::SinglePass | Strategy::Refine | Strategy::ToolLoop | Strategy::Plan => QuestionShape::Simple,
            Strategy::Auto => bridge.shape(question, &analysis),
            Strategy::MultiHop => match bridge.shape(question, &analysis) {
                QuestionShape::Simple => QuestionShape::Bridge,
                shape => shape,
            },
        };
        if shape != QuestionShape::Simple {
            rec.step(TraceStep::Strategy { chosen: "multi_hop".into(), reason: format!("{} question", shape.as_str()) });
        }
        // A bridge's second part is unnamed, so it is found by hopping. A comparison's parts are
        // graded as aspects, but searched only when the question's own results lack a compared
        // name: the whole question usually finds both, and fusing the parts in would dilute it.
        let sub_queries = if shape == QuestionShape::Bridge { 0 } else { budget.max_sub_queries as usize };
        let parts = if shape == QuestionShape::Comparison { Parts::GradeOnly } else { Parts::Search };
        let (mut queries, aspects) = self.first_queries(question, &analysis, sub_queries, parts, &mut rec).await;
        // The hops made so far: a hop's page is relevant through the result that named it.
        let mut hops: Vec<Hop> = Vec::new();
        // The hop the coming attempt runs, if it is one.
        let mut current_hop: Option<Hop> = None;
        let max_attempts = match self.config.strategy {
            Strategy::SinglePass => 1,
            _ => budget.max_attempts,
        };

        let (stop_reason, accumulated, grades) = loop {
            let number = lists.len() as u32 + 1;
            searched.extend(queries.iter().map(|q| normalize_query(q)));
            searched_queries.extend(queries.iter().cloned());
            let outcome: ExecOutcome = self
                .executor
                .execute(&queries, &query.filters, self.config.hits_per_call.max(query.limit), &calls, budget.call_deadline)
                .instrument(tracing::info_span!("exec", attempt = number))
                .await;
            let budget_spent = outcome.budget_exhausted;
            let (mut found, new_hits) = gathered.absorb(outcome, number, &mut rec);
            // A hop's document leads its list; a hop that missed it would only push the first
            // search's results down.
            match current_hop.as_ref().map(|hop: &Hop| hop.document_in(&found)) {
                Some(None) => found.clear(),
                Some(Some(at)) => found[..=at].rotate_right(1),
                None => {}
            }
            lists.push(found);

            // Results accumulate over attempts (seed 001 returns the best of all attempts), so the
            // verdict is on everything found so far, earlier attempts ranking first.
            let mut accumulated =
                if hops.is_empty() { dedup_and_fuse(&lists, RRF_K) } else { dedup_heads_first(&lists, FIRST_SEARCH_LEAD) };
            let mut linked = 0;
            if shape == QuestionShape::Bridge {
                (accumulated, linked) = bridge.linked_first(question, accumulated, FIRST_SEARCH_LEAD);
            }
            let grades =
                self.grade(question, shape, &aspects, &hops, &accumulated).instrument(tracing::info_span!("grading")).await;
            let (mut grades, implementation) = rec.stage(grades);
            // A page the best results point to is relevant through them, as a hop's page is.
            for grade in grades.per_hit.iter_mut().skip(FIRST_SEARCH_LEAD).take(linked) {
                if !grade.kept {
                    grade.kept = true;
                    grade.reason.push_str("; the page a top result names");
                }
            }
            rec.step(grades.trace_step(number, implementation));

            let hop = if shape == QuestionShape::Simple {
                None
            } else {
                let request =
                    HopRequest { question, shape, hits: &accumulated, searched: &searched_queries, fingerprint: normalize_query };
                let (hop, implementation) = rec.stage(self.stages.hop_finder.next_hop(request).await);
                hop.map(|hop| (hop, implementation))
            };
            // A hop that found nothing new will not find it by hopping on.
            let hops_exhausted = hop.is_none() || (number > 1 && new_hits == 0);
            let (decision, stop) = if grades.quality != Quality::Low && hops_exhausted {
                ("stop: answered".to_owned(), Some(StopReason::Answered))
            } else if budget_spent
                || calls.is_exhausted()
                || started.elapsed() >= budget.wall_time
                || rec.llm_tokens() >= budget.max_tokens
            {
                ("stop: budget spent".to_owned(), Some(StopReason::BudgetExhausted))
            } else if number > 1 && new_hits == 0 {
                ("stop: no new results".to_owned(), Some(StopReason::NoProgress))
            } else if number >= max_attempts {
                ("stop: attempts used".to_owned(), Some(StopReason::MaxAttempts))
            } else if let Some((hop, implementation)) = hop {
                current_hop = Some(hop.clone());
                hops.push(hop.clone());
                queries = vec![hop.query.clone()];
                rec.step(TraceStep::Queries {
                    attempt: number + 1,
                    queries: queries.clone(),
                    reason: format!("hop ({}): {}", shape.as_str(), hop.entity),
                    implementation,
                });
                (format!("hop: {}", hop.entity), None)
            } else {
                let mut next = self.fresh_refinement(grades.suggestion.clone(), &analysis, &searched, &mut rec).await;
                if next.is_none() && number > 1 {
                    // The question's own refinement was tried already: refine the last query instead.
                    let last_query = queries.join(" ");
                    let (again, _) = rec.stage(self.stages.grader.grade(&last_query, &accumulated).await);
                    next = self.fresh_refinement(again.suggestion, &analysis, &searched, &mut rec).await;
                }
                match next {
                    Some((strategy, rewritten, implementation)) => {
                        current_hop = None;
                        queries = vec![rewritten];
                        rec.step(TraceStep::Queries {
                            attempt: number + 1,
                            queries: queries.clone(),
                            reason: format!("refined: {}", strategy.as_str()),
                            implementation,
                        });
                        (format!("retry: {}", strategy.as_str()), None)
                    }
                    None => ("stop: no new query to try".to_owned(), Some(StopReason::NoProgress)),
                }
            };
            rec.step(TraceStep::Attempt { attempt: number, new_hits, decision });
            if let Some(stop) = stop {
                break (stop, accumulated, grades);
            }
        };

        // Seed 001: when nothing relevant (good) was found, say so instead of answering from
        // results that merely share a word with the question.
        let graded = accumulated.into_iter().zip(&grades.per_hit).map(|(h, g)| (h, g.kept));
        let (hits, relevant): (Vec<Hit>, Vec<Hit>) = if grades.quality == Quality::Low {
            (Vec::new(), Vec::new())
        } else if shape == QuestionShape::Simple {
            let kept: Vec<Hit> = graded.filter(|(_, kept)| *kept).map(|(h, _)| h).take(query.limit).collect();
            (kept.clone(), kept)
        } else {
            // A multi-hop question's documents are linked through each other, not each through
            // the question's words, which is all a grader judges one hit by. So the hops' ranking
            // chooses which hits are shown (a page the first search ranked second stays, though
            // it shares few words with the question), the grades only order them: relevant ones
            // first, and the answer is written from those.
            let (kept, rest): (Vec<_>, Vec<_>) = graded.take(query.limit).partition(|(_, kept)| *kept);
            let relevant: Vec<Hit> = kept.into_iter().map(|(h, _)| h).collect();
            let top = relevant.iter().cloned().chain(rest.into_iter().map(|(h, _)| h)).collect();
            (top, relevant)
        };
        // The aspects' words (a comparison's attribute, say) count as asked when picking sentences.
        let asked = if aspects.is_empty() { question.to_owned() } else { format!("{question} {}", aspects.join(" ")) };
        let answer = self.answer(&asked, &relevant, &mut rec).await;
        Ok(self.finish(Ending { stop_reason, hits, answer, report: None }, gathered, started, rec))
    }

    /// Analyse the question and record the analysis in the trace.
    pub(crate) async fn analyze(&self, question: &str, rec: &mut Recorder) -> Analysis {
        let analysis = self.stages.analyzer.analyze(question).instrument(tracing::info_span!("analysis")).await;
        let (analysis, implementation) = rec.stage(analysis);
        rec.step(TraceStep::Analysis {
            query_type: analysis.query_type.as_str().to_owned(),
            entities: analysis.entities.iter().map(|e| e.label()).collect(),
            complexity: analysis.complexity.as_str().to_owned(),
            implementation,
        });
        analysis
    }

    /// The answer written from `relevant`, or `None` when there is nothing to write from.
    pub(crate) async fn answer(&self, asked: &str, relevant: &[Hit], rec: &mut Recorder) -> Option<Answer> {
        if relevant.is_empty() {
            return None;
        }
        let answer = self.stages.synthesizer.synthesize(asked, relevant).instrument(tracing::info_span!("synthesis")).await;
        let (answer, implementation) = rec.stage(answer);
        rec.step(answer.trace_step(implementation));
        Some(answer).filter(|a| !a.text.trim().is_empty())
    }

    /// The response of a search that ended: its answer and hits, or the message saying why
    /// there are none, with everything the search spent.
    pub(crate) fn finish(&self, ending: Ending, gathered: Gathered, started: Instant, rec: Recorder) -> Response {
        let Ending { stop_reason, hits, answer, report } = ending;
        let Gathered { mut usage, failures, any_call_answered, .. } = gathered;
        let mut response = match answer {
            None => {
                let message = if any_call_answered || failures.is_empty() {
                    NOTHING_FOUND.to_owned()
                } else {
                    format!("No search backend could be reached, so there is nothing to answer from: {}", failures[0].error)
                };
                rec.emit(Event::Message { text: message.clone() });
                Response::message(message, stop_reason, rec.trace.clone())
            }
            Some(answer) => {
                rec.emit(Event::Answer { text: answer.text.clone(), citations: answer.citations.clone() });
                Response {
                    response_type: ResponseType::Results,
                    message: None,
                    answer: Some(answer.text),
                    citations: answer.citations,
                    report,
                    hits,
                    failures: Vec::new(),
                    trace: rec.trace.clone(),
                    usage: Usage::default(),
                    stop_reason,
                }
            }
        };
        response.failures = failures;
        usage.elapsed_ms = elapsed_ms(started);
        usage.llm_calls = rec.llm.llm_calls;
        usage.prompt_tokens = rec.llm.prompt_tokens;
        usage.completion_tokens = rec.llm.completion_tokens;
        usage.cost_usd = rec.llm.cost_usd;
        response.usage = usage;
        rec.emit(Event::Done { response: Box::new(response.clone()) });
        response
    }

    /// The first attempt's queries: the question itself, plus sub-queries when it is complex,
    /// each rewritten for search engines. The whole question is always searched, so decomposition
    /// can only add evidence. Also returns the sub-queries alone: the aspects grading must cover.
    async fn first_queries(
        &self,
        question: &str,
        analysis: &Analysis,
        max_sub_queries: usize,
        parts_use: Parts,
        rec: &mut Recorder,
    ) -> (Vec<String>, Vec<String>) {
        let (parts, mut implementation, reason) = if analysis.complexity == Complexity::Complex && max_sub_queries > 0 {
            let (parts, implementation) = rec.stage(self.stages.decomposer.decompose(question, analysis, max_sub_queries).await);
            let reason = match parts_use {
                Parts::Search => "decomposed, the whole question kept",
                Parts::GradeOnly => "decomposed into aspects to grade; the whole question searched",
            };
            (parts, Some(implementation), reason)
        } else {
            (Vec::new(), None, "simple question: searched as asked, rewritten")
        };
        let (mut queries, rewriter) = rec.stage(self.stages.rewriter.rewrite_covering(question, analysis).await);
        implementation.get_or_insert(rewriter);
        let whole_question = queries.len();
        let mut aspects = Vec::new();
        for part in parts {
            let (rewritten, _) = rec.stage(self.stages.rewriter.rewrite(&part, analysis).await);
            if !queries.iter().any(|q| normalize_query(q) == normalize_query(&rewritten)) {
                aspects.push(rewritten.clone());
                queries.push(rewritten);
            }
        }
        if parts_use == Parts::GradeOnly {
            queries.truncate(whole_question);
        }
        let implementation = implementation.unwrap_or_else(ferret_core::Implementation::heuristic_default);
        rec.step(TraceStep::Queries { attempt: 1, queries: queries.clone(), reason: reason.into(), implementation });
        (queries, aspects)
    }

    /// The query a suggestion leads to, rewritten for search engines, unless that exact query was
    /// already searched in this search (the fingerprint check that keeps the loop from repeating).
    async fn fresh_refinement(
        &self,
        suggestion: Option<RetrySuggestion>,
        analysis: &Analysis,
        searched: &HashSet<String>,
        rec: &mut Recorder,
    ) -> Option<(RetryStrategy, String, Implementation)> {
        let suggestion = suggestion?;
        let (rewritten, implementation) = rec.stage(self.stages.rewriter.rewrite(&suggestion.query, analysis).await);
        (!searched.contains(&normalize_query(&rewritten))).then_some((suggestion.strategy, rewritten, implementation))
    }

    /// Grade `hits` against the question and, for a decomposed question, against each aspect.
    ///
    /// A comparison is rarely answered by one document: a hit counts as relevant when it answers
    /// the question or one aspect, and the results are good only when every aspect is covered
    /// (or some hit answers the whole question). A weak aspect's refinement comes first, so the
    /// next attempt looks for what is missing.
    ///
    /// A hop's page is kept, though it may share few words with the question; the hop's other
    /// results are judged by the question like any hit (a search for "Donny" finds many pages
    /// that hold the name and nothing asked). Whether the question is covered stays the
    /// question's and the aspects' verdict.
    ///
    /// A multi-hop question is answered by two documents together, each holding part of its
    /// words: when no single hit covers it, the top two are judged as one.
    async fn grade(
        &self,
        question: &str,
        shape: QuestionShape,
        aspects: &[String],
        hops: &[Hop],
        hits: &[Hit],
    ) -> StageOutput<Grades> {
        let whole = self.stages.grader.grade(question, hits).await;
        if aspects.is_empty() && hops.is_empty() && shape == QuestionShape::Simple {
            return whole;
        }
        let StageOutput { value: mut merged, implementation, mut llm_calls } = whole;
        for (grade, hit) in merged.per_hit.iter_mut().zip(hits) {
            if let Some(hop) = hops.iter().find(|hop| hop.is_document(hit)).filter(|_| !grade.kept) {
                grade.kept = true;
                grade.reason.push_str(&format!("; the page of the hop to {}", hop.entity));
            }
        }
        if shape != QuestionShape::Simple && merged.quality == Quality::Low && hits.len() >= 2 {
            let pair = &hits[..JOINTLY_GRADED.min(hits.len())];
            let mut joint = pair[0].clone();
            joint.text = pair.iter().skip(1).fold(pair[0].text.clone(), |text, hit| format!("{text}\n{}\n{}", hit.title, hit.text));
            let graded = self.stages.grader.grade(question, &[joint]).await;
            llm_calls.extend(graded.llm_calls);
            if graded.value.quality != Quality::Low {
                merged.quality = Quality::Medium;
                merged.should_retry = false;
                merged.suggestion = None;
                for grade in &mut merged.per_hit[..pair.len()] {
                    grade.kept = true;
                    grade.reason.push_str("; with the other top result, covers the question");
                }
            }
        }
        if aspects.is_empty() {
            return StageOutput { value: merged, implementation, llm_calls };
        }
        let mut per_aspect = Vec::with_capacity(aspects.len());
        for aspect in aspects {
            let graded = self.stages.grader.grade(aspect, hits).await;
            llm_calls.extend(graded.llm_calls);
            per_aspect.push(graded.value);
        }
        for grades in &per_aspect {
            for (best, other) in merged.per_hit.iter_mut().zip(&grades.per_hit) {
                if other.relevance > best.relevance {
                    *best = other.clone();
                }
            }
        }
        let weakest = per_aspect.iter().min_by_key(|g| quality_rank(g.quality)).expect("aspects is not empty");
        if quality_rank(weakest.quality) > quality_rank(merged.quality) {
            merged.quality = weakest.quality;
            merged.should_retry = weakest.should_retry;
            merged.suggestion = weakest.suggestion.clone();
        } else if merged.quality == Quality::Low && weakest.suggestion.is_some() {
            merged.suggestion = weakest.suggestion.clone();
        }
        StageOutput { value: merged, implementation, llm_calls }
    }
}

/// Words that ask for a written overview rather than a fact.
const REPORT_WORDS: &[&str] = &["report", "overview", "survey", "summarize", "summarise", "summary", "research", "review"];

/// Does the question ask for a report on a subject with several parts: the planner's job.
fn asks_for_report(question: &str, analysis: &Analysis) -> bool {
    analysis.complexity == Complexity::Complex && ferret_core::text::words(question).any(|w| REPORT_WORDS.contains(&w.as_str()))
}

pub(crate) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn quality_rank(quality: Quality) -> u8 {
    match quality {
        Quality::Low => 0,
        Quality::Medium => 1,
        Quality::High => 2,
    }
}
