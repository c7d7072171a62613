//! What the wording of a question says about what it asks for: the kind of answer (a year, a
//! person, yes or no, one of two options…), the two options of an "X or Y" question and, for a
//! comparison, which way it compares ([`Asked`]). The analyzer reads a question here once; the
//! extractive answer takes the reading from the analysis.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::AUX_VERBS;

/// The kind of answer a question expects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// "What year", "in which year".
    Year,
    /// "When": a date or a year.
    Date,
    /// "How many", "how long", "what population".
    Number,
    /// "Who", "which actor".
    Person,
    /// "Where", "what city".
    Place,
    /// "What/which <thing>": a proper name.
    Name,
    /// "Are both…", "were they the same…": yes or no.
    YesNo,
    /// "…, X or Y?": one of the two options.
    Choice,
    /// Anything else ("how do I", "why"): sentences, no short answer.
    #[default]
    Open,
}

/// Which way a comparison goes: the option with the smaller or the larger value wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// First, earlier, older, fewer, smaller, shorter.
    Least,
    /// Later, younger, more, larger, longer, taller.
    Most,
}

/// What the compared value is: a date (born first, founded earlier) or a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compared {
    /// When something happened: born first, founded later.
    Date,
    /// How much of something: longer, more populous.
    Quantity,
}

/// What a question asks for, read from its wording: the analyzer reads it once and the stages
/// after it (the extractive answer) take it from the analysis.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// The kind of answer expected.
    pub kind: AnswerKind,
    /// The two options of an "X or Y" question.
    pub options: Option<[String; 2]>,
    /// For a choice: which way and over what.
    pub comparison: Option<(Direction, Compared)>,
    /// The question's lowercase words, in order.
    pub words: Vec<String>,
    /// The proper names it holds, as written.
    pub names: Vec<String>,
    /// Does it ask for several things ("who were the members", "which countries")?
    pub plural: bool,
    /// The words that may say what kind of thing is asked for: those right after "which" or
    /// "what" ("which Victorian poet" → victorian, poet), any person noun for "who". A page that
    /// defines its subject with one of them ("… was a Scottish poet") is about such a thing.
    pub heads: Vec<String>,
}

const PLACE_NOUNS: &[&str] = &[
    "city",
    "country",
    "state",
    "town",
    "county",
    "region",
    "island",
    "province",
    "continent",
    "location",
    "village",
    "nation",
    "capital",
    "borough",
    "district",
    "place",
    "area",
];

const PERSON_NOUNS: &[&str] = &[
    "actor",
    "actress",
    "person",
    "man",
    "woman",
    "singer",
    "director",
    "player",
    "author",
    "writer",
    "musician",
    "artist",
    "politician",
    "producer",
    "composer",
    "footballer",
    "athlete",
    "coach",
    "king",
    "queen",
    "president",
    "member",
    "founder",
    "poet",
    "novelist",
    "rapper",
    "comedian",
    "star",
    "character",
    "designer",
    "architect",
    "journalist",
    "scientist",
    "drummer",
    "guitarist",
    "vocalist",
    "son",
    "daughter",
    "wife",
    "husband",
    "father",
    "mother",
];

/// Nouns that name a quantity: "what is the capacity of …" asks for a number.
const QUANTITY_NOUNS: &[&str] = &[
    "capacity",
    "population",
    "height",
    "length",
    "area",
    "size",
    "number",
    "age",
    "total",
    "amount",
    "percentage",
    "rate",
    "score",
    "weight",
    "depth",
    "distance",
    "elevation",
    "attendance",
    "revenue",
    "salary",
    "speed",
    "duration",
    "runtime",
    "budget",
    "gross",
    "rank",
];

/// Words after "how" that ask for a number.
const HOW_NUMBER: &[&str] = &[
    "many", "much", "long", "old", "tall", "far", "big", "large", "high", "often",
];

const EARLIER: &[&str] = &["first", "earlier", "earliest", "older", "oldest", "before"];
const LATER: &[&str] = &[
    "later", "latest", "younger", "youngest", "newer", "newest", "recent", "last", "after",
];
const MORE: &[&str] = &[
    "more", "most", "larger", "largest", "bigger", "biggest", "higher", "highest", "longer",
    "longest", "taller", "tallest", "greater", "heavier", "wider", "deeper",
];
const FEWER: &[&str] = &[
    "fewer", "less", "least", "smaller", "smallest", "lower", "lowest", "shorter", "shortest",
    "lighter", "narrower",
];

impl Asked {
    /// Read `question`.
    pub fn read(question: &str) -> Self {
        let words: Vec<String> = super::words(question).collect();
        let word_set: HashSet<String> = words.iter().cloned().collect();
        let options = options_of(question);
        let first = words.first().map(String::as_str).unwrap_or_default();
        let comparison = comparison_of(&word_set);
        let asks = words
            .iter()
            .filter(|w| {
                matches!(
                    w.as_str(),
                    "what" | "which" | "who" | "when" | "where" | "how" | "why"
                )
            })
            .count();
        let kind = if options.is_some() {
            AnswerKind::Choice
        } else if asks > 1 && words.iter().any(|w| w == "and") && question.contains(',') {
            // "How often …, and what do I do if …": several asks, answered in sentences.
            AnswerKind::Open
        } else if AUX_VERBS.contains(&first) {
            AnswerKind::YesNo
        } else {
            kind_by_wh_word(&words)
        };
        Self {
            kind,
            options,
            comparison,
            plural: asks_for_several(&words),
            heads: heads_of(&words),
            names: super::names::proper_names(question)
                .into_iter()
                .map(|(start, end)| question[start..end].to_owned())
                .filter(|name| !AUX_VERBS.contains(&name.to_lowercase().as_str()))
                .collect(),
            words,
        }
    }

    /// Does the question expect an answer of a few words?
    pub fn is_factoid(&self) -> bool {
        self.kind != AnswerKind::Open
    }

    /// Is the kind of answer read from an unambiguous word (a year, a date, a number)? A
    /// sentence without one does not answer. Names are read from capitalisation, which misses
    /// answers written in lower case, so their sentences answer without one.
    pub fn is_strictly_typed(&self) -> bool {
        matches!(
            self.kind,
            AnswerKind::Year | AnswerKind::Date | AnswerKind::Number
        )
    }

    /// Does the question ask for the option that is *not* something ("which film was not…")?
    pub fn is_negated(&self) -> bool {
        self.words.iter().any(|w| w == "not" || w == "neither")
    }
}

/// The kind of answer the question's first question word asks for: "when" a date, "where" a
/// place, "who" a person, "how many" a number; "what" and "which" by the noun that follows
/// ("what year", "which actor", "what is the capacity").
fn kind_by_wh_word(words: &[String]) -> AnswerKind {
    let Some(at) = words.iter().position(|w| {
        matches!(
            w.as_str(),
            "what" | "which" | "who" | "whom" | "whose" | "when" | "where" | "how"
        )
    }) else {
        return AnswerKind::Open;
    };
    let next = words.get(at + 1).map(String::as_str).unwrap_or_default();
    match words[at].as_str() {
        "when" => AnswerKind::Date,
        "where" => AnswerKind::Place,
        "who" | "whom" | "whose" => AnswerKind::Person,
        "how" if HOW_NUMBER.contains(&next) => AnswerKind::Number,
        "how" => AnswerKind::Open,
        // "Which volcano", "what team": a name.
        _ if !AUX_VERBS.contains(&next) => match kind_by_noun(&words[at + 1..]) {
            AnswerKind::Open => AnswerKind::Name,
            kind => kind,
        },
        // "What is the capacity of …" asks for a number; "what did I do" for a description.
        _ => kind_by_noun(&words[at + 1..]),
    }
}

/// The kind of answer the first few words after "what" or "which" name ("year", "capacity",
/// "city", "actor", "name"), or [`AnswerKind::Open`] when they name none.
fn kind_by_noun(words: &[String]) -> AnswerKind {
    let nouns = words
        .iter()
        .map(String::as_str)
        .filter(|w| !matches!(*w, "is" | "was" | "are" | "were" | "the" | "a" | "an"))
        .take(3);
    for noun in nouns {
        let kind = match noun {
            "year" | "decade" | "century" => AnswerKind::Year,
            "date" | "day" | "month" => AnswerKind::Date,
            "name" | "title" | "called" => AnswerKind::Name,
            _ if QUANTITY_NOUNS.contains(&noun) => AnswerKind::Number,
            _ if PLACE_NOUNS.contains(&noun) => AnswerKind::Place,
            _ if PERSON_NOUNS.contains(&noun) => AnswerKind::Person,
            _ => continue,
        };
        return kind;
    }
    AnswerKind::Open
}

/// See [`Asked::heads`]: up to three words after the question word, up to the first auxiliary
/// or stop word ("sports team", "Victorian poet", "volcano erupts").
fn heads_of(words: &[String]) -> Vec<String> {
    let Some(at) = words
        .iter()
        .position(|w| matches!(w.as_str(), "what" | "which" | "who" | "whom"))
    else {
        return Vec::new();
    };
    if matches!(words[at].as_str(), "who" | "whom") {
        return PERSON_NOUNS.iter().map(|n| (*n).to_owned()).collect();
    }
    let phrase: Vec<&String> = words[at + 1..]
        .iter()
        .take(3)
        .take_while(|w| !AUX_VERBS.contains(&w.as_str()) && !super::is_stop_word(w))
        .collect();
    phrase.into_iter().cloned().collect()
}

/// Does the question ask for several things: "who were", "which are", or a plural noun after
/// its question word ("what countries", "the members")?
fn asks_for_several(words: &[String]) -> bool {
    let Some(at) = words
        .iter()
        .position(|w| matches!(w.as_str(), "what" | "which" | "who"))
    else {
        return false;
    };
    let after: Vec<&str> = words[at + 1..].iter().map(String::as_str).take(4).collect();
    matches!(after.first(), Some(&"were" | &"are"))
        || after
            .iter()
            .filter(|w| !matches!(**w, "is" | "was" | "are" | "were" | "the" | "a" | "an"))
            .take(1)
            .any(|w| w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us"))
}

/// Which way the comparison words of a question point, and over what.
fn comparison_of(words: &HashSet<String>) -> Option<(Direction, Compared)> {
    let any = |list: &[&str]| list.iter().any(|w| words.contains(*w));
    if any(EARLIER) {
        Some((Direction::Least, Compared::Date))
    } else if any(LATER) {
        Some((Direction::Most, Compared::Date))
    } else if any(MORE) {
        Some((Direction::Most, Compared::Quantity))
    } else if any(FEWER) {
        Some((Direction::Least, Compared::Quantity))
    } else {
        None
    }
}

/// The two options of an "X or Y" question: the words on each side of its one " or ", up to a
/// comma, colon or the question's start, and up to a comma or the question mark.
fn options_of(question: &str) -> Option<[String; 2]> {
    let body = question.trim().trim_end_matches('?');
    // Offsets found in the lowercase text are cut from the original: only ASCII lowering keeps
    // every one of them (some letters change length in full lower case).
    let lower = body.to_ascii_lowercase();
    // "Between X and Y, which …", "Among X and Y who …" name their options with "and".
    for opener in ["between ", "among "] {
        if let Some(rest) = lower.strip_prefix(opener) {
            let end = rest.find([',', '?']).unwrap_or(rest.len());
            let pair = &rest[..end];
            let pair = pair.split(" who ").next().unwrap_or(pair);
            let pair = pair.split(" which ").next().unwrap_or(pair);
            let (a, _) = pair.split_once(" and ")?;
            let start = opener.len();
            let first = body[start..start + a.len()].trim();
            let second = body[start + a.len() + " and ".len()..start + pair.len()].trim();
            return Some([first.to_owned(), second.to_owned()]);
        }
    }
    let at = lower.find(" or ")?;
    if lower[at + 4..].contains(" or ") {
        return None;
    }
    let left = &body[..at];
    let left = left.rsplit([',', ':', ';']).next().unwrap_or(left).trim();
    // "Who was born first, A or B" keeps "A"; "Is A or B older" keeps the name after the verb.
    let left = strip_lead(left);
    let right = body[at + 4..].split([',', ';']).next().unwrap_or("").trim();
    let right = strip_lead(strip_tail(right));
    let is_option = |s: &str| {
        let n = s.split_whitespace().count();
        (1..=8).contains(&n)
            && s.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c == '"')
    };
    (is_option(left) && is_option(right)).then(|| [left.to_owned(), right.to_owned()])
}

/// A left option without the question's opening words ("Which is older, …" is cut at the comma;
/// "Is the Nile" → "the Nile" → "Nile" when what follows is a name).
fn strip_lead(text: &str) -> &str {
    let mut rest = text;
    loop {
        let Some((first, tail)) = rest.split_once(' ') else {
            return rest;
        };
        let lower = first.to_lowercase();
        let lead = AUX_VERBS.contains(&lower.as_str())
            || matches!(
                lower.as_str(),
                "which" | "who" | "what" | "whom" | "between" | "the" | "of" | "was" | "either"
            )
            || !first.chars().next().is_some_and(char::is_uppercase);
        if !lead || tail.is_empty() {
            return rest;
        }
        rest = tail.trim_start();
    }
}

/// A right option without the question's trailing words: the name that opens it ("Calibanus
/// native to Africa" → "Calibanus"), its connectors kept ("Lock, Stock" stops at the comma
/// before this is called).
fn strip_tail(text: &str) -> &str {
    let mut end = 0;
    for (at, word) in text.split_whitespace().scan(0, |from, word| {
        let at = text[*from..].find(word).map_or(*from, |i| *from + i);
        *from = at + word.len();
        Some((at, word))
    }) {
        let named = word
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || c == '"');
        let joins = matches!(word, "of" | "the" | "and" | "de" | "von" | "van" | "&");
        if named {
            end = at + word.len();
        } else if !(joins && end > 0) {
            break;
        }
    }
    if end == 0 {
        text
    } else {
        &text[..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(q: &str) -> AnswerKind {
        Asked::read(q).kind
    }

    #[test]
    fn the_kind_of_answer_comes_from_the_wording() {
        assert_eq!(
            kind("In what year was the university where Tokarev taught founded?"),
            AnswerKind::Year
        );
        assert_eq!(kind("When was the novel published?"), AnswerKind::Date);
        assert_eq!(kind("How many stores are there?"), AnswerKind::Number);
        assert_eq!(kind("Who directed Jaws?"), AnswerKind::Person);
        assert_eq!(
            kind("Which actor starred in both films?"),
            AnswerKind::Person
        );
        assert_eq!(
            kind("Kete Krachi is a town in what region?"),
            AnswerKind::Place
        );
        assert_eq!(
            kind("Which comic series involves Nick Fury?"),
            AnswerKind::Name
        );
        assert_eq!(
            kind("Are both Jim McBride and Neil Jordan American?"),
            AnswerKind::YesNo
        );
        assert_eq!(kind("how to configure retries"), AnswerKind::Open);
        assert_eq!(
            kind("Which is longer, the Nile or the Amazon?"),
            AnswerKind::Choice
        );
    }

    #[test]
    fn letters_whose_lower_case_changes_length_keep_the_options_in_place() {
        // "İ" is two bytes, its full lower case three; the Kelvin sign three, its lower case one.
        assert_eq!(
            Asked::read("İstanbul or Ankara, which is older?").options,
            Some(["İstanbul".to_owned(), "Ankara".to_owned()])
        );
        assert_eq!(
            Asked::read("Between İzmir and Bursa, which is larger?").options,
            Some(["İzmir".to_owned(), "Bursa".to_owned()])
        );
        assert_eq!(
            Asked::read("İİ or \u{212A}?").options,
            Some(["İİ".to_owned(), "\u{212A}".to_owned()])
        );
        assert_eq!(
            Asked::read("Between İİ and \u{212A}\u{212A}x?").kind,
            AnswerKind::Choice
        );
    }

    proptest::proptest! {
        #[test]
        fn any_question_is_read_without_panicking(question in "\\PC{0,80}") {
            let asked = Asked::read(&question);
            if let Some([a, b]) = &asked.options {
                proptest::prop_assert!(question.contains(a.as_str()) && question.contains(b.as_str()));
            }
        }
    }

    #[test]
    fn options_and_direction_of_a_choice() {
        let asked = Asked::read("Which is longer, the Nile or the Amazon?");
        assert_eq!(
            asked.options,
            Some(["Nile".to_owned(), "Amazon".to_owned()])
        );
        assert_eq!(
            asked.comparison,
            Some((Direction::Most, Compared::Quantity))
        );
        let asked = Asked::read("Who was born first, Sergio Leone or Ennio Morricone?");
        assert_eq!(
            asked.options,
            Some(["Sergio Leone".to_owned(), "Ennio Morricone".to_owned()])
        );
        assert_eq!(asked.comparison, Some((Direction::Least, Compared::Date)));
        assert_eq!(
            Asked::read("Is Greyia or Calibanus native to Africa?").options,
            Some(["Greyia".to_owned(), "Calibanus".to_owned()])
        );
        assert_eq!(Asked::read("Do you want tea or coffee?").options, None);
    }
}
