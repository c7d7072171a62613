//! Tests of `bridge`.

use super::*;
use crate::HeuristicAnalyzer;

fn hit(id: &str, title: &str, text: &str) -> Hit {
    Hit::new(id, title, text, 1.0, "index")
}

fn finder() -> BridgeFinder {
    BridgeFinder::default()
}

/// The default finder's hop, nothing searched yet.
fn hop_of(question: &str, shape: QuestionShape, hits: &[Hit]) -> Option<Hop> {
    finder().hop(question, shape, hits, &HashSet::new(), |q| q.to_lowercase())
}

fn shape(question: &str) -> QuestionShape {
    finder().shape(question, &HeuristicAnalyzer.analysis(question))
}

#[test]
fn shapes() {
    assert_eq!(shape("What is BM25?"), QuestionShape::Simple);
    assert_eq!(shape("Who founded Apple?"), QuestionShape::Simple);
    assert_eq!(
        shape("In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?"),
        QuestionShape::Bridge
    );
    assert_eq!(
        shape("Were Scott Derrickson and Ed Wood of the same nationality?"),
        QuestionShape::Comparison
    );
    assert_eq!(
        shape("how do I configure retries for the http client in this library"),
        QuestionShape::Simple
    );
    assert_eq!(
        shape("How often must API keys be rotated, and what do I do if one leaks?"),
        QuestionShape::Simple
    );
    assert_eq!(
        shape("Between Greyia and Calibanus, which genus contains more species?"),
        QuestionShape::Comparison
    );
}

#[test]
fn a_bridge_question_hops_to_the_name_its_first_document_gives() {
    let question = "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?";
    let hits = [
        hit(
            "1",
            "Sergei Aleksandrovich Tokarev",
            "Sergei Aleksandrovich Tokarev was a Russian ethnographer. He was a professor at Moscow State University.",
        ),
        hit("2", "Tokarev pistol", "The TT pistol was designed by Fedor Tokarev in the Soviet Union."),
    ];
    let hop = hop_of(question, QuestionShape::Bridge, &hits).unwrap();
    assert_eq!(hop.entity, "Moscow State University");
    assert_eq!(hop.query, "Moscow State University");
}

#[test]
fn a_bridge_whose_document_is_already_found_needs_no_hop() {
    let question = "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?";
    let hits = [
        hit(
            "1",
            "Sergei Aleksandrovich Tokarev",
            "He was a professor at Moscow State University.",
        ),
        hit(
            "2",
            "Moscow State University",
            "Moscow State University was founded in 1755.",
        ),
    ];
    assert_eq!(hop_of(question, QuestionShape::Bridge, &hits), None);
}

#[test]
fn a_document_holding_the_whole_question_ends_the_hops() {
    let question = "Who were the members of the Final Five gymnastics team?";
    let hits = [hit(
        "1",
        "Final Five (gymnastics)",
        "The five members of the Final Five gymnastics team were Simone Biles and Aly Raisman.",
    )];
    assert_eq!(hop_of(question, QuestionShape::Bridge, &hits), None);
}

#[test]
fn a_comparison_searches_the_name_without_a_document() {
    let question = "Were Scott Derrickson and Ed Wood of the same nationality?";
    let hits = [
        hit(
            "1",
            "Scott Derrickson",
            "Scott Derrickson is an American director.",
        ),
        hit("2", "Doctor Strange", "A film."),
    ];
    let hop = hop_of(question, QuestionShape::Comparison, &hits).unwrap();
    assert_eq!(hop.entity, "Ed Wood");
    assert_eq!(hop.query, "Ed Wood");
    let both = [
        hits[0].clone(),
        hit(
            "3",
            "Ed Wood",
            "Edward Davis Wood Jr. was an American filmmaker.",
        ),
    ];
    assert_eq!(hop_of(question, QuestionShape::Comparison, &both), None);
}

#[test]
fn a_query_already_searched_is_not_proposed_again() {
    let question = "Were Scott Derrickson and Ed Wood of the same nationality?";
    let hits = [hit("2", "Doctor Strange", "A film.")];
    let searched: HashSet<String> = ["scott derrickson".to_owned()].into();
    let hop = finder()
        .hop(question, QuestionShape::Comparison, &hits, &searched, |q| {
            q.to_lowercase()
        })
        .unwrap();
    assert_eq!(hop.entity, "Ed Wood", "the first name was searched already");
}

#[test]
fn the_bridge_is_read_in_the_result_about_the_questions_name() {
    let question = "Saltillo Engine is an engine plant in Ramos Arizpe that belongs to the subsidiary of what company?";
    let hits = [
        hit(
            "1",
            "Graptopetalum",
            "Graptopetalum is a plant sold by the Ascena Retail Group company in Coahuila.",
        ),
        hit(
            "2",
            "Saltillo Engine Plant",
            "Saltillo Engine is a Chrysler engine plant in Ramos Arizpe, Coahuila, Mexico.",
        ),
    ];
    let hop = hop_of(question, QuestionShape::Bridge, &hits).unwrap();
    assert_eq!(hop.entity, "Chrysler");
}

#[test]
fn a_quoted_title_beside_the_questions_words_comes_first() {
    let question =
        "Who created the NBC sitcom that Johnny Pemberton appears in as the character Bo Thompson?";
    let text = "He is best known for his role as the titular \"Son of Zorn\" in the short-lived Fox sitcom, and has also \
                appeared as the recurring character Bo Thompson in the NBC sitcom \"Superstore\".";
    let hits = [hit("1", "Johnny Pemberton", text)];
    let ranked = finder().bridge_entities(question, &question_names(question), &hits);
    assert_eq!(
        ranked.first().map(String::as_str),
        Some("Superstore"),
        "{ranked:?}"
    );
}

#[test]
fn names_keep_their_initials_and_months_are_no_names() {
    let names = |text: &str| {
        mentions(text, &HashSet::new())
            .into_iter()
            .map(|m| m.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("Lamar is the birthplace of President Harry S. Truman."),
        ["Lamar", "President Harry S. Truman"]
    );
    assert_eq!(names("She met Asamoah Gyan in January."), ["Asamoah Gyan"]);
    assert!(
        names("He is an American actor.").is_empty(),
        "a demonym before a noun is an adjective"
    );
}

#[test]
fn a_hop_finds_its_page_among_its_top_results_parenthesis_aside() {
    let hop = Hop {
        entity: "Styx".into(),
        query: "Styx".into(),
    };
    let hits = [
        hit("1", "Renegade (Styx song)", "A song by Styx."),
        hit("2", "Styx (band)", "An American rock band."),
    ];
    assert_eq!(hop.document_in(&hits), Some(1));
    assert_eq!(hop.document_in(&hits[..1]), None);
}

#[test]
fn the_page_the_best_result_points_to_moves_up_beside_it() {
    let question = "What is the nationality of the dancer who partnered Tom Chambers in the sixth season of Strictly Come Dancing?";
    let hits = vec![
        hit("1", "Tom Chambers (actor)", "He won the sixth season of Strictly Come Dancing, partnered by dancer Camilla Dallerup."),
        hit("2", "Strictly Slots", "A game show."),
        hit("3", "Martha Graham", "A dancer."),
        hit("4", "Camilla Dallerup", "Camilla Dallerup is a Danish dancer."),
    ];
    let (hits, reached) = finder().linked_first(question, hits, 2);
    let ids: Vec<String> = hits.into_iter().map(|h| h.id.0).collect();
    assert_eq!(ids, ["1", "2", "4", "3"]);
    assert_eq!(reached, [2]);
}

#[test]
fn a_mention_is_read_in_its_own_sentence() {
    let text =
        "He was born in Kyiv. He taught at Moscow State University from 1939. He died in 1985.";
    let around = |text: &str, start: usize, end: usize| {
        sentence_around(text, &sentence_bounds(text), start, end).to_owned()
    };
    let at = text.find("Moscow").unwrap();
    assert_eq!(
        around(text, at, at + "Moscow State University".len()),
        "He taught at Moscow State University from 1939."
    );
    assert_eq!(around("Just Kyiv", 5, 9), "Just Kyiv");
    assert_eq!(
        around("Dr. Who? Yes.", 0, 3),
        "Dr. Who?",
        "a name's own full stop does not end its sentence"
    );
}

#[test]
fn a_name_whose_page_the_results_hold_moves_up() {
    let question = "Which company owns the stadium where Oldham Athletic Reserves play home games?";
    let anchor = hit(
        "1",
        "Oldham Athletic Reserves",
        "The Reserves play at Boundary Park, next to the Oldham Athletic Training Ground, in Greater Manchester.",
    );
    let names = |hits: &[Hit]| finder().bridge_entities(question, &question_names(question), hits);
    assert_eq!(
        names(std::slice::from_ref(&anchor)),
        [
            "Boundary Park",
            "Greater Manchester",
            "Oldham Athletic Training Ground"
        ]
    );
    let page = hit(
        "2",
        "Oldham Athletic Training Ground",
        "The training ground of Oldham Athletic.",
    );
    assert_eq!(
        names(&[anchor, page]),
        [
            "Boundary Park",
            "Oldham Athletic Training Ground",
            "Greater Manchester"
        ]
    );
}

#[test]
fn a_statement_asks_nothing_and_is_searched_as_stated() {
    let statement = "Sergei Tokarev taught ethnography at the university in Moscow for decades.";
    let question = "In what year was the university where Sergei Tokarev was a professor founded?";
    let shape = |text: &str| finder().shape(text, &crate::HeuristicAnalyzer.analysis(text));
    assert_eq!(shape(statement), QuestionShape::Simple);
    assert_eq!(shape(question), QuestionShape::Bridge);
}
