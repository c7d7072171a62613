//! The answer's text as a model writes it: the `answer` string of its JSON reply, decoded piece
//! by piece, so that a reader sees the answer grow before the reply is whole and checked.

/// Reads the value of a JSON reply's `answer` string from raw text that arrives in pieces.
#[derive(Debug, Default)]
pub(crate) struct AnswerField {
    raw: String,
    /// Where the string's content starts in `raw`, once the key has been read.
    start: Option<usize>,
    /// How far into `raw` the content has been decoded.
    read: usize,
    /// The closing quote was read.
    closed: bool,
}

impl AnswerField {
    /// Take the next `piece` of the reply; returns the answer text it adds (often none: the
    /// reply's other fields, or an escape cut in two that the next piece completes).
    pub(crate) fn push(&mut self, piece: &str) -> String {
        self.raw.push_str(piece);
        if self.closed {
            return String::new();
        }
        if self.start.is_none() {
            self.start = value_start(&self.raw);
            self.read = self.start.unwrap_or(0);
        }
        if self.start.is_none() {
            return String::new();
        }
        let mut text = String::new();
        let rest = &self.raw[self.read..];
        let mut chars = rest.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    self.closed = true;
                    self.read += at + 1;
                    return text;
                }
                '\\' => match unescape(&rest[at..]) {
                    Some((decoded, used)) => {
                        text.push_str(&decoded);
                        // Skip what the escape used beyond the backslash.
                        while chars.peek().is_some_and(|&(next, _)| next < at + used) {
                            chars.next();
                        }
                    }
                    // Cut in two: the next piece completes it.
                    None => {
                        self.read += at;
                        return text;
                    }
                },
                c => text.push(c),
            }
        }
        self.read = self.raw.len();
        text
    }
}

/// Where the content of the top-level `"answer": "` string starts in `raw`, once it is all there.
fn value_start(raw: &str) -> Option<usize> {
    let key = "\"answer\"";
    let mut from = 0;
    while let Some(found) = raw[from..].find(key) {
        let at = from + found;
        from = at + key.len();
        // A key follows `{` or `,`; the same word inside a value does not.
        let before = raw[..at].trim_end().chars().next_back();
        if !matches!(before, Some('{' | ',')) {
            continue;
        }
        let after = raw[from..].trim_start();
        let after = after.strip_prefix(':')?.trim_start();
        let value = after.strip_prefix('"')?;
        return Some(raw.len() - value.len());
    }
    None
}

/// The character an escape at the start of `text` stands for and the bytes it takes, or `None`
/// when `text` ends before the escape does.
fn unescape(text: &str) -> Option<(String, usize)> {
    let kind = text[1..].chars().next()?;
    let simple = match kind {
        '"' => Some('"'),
        '\\' => Some('\\'),
        '/' => Some('/'),
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'u' => None,
        // Not JSON: kept as written, for the checked reply to judge.
        other => return Some((format!("\\{other}"), 1 + other.len_utf8())),
    };
    if let Some(c) = simple {
        return Some((c.to_string(), 2));
    }
    // Four hex digits follow `\u`; with fewer bytes yet, the next piece completes them.
    if text.len() < 6 {
        return None;
    }
    let unit = |at: usize| -> Option<u32> {
        let hex = text.get(at..at + 4)?;
        u32::from_str_radix(hex, 16).ok()
    };
    let Some(high) = unit(2) else {
        // Not JSON: marked, and the text after it still streams.
        return Some(('\u{fffd}'.to_string(), 2));
    };
    if (0xD800..0xDC00).contains(&high) {
        // A surrogate pair: the low half follows as another `\u` escape.
        if text.len() < 12 {
            return None;
        }
        let low = text
            .get(6..8)
            .filter(|s| *s == "\\u")
            .and_then(|_| unit(8))
            .filter(|low| (0xDC00..0xE000).contains(low));
        return Some(match low {
            Some(low) => {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                (char::from_u32(code).unwrap_or('\u{fffd}').to_string(), 12)
            }
            None => ('\u{fffd}'.to_string(), 6),
        });
    }
    Some((char::from_u32(high).unwrap_or('\u{fffd}').to_string(), 6))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::AnswerField;

    fn streamed(pieces: &[&str]) -> String {
        let mut field = AnswerField::default();
        pieces.iter().map(|piece| field.push(piece)).collect()
    }

    #[test]
    fn the_answer_grows_piece_by_piece_and_the_rest_of_the_reply_is_not_shown() {
        let mut field = AnswerField::default();
        assert_eq!(field.push("{\"short_answer\": \"the answer\", \"ans"), "");
        assert_eq!(field.push("wer\": \"The Final"), "The Final");
        assert_eq!(field.push(" Five \\"), " Five ");
        assert_eq!(field.push("\"won\\\" [1]."), "\"won\" [1].");
        assert_eq!(field.push("\", \"short_answer_source\": 1}"), "");
    }

    #[test]
    fn a_broken_escape_is_marked_and_the_rest_still_streams() {
        assert_eq!(
            streamed(&["{\"answer\": \"Rome \\uZZ", "ZZ was founded\"}"]),
            "Rome \u{fffd}ZZZZ was founded"
        );
    }

    proptest! {
        /// However the reply is cut, the pieces add up to the decoded answer.
        #[test]
        fn any_cut_gives_the_decoded_answer(
            answer in "[a-zA-Z0-9 .,\\[\\]\"\\\\/\n\t\u{e9}\u{1f600}]{0,40}",
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let reply = serde_json::json!({"answer": answer, "short_answer": "x"}).to_string();
            let reply = reply.replace('\u{1f600}', "\\ud83d\\ude00").replace('\u{e9}', "\\u00e9");
            let mut bounds: Vec<usize> = cuts
                .into_iter()
                .map(|c| c % (reply.len() + 1))
                .filter(|&c| reply.is_char_boundary(c))
                .collect();
            bounds.sort_unstable();
            bounds.dedup();
            let mut pieces = Vec::new();
            let mut last = 0;
            for b in bounds.into_iter().chain([reply.len()]) {
                pieces.push(&reply[last..b]);
                last = b;
            }
            prop_assert_eq!(streamed(&pieces), answer);
        }
    }
}
