//! The answer's writer in a thread reads the conversation so far and what the search did, so a
//! model can answer "how high is it?" as the next turn of a talk rather than as a question alone.

use std::sync::{Arc, Mutex};

use ferret_agent::{Agent, AgentConfig, SessionLimits, Sessions, StageConfig, Stages};
use ferret_core::{Hit, Query, StageOutput};
use ferret_exec::Executor;
use ferret_synthesis::{Answer, AnswerSynthesizer, Situation};
use ferret_test_support::ScriptedBackend;

/// The heuristic writer, noting the situation of each answer it writes.
struct Noting {
    writer: Arc<dyn AnswerSynthesizer>,
    seen: Mutex<Vec<Situation>>,
}

#[async_trait::async_trait]
impl AnswerSynthesizer for Noting {
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
        self.seen.lock().unwrap().push(situation.clone());
        self.writer.synthesize_in(question, hits, situation).await
    }
}

#[tokio::test]
async fn the_writer_reads_the_threads_earlier_turns_and_the_search() {
    let backend = Arc::new(ScriptedBackend::new(
        "docs",
        vec![Hit::new(
            "etna",
            "Mount Etna",
            "Mount Etna is an active volcano in Sicily. It is 3,357 metres high.",
            1.0,
            "docs",
        )],
    ));
    let mut stages = Stages::heuristic(StageConfig::default());
    let noting = Arc::new(Noting {
        writer: stages.synthesizer.clone(),
        seen: Mutex::new(Vec::new()),
    });
    stages.synthesizer = noting.clone();
    let executor = Executor::builder().backend(backend).build().unwrap();
    let agent = Agent::new(stages, executor, AgentConfig::default())
        .unwrap()
        .with_sessions(Sessions::in_memory(SessionLimits::default(), None));
    let in_thread = |text: &str| Query::new(text).unwrap().with_thread("trip");

    agent
        .run(&in_thread("Which volcano is active in Sicily?"), None)
        .await
        .unwrap();
    agent
        .run(&in_thread("How high is it?"), None)
        .await
        .unwrap();
    agent
        .run(&Query::new("How high is it?").unwrap(), None)
        .await
        .unwrap();

    let seen = noting.seen.lock().unwrap();
    assert!(seen[0].conversation.is_empty(), "a new thread has no past");
    let earlier = &seen[1].conversation;
    assert_eq!(earlier.len(), 1);
    assert_eq!(earlier[0].question, "Which volcano is active in Sicily?");
    assert!(earlier[0].answer.contains("Mount Etna"), "{earlier:?}");
    assert!(
        !earlier[0].answer.contains("[1]"),
        "markers of another turn's sources are gone: {earlier:?}"
    );
    let search = &seen[1].search;
    assert!(
        search[0]
            .starts_with("read the follow-up \"How high is it?\" as \"How high is Mount Etna?\""),
        "{search:?}"
    );
    assert!(
        search.iter().any(|line| line.starts_with("searched for")),
        "{search:?}"
    );
    assert!(
        seen[2].conversation.is_empty() && seen[2].search.is_empty(),
        "outside a thread the writer reads only the question and its sources"
    );
}
