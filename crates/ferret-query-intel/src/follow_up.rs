//! Follow-up questions read against the thread they continue: "and what about in 2019?",
//! "tell me more about the second one" or "when was he born?" mean little alone, so before
//! anything is searched they are rewritten into the question they stand for, from the thread's
//! last turn. [`FollowUpResolver`] is the stage: [`HeuristicFollowUpResolver`] applies the rules
//! of [`resolve_follow_up`], and a model-backed one (`LlmFollowUpResolver`) sits beside it.

use ferret_core::text::names::{name_runs, proper_names, LoneOpener};
use std::sync::OnceLock;

use ferret_core::text::years;
use ferret_core::StageOutput;
use regex::Regex;

/// The follow-up stage: the question a thread's new question stands for after its last turn.
#[async_trait::async_trait]
pub trait FollowUpResolver: Send + Sync {
    /// The question `question` stands for after `prior`, or `None` when it stands alone (it is
    /// then searched as asked).
    async fn resolve(&self, question: &str, prior: &PriorTurn<'_>) -> StageOutput<Option<String>>;
}

/// The rules of [`resolve_follow_up`]: a reference to a cited result, an elliptical opening, a
/// pronoun.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicFollowUpResolver;

#[async_trait::async_trait]
impl FollowUpResolver for HeuristicFollowUpResolver {
    async fn resolve(&self, question: &str, prior: &PriorTurn<'_>) -> StageOutput<Option<String>> {
        StageOutput::heuristic(resolve_follow_up(question, prior))
    }
}

/// Whether `question` may lean on the turn before it: it is short, or holds a pronoun, a
/// reference to a result ("the second one") or an elliptical opening ("and in 2019?"). A
/// longer question with none of these names what it asks about.
pub fn may_follow_up(question: &str) -> bool {
    let question = question.trim();
    let lower = question.to_lowercase();
    question.split_whitespace().count() <= MAX_FOLLOW_UP_WORDS / 2
        || pronoun().is_match(question)
        || ordinal().is_match(question)
        || ELLIPSIS_LEADS
            .iter()
            .any(|lead| lower.starts_with(&format!("{lead} ")))
}

/// What the thread's last turn offers a follow-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriorTurn<'a> {
    /// Its question, as resolved.
    pub question: &'a str,
    /// Its short answer, when it had one.
    pub short_answer: Option<&'a str>,
    /// The titles of the results it cited, in marker order.
    pub cited: Vec<&'a str>,
}

/// Opening words of an elliptical follow-up: what comes after them replaces part of the last
/// question.
const ELLIPSIS_LEADS: &[&str] = &[
    "and what about",
    "and how about",
    "what about",
    "how about",
    "and for",
    "and in",
    "and",
];
/// A follow-up is short: a longer question that opens with "and", or holds a pronoun, most
/// often holds what it refers to as well ("who wrote the novel and when was it published?").
const MAX_FOLLOW_UP_WORDS: usize = 8;

fn ordinal() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\bthe (first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th) (one|result|source|link|hit|page)\b",
        )
        .expect("valid pattern")
    })
}

fn pronoun() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(he|she|him|her|his|hers|it|its|they|them|their)\b")
            .expect("valid pattern")
    })
}

/// The question `question` stands for after `prior`, or `None` when it stands alone (or when
/// what it refers to cannot be found: it is then searched as asked).
pub fn resolve_follow_up(question: &str, prior: &PriorTurn<'_>) -> Option<String> {
    let question = question.trim();
    if question.is_empty() || prior.question.trim().is_empty() {
        return None;
    }
    by_ordinal(question, prior)
        .or_else(|| by_ellipsis(question, prior))
        .or_else(|| by_pronoun(question, prior))
}

/// "Tell me more about the second one": the second result the last answer cited.
fn by_ordinal(question: &str, prior: &PriorTurn<'_>) -> Option<String> {
    let found = ordinal().captures(question)?;
    let position = match found[1].to_lowercase().as_str() {
        "first" | "1st" => 0,
        "second" | "2nd" => 1,
        "third" | "3rd" => 2,
        "fourth" | "4th" => 3,
        "fifth" | "5th" => 4,
        _ => prior.cited.len().checked_sub(1)?,
    };
    let title = prior.cited.get(position)?;
    let whole = found.get(0)?;
    Some(format!(
        "{}{}{}",
        &question[..whole.start()],
        title,
        &question[whole.end()..]
    ))
}

/// "And what about in 2019?", "What about Paris?": the last question with its year or its last
/// name replaced, or with the new part added.
fn by_ellipsis(question: &str, prior: &PriorTurn<'_>) -> Option<String> {
    if question.split_whitespace().count() > MAX_FOLLOW_UP_WORDS {
        return None;
    }
    let lower = question.to_lowercase();
    let lead = ELLIPSIS_LEADS
        .iter()
        .find(|lead| lower.starts_with(&format!("{lead} ")))?;
    let rest = question[lead.len()..]
        .trim()
        .trim_end_matches(['?', '.', '!'])
        .trim();
    if rest.is_empty() {
        return None;
    }
    let last = prior
        .question
        .trim()
        .trim_end_matches(['?', '.', '!'])
        .trim();
    if let Some(&(start, end)) = years(rest).first() {
        let new_year = &rest[start..end];
        return Some(match years(last).last() {
            Some(&(old_start, old_end)) => {
                format!("{}{new_year}{}?", &last[..old_start], &last[old_end..])
            }
            None => format!("{last} in {new_year}?"),
        });
    }
    let bare = rest
        .strip_prefix("in ")
        .or_else(|| rest.strip_prefix("for "))
        .unwrap_or(rest);
    if is_name(bare) {
        if let Some((start, end)) = names_in(last).last().copied() {
            return Some(format!("{}{}{}?", &last[..start], bare, &last[end..]));
        }
    }
    Some(format!("{last} {rest}?"))
}

/// "When was he born?": the pronoun replaced by whom or what the last turn was about: the last
/// short answer (when it is a name) if it is of the pronoun's kind, else the last question's
/// first name.
fn by_pronoun(question: &str, prior: &PriorTurn<'_>) -> Option<String> {
    if !names_in(question).is_empty() || question.split_whitespace().count() > MAX_FOLLOW_UP_WORDS {
        return None;
    }
    let found = pronoun().captures(question)?;
    let word = found[1].to_lowercase();
    let answer = prior.short_answer.map(str::trim).filter(|a| is_name(a));
    let subject = names_in(prior.question)
        .first()
        .map(|&(start, end)| &prior.question[start..end]);
    let person = matches!(word.as_str(), "he" | "she" | "him" | "her" | "his" | "hers");
    // The answer to "who …" is a person, to "which volcano …" a thing: a pronoun of that kind
    // stands for it, one of the other kind for what the question was about.
    let asked_for_person = prior
        .question
        .split_whitespace()
        .next()
        .is_some_and(|w| matches!(w.to_lowercase().as_str(), "who" | "whom" | "whose"));
    let referent = if person == asked_for_person {
        answer.or(subject)
    } else {
        subject.or(answer)
    }?;
    let replacement = match word.as_str() {
        "his" | "hers" | "its" | "their" => format!("{referent}'s"),
        // "her" is a possessive before a noun ("her first film"), an object otherwise.
        "her" if followed_by_word(question, found.get(1)?.end()) => format!("{referent}'s"),
        _ => referent.to_owned(),
    };
    let at = found.get(1)?;
    Some(format!(
        "{}{}{}",
        &question[..at.start()],
        replacement,
        &question[at.end()..]
    ))
}

/// Does a word follow `text[at..]` after one space ("her| first film")?
fn followed_by_word(text: &str, at: usize) -> bool {
    text[at..]
        .strip_prefix(' ')
        .and_then(|rest| rest.chars().next())
        .is_some_and(char::is_alphabetic)
}

/// Is `text` a proper name ("the Netherlands", "Curie's", "Kenan and Kel"), or a number: each of
/// its words inside a name, or an article or joining word?
fn is_name(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() {
        return false;
    }
    if text.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let names = proper_names(text);
    !names.is_empty()
        && word_spans(text).all(|(at, word)| {
            names.iter().any(|&(start, end)| start <= at && at < end)
                || matches!(
                    word.to_lowercase().as_str(),
                    "the" | "a" | "an" | "and" | "of" | "de" | "&"
                )
        })
}

fn word_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_whitespace()
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Byte ranges of the names in `text`, a lone capitalised first word left out (a sentence
/// starts with one).
fn names_in(text: &str) -> Vec<(usize, usize)> {
    name_runs(text, LoneOpener::NotName)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior<'a>(question: &'a str, short: Option<&'a str>, cited: &[&'a str]) -> PriorTurn<'a> {
        PriorTurn {
            question,
            short_answer: short,
            cited: cited.to_vec(),
        }
    }

    #[test]
    fn a_name_with_its_article_or_possessive_is_still_a_name() {
        let capital = prior("What is the capital of France?", None, &[]);
        assert_eq!(
            resolve_follow_up("what about the Netherlands?", &capital).as_deref(),
            Some("What is the capital of the Netherlands?")
        );
        for name in ["The Beatles", "Curie's", "Kenan and Kel", "1999"] {
            assert!(is_name(name), "{name}");
        }
        for not_a_name in ["", "paris", "in the end", "Paris is nice"] {
            assert!(!is_name(not_a_name), "{not_a_name}");
        }
    }

    #[test]
    fn an_ellipsis_takes_the_last_question_with_its_year_or_name_replaced() {
        let population = prior("What was the population of Rome in 2010?", None, &[]);
        assert_eq!(
            resolve_follow_up("and what about in 2019?", &population).as_deref(),
            Some("What was the population of Rome in 2019?")
        );
        assert_eq!(
            resolve_follow_up("What about Paris?", &population).as_deref(),
            Some("What was the population of Paris in 2010?")
        );
        let no_year = prior("What was the population of Rome?", None, &[]);
        assert_eq!(
            resolve_follow_up("And in 2019?", &no_year).as_deref(),
            Some("What was the population of Rome in 2019?")
        );
    }

    #[test]
    fn an_ordinal_names_the_result_the_last_answer_cited() {
        let last = prior(
            "Which rivers flow through Rome?",
            None,
            &["Tiber", "Aniene"],
        );
        assert_eq!(
            resolve_follow_up("tell me more about the second one", &last).as_deref(),
            Some("tell me more about Aniene")
        );
        assert_eq!(
            resolve_follow_up("tell me more about the last result", &last).as_deref(),
            Some("tell me more about Aniene")
        );
        assert_eq!(
            resolve_follow_up("tell me more about the fifth one", &last),
            None,
            "a result the answer did not cite is not guessed"
        );
    }

    #[test]
    fn a_pronoun_stands_for_the_answer_or_the_subject() {
        let founder = prior("Who founded Rome?", Some("Romulus"), &["Romulus"]);
        assert_eq!(
            resolve_follow_up("When was he born?", &founder).as_deref(),
            Some("When was Romulus born?")
        );
        assert_eq!(
            resolve_follow_up("What is its population?", &founder).as_deref(),
            Some("What is Rome's population?")
        );
        assert_eq!(
            resolve_follow_up(
                "What was her first film?",
                &prior("Who directed Lady Bird?", Some("Greta Gerwig"), &[])
            )
            .as_deref(),
            Some("What was Greta Gerwig's first film?")
        );
        let volcano = prior(
            "Which volcano is active in Sicily?",
            Some("Mount Etna"),
            &[],
        );
        assert_eq!(
            resolve_follow_up("How high is it?", &volcano).as_deref(),
            Some("How high is Mount Etna?")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_resolves_without_panicking(
            question in "(and |what about |the second one |he |its |[A-Z][a-z]{0,6} |é|, |\\?|[0-9]{4} ){0,9}",
            last in "(Who |Which |[A-Z][a-z]{0,6} |in 2010 |é|, |\\?){0,8}",
        ) {
            let prior = PriorTurn { question: &last, short_answer: Some("Ada Lovelace"), cited: vec!["A", "B"] };
            if let Some(resolved) = resolve_follow_up(&question, &prior) {
                proptest::prop_assert!(!resolved.trim().is_empty());
            }
        }
    }

    #[test]
    fn a_question_of_its_own_is_left_alone() {
        let founder = prior("Who founded Rome?", Some("Romulus"), &["Romulus"]);
        for question in [
            "Who painted the Mona Lisa?",
            "How tall is Mount Everest?",
            "And then there were none: who wrote the novel and when was it first published?",
        ] {
            assert_eq!(resolve_follow_up(question, &founder), None, "{question}");
        }
        assert_eq!(
            resolve_follow_up("When was he born?", &prior("", None, &[])),
            None,
            "no last question, nothing to resolve against"
        );
    }
}
