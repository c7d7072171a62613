//! The OpenAI-compatible provider against a real server, when `FERRET_LLM_BASE_URL` (and
//! `FERRET_LLM_MODEL`, optionally `FERRET_LLM_API_KEY`) are set; each test says it was skipped
//! otherwise. CI sets them to llama.cpp's server as llama-cpp-python serves it, with SmolLM2
//! (`.ci/llama-server start`). The tests check what any server must do, not what a model knows.

use std::time::Duration;

use ferret_core::{ChatMessage, ChatRole, CompletionRequest, LanguageModel, RetryClass};
use ferret_llm::{generate, OpenAiConfig, OpenAiModel, SchemaSupport};
use schemars::JsonSchema;
use serde::Deserialize;

const VARIABLE: &str = "FERRET_LLM_BASE_URL";

/// One test at a time: a local server answers one request at a time, and a queued one could
/// outlast its timeout.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A model on the live server in `dialect`, or `None` (said on standard error) without one.
fn live(test: &str, dialect: SchemaSupport, stream: bool) -> Option<OpenAiModel> {
    let Ok(url) = std::env::var(VARIABLE) else {
        eprintln!("skipped {test}: {VARIABLE} is not set (see .ci/llama-server)");
        return None;
    };
    let name = std::env::var("FERRET_LLM_MODEL").unwrap_or_else(|_| "smollm2".to_owned());
    let mut config = OpenAiConfig::new(url, name);
    if let Ok(key) = std::env::var("FERRET_LLM_API_KEY") {
        config = config.api_key(key);
    }
    config.timeout = Duration::from_secs(120);
    config.schema_support = dialect;
    config.stream = stream;
    Some(OpenAiModel::new(config).expect("valid config"))
}

fn ask(text: &str, max_tokens: u32) -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            ChatMessage {
                role: ChatRole::System,
                content: "You answer in one short sentence.".into(),
            },
            ChatMessage {
                role: ChatRole::User,
                content: text.into(),
            },
        ],
        max_tokens,
        temperature: 0.0,
        json_schema: None,
        stop: Vec::new(),
        deadline: None,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Intent {
    /// search, unclear, unrelated or greeting.
    intent: String,
}

#[tokio::test]
async fn a_chat_completion_answers_with_text_and_usage() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(model) = live("chat", SchemaSupport::default(), false) else {
        return;
    };
    let answer = model
        .complete(&ask("What is the capital of France?", 24))
        .await
        .unwrap();
    assert!(!answer.text.trim().is_empty());
    assert!(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens > 0);
}

#[tokio::test]
async fn the_answer_ends_before_its_stop_sequence() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(model) = live("stop", SchemaSupport::default(), false) else {
        return;
    };
    let mut request = ask("Count from 1 to 10, separated by commas.", 48);
    let free = model.complete(&request).await.unwrap();
    assert!(free.text.contains(','), "{}", free.text);
    request.stop = vec![",".into()];
    let stopped = model.complete(&request).await.unwrap();
    assert!(!stopped.text.contains(','), "{}", stopped.text);
    assert!(
        stopped.text.len() < free.text.len(),
        "{} / {}",
        stopped.text,
        free.text
    );
}

#[tokio::test]
async fn a_stream_arrives_in_pieces() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(model) = live("stream", SchemaSupport::default(), true) else {
        return;
    };
    let pieces = std::sync::Mutex::new(Vec::new());
    let sink = |piece: &str| pieces.lock().unwrap().push(piece.to_owned());
    let answer = model
        .complete_streaming(&ask("Name three colours.", 24), &sink)
        .await
        .unwrap();
    let pieces = pieces.into_inner().unwrap();
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), answer.text);
    // Usage is asked for (`stream_options.include_usage`); llama-cpp-python 0.3.36 sends none
    // in a stream, so it is counted only when the server sends it.
}

#[tokio::test]
async fn a_json_schema_reply_parses_in_the_dialect_the_server_takes() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(model) = live("json schema", SchemaSupport::JsonSchema, false) else {
        return;
    };
    let out = generate::<Intent>(
        &model,
        ask("Classify: how do I rotate signing keys?", 48).messages,
        48,
    )
    .await
    .unwrap();
    // llama-cpp-python refuses the json_schema type and enforces json_object's schema with a
    // grammar; a server that takes json_schema keeps it.
    let used = out.response_format.as_deref().unwrap_or_default();
    assert!(
        ["json_schema", "json_object_schema"].contains(&used),
        "{used}"
    );
    assert!(!out.value.intent.is_empty());
}

#[tokio::test]
async fn the_prompt_only_dialect_sends_no_response_format_and_is_answered() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(model) = live("prompt only", SchemaSupport::PromptOnly, false) else {
        return;
    };
    let mut request = ask("Classify: hello there", 48);
    request.json_schema = Some(serde_json::json!({"type": "object"}));
    let answer = model.complete(&request).await.unwrap();
    assert_eq!(answer.response_format.as_deref(), Some("prompt_only"));
    assert!(!answer.text.trim().is_empty());
}

#[tokio::test]
async fn a_request_over_the_context_window_is_classified_as_too_long() {
    let _turn = ONE_AT_A_TIME.lock().await;
    // The server's context window, in tokens: the script that starts it says.
    let Some(window) = std::env::var("FERRET_LLM_CONTEXT")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    else {
        eprintln!("skipped context: FERRET_LLM_CONTEXT is not set");
        return;
    };
    let Some(model) = live("context", SchemaSupport::default(), false) else {
        return;
    };
    // Ten words of about one token each, twice the window over.
    let long = "Tell me about the history of every city in Europe. ".repeat(window / 5);
    let error = model.complete(&ask(&long, 16)).await.unwrap_err();
    assert_eq!(error.retry, RetryClass::ContextTooLong, "{}", error.message);
    assert!(!error.message.contains('\n'), "{}", error.message);
}
