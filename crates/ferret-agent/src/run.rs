//! One search in progress: what every strategy reads (the query, its analysis, the stages, the
//! executor) and what it spends and records (the call budget, the clock, the gathered hits and
//! failures, the trace), with the moves they all make: search, grade, check the budget, answer,
//! finish.

use std::time::Instant;

use ferret_core::{
    Actions, Event, FileRequest, Hit, Implementation, ModelFind, OnRepeat, Query, RepeatMatch,
    RepeatOf, Report, Response, ResponseType, SearchQuery, StopReason, TraceStep, Usage,
};
use ferret_exec::{CacheUse, CallBudget, ExecOutcome, ExecRequest, Executor};
use ferret_grading::Grades;
use ferret_query_intel::{context_versions, read_error, Analysis, EntityKind, QueryType};
use ferret_synthesis::{
    addresses_the_agent, in_sections, strip_markers, Answer, EarlierTurn, Situation,
};
use tracing::Instrument;

use crate::config::AgentConfig;
use crate::gathered::Gathered;
use crate::recorder::Recorder;
use crate::session::Turn;
use crate::stages::Stages;

/// Said when a search found nothing relevant to answer from.
pub(crate) const NOTHING_FOUND: &str =
    "I couldn't find relevant material matching your question. Try describing \
                                        what you're looking for in different words.";

/// How a strategy ended: why, the hits it shows and the answer written from them.
pub(crate) struct Ending {
    pub(crate) stop_reason: StopReason,
    pub(crate) hits: Vec<Hit>,
    pub(crate) answer: Option<Answer>,
    /// The report the answer renders, for the planner strategy.
    pub(crate) report: Option<Report>,
    /// The model-file finder's status and candidates.
    pub(crate) model_file: Option<ModelFind>,
    /// What to say when there is no answer, when the strategy knows better than "nothing
    /// found".
    pub(crate) message: Option<String>,
}

impl Ending {
    /// No answer, for `reason`, saying `message`.
    pub(crate) fn message(stop_reason: StopReason, message: impl Into<String>) -> Self {
        Self {
            stop_reason,
            hits: Vec::new(),
            answer: None,
            report: None,
            model_file: None,
            message: Some(message.into()),
        }
    }
}

/// What one search round brought.
pub(crate) struct Round {
    /// The round's hits, fused over its queries and backends.
    pub(crate) hits: Vec<Hit>,
    /// How many of them no earlier round had found.
    pub(crate) new_hits: usize,
    /// The call budget ran out during the round.
    pub(crate) budget_exhausted: bool,
}

/// The state of one search, owned by the strategy running it.
pub(crate) struct SearchRun<'a> {
    pub(crate) stages: &'a Stages,
    pub(crate) executor: &'a Executor,
    pub(crate) config: &'a AgentConfig,
    pub(crate) query: &'a Query,
    pub(crate) analysis: Analysis,
    /// Backend calls and time left.
    pub(crate) calls: CallBudget,
    pub(crate) gathered: Gathered,
    pub(crate) rec: Recorder,
    pub(crate) started: Instant,
    /// The question as asked, in the form each configured backend reads it, written once when
    /// the search starts.
    pub(crate) asked: SearchQuery,
    /// What the answer tells its reader to do, for a technical question whose sources say.
    pub(crate) actions: Option<Actions>,
    /// The thread's recent turns, oldest first, for the answer's writer; empty outside a thread.
    pub(crate) conversation: Vec<EarlierTurn>,
    /// The model file the finder looks for, when the run is the finder's and the caller gave
    /// the request whole (else the finder reads the file's name from the query).
    pub(crate) file_request: Option<FileRequest>,
    /// The error a pasted log shows, as results are graded against it; `None`: the question.
    pub(crate) graded: Option<String>,
}

/// Quoted names of a pasted log's question that join its error in grading.
const MAX_QUOTED_NAMES: usize = 3;

/// A log's error as its results are graded: its line, symbol and package, when the question is
/// a pasted log (several lines, or long) about an error.
pub(crate) fn pasted_error(question: &str, analysis: &Analysis) -> Option<String> {
    let pasted = question.lines().count() > 3 || question.chars().count() > 300;
    if !pasted || analysis.query_type != QueryType::ErrorDiagnosis {
        return None;
    }
    let reading = read_error(question)?;
    // The names a report of the same failure repeats: a specific type or code, the symbol,
    // the package, and names the asker quotes beside the log (`std::env::var("DATABASE_URL")`
    // says what the failing line does; a path says only where).
    let generic = matches!(
        reading.kind.as_str(),
        "" | "error" | "fatal error" | "Error" | "Exception" | "panicked"
    );
    let mut names: Vec<String> = Vec::new();
    if !generic {
        names.push(reading.kind.clone());
    }
    names.extend(
        [reading.symbol.clone(), reading.package.clone()]
            .into_iter()
            .flatten(),
    );
    let quoted: Vec<String> = analysis
        .entities_of(EntityKind::QuotedPhrase)
        .map(|e| e.text.as_str())
        .filter(|q| !q.contains(['/', '\\', ' ']) && q.chars().any(char::is_alphabetic))
        // An identifier (`DATABASE_URL`, `std::env::var`, `useState`), not a plain word
        // (`main`, `apple`).
        .filter(|q| {
            q.chars()
                .any(|c| c.is_uppercase() || matches!(c, '_' | ':' | '.'))
        })
        .filter(|q| !names.iter().any(|n| n.contains(q)))
        .take(MAX_QUOTED_NAMES)
        .map(str::to_owned)
        .collect();
    names.extend(quoted);
    // A typed or coded error's own line is what reports of it repeat ("NU1101 Unable to find
    // package"); a generic one ("called `Result::unwrap()` on an `Err` value") says little
    // beyond its names, which then stand alone when there are two.
    let words: Vec<String> = if generic && names.len() >= 2 {
        names
    } else {
        let extra = names
            .into_iter()
            .filter(|n| !reading.line.contains(n.as_str()));
        std::iter::once(reading.line.clone()).chain(extra).collect()
    };
    let words: Vec<String> = words.into_iter().filter(|w| !w.trim().is_empty()).collect();
    (!words.is_empty()).then(|| words.join(" "))
}

impl<'a> SearchRun<'a> {
    /// The question as asked.
    pub(crate) fn question(&self) -> &'a str {
        self.query.text()
    }

    /// What results are judged against: the question, or for a pasted log the error it shows
    /// (its line, the symbol and the package), since the rest of a log (the command typed,
    /// progress lines, flags) is nothing a report of the failure says.
    pub(crate) fn graded_question(&self) -> &str {
        self.graded.as_deref().unwrap_or(self.query.text())
    }

    /// Hits asked of each backend per query: more than the answer shows, so fusion has material.
    pub(crate) fn hits_per_call(&self) -> usize {
        self.config.hits_per_call.max(self.query.limit)
    }

    /// `text` in each backend's form. The question as asked reads to a dense index as the
    /// question without noise and to a web engine as its web query; any other query (a rewrite, a
    /// hop, a plan step) is already a search engine's query and reads the same to every backend.
    pub(crate) fn in_forms(&self, text: &str) -> SearchQuery {
        if text == self.asked.keywords {
            self.asked.clone()
        } else {
            SearchQuery::plain(text)
        }
    }

    /// Whether kept results may answer: not when the asker wants the sources searched again.
    pub(crate) fn cache_use(&self) -> CacheUse {
        match self.query.on_repeat {
            OnRepeat::SearchAgain => CacheUse::Refresh,
            _ => CacheUse::Read,
        }
    }

    /// Search `queries` on every backend as round `round` (from 1), recording the calls.
    pub(crate) async fn search(&mut self, queries: &[String], round: u32) -> Round {
        let queries: Vec<SearchQuery> = queries.iter().map(|q| self.in_forms(q)).collect();
        let request = ExecRequest {
            cache: self.cache_use(),
            queries: &queries,
            filters: &self.query.filters,
            options: &self.query.options,
            limit: self.hits_per_call(),
            call_deadline: self.query.budget.call_deadline,
            backend: None,
        };
        self.execute(&request, round).await
    }

    /// Search each group of `groups` on every backend at once, as round `round`, each group's
    /// hits a list of its own (so one ranking can stand ahead of the others).
    pub(crate) async fn search_each(&mut self, groups: &[&[String]], round: u32) -> Vec<Round> {
        let limit = self.hits_per_call();
        let groups: Vec<Vec<SearchQuery>> = groups
            .iter()
            .map(|queries| queries.iter().map(|q| self.in_forms(q)).collect())
            .collect();
        let (filters, options) = (&self.query.filters, &self.query.options);
        let deadline = self.query.budget.call_deadline;
        let cache = self.cache_use();
        let (executor, calls) = (self.executor, &self.calls);
        let outcomes = futures::future::join_all(groups.iter().map(|queries| async move {
            let request = ExecRequest {
                cache,
                queries,
                filters,
                options,
                limit,
                call_deadline: deadline,
                backend: None,
            };
            executor.execute_on(&request, calls).await
        }))
        .instrument(tracing::info_span!("exec", round))
        .await;
        outcomes
            .into_iter()
            .map(|outcome| self.absorb(outcome, round))
            .collect()
    }

    /// Run `request` as round `round`, recording the calls.
    pub(crate) async fn execute(&mut self, request: &ExecRequest<'_>, round: u32) -> Round {
        let outcome = self
            .executor
            .execute_on(request, &self.calls)
            .instrument(tracing::info_span!("exec", round))
            .await;
        self.absorb(outcome, round)
    }

    /// Record a round's calls and failures; its hits, and how many are new.
    pub(crate) fn absorb(&mut self, outcome: ExecOutcome, round: u32) -> Round {
        let budget_exhausted = outcome.budget_exhausted;
        let (hits, new_hits) = self.gathered.absorb(outcome, round, &mut self.rec);
        Round {
            hits,
            new_hits,
            budget_exhausted,
        }
    }

    /// Grade `hits` against `question` with the configured grader, its model calls recorded.
    pub(crate) async fn grade(&mut self, question: &str, hits: &[Hit]) -> (Grades, Implementation) {
        let grades = self
            .stages
            .grader
            .grade(question, hits)
            .instrument(tracing::info_span!("grading"))
            .await;
        self.rec.stage(grades)
    }

    /// Is the budget spent: backend calls, wall time or the model's tokens?
    pub(crate) fn budget_spent(&self) -> bool {
        self.calls.is_exhausted()
            || self.started.elapsed() >= self.query.budget.wall_time
            || self.rec.llm_tokens() >= self.query.budget.max_tokens
    }

    /// The answer to `asked` written from `relevant`, or `None` when there is nothing to write
    /// from.
    pub(crate) async fn answer(&mut self, asked: &str, relevant: &[Hit]) -> Option<Answer> {
        // A result that speaks to the AI reading it is not evidence: it is neither cited nor a
        // source of actions.
        let trusted: Vec<Hit> = relevant
            .iter()
            .filter(|h| !addresses_the_agent(&h.text))
            .cloned()
            .collect();
        if trusted.len() < relevant.len() {
            tracing::info!(
                dropped = relevant.len() - trusted.len(),
                "results addressing the agent are not cited"
            );
        }
        let relevant = trusted.as_slice();
        if relevant.is_empty() {
            return None;
        }
        // In a conversation the writer is told what the search did, so it can say so to the
        // person it is talking to; a lone search's prompt stays about its sources.
        let search = match self.query.thread_id {
            Some(_) => search_lines(&self.rec.trace.steps),
            None => Vec::new(),
        };
        let situation = Situation {
            context: self.query.context.clone(),
            conversation: self.conversation.clone(),
            search,
            // The analysis read the run's question; another question is read by the writer.
            asked: (asked == self.question())
                .then(|| self.analysis.asked.clone())
                .flatten(),
        };
        let synthesizer = &self.stages.synthesizer;
        let answer = match self.rec.listener() {
            // A listener sees the answer grow as a streaming model writes it.
            Some(listener) => {
                let sink = move |text: &str| {
                    let _ = listener.send(Event::AnswerDelta {
                        text: text.to_owned(),
                    });
                };
                synthesizer
                    .synthesize_streaming(asked, relevant, &situation, &sink)
                    .instrument(tracing::info_span!("synthesis"))
                    .await
            }
            None => {
                synthesizer
                    .synthesize_in(asked, relevant, &situation)
                    .instrument(tracing::info_span!("synthesis"))
                    .await
            }
        };
        let (answer, implementation) = self.rec.stage(answer);
        self.rec.step(answer.trace_step(implementation));
        if answer.text.trim().is_empty() {
            return None;
        }
        // An error's answer reads as Root Cause, Solution, Code/Config Changes and Sources.
        let answer = match self.analysis.query_type {
            QueryType::ErrorDiagnosis => in_sections(answer, relevant),
            _ => answer,
        };
        self.actions = self.extract_actions(asked, &answer, relevant).await;
        Some(answer)
    }

    /// The actions `answer` states, read from the hits it cites, for a question about software
    /// (an error, versions, how to do something, an API); `None` for other questions, whose
    /// sources may name versions ("Windows 95") without asking anyone to change anything.
    async fn extract_actions(
        &mut self,
        asked: &str,
        answer: &Answer,
        relevant: &[Hit],
    ) -> Option<Actions> {
        let technical = matches!(
            self.analysis.query_type,
            QueryType::ErrorDiagnosis
                | QueryType::VersionCompatibility
                | QueryType::HowTo
                | QueryType::ApiUsage
        );
        if !technical {
            return None;
        }
        // The asker's setup ("Java 11") is read beside the question: a source's commands for
        // another version of it are not theirs.
        let setup = context_versions(&self.query.context);
        let with_setup = match setup.is_empty() {
            true => asked.to_owned(),
            false => format!("{asked}\n{}", setup.join(", ")),
        };
        let cited: Vec<Hit> = answer
            .citations
            .iter()
            .filter_map(|c| relevant.iter().find(|h| h.id == c.hit_id).cloned())
            .collect();
        let actions = self
            .stages
            .actions
            .extract(&with_setup, &answer.text, &cited)
            .instrument(tracing::info_span!("actions"))
            .await;
        let (actions, implementation) = self.rec.stage(actions);
        self.rec.step(TraceStep::Actions {
            version_changes: actions.version_changes.len(),
            file_changes: actions.file_changes.len(),
            commands: actions.commands.len(),
            implementation,
        });
        Some(actions).filter(|a| !a.is_empty())
    }

    /// The response to a question that repeats `earlier`, a turn of its thread: that turn's
    /// response again, with this search's trace and what it spent (no backend call).
    pub(crate) fn repeat(mut self, earlier: &Turn, matched_by: RepeatMatch) -> Response {
        self.rec.step(TraceStep::Repeat {
            turn: earlier.number,
            matched_by,
        });
        let mut rec = self.rec;
        let mut response = Response {
            trace: std::mem::take(&mut rec.trace),
            repeat_of: Some(RepeatOf {
                turn: earlier.number,
                matched_by,
            }),
            failures: Vec::new(),
            ..earlier.response.clone()
        };
        response.usage = Usage {
            elapsed_ms: elapsed_ms(self.started),
            ..rec.llm.clone()
        };
        if let Some(text) = &response.answer {
            rec.emit(|| Event::Answer {
                text: text.clone(),
                short_answer: response.short_answer.clone(),
                citations: response.citations.clone(),
            });
        }
        rec.emit(|| Event::Done {
            response: Box::new(response.clone()),
        });
        response
    }

    /// The response of a search that ended: its answer and hits, or the message saying why
    /// there are none, with everything the search spent.
    pub(crate) fn finish(self, ending: Ending) -> Response {
        let Ending {
            stop_reason,
            hits,
            answer,
            report,
            model_file,
            message: said,
        } = ending;
        let Gathered {
            mut usage,
            failures,
            any_call_answered,
            skipped,
            ..
        } = self.gathered;
        let mut rec = self.rec;
        let mut response = match answer {
            None => {
                let message = match (failures.first(), skipped.first()) {
                    _ if said.is_some() => said.unwrap_or_default(),
                    _ if any_call_answered => NOTHING_FOUND.to_owned(),
                    (Some(failure), _) => format!(
                        "No search backend could be reached, so there is nothing to answer from: {}",
                        failure.error
                    ),
                    (None, Some(skip)) => format!(
                        "No search backend was asked, so there is nothing to answer from: {skip}"
                    ),
                    (None, None) => NOTHING_FOUND.to_owned(),
                };
                rec.emit(|| Event::Message {
                    text: message.clone(),
                });
                // What was found stays listed, though none of it answers.
                Response {
                    hits,
                    model_file,
                    ..Response::message(message, stop_reason, std::mem::take(&mut rec.trace))
                }
            }
            Some(answer) => {
                rec.emit(|| Event::Answer {
                    text: answer.text.clone(),
                    short_answer: answer.short.clone(),
                    citations: answer.citations.clone(),
                });
                if let Some(actions) = &self.actions {
                    rec.emit(|| Event::Actions {
                        actions: actions.clone(),
                    });
                }
                Response {
                    response_type: ResponseType::Results,
                    message: None,
                    answer: Some(answer.text),
                    short_answer: answer.short,
                    citations: answer.citations,
                    report,
                    actions: self.actions,
                    model_file,
                    repeat_of: None,
                    hits,
                    failures: Vec::new(),
                    trace: std::mem::take(&mut rec.trace),
                    usage: Usage::default(),
                    stop_reason,
                }
            }
        };
        response.failures = failures;
        usage.elapsed_ms = elapsed_ms(self.started);
        usage.llm_calls = rec.llm.llm_calls;
        usage.prompt_tokens = rec.llm.prompt_tokens;
        usage.completion_tokens = rec.llm.completion_tokens;
        usage.cost_usd = rec.llm.cost_usd;
        response.usage = usage;
        rec.emit(|| Event::Done {
            response: Box::new(response.clone()),
        });
        response
    }
}

/// Milliseconds since `started`.
pub(crate) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Turns the answer's writer is shown, at most: enough to read "the second one" or "and in
/// 2019?" by, few enough to keep the prompt about the sources.
pub(crate) const CONVERSATION_TURNS: usize = 3;

/// The last [`CONVERSATION_TURNS`] of `turns`, as the answer's writer reads them.
pub(crate) fn conversation(turns: &[Turn]) -> Vec<EarlierTurn> {
    turns[turns.len().saturating_sub(CONVERSATION_TURNS)..]
        .iter()
        .map(|turn| {
            let response = &turn.response;
            let told = response.answer.as_deref().or(response.message.as_deref());
            EarlierTurn {
                question: turn.question.clone(),
                answer: strip_markers(told.unwrap_or_default()).trim().to_owned(),
            }
        })
        .collect()
}

/// Lines of search trace shown to the answer's writer, at most.
const SEARCH_LINES: usize = 12;

/// What the search did, as the answer's writer reads it: how a follow-up was read, the queries
/// sent, each backend that failed, how good the results were and what each attempt decided.
/// Timings, cache hits and stage internals say nothing about the answer and are left out.
pub(crate) fn search_lines(steps: &[TraceStep]) -> Vec<String> {
    let mut lines: Vec<String> = steps
        .iter()
        .filter_map(|step| match step {
            TraceStep::FollowUp {
                asked, resolved, ..
            } => Some(format!("read the follow-up {asked:?} as {resolved:?}")),
            TraceStep::Queries {
                queries, reason, ..
            } => Some(format!("searched for {} ({reason})", quoted(queries))),
            TraceStep::BackendCall {
                backend,
                query,
                error: Some(error),
                ..
            } => Some(format!("{backend} failed for {query:?}: {error}")),
            TraceStep::ToolStep {
                tool,
                query,
                results,
                ..
            } if !query.is_empty() => Some(format!("{tool} {query:?}: {results} results")),
            TraceStep::PlanStep {
                tool,
                argument,
                results,
                ..
            } => Some(format!("{tool} {argument:?}: {results} results")),
            TraceStep::Grading {
                graded,
                kept,
                quality,
                ..
            } => Some(format!(
                "kept {kept} of {graded} results; quality {quality}"
            )),
            TraceStep::Attempt {
                attempt, decision, ..
            } => Some(format!("attempt {attempt}: {decision}")),
            _ => None,
        })
        .collect();
    // The latest steps say most about the sources the answer is written from.
    let extra = lines.len().saturating_sub(SEARCH_LINES);
    lines.drain(..extra);
    lines
}

fn quoted(queries: &[String]) -> String {
    queries
        .iter()
        .map(|q| format!("{q:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
