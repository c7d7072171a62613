//! The question as the extractive answer reads it: what it asks for, as
//! `ferret_core::text::question` reads it (taken from the analysis when the pipeline has one),
//! with the question's content terms.

use std::collections::HashSet;
use std::ops::Deref;

pub(crate) use ferret_core::text::question::{AnswerKind, Asked, Compared, Direction};
use ferret_core::text::term_set;

/// A question: what it asks for and its content terms.
#[derive(Debug, Clone)]
pub(crate) struct Question {
    asked: Asked,
    /// The question's content terms.
    pub(crate) terms: HashSet<String>,
}

impl Question {
    /// Read `question` (the tests' way in; the synthesizer is handed a reading).
    #[cfg(test)]
    pub(crate) fn read(question: &str) -> Self {
        Self::as_asked(question, Asked::read(question))
    }

    /// `question`, asking for what `asked` says (as the analysis read it).
    pub(crate) fn as_asked(question: &str, asked: Asked) -> Self {
        Self {
            asked,
            terms: term_set(question),
        }
    }
}

/// The reading's fields are the question's: `question.kind`, `question.options`.
impl Deref for Question {
    type Target = Asked;

    fn deref(&self) -> &Asked {
        &self.asked
    }
}
