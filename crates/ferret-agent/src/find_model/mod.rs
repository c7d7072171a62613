//! The model-file finder's stages: the search plan for a missing model file (the heuristic's
//! name variants, or a model's `{tool, query}` steps) and the validation of what the hubs
//! return (hard rules, and a model's 0-100 judgement blended in when one is configured). The
//! strategy that runs them is `strategy/find_model.rs`.

mod names;
mod planning;
mod ranking;

pub use names::{base_model_label, ModelFamilies, ModelFamily};
pub(crate) use planning::recorded_steps;
pub use planning::{
    tool_name, FindStep, HeuristicModelSearchPlanner, LlmModelSearchPlanner, ModelSearchPlanner,
    MAX_FIND_STEPS,
};
pub(crate) use ranking::{name_conflicts, rank, score, status};
pub use ranking::{CandidateValidator, LlmCandidateValidator, NameMatch, RuleValidator, Scored};
