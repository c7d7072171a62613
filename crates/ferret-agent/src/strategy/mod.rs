//! The strategies: each a type implementing [`SearchStrategy`] in a file of its own, run by the
//! agent over one [`SearchRun`] once the guardrail and the analysis are done.
//!
//! To add one: write its file here, add its variant to [`Strategy`] (in `ferret-core`, so
//! configuration, traces and the wire know its name; its name goes in `as_str` and `ALL`), and
//! its arm to [`implementation`].

mod attempts;
mod auto;
mod find_model;
mod linking;
mod multi_hop;
mod plan;
mod refine;
mod single_pass;
mod tool_loop;

use async_trait::async_trait;
use ferret_core::Strategy;

use crate::run::{Ending, SearchRun};

/// A way to search: it makes its moves on the run (search, grade, check the budget, answer)
/// and says how the search ended. It records its own steps in the run's trace; the agent
/// records which strategy runs and why, and turns the ending into the response.
#[async_trait]
pub(crate) trait SearchStrategy: Send + Sync {
    /// Search for the run's question until answered, out of ideas or out of budget.
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending;
}

/// The implementation of each strategy: the one list of them.
pub(crate) fn implementation(strategy: Strategy) -> &'static dyn SearchStrategy {
    match strategy {
        Strategy::SinglePass => &single_pass::SinglePass,
        Strategy::Refine => &refine::Refine,
        Strategy::MultiHop => &multi_hop::MultiHop,
        Strategy::ToolLoop => &tool_loop::ToolLoop,
        Strategy::Plan => &plan::PlanStrategy,
        Strategy::Auto => &auto::Auto,
        Strategy::FindModel => &find_model::FindModel,
    }
}
