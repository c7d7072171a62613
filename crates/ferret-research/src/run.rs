//! The research run: classify the syllabus's references, write the brief, plan, run the plan
//! wave by wave (a wave's steps concurrently, the Documentalist's one at a time), and write the
//! note from what the searches found. The whole run is kept as a [`ResearchRecord`], from which
//! [`Researcher::replay`] writes the same note again without calling anything.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ferret_agent::{
    finalize_report, substitute, ArgumentValue, Plan, PlanRecord, PlanStep, RecordedStep,
    RecordedVerdict, ReportEvaluator, ReportRequest, ReportWriter, StepArguments, StepEvidence,
};
use ferret_core::{Hit, Implementation, Report, ReportSection};
use ferret_knowledge::{Documentalist, Given, KnowledgeSource};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::briefing::{BriefWriter, HeuristicBriefWriter};
use crate::plan::{heuristic_plan, DOCUMENTALIST, FILE_SEARCH, RESEARCH_TOOLS, WEB_SEARCH};
use crate::planning::{
    HeuristicResearchPlanner, ResearchPlanRequest, ResearchPlanner, RESEARCH_SIGNATURES,
};
use crate::{Classification, ResearchBrief, Syllabus, Target};

/// The searches a research run makes, answered by the caller's backends.
#[async_trait::async_trait]
pub trait ResearchTools: Send + Sync {
    /// Search the knowledge base for `query`: at most `limit` hits, best first.
    async fn file_search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, String>;

    /// Whether there is a web backend to search.
    fn searches_web(&self) -> bool;

    /// Search the web for `query`, on `site` (a host name) only when given and the backend can
    /// keep to one site.
    async fn web_search(
        &self,
        query: &str,
        site: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Hit>, String>;

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

/// What one step produced: its record and its result for later steps.
struct Ran {
    recorded: RecordedStep,
    result: Option<String>,
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
    pub fn classify(&self, syllabus: &Syllabus) -> Result<Classification, String> {
        let names: std::collections::HashSet<String> = self
            .documentalist
            .registry()
            .entries()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|e| e.name)
            .collect();
        Ok(syllabus.classify(&names))
    }

    /// Research `syllabus`: classify, brief, plan, run, write; a note the evaluator sends back
    /// goes to the planner with its feedback, at most [`ResearchConfig::max_replans`] times.
    pub async fn research(&self, syllabus: &Syllabus) -> Result<ResearchOutcome, String> {
        let started = Instant::now();
        let classification = self.classify(syllabus)?;
        let briefed = self.briefer.brief(syllabus).await;
        let brief = briefed.value;
        let question = format!("Research note: {}", brief.title);
        let mut problems: Vec<String> = Vec::new();
        let mut verdicts: Vec<RecordedVerdict> = Vec::new();
        let mut model_calls = briefed.llm_calls.len();
        let mut calls = 0;
        let mut sent_back: Option<(String, String)> = None;
        let mut earlier: Vec<PlanRecord> = Vec::new();
        let mut replans = 0;
        loop {
            let settled = self
                .settle_plan(&brief, &classification, sent_back.take(), &mut problems)
                .await?;
            model_calls += settled.model_calls;
            let (steps, made) = self.run_plan(&settled.plan, &classification).await;
            calls += made;
            let run = PlanRecord {
                question: question.clone(),
                limit: self.config.hits_per_search,
                plan: settled.plan.render(),
                problems: problems.clone(),
                steps,
                verdicts: verdicts.clone(),
                budget_exhausted: false,
            };
            let written = note(self.writer.as_ref(), &run, &brief).await;
            model_calls += written.model_calls;
            if let Some(evaluator) = self
                .evaluator
                .as_ref()
                .filter(|_| replans < self.config.max_replans)
            {
                let verdict = evaluator.evaluate(&question, &written.markdown).await;
                model_calls += verdict.llm_calls.len();
                let verdict = verdict.value;
                verdicts.push(RecordedVerdict {
                    subject: "report".into(),
                    acceptable: verdict.acceptable,
                    feedback: verdict.feedback.clone(),
                });
                if !verdict.acceptable {
                    replans += 1;
                    let feedback = match verdict.feedback.trim() {
                        "" => "the evaluator rejected the note without saying why".to_owned(),
                        feedback => format!("the note was rejected: {feedback}"),
                    };
                    sent_back = Some((run.plan.clone(), feedback));
                    earlier.push(PlanRecord {
                        verdicts: verdicts.clone(),
                        ..run
                    });
                    continue;
                }
            }
            let record = ResearchRecord {
                classification,
                brief,
                run: PlanRecord { verdicts, ..run },
                earlier,
                briefed_by: briefed.implementation,
                planned_by: settled.implementation,
                written_by: written.implementation,
                report: written.markdown,
                calls,
                model_calls,
                elapsed_ms: started.elapsed().as_millis() as u64,
            };
            return Ok(ResearchOutcome {
                record,
                report: written.report,
            });
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
    ) -> Result<Settled, String> {
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
        let fallback = heuristic_plan(brief, classification);
        let plan =
            check(&fallback).map_err(|e| format!("the rules' research plan is not valid: {e}"))?;
        Ok(Settled {
            plan,
            implementation: Implementation::Heuristic {
                why: "the planner's plan was not valid twice".into(),
            },
            model_calls,
        })
    }

    /// Run `plan` wave by wave: the steps and the backend calls made.
    async fn run_plan(
        &self,
        plan: &Plan,
        classification: &Classification,
    ) -> (Vec<RecordedStep>, usize) {
        let mut results: HashMap<String, String> = HashMap::new();
        let mut steps: Vec<RecordedStep> = Vec::new();
        let mut calls = 0;
        let ingesting = tokio::sync::Mutex::new(());
        for wave in plan.waves() {
            let runs = wave
                .iter()
                .map(|&i| self.run_step(&plan.steps[i], &results, classification, &ingesting));
            for ran in futures::future::join_all(runs).await {
                if ran.recorded.error.is_none() && ran.recorded.tool != DOCUMENTALIST {
                    calls += 1;
                }
                if let Some(result) = ran.result {
                    results.insert(ran.recorded.variable.clone(), result);
                }
                steps.push(ran.recorded);
            }
        }
        (steps, calls)
    }

    /// Write the note of `record` again from the hits it found: no search, no model.
    pub async fn replay(record: &ResearchRecord) -> String {
        // A note a model wrote is given back as it was; one the rules wrote is written again.
        if matches!(record.written_by, Implementation::Llm { .. }) {
            return record.report.clone();
        }
        let writer = ferret_agent::HeuristicReportWriter::default();
        note(&writer, &record.run, &record.brief).await.markdown
    }

    async fn run_step(
        &self,
        step: &PlanStep,
        results: &HashMap<String, String>,
        classification: &Classification,
        ingesting: &tokio::sync::Mutex<()>,
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
        let outcome = match step
            .depends_on
            .iter()
            .find(|d| !results.contains_key(d.as_str()))
        {
            Some(missing) => Err(format!("not run: #{missing} did not succeed")),
            None => {
                self.call(step, results, classification, ingesting, &mut recorded)
                    .await
            }
        };
        let result = match outcome {
            Ok(result) => Some(result),
            Err(error) => {
                recorded.error = Some(error);
                None
            }
        };
        recorded.duration_ms = started.elapsed().as_millis() as u64;
        Ran { recorded, result }
    }

    /// Call the step's tool; its result for the steps that refer to it.
    async fn call(
        &self,
        step: &PlanStep,
        results: &HashMap<String, String>,
        classification: &Classification,
        ingesting: &tokio::sync::Mutex<()>,
        recorded: &mut RecordedStep,
    ) -> Result<String, String> {
        let arguments = step.arguments().map_err(|e| e.to_string())?;
        let text = |value: &ArgumentValue| value_text(value, results);
        let limit = self.config.hits_per_search;
        match step.tool.as_str() {
            DOCUMENTALIST => {
                let store = arguments
                    .get("vector_store")
                    .map(text)
                    .ok_or("a Documentalist step needs vector_store")?;
                let _one_at_a_time = ingesting.lock().await;
                // A reference that cannot be added is noted; the knowledge base is still there
                // for the steps that search it.
                if let Err(error) = self
                    .document(&arguments, &text, classification, recorded)
                    .await
                {
                    recorded.error = Some(error);
                }
                Ok(store)
            }
            FILE_SEARCH => {
                let query = arguments
                    .positional
                    .first()
                    .map(text)
                    .ok_or("FileSearch needs a query")?;
                recorded.query = Some(query.clone());
                recorded.hits = self.tools.file_search(&query, limit).await?;
                Ok(first_title(&recorded.hits))
            }
            WEB_SEARCH => {
                let query = arguments
                    .positional
                    .first()
                    .map(text)
                    .ok_or("WebSearch needs a query")?;
                recorded.query = Some(query.clone());
                if !self.tools.searches_web() {
                    return Err("skipped: no web backend is configured".into());
                }
                let site = arguments
                    .positional
                    .get(1)
                    .map(text)
                    .and_then(|u| Url::parse(&u).ok())
                    .and_then(|u| u.host_str().map(str::to_owned));
                recorded.hits = self
                    .tools
                    .web_search(&query, site.as_deref(), limit)
                    .await?;
                Ok(first_title(&recorded.hits))
            }
            other => Err(format!("there is no research tool `{other}`")),
        }
    }
}

impl Researcher {
    /// A Documentalist step's work: fetch and ingest a page the References list (`url=`), or
    /// check that a file is in the knowledge base (`name=` alone).
    async fn document(
        &self,
        arguments: &StepArguments,
        text: &dyn Fn(&ArgumentValue) -> String,
        classification: &Classification,
        recorded: &mut RecordedStep,
    ) -> Result<(), String> {
        if let Some(url) = arguments.get("url").map(text) {
            recorded.query = Some(url.clone());
            // A page is fetched only when the syllabus lists it: never an address found in
            // retrieved text or made up by a model.
            if !listed_for_ingestion(&url, classification) {
                return Err(format!(
                    "{url} is not listed in the syllabus's References: only those are fetched"
                ));
            }
            let given = Given {
                title: arguments.get("name").map(text),
                summary: arguments.get("text").map(text),
                keywords: arguments
                    .get("keywords")
                    .map(value_list)
                    .unwrap_or_default(),
            };
            let added = self
                .documentalist
                .add(KnowledgeSource::Url(url.clone()), given)
                .await
                .map_err(|e| e.to_string())?;
            recorded.query = Some(format!("{url} -> {}", added.entry.name));
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
    let (report, markdown) = match finalize_report(report, &evidence) {
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
        // A kind of value a newer plan language may add: its text as written.
        #[allow(unreachable_patterns)]
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

/// Whether `url` is one of the addresses the syllabus's References list.
fn listed_for_ingestion(url: &str, classification: &Classification) -> bool {
    let Ok(asked) = Url::parse(url.trim()) else {
        return false;
    };
    classification.to_ingest.iter().any(|r| match &r.target {
        Target::Url(listed) => same_address(listed, &asked),
        Target::File(_) => false,
    })
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
    hits.first().map(|h| h.title.clone()).unwrap_or_default()
}
