//! Research from a course syllabus. [`Syllabus`] reads the agenda and sorts the references
//! ([`Classification`]): files the knowledge base holds, pages listed under References to add
//! for good, links in a module's text worth one web search, and what cannot be read.
//! [`ResearchBrief`] turns the agenda into themes, sub-themes and research axes. [`Researcher`]
//! has a [`ResearchPlanner`] (the rules, or a model) write a plan of Documentalist, FileSearch
//! and WebSearch steps in the plan language, checks it against [`RESEARCH_SIGNATURES`], runs
//! it wave by wave, has the report writer compile the note, and sends a note the evaluator
//! rejects back to the planner. The run is a [`ResearchRecord`], saved in a folder and replayed
//! without a call.
//!
//! It must not depend on a concrete backend or an embedding runtime: searches go through
//! [`ResearchTools`], which the facade implements over its executor, and documents reach the
//! index through the Documentalist's `KnowledgeIndex`.

mod brief;
mod briefing;
mod error;
mod folder;
mod plan;
mod planning;
mod run;
mod syllabus;

pub use brief::{ResearchBrief, Theme};
pub use briefing::{
    BriefWriter, HeuristicBriefWriter, LlmBriefWriter, ResearchBriefContext, ResearchBriefReply,
    ThemeReply,
};
pub use error::{ResearchError, ResearchToolError};
pub use folder::{run_folder_name, RunFolderError, RECORD_FILE};
pub use plan::{heuristic_plan, DOCUMENTALIST, FILE_SEARCH, RESEARCH_TOOLS, WEB_SEARCH};
pub use planning::{
    HeuristicResearchPlanner, LlmResearchPlanner, ResearchPlanReply, ResearchPlanRequest,
    ResearchPlanner, ResearchPlanningContext, RESEARCH_SIGNATURES,
};
pub use run::{ResearchConfig, ResearchOutcome, ResearchRecord, ResearchTools, Researcher};
pub use syllabus::{
    Classification, KnownFiles, Module, Place, Reference, Syllabus, Target, Unread,
};
