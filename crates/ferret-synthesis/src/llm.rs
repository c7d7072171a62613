use crate::{SynthesisContext, SynthesisReply};
use ferret_core::{Hit, StageOutput};
use ferret_llm::{PromptSource, StageModel};

use ferret_core::ShortAnswer;

use crate::question::{AnswerKind, Asked};
use crate::{check_citations, Answer, AnswerSynthesizer, ExtractiveSynthesizer};

/// The model's short answer, if it keeps the contract: `text` occurs in source `source` (yes or
/// no for a yes/no question), and the answer cites that source.
fn short_answer(
    text: &str,
    source: Option<usize>,
    shown: &[Hit],
    answer: &Answer,
    yes_or_no: bool,
) -> Result<ShortAnswer, String> {
    let source =
        source.ok_or("short_answer needs short_answer_source, the number it is copied from")?;
    let hit = source
        .checked_sub(1)
        .and_then(|i| shown.get(i))
        .ok_or_else(|| format!("short_answer_source {source} is not one of the sources"))?;
    let citation = answer
        .citations
        .iter()
        .find(|c| c.hit_id == hit.id)
        .ok_or_else(|| {
            format!("the answer does not cite source {source}, which short_answer is copied from")
        })?;
    let squeeze = |t: &str| {
        t.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let said = yes_or_no && matches!(text.to_lowercase().as_str(), "yes" | "no");
    if !said && !squeeze(&format!("{} {}", hit.title, hit.text)).contains(&squeeze(text)) {
        return Err(format!(
            "short_answer `{text}` does not occur in source {source}: copy it exactly"
        ));
    }
    Ok(ShortAnswer {
        text: text.to_owned(),
        citations: vec![citation.clone()],
    })
}

/// Writes the answer with a language model from the best hits (the results accumulated so far),
/// numbered as the prompt shows them.
///
/// The model's citations are checked like any other: a marker that points at no source is
/// removed and counted in `dropped_markers`. An answer left with no valid citation is not an
/// answer from the sources, so the extractive synthesizer answers instead and the trace says why.
/// So is one whose short answer is not copied from a source the answer cites.
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
        let yes_or_no = Asked::read(question).kind == AnswerKind::YesNo;
        let accept = |reply: SynthesisReply| {
            let mut answer = check_citations(reply.answer.trim(), shown);
            if answer.citations.is_empty() {
                return Err(format!(
                    "the answer cites none of the {} sources ({} invalid markers removed)",
                    shown.len(),
                    answer.dropped_markers
                ));
            }
            answer.short = match reply.short_answer.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(text) => Some(short_answer(
                    text,
                    reply.short_answer_source,
                    shown,
                    &answer,
                    yes_or_no,
                )?),
            };
            Ok(answer)
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
