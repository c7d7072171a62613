//! Spans of a sentence that can answer a question of a given kind: years and dates, numbers,
//! proper names.

use std::sync::OnceLock;

use regex::Regex;

use crate::question::AnswerKind;

pub(crate) use crate::names::{names, Span};

const MONTHS: &str =
    "January|February|March|April|May|June|July|August|September|October|November|December";

fn date() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"\b(?:(?:{MONTHS}) [0-9]{{1,2}}, [0-9]{{4}}|[0-9]{{1,2}} (?:{MONTHS}) [0-9]{{4}}|(?:{MONTHS}) [0-9]{{4}})\b"
        ))
        .expect("valid pattern")
    })
}

fn number() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:[0-9][0-9,]*(?:\.[0-9]+)?(?: (?:million|billion|thousand|hundred))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred)\b",
        )
        .expect("valid pattern")
    })
}

fn years(sentence: &str) -> Vec<Span> {
    ferret_core::text::years(sentence)
        .into_iter()
        .map(|(start, end)| Span { start, end })
        .collect()
}

/// The spans of `sentence` that could answer a question of `kind`, in order.
pub(crate) fn spans(sentence: &str, kind: AnswerKind) -> Vec<Span> {
    let found = |re: &Regex| -> Vec<Span> {
        re.find_iter(sentence)
            .map(|m| Span {
                start: m.start(),
                end: m.end(),
            })
            .collect()
    };
    match kind {
        AnswerKind::Year => years(sentence),
        AnswerKind::Date => {
            let mut dates = found(date());
            for y in years(sentence) {
                if !dates.iter().any(|d| d.start <= y.start && y.end <= d.end) {
                    dates.push(y);
                }
            }
            dates.sort_by_key(|s| s.start);
            dates
        }
        AnswerKind::Number => found(number()),
        AnswerKind::Person | AnswerKind::Place | AnswerKind::Name | AnswerKind::Choice => {
            // "December 7" is a date, not a name.
            let months: Vec<&str> = MONTHS.split('|').collect();
            names(sentence)
                .into_iter()
                .filter(|span| {
                    let text = span.text(sentence);
                    let first = text.split_whitespace().next().unwrap_or_default();
                    !(months.contains(&first) && text.split_whitespace().count() <= 2)
                })
                .collect()
        }
        AnswerKind::YesNo | AnswerKind::Open => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sentence: &str, kind: AnswerKind) -> Vec<&str> {
        spans(sentence, kind)
            .into_iter()
            .map(|s| &sentence[s.start..s.end])
            .collect()
    }

    #[test]
    fn dates_years_and_numbers() {
        let s = "It was published on September 18, 2010, 3 years after 2007, with 560 stores.";
        assert_eq!(texts(s, AnswerKind::Date), ["September 18, 2010", "2007"]);
        assert_eq!(texts(s, AnswerKind::Year), ["2010", "2007"]);
        assert_eq!(
            texts(s, AnswerKind::Number),
            ["18", "2010", "3", "2007", "560"]
        );
    }

    #[test]
    fn names_keep_their_connectors_and_drop_sentence_openers() {
        let s = "The Shins were formed in Albuquerque, New Mexico by James Mercer of the University of New Mexico.";
        assert_eq!(
            texts(s, AnswerKind::Name),
            [
                "Shins",
                "Albuquerque",
                "New Mexico",
                "James Mercer of the University of New Mexico"
            ]
        );
        let s = "He starred in \"Black Book\" with Halina Reijn.";
        assert_eq!(texts(s, AnswerKind::Person), ["Black Book", "Halina Reijn"]);
    }
}
