//! The tokenizer a llama.cpp GGUF file describes in its metadata, rebuilt so that an embedded
//! model needs no `tokenizer.json`: byte-level BPE (`gpt2`) or SentencePiece (`llama`), read as
//! llama.cpp reads them.

use std::collections::{HashMap, HashSet};

use candle_core::quantized::gguf_file;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::replace::Replace;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper, Tokenizer};

use crate::grammar::{byte_token, Spelling};

/// Rebuild the tokenizer that a llama.cpp GGUF file describes in its metadata
/// (`tokenizer.ggml.*`), byte-level BPE (`gpt2`) or SentencePiece (`llama`), so the model needs
/// no separate `tokenizer.json`.
pub(crate) fn tokenizer_from_gguf(
    metadata: &HashMap<String, gguf_file::Value>,
) -> Result<(Tokenizer, Spelling), String> {
    let get = |key: &str| {
        metadata
            .get(key)
            .ok_or_else(|| format!("`{key}` is missing"))
    };
    let kind = get("tokenizer.ggml.model")?
        .to_string()
        .map_err(|e| e.to_string())?;
    let spelling = match kind.as_str() {
        "gpt2" => Spelling::ByteLevel,
        // Only SentencePiece vocabularies that add no space before the text (Gemma's): llama.cpp
        // adds one for the others (Llama 2, Mistral), which this tokenizer does not.
        "llama"
            if metadata
                .get("tokenizer.ggml.add_space_prefix")
                .and_then(|v| v.to_bool().ok())
                == Some(false) =>
        {
            Spelling::SentencePiece
        }
        _ => {
            return Err(format!(
            "only byte-level BPE (`gpt2`) and SentencePiece (`llama`) tokenizers without a space prefix (Gemma's) are supported, this one is `{kind}`"
        ))
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        get(key)?
            .to_vec()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|v| v.to_string().cloned().map_err(|e| e.to_string()))
            .collect()
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    let types: Vec<i32> = match get("tokenizer.ggml.token_type") {
        Ok(types) => types
            .to_vec()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|v| v.to_i32().unwrap_or(NORMAL_TOKEN))
            .collect(),
        Err(_) => vec![NORMAL_TOKEN; tokens.len()],
    };
    let mut tokenizer = match spelling {
        Spelling::ByteLevel => {
            let merges = strings("tokenizer.ggml.merges")?
                .into_iter()
                .filter_map(|m| m.split_once(' ').map(|(a, b)| (a.to_owned(), b.to_owned())))
                .collect::<Vec<_>>();
            let mut tokenizer = Tokenizer::new(bpe(&tokens, merges, false)?);
            tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
                Digits::new(true).into(),
                ByteLevel::new(false, true, true).into(),
            ]))));
            tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
            tokenizer
        }
        Spelling::SentencePiece => {
            let scores: Vec<f32> = get("tokenizer.ggml.scores")?
                .to_vec()
                .map_err(|e| e.to_string())?
                .iter()
                .map(|v| v.to_f32().map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            let merges = merges_from_scores(&tokens, &scores, &types);
            let mut tokenizer = Tokenizer::new(bpe(&tokens, merges, true)?);
            tokenizer.with_normalizer(Some(
                Replace::new(" ", "\u{2581}").map_err(|e| e.to_string())?,
            ));
            tokenizer.with_decoder(Some(DecoderWrapper::Sequence(DecoderSequence::new(vec![
                DecoderWrapper::Replace(Replace::new("\u{2581}", " ").map_err(|e| e.to_string())?),
                DecoderWrapper::ByteFallback(ByteFallback::new()),
                DecoderWrapper::Fuse(Fuse::new()),
            ]))));
            tokenizer
        }
    };
    // Control tokens (`<|im_start|>`, `<start_of_turn>`) must match as whole tokens in the
    // prompt and are left out of decoded text; user-defined ones (Gemma's newline runs) are
    // matched whole too, as llama.cpp does, but are text.
    let added = |kind: i32, special: bool| -> Vec<AddedToken> {
        tokens
            .iter()
            .zip(&types)
            .filter(|(_, t)| **t == kind)
            .map(|(token, _)| AddedToken::from(token.clone(), special).normalized(false))
            .collect()
    };
    tokenizer.add_special_tokens(&added(CONTROL_TOKEN, true));
    tokenizer.add_tokens(&added(USER_DEFINED_TOKEN, false));
    Ok((tokenizer, spelling))
}

/// Token types in `tokenizer.ggml.token_type`, as llama.cpp numbers them.
const NORMAL_TOKEN: i32 = 1;
const CONTROL_TOKEN: i32 = 3;
const USER_DEFINED_TOKEN: i32 = 4;

fn bpe(
    tokens: &[String],
    merges: Vec<(String, String)>,
    byte_fallback: bool,
) -> Result<BPE, String> {
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(byte_fallback);
    if byte_fallback {
        builder = builder.unk_token("<unk>".to_owned());
    }
    builder.build().map_err(|e| e.to_string())
}

/// The merges a SentencePiece BPE vocabulary implies. SentencePiece joins, at each step, the
/// adjacent pair whose union is the best-scored piece; a BPE merge list ranked by that score
/// does the same. Every way of splitting a normal piece into two normal pieces is a merge.
fn merges_from_scores(tokens: &[String], scores: &[f32], types: &[i32]) -> Vec<(String, String)> {
    let normal: HashSet<&str> = tokens
        .iter()
        .zip(types)
        .filter(|(token, t)| **t == NORMAL_TOKEN && byte_token(token).is_none())
        .map(|(token, _)| token.as_str())
        .collect();
    let mut ranked: Vec<(f32, usize, &str, &str)> = Vec::new();
    for (id, piece) in tokens.iter().enumerate() {
        if !normal.contains(piece.as_str()) {
            continue;
        }
        let score = scores.get(id).copied().unwrap_or(f32::MIN);
        for (split, _) in piece.char_indices().skip(1) {
            let (left, right) = piece.split_at(split);
            if normal.contains(left) && normal.contains(right) {
                ranked.push((score, id, left, right));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .map(|(_, _, left, right)| (left.to_owned(), right.to_owned()))
        .collect()
}
