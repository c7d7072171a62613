//! Proper names in a sentence, as [`ferret_core::text::names`] reads them, as spans.

/// A piece of a sentence, by byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn text<'a>(&self, sentence: &'a str) -> &'a str {
        &sentence[self.start..self.end]
    }
}

/// Proper names in `sentence`, in order.
pub(crate) fn names(sentence: &str) -> Vec<Span> {
    ferret_core::text::names::proper_names(sentence)
        .into_iter()
        .map(|(start, end)| Span { start, end })
        .collect()
}
