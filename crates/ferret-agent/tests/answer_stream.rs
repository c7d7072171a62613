//! A model that streams: the answer reaches a listener piece by piece as the model writes it,
//! then once whole and checked; a search nobody listens to gets the same checked answer.

use std::sync::Arc;

use ferret_agent::{Agent, AgentConfig, StageConfig, Stages};
use ferret_core::{
    Completion, CompletionRequest, Event, Hit, LanguageModel, LlmError, Query, TextSink, TokenUsage,
};
use ferret_exec::Executor;
use ferret_llm::{StageModel, StageModelConfig};
use ferret_synthesis::{ExtractiveSynthesizer, LlmSynthesizer};
use ferret_test_support::ScriptedBackend;

const REPLY: &str = r#"{"answer": "Romulus founded Rome in 753 BC [1].", "short_answer": "Romulus", "short_answer_source": 1}"#;

/// Writes `REPLY` eleven characters at a time.
struct Streaming;

#[async_trait::async_trait]
impl LanguageModel for Streaming {
    fn name(&self) -> &str {
        "streaming"
    }

    async fn complete(&self, _: &CompletionRequest) -> Result<Completion, LlmError> {
        Ok(Completion {
            text: REPLY.to_owned(),
            usage: TokenUsage::default(),
            model: "streaming".into(),
            response_format: None,
            constrained: false,
        })
    }

    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let chars: Vec<char> = REPLY.chars().collect();
        for piece in chars.chunks(11) {
            sink(&piece.iter().collect::<String>());
        }
        self.complete(request).await
    }
}

fn agent() -> Agent {
    let backend = Arc::new(ScriptedBackend::new(
        "wiki",
        vec![Hit::new(
            "romulus",
            "Romulus",
            "Romulus founded Rome in 753 BC.",
            1.0,
            "wiki",
        )],
    ));
    let mut stages = Stages::heuristic(StageConfig::default());
    let model = StageModel::new(Arc::new(Streaming), StageModelConfig::default());
    stages.synthesizer = Arc::new(LlmSynthesizer::new(model, ExtractiveSynthesizer::default()));
    let executor = Executor::builder().backend(backend).build().unwrap();
    Agent::new(stages, executor, AgentConfig::default()).unwrap()
}

#[tokio::test]
async fn a_listener_sees_the_answer_grow_then_the_checked_answer() {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let query = Query::new("Who founded Rome?").unwrap();
    let response = agent().run(&query, Some(sender)).await.unwrap();
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::AnswerDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() > 1, "the answer comes in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), "Romulus founded Rome in 753 BC [1].");
    let last_delta = events
        .iter()
        .rposition(|e| matches!(e, Event::AnswerDelta { .. }))
        .unwrap();
    let answer = events
        .iter()
        .position(|e| matches!(e, Event::Answer { .. }))
        .expect("the checked answer follows");
    assert!(last_delta < answer);
    assert_eq!(
        response.answer.as_deref(),
        Some("Romulus founded Rome in 753 BC [1].")
    );
}

#[tokio::test]
async fn without_a_listener_the_same_answer_comes_whole() {
    let query = Query::new("Who founded Rome?").unwrap();
    let response = agent().run(&query, None).await.unwrap();
    assert_eq!(
        response.answer.as_deref(),
        Some("Romulus founded Rome in 753 BC [1].")
    );
}
