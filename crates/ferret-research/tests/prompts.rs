//! The research planner's prompt for the fixture syllabus, pinned: these are the words a model
//! reads, so any change to them should be seen and reviewed.

use std::collections::HashSet;

use ferret_llm::Prompts;
use ferret_research::{ResearchBrief, ResearchPlanRequest, ResearchPlanningContext, Syllabus};

const SYLLABUS: &str = include_str!("../../../fixtures/research/syllabus/course.md");

fn render(previous_plan: Option<&str>, problems: &[String]) -> String {
    let syllabus = Syllabus::read(SYLLABUS);
    let known: HashSet<&str> = ["Prompt_Engineering_for_Developers.txt"].into();
    let classification = syllabus.classify(&known);
    let brief = ResearchBrief::from_syllabus(&syllabus);
    let context = ResearchPlanningContext::new(&ResearchPlanRequest {
        brief: &brief,
        classification: &classification,
        max_steps: 20,
        previous_plan,
        problems,
    });
    Prompts::new()
        .review(&context)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn research_planning_prompt() {
    insta::assert_snapshot!(render(None, &[]));
}

#[test]
fn research_replanning_prompt() {
    let previous = "#E0 = Documentalist[vector_store=\"AI Engineer Basic Course\"]\n#E1 = FileSearch[\"Agents\", vector_store=#E0]";
    insta::assert_snapshot!(render(
        Some(previous),
        &["the note was rejected: cover the safety module too".to_owned()]
    ));
}

#[test]
fn research_brief_prompt() {
    let context = ferret_research::ResearchBriefContext::new(&Syllabus::read(SYLLABUS));
    insta::assert_snapshot!(Prompts::new()
        .review(&context)
        .unwrap_or_else(|e| panic!("{e}")));
}
