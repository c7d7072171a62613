//! A recorder keeps what the parts it wraps were asked and answered; a replayer answers the same
//! requests the same way without them, says which requests it could not answer, and a folder
//! written by one is read back whole or refused with the reason.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use ferret_core::{
    BackendCapabilities, BackendError, BackendErrorKind, ChatMessage, ChatRole, Completion,
    CompletionRequest, EmbedError, Embedder, Filters, Hit, LanguageModel, LlmError, PaidCost,
    PaidUnit, Query, QueryForm, Response, RetryClass, SearchBackend, SearchRequest, StopReason,
    Strategy, Trace, TraceStep,
};
use ferret_record::{
    BackendOutcome, Exchange, ModelOutcome, Recorder, Recording, RecordingError, ReplayError,
    Replayer, CASE_FILE, EXCHANGES_FILE,
};
use futures::FutureExt as _;

/// Answers each query with one hit named after it, or fails on `down`, or never on `slow`.
#[derive(Default)]
struct Library {
    calls: AtomicU32,
}

#[async_trait]
impl SearchBackend for Library {
    fn name(&self) -> &str {
        "library"
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            date_range: true,
            ..BackendCapabilities::default()
        }
    }

    fn query_form(&self) -> QueryForm {
        QueryForm::Question
    }

    fn cost(&self, request: &SearchRequest) -> Option<PaidCost> {
        (request.query == "paid").then_some(PaidCost {
            unit: PaidUnit::Credits,
            amount: 2,
        })
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        match request.query.as_str() {
            "down" => Err(BackendError::transient(
                "library",
                BackendErrorKind::Unavailable,
                "index gone",
            )),
            "slow" => std::future::pending().await,
            query => Ok(vec![Hit::new(
                format!("{query}-{call}"),
                query,
                "text",
                0.5,
                "library",
            )]),
        }
    }
}

/// Repeats the last message, numbered by call; refuses an empty prompt.
#[derive(Default)]
struct Echo {
    calls: AtomicU32,
}

#[async_trait]
impl LanguageModel for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn writes_answers(&self) -> bool {
        false
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        match request.messages.last() {
            Some(message) if message.content == "wait" => std::future::pending().await,
            Some(message) => Ok(Completion {
                text: format!("{} #{call}", message.content),
                usage: Default::default(),
                model: "echo".into(),
                response_format: None,
                constrained: false,
            }),
            None => Err(LlmError {
                message: "empty prompt".into(),
                retry: RetryClass::Permanent,
            }),
        }
    }
}

/// Vectors of the texts' lengths.
struct Lengths;

#[async_trait]
impl Embedder for Lengths {
    fn name(&self) -> &str {
        "lengths"
    }

    fn dimension(&self) -> usize {
        2
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 0.25]).collect())
    }
}

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        limit: 5,
        filters: Filters::default(),
        options: Default::default(),
        text_for: None,
    }
}

fn prompt(text: &str) -> CompletionRequest {
    CompletionRequest {
        messages: vec![ChatMessage {
            role: ChatRole::User,
            content: text.into(),
        }],
        max_tokens: 16,
        temperature: 0.0,
        json_schema: None,
        stop: Vec::new(),
        deadline: None,
    }
}

fn response() -> Response {
    Response::message("recorded", StopReason::Answered, Trace::default())
}

fn query() -> Query {
    Query::new("what does the library hold?").unwrap()
}

/// A recording of three searches (one failing), two completions (one failing) and one
/// embedding, with the parts that answered them.
async fn recorded() -> (Recording, Arc<Library>, Arc<Echo>) {
    let recorder = Recorder::new();
    let library = Arc::new(Library::default());
    let echo = Arc::new(Echo::default());
    let backend = recorder.backend(library.clone());
    let model = recorder.model(echo.clone());
    let embedder = recorder.embedder(Arc::new(Lengths));
    backend.search(&request("volcano")).await.unwrap();
    backend.search(&request("glacier")).await.unwrap();
    backend.search(&request("down")).await.unwrap_err();
    model.complete(&prompt("hello")).await.unwrap();
    let mut empty = prompt("");
    empty.messages.clear();
    model.complete(&empty).await.unwrap_err();
    embedder.embed(&["ice".to_owned()]).await.unwrap();
    let recording = recorder.take(&query(), Strategy::Refine, &response());
    (recording, library, echo)
}

#[tokio::test]
async fn a_recording_survives_its_folder_whole() {
    let (recording, _, _) = recorded().await;
    assert_eq!(recording.exchanges.len(), 6);
    let world = &recording.case.recorded;
    assert_eq!(world.backends[0].name, "library");
    assert!(world.backends[0].capabilities.date_range);
    assert_eq!(world.backends[0].query_form, QueryForm::Question);
    assert_eq!(world.model.as_ref().unwrap().name, "echo");
    assert!(!world.model.as_ref().unwrap().writes_answers);
    assert_eq!(world.embedder.as_ref().unwrap().dimension, 2);
    let dir = tempfile::tempdir().unwrap();
    recording.save(dir.path()).unwrap();
    let loaded = Recording::load(dir.path()).unwrap();
    assert_eq!(loaded, recording);
    assert!(loaded.same_response(&response()));
    assert!(!loaded.same_response(&Response::message(
        "something else",
        StopReason::Answered,
        Trace::default()
    )));
}

#[tokio::test]
async fn a_replay_answers_each_recorded_request_without_the_parts() {
    let (recording, library, echo) = recorded().await;
    let replayer = Replayer::new(&recording);
    let backend = &replayer.backends()[0];
    assert_eq!(backend.name(), "library");
    assert_eq!(backend.query_form(), QueryForm::Question);
    // Concurrent calls finish in any order: requests are matched by content.
    let glacier = backend.search(&request("glacier")).await.unwrap();
    let volcano = backend.search(&request("volcano")).await.unwrap();
    assert_eq!(glacier[0].id.0, "glacier-1");
    assert_eq!(volcano[0].id.0, "volcano-0");
    let down = backend.search(&request("down")).await.unwrap_err();
    assert_eq!(down.kind, BackendErrorKind::Unavailable);
    assert!(down.retry.is_retryable());
    let model = replayer.model().unwrap();
    assert!(!model.writes_answers());
    assert_eq!(
        model.complete(&prompt("hello")).await.unwrap().text,
        "hello #0"
    );
    let mut empty = prompt("");
    empty.messages.clear();
    assert_eq!(
        model.complete(&empty).await.unwrap_err().message,
        "empty prompt"
    );
    let vectors = replayer
        .embedder()
        .unwrap()
        .embed(&["ice".to_owned()])
        .await
        .unwrap();
    assert_eq!(vectors, vec![vec![3.0, 0.25]]);
    replayer.finish().unwrap();
    assert_eq!(
        library.calls.load(Ordering::SeqCst),
        3,
        "the replay searched"
    );
    assert_eq!(
        echo.calls.load(Ordering::SeqCst),
        2,
        "the replay asked the model"
    );
}

#[tokio::test]
async fn a_request_the_recording_lacks_fails_and_is_reported() {
    let (recording, _, _) = recorded().await;
    let replayer = Replayer::new(&recording);
    let error = replayer.backends()[0]
        .search(&request("lava"))
        .await
        .unwrap_err();
    assert!(!error.retry.is_retryable());
    // The same words with another limit are another request.
    let mut wider = request("volcano");
    wider.limit = 50;
    replayer.backends()[0].search(&wider).await.unwrap_err();
    replayer
        .model()
        .unwrap()
        .complete(&prompt("goodbye"))
        .await
        .unwrap_err();
    match replayer.finish() {
        Err(ReplayError::Unrecorded { count, first }) => {
            assert_eq!(count, 3);
            assert!(first.contains("lava"), "{first}");
            let message = replayer.finish().unwrap_err().to_string();
            assert!(message.contains("record it again"), "{message}");
        }
        other => panic!("expected unrecorded calls, got {other:?}"),
    }
}

#[tokio::test]
async fn identical_requests_get_their_outcomes_in_order_then_the_last_again() {
    let recorder = Recorder::new();
    let backend = recorder.backend(Arc::new(Library::default()));
    for _ in 0..2 {
        backend.search(&request("volcano")).await.unwrap();
    }
    let recording = recorder.take(&query(), Strategy::Auto, &response());
    let replayer = Replayer::new(&recording);
    let backend = &replayer.backends()[0];
    let requests = vec![request("volcano"); 3];
    let ids: Vec<String> = futures::future::join_all(requests.iter().map(|r| backend.search(r)))
        .await
        .into_iter()
        .map(|hits| hits.unwrap()[0].id.0.clone())
        .collect();
    assert_eq!(ids, ["volcano-0", "volcano-1", "volcano-1"]);
    replayer.finish().unwrap();
}

#[tokio::test]
async fn a_call_dropped_before_it_ends_replays_as_a_deadline_error() {
    let recorder = Recorder::new();
    let backend = recorder.backend(Arc::new(Library::default()));
    let model = recorder.model(Arc::new(Echo::default()));
    assert!(backend.search(&request("slow")).now_or_never().is_none());
    assert!(model.complete(&prompt("wait")).now_or_never().is_none());
    let recording = recorder.take(&query(), Strategy::Auto, &response());
    assert!(matches!(
        &recording.exchanges[0],
        Exchange::Backend {
            outcome: BackendOutcome::Abandoned,
            ..
        }
    ));
    assert!(matches!(
        &recording.exchanges[1],
        Exchange::Model {
            outcome: ModelOutcome::Abandoned,
            ..
        }
    ));
    let replayer = Replayer::new(&recording);
    let error = replayer.backends()[0]
        .search(&request("slow"))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BackendErrorKind::DeadlineExceeded);
    let error = replayer
        .model()
        .unwrap()
        .complete(&prompt("wait"))
        .await
        .unwrap_err();
    assert!(error.message.contains("deadline"), "{}", error.message);
    replayer.finish().unwrap();
}

#[tokio::test]
async fn the_recorded_question_is_the_only_one_a_recording_answers() {
    let (recording, _, _) = recorded().await;
    recording
        .check_question("  what does  the library hold? ")
        .unwrap();
    let error = recording.check_question("who wrote it?").unwrap_err();
    assert_eq!(
        error,
        ReplayError::OtherQuestion {
            recorded: "what does the library hold?".into(),
            asked: "who wrote it?".into(),
        }
    );
}

#[tokio::test]
async fn a_folder_that_is_not_a_recording_of_this_format_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    match Recording::load(dir.path()) {
        Err(e @ RecordingError::NotARecording { .. }) => {
            assert!(e.to_string().contains("--record"), "{e}");
        }
        other => panic!("expected not a recording, got {other:?}"),
    }

    let (recording, _, _) = recorded().await;
    recording.save(dir.path()).unwrap();
    let exchanges = dir.path().join(EXCHANGES_FILE);
    let text = std::fs::read_to_string(&exchanges).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{\"kind\": \"backend\", \"backend\": \"library\"}";
    std::fs::write(&exchanges, lines.join("\n")).unwrap();
    match Recording::load(dir.path()) {
        Err(RecordingError::Format { path, line, .. }) => {
            assert_eq!(path, exchanges);
            assert_eq!(line, Some(2));
        }
        other => panic!("expected a format error, got {other:?}"),
    }

    let case = dir.path().join(CASE_FILE);
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, text.replace("\"format\": 1", "\"format\": 99")).unwrap();
    match Recording::load(dir.path()) {
        Err(
            e @ RecordingError::Version {
                found: Some(99), ..
            },
        ) => {
            assert!(e.to_string().contains("record it again"), "{e}");
            assert!(!e.is_retryable());
        }
        other => panic!("expected a version error, got {other:?}"),
    }
}

#[test]
fn responses_compare_without_timings_or_the_order_concurrent_calls_finished() {
    let call = |backend: &str, duration_ms, cache_hit, coalesced| TraceStep::BackendCall {
        backend: backend.into(),
        query: "volcano".into(),
        duration_ms,
        cache_hit,
        coalesced,
        hits: 1,
        error: None,
    };
    let mut first = response();
    first.trace.steps = vec![call("a", 12, false, true), call("b", 30, false, false)];
    first.usage.elapsed_ms = 42;
    first.usage.coalesced = 1;
    let recording = Recording {
        case: ferret_record::RecordedCase {
            query: query(),
            strategy: Strategy::Auto,
            recorded: Default::default(),
        },
        exchanges: Vec::new(),
        response: Some(ferret_record::comparable(&first)),
    };
    let mut second = response();
    second.trace.steps = vec![call("b", 1, false, false), call("a", 2, true, false)];
    second.usage.elapsed_ms = 3;
    second.usage.cache_hits = 1;
    assert!(recording.same_response(&second));
    second.trace.steps[0] = call("c", 1, false, false);
    assert!(!recording.same_response(&second));
}

#[tokio::test]
async fn what_a_paid_call_would_cost_replays_even_when_the_call_was_refused() {
    let recorder = Recorder::new();
    let backend = recorder.backend(Arc::new(Library::default()));
    // The budget had no units left: the cost was asked, the search never made.
    let cost = backend.cost(&request("paid"));
    assert_eq!(backend.cost(&request("free")), None);
    let recording = recorder.take(&query(), Strategy::Auto, &response());
    assert_eq!(recording.exchanges.len(), 1, "{:?}", recording.exchanges);
    let replayer = Replayer::new(&recording);
    assert_eq!(replayer.backends()[0].cost(&request("paid")), cost);
    assert!(cost.is_some());
    replayer.finish().unwrap();
}
