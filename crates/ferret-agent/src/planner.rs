//! PLACEHOLDER: being written (ReWOO planner strategy).

use std::time::Instant;

use ferret_core::{Query, Response};
use ferret_query_intel::Analysis;

use crate::recorder::Recorder;
use crate::Agent;

/// Settings of the planner strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanConfig {
    /// Most steps a plan may have.
    pub max_steps: usize,
    /// Times a plan evaluator may send the plan back.
    pub max_replans: u32,
    /// Times a report evaluator may send the report back.
    pub max_report_revisions: u32,
}

impl Default for PlanConfig {
    fn default() -> Self {
        Self { max_steps: 6, max_replans: 1, max_report_revisions: 1 }
    }
}

impl Agent {
    pub(crate) async fn run_plan(&self, query: &Query, analysis: &Analysis, rec: Recorder, started: Instant) -> Response {
        let _ = (query, analysis, rec, started);
        todo!("planner")
    }
}
