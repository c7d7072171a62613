use crate::actions::{primary, ActionExtractor, HeuristicActionExtractor};
use crate::{SynthesisContext, SynthesisReply};
use ferret_core::text::one_line;
use ferret_core::{Actions, CommandAction, FileChange, Hit, StageOutput, VersionChange};
use ferret_llm::{
    noting_condensation, ActionExtractionContext, ActionsReply, PromptSource, StageModel,
};

use ferret_core::{ShortAnswer, TextSink};

use crate::question::AnswerKind;
use crate::streamed::AnswerField;
use crate::{check_citations, Answer, AnswerSynthesizer, ExtractiveSynthesizer, Situation};

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
    let said = yes_or_no && matches!(text.to_lowercase().as_str(), "yes" | "no");
    if !said && !states(hit, text) {
        return Err(format!(
            "short_answer `{text}` does not occur in source {source}: copy it exactly"
        ));
    }
    Ok(ShortAnswer {
        text: text.to_owned(),
        citations: vec![citation.clone()],
    })
}

/// `text` occurs in `hit`'s title or text, case and spacing aside.
fn states(hit: &Hit, text: &str) -> bool {
    let squeeze = |t: &str| one_line(t).to_lowercase();
    let text = squeeze(text);
    !text.is_empty() && squeeze(&format!("{} {}", hit.title, hit.text)).contains(&text)
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
}

impl LlmSynthesizer {
    /// Write with `model`, falling back to `extractive`.
    pub fn new(model: StageModel, extractive: ExtractiveSynthesizer) -> Self {
        Self { model, extractive }
    }
}

#[async_trait::async_trait]
impl AnswerSynthesizer for LlmSynthesizer {
    async fn synthesize(&self, question: &str, hits: &[Hit]) -> StageOutput<Answer> {
        self.synthesize_in(question, hits, &Situation::default())
            .await
    }

    async fn synthesize_in(
        &self,
        question: &str,
        hits: &[Hit],
        situation: &Situation,
    ) -> StageOutput<Answer> {
        self.write(question, hits, situation, &|_| {}).await
    }

    async fn synthesize_streaming(
        &self,
        question: &str,
        hits: &[Hit],
        situation: &Situation,
        sink: &TextSink<'_>,
    ) -> StageOutput<Answer> {
        let field = std::sync::Mutex::new(AnswerField::default());
        let reply_sink = |piece: &str| {
            let text = field
                .lock()
                .map(|mut field| field.push(piece))
                .unwrap_or_default();
            if !text.is_empty() {
                sink(&text);
            }
        };
        self.write(question, hits, situation, &reply_sink).await
    }
}

impl LlmSynthesizer {
    /// The answer from the model, the reply's raw text handed to `sink` as it is written.
    async fn write(
        &self,
        question: &str,
        hits: &[Hit],
        situation: &Situation,
        sink: &TextSink<'_>,
    ) -> StageOutput<Answer> {
        if hits.iter().all(|h| h.text.trim().is_empty()) {
            return self
                .extractive
                .synthesize_in(question, hits, situation)
                .await;
        }
        let shown = &hits[..hits.len().min(self.model.config().max_sources.max(1))];
        let mut sources = PromptSource::numbered(shown);
        let condensed = self.model.condense(question, &mut sources).await;
        let context = SynthesisContext {
            question: question.to_owned(),
            sources,
            context: situation.context.clone(),
            conversation: situation.conversation.clone(),
            search: situation.search.clone(),
        };
        let yes_or_no = situation.asked_by(question).kind == AnswerKind::YesNo;
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
        let written = self
            .model
            .run_streaming(
                &context,
                220,
                accept,
                self.extractive.synthesize_in(question, hits, situation),
                sink,
            )
            .await;
        noting_condensation(written, condensed)
    }
}

/// Extracts actions with a language model from the answer and its numbered sources. An action
/// is kept only when the source it names states it (the command, the version, the file, as
/// written); a reply whose every action fails that, or that cites no source, is refused and the
/// rules extract instead.
#[derive(Debug, Clone)]
pub struct LlmActionExtractor {
    model: StageModel,
}

impl LlmActionExtractor {
    /// Extract with `model`, falling back to [`HeuristicActionExtractor`].
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl ActionExtractor for LlmActionExtractor {
    async fn extract(&self, question: &str, answer: &str, sources: &[Hit]) -> StageOutput<Actions> {
        let shown = &sources[..sources.len().min(self.model.config().max_sources.max(1))];
        let context = ActionExtractionContext::new(question, answer, PromptSource::numbered(shown));
        let accept = |reply: ActionsReply| {
            let offered =
                reply.version_changes.len() + reply.file_changes.len() + reply.commands.len();
            let source = |number: usize, text: &str| {
                number
                    .checked_sub(1)
                    .and_then(|i| shown.get(i))
                    .filter(|hit| states(hit, text))
                    .map(|hit| hit.id.clone())
            };
            let mut actions = Actions {
                version_changes: reply
                    .version_changes
                    .into_iter()
                    .filter_map(|v| {
                        Some(VersionChange {
                            source: source(v.source, &v.version)?,
                            component: v.component.trim().to_owned(),
                            version: v.version.trim().to_owned(),
                        })
                    })
                    .collect(),
                file_changes: reply
                    .file_changes
                    .into_iter()
                    .filter_map(|f| {
                        Some(FileChange {
                            source: source(f.source, &f.file)?,
                            file: f.file.trim().to_owned(),
                            change: f.change.trim().to_owned(),
                        })
                    })
                    .collect(),
                commands: reply
                    .commands
                    .into_iter()
                    .filter_map(|c| {
                        Some(CommandAction {
                            source: source(c.source, &c.command)?,
                            command: c.command.trim().to_owned(),
                        })
                    })
                    .collect(),
                primary: None,
                confidence: 0.0,
            };
            if offered > 0 && actions.is_empty() {
                return Err(format!(
                    "none of the {offered} actions is stated by the source it cites: copy commands, versions and files exactly"
                ));
            }
            actions.primary = match reply.primary_action.map(|p| p.trim().to_owned()) {
                Some(primary) if !primary.is_empty() && !actions.is_empty() => Some(primary),
                _ => primary(&actions),
            };
            actions.confidence = if actions.is_empty() {
                0.0
            } else {
                reply.confidence.clamp(0.0, 1.0)
            };
            Ok(actions)
        };
        self.model
            .run(&context, 320, accept, async {
                StageOutput::heuristic(HeuristicActionExtractor.actions(sources))
            })
            .await
    }
}
