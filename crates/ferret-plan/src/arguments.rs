//! A step's arguments: the grammar of the text inside a step's brackets, and tool signatures
//! that check it.
//!
//! `PlanStep::argument` keeps the bracket text as written (trimmed, and with one pair of
//! surrounding quotes removed, as the line parser always did), so the search tools, records and
//! `substitute` see what they always saw. Tools that take several or named values read it
//! through [`StepArguments::parse`] (`PlanStep::arguments`).
//!
//! # Grammar
//!
//! ```text
//! arguments := plain | list
//! list      := item { "," item }
//! item      := [ NAME "=" ] value            positional items come before named ones
//! value     := string | strings | reference
//! string    := '"' { char other than '"' and '\' | '\"' | '\\' } '"'
//! strings   := "[" [ string { "," string } ] "]"
//! reference := "#E" digits | "#e" digits     standing alone, e.g. vector_store=#E0
//! NAME      := (letter | "_") { letter | digit | "_" | "-" }      ASCII, case kept
//! ```
//!
//! Spaces may surround every token. The text is read as a `list` when it starts with `"`, `[`,
//! `NAME =`, or a reference followed by `,` or the end; otherwise it is `plain`: the whole text
//! is one positional text value, commas, quotes and references (`birthplace of #E1`) included,
//! with `\\` and `\"` decoded as in strings. So every argument the search tools took before
//! reads as the one text value it always was, and `Tool["a, b"]`, whose quotes the line parser
//! removes, is still the one value `a, b`.
//!
//! In a `list`, every value must be quoted, a list of quoted strings, or a reference alone:
//! `url=https://x`, `k=["a", b]`, `"a" "b"` and `"a", #E1 films` are errors, as are an
//! unterminated string or list, an escape other than `\"` and `\\`, `name=` without a value,
//! an empty item (`"a",,"b"`, a trailing `,`), a name given twice, and a positional value after
//! a named one. Each [`ArgumentError`] says what to write instead, since it goes back to the
//! planner.
//!
//! References stay in the values as written (`"see #E1"`, [`ArgumentValue::Reference`]), and
//! names cannot contain `#`, so the references of the values are exactly the step's
//! `depends_on`, which is computed from the whole text. A tool should read the arguments
//! before filling references, then `substitute` each value: a result put into the bracket
//! text could contain quotes or commas.
//!
//! One quoted value that itself starts like a list (`Tool["x=1"]`, `Tool["[1]"]`) loses its
//! quotes to the line parser and is then read as a list; write it as `Tool['"x=1"']` (as
//! `Plan::render` does) or in the XML form.

use std::fmt::Write as _;
use std::ops::RangeInclusive;

use ferret_core::text::{cut, CutMark};

/// One value of a step's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgumentValue {
    /// Text: a quoted string or the whole of a plain argument, escapes decoded. It may contain
    /// references (`"see #E1"`).
    Text(String),
    /// A list of strings: `["Agents", "Planning"]`.
    List(Vec<String>),
    /// A reference standing alone, `#E0`, held as the variable without `#`: `"E0"`.
    Reference(String),
}

impl ArgumentValue {
    /// What the value is, in the words of a message: "text", "a list", "a reference".
    fn what(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::List(_) => "a list",
            Self::Reference(_) => "a reference",
        }
    }

    /// The value in list syntax: a quoted string, a list of them, or `#En`.
    fn write(&self, out: &mut String) {
        match self {
            Self::Text(text) => write_string(text, out),
            Self::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(item, out);
                }
                out.push(']');
            }
            Self::Reference(variable) => {
                out.push('#');
                out.push_str(variable);
            }
        }
    }
}

/// A step's arguments: positional values, then named ones, each in the order written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepArguments {
    /// The values without a name.
    pub positional: Vec<ArgumentValue>,
    /// The named values, `(name, value)`; no name appears twice.
    pub named: Vec<(String, ArgumentValue)>,
}

impl StepArguments {
    /// Reads a step's bracket text by the grammar of this module. Empty text has no values.
    pub fn parse(text: &str) -> Result<Self, ArgumentError> {
        let text = text.trim();
        let mut arguments = Self::default();
        if text.is_empty() {
            return Ok(arguments);
        }
        if !starts_list(text) {
            arguments
                .positional
                .push(ArgumentValue::Text(decode_plain(text)));
            return Ok(arguments);
        }
        let mut reader = Reader { text, at: 0 };
        loop {
            reader.skip_space();
            let name = reader.name();
            reader.skip_space();
            if reader.at_end() || reader.peek() == Some(',') {
                return Err(match name {
                    Some(name) => ArgumentError::MissingValue {
                        name: name.to_string(),
                    },
                    None => ArgumentError::MissingArgument,
                });
            }
            let value = reader.value(name)?;
            match name {
                Some(name) => arguments.push_named(name, value)?,
                None => arguments.push_positional(value)?,
            }
            reader.skip_space();
            if reader.at_end() {
                return Ok(arguments);
            }
            if !reader.eat(',') {
                return Err(ArgumentError::Expected {
                    expected: "`,` between arguments",
                    found: reader.fragment(),
                });
            }
        }
    }

    /// The named value `name`, if given.
    pub fn get(&self, name: &str) -> Option<&ArgumentValue> {
        self.named.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Adds a positional value; an error once a named value has been added.
    pub fn push_positional(&mut self, value: ArgumentValue) -> Result<(), ArgumentError> {
        if !self.named.is_empty() {
            return Err(ArgumentError::PositionalAfterNamed);
        }
        self.positional.push(value);
        Ok(())
    }

    /// Adds a named value; an error if `name` is not a NAME of the grammar or already given.
    pub fn push_named(&mut self, name: &str, value: ArgumentValue) -> Result<(), ArgumentError> {
        if name_length(name) != Some(name.len()) {
            return Err(ArgumentError::InvalidName {
                name: name.to_string(),
            });
        }
        if self.get(name).is_some() {
            return Err(ArgumentError::DuplicateName {
                name: name.to_string(),
            });
        }
        self.named.push((name.to_string(), value));
        Ok(())
    }

    /// The canonical bracket text, which [`StepArguments::parse`] reads back to these values:
    /// items as `"text"`, `["a", "b"]`, `#E1` and `name=value`, separated by `, `. One
    /// positional text is written plain, as the search tools take it, when it reads back as
    /// itself (`birthplace of #E1`, `director of "The Visit"`); so it is also what the line
    /// parser keeps of `Tool[birthplace of #E1]` and `Tool["birthplace of #E1"]`.
    pub fn render(&self) -> String {
        if let ([ArgumentValue::Text(text)], []) =
            (self.positional.as_slice(), self.named.as_slice())
        {
            if let Some(plain) = plain_form(text) {
                return plain;
            }
        }
        let mut out = String::new();
        let named = self.named.iter().map(|(n, v)| (Some(n.as_str()), v));
        for (i, (name, value)) in self
            .positional
            .iter()
            .map(|v| (None, v))
            .chain(named)
            .enumerate()
        {
            if i > 0 {
                out.push_str(", ");
            }
            if let Some(name) = name {
                out.push_str(name);
                out.push('=');
            }
            value.write(&mut out);
        }
        out
    }
}

/// Why a step's bracket text is not valid arguments. Each message says what to write instead:
/// it is sent back to the planner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// A string has no closing quote.
    #[error("the string `{start}` has no closing `\"`; end every string with `\"`, and write a quote inside a string as `\\\"`")]
    UnterminatedString {
        /// The start of the string, cut short.
        start: String,
    },
    /// A backslash inside a string starts something other than `\"` or `\\`.
    #[error("`{escape}` is not allowed in a string; inside double quotes write a quote as `\\\"` and a backslash as `\\\\`")]
    UnknownEscape {
        /// The backslash and the character after it.
        escape: String,
    },
    /// A list has no closing `]`.
    #[error("a list has no closing `]`; write a list as [\"a\", \"b\"]")]
    UnterminatedList,
    /// `name=` is not followed by a value.
    #[error("`{name}=` has no value; write {name}=\"text\", {name}=[\"a\", \"b\"] or {name}=#E1")]
    MissingValue {
        /// The name.
        name: String,
    },
    /// Nothing between two commas, before the first or after the last.
    #[error("an argument is missing next to a `,`; remove the extra `,`")]
    MissingArgument,
    /// A value in a list of arguments is neither quoted, a list, nor a reference alone.
    #[error("{}", unquoted_message(.name.as_deref(), .found))]
    Unquoted {
        /// The value's name, if it has one.
        name: Option<String>,
        /// The value as written, cut short.
        found: String,
    },
    /// A list holds something other than quoted strings.
    #[error(
        "a list holds only quoted strings, but it has `{found}`; write a list as [\"a\", \"b\"]"
    )]
    NotAString {
        /// What the list holds, cut short.
        found: String,
    },
    /// Something other than the separator or end that must come next.
    #[error("expected {expected}, found `{found}`; quote each text value, like \"text\"")]
    Expected {
        /// What must come next.
        expected: &'static str,
        /// What came instead, cut short.
        found: String,
    },
    /// A name is given twice.
    #[error("`{name}` is given more than once; give each named argument once")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A positional value after a named one.
    #[error("a value without a name comes after a named one; put values without names first")]
    PositionalAfterNamed,
    /// A name that is not letters, digits, `_` and `-`.
    #[error("`{name}` is not a valid argument name; use letters, digits, `_` and `-`, starting with a letter or `_`")]
    InvalidName {
        /// The name as written.
        name: String,
    },
}

fn unquoted_message(name: Option<&str>, found: &str) -> String {
    match name {
        Some(name) => format!(
            "the value of `{name}` is not quoted (`{found}`); write {name}=\"text\", \
             {name}=[\"a\", \"b\"] or {name}=#E1"
        ),
        None => format!(
            "`{found}` is not quoted; when a step has several or named arguments, write each \
             text in double quotes, like \"text\", and a reference alone, like #E1"
        ),
    }
}

/// What a tool accepts as a named value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentKind {
    /// Text: a quoted string, or a reference whose result is used as text.
    Text,
    /// A list of quoted strings.
    List,
    /// A reference alone, `#E0`: a result the tool uses as a handle, not as text.
    Reference,
}

impl ArgumentKind {
    fn accepts(self, value: &ArgumentValue) -> bool {
        matches!(
            (self, value),
            (
                Self::Text,
                ArgumentValue::Text(_) | ArgumentValue::Reference(_)
            ) | (Self::List, ArgumentValue::List(_))
                | (Self::Reference, ArgumentValue::Reference(_))
        )
    }

    /// How to write a value of this kind, for messages.
    fn example(self) -> &'static str {
        match self {
            Self::Text => "\"text\" or #En",
            Self::List => "[\"a\", \"b\"]",
            Self::Reference => "#En",
        }
    }
}

/// A named value a tool takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedParameter<'a> {
    /// The name, as a NAME of the grammar.
    pub name: &'a str,
    /// Whether every call must give it.
    pub required: bool,
    /// What it accepts.
    pub kind: ArgumentKind,
}

impl<'a> NamedParameter<'a> {
    /// A value every call must give.
    pub const fn required(name: &'a str, kind: ArgumentKind) -> Self {
        Self {
            name,
            required: true,
            kind,
        }
    }

    /// A value a call may leave out.
    pub const fn optional(name: &'a str, kind: ArgumentKind) -> Self {
        Self {
            name,
            required: false,
            kind,
        }
    }
}

/// The arguments a tool takes, for [`Plan::validate_arguments`](crate::Plan::validate_arguments):
/// how many positional values, each text (a string or a reference), and which named values.
/// Named values not listed are rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSignature<'a> {
    /// The tool, matched against a step's tool ignoring case.
    pub tool: &'a str,
    /// How many positional values a call may give.
    pub positional: RangeInclusive<usize>,
    /// The named values, in the order a message lists them.
    pub named: &'a [NamedParameter<'a>],
}

impl ToolSignature<'_> {
    pub(super) fn applies_to(&self, tool: &str) -> bool {
        self.tool.to_lowercase() == tool.to_lowercase()
    }

    /// The first way `arguments` do not fit this signature, as a message.
    pub(super) fn check(&self, arguments: &StepArguments) -> Result<(), String> {
        let count = arguments.positional.len();
        if !self.positional.contains(&count) {
            return Err(format!("it gives {}", count_of_values(count)));
        }
        if let Some((i, value)) = arguments
            .positional
            .iter()
            .enumerate()
            .find(|(_, v)| !ArgumentKind::Text.accepts(v))
        {
            return Err(format!(
                "positional value {} is {}, but positional values are text",
                i + 1,
                value.what()
            ));
        }
        for (name, value) in &arguments.named {
            let Some(parameter) = self.named.iter().find(|p| p.name == name) else {
                return Err(format!("`{name}` is not one of its named arguments"));
            };
            if !parameter.kind.accepts(value) {
                return Err(format!(
                    "`{name}` is {}, but must be {}",
                    value.what(),
                    parameter.kind.example()
                ));
            }
        }
        match self
            .named
            .iter()
            .find(|p| p.required && arguments.get(p.name).is_none())
        {
            Some(missing) => Err(format!("the required `{}` is missing", missing.name)),
            None => Ok(()),
        }
    }

    /// What the tool takes, for messages: `1 positional value; named: vector_store=#En
    /// (required)`.
    pub(super) fn describe(&self) -> String {
        let (min, max) = (*self.positional.start(), *self.positional.end());
        let mut out = match (min, max) {
            (_, 0) => "no positional value".to_string(),
            (min, max) if min == max => count_of_values(min),
            (0, usize::MAX) => "any number of positional values".to_string(),
            (min, usize::MAX) => format!("at least {}", count_of_values(min)),
            (0, max) => format!("at most {}", count_of_values(max)),
            (min, max) => format!("{min} to {max} positional values"),
        };
        if self.named.is_empty() {
            out.push_str(" and no named value");
        } else {
            out.push_str("; named: ");
            for (i, p) in self.named.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let need = if p.required { "required" } else { "optional" };
                let _ = write!(out, "{}={} ({need})", p.name, p.kind.example());
            }
        }
        out
    }
}

fn count_of_values(count: usize) -> String {
    match count {
        1 => "1 positional value".to_string(),
        n => format!("{n} positional values"),
    }
}

/// The variable of `text` when it is exactly a reference, `#E12` or `#e12`: `"E12"`.
pub(super) fn exact_reference(text: &str) -> Option<String> {
    let length = reference_length(text)?;
    (length == text.len()).then(|| format!("E{}", &text[2..length]))
}

/// The length of the reference `#En` at the start of `text`, if there is one.
fn reference_length(text: &str) -> Option<usize> {
    let rest = text
        .strip_prefix("#E")
        .or_else(|| text.strip_prefix("#e"))?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0).then_some(2 + digits)
}

/// The length of the NAME at the start of `text`, if there is one.
fn name_length(text: &str) -> Option<usize> {
    let first = text.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    Some(
        text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(text.len()),
    )
}

/// The NAME of `NAME =` at the start of `text`, and the length up to and including `=`.
fn name_prefix(text: &str) -> Option<(&str, usize)> {
    let length = name_length(text)?;
    let after = &text[length..];
    let spaces = after.len() - after.trim_start().len();
    after[spaces..]
        .starts_with('=')
        .then_some((&text[..length], length + spaces + 1))
}

/// True when `text` (trimmed, not empty) is read as a list of items rather than plain text.
fn starts_list(text: &str) -> bool {
    if text.starts_with(['"', '[']) || name_prefix(text).is_some() {
        return true;
    }
    reference_length(text).is_some_and(|length| {
        let after = text[length..].trim_start();
        after.is_empty() || after.starts_with(',')
    })
}

/// Plain text with `\\` and `\"` decoded; any other backslash is kept.
fn decode_plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next @ ('\\' | '"'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` as a plain argument, when that reads back to `text` as the one positional value. A
/// backslash is doubled only where plain text decodes one (before `\` or `"`), so that the
/// search tools, which take the argument as it is, get the text unchanged.
fn plain_form(text: &str) -> Option<String> {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        plain.push(c);
        if c == '\\' && matches!(chars.peek(), Some('\\' | '"')) {
            plain.push('\\');
        }
    }
    let reads_back = !text.is_empty()
        && text.trim() == text
        && !text.contains(['\n', '\r'])
        && !starts_list(&plain);
    reads_back.then_some(plain)
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// A cursor over the bracket text of a list.
struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Reader<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn at_end(&self) -> bool {
        self.at >= self.text.len()
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += c.len_utf8();
        }
        found
    }

    fn skip_space(&mut self) {
        self.at = self.text.len() - self.rest().trim_start().len();
    }

    /// The rest up to the next `,` or `]`, cut short, to quote in a message.
    fn fragment(&self) -> String {
        let rest = self.rest();
        let end = rest.find([',', ']']).unwrap_or(rest.len());
        let fragment = if end == 0 { rest } else { &rest[..end] };
        cut(fragment, 40, CutMark::Ellipsis)
    }

    /// Consumes `NAME =` and returns the name, if the rest starts with one.
    fn name(&mut self) -> Option<&'t str> {
        let (name, length) = name_prefix(self.rest())?;
        self.at += length;
        Some(name)
    }

    fn value(&mut self, name: Option<&str>) -> Result<ArgumentValue, ArgumentError> {
        match self.peek() {
            Some('"') => self.string().map(ArgumentValue::Text),
            Some('[') => self.list().map(ArgumentValue::List),
            _ => {
                // A reference counts only alone: `#E1 films` is text and must be quoted.
                if let Some(length) = reference_length(self.rest()) {
                    let after = self.rest()[length..].trim_start();
                    if after.is_empty() || after.starts_with(',') {
                        let variable = format!("E{}", &self.rest()[2..length]);
                        self.at += length;
                        return Ok(ArgumentValue::Reference(variable));
                    }
                }
                Err(ArgumentError::Unquoted {
                    name: name.map(str::to_string),
                    found: self.fragment(),
                })
            }
        }
    }

    /// A string; the reader is at its opening quote.
    fn string(&mut self) -> Result<String, ArgumentError> {
        let start = self.at;
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, escaped @ ('"' | '\\'))) => out.push(escaped),
                    Some((_, other)) => {
                        return Err(ArgumentError::UnknownEscape {
                            escape: format!("\\{other}"),
                        })
                    }
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(ArgumentError::UnterminatedString {
            start: cut(&self.text[start..], 30, CutMark::Ellipsis),
        })
    }

    /// A list of strings; the reader is at its `[`.
    fn list(&mut self) -> Result<Vec<String>, ArgumentError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.eat(']') {
            return Ok(items);
        }
        loop {
            self.skip_space();
            match self.peek() {
                Some('"') => items.push(self.string()?),
                None => return Err(ArgumentError::UnterminatedList),
                Some(']' | ',') => return Err(ArgumentError::MissingArgument),
                Some(_) => {
                    return Err(ArgumentError::NotAString {
                        found: self.fragment(),
                    })
                }
            }
            self.skip_space();
            if self.eat(']') {
                return Ok(items);
            }
            if self.at_end() {
                return Err(ArgumentError::UnterminatedList);
            }
            if !self.eat(',') {
                return Err(ArgumentError::Expected {
                    expected: "`,` or `]` in a list",
                    found: self.fragment(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
