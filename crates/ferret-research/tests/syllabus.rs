//! The course syllabus fixture (`fixtures/research/syllabus/course.md`): its agenda and how its
//! references sort against a knowledge base holding two of its files.

use std::collections::HashSet;
use std::path::Path;

use ferret_research::{Classification, Module, Place, Reference, Syllabus, Target};

fn course() -> Syllabus {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/research/syllabus/course.md");
    let markdown = std::fs::read_to_string(&path).expect("the course fixture");
    Syllabus::read(&markdown)
}

fn classified() -> Classification {
    let known: HashSet<&str> = HashSet::from([
        "Prompt_Engineering_for_Developers.txt",
        "03_Adversarial_Attacks_on_LLMs.md",
    ]);
    course().classify(&known)
}

fn url(reference: &Reference) -> &str {
    match &reference.target {
        Target::Url(url) => url.as_str(),
        Target::File(name) => panic!("{name} is a file, not an address"),
    }
}

fn file(reference: &Reference) -> &str {
    match &reference.target {
        Target::File(name) => name,
        Target::Url(url) => panic!("{url} is an address, not a file"),
    }
}

/// The heading and passage of a reference found in a module.
fn module_place(reference: &Reference) -> (&str, &str) {
    match &reference.place {
        Place::Module { heading, passage } => (heading, passage),
        Place::References => panic!("{} is in References", reference.target),
    }
}

#[test]
fn the_agenda_is_the_title_and_every_other_heading() {
    let syllabus = course();
    assert_eq!(syllabus.title.as_deref(), Some("AI Engineer Basic Course"));
    assert_eq!(
        syllabus.introduction.as_deref(),
        Some(
            "A four-week introduction to building applications on large language models: \
             prompting, retrieval, agents and safety. Each week ends with a short lab."
        )
    );
    let outline: Vec<(&str, u8, Vec<&str>, usize)> = syllabus
        .modules
        .iter()
        .map(|m| {
            let path = m.path.iter().map(String::as_str).collect();
            (m.heading.as_str(), m.level, path, m.line)
        })
        .collect();
    let module_1 = "Module 1: Prompt Engineering";
    let module_3 = "Module 3: Agents";
    assert_eq!(
        outline,
        [
            (module_1, 2, vec![], 6),
            ("Readings", 3, vec![module_1], 10),
            ("Lab", 3, vec![module_1], 15),
            ("Module 2: Retrieval-Augmented Generation", 2, vec![], 25),
            (module_3, 2, vec![], 31),
            ("Evaluation", 3, vec![module_3], 36),
            ("Module 4: Safety", 2, vec![], 40),
        ]
    );
}

#[test]
fn module_text_is_plain_and_leaves_code_out() {
    let syllabus = course();
    let text = |heading: &str| -> &str {
        let module: &Module = syllabus
            .modules
            .iter()
            .find(|m| m.heading == heading)
            .unwrap();
        &module.text
    };
    assert_eq!(
        text("Lab"),
        "Call a chat model from Python and compare zero-shot and few-shot prompts:"
    );
    assert_eq!(
        text("Readings"),
        "Start with the course notes in Prompt_Engineering_for_Developers.txt, then the lab \
         sheet 09_Missing_Notes.md if it was handed out."
    );
    assert!(text("Module 2: Retrieval-Augmented Generation")
        .starts_with("Retrieval grounds answers in documents. The LangChain RAG tutorial walks"));
    assert!(syllabus
        .modules
        .iter()
        .all(|m| !m.text.contains("api.example.com")));
}

#[test]
fn references_are_found_once_each_in_document_order_and_code_is_ignored() {
    let syllabus = course();
    let found: Vec<(String, usize)> = syllabus
        .references
        .iter()
        .map(|r| (r.target.to_string(), r.line))
        .collect();
    let expected = [
        ("Prompt_Engineering_for_Developers.txt", 12),
        ("09_Missing_Notes.md", 13),
        ("https://python.langchain.com/docs/tutorials/rag/", 27),
        (
            "https://www.pinecone.io/learn/retrieval-augmented-generation/",
            29,
        ),
        ("https://huyenchip.com/2025/01/07/agents.html", 46),
        ("https://www.promptingguide.ai/introduction/basics.md", 47),
        ("https://arxiv.org/pdf/2303.08774.pdf", 49),
        ("03_Adversarial_Attacks_on_LLMs.md", 50),
        ("https://react-lm.github.io/", 51),
    ];
    let expected: Vec<(String, usize)> = expected.iter().map(|&(t, l)| (t.to_owned(), l)).collect();
    assert_eq!(found, expected);
}

#[test]
fn known_files_are_the_ones_the_knowledge_base_holds() {
    let sorted = classified();
    assert_eq!(sorted.known.len(), 2);

    let notes = &sorted.known[0];
    assert_eq!(file(notes), "Prompt_Engineering_for_Developers.txt");
    assert_eq!(notes.line, 12);
    assert_eq!(notes.title, None);
    let (heading, passage) = module_place(notes);
    assert_eq!(heading, "Readings");
    assert!(passage.starts_with("Start with the course notes in"));

    let attacks = &sorted.known[1];
    assert_eq!(file(attacks), "03_Adversarial_Attacks_on_LLMs.md");
    assert_eq!(attacks.place, Place::References);
    assert_eq!(
        attacks.text.as_deref(),
        Some("the course's notes on attacks against models.")
    );
    assert_eq!(attacks.line, 50);
}

#[test]
fn an_unknown_file_is_reported_missing() {
    let sorted = classified();
    assert_eq!(sorted.missing_files.len(), 1);
    let missing = &sorted.missing_files[0];
    assert_eq!(file(missing), "09_Missing_Notes.md");
    assert_eq!(missing.line, 13);
    assert_eq!(module_place(missing).0, "Readings");
}

#[test]
fn addresses_in_references_are_ingested_with_their_title_text_and_keywords() {
    let sorted = classified();
    assert_eq!(sorted.to_ingest.len(), 3);

    let agents = &sorted.to_ingest[0];
    assert_eq!(url(agents), "https://huyenchip.com/2025/01/07/agents.html");
    assert_eq!(agents.title.as_deref(), Some("Agents"));
    assert_eq!(
        agents.text.as_deref(),
        Some("Chip Huyen on agents and planning.")
    );
    assert_eq!(agents.keywords, ["agents", "planning"]);
    assert_eq!(agents.place, Place::References);

    let basics = &sorted.to_ingest[1];
    assert_eq!(
        url(basics),
        "https://www.promptingguide.ai/introduction/basics.md"
    );
    assert_eq!(basics.title, None);
    assert_eq!(basics.text, None);
    assert_eq!(basics.keywords, ["prompting", "few-shot"]);

    // Also named in Module 3: References wins, and there is no one-off search for it.
    let react = &sorted.to_ingest[2];
    assert_eq!(url(react), "https://react-lm.github.io/");
    assert_eq!(
        react.title.as_deref(),
        Some("ReAct: Synergizing Reasoning and Acting")
    );
    assert_eq!(react.place, Place::References);
    assert_eq!(react.line, 51);
}

#[test]
fn addresses_in_modules_are_ephemeral_with_their_passage() {
    let sorted = classified();
    assert_eq!(sorted.ephemeral.len(), 2);
    let rag = "Module 2: Retrieval-Augmented Generation";
    let passage = "Retrieval grounds answers in documents. The LangChain RAG tutorial walks \
                   through loading, splitting and indexing a corpus; compare it with the \
                   approach in https://www.pinecone.io/learn/retrieval-augmented-generation/.";

    let tutorial = &sorted.ephemeral[0];
    assert_eq!(
        url(tutorial),
        "https://python.langchain.com/docs/tutorials/rag/"
    );
    assert_eq!(tutorial.title.as_deref(), Some("LangChain RAG tutorial"));
    assert_eq!(module_place(tutorial), (rag, passage));
    assert_eq!(tutorial.text, None);
    assert!(tutorial.keywords.is_empty());
    assert_eq!(tutorial.line, 27);

    // The sentence's full stop is not part of the address.
    let pinecone = &sorted.ephemeral[1];
    assert_eq!(
        url(pinecone),
        "https://www.pinecone.io/learn/retrieval-augmented-generation/"
    );
    assert_eq!(pinecone.title, None);
    assert_eq!(module_place(pinecone), (rag, passage));
    assert_eq!(pinecone.line, 29);
}

#[test]
fn a_pdf_is_not_read_and_says_what_to_do() {
    let sorted = classified();
    assert_eq!(sorted.not_text.len(), 1);
    let pdf = &sorted.not_text[0];
    assert_eq!(url(&pdf.reference), "https://arxiv.org/pdf/2303.08774.pdf");
    assert_eq!(
        pdf.reference.title.as_deref(),
        Some("GPT-4 Technical Report")
    );
    assert_eq!(
        pdf.reason,
        "PDF is not read: convert it to markdown or text and ingest the file"
    );
    assert!(sorted.not_web.is_empty());
}

#[test]
fn the_classification_prints_one_line_per_reference() {
    let printed = classified().to_string();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines[0],
        "9 references: 2 known, 3 to ingest, 2 ephemeral, 1 missing file, 1 not text"
    );
    assert_eq!(lines.len(), 10);
    assert!(lines
        .contains(&"  known        Prompt_Engineering_for_Developers.txt (line 12, \"Readings\")"));
    assert!(lines.contains(
        &"  not text     https://arxiv.org/pdf/2303.08774.pdf (line 49, References): PDF is not \
           read: convert it to markdown or text and ingest the file"
    ));
}

#[test]
fn the_classification_saves_as_json_and_reads_back() {
    let sorted = classified();
    let json = serde_json::to_string(&sorted).unwrap();
    assert!(json.contains(r#""target":{"url":"https://huyenchip.com/2025/01/07/agents.html"}"#));
    assert!(json.contains(r#""place":{"kind":"references"}"#));
    let back: Classification = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sorted);
}
