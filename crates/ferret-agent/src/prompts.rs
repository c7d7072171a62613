//! The prompts of the agent's own model stages (tool selection, planning,
//! plan and report evaluation, report writing): for each, the context a template is rendered
//! from, the reply the model must give, and the template (under `templates/`), side by side. The
//! template engine, the `data` fence and the structured-output parser are `ferret-llm`'s.

use ferret_llm::{reply_schema, restrict_to_labels, PromptContext, PromptSource, Stage};
use ferret_synthesis::Verdict;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name the tool-selection prompt offers for "stop searching".
pub const DONE_TOOL: &str = "DONE";

/// A tool the tool-selection prompt may pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescription {
    /// The name the model must answer with, e.g. "vector_search".
    pub name: String,
    /// What the tool finds, in one sentence.
    pub description: String,
    /// What the argument is, e.g. "a search query" or "a date range as YYYY-MM-DD..YYYY-MM-DD";
    /// `None` when the tool takes none.
    pub argument: Option<String>,
}

/// Context of one step of the tool-selection loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSelectionContext {
    /// The question being researched.
    pub question: String,
    /// The tools offered; [`DONE_TOOL`] is always offered in addition.
    pub tools: Vec<ToolDescription>,
    /// One line per step taken, written by the agent (tool, argument, how many new results).
    /// Retrieved text belongs in `sources`, where it is fenced, never here.
    pub history: Vec<String>,
    /// The sources gathered so far; may be empty.
    pub sources: Vec<PromptSource>,
    /// This step's number, from 1.
    pub iteration: u32,
    /// The last step's number.
    pub max_iterations: u32,
}

/// The next step chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolChoiceReply {
    /// Why this tool, in one or two sentences.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub reasoning: String,
    /// The name of one of the tools given, or DONE to stop searching.
    pub tool: String,
    /// What to pass to the tool, as its description says; empty for DONE.
    #[serde(default, alias = "query", alias = "arguments", alias = "input")]
    #[schemars(length(max = 200))]
    pub argument: String,
}

impl ToolChoiceReply {
    /// Whether the model chose to stop; tolerant of case because small models shout.
    pub fn is_done(&self) -> bool {
        self.tool.trim().eq_ignore_ascii_case(DONE_TOOL)
    }
}

impl PromptContext for ToolSelectionContext {
    const STAGE: Stage = Stage::ToolSelection;
    const TEMPLATE: &'static str = include_str!("../templates/tool_selection.j2");
    type Reply = ToolChoiceReply;

    /// The tool is one of those offered, or [`DONE_TOOL`].
    fn reply_schema(&self) -> serde_json::Value {
        let mut schema = reply_schema::<ToolChoiceReply>();
        let names = self.tools.iter().map(|t| t.name.as_str());
        restrict_to_labels(&mut schema, "/properties/tool", names.chain([DONE_TOOL]));
        schema
    }
}

/// Context of planning: a ReWOO plan of tool calls for a question, or a corrected one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanningContext {
    /// The question to plan for.
    pub question: String,
    /// The tools the plan may call.
    pub tools: Vec<ToolDescription>,
    /// Most steps the plan may have.
    pub max_steps: u32,
    /// The plan that was rejected, when asking for a corrected one; `None` for a first plan.
    pub previous_plan: Option<String>,
    /// What is wrong with `previous_plan`: validation errors or an evaluator's feedback, one per
    /// entry, written by the agent; empty for a first plan.
    pub problems: Vec<String>,
}

/// The plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanReply {
    /// The plan lines: for each step, "Plan: <one sentence>" then "#E<n> = <Tool>[<argument>]", one per line.
    // A plan under "steps" is taken only when it is one string: a list fails the parse and gets
    // the repair request, which names the expected field.
    #[serde(alias = "steps")]
    pub plan: String,
}

impl PromptContext for PlanningContext {
    const STAGE: Stage = Stage::Planning;
    const TEMPLATE: &'static str = include_str!("../templates/planning.j2");
    type Reply = PlanReply;
}

/// Context of plan evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEvaluationContext {
    /// The question the plan is for.
    pub question: String,
    /// The plan to judge, as the planner wrote it.
    pub plan: String,
}

impl PromptContext for PlanEvaluationContext {
    const STAGE: Stage = Stage::PlanEvaluation;
    const TEMPLATE: &'static str = include_str!("../templates/plan_evaluation.j2");
    type Reply = Verdict;
}

/// Context of report writing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportWritingContext {
    /// The question the report answers.
    pub question: String,
    /// The plan that was run to gather the sources.
    pub plan: String,
    /// The numbered sources the report may use and cite; may be empty, which the prompt states.
    pub sources: Vec<PromptSource>,
    /// A report evaluator's feedback on the previous report, when it sent that report back;
    /// `None` for a first report.
    pub feedback: Option<String>,
    /// What the report must cover, theme by theme, when a research brief says it.
    #[serde(default)]
    pub brief: Option<String>,
}

/// One section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportSectionReply {
    /// The section's heading, a few words.
    #[serde(alias = "title", alias = "header")]
    pub heading: String,
    /// The section's text, citing sources by number in square brackets, e.g. `[1]` or `[2][3]`.
    #[serde(alias = "content", alias = "body")]
    pub text: String,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportReply {
    /// The report's title, a few words.
    #[serde(default)]
    pub title: String,
    /// The sections, in reading order.
    pub sections: Vec<ReportSectionReply>,
}

impl PromptContext for ReportWritingContext {
    const STAGE: Stage = Stage::ReportWriting;
    const TEMPLATE: &'static str = include_str!("../templates/report_writing.j2");
    type Reply = ReportReply;
}

/// Context of report evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportEvaluationContext {
    /// The question the report answers.
    pub question: String,
    /// The report to judge, as text: title, headings and sections with their `[n]` citations.
    pub report: String,
}

impl PromptContext for ReportEvaluationContext {
    const STAGE: Stage = Stage::ReportEvaluation;
    const TEMPLATE: &'static str = include_str!("../templates/report_evaluation.j2");
    type Reply = Verdict;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferret_llm::Prompts;

    #[test]
    fn a_plan_given_as_steps_is_taken_only_as_one_string() {
        let reply: PlanReply = serde_json::from_str(r#"{"steps": "Plan: a\n#E1 = web_search[a]"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reply.plan, "Plan: a\n#E1 = web_search[a]");
        assert!(serde_json::from_str::<PlanReply>(
            r##"{"steps": ["Plan: a", "#E1 = web_search[a]"]}"##
        )
        .is_err());
    }

    #[test]
    fn replies_tolerate_what_small_models_rename_or_leave_out() {
        let parse =
            |raw: &str| -> Verdict { serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}")) };
        assert_eq!(
            parse(r#"{"approved": true}"#),
            Verdict {
                acceptable: true,
                feedback: String::new()
            }
        );
        assert_eq!(
            parse(r#"{"acceptable": false, "reason": "Add a step for the Amazon."}"#).feedback,
            "Add a step for the Amazon."
        );
        let report: ReportReply = serde_json::from_str(
            r#"{"sections": [{"title": "Length", "content": "6,650 km [1]."}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.title, "");
        assert_eq!(
            report.sections,
            [ReportSectionReply {
                heading: "Length".into(),
                text: "6,650 km [1].".into()
            }]
        );
    }

    #[test]
    fn a_plan_prompt_renders_without_a_tool_that_takes_an_argument() {
        let context = PlanningContext {
            question: "What did I write lately?".into(),
            tools: vec![ToolDescription {
                name: "recent_entries".into(),
                description: "Lists recent entries.".into(),
                argument: None,
            }],
            max_steps: 1,
            previous_plan: None,
            problems: vec![],
        };
        let messages = Prompts::new()
            .render_context(&context)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !messages[0].content.contains("Example"),
            "{}",
            messages[0].content
        );
        assert!(
            messages[0].content.contains("- Use 1 step."),
            "{}",
            messages[0].content
        );
        assert!(
            messages[0].content.contains("write empty brackets []"),
            "{}",
            messages[0].content
        );
        assert!(
            !messages[0].content.contains("<data>") && !messages[1].content.contains("<data"),
            "no plan, no fence"
        );
        let context = PlanningContext {
            tools: vec![],
            ..context
        };
        assert!(Prompts::new().render_context(&context).is_ok());
    }

    #[test]
    fn done_is_recognised_in_any_case() {
        let reply: ToolChoiceReply = serde_json::from_str(r#"{"tool": "done", "query": ""}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(reply.is_done());
    }
}

/// A search tool the model-search planning prompt offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchToolDescription {
    /// The name a step must use, e.g. "civitai_search".
    pub name: String,
    /// What it searches, in one sentence.
    pub description: String,
}

/// Context of planning the searches for a missing model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSearchPlanningContext {
    /// The file's name, as the workflow writes it.
    pub model_name: String,
    /// What the workflow says of it (type, loader node, base model, preferred source).
    pub context: std::collections::BTreeMap<String, String>,
    /// The search tools configured.
    pub tools: Vec<SearchToolDescription>,
    /// Most steps the plan may have.
    pub max_steps: usize,
}

/// One planned search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelSearchStepReply {
    /// The tool's name, as listed.
    pub tool: String,
    /// The query to search with.
    pub query: String,
}

/// The planned searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelSearchPlanReply {
    /// The searches, most promising first.
    #[serde(default)]
    pub steps: Vec<ModelSearchStepReply>,
}

impl PromptContext for ModelSearchPlanningContext {
    const STAGE: Stage = Stage::ModelSearchPlanning;
    const TEMPLATE: &'static str = include_str!("../templates/model_search_planning.j2");
    type Reply = ModelSearchPlanReply;
}

/// One found file offered for validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileCandidate {
    /// The number the reply refers to it by.
    pub number: usize,
    /// The model's name at its source.
    pub name: String,
    /// The file's name.
    pub file_name: String,
    /// The model type the source states, when it does.
    pub model_type: Option<String>,
    /// The base model the source states, when it does.
    pub base_model: Option<String>,
    /// Where it was found, e.g. "huggingface".
    pub source: String,
    /// Its size in megabytes, when known.
    pub size_mb: Option<u64>,
    /// What the rules found, e.g. "exact file name; type agrees".
    pub rules: String,
}

/// Context of candidate validation: the file wanted and what the searches found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateValidationContext {
    /// The file's name, as the workflow writes it.
    pub model_name: String,
    /// What the workflow says of it (type, loader node, base model, preferred source).
    pub context: std::collections::BTreeMap<String, String>,
    /// The hub to favour between equal candidates, when the workflow names one.
    pub preferred_source: Option<String>,
    /// What was found; may be empty.
    pub candidates: Vec<FileCandidate>,
}

/// The judgement of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CandidateJudgement {
    /// The candidate's number.
    pub number: usize,
    /// How sure the model is that this is the file wanted, from 0 to 100.
    #[schemars(range(min = 0, max = 100))]
    pub confidence: u8,
    /// Why, in a few words.
    #[serde(default)]
    pub reason: String,
}

/// The ranked judgement of the candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CandidateValidationReply {
    /// `FOUND` when one candidate is the file, else `UNCERTAIN`.
    #[serde(default)]
    pub status: String,
    /// The candidates judged, best first.
    #[serde(default)]
    pub candidates: Vec<CandidateJudgement>,
}

impl PromptContext for CandidateValidationContext {
    const STAGE: Stage = Stage::CandidateValidation;
    const TEMPLATE: &'static str = include_str!("../templates/candidate_validation.j2");
    type Reply = CandidateValidationReply;
}
