//! The agent: it screens a question with the guardrail, analyses it, runs the configured
//! strategy over one [`SearchRun`], and turns how the strategy ended into the response.

use ferret_llm::{with_model_budget, ModelBudget};
use std::time::{Instant, SystemTime};

use ferret_core::text::one_line;
use ferret_core::SearchQuery;
use ferret_core::{
    Access, Budget, Event, FerretError, FileRequest, OnRepeat, Query, QueryForm, Response,
    StopReason, Strategy, StrategyReason, TraceStep, Usage,
};
use ferret_exec::{CallBudget, Executor};
use ferret_query_intel::{error_signature, Analysis, HeuristicAnalyzer, Intent};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use crate::config::AgentConfig;
use crate::gathered::Gathered;
use crate::recorder::Recorder;
use crate::run::{conversation, elapsed_ms, SearchRun, NOTHING_FOUND};
use crate::session::{normalized, Asked, Sessions, Turn};
use crate::stages::Stages;
use crate::strategy::implementation;

/// Runs a strategy over the stages and the executor.
#[derive(Debug, Clone)]
pub struct Agent {
    stages: Stages,
    executor: Executor,
    config: AgentConfig,
    sessions: Option<Sessions>,
}

impl Agent {
    /// An agent running `stages` over `executor`, or the reason `config` cannot run.
    pub fn new(
        stages: Stages,
        executor: Executor,
        config: AgentConfig,
    ) -> Result<Self, FerretError> {
        config.validate()?;
        Ok(Self {
            stages,
            executor,
            config,
            sessions: None,
        })
    }

    /// The names of the backends searches run on, in the order they were added.
    pub fn backend_names(&self) -> Vec<&str> {
        self.executor.backend_names()
    }

    /// The executor searches run through: its layers (cache, rate limits, retries, deadlines)
    /// serve callers that search outside a strategy, such as a research run.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The stages searches run.
    pub fn stages(&self) -> &Stages {
        &self.stages
    }

    /// Forget the backends' cached results, after documents were added to one of them.
    pub fn forget_results(&self) {
        self.executor.forget_results();
    }

    /// Bytes the sessions' turns hold in this process, when they are kept in memory.
    pub fn session_bytes(&self) -> Option<u64> {
        self.sessions.as_ref()?.store.held_bytes()
    }

    /// Remember each thread's questions in `sessions`: a question a thread repeats is answered
    /// again without a search, unless the query asks to search again.
    pub fn with_sessions(mut self, sessions: Sessions) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Answer `query`, sending every step to `events` as it happens when a sender is given:
    /// the guardrail, the analysis, the configured strategy, the response.
    ///
    /// Fails only when the search cannot start (an unusable budget); backend failures are listed
    /// in `Response::failures`.
    ///
    /// Every model call of the search is bounded by the query's budget: its per-call deadline,
    /// what is left of its wall time and of its tokens.
    pub async fn run(
        &self,
        query: &Query,
        events: Option<UnboundedSender<Event>>,
    ) -> Result<Response, FerretError> {
        with_model_budget(model_budget(query), self.run_within_budget(query, events)).await
    }

    async fn run_within_budget(
        &self,
        query: &Query,
        events: Option<UnboundedSender<Event>>,
    ) -> Result<Response, FerretError> {
        let strategy = query.strategy.unwrap_or(self.config.strategy);
        if strategy == Strategy::FindModel {
            // A file name is a job, not a question: the guardrail and threads are for questions.
            return self.find_model_for(query, None, events).await;
        }
        let span = tracing::info_span!("search", question = %query.text(), %strategy);
        async {
            query.budget.validate()?;
            if query.strategy.is_some() {
                self.config.validate_for(strategy)?;
            }
            let (started, mut rec) = (Instant::now(), Recorder::new(events));
            let thread = match (&self.sessions, &query.thread_id) {
                (Some(sessions), Some(thread)) => Some((sessions, thread.as_str())),
                _ => None,
            };
            let turns = match thread {
                Some((sessions, thread)) => {
                    let turns = sessions.store.turns(thread).await;
                    rec.step(TraceStep::Thread {
                        id: thread.to_owned(),
                        new: turns.is_empty(),
                        turns: turns.len(),
                    });
                    turns
                }
                None => Vec::new(),
            };
            let turns = match &query.filters.access {
                Some(access) if !turns.is_empty() => self.readable_turns(turns, access).await,
                _ => turns,
            };
            // A follow-up ("and in 2019?") is read against the thread's last turn before
            // anything else sees it: the guardrail would refuse it alone, the search miss.
            let resolved = match turns.last() {
                Some(last) => self.resolve_follow_up(query, last, &mut rec).await,
                None => None,
            };
            let query = resolved.as_ref().unwrap_or(query);
            if let Some(message) = self.guardrail(query.text(), &mut rec).await {
                return Ok(guardrail_reply(message, rec, started));
            }
            let mut run = self.begin(query, rec, started).await;
            run.conversation = conversation(&turns);
            // Steps that change what is searched before any strategy runs (a question the
            // session has already answered) belong here.
            let mut asked = None;
            if let Some((sessions, _)) = thread {
                let turn = self.turn_of(sessions, query, &run.analysis).await;
                let question = Asked {
                    normalized: turn.normalized.clone(),
                    error_signature: turn.error_signature.as_deref(),
                    embedding: turn.embedding.as_deref(),
                };
                if query.on_repeat == OnRepeat::Reuse {
                    if let Some((earlier, matched_by)) =
                        question.repeats(&turns, sessions.similarity)
                    {
                        return Ok(run.repeat(earlier, matched_by));
                    }
                }
                asked = Some(turn);
            }
            if strategy != Strategy::Auto {
                let reason = match query.strategy {
                    Some(_) => StrategyReason::Requested,
                    None => StrategyReason::Configured,
                };
                run.rec.step(TraceStep::Strategy {
                    chosen: strategy,
                    reason,
                });
            }
            let ending = implementation(strategy).run(&mut run).await;
            let response = run.finish(ending);
            if let (Some((sessions, thread)), Some(turn)) = (thread, asked) {
                let turn = Turn {
                    response: response.clone(),
                    ..turn
                };
                sessions.store.record(thread, turn).await;
            }
            Ok(response)
        }
        .instrument(span)
        .await
    }

    /// The turns whose responses `access` may still read in full. A turn was answered under
    /// the access lists of its time; a list narrowed since (by this process or another) must
    /// not come back through a repeat, a follow-up's reading or the conversation the writer
    /// reads, so a turn showing any hit the asker can no longer read is left out whole.
    async fn readable_turns(&self, turns: Vec<Turn>, access: &Access) -> Vec<Turn> {
        let shown = turns.iter().flat_map(|t| t.response.hits.iter());
        let unreadable = self.executor.unreadable(shown, access).await;
        if unreadable.is_empty() {
            return turns;
        }
        turns
            .into_iter()
            .filter(|turn| {
                !turn
                    .response
                    .hits
                    .iter()
                    .any(|hit| unreadable.contains(&(hit.backend.clone(), hit.id.0.clone())))
            })
            .collect()
    }

    /// What a session keeps of `query`, before its response is known.
    async fn turn_of(&self, sessions: &Sessions, query: &Query, analysis: &Analysis) -> Turn {
        Turn {
            number: 0,
            question: query.text().to_owned(),
            normalized: normalized(query.text()),
            error_signature: error_signature(query.text(), analysis),
            embedding: sessions.embed(query.text()).await,
            response: Response::message("", StopReason::Answered, Default::default()),
            at: SystemTime::now(),
        }
    }

    /// Find the model file `request` names on the model hubs among the backends (those whose
    /// capabilities declare one), within `budget`: the response's `model_file` holds the status
    /// and the ranked candidates, its answer the best one, its trace the plan, each call and
    /// the ranking. A file name is not a question: the guardrail and the question's analysis by
    /// a model do not run, and no thread remembers it.
    pub async fn find_model(
        &self,
        request: &FileRequest,
        budget: Budget,
        events: Option<UnboundedSender<Event>>,
    ) -> Result<Response, FerretError> {
        let query = Query::new(request.file_name.as_str())?
            .with_budget(budget)
            .with_strategy(Strategy::FindModel);
        self.find_model_for(&query, Some(request), events).await
    }

    /// The finder's run for `query`, of `request` when given, else of the file `query` names.
    async fn find_model_for(
        &self,
        query: &Query,
        request: Option<&FileRequest>,
        events: Option<UnboundedSender<Event>>,
    ) -> Result<Response, FerretError> {
        let strategy = Strategy::FindModel;
        let span = tracing::info_span!("find_model", file = %query.text());
        with_model_budget(
            model_budget(query),
            async {
                query.budget.validate()?;
                self.config.validate_for(strategy)?;
                let mut rec = Recorder::new(events);
                rec.step(TraceStep::Strategy {
                    chosen: strategy,
                    reason: StrategyReason::Job,
                });
                // The heuristic reading costs nothing and fills the run; there is no question
                // to ask a model about, nor a query to write per form.
                let analysis = HeuristicAnalyzer.analysis(query.text());
                let mut run = self.start(query, analysis, rec, Instant::now());
                run.file_request = request.cloned();
                let ending = implementation(strategy).run(&mut run).await;
                Ok(run.finish(ending))
            }
            .instrument(span),
        )
        .await
    }

    /// Start searching `query`: analyse it and write it in each form a backend reads.
    async fn begin<'a>(
        &'a self,
        query: &'a Query,
        mut rec: Recorder,
        started: Instant,
    ) -> SearchRun<'a> {
        let analysis = self.analyze(query, &mut rec).await;
        // The question in each form a configured backend reads, written once for the search.
        let mut asked = SearchQuery::plain(one_line(query.text()));
        for form in self.executor.query_forms() {
            let slot = match form {
                QueryForm::Keywords => continue,
                QueryForm::Question => &mut asked.question,
                QueryForm::Web => &mut asked.web,
            };
            let written = self
                .stages
                .rewriter
                .rewrite_for(query.text(), &analysis, form)
                .instrument(tracing::info_span!("rewrite"))
                .await;
            *slot = rec.stage(written).0;
        }
        SearchRun {
            asked,
            ..self.start(query, analysis, rec, started)
        }
    }

    fn start<'a>(
        &'a self,
        query: &'a Query,
        analysis: Analysis,
        rec: Recorder,
        started: Instant,
    ) -> SearchRun<'a> {
        SearchRun {
            stages: &self.stages,
            executor: &self.executor,
            config: &self.config,
            query,
            calls: CallBudget::new(query.budget.max_backend_calls, query.budget.wall_time)
                .with_paid_limit(query.budget.max_paid_units),
            gathered: Gathered::default(),
            rec,
            started,
            asked: SearchQuery::plain(one_line(query.text())),
            actions: None,
            conversation: Vec::new(),
            file_request: None,
            graded: crate::run::pasted_error(query.text(), &analysis),
            analysis,
        }
    }

    /// `query` rewritten to stand alone after the thread's `last` turn, when it leans on it.
    async fn resolve_follow_up(
        &self,
        query: &Query,
        last: &Turn,
        rec: &mut Recorder,
    ) -> Option<Query> {
        let output = self
            .stages
            .follow_up
            .resolve(query.text(), &last.prior())
            .instrument(tracing::info_span!("follow_up"))
            .await;
        let (resolved, implementation) = rec.stage(output);
        let resolved = query.clone().with_text(&resolved?).ok()?;
        rec.step(TraceStep::FollowUp {
            asked: query.text().to_owned(),
            resolved: resolved.text().to_owned(),
            implementation,
        });
        Some(resolved)
    }

    /// The guardrail's verdict on `question`: `None` to search, else the reply to give instead.
    async fn guardrail(&self, question: &str, rec: &mut Recorder) -> Option<String> {
        let intent = self
            .stages
            .classifier
            .classify(question)
            .instrument(tracing::info_span!("intent"))
            .await;
        let (intent, implementation) = rec.stage(intent);
        rec.step(TraceStep::Intent {
            outcome: intent.intent.as_str().to_owned(),
            reason: intent.reason.clone(),
            implementation,
        });
        (intent.intent != Intent::Search).then(|| {
            self.stages
                .guardrail
                .message_for(intent.intent)
                .unwrap_or(NOTHING_FOUND)
                .to_owned()
        })
    }

    /// Analyse the question and record the analysis in the trace.
    async fn analyze(&self, query: &Query, rec: &mut Recorder) -> Analysis {
        let analysis = self
            .stages
            .analyzer
            .analyze_in(query.text(), &query.context)
            .instrument(tracing::info_span!("analysis"))
            .await;
        let (analysis, implementation) = rec.stage(analysis);
        rec.step(TraceStep::Analysis {
            query_type: analysis.query_type.as_str().to_owned(),
            entities: analysis.entities.iter().map(|e| e.label()).collect(),
            complexity: analysis.complexity.as_str().to_owned(),
            implementation,
        });
        analysis
    }
}

/// The response to a question the guardrail does not search: its reply, and what the
/// guardrail spent.
fn guardrail_reply(message: String, mut rec: Recorder, started: Instant) -> Response {
    rec.emit(|| Event::Message {
        text: message.clone(),
    });
    let trace = std::mem::take(&mut rec.trace);
    let mut response = Response::message(message, StopReason::Guardrail, trace);
    response.usage = Usage {
        elapsed_ms: elapsed_ms(started),
        ..rec.llm.clone()
    };
    rec.emit(|| Event::Done {
        response: Box::new(response.clone()),
    });
    response
}

/// What the model calls of a search of `query` may spend: its per-call deadline, its wall time
/// from now and its tokens.
fn model_budget(query: &Query) -> ModelBudget {
    ModelBudget::new(
        Instant::now() + query.budget.wall_time,
        query.budget.call_deadline,
        query.budget.max_tokens,
    )
}
