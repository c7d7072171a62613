//! The planner strategy's parts, each with one job: the plan language (`#En = Tool[argument]`
//! or its XML form, parsed, validated and scheduled in waves; a step's named and list
//! arguments, checked against tool signatures), the stages that write and judge plans and
//! reports with their heuristic and model versions, the record of what a run found (a research
//! run keeps it to write its note again), and the
//! report's rendering. The strategy that drives them is `strategy::plan`.

mod arguments;
mod evaluation;
mod language;
mod planning;
mod record;
mod report;
mod stages;
mod writing;
mod xml;

pub use arguments::{
    ArgumentError, ArgumentKind, ArgumentValue, NamedParameter, StepArguments, ToolSignature,
};
pub use evaluation::{LlmPlanEvaluator, LlmReportEvaluator};
pub use language::{substitute, Plan, PlanError, PlanStep};
pub use planning::{HeuristicPlanner, LlmPlanner};
pub use record::{PlanRecord, RecordedStep, RecordedVerdict};
pub use stages::{
    PlanEvaluator, PlanRequest, PlanStages, Planner, ReportEvaluator, ReportRequest, ReportWriter,
    StepEvidence,
};
pub use writing::{HeuristicReportWriter, LlmReportWriter};

pub use planning::{plan_text, without_references};
pub use report::finalize as finalize_report;
