use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use ferret_core::{
    Condensation, Implementation, LanguageModel, LlmCall, LlmCallOutcome, LlmError, RetryClass,
    StageOutput, TextSink, TokenUsage,
};
use serde::{Deserialize, Serialize};

use ferret_layers::Deadline;

use crate::budget::{current_budget, ModelBudget};
use crate::condense::{
    accept_summary, condense_sources, passages, summary_key, tokens_saved, CondensationContext,
    CondensationReply, Summaries, CONDENSATION_INPUT_CHARS, SERVED_CALL_TOKENS,
    SUMMARY_PROMPT_TOKENS,
};
use crate::prompts::{PromptContext, PromptSource, Prompts, Stage};
use crate::structured::{generate_with_schema, Attempted, StructuredError};

/// `work`, abandoned at the call deadline of `budget` when there is one.
async fn within_deadline<T>(
    budget: Option<&Arc<ModelBudget>>,
    work: impl Future<Output = Result<T, StructuredError>>,
) -> Result<T, StructuredError> {
    let Some(budget) = budget else {
        return work.await;
    };
    let allowed = budget
        .call_deadline()
        .saturating_duration_since(Instant::now());
    Deadline::new(allowed).run(work).await.unwrap_or_else(|_| {
        Err(StructuredError::Model(LlmError {
            message: format!("no answer within the call's {} ms", allowed.as_millis()),
            retry: RetryClass::Transient,
        }))
    })
}

/// Why a stage's model call gave no value.
enum Miss {
    /// The reply parsed; the stage's checks refused it.
    Refused(String),
    /// No reply that parsed.
    Failed(String),
}

/// What a model costs, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Dollars per million prompt tokens.
    pub prompt_per_million: f64,
    /// Dollars per million completion tokens.
    pub completion_per_million: f64,
}

impl ModelPrice {
    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: TokenUsage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt_per_million
            + usage.completion_tokens as f64 * self.completion_per_million)
            / 1_000_000.0
    }
}

/// How the stages use a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StageModelConfig {
    /// Prices by model name; a model without a price costs 0 (local models, self-hosted servers).
    pub prices: HashMap<String, ModelPrice>,
    /// Results shown to the grading and synthesis prompts, best first.
    pub max_sources: usize,
    /// Characters of each result's text shown to a prompt.
    pub source_chars: usize,
    /// Stages that keep their heuristic though a model is configured: where measurement shows
    /// the model does no better, or costs more time than the search has.
    pub heuristic_stages: BTreeSet<Stage>,
}

impl Default for StageModelConfig {
    /// Sized for small models: a few results, a few hundred characters each.
    fn default() -> Self {
        Self {
            prices: HashMap::new(),
            max_sources: 5,
            source_chars: 600,
            heuristic_stages: BTreeSet::new(),
        }
    }
}

impl StageModelConfig {
    /// For a model of a few hundred million parameters on a CPU, such as the embedded
    /// SmolLM2-135M: it classifies the message and rewrites the query, while the question's
    /// analysis, its decomposition, grading and the next hop keep their heuristics. Measured on
    /// HotpotQA dev questions, its analysis lowered retrieval and answers, nine in ten of its
    /// decompositions failed the stage's checks, and its grading and next-hop calls took about
    /// six seconds each, beyond the time a question has; see `docs/eval/stage-ablation/`.
    pub fn small_model() -> Self {
        Self {
            heuristic_stages: BTreeSet::from([
                Stage::Analysis,
                Stage::Decomposition,
                Stage::Grading,
                Stage::NextHop,
            ]),
            ..Self::default()
        }
    }
}

/// A model as the pipeline's stages use it: one structured call per stage decision, rendered
/// from the stage's template, accounted (tokens, cost, time) in an [`LlmCall`], and a fallback
/// to the stage's heuristic whenever no usable answer comes back.
#[derive(Clone)]
pub struct StageModel {
    model: Arc<dyn LanguageModel>,
    prompts: Arc<Prompts>,
    config: StageModelConfig,
    /// Summaries already accepted, so grading and synthesis of one search, and later
    /// searches, do not ask for the same one again.
    summaries: Arc<Summaries>,
}

impl std::fmt::Debug for StageModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageModel")
            .field("model", &self.model.name())
            .field("config", &self.config)
            .finish()
    }
}

impl StageModel {
    /// The stages will call `model` with the built-in prompts.
    pub fn new(model: Arc<dyn LanguageModel>, config: StageModelConfig) -> Self {
        let prompts = Prompts::new().with_max_source_chars(config.source_chars);
        Self {
            model,
            prompts: Arc::new(prompts),
            config,
            summaries: Arc::default(),
        }
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        self.model.name()
    }

    /// Whether `stage` asks the model, rather than keeping its heuristic
    /// ([`StageModelConfig::heuristic_stages`]).
    pub fn asks(&self, stage: Stage) -> bool {
        !self.config.heuristic_stages.contains(&stage)
    }

    /// Whether the model should write what the user reads (see
    /// [`LanguageModel::writes_answers`]).
    pub fn writes_answers(&self) -> bool {
        self.model.writes_answers()
    }

    /// The settings.
    pub fn config(&self) -> &StageModelConfig {
        &self.config
    }

    /// Ask the model for the reply of the context's stage and turn it into the stage's value with
    /// `accept` (which may refuse a reply that parsed but makes no sense). On any failure the
    /// `fallback` (the heuristic) runs and its output says why; the call is accounted either way.
    pub async fn run<C, V, F>(
        &self,
        context: &C,
        max_tokens: u32,
        accept: impl FnOnce(C::Reply) -> Result<V, String>,
        fallback: F,
    ) -> StageOutput<V>
    where
        C: PromptContext,
        F: Future<Output = StageOutput<V>>,
    {
        self.run_streaming(context, max_tokens, accept, fallback, &|_| {})
            .await
    }

    /// [`run`](Self::run), handing `sink` the reply's raw text as the model writes it, when it
    /// streams. What `sink` gets is provisional: the reply may still be refused.
    pub async fn run_streaming<C, V, F>(
        &self,
        context: &C,
        max_tokens: u32,
        accept: impl FnOnce(C::Reply) -> Result<V, String>,
        fallback: F,
        sink: &TextSink<'_>,
    ) -> StageOutput<V>
    where
        C: PromptContext,
        F: Future<Output = StageOutput<V>>,
    {
        let stage = C::STAGE;
        let started = Instant::now();
        let model = self.model.name().to_owned();
        let mut call = LlmCall {
            caller: stage.name().to_owned(),
            model: model.clone(),
            requests: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: 0.0,
            duration_ms: 0,
            outcome: LlmCallOutcome::Parsed,
            response_format: None,
            condensed: None,
        };
        let budget = current_budget();
        let result = match self.prompts.render_context(context) {
            Err(e) => Err(Miss::Failed(e.to_string())),
            Ok(messages) => match budget.as_ref().and_then(|b| {
                // About four characters a token: the call's cost is known before it is made.
                let prompt_chars: usize = messages.iter().map(|m| m.content.len()).sum();
                b.refuses((prompt_chars / 4) as u64 + u64::from(max_tokens))
            }) {
                Some(why) => Err(Miss::Failed(format!("not asked: {why}"))),
                None => match within_deadline(
                    budget.as_ref(),
                    generate_with_schema::<C::Reply>(
                        self.model.as_ref(),
                        messages,
                        max_tokens,
                        context.reply_schema(),
                        sink,
                    ),
                )
                .await
                {
                    Ok(out) => {
                        let requests = if out.attempted == Attempted::Repaired {
                            2
                        } else {
                            1
                        };
                        self.account(&mut call, requests, out.usage);
                        call.response_format = out.response_format;
                        accept(out.value)
                            .map(|value| (value, out.attempted))
                            .map_err(|e| Miss::Refused(format!("the reply makes no sense: {e}")))
                    }
                    Err(StructuredError::Unparseable {
                        last_error, usage, ..
                    }) => {
                        self.account(&mut call, 2, usage);
                        Err(Miss::Failed(format!(
                            "unparseable after one repair: {last_error}"
                        )))
                    }
                    Err(StructuredError::Incomplete { error, usage, .. }) => {
                        self.account(&mut call, 1, usage);
                        Err(Miss::Failed(format!(
                            "cut off before the reply was complete: {error}"
                        )))
                    }
                    Err(StructuredError::Model(e)) => {
                        call.requests = 1;
                        Err(Miss::Failed(e.to_string()))
                    }
                },
            },
        };
        if let Some(budget) = &budget {
            budget.spend(call.prompt_tokens + call.completion_tokens);
        }
        call.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok((value, attempted)) => {
                let repaired = attempted == Attempted::Repaired;
                call.outcome = if repaired {
                    LlmCallOutcome::Repaired
                } else {
                    LlmCallOutcome::Parsed
                };
                StageOutput {
                    value,
                    implementation: Implementation::Llm { model, repaired },
                    llm_calls: vec![call],
                }
            }
            Err(miss) => {
                let (error, outcome) = match miss {
                    Miss::Refused(error) => (error.clone(), LlmCallOutcome::Refused { error }),
                    Miss::Failed(error) => (error.clone(), LlmCallOutcome::Failed { error }),
                };
                tracing::warn!(stage = stage.name(), %model, %error, "model stage failed; the heuristic runs instead");
                let mut output = fallback.await;
                output.implementation = Implementation::Heuristic {
                    why: format!("fallback, {model} failed: {error}"),
                };
                call.outcome = outcome;
                output.llm_calls.insert(0, call);
                output
            }
        }
    }

    /// Condense the sources longer than a prompt shows them, for [`StageModel::run`] on the
    /// context that shows them: a model that writes answers summarises each (the condensation
    /// stage, unless it is kept heuristic), and a source it does not summarise acceptably is cut
    /// to its passages about the question ([`condense_sources`]). What was condensed, with the
    /// summary calls, for [`noting_condensation`].
    pub async fn condense(&self, question: &str, sources: &mut [PromptSource]) -> Condensed {
        let max_chars = self.config.source_chars;
        let mut condensed = Condensed::default();
        let long: Vec<usize> = (0..sources.len())
            .filter(|&i| sources[i].text.chars().count() > max_chars)
            .collect();
        // About four characters a token, and room for the JSON around the summary.
        let max_tokens = (max_chars / 3 + 16) as u32;
        let summaries_cost: u64 = long
            .iter()
            .map(|&i| {
                let shown = sources[i].text.len().min(CONDENSATION_INPUT_CHARS);
                (shown / 4) as u64 + SUMMARY_PROMPT_TOKENS + u64::from(max_tokens)
            })
            .sum();
        // The call the summaries serve must still fit after them: it reads every source shown.
        let served_cost = (sources.len() * max_chars / 4) as u64 + SERVED_CALL_TOKENS;
        let affordable = current_budget()
            .is_none_or(|budget| budget.refuses(summaries_cost + served_cost).is_none());
        if !long.is_empty() && affordable && self.writes_answers() && self.asks(Stage::Condensation)
        {
            let asks = long.iter().map(|&i| {
                let source = &sources[i];
                let mut shown = source.clone();
                // The model reads the passages about the question, not only the page's head.
                shown.text = passages(question, &source.text, CONDENSATION_INPUT_CHARS);
                let context = CondensationContext {
                    question: question.to_owned(),
                    source: shown,
                    max_chars,
                };
                let text = source.text.clone();
                async move {
                    let key = summary_key(question, &text, max_chars);
                    if let Some(summary) = self.summaries.get(&key) {
                        return StageOutput::heuristic(Some(summary));
                    }
                    let accept = |reply: CondensationReply| {
                        accept_summary(&reply.summary, &text, max_chars).map(Some)
                    };
                    let output = self
                        .run(&context, max_tokens, accept, async {
                            StageOutput::heuristic(None)
                        })
                        .await;
                    if let Some(summary) = &output.value {
                        self.summaries.keep(key, summary.clone());
                    }
                    output
                }
            });
            // A remote model answers them side by side; the embedded one takes them in turn.
            let outputs = futures::future::join_all(asks).await;
            for (&i, output) in long.iter().zip(outputs) {
                condensed.calls.extend(output.llm_calls);
                if let Some(summary) = output.value {
                    let before = sources[i].text.chars().count();
                    let after = summary.chars().count();
                    sources[i].text = summary;
                    let note = condensed
                        .condensation
                        .get_or_insert_with(Condensation::default);
                    note.sources += 1;
                    note.by_model += 1;
                    note.tokens_saved += tokens_saved(before, after);
                }
            }
        }
        // What the model did not summarise is cut to its passages about the question.
        if let Some(cut) = condense_sources(question, sources, max_chars) {
            let note = condensed
                .condensation
                .get_or_insert_with(Condensation::default);
            note.sources += cut.sources;
            note.tokens_saved += cut.tokens_saved;
        }
        condensed
    }

    fn account(&self, call: &mut LlmCall, requests: u32, usage: TokenUsage) {
        call.requests = requests;
        call.prompt_tokens = usage.prompt_tokens;
        call.completion_tokens = usage.completion_tokens;
        call.cost_usd = self
            .config
            .prices
            .get(&call.model)
            .map_or(0.0, |p| p.cost(usage));
    }
}

/// Sources condensed for a prompt ([`StageModel::condense`]).
#[derive(Debug, Default)]
pub struct Condensed {
    /// What was condensed and the tokens saved; `None` when every source fitted.
    pub condensation: Option<Condensation>,
    /// The summary calls made, in order.
    pub calls: Vec<LlmCall>,
}

/// `output` with its model call marked as having read `condensed`'s sources, the summary calls
/// traced before it.
pub fn noting_condensation<V>(mut output: StageOutput<V>, condensed: Condensed) -> StageOutput<V> {
    if let Some(call) = output.llm_calls.first_mut() {
        call.condensed = condensed.condensation;
    }
    let mut calls = condensed.calls;
    calls.append(&mut output.llm_calls);
    output.llm_calls = calls;
    output
}
