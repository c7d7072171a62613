use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::{quantized_gemma3, quantized_llama};
use ferret_core::{
    ChatMessage, Completion, CompletionRequest, LanguageModel, LlmError, RetryClass, TokenUsage,
};
use tokenizers::Tokenizer;

use crate::gguf_tokenizer::tokenizer_from_gguf;
use crate::grammar::Grammars;

/// File name of the embedded model inside a models directory (see `cargo xtask models`).
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// File name of Gemma 3 270M (the pretrained model, Q4_K_M), fetched by
/// `cargo xtask models --gemma`.
pub const GEMMA3_270M_FILE: &str = "gemma-3-270m-q4_k_m.gguf";

/// The embedded models `cargo xtask models` fetches: the name `--local-model` takes, the file,
/// and its licence. SmolLM2 is the default: on the same HotpotQA questions its calls were
/// accepted twice as often as those of Gemma 3 270M (a pretrained model, not instruction-tuned),
/// in half the time, in a ninth of the memory (`docs/eval/hotpotqa-gemma-odd-answers.md`,
/// `docs/bench/generation.md`).
pub const EMBEDDED_MODELS: &[(&str, &str, &str)] = &[
    ("smollm2", SMOLLM2_FILE, "Apache-2.0"),
    (
        "gemma3-270m",
        GEMMA3_270M_FILE,
        "Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    ),
];

/// ChatML, SmolLM2's format, for GGUF files that carry no chat template.
const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}\
                      {% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Gemma's turns, for Gemma files that carry no chat template (the pretrained model). The
/// system message keeps a turn of its own, as in ChatML, so its state can be kept for the next
/// prompt that starts with it.
const GEMMA_TURNS: &str = "{{ bos_token }}{% for message in messages %}<start_of_turn>\
                           {% if message.role == 'assistant' %}model{% else %}{{ message.role }}{% endif %}\n\
                           {{ message.content }}<end_of_turn>\n{% endfor %}\
                           {% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

/// The network a GGUF file holds, by its `general.architecture`.
#[derive(Clone)]
enum Network {
    /// Llama and the models built like it (SmolLM2).
    Llama(quantized_llama::ModelWeights),
    Gemma3(quantized_gemma3::ModelWeights),
}

impl Network {
    fn load(
        architecture: &str,
        content: gguf_file::Content,
        reader: &mut (impl std::io::Read + std::io::Seek),
    ) -> candle_core::Result<Self> {
        match architecture {
            "gemma3" => quantized_gemma3::ModelWeights::from_gguf(content, reader, &Device::Cpu)
                .map(Self::Gemma3),
            _ => quantized_llama::ModelWeights::from_gguf(content, reader, &Device::Cpu)
                .map(Self::Llama),
        }
    }

    /// Read `ids`, which sit at `position` onwards, and return the logits after the last.
    fn forward(&mut self, ids: &[u32], position: usize) -> candle_core::Result<Tensor> {
        let tensor = |ids: &[u32]| Tensor::new(ids, &Device::Cpu)?.unsqueeze(0);
        match self {
            Self::Llama(weights) => weights.forward(&tensor(ids)?, position)?.squeeze(0),
            // candle's Gemma 3 builds no attention mask for several tokens after the start
            // (its mask for the cached part has the wrong type), so past the start they are
            // read one at a time.
            Self::Gemma3(weights) if position > 0 && ids.len() > 1 => {
                let mut logits = None;
                for (offset, id) in ids.iter().enumerate() {
                    logits = Some(weights.forward(&tensor(&[*id])?, position + offset)?);
                }
                logits
                    .ok_or_else(|| candle_core::Error::Msg("no tokens to read".into()))?
                    .squeeze(0)
            }
            Self::Gemma3(weights) => weights.forward(&tensor(ids)?, position)?.squeeze(0),
        }
    }

    /// A prompt can resume from a kept prefix in one pass (see [`Network::forward`]).
    fn resumes_in_one_pass(&self) -> bool {
        matches!(self, Self::Llama(_))
    }
}

/// How the embedded model holds its weights, which decides the kernels candle multiplies with.
/// `cargo xtask bench --generation` measures each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// As the file stores them. candle has no SIMD kernel for some quantisations (Q4_1 among
    /// them) and falls back to scalar code: reading a prompt is several times slower.
    AsStored,
    /// Expanded to f32 when loading: prompts go through candle's vectorised f32 matrix multiply,
    /// for about 4 bytes a weight (some 550 MB for SmolLM2-135M); each generated token reads
    /// them all, so generation is bound by memory bandwidth.
    F32,
    /// Re-quantized to 8 bits (Q8_0, which candle multiplies with SIMD kernels) when loading:
    /// about a byte a weight. Reads prompts at about half the f32 speed and writes about three
    /// times faster (`cargo xtask bench --generation`): the default.
    #[default]
    Q8,
}

/// Settings of the embedded model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalModelConfig {
    /// The GGUF file (llama architecture, e.g. SmolLM2-135M-Instruct Q4_1).
    pub gguf: PathBuf,
    /// Longest prompt plus completion, in tokens; a longer request is a context-too-long error.
    pub context_tokens: usize,
    /// Seed for sampling when a request asks for a temperature above 0.
    pub seed: u64,
    /// How the weights are held in memory (see [`WeightFormat`]).
    pub weights: WeightFormat,
    /// Decode structured replies under their JSON Schema: at each step only the tokens that keep
    /// the reply valid may be chosen, so it always parses and an enum field takes one of its
    /// values. Off, the model writes freely and the reply is parsed tolerantly.
    pub constrain_json: bool,
    /// Divides the odds of a word the reply has used in its last [`REPEAT_WINDOW`] tokens (1.0:
    /// off). A 135M model left alone repeats a phrase until its budget ends; the JSON's own
    /// punctuation is exempt, so closing a string or an object is never made less likely.
    pub repeat_penalty: f32,
    /// Let the model write answers, reports and actions (see
    /// [`LanguageModel::writes_answers`]). Off by default: SmolLM2-135M's answers, measured on
    /// HotpotQA, held the gold answer a third as often as the extractive synthesizer's and cited
    /// pages that do not support them, while its classifications, rewrites and grades were
    /// as good as the rules' or better.
    pub writes_answers: bool,
}

/// The longest sequence candle's llama implementation has rotary embeddings for; a larger
/// `context_tokens` is held to it.
const MAX_CONTEXT: usize = 4096;

/// How far back [`LocalModelConfig::repeat_penalty`] looks, in generated tokens.
pub const REPEAT_WINDOW: usize = 64;

impl LocalModelConfig {
    /// Defaults for the embedded model `name` (see [`EMBEDDED_MODELS`]) in `models_dir`, or,
    /// for any other name, for the GGUF file at that path.
    pub fn named(models_dir: &Path, name: &str) -> Self {
        match EMBEDDED_MODELS.iter().find(|(known, _, _)| *known == name) {
            Some((_, file, _)) => Self::new(models_dir.join(file)),
            None => Self::new(name),
        }
    }

    /// Defaults for the model at `gguf`.
    pub fn new(gguf: impl Into<PathBuf>) -> Self {
        Self {
            gguf: gguf.into(),
            context_tokens: 4096,
            seed: 299_792_458,
            weights: WeightFormat::default(),
            constrain_json: true,
            repeat_penalty: 1.3,
            writes_answers: false,
        }
    }
}

struct Loaded {
    weights: Network,
    tokenizer: Tokenizer,
    /// The GGUF's chat template, compiled once at load as `chat`.
    chat: minijinja::Environment<'static>,
    /// The text of the token that begins a sequence, for templates that write it.
    bos_token: String,
    stop_tokens: Vec<u32>,
    /// Compiles reply schemas to token masks; `None` when the vocabulary cannot be read as
    /// byte-level text (replies are then unconstrained).
    grammars: Option<Grammars>,
    /// Tokens that carry JSON punctuation, never penalised as repeats.
    punctuation: HashSet<u32>,
    prefixes: PrefixCache,
}

/// Attention states after prompt prefixes already read, so a prompt that starts the same way
/// (a stage's system message, the same on every call) is read from where they end. A state
/// holds the weights (shared, not copied) and the prefix's keys and values, some 45 KB a token
/// for SmolLM2-135M.
#[derive(Default)]
struct PrefixCache {
    /// Most recently used last.
    entries: Vec<(Vec<u32>, Network)>,
}

impl PrefixCache {
    /// States kept; one per stage's system message covers the pipeline.
    const CAPACITY: usize = 16;

    /// Weights primed with the longest kept prefix of `prompt` (shorter than it), and that
    /// prefix's length; `base` and 0 when none is kept.
    fn primed(&mut self, prompt: &[u32], base: &Network) -> (Network, usize) {
        let best = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, (prefix, _))| prefix.len() < prompt.len() && prompt.starts_with(prefix))
            .max_by_key(|(_, (prefix, _))| prefix.len())
            .map(|(i, _)| i);
        match best {
            Some(i) => {
                let entry = self.entries.remove(i);
                let primed = (entry.1.clone(), entry.0.len());
                self.entries.push(entry);
                primed
            }
            None => (base.clone(), 0),
        }
    }

    fn keep(&mut self, prefix: &[u32], state: &Network) {
        if self.entries.iter().any(|(kept, _)| kept == prefix) {
            return;
        }
        if self.entries.len() == Self::CAPACITY {
            self.entries.remove(0);
        }
        self.entries.push((prefix.to_vec(), state.clone()));
    }
}

/// A chat model run in-process by candle from a GGUF file, on the CPU: no server, no network.
///
/// Requests are served one at a time (the weights keep one attention cache) on a blocking
/// thread, so async callers are not stalled.
#[derive(Clone)]
pub struct LocalModel {
    name: String,
    config: LocalModelConfig,
    loaded: Arc<Mutex<Loaded>>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Load the weights, tokenizer and chat template from the GGUF file.
    pub fn load(config: LocalModelConfig) -> Result<Self, LlmError> {
        let path = &config.gguf;
        // Missing, truncated or not a GGUF at all: fetching it again is the remedy for each.
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            LlmError {
            message: format!(
                "cannot load the model {}: {what}: {e} (run `cargo xtask models` to fetch it again)",
                path.display()
            ),
            retry: RetryClass::Permanent,
        }
        };
        let mut file = std::fs::File::open(path).map_err(|e| fail("cannot open it", &e))?;
        let content =
            gguf_file::Content::read(&mut file).map_err(|e| fail("not a GGUF file", &e))?;
        let architecture = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| "llama".to_owned());
        if !matches!(architecture.as_str(), "llama" | "gemma3") {
            return Err(fail(
                "unsupported architecture",
                &format!("`{architecture}` (the embedded model runs llama and gemma3)"),
            ));
        }
        let (tokenizer, spelling) =
            tokenizer_from_gguf(&content.metadata).map_err(|e| fail("tokenizer", &e))?;
        let chat_template = content
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| match architecture.as_str() {
                "gemma3" => GEMMA_TURNS.to_owned(),
                _ => CHATML.to_owned(),
            });
        let bos_token = content
            .metadata
            .get("tokenizer.ggml.bos_token_id")
            .and_then(|v| v.to_u32().ok())
            .and_then(|id| tokenizer.id_to_token(id))
            .unwrap_or_default();
        let mut chat = minijinja::Environment::new();
        chat.add_template_owned("chat", chat_template)
            .map_err(|e| fail("chat template", &e))?;
        let mut stop_tokens: Vec<u32> = ["tokenizer.ggml.eos_token_id"]
            .iter()
            .filter_map(|k| content.metadata.get(*k)?.to_u32().ok())
            .collect();
        stop_tokens.extend(
            [
                "<|im_end|>",
                "<|endoftext|>",
                "</s>",
                "<end_of_turn>",
                "<eos>",
            ]
            .iter()
            .filter_map(|t| tokenizer.token_to_id(t)),
        );
        let target = match config.weights {
            WeightFormat::AsStored => None,
            WeightFormat::F32 => Some(GgmlDType::F32),
            WeightFormat::Q8 => Some(GgmlDType::Q8_0),
        };
        let weights = match target {
            Some(dtype) => {
                let (content, mut converted) = convert_weights(content, &mut file, dtype)
                    .map_err(|e| fail("converting the weights", &e))?;
                Network::load(&architecture, content, &mut converted)
            }
            None => Network::load(&architecture, content, &mut file),
        }
        .map_err(|e| fail("weights", &e))?;
        let grammars = match stop_tokens.first() {
            Some(&stop) => Grammars::new(&tokenizer, spelling, stop, tokenizer.get_vocab_size(true))
                .map_err(|error| {
                    tracing::warn!(model = %path.display(), %error, "replies cannot be constrained to their schema");
                })
                .ok(),
            None => None,
        };
        let punctuation = (0..tokenizer.get_vocab_size(true) as u32)
            .filter(|&id| {
                tokenizer
                    .id_to_token(id)
                    .is_some_and(|token| token.contains(['"', '{', '}', '[', ']', ':', ',']))
            })
            .collect();
        let name = path
            .file_stem()
            .map_or_else(|| "local".to_owned(), |s| s.to_string_lossy().into_owned());
        Ok(Self {
            name,
            config,
            loaded: Arc::new(Mutex::new(Loaded {
                weights,
                tokenizer,
                chat,
                bos_token,
                stop_tokens,
                grammars,
                punctuation,
                prefixes: PrefixCache::default(),
            })),
        })
    }

    /// The ids the model reads for `text`, control tokens (`<|im_start|>`, `<start_of_turn>`)
    /// matched whole, as llama.cpp tokenizes it: to measure a prompt before sending it.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, LlmError> {
        let loaded = self.loaded.lock().map_err(|_| LlmError {
            message: "an earlier generation panicked; the model must be reloaded".into(),
            retry: RetryClass::Permanent,
        })?;
        loaded
            .tokenizer
            .encode(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| LlmError {
                message: format!("cannot tokenize the text: {e}"),
                retry: RetryClass::Permanent,
            })
    }

    /// The model at `models_dir/SmolLM2-135M-Instruct.Q4_1.gguf`.
    pub fn smollm2(models_dir: &Path) -> Result<Self, LlmError> {
        Self::load(LocalModelConfig::new(models_dir.join(SMOLLM2_FILE)))
    }
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn writes_answers(&self) -> bool {
        self.config.writes_answers
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let (loaded, config, name, request) = (
            self.loaded.clone(),
            self.config.clone(),
            self.name.clone(),
            request.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let mut loaded = loaded.lock().map_err(|_| LlmError {
                message: "an earlier generation panicked; the model must be reloaded".into(),
                retry: RetryClass::Permanent,
            })?;
            generate_blocking(&mut loaded, &config, &request).map(|generated| Completion {
                text: generated.text,
                usage: generated.usage,
                model: name,
                response_format: generated.constrained.then(|| GRAMMAR_FORMAT.to_owned()),
                constrained: generated.constrained,
            })
        })
        .await
        .map_err(|e| LlmError {
            message: format!("the generation thread failed: {e}"),
            retry: RetryClass::Permanent,
        })?
    }
}

/// The dialect the trace names for a reply decoded under its schema's grammar.
const GRAMMAR_FORMAT: &str = "grammar";

struct Generated {
    text: String,
    usage: TokenUsage,
    /// Decoded under the reply schema's grammar.
    constrained: bool,
}

fn generate_blocking(
    loaded: &mut Loaded,
    config: &LocalModelConfig,
    request: &CompletionRequest,
) -> Result<Generated, LlmError> {
    let fail = |e: &dyn std::fmt::Display| LlmError {
        message: format!("local generation failed: {e}"),
        retry: RetryClass::Permanent,
    };
    // Past its deadline a call is not wanted any more: checked before each costly step.
    let past_deadline = |before: &str| -> Result<(), LlmError> {
        match request.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(LlmError {
                message: format!("the call's deadline passed before {before}"),
                retry: RetryClass::Transient,
            }),
            _ => Ok(()),
        }
    };
    past_deadline("the model was free")?;
    let mut matcher = match (&request.json_schema, &loaded.grammars) {
        (Some(schema), Some(grammars)) if config.constrain_json => match grammars.matcher(schema) {
            Ok(matcher) => Some(matcher),
            Err(error) => {
                tracing::warn!(%error, "the reply's schema cannot be compiled to a grammar; generating unconstrained");
                None
            }
        },
        _ => None,
    };
    // Unconstrained, a small model asked for JSON often starts with prose; beginning its reply
    // with the object's first key puts it on the JSON track, and the reply ends where the
    // object closes. Under a grammar the matcher does both.
    let prefill = match (&request.json_schema, &matcher) {
        (Some(schema), None) => json_prefill(schema),
        _ => String::new(),
    };
    let mut json = (!prefill.is_empty()).then(|| JsonDepth::after(&prefill));
    let prompt = render_chat(&loaded.chat, &loaded.bos_token, &request.messages)
        .map_err(|e| fail(&e))?
        + &prefill;
    let encoding = loaded
        .tokenizer
        .encode(prompt, false)
        .map_err(|e| fail(&e))?;
    let prompt_ids = encoding.get_ids().to_vec();
    let max_new = request.max_tokens as usize;
    if prompt_ids.len() + max_new > config.context_tokens.min(MAX_CONTEXT) {
        return Err(LlmError {
            message: format!(
                "the prompt has {} tokens; with {max_new} to generate that exceeds the model's {}-token context",
                prompt_ids.len(),
                config.context_tokens.min(MAX_CONTEXT)
            ),
            retry: RetryClass::ContextTooLong,
        });
    }
    let sampling = if request.temperature <= 0.0 {
        Sampling::ArgMax
    } else {
        Sampling::All {
            temperature: f64::from(request.temperature),
        }
    };
    let mut sampler = LogitsProcessor::from_sampling(config.seed, sampling);
    let mut generated: Vec<u32> = Vec::new();
    // What the model chose, without the tokens the grammar forced: the repeats to penalise.
    let mut sampled: Vec<u32> = Vec::new();
    // Tokens the grammar forces (`{"intent":"` and every key after it) are not sampled: they
    // join the next forward pass together.
    let (mut weights, mut position) = loaded.prefixes.primed(&prompt_ids, &loaded.weights);
    // The first turn (the system message) ends at the first end-of-turn token; its state is kept
    // for the next prompt that starts with it.
    let first_turn = prompt_ids
        .iter()
        .position(|id| loaded.stop_tokens.contains(id))
        .map(|end| end + 1)
        .filter(|&end| end < prompt_ids.len());
    past_deadline("the prompt was read")?;
    if let (0, Some(end), true) = (position, first_turn, weights.resumes_in_one_pass()) {
        weights
            .forward(&prompt_ids[..end], 0)
            .map_err(|e| fail(&e))?;
        loaded.prefixes.keep(&prompt_ids[..end], &weights);
        position = end;
    }
    let mut input = prompt_ids[position..].to_vec();
    if let Some(matcher) = matcher.as_mut() {
        let forced = matcher.consume_ff_tokens();
        generated.extend_from_slice(&forced);
        input.extend(forced);
    }
    let stop_window = request.stop.iter().map(String::len).max().unwrap_or(0);
    while generated.len() < max_new {
        // Past the deadline the reply is no longer wanted: stop, with what was written.
        if request
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            break;
        }
        let mask = match matcher.as_mut() {
            Some(matcher) => {
                if matcher.is_stopped() {
                    break;
                }
                let mask = matcher.compute_mask().map_err(|e| fail(&e))?;
                // Only the end of the reply is left: it is complete.
                if mask.num_set() <= 1 && matcher.is_accepting().unwrap_or(true) {
                    break;
                }
                Some(mask)
            }
            None => None,
        };
        let logits = weights.forward(&input, position).map_err(|e| fail(&e))?;
        position += input.len();
        let mut values = logits.to_vec1::<f32>().map_err(|e| fail(&e))?;
        let recent = &sampled[sampled.len().saturating_sub(REPEAT_WINDOW)..];
        penalize_repeats(
            &mut values,
            recent,
            config.repeat_penalty,
            &loaded.punctuation,
        );
        if let Some(mask) = &mask {
            for (id, value) in values.iter_mut().enumerate() {
                let allowed = id < mask.len() && mask.is_allowed(id as u32);
                if !allowed {
                    *value = f32::NEG_INFINITY;
                }
            }
        }
        let logits = Tensor::new(values, &Device::Cpu).map_err(|e| fail(&e))?;
        let next = sampler.sample(&logits).map_err(|e| fail(&e))?;
        if loaded.stop_tokens.contains(&next) {
            break;
        }
        let before = generated.len();
        generated.push(next);
        sampled.push(next);
        input = vec![next];
        if let Some(matcher) = matcher.as_mut() {
            matcher.consume_token(next).map_err(|e| fail(&e))?;
            let forced = matcher.consume_ff_tokens();
            generated.extend_from_slice(&forced);
            input.extend(forced);
        }
        if stop_window > 0 {
            // Each token writes at least one byte, so a stop text that just appeared lies within
            // this step's tokens and the `stop_window` before them: decoding only those keeps
            // the check linear in the answer's length.
            let tail = &generated[before.saturating_sub(stop_window)..];
            let written = loaded.tokenizer.decode(tail, true).map_err(|e| fail(&e))?;
            if request
                .stop
                .iter()
                .any(|stop| !stop.is_empty() && written.contains(stop.as_str()))
            {
                break;
            }
        }
        if let Some(depth) = json.as_mut() {
            let piece = loaded
                .tokenizer
                .decode(&[next], false)
                .map_err(|e| fail(&e))?;
            if depth.closes(&piece) {
                break;
            }
        }
    }
    let mut text = prefill
        + &loaded
            .tokenizer
            .decode(&generated, true)
            .map_err(|e| fail(&e))?;
    // The answer ends before the first stop text it wrote.
    if let Some(end) = request
        .stop
        .iter()
        .filter(|stop| !stop.is_empty())
        .filter_map(|stop| text.find(stop.as_str()))
        .min()
    {
        text.truncate(end);
    }
    Ok(Generated {
        text,
        usage: TokenUsage {
            prompt_tokens: prompt_ids.len() as u64,
            completion_tokens: generated.len() as u64,
        },
        constrained: matcher.is_some(),
    })
}

/// Divide (or, for a negative logit, multiply) by `penalty` the logit of each token in `recent`
/// once, `exempt` aside.
fn penalize_repeats(values: &mut [f32], recent: &[u32], penalty: f32, exempt: &HashSet<u32>) {
    if penalty == 1.0 {
        return;
    }
    let seen: HashSet<u32> = recent.iter().copied().collect();
    for id in seen.difference(exempt) {
        if let Some(logit) = values.get_mut(*id as usize) {
            *logit = if *logit >= 0.0 {
                *logit / penalty
            } else {
                *logit * penalty
            };
        }
    }
}

/// `{"<first required property>":`, or `{` when the schema names none.
fn json_prefill(schema: &serde_json::Value) -> String {
    match schema.pointer("/required/0").and_then(|v| v.as_str()) {
        Some(key) => format!("{{\"{key}\":"),
        None => "{".to_owned(),
    }
}

/// Nesting depth of the JSON written so far, strings and escapes respected, to stop generating
/// once the top-level value is closed.
#[derive(Debug, Default)]
struct JsonDepth {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl JsonDepth {
    fn after(text: &str) -> Self {
        let mut state = Self::default();
        state.closes(text);
        state
    }

    /// Feed `text`; true when it closes the top-level value.
    fn closes(&mut self, text: &str) -> bool {
        for c in text.chars() {
            if self.in_string {
                match (self.escaped, c) {
                    (true, _) => self.escaped = false,
                    (false, '\\') => self.escaped = true,
                    (false, '"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => self.in_string = true,
                '{' | '[' => self.depth += 1,
                '}' | ']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
}

/// The same GGUF, in memory, with every quantized tensor stored as `dtype` (tensors the file
/// keeps in f32, such as the norms, stay so), so candle multiplies with that type's kernels.
fn convert_weights(
    content: gguf_file::Content,
    file: &mut std::fs::File,
    dtype: GgmlDType,
) -> candle_core::Result<(gguf_file::Content, std::io::Cursor<Vec<u8>>)> {
    let mut tensors = Vec::with_capacity(content.tensor_infos.len());
    for (name, info) in &content.tensor_infos {
        let tensor = content.tensor(file, name, &Device::Cpu)?;
        let converted = if info.ggml_dtype == GgmlDType::F32 || info.ggml_dtype == dtype {
            tensor
        } else {
            QTensor::quantize(&tensor.dequantize(&Device::Cpu)?, dtype)?
        };
        tensors.push((name.clone(), converted));
    }
    let metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut buffer = std::io::Cursor::new(Vec::new());
    gguf_file::write(&mut buffer, &metadata, &tensors)?;
    buffer.set_position(0);
    let expanded = gguf_file::Content::read(&mut buffer)?;
    Ok((expanded, buffer))
}

fn render_chat(
    chat: &minijinja::Environment<'static>,
    bos_token: &str,
    messages: &[ChatMessage],
) -> Result<String, minijinja::Error> {
    chat.get_template("chat")?.render(minijinja::context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => bos_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_stops_where_the_top_level_json_value_closes() {
        let mut depth = JsonDepth::after(&json_prefill(
            &serde_json::json!({"required": ["intent", "reason"]}),
        ));
        assert!(!depth.closes(r#" "search", "reason": "a {brace} and a \" quote""#));
        assert!(!depth.closes(r#", "list": [1, {"a": 2}]"#));
        assert!(depth.closes("} and then the model rambles on"));
        assert_eq!(json_prefill(&serde_json::json!({"type": "object"})), "{");
    }
}
