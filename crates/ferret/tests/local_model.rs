//! The embedded models, SmolLM2-135M and Gemma 3 270M: they read text as llama.cpp does, their
//! replies follow their schema, a bad model file is refused clearly, and end to end on the
//! default corpus the answer's citations resolve. Needs `cargo xtask models --gemma`; without a
//! model its tests say they were skipped, unless `FERRET_REQUIRE_MODELS` is set (as CI does),
//! when they fail.

use std::path::PathBuf;
use std::sync::Arc;

use ferret::jobs::search::{ResponseType, TraceStep};
use ferret::models::{LocalModel, LocalModelConfig, GEMMA3_270M_FILE, SMOLLM2_FILE};
use ferret::{Ferret, Query};
use ferret_core::{ChatMessage, ChatRole, CompletionRequest, LanguageModel};
use ferret_llm::{generate_with_schema, restrict_to_labels, Attempted};

mod common;
use common::{assert_citations_resolve, use_temporary_ferret_home};

/// The folder holding the embedded model, or `None` (the test is skipped, and says so) when it
/// has not been fetched and CI does not require it.
fn models_dir() -> Option<PathBuf> {
    model_file(SMOLLM2_FILE).and_then(|file| file.parent().map(PathBuf::from))
}

/// The path of the model `file`, or `None` (skipped, and said) as for [`models_dir`].
fn model_file(file: &str) -> Option<PathBuf> {
    let models = ferret::models::default_models_dir();
    if models.join(file).is_file() {
        return Some(models.join(file));
    }
    assert!(
        std::env::var_os("FERRET_REQUIRE_MODELS").is_none(),
        "{file} is not in {}",
        models.display()
    );
    eprintln!(
        "skipped: {file} is not in {} (run `cargo xtask models --gemma`)",
        models.display()
    );
    None
}

/// Each embedded model that has been fetched.
fn embedded_models() -> Vec<LocalModel> {
    [SMOLLM2_FILE, GEMMA3_270M_FILE]
        .into_iter()
        .filter_map(model_file)
        .map(|path| LocalModel::load(LocalModelConfig::new(path)).expect("the model loads"))
        .collect()
}

#[derive(Debug, serde::Deserialize)]
struct TokenizedText {
    text: String,
    ids: Vec<u32>,
}

#[test]
fn the_embedded_models_read_text_as_llama_cpp_tokenizes_it() {
    let reference: std::collections::BTreeMap<String, Vec<TokenizedText>> =
        serde_json::from_str(include_str!("../../../fixtures/tokenize/reference.json"))
            .expect("the reference parses");
    for (file, cases) in reference {
        let Some(path) = model_file(&file) else {
            continue;
        };
        let model = LocalModel::load(LocalModelConfig::new(path)).expect("the model loads");
        for case in cases {
            assert_eq!(
                model.tokenize(&case.text).expect("tokenizes"),
                case.ids,
                "{file}: {:?}",
                case.text
            );
        }
    }
}

/// The intent verdict with its label restricted as the guardrail restricts it.
fn intent_schema() -> serde_json::Value {
    let mut schema = serde_json::json!({
        "type": "object",
        "properties": {
            "intent": {"type": "string"},
            "reason": {"type": "string", "maxLength": 80}
        },
        "required": ["intent", "reason"]
    });
    restrict_to_labels(&mut schema, "/properties/intent", INTENT_LABELS);
    schema
}

const INTENT_LABELS: [&str; 4] = ["search", "unclear", "unrelated", "greeting"];

fn ask(question: &str) -> Vec<ChatMessage> {
    vec![ChatMessage {
        role: ChatRole::User,
        content: format!("Classify this message for a search assistant: {question}"),
    }]
}

/// A request for free text: no schema, no stop sequence, no deadline.
fn free_request(question: &str, max_tokens: u32) -> CompletionRequest {
    CompletionRequest {
        messages: ask(question),
        max_tokens,
        temperature: 0.0,
        json_schema: None,
        stop: Vec::new(),
        deadline: None,
    }
}

#[derive(Debug, serde::Deserialize)]
struct IntentVerdict {
    intent: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn under_its_schema_an_embedded_model_can_only_reply_with_an_allowed_label() {
    for model in embedded_models() {
        replies_with_allowed_labels(&model).await;
    }
}

async fn replies_with_allowed_labels(model: &LocalModel) {
    for question in [
        "hello there!",
        "Who founded the Bauhaus school?",
        "asdf qwerty",
    ] {
        let reply = generate_with_schema::<IntentVerdict>(
            model,
            ask(question),
            48,
            intent_schema(),
            &|_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{}, {question}: {e}", model.name()));
        assert!(
            INTENT_LABELS.contains(&reply.value.intent.as_str()),
            "{}, {question}: {:?}",
            model.name(),
            reply.value
        );
        assert_eq!(
            reply.attempted,
            Attempted::Parsed,
            "{}, {question}: no repair is ever asked",
            model.name()
        );
        assert_eq!(reply.response_format.as_deref(), Some("grammar"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schema_no_grammar_can_be_made_of_is_answered_unconstrained() {
    let Some(models) = models_dir() else { return };
    let model = LocalModel::smollm2(&models).expect("the model loads");
    // A reference to nothing cannot be compiled; the model still answers, freely.
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"intent": {"$ref": "#/$defs/Missing"}},
        "required": ["intent"]
    });
    let request = CompletionRequest {
        json_schema: Some(schema),
        ..free_request("hello", 24)
    };
    let completion = model.complete(&request).await.expect("answers");
    assert!(!completion.constrained);
    assert_eq!(completion.response_format, None);
    assert!(
        completion.text.starts_with("{\"intent\":"),
        "{}",
        completion.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_models_answer_ends_before_its_stop_sequence() {
    let Some(models) = models_dir() else { return };
    let model = LocalModel::smollm2(&models).expect("the model loads");
    let mut request = free_request("Count from 1 to 10, separated by commas.", 40);
    let free = model.complete(&request).await.expect("answers");
    assert!(free.text.contains('2'), "{}", free.text);
    request.stop = vec!["2".into()];
    let stopped = model.complete(&request).await.expect("answers");
    assert!(!stopped.text.contains('2'), "{}", stopped.text);
    assert!(stopped.usage.completion_tokens < free.usage.completion_tokens);
    // An empty stop text stops nothing; a later one still ends the answer.
    request.stop = vec![String::new(), "3".into()];
    let later = model.complete(&request).await.expect("answers");
    assert!(
        later.text.contains('2') && !later.text.contains('3'),
        "{}",
        later.text
    );
    assert!(later.usage.completion_tokens > stopped.usage.completion_tokens);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_its_deadline_is_refused_by_the_embedded_model() {
    let Some(models) = models_dir() else { return };
    let model = LocalModel::smollm2(&models).expect("the model loads");
    let mut request = free_request("Write a long story about a ferret.", 40);
    let free = model.complete(&request).await.expect("answers");
    assert!(free.usage.completion_tokens > 20, "{:?}", free.usage);
    // A call whose deadline has passed is not worked on: the model says so, and a retry later
    // may find it free.
    request.deadline = Some(std::time::Instant::now());
    let late = model.complete(&request).await.expect_err("too late");
    assert!(late.message.contains("deadline"), "{late}");
    assert!(late.retry.is_retryable());
}

#[test]
fn a_model_file_that_is_not_a_whole_gguf_is_refused_naming_the_file_and_the_fix() {
    let folder = tempfile::tempdir().expect("temporary folder");
    let not_gguf = folder.path().join("notes.gguf");
    std::fs::write(&not_gguf, "these are notes, not weights").expect("written");
    let mut cases = vec![not_gguf];
    if let Some(models) = models_dir() {
        // The first megabyte of the real file: a header that promises tensors never written.
        let bytes = std::fs::read(models.join(SMOLLM2_FILE)).expect("readable");
        let truncated = folder.path().join("truncated.gguf");
        std::fs::write(&truncated, &bytes[..1 << 20]).expect("written");
        cases.push(truncated);
    }
    for path in cases {
        let error = LocalModel::load(LocalModelConfig::new(&path)).expect_err("refused");
        assert!(
            error.message.contains(&path.display().to_string())
                && error.message.contains("cargo xtask models")
                && !error.retry.is_retryable(),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_model_answers_with_valid_citations() {
    // Resolved before the temporary home replaces the cache folder the models live in.
    let Some(models) = models_dir() else { return };
    // The other tests of this file look for the model while this one moves the home folder.
    std::env::set_var("FERRET_MODELS", &models);
    use_temporary_ferret_home();
    let model = LocalModel::smollm2(&models).expect("the model loads");
    let ferret = Ferret::builder()
        .default_corpus()
        .language_model(Arc::new(model))
        .build()
        .expect("builds");
    let query =
        Query::new("Who were the members of the Final Five gymnastics team?").expect("valid");
    let response = ferret.search(query).await.expect("the search runs");

    assert_eq!(
        response.response_type,
        ResponseType::Results,
        "{:?}",
        response.message
    );
    assert_citations_resolve(&response);
    let stages: Vec<&str> = response
        .trace
        .steps
        .iter()
        .filter_map(|s| {
            if let TraceStep::LlmCall(c) = s {
                Some(c.caller.as_str())
            } else {
                None
            }
        })
        .collect();
    for stage in ["intent", "analysis", "rewrite", "grading"] {
        assert!(
            stages.contains(&stage),
            "the model was asked for {stage}: {stages:?}"
        );
    }
    // Too small to write faithful prose, it is not asked to write the answer.
    assert!(!stages.contains(&"synthesis"), "{stages:?}");
    assert!(
        response.usage.llm_calls >= 4
            && response.usage.prompt_tokens > 0
            && response.usage.completion_tokens > 0
    );
}
