//! The research run: classify the syllabus's references, write the brief, plan, run the plan
//! wave by wave (a wave's steps concurrently, the Documentalist's one at a time), and write the
//! note from what the searches found. The whole run is kept as a [`ResearchRecord`], from which
//! [`Researcher::replay`] writes the same note again without calling anything.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ferret_core::{Hit, Implementation, Report, ReportSection};
use ferret_knowledge::{Documentalist, Given, KnowledgeSource};
use ferret_plan::{
    substitute, ArgumentValue, Plan, PlanRecord, PlanStep, RecordedStep, RecordedVerdict,
    StepArguments,
};
use ferret_synthesis::{
    finalize_report, ReportEvaluator, ReportRequest, ReportWriter, StepEvidence,
};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::briefing::{BriefWriter, HeuristicBriefWriter};
use crate::plan::{heuristic_plan, DOCUMENTALIST, FILE_SEARCH, RESEARCH_TOOLS, WEB_SEARCH};
use crate::planning::{
    HeuristicResearchPlanner, ResearchPlanRequest, ResearchPlanner, RESEARCH_SIGNATURES,
};
use crate::{
    Classification, Reference, ResearchBrief, ResearchError, ResearchToolError, Syllabus, Target,
};

/// The searches a research run makes, answered by the caller's backends.
#[async_trait::async_trait]
pub trait ResearchTools: Send + Sync {
    /// Search the knowledge base for `query`: at most `limit` hits, best first.
    async fn file_search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, ResearchToolError>;

    /// Whether there is a web backend to search.
    fn searches_web(&self) -> bool;

    /// Search the web for `query`, on `site` (a host name) only when given and the backend can
    /// keep to one site.
    async fn web_search(
        &self,
        query: &str,
        site: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Hit>, ResearchToolError>;

    /// Documents were added to the knowledge base: searches must see them (a cache of earlier
    /// results is dropped).
    fn knowledge_changed(&self) {}
}

/// Limits of a research run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResearchConfig {
    /// Steps a plan may have, at most.
    pub max_steps: usize,
    /// Hits one search keeps.
    pub hits_per_search: usize,
    /// Times a rejected note goes back to the planner, at most.
    pub max_replans: usize,
}

impl Default for ResearchConfig {
    fn default() -> Self {
        Self {
            max_steps: 40,
            hits_per_search: 5,
            max_replans: 2,
        }
    }
}

/// Everything a research run did, as saved in its folder: enough to write its note again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchRecord {
    /// The syllabus's references, sorted.
    pub classification: Classification,
    /// The brief the plan was written from.
    pub brief: ResearchBrief,
    /// The plan, each step with what it found, as the planner strategy records its runs.
    pub run: PlanRecord,
    /// The rounds before it, whose notes the evaluator sent back, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<PlanRecord>,
    /// Who wrote the brief.
    pub briefed_by: Implementation,
    /// Who wrote the plan.
    pub planned_by: Implementation,
    /// Who wrote the note.
    pub written_by: Implementation,
    /// The note, as the reader got it.
    pub report: String,
    /// Searches made (a search over several web backends counts once).
    pub calls: usize,
    /// Model calls made: plans, notes, verdicts.
    #[serde(default)]
    pub model_calls: usize,
    /// How long the run took, in milliseconds.
    pub elapsed_ms: u64,
}

/// A research run's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ResearchOutcome {
    /// The record to save.
    pub record: ResearchRecord,
    /// The note, checked and with its references.
    pub report: Option<Report>,
}

/// Runs research: plans over the research tools, ingests through the Documentalist, writes the
/// note with the report writer.
pub struct Researcher {
    tools: Arc<dyn ResearchTools>,
    documentalist: Arc<Documentalist>,
    briefer: Arc<dyn BriefWriter>,
    planner: Arc<dyn ResearchPlanner>,
    writer: Arc<dyn ReportWriter>,
    evaluator: Option<Arc<dyn ReportEvaluator>>,
    config: ResearchConfig,
}

impl std::fmt::Debug for Researcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Researcher")
            .field("documentalist", &self.documentalist)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A plan that passed its checks, who wrote it, and the model calls it took.
struct Settled {
    plan: Plan,
    implementation: Implementation,
    model_calls: usize,
}

/// A written note: checked, as markdown, who wrote it and the model calls it took.
struct Note {
    report: Option<Report>,
    markdown: String,
    implementation: Implementation,
    model_calls: usize,
}

/// What one step produced: its record, its result for later steps, and whether it searched.
struct Ran {
    recorded: RecordedStep,
    result: Option<String>,
    searched: bool,
}

impl Researcher {
    /// A researcher searching with `tools`, adding references with `documentalist` and writing
    /// with `writer`; the rules plan, and no evaluator sends the note back.
    pub fn new(
        tools: Arc<dyn ResearchTools>,
        documentalist: Arc<Documentalist>,
        writer: Arc<dyn ReportWriter>,
        config: ResearchConfig,
    ) -> Self {
        Self {
            tools,
            documentalist,
            briefer: Arc::new(HeuristicBriefWriter),
            planner: Arc::new(HeuristicResearchPlanner),
            writer,
            evaluator: None,
            config,
        }
    }

    /// Write the brief with `briefer` (a model's, say).
    pub fn with_briefer(mut self, briefer: Arc<dyn BriefWriter>) -> Self {
        self.briefer = briefer;
        self
    }

    /// Plan with `planner` (a model's, say).
    pub fn with_planner(mut self, planner: Arc<dyn ResearchPlanner>) -> Self {
        self.planner = planner;
        self
    }

    /// Let `evaluator` judge each note: one it rejects goes back to the planner with its
    /// feedback.
    pub fn with_evaluator(mut self, evaluator: Arc<dyn ReportEvaluator>) -> Self {
        self.evaluator = Some(evaluator);
        self
    }

    /// Sort `syllabus`'s references against the knowledge base's registry.
    pub fn classify(&self, syllabus: &Syllabus) -> Result<Classification, ResearchError> {
        let names: std::collections::HashSet<String> = self
            .documentalist
            .registry()
            .entries()?
            .into_iter()
            .map(|e| e.name)
            .collect();
        Ok(syllabus.classify(&names))
    }

    /// Research `syllabus`: classify, brief, plan, run, write; a note the evaluator sends back
    /// goes to the planner with its feedback, at most [`ResearchConfig::max_replans`] times, and
    /// no more once the planner answers with the plan it sent back.
    pub async fn research(&self, syllabus: &Syllabus) -> Result<ResearchOutcome, ResearchError> {
        let started = Instant::now();
        let classification = self.classify(syllabus)?;
        let briefed = self.briefer.brief(syllabus).await;
        let brief = briefed.value;
        let question = format!("Research note: {}", brief.title);
        // The evaluator judges the note against the brief's themes, not only its title.
        let asked = match brief.themes.as_slice() {
            [] => question.clone(),
            themes => format!(
                "{question}, covering {}",
                themes
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let model_calls = AtomicUsize::new(briefed.llm_calls.len());
        let mut calls = 0;
        let mut verdicts: Vec<RecordedVerdict> = Vec::new();
        let mut sent_back: Option<(String, String)> = None;
        let mut earlier: Vec<(PlanRecord, Note)> = Vec::new();
        let mut added = HashSet::new();
        let (last, planned_by) = loop {
            let mut problems = Vec::new();
            let settled = self
                .settle_plan(&brief, &classification, sent_back.take(), &mut problems)
                .await?;
            model_calls.fetch_add(settled.model_calls, Ordering::Relaxed);
            let plan = settled.plan.render();
            // The same plan again would find the same things: the last note stands.
            if let Some(last) = earlier.pop_if(|(last, _)| last.plan == plan) {
                break (last, settled.implementation);
            }
            let (steps, made) = self
                .run_plan(&settled.plan, &classification, &mut added, &model_calls)
                .await;
            calls += made;
            let run = PlanRecord {
                question: question.clone(),
                limit: self.config.hits_per_search,
                plan,
                problems,
                steps,
                verdicts: verdicts.clone(),
                budget_exhausted: false,
            };
            let written = note(self.writer.as_ref(), &run, &brief).await;
            model_calls.fetch_add(written.model_calls, Ordering::Relaxed);
            let rejected = match self
                .evaluator
                .as_ref()
                .filter(|_| earlier.len() < self.config.max_replans)
            {
                Some(evaluator) => {
                    let verdict = evaluator.evaluate(&asked, &written.markdown).await;
                    model_calls.fetch_add(verdict.llm_calls.len(), Ordering::Relaxed);
                    let verdict = verdict.value;
                    verdicts.push(RecordedVerdict {
                        subject: "report".into(),
                        acceptable: verdict.acceptable,
                        feedback: verdict.feedback.clone(),
                    });
                    (!verdict.acceptable).then(|| match verdict.feedback.trim() {
                        "" => "the evaluator rejected the note without saying why".to_owned(),
                        feedback => format!("the note was rejected: {feedback}"),
                    })
                }
                None => None,
            };
            let run = PlanRecord {
                verdicts: verdicts.clone(),
                ..run
            };
            match rejected {
                Some(feedback) => {
                    sent_back = Some((run.plan.clone(), feedback));
                    earlier.push((run, written));
                }
                None => break ((run, written), settled.implementation),
            }
        };
        Ok(self.outcome(
            (classification, brief),
            (last.0, last.1, earlier),
            (briefed.implementation, planned_by),
            (calls, model_calls.into_inner()),
            started,
        ))
    }

    /// The outcome of a run whose last round is `run`, written as `written`.
    fn outcome(
        &self,
        (classification, brief): (Classification, ResearchBrief),
        (run, written, earlier): (PlanRecord, Note, Vec<(PlanRecord, Note)>),
        (briefed_by, planned_by): (Implementation, Implementation),
        (calls, model_calls): (usize, usize),
        started: Instant,
    ) -> ResearchOutcome {
        let record = ResearchRecord {
            classification,
            brief,
            run,
            earlier: earlier.into_iter().map(|(run, _)| run).collect(),
            briefed_by,
            planned_by,
            written_by: written.implementation,
            report: written.markdown,
            calls,
            model_calls,
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        ResearchOutcome {
            record,
            report: written.report,
        }
    }

    /// A plan that passed its checks: the planner's, after one repair request if its first was
    /// not valid, else the rules'. `sent_back` is a plan the evaluator rejected, with why.
    async fn settle_plan(
        &self,
        brief: &ResearchBrief,
        classification: &Classification,
        sent_back: Option<(String, String)>,
        problems: &mut Vec<String>,
    ) -> Result<Settled, ResearchError> {
        let check = |text: &str| -> Result<Plan, String> {
            let plan = Plan::parse_any(text, &RESEARCH_TOOLS, self.config.max_steps)
                .map_err(|e| e.to_string())?;
            plan.validate_arguments(&RESEARCH_SIGNATURES)
                .map_err(|e| e.to_string())?;
            Ok(plan)
        };
        let mut model_calls = 0;
        let (mut previous, mut asked) = match sent_back {
            Some((plan, why)) => (Some(plan), vec![why]),
            None => (None, Vec::new()),
        };
        for _attempt in 0..2 {
            let request = ResearchPlanRequest {
                brief,
                classification,
                max_steps: self.config.max_steps,
                previous_plan: previous.as_deref(),
                problems: &asked,
            };
            let written = self.planner.plan(&request).await;
            model_calls += written.llm_calls.len();
            match check(&written.value) {
                Ok(plan) => {
                    return Ok(Settled {
                        plan,
                        implementation: written.implementation,
                        model_calls,
                    })
                }
                Err(problem) => {
                    problems.push(problem.clone());
                    previous = Some(written.value);
                    asked = vec![problem];
                }
            }
        }
        let fallback = heuristic_plan(brief, classification, self.config.max_steps);
        let plan = check(&fallback).map_err(|problem| ResearchError::RulesPlan { problem })?;
        Ok(Settled {
            plan,
            implementation: Implementation::Heuristic {
                why: "the planner's plan was not valid twice".into(),
            },
            model_calls,
        })
    }

    /// Run `plan`: its Documentalist steps first, so that every search sees what they add,
    /// then the rest, each part wave by wave. The steps in plan order, and the searches made.
    async fn run_plan(
        &self,
        plan: &Plan,
        classification: &Classification,
        added: &mut HashSet<String>,
        model_calls: &AtomicUsize,
    ) -> (Vec<RecordedStep>, usize) {
        let mut results: HashMap<String, String> = HashMap::new();
        let mut steps: Vec<Option<RecordedStep>> = vec![None; plan.steps.len()];
        let mut calls = 0;
        let waves = plan.waves();
        for documentalist in [true, false] {
            for wave in &waves {
                let part: Vec<usize> = wave
                    .iter()
                    .copied()
                    .filter(|&i| (plan.steps[i].tool == DOCUMENTALIST) == documentalist)
                    .collect();
                if documentalist {
                    // One at a time, in plan order: each adds to the same index and registry.
                    for i in part {
                        let ran = self
                            .run_step(
                                &plan.steps[i],
                                &results,
                                classification,
                                Some(&mut *added),
                                model_calls,
                            )
                            .await;
                        if let Some(result) = ran.result {
                            results.insert(ran.recorded.variable.clone(), result);
                        }
                        steps[i] = Some(ran.recorded);
                    }
                    continue;
                }
                let runs = part.iter().map(|&i| {
                    let step = &plan.steps[i];
                    let results = &results;
                    async move {
                        let ran = self
                            .run_step(step, results, classification, None, model_calls)
                            .await;
                        (i, ran)
                    }
                });
                for (i, ran) in futures::future::join_all(runs).await {
                    if ran.searched {
                        calls += 1;
                    }
                    if let Some(result) = ran.result {
                        results.insert(ran.recorded.variable.clone(), result);
                    }
                    steps[i] = Some(ran.recorded);
                }
            }
        }
        (steps.into_iter().flatten().collect(), calls)
    }

    /// Write the note of `record` again from the hits it found: no search, no model. A note a
    /// model wrote is given back as it was; one the rules wrote is written again by the rules
    /// with the default grading, which is what `ferret research` writes with.
    pub async fn replay(record: &ResearchRecord) -> String {
        if matches!(record.written_by, Implementation::Llm { .. }) {
            return record.report.clone();
        }
        let writer = ferret_synthesis::HeuristicReportWriter::default();
        note(&writer, &record.run, &record.brief).await.markdown
    }

    /// Run one step. `added` is the run's set of pages already added, for a Documentalist
    /// step; `None` for a search.
    async fn run_step(
        &self,
        step: &PlanStep,
        results: &HashMap<String, String>,
        classification: &Classification,
        added: Option<&mut HashSet<String>>,
        model_calls: &AtomicUsize,
    ) -> Ran {
        let started = Instant::now();
        let mut recorded = RecordedStep {
            variable: step.variable.clone(),
            tool: step.tool.clone(),
            argument: substitute(&step.argument, results),
            reasoning: step.reasoning.clone(),
            query: None,
            duration_ms: 0,
            error: None,
            hits: Vec::new(),
        };
        let mut searched = false;
        let outcome = match step
            .depends_on
            .iter()
            .find(|d| !results.contains_key(d.as_str()))
        {
            Some(missing) => Err(format!("not run: #{missing} did not succeed")),
            None => match step.arguments() {
                Err(e) => Err(e.to_string()),
                Ok(arguments) => {
                    let text = |value: &ArgumentValue| value_text(value, results);
                    match (step.tool.as_str(), added) {
                        (DOCUMENTALIST, Some(added)) => match arguments.get("vector_store") {
                            None => Err("a Documentalist step needs vector_store".to_owned()),
                            Some(store) => {
                                // A reference that cannot be added is noted; the knowledge
                                // base is still there for the searches.
                                let context = Documenting {
                                    classification,
                                    added,
                                    model_calls,
                                };
                                if let Err(error) = self
                                    .document(&arguments, &text, context, &mut recorded)
                                    .await
                                {
                                    recorded.error = Some(error);
                                }
                                Ok(text(store))
                            }
                        },
                        (tool, _) => {
                            searched = tool == FILE_SEARCH
                                || (tool == WEB_SEARCH && self.tools.searches_web());
                            self.search(tool, &arguments, &text, &mut recorded).await
                        }
                    }
                }
            },
        };
        let result = match outcome {
            Ok(result) => Some(result),
            Err(error) => {
                recorded.error = Some(error);
                None
            }
        };
        recorded.duration_ms = started.elapsed().as_millis() as u64;
        Ran {
            recorded,
            result,
            searched,
        }
    }

    /// A search step: its result for the steps that refer to it (its first hit's title).
    async fn search(
        &self,
        tool: &str,
        arguments: &StepArguments,
        text: &dyn Fn(&ArgumentValue) -> String,
        recorded: &mut RecordedStep,
    ) -> Result<String, String> {
        let limit = self.config.hits_per_search;
        let query = arguments
            .positional
            .first()
            .map(text)
            .filter(|q| !q.trim().is_empty())
            .ok_or_else(|| format!("{tool} needs a query"))?;
        recorded.query = Some(query.clone());
        match tool {
            FILE_SEARCH => {
                recorded.hits = self
                    .tools
                    .file_search(&query, limit)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            WEB_SEARCH => {
                if !self.tools.searches_web() {
                    return Err("skipped: no web backend is configured".into());
                }
                let site = match arguments.positional.get(1).map(text) {
                    None => None,
                    Some(at) => Some(
                        site_of(&at)
                            .ok_or_else(|| format!("`{at}` is not a web address to keep to"))?,
                    ),
                };
                recorded.hits = self
                    .tools
                    .web_search(&query, site.as_deref(), limit)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            other => return Err(format!("there is no research tool `{other}`")),
        }
        Ok(first_title(&recorded.hits))
    }

    /// A Documentalist step's work: fetch and ingest a page the References list (`url=`), or
    /// check that a file is in the knowledge base (`name=` alone).
    async fn document(
        &self,
        arguments: &StepArguments,
        text: &dyn Fn(&ArgumentValue) -> String,
        context: Documenting<'_>,
        recorded: &mut RecordedStep,
    ) -> Result<(), String> {
        if let Some(url) = arguments.get("url").map(text) {
            recorded.query = Some(url.clone());
            // A page is fetched only when the syllabus lists it: never an address found in
            // retrieved text or made up by a model. What is fetched is the listed address.
            let reference =
                listed_for_ingestion(&url, context.classification).ok_or_else(|| {
                    format!(
                        "{url} is not listed in the syllabus's References: only those are fetched"
                    )
                })?;
            let Target::Url(listed) = &reference.target else {
                return Err(format!("{url} is listed as a file, not an address"));
            };
            if !context.added.insert(listed.to_string()) {
                recorded.query = Some(format!("{listed}: already added in this run"));
                return Ok(());
            }
            // What the syllabus wrote beside the address comes first; the plan fills the rest.
            let keywords = match reference.keywords.as_slice() {
                [] => arguments
                    .get("keywords")
                    .map(value_list)
                    .unwrap_or_default(),
                listed => listed.to_vec(),
            };
            let given = Given {
                title: reference
                    .title
                    .clone()
                    .or_else(|| arguments.get("name").map(text)),
                summary: reference
                    .text
                    .clone()
                    .or_else(|| arguments.get("text").map(text)),
                keywords,
            };
            let added = self
                .documentalist
                .add(KnowledgeSource::Url(listed.to_string()), given)
                .await
                .map_err(|e| e.to_string())?;
            context
                .model_calls
                .fetch_add(added.llm_calls.len(), Ordering::Relaxed);
            recorded.query = Some(format!("{listed} -> {}", added.entry.name));
            if added.change != ferret_knowledge::Change::Unchanged {
                self.tools.knowledge_changed();
            }
        } else if let Some(name) = arguments.get("name").map(text) {
            recorded.query = Some(name.clone());
            self.documentalist
                .registry()
                .find_by_name(&name)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{name} is not in the knowledge base"))?;
        }
        Ok(())
    }
}

/// What a Documentalist step works with beside its arguments.
struct Documenting<'a> {
    classification: &'a Classification,
    added: &'a mut HashSet<String>,
    model_calls: &'a AtomicUsize,
}

/// The note of a recorded run: its searches' hits as evidence, one section per search, the
/// brief's title as the note's.
async fn note(writer: &dyn ReportWriter, run: &PlanRecord, brief: &ResearchBrief) -> Note {
    let mut evidence: Vec<Hit> = Vec::new();
    let mut steps: Vec<StepEvidence> = Vec::new();
    for step in &run.steps {
        if step.tool == DOCUMENTALIST || step.hits.is_empty() {
            continue;
        }
        let mut positions = Vec::new();
        for hit in &step.hits {
            let at = match evidence.iter().position(|h| h.id == hit.id) {
                Some(at) => at,
                None => {
                    evidence.push(hit.clone());
                    evidence.len() - 1
                }
            };
            positions.push(at);
        }
        steps.push(StepEvidence {
            variable: step.variable.clone(),
            tool: step.tool.clone(),
            query: step.query.clone().unwrap_or_default(),
            reasoning: step.reasoning.clone(),
            hits: positions,
        });
    }
    let written = writer
        .write(&ReportRequest {
            question: &run.question,
            plan: &run.plan,
            steps: &steps,
            evidence: &evidence,
            feedback: None,
            brief: Some(&brief.to_markdown()),
        })
        .await;
    // Whether the searches found anything is the writer's sections' to say, before the brief
    // opens the note.
    let found = finalize_report(written.value.clone(), &evidence).is_some();
    let mut report = written.value;
    if let Some(overview) = brief_overview(brief) {
        report.sections.insert(
            0,
            ReportSection {
                heading: "Brief".to_owned(),
                text: overview,
            },
        );
    }
    let (report, markdown) = match finalize_report(report, &evidence).filter(|_| found) {
        Some((report, answer)) => (Some(report), answer.text),
        None => (
            None,
            format!(
                "# {}\n\nNothing the searches found speaks to the brief's themes.\n",
                brief.title
            ),
        ),
    };
    Note {
        report,
        markdown,
        implementation: written.implementation,
        model_calls: written.llm_calls.len(),
    }
}

/// A value as text, references filled with the results they name.
fn value_text(value: &ArgumentValue, results: &HashMap<String, String>) -> String {
    match value {
        ArgumentValue::Text(text) => substitute(text, results),
        ArgumentValue::Reference(variable) => results.get(variable).cloned().unwrap_or_default(),
        ArgumentValue::List(items) => items.join(", "),
        // The plan language may grow other kinds of value; this run reads none of them.
        _ => String::new(),
    }
}

/// A value as a list: a list's items, or a text's comma-separated parts.
fn value_list(value: &ArgumentValue) -> Vec<String> {
    match value {
        ArgumentValue::List(items) => items.clone(),
        ArgumentValue::Text(text) => text
            .split(',')
            .map(|part| part.trim().to_owned())
            .filter(|part| !part.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

/// What the note opens with: the course's own introduction and the themes searched.
fn brief_overview(brief: &ResearchBrief) -> Option<String> {
    let themes: Vec<&str> = brief.themes.iter().map(|t| t.name.as_str()).collect();
    let themes = match themes.as_slice() {
        [] => None,
        [one] => Some(format!("The theme researched: {one}.")),
        many => Some(format!("The themes researched: {}.", many.join("; "))),
    };
    match (&brief.introduction, themes) {
        (Some(introduction), Some(themes)) => Some(format!("{introduction} {themes}")),
        (Some(introduction), None) => Some(introduction.clone()),
        (None, themes) => themes,
    }
}

/// The References entry listing `url` for ingestion, if there is one.
fn listed_for_ingestion<'c>(
    url: &str,
    classification: &'c Classification,
) -> Option<&'c Reference> {
    let asked = Url::parse(url.trim()).ok()?;
    classification.to_ingest.iter().find(|r| match &r.target {
        Target::Url(listed) => same_address(listed, &asked),
        Target::File(_) => false,
    })
}

/// The host a web search keeps to: of an address, or written bare (`example.org/docs`).
fn site_of(at: &str) -> Option<String> {
    let at = at.trim();
    Url::parse(at)
        .ok()
        .filter(|u| u.has_host())
        .or_else(|| Url::parse(&format!("https://{at}")).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
        .filter(|host| host.contains('.'))
}

/// Two addresses for the same page: equal without their fragments.
fn same_address(a: &Url, b: &Url) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    a.set_fragment(None);
    b.set_fragment(None);
    a == b
}

/// The first hit's title: what a later step's `#En` reads.
fn first_title(hits: &[Hit]) -> String {
    hits.first()
        .map(|h| h.title.to_string())
        .unwrap_or_default()
}
