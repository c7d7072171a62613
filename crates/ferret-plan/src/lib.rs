//! `ferret-plan` is the plan language: a plan of tool steps written up front, as lines like
//! `#E2 = Search[birthplace of #E1]` or as XML, parsed and checked before anything runs
//! ([`Plan::parse_any`], [`PlanError`] messages saying what to fix), each step's arguments read
//! and checked against its tool's [`ToolSignature`], and the steps scheduled in waves that may
//! run at once ([`Plan::waves`], [`substitute`]). [`PlanRecord`] is what a plan run found, kept
//! to write its report again without searching.
//!
//! The agent's planner strategy and research runs both speak it. It must not depend on
//! anything but `ferret-core`'s vocabulary and text helpers: no model, backend, executor or
//! runtime, so that a tool that only reads or writes plans pays for nothing else.

mod arguments;
mod error;
mod language;
mod record;
mod reply;
mod xml;

pub use arguments::{
    ArgumentError, ArgumentKind, ArgumentValue, NamedParameter, StepArguments, ToolSignature,
};
pub use error::PlanError;
pub use language::{substitute, Plan, PlanStep};
pub use record::{PlanRecord, RecordedStep, RecordedVerdict};
pub use reply::{plan_text, without_references};
