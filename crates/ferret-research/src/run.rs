//! The research run: classify the syllabus's references, write the brief, plan, run the plan
//! wave by wave (a wave's steps concurrently, the Documentalist's one at a time), and write the
//! note from what the searches found. The whole run is kept as a [`ResearchRecord`], from which
//! [`Researcher::replay`] writes the same note again without calling anything.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ferret_agent::{
    finalize_report, substitute, ArgumentValue, Plan, PlanRecord, PlanStep, RecordedStep,
    ReportRequest, ReportWriter, StepArguments, StepEvidence,
};
use ferret_core::{Hit, Implementation, Report, ReportSection};
use ferret_knowledge::{Documentalist, Given, KnowledgeSource};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::plan::{heuristic_plan, DOCUMENTALIST, FILE_SEARCH, RESEARCH_TOOLS, WEB_SEARCH};
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
}

impl Default for ResearchConfig {
    fn default() -> Self {
        Self {
            max_steps: 40,
            hits_per_search: 5,
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
    /// Who wrote the plan and the note.
    pub planned_by: Implementation,
    /// Who wrote the note.
    pub written_by: Implementation,
    /// The note, as the reader got it.
    pub report: String,
    /// Backend calls made (tool calls; a search over several web backends counts once).
    pub calls: usize,
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
    writer: Arc<dyn ReportWriter>,
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

/// What one step produced: its record and its result for later steps.
struct Ran {
    recorded: RecordedStep,
    result: Option<String>,
}

impl Researcher {
    /// A researcher searching with `tools`, adding references with `documentalist` and writing
    /// with `writer`.
    pub fn new(
        tools: Arc<dyn ResearchTools>,
        documentalist: Arc<Documentalist>,
        writer: Arc<dyn ReportWriter>,
        config: ResearchConfig,
    ) -> Self {
        Self {
            tools,
            documentalist,
            writer,
            config,
        }
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

    /// Research `syllabus`: classify, brief, plan, run, write.
    pub async fn research(&self, syllabus: &Syllabus) -> Result<ResearchOutcome, String> {
        let started = Instant::now();
        let classification = self.classify(syllabus)?;
        let brief = ResearchBrief::from_syllabus(syllabus);
        let plan_text = heuristic_plan(&brief, &classification);
        let plan = Plan::parse_any(&plan_text, &RESEARCH_TOOLS, self.config.max_steps)
            .map_err(|e| format!("the research plan is not valid: {e}"))?;

        let mut results: HashMap<String, String> = HashMap::new();
        let mut steps: Vec<RecordedStep> = Vec::new();
        let mut calls = 0;
        let ingesting = tokio::sync::Mutex::new(());
        for wave in plan.waves() {
            let runs = wave
                .iter()
                .map(|&i| self.run_step(&plan.steps[i], &results, &classification, &ingesting));
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
        let run = PlanRecord {
            question: format!("Research note: {}", brief.title),
            limit: self.config.hits_per_search,
            plan: plan.render(),
            problems: Vec::new(),
            steps,
            verdicts: Vec::new(),
            budget_exhausted: false,
        };
        let (report, written_by, markdown) = note(self.writer.as_ref(), &run, &brief).await;
        let record = ResearchRecord {
            classification,
            brief,
            run,
            planned_by: Implementation::heuristic_default(),
            written_by,
            report: markdown,
            calls,
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        Ok(ResearchOutcome { record, report })
    }

    /// Write the note of `record` again from the hits it found: no search, no model.
    pub async fn replay(record: &ResearchRecord) -> String {
        // A note a model wrote is given back as it was; one the rules wrote is written again.
        if matches!(record.written_by, Implementation::Llm { .. }) {
            return record.report.clone();
        }
        let writer = ferret_agent::HeuristicReportWriter::default();
        note(&writer, &record.run, &record.brief).await.2
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
async fn note(
    writer: &dyn ReportWriter,
    run: &PlanRecord,
    brief: &ResearchBrief,
) -> (Option<Report>, Implementation, String) {
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
    match finalize_report(report, &evidence) {
        Some((report, answer)) => (Some(report), written.implementation, answer.text),
        None => (
            None,
            written.implementation,
            format!(
                "# {}\n\nNothing the searches found speaks to the brief's themes.\n",
                brief.title
            ),
        ),
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
