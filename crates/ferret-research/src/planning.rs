//! Who writes the research plan: the rules ([`HeuristicResearchPlanner`]) or a model
//! ([`LlmResearchPlanner`], falling back to the rules), and the signatures every plan is checked
//! against before it runs.

use ferret_core::StageOutput;
use ferret_llm::{PromptContext, Stage, StageModel};
use ferret_plan::{plan_text, ArgumentKind, NamedParameter, ToolSignature};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{heuristic_plan, DOCUMENTALIST, FILE_SEARCH, WEB_SEARCH};
use crate::{Classification, Place, ResearchBrief, Target};

/// The arguments each research tool takes: a plan that gives others is sent back to its
/// planner with what is expected.
pub const RESEARCH_SIGNATURES: [ToolSignature<'static>; 3] = [
    ToolSignature {
        tool: DOCUMENTALIST,
        positional: 0..=0,
        named: &[
            NamedParameter::required("vector_store", ArgumentKind::Text),
            NamedParameter::optional("url", ArgumentKind::Text),
            NamedParameter::optional("name", ArgumentKind::Text),
            NamedParameter::optional("text", ArgumentKind::Text),
            NamedParameter::optional("keywords", ArgumentKind::List),
        ],
    },
    ToolSignature {
        tool: FILE_SEARCH,
        positional: 1..=1,
        named: &[NamedParameter::optional("vector_store", ArgumentKind::Text)],
    },
    ToolSignature {
        tool: WEB_SEARCH,
        positional: 1..=2,
        named: &[],
    },
];

/// What a research planner is asked: a first plan, or a corrected one when `previous_plan` is
/// set.
#[derive(Debug, Clone, Copy)]
pub struct ResearchPlanRequest<'a> {
    /// The brief to plan for.
    pub brief: &'a ResearchBrief,
    /// The syllabus's references, sorted.
    pub classification: &'a Classification,
    /// Most steps the plan may have.
    pub max_steps: usize,
    /// The plan sent back, when asking for a corrected one.
    pub previous_plan: Option<&'a str>,
    /// Why it was sent back: the plan's validation errors, or the evaluator's feedback on the
    /// note it gave.
    pub problems: &'a [String],
}

/// Writes a research plan in the plan language (lines or the XML form); the researcher checks
/// it.
#[async_trait::async_trait]
pub trait ResearchPlanner: Send + Sync {
    /// The plan's text for `request`.
    async fn plan(&self, request: &ResearchPlanRequest<'_>) -> StageOutput<String>;
}

/// The plan the rules write ([`heuristic_plan`]); feedback does not change it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicResearchPlanner;

#[async_trait::async_trait]
impl ResearchPlanner for HeuristicResearchPlanner {
    async fn plan(&self, request: &ResearchPlanRequest<'_>) -> StageOutput<String> {
        StageOutput::heuristic(heuristic_plan(
            request.brief,
            request.classification,
            request.max_steps,
        ))
    }
}

/// Context of research planning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchPlanningContext {
    /// The brief, as markdown.
    pub brief: String,
    /// Files the knowledge base holds that the syllabus names.
    pub known_files: Vec<String>,
    /// The References' addresses to ingest, each with what came with it.
    pub to_ingest: Vec<String>,
    /// The modules' links, each with the passage it sits in.
    pub module_links: Vec<String>,
    /// Most steps the plan may have.
    pub max_steps: usize,
    /// The plan sent back, when asking for a corrected one.
    pub previous_plan: Option<String>,
    /// Why it was sent back.
    pub problems: Vec<String>,
}

/// The research plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResearchPlanReply {
    /// The plan's lines: for each step, "Plan: <one sentence>" then "#E<n> = <Tool>[<arguments>]".
    #[serde(alias = "steps")]
    pub plan: String,
}

impl PromptContext for ResearchPlanningContext {
    const STAGE: Stage = Stage::ResearchPlanning;
    const TEMPLATE: &'static str = include_str!("../templates/research_planning.j2");
    type Reply = ResearchPlanReply;
}

impl ResearchPlanningContext {
    /// The context of `request`.
    pub fn new(request: &ResearchPlanRequest<'_>) -> Self {
        let c = request.classification;
        let known_files = c
            .known
            .iter()
            .filter_map(|r| match &r.target {
                Target::File(name) => Some(name.clone()),
                Target::Url(_) => None,
            })
            .collect();
        let to_ingest = c
            .to_ingest
            .iter()
            .map(|r| {
                let mut line = r.target.to_string();
                if let Some(title) = &r.title {
                    line.push_str(&format!(" | title: {title}"));
                }
                if let Some(text) = &r.text {
                    line.push_str(&format!(" | text: {text}"));
                }
                if !r.keywords.is_empty() {
                    line.push_str(&format!(" | keywords: {}", r.keywords.join(", ")));
                }
                line
            })
            .collect();
        let module_links = c
            .ephemeral
            .iter()
            .map(|r| match &r.place {
                Place::Module { heading, passage } => {
                    format!("{} | in {heading}: {passage}", r.target)
                }
                Place::References => r.target.to_string(),
            })
            .collect();
        Self {
            brief: request.brief.to_markdown(),
            known_files,
            to_ingest,
            module_links,
            max_steps: request.max_steps,
            previous_plan: request.previous_plan.map(str::to_owned),
            problems: request.problems.to_vec(),
        }
    }
}

/// The research planner that asks a model (the lead researcher), falling back to the rules'
/// plan when the model fails or gives no plan.
#[derive(Debug, Clone)]
pub struct LlmResearchPlanner {
    model: StageModel,
}

impl LlmResearchPlanner {
    /// A planner asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl ResearchPlanner for LlmResearchPlanner {
    async fn plan(&self, request: &ResearchPlanRequest<'_>) -> StageOutput<String> {
        let context = ResearchPlanningContext::new(request);
        let accept = |reply: ResearchPlanReply| plan_text(&reply.plan);
        self.model
            .run(
                &context,
                900,
                accept,
                HeuristicResearchPlanner.plan(request),
            )
            .await
    }
}
