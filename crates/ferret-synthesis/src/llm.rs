use ferret_core::{Hit, StageOutput};
use ferret_llm::{PromptSource, StageModel, SynthesisContext, SynthesisReply};

use crate::{check_citations, Answer, AnswerSynthesizer, ExtractiveSynthesizer};

/// Writes the answer with a language model from the best hits (the results accumulated so far),
/// numbered as the prompt shows them.
///
/// The model's citations are checked like any other: a marker that points at no source is
/// removed and counted in `dropped_markers`. An answer left with no valid citation is not an
/// answer from the sources, so the extractive synthesizer answers instead and the trace says why.
#[derive(Debug, Clone)]
pub struct LlmSynthesizer {
    model: StageModel,
    extractive: ExtractiveSynthesizer,
    guidance: Option<String>,
}

impl LlmSynthesizer {
    /// Write with `model`, falling back to `extractive`.
    pub fn new(model: StageModel, extractive: ExtractiveSynthesizer) -> Self {
        Self {
            model,
            extractive,
            guidance: None,
        }
    }

    /// Extra guidance on the answer's shape for the prompt ("Start with the root cause, then the fix").
    pub fn with_guidance(mut self, guidance: impl Into<String>) -> Self {
        self.guidance = Some(guidance.into());
        self
    }
}

#[async_trait::async_trait]
impl AnswerSynthesizer for LlmSynthesizer {
    async fn synthesize(&self, question: &str, hits: &[Hit]) -> StageOutput<Answer> {
        if hits.iter().all(|h| h.text.trim().is_empty()) {
            return self.extractive.synthesize(question, hits).await;
        }
        let shown = &hits[..hits.len().min(self.model.config().max_sources.max(1))];
        let context = SynthesisContext {
            question: question.to_owned(),
            sources: PromptSource::numbered(shown),
            guidance: self.guidance.clone(),
        };
        let accept = |reply: SynthesisReply| {
            let answer = check_citations(reply.answer.trim(), shown);
            if answer.citations.is_empty() {
                Err(format!(
                    "the answer cites none of the {} sources ({} invalid markers removed)",
                    shown.len(),
                    answer.dropped_markers
                ))
            } else {
                Ok(answer)
            }
        };
        self.model
            .run(
                &context,
                220,
                accept,
                self.extractive.synthesize(question, hits),
            )
            .await
    }
}
