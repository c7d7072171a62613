//! The research plan's tools, and the plan written without a model: open the knowledge base,
//! check or ingest each lasting reference in turn, search the knowledge base once per theme,
//! and search the web once per ephemeral link, on that link's site.

use ferret_core::text::words;
use ferret_plan::without_references;

use crate::brief::without_numbering;
use crate::{Classification, Place, ResearchBrief, Target};

/// Opens the knowledge base (`vector_store="name"`), checks that a file is in it
/// (`name="file.md"`), or fetches and ingests a page the syllabus lists (`url=`, with `name`,
/// `text` and `keywords` for its registry entry). Its result is the knowledge base's name, so
/// steps that take `vector_store=#En` wait for it.
pub const DOCUMENTALIST: &str = "Documentalist";
/// Searches the knowledge base: `FileSearch["query", vector_store=#En]`.
pub const FILE_SEARCH: &str = "FileSearch";
/// Searches the web once: `WebSearch["query", "https://site/…"]`, kept to that site when the
/// web backend can restrict a search to one.
pub const WEB_SEARCH: &str = "WebSearch";

/// The research tools, as a plan names them.
pub const RESEARCH_TOOLS: [&str; 3] = [DOCUMENTALIST, FILE_SEARCH, WEB_SEARCH];

/// Content words of a web query taken from a passage, at most.
const WEB_QUERY_WORDS: usize = 10;

/// The plan of a run without a model, in the plan language, at most `max_steps` steps. A web
/// search is planned for each ephemeral link whether or not a web backend is there: without
/// one the step says it was skipped, so the run's record shows what was left out.
///
/// When the steps would be too many, web searches go first, then checks of known files (the
/// searches find those files anyway), then themes from the last; the opening step and the
/// ingestion of every reference stay.
pub fn heuristic_plan(
    brief: &ResearchBrief,
    classification: &Classification,
    max_steps: usize,
) -> String {
    let ingests = classification.to_ingest.len();
    let searches = brief.themes.len().max(1);
    let mut room = max_steps.saturating_sub(1 + ingests);
    let themes = searches.min(room).max(1);
    room = room.saturating_sub(themes);
    let known = classification.known.len().min(room);
    room -= known;
    let links = classification.ephemeral.len().min(room);
    let mut plan = Plan::default();
    let mut store = plan.step(
        "Open the knowledge base of the course.",
        DOCUMENTALIST,
        format!("vector_store={}", quoted(&brief.title)),
    );
    for reference in classification.known.iter().take(known) {
        if let Target::File(name) = &reference.target {
            store = plan.step(
                &format!("Check that {name} is in the knowledge base."),
                DOCUMENTALIST,
                format!("name={}, vector_store=#{store}", quoted(name)),
            );
        }
    }
    for reference in &classification.to_ingest {
        if let Target::Url(url) = &reference.target {
            // The fragment names a place in the page, not the page.
            let mut page = url.clone();
            page.set_fragment(None);
            let mut arguments = format!("url={}", quoted(page.as_str()));
            if let Some(title) = &reference.title {
                arguments.push_str(&format!(", name={}", quoted(title)));
            }
            if let Some(text) = &reference.text {
                arguments.push_str(&format!(", text={}", quoted(text)));
            }
            if !reference.keywords.is_empty() {
                let keywords: Vec<String> = reference.keywords.iter().map(|k| quoted(k)).collect();
                arguments.push_str(&format!(", keywords=[{}]", keywords.join(", ")));
            }
            arguments.push_str(&format!(", vector_store=#{store}"));
            store = plan.step(
                &format!(
                    "Ingest {} from the References.",
                    reference.title.as_deref().unwrap_or(url.as_str())
                ),
                DOCUMENTALIST,
                arguments,
            );
        }
    }
    // The theme's name alone: sub-headings such as "Readings" or "Lab" name the course's
    // parts, not what to look for, and the query heads the note's section.
    // Without themes, the course's title is what the note is about.
    let subjects: Vec<&str> = match brief.themes.as_slice() {
        [] => vec![brief.title.as_str()],
        themes => themes.iter().map(|t| t.name.as_str()).collect(),
    };
    for subject in subjects.into_iter().take(themes) {
        plan.step(
            &format!("Find what the knowledge base says about {subject}."),
            FILE_SEARCH,
            format!("{}, vector_store=#{store}", quoted(subject)),
        );
    }
    for reference in classification.ephemeral.iter().take(links) {
        let (Target::Url(url), Place::Module { heading, passage }) =
            (&reference.target, &reference.place)
        else {
            continue;
        };
        let module = without_numbering(heading);
        let query = web_query(reference.title.as_deref(), &module, passage);
        plan.step(
            &format!("Find an anecdote, figure or quotation for the passage on {module}."),
            WEB_SEARCH,
            format!("{}, {}", quoted(&query), quoted(url.as_str())),
        );
    }
    plan.text
}

/// A plan's text being written, numbering its steps.
#[derive(Default)]
struct Plan {
    text: String,
    steps: usize,
}

impl Plan {
    /// Add a step with its reason; returns its variable (`E3`).
    fn step(&mut self, reason: &str, tool: &str, arguments: String) -> String {
        let variable = format!("E{}", self.steps);
        self.steps += 1;
        self.text.push_str(&format!(
            "Plan: {reason}\n#{variable} = {tool}[{arguments}]\n"
        ));
        variable
    }
}

/// `text` as a quoted argument: quotes and backslashes escaped, line breaks as spaces, and
/// nothing a plan reads as a step's result (`#E1`, as in a colour `#E0E0E0`) or as the start
/// of the XML form (`<plan`).
pub(crate) fn quoted(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let defused = without_references(&one_line).replace("<plan", "< plan");
    format!("\"{}\"", defused.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A web query for a link's passage: the link's text (or the module's name), then the
/// passage's first content words, the link's own address left out.
fn web_query(title: Option<&str>, heading: &str, passage: &str) -> String {
    let lead = title.unwrap_or(heading);
    let lead_words: Vec<String> = words(lead).collect();
    let rest: Vec<String> = passage
        .split_whitespace()
        .filter(|w| !w.contains("://"))
        .flat_map(|w| words(w).collect::<Vec<_>>())
        .filter(|w| w.chars().count() > 2 && !ferret_core::text::is_stop_word(w))
        .filter(|w| !lead_words.contains(w))
        .take(WEB_QUERY_WORDS)
        .collect();
    if rest.is_empty() {
        lead.to_owned()
    } else {
        format!("{lead} {}", rest.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_would_end_the_string() {
        assert_eq!(quoted("a \"b\" \\ c\nd"), r#""a \"b\" \\ c d""#);
    }

    #[test]
    fn quoted_text_never_reads_as_a_reference_or_an_xml_plan() {
        assert_eq!(
            quoted("colour #E0E0E0, issue #e2 and <plan> tags"),
            r#""colour E0E0E0, issue e2 and < plan> tags""#
        );
    }

    #[test]
    fn a_web_query_leads_with_the_links_text_and_leaves_addresses_out() {
        assert_eq!(
            web_query(
                Some("LangChain RAG tutorial"),
                "Module 2",
                "The LangChain RAG tutorial (https://x.org/rag) walks through loading and splitting a corpus."
            ),
            "LangChain RAG tutorial walks loading splitting corpus"
        );
        assert_eq!(web_query(None, "Agents", "https://x.org"), "Agents");
    }
}

#[cfg(test)]
mod limits {
    use super::*;
    use crate::Syllabus;

    #[test]
    fn a_plan_keeps_within_its_steps_dropping_web_searches_first() {
        let mut syllabus = String::from("# Course\n\n## Module 1: Agents\n\nAgents plan.\n\n");
        for n in 0..30 {
            syllabus.push_str(&format!("See https://site{n}.example/page for more.\n\n"));
        }
        syllabus.push_str("## References\n\n");
        for n in 0..5 {
            syllabus.push_str(&format!("- https://ref{n}.example/read.md\n"));
        }
        let syllabus = Syllabus::read(&syllabus);
        let classification = syllabus.classify(&std::collections::HashSet::<String>::new());
        let brief = ResearchBrief::from_syllabus(&syllabus);
        let plan = heuristic_plan(&brief, &classification, 12);
        let steps: Vec<&str> = plan.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(steps.len(), 12, "{plan}");
        let count = |tool: &str| steps.iter().filter(|l| l.contains(tool)).count();
        assert_eq!(
            count("= Documentalist["),
            6,
            "the opening step and every reference"
        );
        assert_eq!(count("= FileSearch["), 1);
        assert_eq!(count("= WebSearch["), 5);
    }

    #[test]
    fn a_syllabus_without_themes_searches_its_title() {
        let syllabus = Syllabus::read("# Agents\n\n## References\n\n- https://a.example/x.md\n");
        let classification = syllabus.classify(&std::collections::HashSet::<String>::new());
        let brief = ResearchBrief::from_syllabus(&syllabus);
        let plan = heuristic_plan(&brief, &classification, 40);
        assert!(
            plan.contains("#E2 = FileSearch[\"Agents\", vector_store=#E1]"),
            "{plan}"
        );
    }
}
