//! The agent's settings that are not part of a query: which strategy runs, how deep each
//! backend is asked, and the tool loop's and the planner's bounds.

use ferret_core::{FerretError, Strategy};

/// Settings of the agent that are not part of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentConfig {
    /// Which strategy runs.
    pub strategy: Strategy,
    /// Hits asked of each backend per query; more than the answer shows, so fusion has material.
    pub hits_per_call: usize,
    /// Settings of the tool-selection loop.
    pub tool_loop: ToolLoopConfig,
    /// Settings of the planner.
    pub plan: PlanConfig,
}

impl AgentConfig {
    /// Check that the configured strategy can take a step at all.
    pub fn validate(&self) -> Result<(), FerretError> {
        self.validate_for(self.strategy)
    }

    /// Check that `strategy` can take a step at all with these settings.
    pub fn validate_for(&self, strategy: Strategy) -> Result<(), FerretError> {
        let zero = match strategy {
            Strategy::ToolLoop if self.tool_loop.max_steps == 0 => Some("tool_loop.max_steps"),
            Strategy::Plan | Strategy::Auto if self.plan.max_steps == 0 => Some("plan.max_steps"),
            _ => None,
        };
        match zero {
            Some(name) => Err(FerretError::Config(format!(
                "{name} is zero, so the strategy could take no step"
            ))),
            None => Ok(()),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            strategy: Strategy::Auto,
            hits_per_call: 20,
            tool_loop: ToolLoopConfig::default(),
            plan: PlanConfig::default(),
        }
    }
}

/// Settings of the tool-selection loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLoopConfig {
    /// Most tool calls, DONE excluded.
    pub max_steps: u32,
    /// Tokens of retrieved text handed to the selector and the writer, filled with the most
    /// relevant results first (about four characters a token).
    pub context_tokens: usize,
    /// Entries the recent-entries tool lists.
    pub recent_entries: usize,
}

impl Default for ToolLoopConfig {
    fn default() -> Self {
        Self {
            max_steps: 5,
            context_tokens: 2_000,
            recent_entries: 10,
        }
    }
}

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
        Self {
            max_steps: 6,
            max_replans: 1,
            max_report_revisions: 1,
        }
    }
}
