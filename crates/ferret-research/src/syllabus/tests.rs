use super::scan::MAX_PASSAGE;
use super::*;
use proptest::prelude::*;

fn targets(syllabus: &Syllabus) -> Vec<String> {
    syllabus
        .references
        .iter()
        .map(|r| r.target.to_string())
        .collect()
}

fn only(markdown: &str) -> Reference {
    let mut references = Syllabus::read(markdown).references;
    assert_eq!(references.len(), 1, "{references:?}");
    references.remove(0)
}

fn nothing_known(_: &str) -> bool {
    false
}

#[test]
fn empty_input_is_an_empty_syllabus() {
    for markdown in ["", "   \n\n", "---\n"] {
        let syllabus = Syllabus::read(markdown);
        assert_eq!(syllabus, Syllabus::default(), "{markdown:?}");
        let sorted = syllabus.classify(&nothing_known);
        assert_eq!(sorted, Classification::default());
        assert_eq!(sorted.to_string(), "no references\n");
    }
}

#[test]
fn without_references_every_address_is_ephemeral() {
    let syllabus = Syllabus::read(
        "# Course\n\n## Week 1\n\nRead [the guide](https://a.org/guide).\n\n\
         ## Week 2\n\nThen https://b.org/post.\n",
    );
    let sorted = syllabus.classify(&nothing_known);
    assert!(sorted.to_ingest.is_empty());
    let ephemeral: Vec<String> = sorted
        .ephemeral
        .iter()
        .map(|r| r.target.to_string())
        .collect();
    assert_eq!(ephemeral, ["https://a.org/guide", "https://b.org/post"]);
    let heading = |r: &Reference| match &r.place {
        Place::Module { heading, .. } => heading.clone(),
        Place::References => String::new(),
    };
    assert_eq!(heading(&sorted.ephemeral[0]), "Week 1");
    assert_eq!(heading(&sorted.ephemeral[1]), "Week 2");
}

#[test]
fn references_headings_in_french_and_english_with_numbering() {
    for heading in [
        "## Références",
        "## RÉFÉRENCES",
        "## 5. Bibliographie :",
        "### Further reading",
        "## Reading List",
        "## Sources",
    ] {
        let reference = only(&format!("# Cours\n\n{heading}\n\n- https://a.org/x\n"));
        assert_eq!(reference.place, Place::References, "{heading}");
    }
    let reference = only("# Cours\n\n## Referencing styles\n\n- https://a.org/x\n");
    assert_ne!(reference.place, Place::References);
}

#[test]
fn references_end_at_a_heading_of_their_level_and_hold_their_sub_headings() {
    let syllabus = Syllabus::read(
        "# Course\n\n## References\n\n### Articles\n\n- https://a.org/x\n\n\
         ## Appendix\n\nSee https://b.org/y\n",
    );
    let headings: Vec<&str> = syllabus
        .modules
        .iter()
        .map(|m| m.heading.as_str())
        .collect();
    assert_eq!(headings, ["Appendix"]);
    assert_eq!(syllabus.references[0].place, Place::References);
    assert!(matches!(syllabus.references[1].place, Place::Module { .. }));
}

#[test]
fn keywords_lines_in_their_variants() {
    let cases: [(&str, &[&str], Option<&str>); 7] = [
        ("- https://a.org/x\n  Keywords: a, b\n", &["a", "b"], None),
        (
            "- https://a.org/x\nTags: a;b ; c.\n",
            &["a", "b", "c"],
            None,
        ),
        (
            "- https://a.org/x Guide. **Mots-clés :** a,, b\n",
            &["a", "b"],
            Some("Guide."),
        ),
        ("- https://a.org/x\n\n  keywords: a\n", &["a"], None),
        (
            "- https://a.org/x — Guide\n  - Key words: a\n",
            &["a"],
            Some("Guide"),
        ),
        (
            "https://a.org/x\n\nIntro text. Keywords: a\n",
            &["a"],
            Some("Intro text."),
        ),
        (
            "- https://a.org/x\n  Hashtags: a\n",
            &[],
            Some("Hashtags: a"),
        ),
    ];
    for (entry, keywords, text) in cases {
        let reference = only(&format!("## References\n\n{entry}"));
        assert_eq!(reference.keywords, keywords, "{entry:?}");
        assert_eq!(reference.text.as_deref(), text, "{entry:?}");
        assert_eq!(reference.title, None);
    }
}

#[test]
fn a_table_row_is_one_entry() {
    let reference = only(
        "## References\n\n| Link | About |\n|---|---|\n\
         | [Agents](https://a.org/x) | agents. Tags: a |\n",
    );
    assert_eq!(reference.title.as_deref(), Some("Agents"));
    assert_eq!(reference.text.as_deref(), Some("agents."));
    assert_eq!(reference.keywords, ["a"]);
    assert_eq!(reference.line, 5);
}

#[test]
fn a_keywords_line_after_other_text_completes_nothing() {
    let syllabus = Syllabus::read(
        "## References\n\n- https://a.org/x\n\nAll links read in 2025.\n\nKeywords: a\n",
    );
    assert!(syllabus.references[0].keywords.is_empty());
}

#[test]
fn several_addresses_in_one_entry_share_its_text_and_keywords() {
    let syllabus = Syllabus::read(
        "## References\n\n- [A](https://a.org) and [B](https://b.org): comparisons. \
         Keywords: x\n",
    );
    for reference in &syllabus.references {
        assert_eq!(reference.text.as_deref(), Some("comparisons."));
        assert_eq!(reference.keywords, ["x"]);
    }
    assert_eq!(targets(&syllabus), ["https://a.org/", "https://b.org/"]);
}

#[test]
fn contact_links_are_skipped_and_other_schemes_are_not_web() {
    let syllabus = Syllabus::read(
        "## Contact\n\nWrite to [the teacher](mailto:t@school.org) or call \
         [us](tel:+331234).\n\n## References\n\n- [Mirror](ftp://ftp.a.org/notes.txt)\n",
    );
    assert_eq!(targets(&syllabus), ["ftp://ftp.a.org/notes.txt"]);
    let sorted = syllabus.classify(&nothing_known);
    assert_eq!(sorted.not_web.len(), 1);
    assert_eq!(
        sorted.not_web[0].reason,
        "ftp: is not a web address: only http and https are read"
    );
    assert!(sorted.to_ingest.is_empty() && sorted.missing_files.is_empty());
}

#[test]
fn trailing_punctuation_is_not_part_of_an_address() {
    for (prose, address) in [
        ("see https://x.org/a.", "https://x.org/a"),
        ("(see https://x.org/a).", "https://x.org/a"),
        ("at https://x.org/a, then", "https://x.org/a"),
        ("is it https://x.org/a?", "https://x.org/a"),
        ("« https://x.org/a »", "https://x.org/a"),
        (
            "see https://en.wikipedia.org/wiki/Agent_(AI).",
            "https://en.wikipedia.org/wiki/Agent_(AI)",
        ),
        ("see https://x.org/a?q=1&b=2.", "https://x.org/a?q=1&b=2"),
        ("HTTPS://X.ORG/a", "https://x.org/a"),
        ("[see https://x.org/a_(b)]", "https://x.org/a_(b)"),
    ] {
        let reference = only(&format!("## Week 1\n\n{prose}\n"));
        assert_eq!(reference.target.to_string(), address, "{prose}");
    }
    for prose in ["xhttps://x.org/a", "https:// nothing", "http is a protocol"] {
        assert!(Syllabus::read(prose).references.is_empty(), "{prose}");
    }
}

#[test]
fn code_is_not_scanned_but_a_lone_file_name_in_a_code_span_counts() {
    let syllabus = Syllabus::read(
        "## Lab\n\nRun `curl https://api.x.org/v1` and open `notes.md`.\n\n\
         ```\nhttps://y.org/z and other.md\n```\n\n    https://indented.org/code\n",
    );
    assert_eq!(targets(&syllabus), ["notes.md"]);
}

#[test]
fn file_names_in_prose_links_and_paths() {
    let syllabus = Syllabus::read(
        "## Week 1\n\nRead 01_Intro.md. Then [the notes](docs/02_Notes.txt#part), e.g. \
         Node.js v1.2, and slides.PPTX or example.org/page.html.\n",
    );
    assert_eq!(
        targets(&syllabus),
        ["01_Intro.md", "02_Notes.txt", "slides.PPTX"]
    );
    assert_eq!(syllabus.references[1].title.as_deref(), Some("the notes"));
    let sorted = syllabus.classify(&|name: &str| name == "01_Intro.md");
    assert_eq!(sorted.known.len(), 1);
    assert_eq!(sorted.missing_files.len(), 1);
    assert_eq!(
        sorted.not_text[0].reason,
        "PPTX is not read: convert it to markdown or text and ingest the file"
    );
}

#[test]
fn images_are_references_that_are_not_text() {
    let syllabus = Syllabus::read("## Week 1\n\n![diagram](https://a.org/d.png)\n");
    let sorted = syllabus.classify(&nothing_known);
    assert_eq!(sorted.not_text.len(), 1);
    assert_eq!(
        sorted.not_text[0].reference.title.as_deref(),
        Some("diagram")
    );
    assert_eq!(
        sorted.not_text[0].reason,
        "PNG is not read: an image has no text to ingest"
    );
}

#[test]
fn a_link_whose_text_is_its_address_has_no_title() {
    for entry in [
        "<https://a.org/x>",
        "[https://a.org/x](https://a.org/x)",
        "[](https://a.org/x)",
    ] {
        let reference = only(&format!("## References\n\n- {entry}: a guide\n"));
        assert_eq!(reference.title, None, "{entry}");
        assert_eq!(reference.text.as_deref(), Some("a guide"), "{entry}");
    }
}

#[test]
fn a_duplicate_is_one_reference_completed_by_the_later_ones() {
    let syllabus = Syllabus::read(
        "## References\n\n- https://a.org/x\n- [Guide](https://a.org/x#part): the guide. \
         Keywords: k\n- [Other](https://a.org/x): other text. Keywords: z\n",
    );
    let reference = &syllabus.references;
    assert_eq!(reference.len(), 1);
    assert_eq!(reference[0].target.to_string(), "https://a.org/x");
    assert_eq!(reference[0].title.as_deref(), Some("Guide"));
    assert_eq!(reference[0].text.as_deref(), Some("the guide."));
    assert_eq!(reference[0].keywords, ["k"]);
    assert_eq!(reference[0].line, 3);
}

#[test]
fn a_module_mention_of_a_listed_address_yields_to_references() {
    let syllabus = Syllabus::read(
        "## Week 1\n\nSee [the essay](https://a.org/x).\n\n## References\n\n- https://a.org/x\n",
    );
    let reference = &syllabus.references;
    assert_eq!(reference.len(), 1);
    assert_eq!(reference[0].place, Place::References);
    assert_eq!(reference[0].title.as_deref(), Some("the essay"));
    assert_eq!(reference[0].line, 7);
    assert!(syllabus.classify(&nothing_known).ephemeral.is_empty());
}

#[test]
fn a_long_paragraph_gives_the_sentence_around_the_address() {
    let filler = "This sentence only fills the paragraph up. ".repeat(10);
    let reference = only(&format!(
        "## Week 1\n\n{filler}The key idea is at https://a.org/x. {filler}\n"
    ));
    let Place::Module { passage, .. } = reference.place else {
        panic!("not in a module");
    };
    assert_eq!(passage, "The key idea is at https://a.org/x.");

    let long = "word ".repeat(200);
    let reference = only(&format!("## Week 1\n\n{long}https://a.org/x {long}\n"));
    let Place::Module { passage, .. } = reference.place else {
        panic!("not in a module");
    };
    assert!(passage.contains("https://a.org/x"));
    assert!(
        passage.chars().count() <= MAX_PASSAGE + 2,
        "{}",
        passage.len()
    );
}

#[test]
fn text_before_any_module_is_the_introduction_and_its_links_sit_under_the_title() {
    let syllabus = Syllabus::read("# Course\n\nAbout https://a.org/x.\n\n## Week 1\n");
    assert_eq!(
        syllabus.introduction.as_deref(),
        Some("About https://a.org/x.")
    );
    let place = &syllabus.references[0].place;
    assert!(matches!(place, Place::Module { heading, .. } if heading == "Course"));
    assert_eq!(syllabus.modules[0].text, "");
}

#[test]
fn front_matter_is_not_read() {
    let syllabus = Syllabus::read("---\nsource: https://a.org/x\n---\n# Course\n");
    assert_eq!(syllabus.title.as_deref(), Some("Course"));
    assert!(syllabus.references.is_empty() && syllabus.modules.is_empty());
}

#[test]
fn known_files_can_be_a_set_or_a_function() {
    let syllabus = Syllabus::read("## Week 1\n\nRead a.md and b.md.\n");
    let hashed: HashSet<String> = HashSet::from(["a.md".to_owned()]);
    let ordered: BTreeSet<&str> = BTreeSet::from(["a.md"]);
    let function = |name: &str| name == "a.md";
    let lookups: [&dyn KnownFiles; 3] = [&hashed, &ordered, &function];
    for known in lookups {
        let sorted = syllabus.classify(known);
        assert_eq!(sorted.known[0].target, Target::File("a.md".into()));
        assert_eq!(sorted.missing_files[0].target, Target::File("b.md".into()));
    }
}

/// Markdown-looking text: headings, lists, links, code and addresses in any order.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("# ".to_owned()),
        Just("## References\n".to_owned()),
        Just("\n- ".to_owned()),
        Just("\n\n".to_owned()),
        Just("```".to_owned()),
        Just("`".to_owned()),
        Just("[".to_owned()),
        Just("](".to_owned()),
        Just(")".to_owned()),
        Just("https://".to_owned()),
        Just("Keywords: ".to_owned()),
        Just("a.md".to_owned()),
        Just(". ".to_owned()),
        "[a-zé/.:_()é«» |-]{0,12}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn reading_never_panics(markdown in prop_oneof![any::<String>(), markdownish()]) {
        let syllabus = Syllabus::read(&markdown);
        let lines = markdown.split('\n').count();
        for reference in &syllabus.references {
            prop_assert!((1..=lines).contains(&reference.line));
        }
        let sorted = syllabus.classify(&|name: &str| name.len().is_multiple_of(2));
        let _ = sorted.to_string();
    }
}
