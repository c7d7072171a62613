//! Tests of `factoid`.

use super::*;

fn page(id: &str, title: &str, text: &str) -> Hit {
    Hit::new(id, title, text, 1.0, "wiki")
}

fn stated(question: &str, hits: &[Hit]) -> (Vec<String>, Option<String>) {
    match draft(&Question::read(question), hits, 3, 50) {
        Draft::Stated { sentences, short } => (
            sentences.into_iter().map(|c| c.text).collect(),
            short.map(|(s, _)| s),
        ),
        Draft::NotStated { .. } => panic!("not stated"),
    }
}

#[test]
fn the_sentence_naming_the_thing_asked_for_answers() {
    let hits = [
        page(
            "etna",
            "Mount Etna",
            "Mount Etna is an active volcano in Sicily. Etna erupts often and its lava reaches the sea.",
        ),
        page("volcano", "Volcano", "Volcanic eruptions are caused by magma rising."),
    ];
    let (sentences, short) = stated("Which volcano erupts in Sicily?", &hits);
    assert_eq!(short.as_deref(), Some("Mount Etna"), "{sentences:?}");
    assert_eq!(sentences[0], "Mount Etna is an active volcano in Sicily.");
}

#[test]
fn a_bridge_answer_is_read_on_the_page_the_first_one_leads_to() {
    let hits = [
        page(
            "tokarev",
            "Sergei Tokarev",
            "Sergei Tokarev (29 December 1899 – 19 April 1985) was an ethnographer and professor at Moscow State University.",
        ),
        page("msu", "Moscow State University", "It was founded on January 25, 1755 by Mikhail Lomonosov."),
    ];
    let (sentences, short) = stated(
        "In what year was the university where Sergei Tokarev was a professor founded?",
        &hits,
    );
    assert_eq!(short.as_deref(), Some("1755"));
    assert_eq!(sentences.len(), 2, "the link and the answer: {sentences:?}");
    assert_eq!(
        sentences[1],
        "Moscow State University: It was founded on January 25, 1755 by Mikhail Lomonosov.",
        "read away from its page, \"It\" needs its subject"
    );
}

#[test]
fn a_page_naming_most_of_a_long_title_links_to_it_a_shared_first_name_does_not() {
    let player = page(
        "boeser",
        "Brock Boeser",
        "Boeser played at the 2016 World Junior Championships. Joe Smith coached him.",
    );
    let event = page(
        "wjc",
        "2016 World Junior Ice Hockey Championships",
        "It was held in Helsinki, Finland.",
    );
    let namesake = page("heck", "Joe Heck", "Joe Heck is a politician.");
    assert!(linked(&player, &event));
    assert!(!linked(&player, &namesake));
    let team = page(
        "five",
        "Final Five (gymnastics)",
        "The Final Five won gold.",
    );
    let cartoon = page(
        "hutz",
        "Lionel Hutz",
        "His final speaking role was five months earlier.",
    );
    assert!(
        !linked(&team, &cartoon),
        "a title's words scattered over a page do not name it"
    );
}

#[test]
fn a_page_off_the_questions_chain_is_not_read_for_its_answer() {
    let hits = [
        page(
            "munsonville",
            "Munsonville, New Hampshire",
            "Munsonville is a village in the northwestern corner of Nelson.",
        ),
        page(
            "dujiangyan",
            "Dujiangyan City",
            "It has an area of 1208 km2 and had a population of 600,000 in 2003.",
        ),
    ];
    let question = "What is the population of the town Munsonville is in?";
    match draft(&Question::read(question), &hits, 3, 50) {
        Draft::NotStated { closest } => assert_eq!(closest, [0]),
        stated => panic!("a number on an unrelated page is no answer: {stated:?}"),
    }
}

#[test]
fn a_subject_leading_a_clipped_sentence_counts_in_its_words() {
    let long = format!("He {}.", "spoke at length about many things ".repeat(10));
    let cut = clip_named(&long, None, Some("Henry Lau"), 12);
    assert!(cut.starts_with("Henry Lau: He spoke"), "{cut}");
    assert_eq!(words(&cut.replace(" \u{2026}", "")), 12, "{cut}");
    assert_eq!(
        clip_named("Henry Lau debuted in 2008.", None, Some("Henry Lau"), 12),
        "Henry Lau debuted in 2008.",
        "a sentence naming its subject is not led by it"
    );
}

#[test]
fn the_page_defined_as_the_kind_asked_for_names_the_answer() {
    let hits = [
        page(
            "castle",
            "Kinnaird Castle",
            "Kinnaird Castle is a 15th-century castle in Angus, Scotland, home of the Earl of Southesk.",
        ),
        page(
            "poet",
            "Violet Jacob",
            "Violet Jacob (1 September 1863 – 9 September 1946) was a Scottish poet and novelist, born at Kinnaird Castle.",
        ),
    ];
    let (sentences, short) = stated(
        "Which Scottish poet was born in a 15th-century castle home to the Earl of Southesk?",
        &hits,
    );
    assert_eq!(short.as_deref(), Some("Violet Jacob"), "{sentences:?}");
    assert!(
        sentences.iter().any(|s| s.starts_with("Violet Jacob")),
        "{sentences:?}"
    );
}

#[test]
fn a_cut_sentence_loses_its_asides_before_its_subject() {
    let sentence = "John Smith (2 May 1750 – 2 October 1780; also written Smyth) was a British Army \
                    officer hanged as a spy during the war for assisting the attempted surrender of \
                    the fort at West Point to the British, after a long trial held in the town.";
    let at = sentence
        .find("assisting")
        .unwrap_or_else(|| panic!("the span is there"));
    let span = Span {
        start: at,
        end: at + "assisting".len(),
    };
    let cut = clip(sentence, Some(&span), 20);
    assert!(cut.starts_with("John Smith"), "{cut}");
    assert!(cut.contains("assisting"), "{cut}");
    assert!(!cut.contains("1750"), "{cut}");
    assert!(words(&cut) <= 22, "{cut}");
    let (kept, moved) = without_asides("A (x) b [y (z)] c", None);
    assert_eq!((kept.as_str(), moved), ("A b c", None));
    let (kept, _) = without_asides("Rafael dos Anjos (] ; born 1984) is a fighter", None);
    assert_eq!(kept, "Rafael dos Anjos is a fighter");
    let aside_span = Span { start: 3, end: 4 };
    let (kept, moved) = without_asides("A (x) b (y) c", Some(&aside_span));
    assert_eq!(kept, "A (x) b c");
    assert_eq!(moved.map(|s| &kept[s.start..s.end]), Some("x"));
    let later = Span { start: 12, end: 13 };
    let (kept, moved) = without_asides("A (x) b (y) c", Some(&later));
    assert_eq!(moved.map(|s| &kept[s.start..s.end]), Some("c"));
}

#[test]
fn a_page_the_question_names_is_on_the_chain_though_the_pages_do_not_name_each_other() {
    let hits = [
        page(
            "hurricane",
            "Hawker Hurricane",
            "The Hawker Hurricane is a British fighter aircraft built for the Royal Air Force.",
        ),
        page(
            "flight",
            "No. 1455 Flight RAF",
            "No. 1455 Flight was a unit of the Royal Air Force during the Second World War.",
        ),
    ];
    match draft(
        &Question::read("What were both Hawker Hurricane and No. 1455 Flight part of?"),
        &hits,
        3,
        46,
    ) {
        Draft::Stated { sentences, .. } => assert_eq!(
            sentences.iter().map(|c| c.hit).collect::<Vec<_>>(),
            [0, 1],
            "{sentences:?}"
        ),
        Draft::NotStated { .. } => panic!("not stated"),
    }
}

#[test]
fn the_sentence_naming_the_noun_asked_for_answers() {
    let hits = [page(
        "case",
        "Case McCoy",
        "The brothers of Case McCoy followed the Dallas Cowboys. \
         He played for the Texas Longhorns football team.",
    )];
    let (sentences, short) = stated(
        "What sports team included both of the brothers Case McCoy and Colt McCoy?",
        &hits,
    );
    assert_eq!(short.as_deref(), Some("Texas Longhorns"), "{sentences:?}");
}
