use std::collections::BTreeMap;

use ferret_core::text::question::Asked;
use ferret_core::{Citation, Hit, Implementation, ShortAnswer, StageOutput, TextSink, TraceStep};
use serde::{Deserialize, Serialize};

/// A written answer and the sources its markers point at.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Answer {
    /// The answer, with `[n]` markers (or `[n, m]` for several sources). Empty when there was
    /// nothing to answer from; the caller then replies with a message instead.
    pub text: String,
    /// One citation per marker number, in marker order `1..=k`; each points at one of the hits.
    pub citations: Vec<Citation>,
    /// The answer in a few words, when the question asks for one and a cited hit states it; its
    /// citations are among `citations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<ShortAnswer>,
    /// Sentences in `text`.
    pub sentences: usize,
    /// Marker numbers removed because they pointed at no hit.
    pub dropped_markers: usize,
}

impl Answer {
    /// The trace step recording this answer.
    pub fn trace_step(&self, implementation: Implementation) -> TraceStep {
        TraceStep::Synthesis {
            sentences: self.sentences,
            citations: self.citations.len(),
            dropped_markers: self.dropped_markers,
            implementation,
        }
    }
}

/// What an answer is written for beyond its question and sources: who asks, what they asked
/// before in the conversation, and what the search did to find the sources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Situation {
    /// The asker's situation as key/value pairs (`java_version` = `17`).
    pub context: BTreeMap<String, String>,
    /// The conversation's recent turns, oldest first; empty outside a thread.
    pub conversation: Vec<EarlierTurn>,
    /// What the search did, one line per telling step (a follow-up read against the thread,
    /// the queries sent, a backend that failed, how good the results were).
    pub search: Vec<String>,
    /// What the question asks for, as the analysis read it; `None` when nothing read it, and
    /// the question is read where it is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Asked>,
}

impl Situation {
    /// What `question` asks for: the analysis's reading when there is one.
    pub fn asked_by(&self, question: &str) -> Asked {
        self.asked.clone().unwrap_or_else(|| Asked::read(question))
    }
}

/// One earlier turn of a conversation, as the answer's writer reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlierTurn {
    /// The question searched.
    pub question: String,
    /// What it was told, citation markers removed (they pointed at that turn's sources).
    pub answer: String,
}

/// The synthesis stage: turns the hits (best first) into a cited answer.
///
/// Implementations do not fail: one that cannot write (a model that returns nothing usable) falls
/// back to the extractive answer and says so in the [`StageOutput`]. With no hits, or no hit with
/// any text, the answer is empty, with no citations: the caller must handle that case (reply with
/// a message rather than an answer).
#[async_trait::async_trait]
pub trait AnswerSynthesizer: Send + Sync {
    /// Answer `question` from `hits`. Every marker of the answer resolves to one of `hits`.
    async fn synthesize(&self, question: &str, hits: &[Hit]) -> StageOutput<Answer>;

    /// Answer `question` from `hits` in `situation`: the asker's context, the conversation so
    /// far and what the search did. The default ignores it: the rules answer from what the
    /// sources say.
    async fn synthesize_in(
        &self,
        question: &str,
        hits: &[Hit],
        _situation: &Situation,
    ) -> StageOutput<Answer> {
        self.synthesize(question, hits).await
    }

    /// [`synthesize_in`](Self::synthesize_in), handing `sink` the answer's text as a model
    /// writes it. What `sink` gets is provisional (its markers unchecked, the reply possibly
    /// refused); the returned answer is the one to show. The default writes at once and hands
    /// nothing.
    async fn synthesize_streaming(
        &self,
        question: &str,
        hits: &[Hit],
        situation: &Situation,
        sink: &TextSink<'_>,
    ) -> StageOutput<Answer> {
        let _ = sink;
        self.synthesize_in(question, hits, situation).await
    }
}
