//! Seed 003's ReWOO planner: a planner writes the whole plan up front as `#En = Tool[argument]`
//! steps whose arguments may use earlier steps' results; Ferret checks it before anything runs
//! (a bad plan gets one repair request, then the heuristic plan), an optional evaluator may send
//! it back, its steps run wave by wave (the steps of a wave concurrently), and a writer turns the
//! graded evidence into a report with sections and references, which an optional evaluator may
//! send back too. Everything is in the trace, and a [`PlanRecord`] keeps what a run found so the
//! report can be written again without calling a backend.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use ferret_core::text::term_set;
use ferret_core::{
    Citation, Event, FerretError, Hit, HitId, Implementation, Query, Report, ReportSection, Response, StageOutput,
    StopReason, TraceStep,
};
use ferret_exec::{dedup_and_fuse, normalize_query, CallBudget, ExecOutcome, ExecRequest, RRF_K};
use ferret_grading::{heuristic_relevance, GradingConfig, Quality};
use ferret_llm::{
    PlanEvaluationContext, PlanReply, PlanningContext, PromptSource, ReportEvaluationContext, ReportReply,
    ReportWritingContext, StageModel, ToolDescription, Verdict,
};
use ferret_query_intel::{Analysis, BridgeFinder, Complexity, HeuristicDecomposer, HeuristicRewriter, QuestionShape};
use ferret_synthesis::{check_citations, Answer, ExtractiveSynthesizer};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use crate::gathered::Gathered;
use crate::plan::{substitute, Plan, PlanStep};
use crate::recorder::Recorder;
use crate::refine::{elapsed_ms, Ending};
use crate::tools::{ToolBox, ToolRequest, SEARCH_TOOL};
use crate::Agent;

/// Settings of the planner strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanConfig {
    /// Most steps a plan may have.
    pub max_steps: usize,
    /// Times a plan evaluator may send the plan back.
    pub max_replans: u32,
    /// Times a report evaluator may send the report back.
    pub max_report_revisions: u32,
}

impl Default for PlanConfig {
    fn default() -> Self {
        Self { max_steps: 6, max_replans: 1, max_report_revisions: 1 }
    }
}

/// What a planner is asked: a first plan, or a corrected one when `previous_plan` is set.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The question to plan for.
    pub question: &'a str,
    /// What the analyzer made of it.
    pub analysis: &'a Analysis,
    /// The tools a step may call, as a prompt describes them.
    pub tools: &'a [ToolDescription],
    /// Most steps the plan may have.
    pub max_steps: usize,
    /// The plan that was rejected, when asking for a corrected one.
    pub previous_plan: Option<&'a str>,
    /// What is wrong with `previous_plan` (validation errors, an evaluator's feedback); empty
    /// for a first plan.
    pub problems: &'a [String],
}

/// Writes a plan: lines `#En = Tool[argument]`, each optionally after a `Plan: <reason>` line
/// (see [`Plan::parse`]). The text is checked by the agent, not by the planner.
#[async_trait]
pub trait Planner: Send + Sync {
    /// The plan's text for `request`.
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String>;
}

/// Judges a plan before it runs.
#[async_trait]
pub trait PlanEvaluator: Send + Sync {
    /// Is `plan` (canonical text, see [`Plan::render`]) good enough to answer `question`?
    async fn evaluate(&self, question: &str, plan: &str) -> StageOutput<Verdict>;
}

/// One plan step as the report writer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEvidence {
    /// The step's variable, as `E1`.
    pub variable: String,
    /// The tool it called.
    pub tool: String,
    /// The query it searched, earlier results substituted.
    pub query: String,
    /// The `Plan:` line written before the step, if any.
    pub reasoning: Option<String>,
    /// Positions in [`ReportRequest::evidence`] of the hits the step found, best first.
    pub hits: Vec<usize>,
}

/// What a report writer is given.
#[derive(Debug, Clone, Copy)]
pub struct ReportRequest<'a> {
    /// The question the report answers.
    pub question: &'a str,
    /// The plan that ran, as text.
    pub plan: &'a str,
    /// The steps that found evidence, in the order they ran.
    pub steps: &'a [StepEvidence],
    /// The hits graded relevant, best first: the report's sources.
    pub evidence: &'a [Hit],
    /// A report evaluator's feedback on the previous report, when it sent that one back.
    pub feedback: Option<&'a str>,
}

/// Writes the report.
#[async_trait]
pub trait ReportWriter: Send + Sync {
    /// A report answering `request.question` from `request.evidence`. Its `[n]` markers are
    /// 1-based positions in `request.evidence`; the agent drops those that point nowhere and
    /// renumbers the rest in order of first use.
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report>;
}

/// Judges a written report.
#[async_trait]
pub trait ReportEvaluator: Send + Sync {
    /// Does `report` (rendered as markdown, references included) answer `question` well enough?
    async fn evaluate(&self, question: &str, report: &str) -> StageOutput<Verdict>;
}

/// The planner strategy's stages. The evaluators are optional: without one, plans and reports
/// are taken as they are.
#[derive(Clone)]
pub struct PlanStages {
    /// Writes the plan.
    pub planner: Arc<dyn Planner>,
    /// Judges the plan before it runs, and may ask for another.
    pub plan_evaluator: Option<Arc<dyn PlanEvaluator>>,
    /// Writes the report.
    pub writer: Arc<dyn ReportWriter>,
    /// Judges the report, and may send it back.
    pub report_evaluator: Option<Arc<dyn ReportEvaluator>>,
}

impl PlanStages {
    /// The deterministic stages: the heuristic planner and writer, no evaluators.
    pub fn heuristic() -> Self {
        Self {
            planner: Arc::new(HeuristicPlanner),
            plan_evaluator: None,
            writer: Arc::new(HeuristicReportWriter::default()),
            report_evaluator: None,
        }
    }

    /// Every stage asks `model`, the planner and the writer falling back to their heuristic
    /// twins; both evaluators are on.
    pub fn with_model(model: StageModel) -> Self {
        Self {
            planner: Arc::new(LlmPlanner::new(model.clone())),
            plan_evaluator: Some(Arc::new(LlmPlanEvaluator::new(model.clone()))),
            writer: Arc::new(LlmReportWriter::new(model.clone(), HeuristicReportWriter::default())),
            report_evaluator: Some(Arc::new(LlmReportEvaluator::new(model))),
        }
    }
}

impl std::fmt::Debug for PlanStages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanStages")
            .field("plan_evaluator", &self.plan_evaluator.is_some())
            .field("report_evaluator", &self.report_evaluator.is_some())
            .finish_non_exhaustive()
    }
}

/// The planner without a model. `#E1` searches the question (rewritten for search engines); a
/// complex question adds one search per part the [`HeuristicDecomposer`] finds; a bridge
/// question (one that names a thing and asks about another its document names, as
/// [`BridgeFinder::shape`] decides) adds `#E2 = search[#E1]`, a search for the name the first
/// results lead to. Never more than `max_steps` steps (at least one); previous plans and
/// problems are ignored: the same request gets the same plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicPlanner;

impl HeuristicPlanner {
    /// The plan's text, synchronously.
    pub fn plan_text(&self, request: &PlanRequest<'_>) -> String {
        let tool = request
            .tools
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(SEARCH_TOOL))
            .or(request.tools.first())
            .map_or(SEARCH_TOOL, |t| t.name.as_str());
        let max_steps = request.max_steps.max(1);
        let question = without_references(&one_line(request.question));
        let first = match HeuristicRewriter.rewritten(&question, request.analysis) {
            rewritten if rewritten.trim().is_empty() => question.clone(),
            rewritten => rewritten,
        };
        let mut steps: Vec<(&str, String)> = vec![("Find material on the question as a whole.", first.clone())];
        if request.analysis.complexity == Complexity::Complex {
            let mut seen: Vec<HashSet<String>> = vec![term_set(&first)];
            for part in HeuristicDecomposer.sub_queries(&question, request.analysis, max_steps.saturating_sub(1)) {
                let terms = term_set(&part);
                if !terms.is_empty() && !seen.contains(&terms) {
                    seen.push(terms);
                    steps.push(("Find material on one part of the question.", one_line(&part)));
                }
            }
        } else if BridgeFinder::default().shape(&question, request.analysis) == QuestionShape::Bridge {
            steps.push(("Follow the name the first results lead to.", "#E1".to_owned()));
        }
        steps.truncate(max_steps);
        let mut text = String::new();
        for (n, (reasoning, argument)) in steps.iter().enumerate() {
            text.push_str(&format!("Plan: {reasoning}\n#E{} = {tool}[{argument}]\n", n + 1));
        }
        text
    }
}

#[async_trait]
impl Planner for HeuristicPlanner {
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String> {
        StageOutput::heuristic(self.plan_text(request))
    }
}

/// The planner that asks a model (seed 003's LeadResearcher), falling back to the
/// [`HeuristicPlanner`] when the model fails or answers with no plan.
#[derive(Debug, Clone)]
pub struct LlmPlanner {
    model: StageModel,
}

impl LlmPlanner {
    /// A planner asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl Planner for LlmPlanner {
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String> {
        let context = PlanningContext {
            question: request.question.to_owned(),
            tools: request.tools.to_vec(),
            max_steps: u32::try_from(request.max_steps).unwrap_or(u32::MAX),
            previous_plan: request.previous_plan.map(str::to_owned),
            problems: request.problems.to_vec(),
        };
        let accept = |reply: PlanReply| {
            let text = reply.plan.trim();
            if text.is_empty() {
                Err("the plan is empty".to_owned())
            } else {
                Ok(text.to_owned())
            }
        };
        self.model.run(&context, 400, accept, HeuristicPlanner.plan(request)).await
    }
}

/// A verdict from an evaluator that could not judge: nothing is sent back.
fn pass() -> Verdict {
    Verdict { acceptable: true, feedback: String::new() }
}

/// A rejection must say what to change, or the next draft cannot do better.
fn with_feedback(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict { acceptable: false, feedback } if feedback.trim().is_empty() => {
            Verdict { acceptable: false, feedback: "the evaluator gave no reason".to_owned() }
        }
        Verdict { acceptable, feedback } => Verdict { acceptable, feedback: feedback.trim().to_owned() },
    }
}

/// The plan evaluator of seed 003, with a model. When the model fails the plan passes, and the
/// trace says why.
#[derive(Debug, Clone)]
pub struct LlmPlanEvaluator {
    model: StageModel,
}

impl LlmPlanEvaluator {
    /// An evaluator asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl PlanEvaluator for LlmPlanEvaluator {
    async fn evaluate(&self, question: &str, plan: &str) -> StageOutput<Verdict> {
        let context = PlanEvaluationContext { question: question.to_owned(), plan: plan.to_owned() };
        let fallback = async { StageOutput::heuristic(pass()) };
        self.model.run(&context, 160, |verdict: Verdict| Ok(with_feedback(verdict)), fallback).await
    }
}

/// The post-report evaluator of seed 003, with a model. When the model fails the report passes,
/// and the trace says why.
#[derive(Debug, Clone)]
pub struct LlmReportEvaluator {
    model: StageModel,
}

impl LlmReportEvaluator {
    /// An evaluator asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl ReportEvaluator for LlmReportEvaluator {
    async fn evaluate(&self, question: &str, report: &str) -> StageOutput<Verdict> {
        let context = ReportEvaluationContext { question: question.to_owned(), report: report.to_owned() };
        let fallback = async { StageOutput::heuristic(pass()) };
        self.model.run(&context, 160, |verdict: Verdict| Ok(with_feedback(verdict)), fallback).await
    }
}

/// The writer without a model: one section per step that found evidence, in plan order, headed
/// by the step's query ("Overview" for the question itself), its text the
/// [`ExtractiveSynthesizer`]'s answer to that query from the step's hits. A hit one section
/// cites is left to it, so sections do not repeat each other: focused steps choose first, a
/// search of the whole question gets what they left, and a step left with nothing gets no
/// section. A section cites only the hits a grader would keep for its query. Feedback is ignored.
#[derive(Debug, Clone, Default)]
pub struct HeuristicReportWriter {
    synthesizer: ExtractiveSynthesizer,
}

impl HeuristicReportWriter {
    /// A writer picking sentences with `synthesizer`.
    pub fn new(synthesizer: ExtractiveSynthesizer) -> Self {
        Self { synthesizer }
    }

    /// The report, synchronously.
    pub fn report(&self, request: &ReportRequest<'_>) -> Report {
        let question_terms = term_set(request.question);
        let is_overview = |step: &StepEvidence| {
            let terms = term_set(&step.query);
            !terms.is_empty() && terms == question_terms
        };
        // Focused steps choose first: a search of the whole question finds a bit of everything,
        // and its section keeps what the others left.
        let mut order: Vec<usize> = (0..request.steps.len()).collect();
        order.sort_by_key(|&i| is_overview(&request.steps[i]));
        let mut cited: HashSet<usize> = HashSet::new();
        let mut sections: Vec<(usize, ReportSection)> = Vec::new();
        for i in order {
            let step = &request.steps[i];
            let mut positions: Vec<usize> =
                step.hits.iter().copied().filter(|p| *p < request.evidence.len() && !cited.contains(p)).collect();
            // A search also finds results that merely share a word with its query: a section
            // cites only those a grader would keep.
            let found: Vec<Hit> = positions.iter().map(|&p| request.evidence[p].clone()).collect();
            let judged = heuristic_relevance(&step.query, &found);
            let keep = GradingConfig::default();
            positions = positions.into_iter().zip(judged).filter(|(_, j)| keep.is_kept(j.relevance)).map(|(p, _)| p).collect();
            if positions.is_empty() {
                continue;
            }
            let hits: Vec<Hit> = positions.iter().map(|&p| request.evidence[p].clone()).collect();
            let answer = self.synthesizer.answer(&step.query, &hits);
            if answer.text.trim().is_empty() {
                continue;
            }
            // The answer's markers number its citations; each becomes the hit's evidence position.
            let position_of = |marker: usize| -> Option<usize> {
                let id = &answer.citations.get(marker.checked_sub(1)?)?.hit_id;
                hits.iter().position(|h| &h.id == id).map(|i| positions[i])
            };
            let text = map_markers(&answer.text, |marker| position_of(marker).map(|p| p + 1));
            cited.extend((1..=answer.citations.len()).filter_map(position_of));
            let heading = if is_overview(step) {
                "Overview".to_owned()
            } else {
                capitalized(&cut_chars(&step.query, MAX_HEADING_CHARS))
            };
            sections.push((i, ReportSection { heading, text }));
        }
        sections.sort_by_key(|(i, _)| *i);
        let sections = sections.into_iter().map(|(_, section)| section).collect();
        Report { title: cut_chars(&one_line(request.question), MAX_TITLE_CHARS), sections }
    }
}

#[async_trait]
impl ReportWriter for HeuristicReportWriter {
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report> {
        StageOutput::heuristic(self.report(request))
    }
}

/// The writer that asks a model (seed 003's WriterAgent). A report is accepted when it has a
/// section with text and cites at least one source; markers that point at no source are
/// dropped. Otherwise, or when the model fails, the heuristic writer writes it.
#[derive(Debug, Clone)]
pub struct LlmReportWriter {
    model: StageModel,
    fallback: HeuristicReportWriter,
}

impl LlmReportWriter {
    /// A writer asking `model`, falling back to `fallback`.
    pub fn new(model: StageModel, fallback: HeuristicReportWriter) -> Self {
        Self { model, fallback }
    }
}

#[async_trait]
impl ReportWriter for LlmReportWriter {
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report> {
        let context = ReportWritingContext {
            question: request.question.to_owned(),
            plan: request.plan.to_owned(),
            sources: PromptSource::numbered(request.evidence),
            feedback: request.feedback.map(str::to_owned),
        };
        let accept = |reply: ReportReply| {
            let sections: Vec<ReportSection> = reply
                .sections
                .into_iter()
                .map(|s| ReportSection { heading: s.heading.trim().to_owned(), text: s.text.trim().to_owned() })
                .filter(|s| !s.text.is_empty())
                .collect();
            if sections.is_empty() {
                return Err("the report has no section with text".to_owned());
            }
            let joined: Vec<&str> = sections.iter().map(|s| s.text.as_str()).collect();
            let checked = check_citations(&joined.join("\n"), request.evidence);
            if checked.citations.is_empty() {
                return Err(format!(
                    "the report cites none of the {} sources ({} invalid markers)",
                    request.evidence.len(),
                    checked.dropped_markers
                ));
            }
            let title = match reply.title.trim() {
                "" => cut_chars(&one_line(request.question), MAX_TITLE_CHARS),
                title => title.to_owned(),
            };
            Ok(Report { title, sections })
        };
        self.model.run(&context, 900, accept, self.fallback.write(request)).await
    }
}

/// One step of a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedStep {
    /// The step's variable, as `E1`.
    pub variable: String,
    /// The tool called.
    pub tool: String,
    /// The argument, earlier results substituted.
    pub argument: String,
    /// The `Plan:` line written before the step, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The query searched; `None` when the step did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Wall time of the step in milliseconds.
    pub duration_ms: u64,
    /// Why the step could not run, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it found, best first.
    pub hits: Vec<Hit>,
}

/// An evaluator's verdict in a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedVerdict {
    /// `plan` or `report`.
    pub subject: String,
    /// Whether it passed.
    pub acceptable: bool,
    /// What to change, when it did not.
    pub feedback: String,
}

/// What a planner run found, to keep on disk and write the report again from
/// ([`Agent::replay_plan`]) without calling a backend: the question, the plan that ran, each
/// step with its hits, and the evaluators' verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The question.
    pub question: String,
    /// Hits the response listed at most (the query's limit).
    pub limit: usize,
    /// The plan that ran, one `#En = Tool[argument]` step per line.
    pub plan: String,
    /// Problems found in earlier drafts of the plan.
    #[serde(default)]
    pub problems: Vec<String>,
    /// The steps, in the order they ran.
    pub steps: Vec<RecordedStep>,
    /// The evaluators' verdicts, in order.
    #[serde(default)]
    pub verdicts: Vec<RecordedVerdict>,
    /// The budget ran out before every step ran.
    #[serde(default)]
    pub budget_exhausted: bool,
}

/// A [`PlanRecord`] that could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum PlanRecordError {
    /// The file could not be read or written.
    #[error("plan record {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a plan record.
    #[error("plan record {}: not a plan record: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What does not parse.
        source: serde_json::Error,
    },
}

impl PlanRecord {
    /// Write the record to `path` as JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PlanRecordError> {
        let path = path.as_ref();
        let json = serde_json::to_string_pretty(self)
            .map_err(|source| PlanRecordError::Format { path: path.into(), source })?;
        std::fs::write(path, json).map_err(|source| PlanRecordError::Io { path: path.into(), source })
    }

    /// Read a record [`PlanRecord::save`] wrote.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, PlanRecordError> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|source| PlanRecordError::Io { path: path.into(), source })?;
        serde_json::from_str(&json).map_err(|source| PlanRecordError::Format { path: path.into(), source })
    }
}

/// Longest section heading, in characters.
const MAX_HEADING_CHARS: usize = 80;
/// Longest report title, in characters.
const MAX_TITLE_CHARS: usize = 160;
/// Separates sections while their markers are checked together; never in a section's text.
const SECTION_BREAK: char = '\u{1e}';

/// A plan that passed validation, and who wrote it.
struct Drafted {
    plan: Plan,
    implementation: Implementation,
}

/// What the planning phase works with.
struct Planning<'a> {
    question: &'a str,
    analysis: &'a Analysis,
    tools: Vec<ToolDescription>,
    names: Vec<&'a str>,
    max_steps: usize,
    max_tokens: u64,
}

/// A step ready to run: its request, or why it cannot run.
struct Prepared<'a> {
    step: &'a PlanStep,
    argument: String,
    request: Result<ToolRequest, String>,
}

impl Agent {
    /// Run the planner strategy for `query` (the guardrail and analysis already done).
    pub(crate) async fn run_plan(
        &self,
        query: &Query,
        analysis: &Analysis,
        rec: Recorder,
        started: Instant,
    ) -> Response {
        self.plan_and_run(query, analysis, rec, started).await.0
    }

    /// Run the planner strategy for `query` whatever the configured strategy, and hand back the
    /// record of the run with the response, to [`PlanRecord::save`] and [`Agent::replay_plan`]
    /// later. The question is analysed first; the guardrail does not run (asking for a plan is
    /// asking to search). Sends every step to `events` when a sender is given.
    ///
    /// Fails only when the search cannot start (an unusable budget).
    pub async fn run_plan_recorded(
        &self,
        query: &Query,
        events: Option<UnboundedSender<Event>>,
    ) -> Result<(Response, PlanRecord), FerretError> {
        query.budget.validate()?;
        self.config.validate()?;
        let started = Instant::now();
        let mut rec = Recorder::new(events);
        let analysis = self.analyze(query.text(), &mut rec).await;
        let span = tracing::info_span!("plan", question = %query.text());
        Ok(self.plan_and_run(query, &analysis, rec, started).instrument(span).await)
    }

    /// Write the report of a recorded run again from the hits it found, without calling a
    /// backend: grading, the writer and the report evaluator run as configured (a model-backed
    /// one asks its model again). The trace holds the recorded plan and steps.
    pub async fn replay_plan(&self, record: &PlanRecord, events: Option<UnboundedSender<Event>>) -> Response {
        let started = Instant::now();
        let mut rec = Recorder::new(events);
        let mut gathered = Gathered::default();
        rec.step(TraceStep::Plan {
            plan: record.plan.clone(),
            problems: record.problems.clone(),
            implementation: Implementation::Heuristic { why: "replayed from a record".into() },
        });
        for (round, step) in record.steps.iter().enumerate() {
            let outcome = ExecOutcome { hits: step.hits.clone(), ..ExecOutcome::default() };
            let (_, new_results) = gathered.absorb(outcome, round as u32 + 1, &mut rec);
            rec.step(plan_step_trace(step, new_results));
        }
        let mut replayed = PlanRecord { verdicts: Vec::new(), ..record.clone() };
        self.conclude(u64::MAX, gathered, rec, started, &mut replayed).await
    }

    /// Plan, run the plan and write the report; the response and the record of the run.
    async fn plan_and_run(
        &self,
        query: &Query,
        analysis: &Analysis,
        mut rec: Recorder,
        started: Instant,
    ) -> (Response, PlanRecord) {
        let question = query.text();
        let budget = &query.budget;
        let tools = ToolBox::new(&self.executor, self.config.tool_loop.recent_entries);
        let planning = Planning {
            question,
            analysis,
            tools: tools.descriptions(),
            names: tools.names(),
            max_steps: self.config.plan.max_steps.max(1),
            max_tokens: budget.max_tokens,
        };
        let mut record = PlanRecord {
            question: question.to_owned(),
            limit: query.limit,
            plan: String::new(),
            problems: Vec::new(),
            steps: Vec::new(),
            verdicts: Vec::new(),
            budget_exhausted: false,
        };
        let plan = self.settle_plan(&planning, &mut rec, &mut record).instrument(tracing::info_span!("planning")).await;

        let calls = CallBudget::new(budget.max_backend_calls, budget.wall_time);
        let mut gathered = Gathered::default();
        let mut runs: Vec<RecordedStep> = Vec::new();
        let mut results: HashMap<String, String> = HashMap::new();
        let mut exhausted = false;
        for (number, wave) in plan.waves().iter().enumerate() {
            exhausted |= calls.is_exhausted() || started.elapsed() >= budget.wall_time;
            let prepared: Vec<Prepared<'_>> = wave
                .iter()
                .map(|&i| {
                    let step = &plan.steps[i];
                    let argument = substitute(&step.argument, &results);
                    let request = if exhausted {
                        Err("not run: the budget ran out".to_owned())
                    } else if let Some(empty) =
                        step.depends_on.iter().find(|d| results.get(d.as_str()).is_none_or(|r| r.is_empty()))
                    {
                        Err(format!("not run: #{empty} found nothing to use in its place"))
                    } else {
                        tools.request(&step.tool, &argument, &query.filters, question).map_err(|e| e.to_string())
                    };
                    Prepared { step, argument, request }
                })
                .collect();
            let limit = self.config.hits_per_call.max(query.limit);
            let outcomes = futures::future::join_all(prepared.iter().map(|p| async {
                let Ok(request) = &p.request else { return (None, 0) };
                let step_started = Instant::now();
                let exec = ExecRequest {
                    queries: std::slice::from_ref(&request.query),
                    filters: &request.filters,
                    limit,
                    call_deadline: budget.call_deadline,
                    backend: request.backend.as_deref(),
                };
                let outcome = self.executor.execute_on(&exec, &calls).await;
                (Some(outcome), elapsed_ms(step_started))
            }))
            .instrument(tracing::info_span!("wave", number = number + 1))
            .await;
            for (p, (outcome, duration_ms)) in prepared.into_iter().zip(outcomes) {
                let (hits, new_results) = match outcome {
                    Some(outcome) => {
                        exhausted |= outcome.budget_exhausted;
                        gathered.absorb(outcome, runs.len() as u32 + 1, &mut rec)
                    }
                    None => (Vec::new(), 0),
                };
                let query_text = p.request.as_ref().ok().map(|r| r.query.clone());
                let result = query_text.as_deref().map(|q| step_result(q, &hits)).unwrap_or_default();
                results.insert(p.step.variable.clone(), result);
                let step = RecordedStep {
                    variable: p.step.variable.clone(),
                    tool: p.request.as_ref().map_or_else(|_| p.step.tool.clone(), |r| r.tool.clone()),
                    argument: p.argument,
                    reasoning: p.step.reasoning.clone(),
                    query: query_text,
                    duration_ms,
                    error: p.request.err(),
                    hits,
                };
                rec.step(plan_step_trace(&step, new_results));
                runs.push(step);
            }
        }
        record.budget_exhausted = exhausted;
        record.steps = runs;
        let response = self.conclude(budget.max_tokens, gathered, rec, started, &mut record).await;
        (response, record)
    }

    /// A plan that passed validation and, when there is a plan evaluator, its review (at most
    /// `max_replans` replans); recorded in the trace and in `record`.
    async fn settle_plan(&self, planning: &Planning<'_>, rec: &mut Recorder, record: &mut PlanRecord) -> Plan {
        let mut problems: Vec<String> = Vec::new();
        let mut drafted = self.draft_plan(planning, None, &[], &mut problems, rec).await;
        if let Some(evaluator) = &self.stages.plan.plan_evaluator {
            let mut replans = 0;
            while rec.llm_tokens() < planning.max_tokens {
                let text = drafted.plan.render();
                let verdict = evaluator
                    .evaluate(planning.question, &text)
                    .instrument(tracing::info_span!("plan_evaluation"))
                    .await;
                let (verdict, implementation) = rec.stage(verdict);
                record_verdict("plan", &verdict, implementation, rec, record);
                if verdict.acceptable || replans >= self.config.plan.max_replans {
                    break;
                }
                replans += 1;
                let problem = format!("the plan evaluator sent the plan back: {}", verdict.feedback);
                problems.push(problem.clone());
                drafted = self.draft_plan(planning, Some(&text), &[problem], &mut problems, rec).await;
            }
        }
        let text = drafted.plan.render();
        rec.step(TraceStep::Plan {
            plan: text.clone(),
            problems: problems.clone(),
            implementation: drafted.implementation,
        });
        record.plan = text;
        record.problems = problems;
        drafted.plan
    }

    /// Ask the planner for a plan (a corrected one when `previous` is set) and check it; a
    /// rejected plan gets one repair request, and when that is rejected too the heuristic
    /// planner's plan runs. Every rejection is added to `trail`.
    async fn draft_plan(
        &self,
        planning: &Planning<'_>,
        previous: Option<&str>,
        problems: &[String],
        trail: &mut Vec<String>,
        rec: &mut Recorder,
    ) -> Drafted {
        let request = PlanRequest {
            question: planning.question,
            analysis: planning.analysis,
            tools: &planning.tools,
            max_steps: planning.max_steps,
            previous_plan: previous,
            problems,
        };
        let planner = &self.stages.plan.planner;
        let (text, implementation) = rec.stage(planner.plan(&request).await);
        let first = match Plan::parse(&text, &planning.names, planning.max_steps) {
            Ok(plan) => return Drafted { plan, implementation },
            Err(error) => error.to_string(),
        };
        trail.push(first.clone());
        let by_model = matches!(implementation, Implementation::Llm { .. });
        let second = if rec.llm_tokens() < planning.max_tokens {
            let repair_problems = [first.clone()];
            let repair = PlanRequest { previous_plan: Some(&text), problems: &repair_problems, ..request };
            let (text, implementation) = rec.stage(planner.plan(&repair).await);
            match Plan::parse(&text, &planning.names, planning.max_steps) {
                Ok(plan) => return Drafted { plan, implementation },
                Err(error) => {
                    trail.push(error.to_string());
                    error.to_string()
                }
            }
        } else {
            "no tokens were left for a repair request".to_owned()
        };
        let whose = if by_model { "the model's plan" } else { "the planner's plan" };
        let why = format!("{whose} was rejected twice: {first}; then {second}");
        let plan = Plan::parse(&HeuristicPlanner.plan_text(&request), &planning.names, planning.max_steps)
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "the heuristic plan was rejected; searching the question alone");
                let question = without_references(&one_line(planning.question));
                Plan { steps: vec![PlanStep::new("E1", SEARCH_TOOL, question, None)] }
            });
        Drafted { plan, implementation: Implementation::Heuristic { why } }
    }

    /// Grade what the steps of `record` found, write the report (revised at most
    /// `max_report_revisions` times when a report evaluator sends it back) and build the response.
    async fn conclude(
        &self,
        max_tokens: u64,
        gathered: Gathered,
        mut rec: Recorder,
        started: Instant,
        record: &mut PlanRecord,
    ) -> Response {
        let question = record.question.clone();
        let question = question.as_str();
        let evidence = self
            .evidence(question, record.limit.max(1), &record.steps, &mut rec)
            .instrument(tracing::info_span!("grading"))
            .await;
        let steps: Vec<StepEvidence> = record
            .steps
            .iter()
            .filter_map(|run| {
                let query = run.query.clone()?;
                let hits: Vec<usize> = run
                    .hits
                    .iter()
                    .filter_map(|h| evidence.iter().position(|e| e.backend == h.backend && e.id == h.id))
                    .collect();
                (!hits.is_empty()).then(|| StepEvidence {
                    variable: run.variable.clone(),
                    tool: run.tool.clone(),
                    query,
                    reasoning: run.reasoning.clone(),
                    hits,
                })
            })
            .collect();
        let mut written: Option<(Report, Answer)> = None;
        if !evidence.is_empty() {
            let mut feedback: Option<String> = None;
            let mut revisions = 0;
            loop {
                let request = ReportRequest {
                    question,
                    plan: &record.plan,
                    steps: &steps,
                    evidence: &evidence,
                    feedback: feedback.as_deref(),
                };
                let report = self.stages.plan.writer.write(&request).instrument(tracing::info_span!("writing")).await;
                let (report, implementation) = rec.stage(report);
                let Some((report, answer)) = finalize(report, &evidence) else {
                    break;
                };
                rec.step(answer.trace_step(implementation));
                let rendered = answer.text.clone();
                written = Some((report, answer));
                let Some(evaluator) = &self.stages.plan.report_evaluator else { break };
                if rec.llm_tokens() >= max_tokens {
                    break;
                }
                let verdict =
                    evaluator.evaluate(question, &rendered).instrument(tracing::info_span!("report_evaluation")).await;
                let (verdict, implementation) = rec.stage(verdict);
                record_verdict("report", &verdict, implementation, &mut rec, record);
                if verdict.acceptable || revisions >= self.config.plan.max_report_revisions {
                    break;
                }
                revisions += 1;
                feedback = Some(verdict.feedback);
            }
        }
        let stop_reason = if record.budget_exhausted {
            StopReason::BudgetExhausted
        } else if written.is_some() {
            StopReason::Answered
        } else {
            StopReason::NoProgress
        };
        let (report, answer) = written.map_or((None, None), |(report, answer)| (Some(report), Some(answer)));
        let hits = if answer.is_some() { evidence } else { Vec::new() };
        self.finish(Ending { stop_reason, hits, answer, report }, gathered, started, rec)
    }

    /// The hits the report is written from, best first, at most `limit`: every step's hits
    /// fused, each kept when the grader keeps it for the question or for the query of a step
    /// that found it (a step that follows a name finds documents about that name, which share
    /// few words with the question). Nothing when every grading found the results weak.
    async fn evidence(&self, question: &str, limit: usize, runs: &[RecordedStep], rec: &mut Recorder) -> Vec<Hit> {
        let lists: Vec<Vec<Hit>> = runs.iter().map(|r| r.hits.clone()).collect();
        let fused = dedup_and_fuse(&lists, RRF_K);
        if fused.is_empty() {
            return Vec::new();
        }
        let (mut grades, implementation) = rec.stage(self.stages.grader.grade(question, &fused).await);
        let asked = normalize_query(question);
        let mut graded: HashSet<String> = HashSet::from([asked]);
        for run in runs {
            let Some(query) = &run.query else { continue };
            if run.hits.is_empty() || !graded.insert(normalize_query(query)) {
                continue;
            }
            let (own, _) = rec.stage(self.stages.grader.grade(query, &run.hits).await);
            let kept: HashSet<&HitId> = own.per_hit.iter().filter(|g| g.kept).map(|g| &g.hit_id).collect();
            if quality_rank(own.quality) > quality_rank(grades.quality) {
                grades.quality = own.quality;
                grades.should_retry = false;
                grades.suggestion = None;
            }
            for (hit, grade) in fused.iter().zip(grades.per_hit.iter_mut()) {
                let found_here = run.hits.iter().any(|h| h.backend == hit.backend && h.id == hit.id);
                if found_here && kept.contains(&hit.id) && !grade.kept {
                    grade.kept = true;
                    grade.reason.push_str(&format!("; relevant to the step `{query}`"));
                }
            }
        }
        rec.step(grades.trace_step(1, implementation));
        if grades.quality == Quality::Low {
            return Vec::new();
        }
        fused.into_iter().zip(&grades.per_hit).filter(|(_, g)| g.kept).map(|(h, _)| h).take(limit).collect()
    }
}

fn quality_rank(quality: Quality) -> u8 {
    match quality {
        Quality::Low => 0,
        Quality::Medium => 1,
        Quality::High => 2,
    }
}

/// Record an evaluator's verdict in the trace and in the run's record.
fn record_verdict(
    subject: &str,
    verdict: &Verdict,
    implementation: Implementation,
    rec: &mut Recorder,
    record: &mut PlanRecord,
) {
    rec.step(TraceStep::Verdict {
        subject: subject.to_owned(),
        acceptable: verdict.acceptable,
        feedback: verdict.feedback.clone(),
        implementation,
    });
    record.verdicts.push(RecordedVerdict {
        subject: subject.to_owned(),
        acceptable: verdict.acceptable,
        feedback: verdict.feedback.clone(),
    });
}

fn plan_step_trace(step: &RecordedStep, new_results: usize) -> TraceStep {
    TraceStep::PlanStep {
        variable: step.variable.clone(),
        tool: step.tool.clone(),
        argument: step.argument.clone(),
        results: step.hits.len(),
        new_results,
        duration_ms: step.duration_ms,
        error: step.error.clone(),
    }
}

/// A step's result as later steps' arguments see it: a few words usable inside a query.
///
/// When the top hit is about something the step's query does not already name (its title's
/// words are not all in the query), the step found that thing: the result is the top hit's
/// title (`volcanoes of Sicily` → `Mount Etna`). When the top hit is about what the query names,
/// the answer is a name inside the results: the best name the multi-hop strategy's
/// [`BridgeFinder`] reads in them that the query does not contain (`director of The Visit` →
/// `M. Night Shyamalan`), or the title again when they name nothing new. Empty when the step
/// found nothing.
fn step_result(query: &str, hits: &[Hit]) -> String {
    let Some(top) = hits.first() else {
        return String::new();
    };
    let title = one_line(&top.title);
    let title_terms = term_set(&title);
    if !title_terms.is_subset(&term_set(query)) {
        return title;
    }
    BridgeFinder::default().bridge_entities(query, &[], hits).into_iter().next().unwrap_or(title)
}

/// The report with its markers checked against `evidence` and renumbered in order of first use
/// across all sections, and the answer rendering it as markdown with its reference list; `None`
/// when no section is left with text.
fn finalize(report: Report, evidence: &[Hit]) -> Option<(Report, Answer)> {
    let (headings, texts): (Vec<String>, Vec<String>) = report
        .sections
        .into_iter()
        .map(|s| (plain(&s.heading), s.text.replace(SECTION_BREAK, " ")))
        .filter(|(_, text)| !text.trim().is_empty())
        .unzip();
    if texts.is_empty() {
        return None;
    }
    let checked = check_citations(&texts.join(&format!("\n{SECTION_BREAK}\n")), evidence);
    let sections: Vec<ReportSection> = headings
        .into_iter()
        .zip(checked.text.split(SECTION_BREAK))
        .map(|(heading, text)| ReportSection { heading, text: text.trim().to_owned() })
        .filter(|s| !s.text.is_empty())
        .collect();
    if sections.is_empty() {
        return None;
    }
    let title = match plain(&report.title) {
        title if title.is_empty() => "Report".to_owned(),
        title => title,
    };
    let report = Report { title, sections };
    let text = render_markdown(&report, &checked.citations);
    let answer = Answer {
        text,
        citations: checked.citations,
        sentences: checked.sentences,
        dropped_markers: checked.dropped_markers,
    };
    Some((report, answer))
}

/// `# title`, a `## heading` and its text per section, then `## References`: `- [n] title (url)`.
fn render_markdown(report: &Report, citations: &[Citation]) -> String {
    let mut out = format!("# {}\n", report.title);
    for section in &report.sections {
        out.push_str(&format!("\n## {}\n\n{}\n", section.heading, section.text));
    }
    if !citations.is_empty() {
        out.push_str("\n## References\n\n");
        for citation in citations {
            out.push_str(&format!("- [{}] {}", citation.marker, plain(&citation.title)));
            if let Some(url) = &citation.url {
                out.push_str(&format!(" ({})", plain(url)));
            }
            out.push('\n');
        }
    }
    out
}

/// Each citation marker of `text` (`[n]`, `[n, m]`) with `map` applied to its numbers; numbers
/// `map` rejects are dropped, and a marker left empty goes. Other brackets stay as they are.
fn map_markers(text: &str, map: impl Fn(usize) -> Option<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let body = after.find(']').map(|close| &after[..close]).filter(|body| is_marker_body(body));
        match body {
            Some(body) => {
                let numbers: Vec<String> = body
                    .split(',')
                    .filter_map(|n| n.trim().parse::<usize>().ok())
                    .filter_map(&map)
                    .map(|n| n.to_string())
                    .collect();
                if !numbers.is_empty() {
                    out.push_str(&format!("[{}]", numbers.join(", ")));
                }
                rest = &after[body.len() + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_marker_body(body: &str) -> bool {
    body.split(',').all(|n| {
        let n = n.trim();
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Text for a heading, a title or a reference: one line, no leading `#`, and square brackets
/// made round so that nothing in it reads as a citation marker.
fn plain(text: &str) -> String {
    one_line(text).trim_start_matches('#').trim().replace('[', "(").replace(']', ")")
}

/// `text` with line breaks as spaces and runs of whitespace as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without the `#` of anything that reads as a plan reference (`#E1` becomes `E1`), so
/// that a question put in a plan cannot refer to a step.
fn without_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' {
            let mut ahead = chars.clone();
            if matches!(ahead.next(), Some('E' | 'e')) && ahead.next().is_some_and(|d| d.is_ascii_digit()) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` cut to `max` characters at a word boundary when it is longer, ending with `…`.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => {
            let head = &text[..at];
            let head = head.rfind(' ').map_or(head, |space| &head[..space]);
            format!("{}…", head.trim_end())
        }
    }
}

#[cfg(test)]
mod tests {
    use ferret_query_intel::HeuristicAnalyzer;

    use super::*;

    fn hit(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "b")
    }

    fn search_tool() -> Vec<ToolDescription> {
        vec![ToolDescription {
            name: "search".into(),
            description: "searches".into(),
            argument: Some("a query".into()),
        }]
    }

    fn heuristic_plan(question: &str, max_steps: usize) -> Plan {
        let analysis = HeuristicAnalyzer.analysis(question);
        let tools = search_tool();
        let request =
            PlanRequest { question, analysis: &analysis, tools: &tools, max_steps, previous_plan: None, problems: &[] };
        let text = HeuristicPlanner.plan_text(&request);
        Plan::parse(&text, &["search"], max_steps).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn the_heuristic_plan_searches_the_question_then_its_parts() {
        let plan = heuristic_plan("What causes volcanic eruptions? How do glaciers form?", 6);
        assert!(plan.steps.len() >= 3, "{plan:?}");
        assert!(plan.steps.iter().all(|s| s.tool == "search" && s.depends_on.is_empty()));
        assert_eq!(plan.waves().len(), 1, "the parts are independent");
        assert_eq!(heuristic_plan("What causes volcanic eruptions? How do glaciers form?", 2).steps.len(), 2);
        assert_eq!(heuristic_plan("What is BM25?", 6).steps.len(), 1);
    }

    #[test]
    fn a_bridge_question_follows_the_first_result() {
        let plan = heuristic_plan(
            "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?",
            6,
        );
        assert_eq!(plan.steps.len(), 2, "{plan:?}");
        assert_eq!(plan.steps[1].argument, "#E1");
        assert_eq!(plan.waves(), vec![vec![0], vec![1]]);
    }

    #[test]
    fn a_question_cannot_refer_to_a_step() {
        let plan = heuristic_plan("what does #E1 mean\nin #e2 plans", 6);
        assert!(plan.steps[0].depends_on.is_empty(), "{plan:?}");
        assert!(!plan.steps[0].argument.contains('\n'));
    }

    #[test]
    fn a_step_result_is_the_thing_found_or_the_name_it_leads_to() {
        let etna = [hit("1", "Mount Etna", "Mount Etna is an active volcano in Sicily.")];
        assert_eq!(step_result("volcanoes of Sicily", &etna), "Mount Etna");
        let visit = [hit(
            "2",
            "The Visit (2015 film)",
            "The Visit is a 2015 horror film written and directed by Night Shyamalan.",
        )];
        assert_eq!(step_result("director of The Visit 2015 film", &visit), "Night Shyamalan");
        assert_eq!(step_result("anything", &[]), "");
    }

    #[test]
    fn markers_are_mapped_and_other_brackets_kept() {
        let map = |n: usize| (n <= 2).then_some(n + 10);
        assert_eq!(map_markers("a [1]. b [2, 3] c [x] d [] e [3]", map), "a [11]. b [12] c [x] d [] e ");
        assert_eq!(map_markers("[", map), "[");
    }

    #[test]
    fn finalize_renumbers_across_sections_and_lists_references() {
        let evidence = [hit("a", "Alpha [draft]", "a"), hit("b", "Beta", "b"), hit("c", "Gamma", "c")];
        let report = Report {
            title: "# Q [1]".into(),
            sections: vec![
                ReportSection { heading: "One".into(), text: "First [3]. Second [9].".into() },
                ReportSection { heading: "Two [2]".into(), text: "Third [1][3].".into() },
                ReportSection { heading: "Empty".into(), text: "[7]".into() },
            ],
        };
        let (report, answer) = finalize(report, &evidence).unwrap();
        assert_eq!(report.title, "Q (1)");
        assert_eq!(report.sections.len(), 2, "{report:?}");
        assert_eq!(report.sections[0].text, "First [1]. Second.");
        assert_eq!(report.sections[1].heading, "Two (2)");
        assert_eq!(report.sections[1].text, "Third [2][1].");
        let ids: Vec<&str> = answer.citations.iter().map(|c| c.hit_id.0.as_str()).collect();
        assert_eq!(ids, ["c", "a"]);
        assert_eq!(answer.dropped_markers, 2);
        assert!(answer.text.starts_with("# Q (1)\n\n## One\n\nFirst [1]. Second.\n"), "{}", answer.text);
        assert!(answer.text.ends_with("## References\n\n- [1] Gamma\n- [2] Alpha (draft)\n"), "{}", answer.text);
    }

    #[test]
    fn the_heuristic_writer_gives_each_step_a_section_citing_evidence_positions() {
        let evidence = [
            hit("v", "Volcano", "Volcanic eruptions are caused by magma rising through the crust."),
            hit("g", "Glacier", "Glaciers form where snow accumulates faster than it melts."),
            hit("x", "Ash", "Volcanic ash from eruptions can darken glaciers."),
            hit("s", "Five Summer Stories", "A surf film, its premiere an eruption of cheers."),
        ];
        let step = |variable: &str, query: &str, hits: Vec<usize>| StepEvidence {
            variable: variable.into(),
            tool: "search".into(),
            query: query.into(),
            reasoning: None,
            hits,
        };
        let steps = [
            step("E1", "volcanic eruptions glaciers", vec![0, 1, 2, 3]),
            step("E2", "glaciers form", vec![1]),
            step("E3", "causes of volcanic eruptions", vec![0]),
        ];
        let request = ReportRequest {
            question: "volcanic eruptions glaciers",
            plan: "",
            steps: &steps,
            evidence: &evidence,
            feedback: None,
        };
        let report = HeuristicReportWriter::default().report(&request);
        let sections: Vec<(&str, &str)> =
            report.sections.iter().map(|s| (s.heading.as_str(), s.text.as_str())).collect();
        // The focused steps chose first; the overview keeps what they left that is relevant (not
        // the film sharing one word), and comes first.
        assert_eq!(
            sections,
            [
                ("Overview", "Volcanic ash from eruptions can darken glaciers [3]."),
                ("Glaciers form", "Glaciers form where snow accumulates faster than it melts [2]."),
                (
                    "Causes of volcanic eruptions",
                    "Volcanic eruptions are caused by magma rising through the crust [1]."
                ),
            ]
        );
        // A step whose hits were all cited by another gets no section.
        let repeated = [step("E1", "glaciers form", vec![1]), step("E2", "glaciers", vec![1])];
        let report = HeuristicReportWriter::default().report(&ReportRequest { steps: &repeated, ..request });
        assert_eq!(report.sections.len(), 1, "{report:?}");
    }

    #[test]
    fn helpers_keep_text_plain() {
        assert_eq!(without_references("#E1 and #e22 but #Each and C#"), "E1 and e22 but #Each and C#");
        assert_eq!(cut_chars("one two three", 9), "one two…");
        assert_eq!(cut_chars("short", 9), "short");
        assert_eq!(capitalized("élan"), "Élan");
    }
}
