use serde::{Deserialize, Serialize};

/// How hard the agent tries: which search strategy runs. Each has one implementation in
/// `ferret-agent`'s `strategy` folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// One attempt: search, grade, answer.
    SinglePass,
    /// Retry with a refined query while results are weak, within the budget.
    Refine,
    /// After each search, follow the name the results lead to (a bridge) or the compared name
    /// they lack, until the results cover the question; weak results still refine.
    MultiHop,
    /// At each step a selector picks a tool (a search over every backend or one, the most recent
    /// entries, a date range) or DONE.
    ToolLoop,
    /// A plan of `#En = Tool[args]` steps runs as a dependency graph, and a writer turns the
    /// evidence into a report with sections and references.
    Plan,
    /// Choose per question: a simple one takes the refine loop, a bridge or comparison question
    /// multi-hop, a request for a report or overview of a complex subject a plan.
    #[default]
    Auto,
    /// Find a model file a workflow needs: plan searches of the model hubs for its name, run
    /// them, rank the files found by rules (and a model's judgement when one is configured).
    /// The query's text is the file's name; `Auto` never chooses it.
    FindModel,
}

impl Strategy {
    /// Every strategy, in the order they are documented.
    pub const ALL: [Strategy; 7] = [
        Self::SinglePass,
        Self::Refine,
        Self::MultiHop,
        Self::ToolLoop,
        Self::Plan,
        Self::Auto,
        Self::FindModel,
    ];

    /// The name used in traces, on the command line and in configuration: `single_pass`,
    /// `refine`, `multi_hop`, `tool_loop`, `plan`, `auto` or `find_model`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SinglePass => "single_pass",
            Self::Refine => "refine",
            Self::MultiHop => "multi_hop",
            Self::ToolLoop => "tool_loop",
            Self::Plan => "plan",
            Self::Auto => "auto",
            Self::FindModel => "find_model",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a strategy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a strategy; the strategies are single_pass, refine, multi_hop, tool_loop, plan, auto and find_model")]
pub struct UnknownStrategy(pub String);

impl std::str::FromStr for Strategy {
    type Err = UnknownStrategy;

    /// A strategy's name; `-` may stand for `_` (`multi-hop`).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let wanted = name.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == wanted)
            .ok_or_else(|| UnknownStrategy(name.to_owned()))
    }
}

/// Why a strategy runs: the configuration named it, or the automatic choice read the question so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StrategyReason {
    /// The configuration names this strategy.
    Configured,
    /// The query asks for this strategy.
    Requested,
    /// A simple question: one search answers it when its results are good.
    SimpleQuestion,
    /// A question about something a first result names: found by hopping.
    BridgeQuestion,
    /// A question comparing named things: each must be covered.
    ComparisonQuestion,
    /// A complex question asking for a report or an overview.
    AsksForReport,
    /// Not a question but a job with its own entry point (a file name to find, a syllabus).
    Job,
    /// An error to diagnose: searched by the error itself, refined when results are weak,
    /// never hopped from the names its log happens to hold.
    ErrorQuestion,
}

impl StrategyReason {
    /// In a few words, for the trace as text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::Requested => "requested by the query",
            Self::SimpleQuestion => "simple question",
            Self::BridgeQuestion => "bridge question",
            Self::ComparisonQuestion => "comparison question",
            Self::AsksForReport => "a complex question asking for a report",
            Self::Job => "a job, not a question",
            Self::ErrorQuestion => "an error to diagnose",
        }
    }
}

impl std::fmt::Display for StrategyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
