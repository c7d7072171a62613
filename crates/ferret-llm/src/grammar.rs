//! Constrained decoding for the embedded model: a reply's JSON Schema is compiled (by
//! `llguidance`) into a matcher that, at each step, says which tokens may come next, so a small
//! model's reply parses by construction and an enum field can only take one of its values.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;
use tokenizers::Tokenizer;

/// How a vocabulary writes the bytes of its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling {
    /// Byte-level BPE (GPT-2, SmolLM2): each byte is one of 256 printable characters.
    ByteLevel,
    /// SentencePiece (Llama 2, Gemma): text as written, `▁` for a space, and `<0xNN>` tokens for
    /// bytes the pieces do not cover.
    SentencePiece,
}

impl Spelling {
    /// The bytes `token` stands for; `None` when it is not text of this spelling.
    fn bytes(
        self,
        token: &str,
        byte_level: &std::collections::HashMap<char, u8>,
    ) -> Option<Vec<u8>> {
        match self {
            Self::ByteLevel => token.chars().map(|c| byte_level.get(&c).copied()).collect(),
            Self::SentencePiece => Some(match byte_token(token) {
                Some(byte) => vec![byte],
                None => token.replace('\u{2581}', " ").into_bytes(),
            }),
        }
    }
}

/// The byte a SentencePiece byte token (`<0x0A>`) stands for.
pub(crate) fn byte_token(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2).then(|| u8::from_str_radix(hex, 16).ok())?
}

/// Compiles reply schemas against one model's vocabulary.
pub(crate) struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    /// The vocabulary of `tokenizer` (as the GGUF describes it, spelled as `spelling` says),
    /// `stop` being the token that ends a reply; `vocab_size` is the model's output width, which
    /// may exceed the tokenizer's (padding rows are never allowed).
    pub(crate) fn new(
        tokenizer: &Tokenizer,
        spelling: Spelling,
        stop: u32,
        vocab_size: usize,
    ) -> Result<Self, String> {
        let env = GgufTokEnv::new(tokenizer.clone(), spelling, stop, vocab_size)?;
        let env: TokEnv = Arc::new(env);
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
        // Warnings go to the trace, not to the terminal of a CLI user.
        factory.quiet();
        Ok(Self { factory })
    }

    /// A matcher for replies that follow `schema`, written compactly (no free whitespace
    /// between tokens, which small models otherwise fill with newlines until the budget ends).
    pub(crate) fn matcher(&self, schema: &Value) -> Result<Matcher, String> {
        let mut schema = schema.clone();
        required_first(&mut schema);
        closed_objects(&mut schema);
        if let Value::Object(object) = &mut schema {
            object.insert(
                "x-guidance".to_owned(),
                serde_json::json!({ "whitespace_flexible": false, "coerce_one_of": true }),
            );
        }
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_json_schema(schema))
            .map_err(|e| e.to_string())?;
        let matcher = Matcher::new(Ok(parser));
        match matcher.get_error() {
            Some(error) => Err(error),
            None => Ok(matcher),
        }
    }
}

/// Put each object's required properties first, in the order the prompt's outline shows them,
/// so a reply that runs out of tokens has written what the stage cannot do without.
fn required_first(node: &mut Value) {
    match node {
        Value::Object(object) => {
            let required: Vec<String> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = object.get_mut("properties") {
                let mut ordered = serde_json::Map::new();
                for name in &required {
                    if let Some(property) = properties.remove(name) {
                        ordered.insert(name.clone(), property);
                    }
                }
                ordered.append(properties);
                *properties = ordered;
            }
            object.values_mut().for_each(required_first);
        }
        Value::Array(items) => items.iter_mut().for_each(required_first),
        _ => {}
    }
}

/// Forbid properties an object does not declare (unless its schema allows them): a small model
/// otherwise invents fields after the ones asked for and spends the budget on them. The branches
/// of `anyOf`, `allOf` and `oneOf` are left open: each describes only part of its object.
fn closed_objects(node: &mut Value) {
    match node {
        Value::Object(object) => {
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                object.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            for (keyword, value) in object.iter_mut() {
                if !matches!(keyword.as_str(), "anyOf" | "allOf" | "oneOf") {
                    closed_objects(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(closed_objects),
        _ => {}
    }
}

/// The model's vocabulary as byte strings, for the token trie the matcher walks.
struct GgufTokEnv {
    trie: TokTrie,
    tokenizer: Tokenizer,
}

impl GgufTokEnv {
    fn new(
        tokenizer: Tokenizer,
        spelling: Spelling,
        stop: u32,
        vocab_size: usize,
    ) -> Result<Self, String> {
        let vocab_size = vocab_size.max(tokenizer.get_vocab_size(true));
        let unicode_to_byte = byte_level_decoder();
        let special: std::collections::HashSet<u32> = tokenizer
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, token)| token.special)
            .map(|(id, _)| id)
            .collect();
        let mut words = vec![Vec::new(); vocab_size];
        for (id, word) in words.iter_mut().enumerate() {
            let id = u32::try_from(id).map_err(|e| e.to_string())?;
            let Some(name) = tokenizer.id_to_token(id) else {
                continue;
            };
            *word = if special.contains(&id) {
                // Special tokens sit behind a marker byte, so no text can spell them.
                let mut bytes = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                bytes.extend_from_slice(name.as_bytes());
                bytes
            } else {
                // A token that is not text of its spelling stays empty: never allowed.
                spelling
                    .bytes(name.as_str(), &unicode_to_byte)
                    .unwrap_or_default()
            };
        }
        let info = TokRxInfo::new(u32::try_from(vocab_size).map_err(|e| e.to_string())?, stop);
        Ok(Self {
            trie: TokTrie::from(&info, &words),
            tokenizer,
        })
    }
}

impl TokenizerEnv for GgufTokEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, bytes: &[u8]) -> Vec<TokenId> {
        match std::str::from_utf8(bytes) {
            Ok(text) => match self.tokenizer.encode(text, false) {
                Ok(encoding) => encoding.get_ids().to_vec(),
                Err(_) => self.trie.greedy_tokenize(bytes),
            },
            Err(_) => self.trie.greedy_tokenize(bytes),
        }
    }
}

/// The byte-level BPE alphabet reversed: each of the 256 characters that stand for a byte, and
/// the byte. Printable bytes stand for themselves; the others are shifted past 255 in order.
fn byte_level_decoder() -> std::collections::HashMap<char, u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut shifted = 0u32;
    (0..=255u8)
        .map(|byte| {
            let c = if printable(byte) {
                char::from(byte)
            } else {
                shifted += 1;
                char::from_u32(255 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
            };
            (c, byte)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_properties_come_first_at_every_depth() {
        let mut schema = serde_json::json!({
            "properties": {
                "reason": {"type": "string"},
                "intent": {"type": "string"},
                "grades": {"items": {"properties": {"why": {}, "score": {}}, "required": ["score"]}}
            },
            "required": ["intent"]
        });
        required_first(&mut schema);
        let names = |node: &Value| -> Vec<String> {
            node["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(names(&schema), ["intent", "reason", "grades"]);
        assert_eq!(
            names(&schema["properties"]["grades"]["items"]),
            ["score", "why"]
        );
    }

    /// The shape of the synthesis reply: a citation pattern under a length, and two optional
    /// fields given together or not at all. A pattern the regex engine cannot bound would make
    /// every such reply unconstrained.
    #[test]
    fn a_cited_answer_schema_compiles_to_a_grammar() {
        let env = llguidance::toktrie::ApproximateTokEnv::single_byte_env();
        let factory = ParserFactory::new_simple(&env).expect("a factory");
        let marker = r"\[ ?(?:1|2)(?:, ?(?:1|2))* ?\]";
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "maxLength": 320,
                    "pattern": format!(r"^[^\[\]]*{marker}(?:[^\[\]]|{marker})*$")
                },
                "short_answer": {"type": ["string", "null"]},
                "short_answer_source": {"type": ["integer", "null"]}
            },
            "required": ["answer"],
            "additionalProperties": false,
            "allOf": [{"anyOf": [
                {
                    "properties": {
                        "short_answer_source": {"enum": [1, 2]},
                        "short_answer": {"type": "string"}
                    },
                    "required": ["short_answer_source", "short_answer"]
                },
                {"properties": {"short_answer_source": {"type": "null"}, "short_answer": {"type": "null"}}}
            ]}]
        });
        let parser = factory.create_parser(TopLevelGrammar::from_json_schema(schema));
        assert!(parser.is_ok(), "{:?}", parser.err());
    }

    #[test]
    fn sentencepiece_tokens_spell_spaces_and_bytes() {
        let none = std::collections::HashMap::new();
        let spell = |token| Spelling::SentencePiece.bytes(token, &none);
        assert_eq!(spell("\u{2581}the").as_deref(), Some(&b" the"[..]));
        assert_eq!(spell("<0x0A>").as_deref(), Some(&b"\n"[..]));
        assert_eq!(spell("<0xZZ>").as_deref(), Some(&b"<0xZZ>"[..]));
        assert_eq!(spell("{\"").as_deref(), Some(&b"{\""[..]));
    }

    #[test]
    fn the_byte_level_alphabet_covers_every_byte_once() {
        let decoder = byte_level_decoder();
        assert_eq!(decoder.len(), 256);
        assert_eq!(decoder[&'Ġ'], b' ');
        assert_eq!(decoder[&'Ċ'], b'\n');
        assert_eq!(decoder[&'a'], b'a');
    }
}
