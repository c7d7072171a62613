//! The planner strategy's parts, each with one job: the plan language (`#En = Tool[argument]`
//! or its XML form, parsed, validated and scheduled in waves; a step's named and list
//! arguments, checked against tool signatures), the stages that write and judge plans and
//! reports with their heuristic and model versions, the record of what a run found (a research
//! run keeps it to write its note again), and the
//! report's rendering. The strategy that drives them is `strategy::plan`.

mod assembly;
mod evaluation;
mod planning;
mod report;
mod stages;
mod writing;

pub use ferret_plan::{
    plan_text, substitute, without_references, ArgumentError, ArgumentKind, ArgumentValue,
    NamedParameter, Plan, PlanError, PlanRecord, PlanStep, RecordedStep, RecordedVerdict,
    StepArguments, ToolSignature,
};

pub use assembly::PlanStages;
pub use evaluation::{LlmPlanEvaluator, LlmReportEvaluator};
pub use planning::{HeuristicPlanner, LlmPlanner};
pub use stages::{
    PlanEvaluator, PlanRequest, Planner, ReportEvaluator, ReportRequest, ReportWriter, StepEvidence,
};
pub use writing::{HeuristicReportWriter, LlmReportWriter};

pub use report::finalize as finalize_report;
