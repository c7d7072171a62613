//! The planner strategy's parts, each with one job: the stages that write and judge plans with
//! their heuristic and model versions, and the model versions of the report's writer and
//! evaluator. The plan language and its record are `ferret-plan`'s; the report's stages, its
//! heuristic writer and its rendering are `ferret-synthesis`'s. The strategy that drives them is
//! `strategy::plan`.

mod assembly;
mod evaluation;
mod planning;
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
pub use stages::{PlanEvaluator, PlanRequest, Planner};
pub use writing::LlmReportWriter;
