//! `ferret-agent` holds the search strategies: a single pass; the refine loop of seed 001 (search,
//! grade, and while results are weak search again with a broadened or narrowed query); multi-hop
//! search (follow the bridge the results name, or the compared name they lack); seed 004's
//! tool-selection loop (a selector picks each tool call or DONE); and seed 003's ReWOO planner (a
//! plan of `#En = Tool[args]` steps run as a dependency graph, then a report with references).
//! `Auto` chooses per question. It wires the stages together — guardrail, analysis,
//! decomposition, rewriting, execution, grading, synthesis — and enforces the query's one
//! [`Budget`](ferret_core::Budget) throughout. Every step is recorded in the trace and streamed
//! as an [`Event`](ferret_core::Event).
//!
//! It must not depend on a concrete backend: it sees backends only through the executor.

mod gathered;
mod plan;
mod planner;
mod recorder;
mod refine;
mod stages;
mod tool_loop;
mod tools;

pub use plan::{substitute, Plan, PlanError, PlanStep};
pub use planner::{
    HeuristicPlanner, HeuristicReportWriter, LlmPlanEvaluator, LlmPlanner, LlmReportEvaluator, LlmReportWriter, PlanConfig,
    PlanEvaluator, PlanRecord, PlanRecordError, PlanRequest, PlanStages, Planner, RecordedStep, RecordedVerdict,
    ReportEvaluator, ReportRequest, ReportWriter, StepEvidence,
};
pub use refine::{Agent, AgentConfig, Strategy};
pub use tool_loop::{
    most_relevant_within, HeuristicToolSelector, LlmToolSelector, SelectionState, ToolCall, ToolLoopConfig, ToolSelector,
};
pub use stages::Stages;
pub use tools::{Tool, ToolBox, ToolError, ToolRequest, DATE_RANGE_TOOL, RECENT_TOOL, SEARCH_TOOL};
