//! One table of questions and passages, each with the names, sentences and question reading it
//! must yield (`fixtures/text/readings.toml`): every stage that reads text reads it through
//! these functions, so the table pins what all of them see.

use std::path::Path;

use ferret_core::sentences::split_sentences;
use ferret_core::text::names::proper_names;
use ferret_core::text::question::{AnswerKind, Asked, Compared, Direction};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    text: String,
    names: Option<Vec<String>>,
    sentences: Option<Vec<String>>,
    /// The kind of answer, as `AnswerKind` is written in JSON (`yes_no`).
    asks: Option<AnswerKind>,
    options: Option<[String; 2]>,
    /// "least date", "most quantity", ...
    compares: Option<String>,
}

fn comparison_words((direction, compared): (Direction, Compared)) -> String {
    let direction = match direction {
        Direction::Least => "least",
        Direction::Most => "most",
    };
    let compared = match compared {
        Compared::Date => "date",
        Compared::Quantity => "quantity",
    };
    format!("{direction} {compared}")
}

#[test]
fn every_case_reads_as_its_table_says() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/text/readings.toml");
    let table: Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        table.case.len() >= 60,
        "the table holds {}",
        table.case.len()
    );
    let mut wrong = Vec::new();
    for case in &table.case {
        let text = &case.text;
        if let Some(names) = &case.names {
            let read: Vec<&str> = proper_names(text)
                .into_iter()
                .map(|(start, end)| &text[start..end])
                .collect();
            if read != *names {
                wrong.push(format!("{text:?}: names {read:?}, not {names:?}"));
            }
        }
        if let Some(sentences) = &case.sentences {
            let read = split_sentences(text);
            if read != *sentences {
                wrong.push(format!("{text:?}: sentences {read:?}, not {sentences:?}"));
            }
        }
        let asks_something = case.asks.is_some() || case.options.is_some();
        if asks_something || case.compares.is_some() {
            let asked = Asked::read(text);
            if let Some(kind) = case.asks {
                if asked.kind != kind {
                    wrong.push(format!("{text:?}: asks {:?}, not {kind:?}", asked.kind));
                }
            }
            if asked.options != case.options {
                wrong.push(format!(
                    "{text:?}: options {:?}, not {:?}",
                    asked.options, case.options
                ));
            }
            let compares = asked.comparison.map(comparison_words);
            if compares != case.compares {
                wrong.push(format!(
                    "{text:?}: compares {compares:?}, not {:?}",
                    case.compares
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
