//! `ferret-agent` runs searches: it screens a question with the guardrail, analyses it, and
//! hands it to a strategy, each a type in the `strategy` folder: a single pass; the refine loop
//! (search, grade, and while results are weak search again with a broadened or narrowed query);
//! multi-hop search (follow the bridge the results name, or the compared name they lack); the
//! tool-selection loop (a selector picks each tool call or DONE); the ReWOO planner (a plan of
//! `#En = Tool[args]` steps run as a dependency graph, then a report with references); the
//! model-file finder (plan hub searches for a file's name, rank the files found by rules and a
//! model's judgement, answer FOUND or UNCERTAIN with candidates); and `Auto`, which chooses per
//! question. Every strategy works on one `SearchRun` that owns the
//! query, its [`Budget`](ferret_core::Budget), the hits gathered, the trace and the clock; every
//! step is recorded in the trace and streamed as an [`Event`](ferret_core::Event).
//!
//! It must not depend on a concrete backend: it sees backends only through the executor.

mod agent;
mod config;
mod find_model;
mod gathered;
mod planner;
mod prompts;
mod recorder;
mod run;
mod session;
mod stages;
mod strategy;
mod tool_selection;
mod tools;

pub use agent::Agent;
pub use config::{AgentConfig, PlanConfig, ToolLoopConfig};
pub use ferret_core::{Strategy, StrategyReason};
pub use find_model::{
    base_model_label, tool_name, CandidateValidator, FindStep, HeuristicModelSearchPlanner,
    LlmCandidateValidator, LlmModelSearchPlanner, ModelFamilies, ModelFamily, ModelSearchPlanner,
    NameMatch, RuleValidator, Scored, MAX_FIND_STEPS,
};
// The report's stages are synthesis's; the planner strategy uses them and names them here too.
pub use ferret_synthesis::{
    finalize_report, HeuristicReportWriter, ReportEvaluator, ReportRequest, ReportWriter,
    StepEvidence, Verdict,
};
pub use planner::{
    plan_text, substitute, without_references, ArgumentError, ArgumentKind, ArgumentValue,
    HeuristicPlanner, LlmPlanEvaluator, LlmPlanner, LlmReportEvaluator, LlmReportWriter,
    NamedParameter, Plan, PlanError, PlanEvaluator, PlanRecord, PlanRequest, PlanStages, PlanStep,
    Planner, RecordedStep, RecordedVerdict, StepArguments, ToolSignature,
};
pub use prompts::{
    CandidateJudgement, CandidateValidationContext, CandidateValidationReply, FileCandidate,
    ModelSearchPlanReply, ModelSearchPlanningContext, ModelSearchStepReply, PlanEvaluationContext,
    PlanReply, PlanningContext, ReportEvaluationContext, ReportReply, ReportSectionReply,
    ReportWritingContext, SearchToolDescription, ToolChoiceReply, ToolDescription,
    ToolSelectionContext, DONE_TOOL,
};
pub use session::{FileSessions, InMemorySessions, SessionLimits, SessionStore, Sessions, Turn};
pub use stages::{StageConfig, Stages};
pub use tool_selection::{
    most_relevant_within, HeuristicToolSelector, LlmToolSelector, SelectionState, ToolCall,
    ToolSelector,
};
pub use tools::{Tool, ToolBox, ToolError, ToolRequest, DATE_RANGE_TOOL, RECENT_TOOL, SEARCH_TOOL};
