//! A rule-based sentence splitter, good enough for snippets and passages in English-like text.

use std::ops::Range;

/// Characters that end a sentence.
pub fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '\u{2026}')
}

/// Characters that may follow a terminator and still belong to the sentence it ends.
pub use crate::text::is_closing as is_closer;

/// Words (lowercase, without their final dot) after which a dot does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "rev", "gen", "col", "lt", "sgt", "capt", "hon", "sen", "rep",
    "gov", "st", "mt", "ft", "jr", "sr", "vs", "inc", "ltd", "co", "corp", "dept", "univ",
    "approx", "est", "al", "cf", "ca", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
];

/// Words after which a dot does not end a sentence when a number follows ("No. 5", "p. 12").
const BEFORE_NUMBERS: &[&str] = &[
    "no", "nos", "vol", "p", "pp", "ch", "sec", "art", "fig", "eq",
];

/// Split `text` into sentences, each trimmed, its whitespace collapsed to single spaces.
///
/// A sentence ends at `.`, `!`, `?` or `…` (a run of them, then any closing quotes or brackets)
/// followed by whitespace, at a blank line, or at the end of the text. A dot does not end one
/// after a known abbreviation ("Dr.", "e.g.", "U.S.", initials "J."), inside a number ("3.5"), or
/// when the next word starts in lowercase ("approx. three") — unless the dot directly follows a
/// `]` (a citation marker always closes its sentence). Pieces with no letter or digit are dropped.
pub fn split_sentences(text: &str) -> Vec<String> {
    sentence_bounds(text)
        .into_iter()
        .map(|bounds| crate::text::one_line(&text[bounds]))
        .collect()
}

/// Where the sentences of `text` lie, as [`split_sentences`] cuts them: byte ranges, in order,
/// untrimmed, for readers that need the sentence around a place in the text.
pub fn sentence_bounds(text: &str) -> Vec<Range<usize>> {
    let chars: Vec<char> = text.chars().collect();
    // Byte offset of each char, and of the text's end.
    let offsets: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let mut bounds = Vec::new();
    let mut push = |from: usize, to: usize| {
        if chars[from..to].iter().any(|c| c.is_alphanumeric()) {
            bounds.push(offsets[from]..offsets[to]);
        }
    };
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' && blank_line_follows(&chars, i) {
            push(start, i);
            start = i + 1;
        } else if is_terminator(c) {
            let mut end = i;
            while end < chars.len() && is_terminator(chars[end]) {
                end += 1;
            }
            while end < chars.len() && is_closer(chars[end]) {
                end += 1;
            }
            if end == chars.len()
                || (chars[end].is_whitespace() && ends_sentence(&chars, start, i, end))
            {
                push(start, end);
                start = end;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    push(start, chars.len());
    bounds
}

/// After a newline at `i`, is there another one before any other non-whitespace?
fn blank_line_follows(chars: &[char], i: usize) -> bool {
    chars[i + 1..]
        .iter()
        .take_while(|c| c.is_whitespace())
        .any(|&c| c == '\n')
}

/// Does the terminator run `chars[at..end]`, followed by whitespace, end the sentence begun at `start`?
fn ends_sentence(chars: &[char], start: usize, at: usize, end: usize) -> bool {
    // The word before the run, without opening punctuation.
    let word_start = chars[start..at]
        .iter()
        .rposition(|c| c.is_whitespace())
        .map_or(start, |p| start + p + 1);
    let word: String = chars[word_start..at].iter().collect();
    if word.ends_with(']') {
        return true;
    }
    let next = chars[end..].iter().find(|c| !c.is_whitespace());
    if next.is_some_and(|c| c.is_lowercase()) {
        return false;
    }
    // Only a single dot can be an abbreviation's; "!", "?" and "..." end the sentence.
    if chars[at] != '.' || chars[at + 1..end].iter().any(|&c| is_terminator(c)) {
        return true;
    }
    let word = word
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if word.is_empty() {
        return true;
    }
    let is_initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    let dotted = word.contains('.')
        && word
            .split('.')
            .all(|part| part.chars().count() <= 2 && part.chars().all(char::is_alphabetic));
    let before_number =
        BEFORE_NUMBERS.contains(&word.as_str()) && next.is_some_and(|c| c.is_ascii_digit());
    !(is_initial || dotted || before_number || ABBREVIATIONS.contains(&word.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_terminators_followed_by_space() {
        assert_eq!(
            split_sentences("One. Two! Three? Four"),
            ["One.", "Two!", "Three?", "Four"]
        );
        assert_eq!(
            split_sentences("  Wait... What?!  Yes.\u{2026} Ok"),
            ["Wait...", "What?!", "Yes.\u{2026}", "Ok"]
        );
    }

    #[test]
    fn abbreviations_initials_and_decimals_do_not_split() {
        let text = "Dr. Smith moved to the U.S. in 1990, e.g. for work. It cost 3.5 million, i.e. a lot. \
                    J. R. R. Tolkien wrote it. See No. 5 and Fig. 2 in the St. Louis report. Mr. Jones agreed. \
                    The U.S. Army uses languages, e.g. Java and Ada. Done.";
        assert_eq!(
            split_sentences(text),
            [
                "Dr. Smith moved to the U.S. in 1990, e.g. for work.",
                "It cost 3.5 million, i.e. a lot.",
                "J. R. R. Tolkien wrote it.",
                "See No. 5 and Fig. 2 in the St. Louis report.",
                "Mr. Jones agreed.",
                "The U.S. Army uses languages, e.g. Java and Ada.",
                "Done.",
            ]
        );
    }

    #[test]
    fn the_next_word_in_lowercase_keeps_the_sentence_going() {
        assert_eq!(
            split_sentences("It weighs approx. three tons. Then it left."),
            ["It weighs approx. three tons.", "Then it left."]
        );
        assert_eq!(
            split_sentences("The answer is no. Then we left."),
            ["The answer is no.", "Then we left."]
        );
    }

    #[test]
    fn closing_quotes_stay_with_their_sentence() {
        assert_eq!(
            split_sentences("He said \"stop.\" She left. (It rained.) Fine"),
            ["He said \"stop.\"", "She left.", "(It rained.)", "Fine"]
        );
    }

    #[test]
    fn blank_lines_split_and_whitespace_collapses() {
        assert_eq!(
            split_sentences("Heading\n\nBody text\nwraps here.\n"),
            ["Heading", "Body text wraps here."]
        );
    }

    #[test]
    fn a_citation_marker_closes_its_sentence() {
        assert_eq!(
            split_sentences("first part [1]. second part [2]."),
            ["first part [1].", "second part [2]."]
        );
    }

    #[test]
    fn pieces_without_letters_are_dropped() {
        assert_eq!(split_sentences("... !!! Real one. -- ."), ["Real one."]);
        assert!(split_sentences("").is_empty());
    }
}
