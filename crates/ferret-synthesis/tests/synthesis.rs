//! The synthesizer and the citation checker through their public API.

use std::collections::HashSet;

use ferret_core::{Hit, Implementation};
use ferret_synthesis::{
    check_citations, split_sentences, Answer, AnswerSynthesizer, ExtractiveSynthesizer,
    SynthesisConfig,
};
use proptest::prelude::*;

fn hit(id: &str, title: &str, text: &str) -> Hit {
    let mut h = Hit::new(id, title, text, 1.0, "test");
    h.url = Some(format!("https://example.org/{id}"));
    h
}

fn batik_hits() -> Vec<Hit> {
    vec![
        hit(
            "kelantan-batik",
            "Batik of Kelantan",
            "Kelantan batik is known for bold floral motifs. Dr. Aziz of the state museum dated the oldest \
             pieces to c. 1910, i.e. before the war. Artisans apply hot wax with a canting tool.",
        ),
        hit(
            "batik-dyes",
            "Natural dyes",
            "Early batik used indigo and soga dyes. The dyes are fixed by boiling the cloth[3]. Prices rose 3.5 times.",
        ),
        hit("weather", "Weather in Kota Bharu", "Rain is expected on the east coast this week."),
        hit(
            "batik-java",
            "Javanese batik",
            "Javanese batik motifs follow court rules. Kelantan motifs are freer and use brighter dyes.",
        ),
    ]
}

fn cited_hits(answer: &Answer, hits: &[Hit]) -> Vec<Hit> {
    answer
        .citations
        .iter()
        .map(|c| hits.iter().find(|h| h.id == c.hit_id).unwrap().clone())
        .collect()
}

/// Every `[n]` in the text, as numbers.
fn markers(text: &str) -> Vec<usize> {
    let re = regex::Regex::new(r"\[\s*([0-9]+(?:\s*,\s*[0-9]+)*)\s*\]").unwrap();
    re.captures_iter(text)
        .flat_map(|c| {
            c[1].split(',')
                .map(|n| n.trim().parse().unwrap())
                .collect::<Vec<usize>>()
        })
        .collect()
}

#[tokio::test]
async fn extractive_answer_snapshot() {
    let out = ExtractiveSynthesizer::default()
        .synthesize(
            "How do Kelantan batik motifs and dyes differ?",
            &batik_hits(),
        )
        .await;
    assert!(matches!(
        out.implementation,
        Implementation::Heuristic { .. }
    ));
    insta::assert_json_snapshot!(out.value);
    let step = serde_json::to_value(out.value.trace_step(out.implementation)).unwrap();
    assert_eq!(
        (
            step["stage"].as_str(),
            step["sentences"].as_u64(),
            step["citations"].as_u64()
        ),
        (Some("synthesis"), Some(3), Some(3))
    );
}

#[test]
fn answer_cites_in_order_of_first_use_and_covers_different_terms() {
    let hits = batik_hits();
    let a = ExtractiveSynthesizer::default()
        .answer("How do Kelantan batik motifs and dyes differ?", &hits);
    assert_eq!(a.sentences, 3);
    let numbers: Vec<usize> = a.citations.iter().map(|c| c.marker).collect();
    assert_eq!(numbers, (1..=a.citations.len()).collect::<Vec<_>>());
    let first_use: Vec<usize> = markers(&a.text).into_iter().fold(Vec::new(), |mut v, n| {
        if !v.contains(&n) {
            v.push(n);
        }
        v
    });
    assert_eq!(first_use, numbers);
    assert!(
        a.text.contains("dyes"),
        "a dye sentence covers a term the motif sentences miss: {}",
        a.text
    );
    assert!(!a.citations.iter().any(|c| c.hit_id.0 == "weather"));
}

#[test]
fn a_sources_own_footnotes_are_not_carried_over() {
    let a = ExtractiveSynthesizer::default()
        .answer("How are dyes fixed by boiling cloth?", &batik_hits());
    assert!(
        a.text
            .starts_with("The dyes are fixed by boiling the cloth [1]."),
        "{}",
        a.text
    );
}

#[test]
fn extractive_output_passes_the_checker_unchanged() {
    let hits = batik_hits();
    let a = ExtractiveSynthesizer::default().answer("Kelantan batik dyes and motifs", &hits);
    assert_eq!(check_citations(&a.text, &cited_hits(&a, &hits)), a);
}

#[test]
fn no_overlap_falls_back_to_the_first_sentence_of_the_top_hit() {
    let a = ExtractiveSynthesizer::default().answer("quantum chromodynamics", &batik_hits());
    assert_eq!(
        a.text,
        "Kelantan batik is known for bold floral motifs [1]."
    );
    assert_eq!(a.citations[0].hit_id.0, "kelantan-batik");
    assert_eq!(
        a.citations[0].url.as_deref(),
        Some("https://example.org/kelantan-batik")
    );
}

#[test]
fn empty_hits_give_an_empty_answer() {
    assert_eq!(
        ExtractiveSynthesizer::default().answer("batik", &[]),
        Answer::default()
    );
    let blank = [hit("a", "Title only", ""), hit("b", "", " \n ")];
    assert_eq!(
        ExtractiveSynthesizer::default().answer("batik", &blank),
        Answer::default()
    );
}

#[test]
fn limits_on_sentences_sources_and_length_hold() {
    let config = SynthesisConfig {
        max_sentences: 5,
        max_sources: 2,
        max_sentence_chars: 30,
        ..SynthesisConfig::default()
    };
    let a = ExtractiveSynthesizer::new(config)
        .answer("Kelantan batik motifs dyes wax museum", &batik_hits());
    assert!(a.citations.len() <= 2, "{a:?}");
    assert!(a.sentences <= 4, "two per hit at most: {a:?}");
    for s in split_sentences(&a.text) {
        let without_marker = s.split(" [").next().unwrap();
        assert!(without_marker.chars().count() <= 30, "{s}");
    }
    assert!(a.text.contains('\u{2026}'));
}

#[test]
fn the_same_sentence_from_two_hits_is_used_once() {
    let hits = [
        hit("a", "", "Batik uses wax."),
        hit("b", "", "Batik uses wax."),
        hit("c", "", "Batik dyes are natural."),
    ];
    let a = ExtractiveSynthesizer::default().answer("batik wax dyes", &hits);
    assert_eq!(a.text.matches("Batik uses wax").count(), 1, "{}", a.text);
}

#[test]
fn checker_drops_bad_markers_and_renumbers_in_first_use_order() {
    let hits = batik_hits();
    let text = "Motifs are bold [4]. Dyes are natural [2, 9][4]. Wax is hot [0][1,4]. Again [2].";
    let a = check_citations(text, &hits);
    assert_eq!(
        a.text,
        "Motifs are bold [1]. Dyes are natural [2][1]. Wax is hot [3, 1]. Again [2]."
    );
    assert_eq!(a.dropped_markers, 2);
    assert_eq!(a.sentences, 4);
    let cited: Vec<(&str, usize)> = a
        .citations
        .iter()
        .map(|c| (c.hit_id.0.as_str(), c.marker))
        .collect();
    assert_eq!(
        cited,
        [("batik-java", 1), ("batik-dyes", 2), ("kelantan-batik", 3)]
    );
    assert_eq!(a.citations[0].title, "Javanese batik");
    // Checked once, the answer is stable.
    let again = check_citations(&a.text, &cited_hits(&a, &hits));
    assert_eq!(
        (&again.text, &again.citations, again.dropped_markers),
        (&a.text, &a.citations, 0)
    );
}

#[test]
fn checker_merges_repeats_and_hits_sharing_an_id() {
    let mut hits = batik_hits();
    hits.push(hits[0].clone());
    let a = check_citations("One [5, 1, 1]. Two [ 5 ].", &hits);
    assert_eq!(a.text, "One [1]. Two [1].");
    assert_eq!(a.citations.len(), 1);
}

#[test]
fn checker_with_no_hits_removes_every_marker() {
    let a = check_citations("Claim [1]. Other [2, 3].", &[]);
    assert_eq!(
        (a.text.as_str(), a.dropped_markers, a.citations.len()),
        ("Claim. Other.", 3, 0)
    );
}

/// Text that looks like passages: words, abbreviations, numbers, footnotes, odd punctuation.
fn passage() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z]{1,8}",
        "[A-Z][a-z]{1,8}",
        Just("batik".to_owned()),
        Just("Kelantan".to_owned()),
        Just("dyes".to_owned()),
        Just("Dr.".to_owned()),
        Just("e.g.".to_owned()),
        Just("U.S.".to_owned()),
        Just("3.5".to_owned()),
        Just("[2]".to_owned()),
        Just("[1, 9]".to_owned()),
        Just("[[1]2]".to_owned()),
        Just("\"quoted.\"".to_owned()),
        Just("(aside.)".to_owned()),
        Just("...".to_owned()),
        Just("\u{2026}".to_owned()),
        "[.!?,;]",
        Just("\n\n".to_owned()),
        Just("é".to_owned()),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.join(" "))
}

proptest! {
    #[test]
    fn every_marker_resolves_for_passage_like_text(
        question in "(batik|Kelantan|dyes|what|motifs| ){0,6}",
        texts in proptest::collection::vec((passage(), ".{0,20}"), 0..6),
        max_chars in prop_oneof![Just(400usize), 20usize..60],
    ) {
        let hits: Vec<Hit> = texts.iter().enumerate().map(|(i, (t, title))| hit(&format!("h{i}"), title, t)).collect();
        let config = SynthesisConfig { max_sentence_chars: max_chars, ..Default::default() };
        let a = ExtractiveSynthesizer::new(config).answer(&question, &hits);
        assert_resolves(&a, &hits)?;
        let again = check_citations(&a.text, &cited_hits(&a, &hits));
        prop_assert_eq!((&again.text, &again.citations), (&a.text, &a.citations));
        if let Some(short) = &a.short {
            prop_assert!(short.citations.iter().all(|c| a.citations.contains(c)), "{a:?}");
        }
    }

    #[test]
    fn every_marker_resolves_for_arbitrary_text(
        question in ".{0,40}",
        texts in proptest::collection::vec(".{0,300}", 0..6),
    ) {
        let hits: Vec<Hit> = texts.iter().enumerate().map(|(i, t)| hit(&format!("h{i}"), "", t)).collect();
        let a = ExtractiveSynthesizer::default().answer(&question, &hits);
        assert_resolves(&a, &hits)?;
        prop_assert_eq!(&check_citations(&a.text, &cited_hits(&a, &hits)).text, &a.text);
    }

    #[test]
    fn checked_text_only_has_markers_with_citations(text in "([a-z .]|\\[|\\]|[0-9]|, ){0,80}", n in 0usize..4) {
        let hits: Vec<Hit> = (0..n).map(|i| hit(&format!("h{i}"), "", "")).collect();
        let a = check_citations(&text, &hits);
        assert_resolves(&a, &hits)?;
    }
}

fn assert_resolves(a: &Answer, hits: &[Hit]) -> Result<(), TestCaseError> {
    let ids: HashSet<_> = hits.iter().map(|h| &h.id).collect();
    let numbers: HashSet<usize> = a.citations.iter().map(|c| c.marker).collect();
    for n in markers(&a.text) {
        prop_assert!(
            numbers.contains(&n),
            "marker [{}] has no citation in {:?}",
            n,
            a
        );
    }
    for (i, c) in a.citations.iter().enumerate() {
        prop_assert_eq!(c.marker, i + 1);
        prop_assert!(ids.contains(&c.hit_id));
    }
    prop_assert_eq!(a.citations.is_empty(), markers(&a.text).is_empty());
    Ok(())
}

/// Words of `text` without its markers.
fn word_count(text: &str) -> usize {
    let re = regex::Regex::new(r"\[[0-9, ]+\]").unwrap();
    re.replace_all(text, "").split_whitespace().count()
}

#[test]
fn a_question_with_no_question_word_is_answered_in_sentences_without_a_short_answer() {
    let a = ExtractiveSynthesizer::default().answer("Kelantan batik dyes", &batik_hits());
    assert!(!a.text.is_empty() && !a.citations.is_empty(), "{a:?}");
    assert_eq!(a.short, None, "nothing was asked for in a few words");
}

#[test]
fn a_yes_no_question_whose_sources_disagree_says_no_and_cites_both() {
    let hits = [
        hit(
            "mcbride",
            "Jim McBride",
            "Jim McBride is an American film director. He directed The Big Easy.",
        ),
        hit(
            "jordan",
            "Neil Jordan",
            "Neil Jordan is an Irish film director and novelist.",
        ),
    ];
    let a = ExtractiveSynthesizer::default()
        .answer("Are both Jim McBride and Neil Jordan American?", &hits);
    let short = a.short.clone().expect("a yes/no question gets yes or no");
    assert_eq!(short.text, "no", "{a:?}");
    assert_eq!(short.citations.len(), 2, "both sides are cited: {a:?}");
    assert!(
        a.text.contains("American") && a.text.contains("Irish"),
        "{}",
        a.text
    );

    let same = [
        hits[0].clone(),
        hit(
            "jordan",
            "Neil Jordan",
            "Neil Jordan is an American film director and novelist.",
        ),
    ];
    let a = ExtractiveSynthesizer::default()
        .answer("Are both Jim McBride and Neil Jordan American?", &same);
    assert_eq!(a.short.map(|s| s.text).as_deref(), Some("yes"));
}

#[test]
fn a_text_with_no_sentence_boundaries_is_cut_around_the_answer() {
    let filler = "the archive holds letters maps ledgers and photographs ".repeat(120);
    let text = format!("{filler} the museum was founded in 1887 by the city council {filler}");
    let hits = [hit("museum", "City Museum", &text)];
    let config = SynthesisConfig::default();
    let a = ExtractiveSynthesizer::new(config)
        .answer("In what year was the City Museum founded?", &hits);
    assert_eq!(
        a.short.as_ref().map(|s| s.text.as_str()),
        Some("1887"),
        "{a:?}"
    );
    assert!(a.text.contains("1887"), "{}", a.text);
    assert!(
        word_count(&a.text) <= config.factoid_words + 2,
        "{}",
        a.text
    );
}

#[test]
fn text_that_is_not_english_is_answered_from_its_own_words() {
    let hits = [
        hit(
            "uni",
            "Universität Leipzig",
            "Die Universität Leipzig wurde 1409 gegründet. Sie ist eine der ältesten Universitäten Deutschlands.",
        ),
        hit("tokyo", "東京大学", "東京大学は1877年に設立された。"),
    ];
    let a = ExtractiveSynthesizer::default()
        .answer("Wann wurde die Universität Leipzig gegründet?", &hits);
    assert!(a.text.contains("1409"), "{a:?}");
    assert_resolves(&a, &hits).unwrap();
    let a = ExtractiveSynthesizer::default().answer("東京大学はいつ設立されたか", &hits);
    assert_resolves(&a, &hits).unwrap();
}

fn scripted(replies: &[&str]) -> ferret_llm::StageModel {
    let exchanges = replies
        .iter()
        .map(|reply| ferret_llm::Exchange {
            expect_contains: None,
            reply: (*reply).to_owned(),
        })
        .collect();
    ferret_llm::StageModel::new(
        std::sync::Arc::new(ferret_llm::ScriptedModel::new("scripted", exchanges)),
        ferret_llm::StageModelConfig::default(),
    )
}

#[tokio::test]
async fn the_models_short_answer_must_be_copied_from_a_source_it_cites() {
    let hits = [
        hit(
            "msu",
            "Moscow State University",
            "It was founded on January 25, 1755 by Mikhail Lomonosov.",
        ),
        hit(
            "tokarev",
            "Sergei Tokarev",
            "He was a professor at Moscow State University.",
        ),
    ];
    let question = "In what year was the university where Sergei Tokarev taught founded?";
    let good = r#"{"answer": "It was founded in 1755 [1].", "short_answer": "1755", "short_answer_source": 1}"#;
    let out =
        ferret_synthesis::LlmSynthesizer::new(scripted(&[good]), ExtractiveSynthesizer::default())
            .synthesize(question, &hits)
            .await;
    assert!(
        matches!(out.implementation, Implementation::Llm { .. }),
        "{out:?}"
    );
    let short = out.value.short.expect("the model gave one");
    assert_eq!(short.text, "1755");
    assert_eq!(short.citations[0].hit_id.0, "msu");

    // Invented, then cited from a source the answer does not cite: the extractive answer stands.
    let invented = r#"{"answer": "It was founded in 1755 [1].", "short_answer": "1756", "short_answer_source": 1}"#;
    let uncited = r#"{"answer": "It was founded in 1755 [1].", "short_answer": "professor", "short_answer_source": 2}"#;
    let out = ferret_synthesis::LlmSynthesizer::new(
        scripted(&[invented, uncited]),
        ExtractiveSynthesizer::default(),
    )
    .synthesize(question, &hits)
    .await;
    assert!(
        matches!(out.implementation, Implementation::Heuristic { .. }),
        "{out:?}"
    );
    assert_eq!(out.value.short.map(|s| s.text).as_deref(), Some("1755"));
}

#[tokio::test]
async fn the_models_actions_must_be_stated_by_the_sources_they_cite() {
    use ferret_synthesis::{ActionExtractor, LlmActionExtractor};
    let hits = [
        hit(
            "so",
            "cglib on Java 17",
            "Upgrade Spring Boot to 2.7.18, then run mvn clean install -U.",
        ),
        hit("docs", "pom.xml", "Set the parent version in pom.xml."),
    ];
    let question = "How do I fix NoClassDefFoundError cglib Enhancer on Java 17?";
    let answer = "Upgrade Spring Boot [1] and set the parent in pom.xml [2].";
    let good = r#"{"primary_action": "upgrade Spring Boot to 2.7.18",
        "version_changes": [{"component": "Spring Boot", "version": "2.7.18", "source": 1}],
        "file_changes": [{"file": "pom.xml", "change": "set the parent version", "source": 2},
                         {"file": "build.gradle", "change": "invented", "source": 2}],
        "commands": [{"command": "mvn clean install -U", "source": 1}],
        "confidence": 0.9}"#;
    let out = LlmActionExtractor::new(scripted(&[good]))
        .extract(question, answer, &hits)
        .await;
    assert!(
        matches!(out.implementation, Implementation::Llm { .. }),
        "{out:?}"
    );
    let actions = out.value;
    assert_eq!(
        actions.primary.as_deref(),
        Some("upgrade Spring Boot to 2.7.18")
    );
    assert_eq!(actions.version_changes[0].source.0, "so");
    assert_eq!(
        actions
            .file_changes
            .iter()
            .map(|f| f.file.as_str())
            .collect::<Vec<_>>(),
        ["pom.xml"],
        "a file no source names is dropped"
    );
    assert_eq!(actions.commands[0].command, "mvn clean install -U");
    assert!((actions.confidence - 0.9).abs() < 1e-9);

    // Every action invented, twice: the rules read the sources instead.
    let invented = r#"{"commands": [{"command": "gradle wrapper --gradle-version 8.5", "source": 1}], "confidence": 1.5}"#;
    let out = LlmActionExtractor::new(scripted(&[invented, invented]))
        .extract(question, answer, &hits)
        .await;
    assert!(
        matches!(out.implementation, Implementation::Heuristic { .. }),
        "{out:?}"
    );
    assert_eq!(out.value.commands[0].command, "mvn clean install -U");
    assert_eq!(out.value.version_changes[0].version, "2.7.18");
}
