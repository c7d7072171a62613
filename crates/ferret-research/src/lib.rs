//! `ferret-research` runs research from a course syllabus. For now it reads the syllabus: its
//! agenda (title, modules and their text) and the references it lists, sorted into files the
//! knowledge base already holds, pages to ingest for good, links worth only a one-off web search,
//! and what cannot be read ([`Syllabus`], [`Classification`]). Later it will write the research
//! brief, plan the searches and assemble the report.
//!
//! It reads text, nothing else: it must not depend on any HTTP client, concrete backend or model
//! runtime; callers fetch, ingest and search. Its dependencies are a markdown parser, `url` and
//! serde.

mod brief;
mod folder;
mod plan;
mod planning;
mod run;
mod syllabus;

pub use brief::{ResearchBrief, Theme};
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
