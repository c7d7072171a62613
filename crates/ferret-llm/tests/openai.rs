//! The OpenAI-compatible provider against a local mock server speaking the chat-completions
//! protocol: answers, streams, JSON Schema, and every failure the retry layer must classify.

use std::time::{Duration, Instant};

use ferret_core::{ChatMessage, ChatRole, CompletionRequest, LanguageModel, RetryClass};
use ferret_llm::{generate, Attempted, OpenAiConfig, OpenAiModel, SchemaSupport, StructuredError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-test-do-not-leak-4242";

fn config(server: &MockServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-model").api_key(KEY);
    config.timeout = Duration::from_millis(800);
    config
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).expect("valid config")
}

fn request(text: &str) -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            ChatMessage {
                role: ChatRole::System,
                content: "You answer briefly.".into(),
            },
            ChatMessage {
                role: ChatRole::User,
                content: text.into(),
            },
        ],
        max_tokens: 64,
        temperature: 0.0,
        json_schema: None,
        stop: Vec::new(),
        deadline: None,
    }
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 21, "completion_tokens": 5, "total_tokens": 26}
    })
}

fn ok(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(completion(content))
}

fn sse(chunks: &[&str], finish: bool) -> ResponseTemplate {
    let mut body = String::new();
    for (i, text) in chunks.iter().enumerate() {
        let last = finish && i + 1 == chunks.len();
        let chunk = json!({
            "id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "test-model",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": if last { json!("stop") } else { Value::Null }}]
        });
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    if finish {
        let usage = json!({
            "id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "test-model",
            "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}
        });
        body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap_or_default()
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).expect("request body is JSON")
}

#[tokio::test]
async fn a_normal_answer_carries_text_usage_and_the_key_only_in_its_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ok("Paris."))
        .expect(1)
        .mount(&server)
        .await;
    let model = model(&server);
    let answer = model
        .complete(&request("Capital of France?"))
        .await
        .expect("answer");
    assert_eq!(answer.text, "Paris.");
    assert_eq!(
        (answer.usage.prompt_tokens, answer.usage.completion_tokens),
        (21, 5)
    );
    assert_eq!(answer.model, "test-model");

    let sent = requests(&server).await;
    // Key order depends on serde_json's `preserve_order`, which other crates of a build may enable.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("chat_request_body", body(&sent[0]));
    });
    assert!(
        !format!("{model:?}").contains(KEY),
        "the key leaked into Debug: {model:?}"
    );
    assert!(format!("{:?}", model.config()).contains("REDACTED"));
}

#[tokio::test]
async fn a_streamed_answer_is_assembled_with_its_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&["The Final", " Five", "."], true))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.stream = true;
    let model = OpenAiModel::new(config).expect("valid config");
    let answer = model.complete(&request("Who?")).await.expect("answer");
    assert_eq!(answer.text, "The Final Five.");
    assert_eq!(
        (answer.usage.prompt_tokens, answer.usage.completion_tokens),
        (30, 3)
    );
    let sent = body(&requests(&server).await[0]);
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn a_streamed_answer_reaches_the_sink_piece_by_piece() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&["The Final", " Five", "."], true))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.stream = true;
    let model = OpenAiModel::new(config).expect("valid config");
    let pieces = std::sync::Mutex::new(Vec::new());
    let answer = model
        .complete_streaming(&request("Who?"), &|piece| {
            pieces.lock().unwrap().push(piece.to_owned())
        })
        .await
        .expect("answer");
    assert_eq!(*pieces.lock().unwrap(), ["The Final", " Five", "."]);
    assert_eq!(answer.text, "The Final Five.");
}

#[tokio::test]
async fn a_stream_cut_off_mid_way_is_a_transient_error_retried_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&["The Final", " Fi"], false))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.stream = true;
    let error = OpenAiModel::new(config)
        .expect("valid config")
        .complete(&request("Who?"))
        .await
        .unwrap_err();
    assert_eq!(error.retry, RetryClass::Transient);
    assert!(
        error.message.contains("ended before the model finished"),
        "{}",
        error.message
    );
    assert_eq!(
        requests(&server).await.len(),
        2,
        "one call and exactly one retry"
    );
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Verdict {
    intent: String,
    confidence: f64,
}

#[tokio::test]
async fn json_schema_output_is_requested_and_parsed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok(r#"{"intent": "search", "confidence": 0.8}"#))
        .mount(&server)
        .await;
    let out = generate::<Verdict>(&model(&server), request("Is this a search?").messages, 64)
        .await
        .expect("parsed");
    assert_eq!(
        out.value,
        Verdict {
            intent: "search".into(),
            confidence: 0.8
        }
    );
    assert_eq!(out.attempted, Attempted::Parsed);
    let sent = body(&requests(&server).await[0]);
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["intent", "confidence"])
    );
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("\"intent\": \"...\""),
        "the prompt carries the reply's shape too"
    );
}

#[tokio::test]
async fn servers_without_schema_support_get_the_schema_in_the_prompt_only() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok(r#"{"intent": "search", "confidence": 1}"#))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.schema_support = SchemaSupport::PromptOnly;
    let model = OpenAiModel::new(config).expect("valid config");
    generate::<Verdict>(&model, request("Is this a search?").messages, 64)
        .await
        .expect("parsed");
    let sent = body(&requests(&server).await[0]);
    assert!(sent.get("response_format").is_none(), "{sent}");
}

#[tokio::test]
async fn malformed_content_gets_one_repair_request_then_a_typed_failure() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("I think it is a search, probably."))
        .mount(&server)
        .await;
    let error = generate::<Verdict>(&model(&server), request("Is this a search?").messages, 64)
        .await
        .unwrap_err();
    let StructuredError::Unparseable {
        last_output, usage, ..
    } = error
    else {
        panic!("expected Unparseable, got {error:?}")
    };
    assert_eq!(last_output, "I think it is a search, probably.");
    assert_eq!(usage.prompt_tokens, 42, "both attempts are accounted");
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2, "exactly one repair request");
    let repair = body(&sent[1]);
    let last = repair["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert!(
        last["content"]
            .as_str()
            .unwrap_or_default()
            .contains("not valid"),
        "{last}"
    );
}

#[tokio::test]
async fn rate_limits_wait_for_retry_after_then_succeed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_string(r#"{"error":{"message":"slow down"}}"#),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("fine"))
        .mount(&server)
        .await;
    let started = Instant::now();
    let answer = model(&server)
        .complete(&request("hi"))
        .await
        .expect("answer after the wait");
    assert_eq!(answer.text, "fine");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn a_retry_after_beyond_the_limit_fails_at_once_as_rate_limited() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "60"))
        .mount(&server)
        .await;
    let error = model(&server).complete(&request("hi")).await.unwrap_err();
    assert_eq!(
        error.retry,
        RetryClass::RateLimited {
            retry_after: Some(Duration::from_secs(60))
        }
    );
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn a_retry_after_past_the_calls_deadline_is_not_waited_for() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .mount(&server)
        .await;
    // Within the configured longest wait, but the call must be over in 300 ms.
    let mut asked = request("hi");
    asked.deadline = Some(Instant::now() + Duration::from_millis(300));
    let started = Instant::now();
    let error = model(&server).complete(&asked).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(error.message.contains("not retried"), "{error}");
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn the_providers_request_limit_holds_a_call_back_and_fails_it_at_its_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("fine"))
        .mount(&server)
        .await;
    let mut config = config(&server);
    config.requests_per_minute = std::num::NonZeroU32::new(1);
    let model = OpenAiModel::new(config).expect("valid config");
    assert_eq!(
        model
            .complete(&request("one"))
            .await
            .expect("first turn")
            .text,
        "fine"
    );
    // The next turn is a minute away; the call has 300 ms.
    let mut second = request("two");
    second.deadline = Some(Instant::now() + Duration::from_millis(300));
    let started = Instant::now();
    let error = model.complete(&second).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(error.retry, RetryClass::RateLimited { .. }),
        "{error:?}"
    );
    assert!(error.message.contains("rate limit"), "{error}");
    assert_eq!(
        requests(&server).await.len(),
        1,
        "the limit kept the call from the server"
    );
}

#[tokio::test]
async fn stop_sequences_are_sent_and_absent_when_there_are_none() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("one, two, three"))
        .mount(&server)
        .await;
    let mut asked = request("count");
    model(&server).complete(&asked).await.expect("answers");
    asked.stop = vec!["\n\n".into(), "four".into()];
    model(&server).complete(&asked).await.expect("answers");
    let bodies: Vec<Value> = requests(&server).await.iter().map(body).collect();
    assert_eq!(bodies[0].get("stop"), None);
    assert_eq!(bodies[1]["stop"], json!(["\n\n", "four"]));
}

#[tokio::test]
async fn a_server_error_is_retried_once_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("recovered"))
        .mount(&server)
        .await;
    assert_eq!(
        model(&server)
            .complete(&request("hi"))
            .await
            .expect("answer")
            .text,
        "recovered"
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn failures_are_classified_and_retried_at_most_once() {
    let quota =
        r#"{"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#;
    let context = r#"{"error":{"code":"context_length_exceeded","message":"maximum context length is 8192 tokens"}}"#;
    let cases: Vec<(ResponseTemplate, RetryClass, usize)> = vec![
        (ResponseTemplate::new(503), RetryClass::Transient, 2),
        (ResponseTemplate::new(408), RetryClass::Transient, 2),
        (
            ResponseTemplate::new(401).set_body_string("invalid api key"),
            RetryClass::Permanent,
            1,
        ),
        (
            ResponseTemplate::new(429).set_body_string(quota),
            RetryClass::Permanent,
            1,
        ),
        (
            ResponseTemplate::new(400).set_body_string(context),
            RetryClass::ContextTooLong,
            1,
        ),
        (
            ResponseTemplate::new(200).set_body_string("{not json"),
            RetryClass::Transient,
            2,
        ),
        (
            ResponseTemplate::new(200).set_delay(Duration::from_secs(2)),
            RetryClass::Transient,
            2,
        ),
    ];
    for (response, expected, calls) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response)
            .mount(&server)
            .await;
        let error = model(&server).complete(&request("hi")).await.unwrap_err();
        assert_eq!(error.retry, expected, "{}", error.message);
        assert!(!error.message.contains(KEY));
        assert_eq!(requests(&server).await.len(), calls, "{}", error.message);
    }
}

#[tokio::test]
async fn an_unreachable_server_says_where_it_looked() {
    let config = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
    let error = OpenAiModel::new(config)
        .expect("valid config")
        .complete(&request("hi"))
        .await
        .unwrap_err();
    assert_eq!(error.retry, RetryClass::Transient);
    assert!(error.message.contains("127.0.0.1:9"), "{}", error.message);
    assert!(OpenAiModel::new(OpenAiConfig::new("not a url", "m")).is_err());
}

/// The `response_format` of a request's body, `null` when it has none.
fn format_of(request: &Request) -> Value {
    body(request)
        .get("response_format")
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn each_dialect_asks_for_json_as_its_servers_take_it() {
    for dialect in SchemaSupport::ALL {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ok(r#"{"intent": "search", "confidence": 1}"#))
            .mount(&server)
            .await;
        let mut config = config(&server);
        config.schema_support = dialect;
        let model = OpenAiModel::new(config).expect("valid config");
        generate::<Verdict>(&model, request("Is this a search?").messages, 64)
            .await
            .expect("parsed");
        let format = format_of(&requests(&server).await[0]);
        match dialect {
            SchemaSupport::JsonSchema => {
                assert_eq!(format["type"], "json_schema", "{format}");
                assert_eq!(format["json_schema"]["name"], "reply");
                assert!(format["json_schema"]["schema"]["properties"]["intent"].is_object());
            }
            SchemaSupport::JsonObjectWithSchema => {
                assert_eq!(format["type"], "json_object", "{format}");
                assert!(
                    format["schema"]["properties"]["intent"].is_object(),
                    "{format}"
                );
            }
            SchemaSupport::JsonObject => assert_eq!(format, json!({"type": "json_object"})),
            SchemaSupport::PromptOnly => assert_eq!(format, Value::Null),
        }
        assert_eq!(dialect.name().parse::<SchemaSupport>(), Ok(dialect));
    }
    assert!("json-object-schema".parse::<SchemaSupport>().is_ok());
    let unknown = "xml".parse::<SchemaSupport>().unwrap_err();
    assert!(
        unknown.contains("json_schema, json_object_schema, json_object, prompt_only"),
        "{unknown}"
    );
}

#[tokio::test]
async fn a_refused_dialect_gives_way_to_the_next_at_once_and_the_one_that_works_is_kept() {
    let server = MockServer::start().await;
    // What llama-cpp-python answers to a JSON Schema response_format.
    Mock::given(method("POST"))
        .and(|request: &Request| format_of(request)["type"] == "json_schema")
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({
            "error": {"message": "response_format: type 'json_schema' is not supported", "type": "internal_server_error"}
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(r#"{"intent": "search", "confidence": 1}"#))
        .mount(&server)
        .await;
    let model = model(&server);
    let mut asked = request("Is this a search?");
    asked.json_schema = Some(json!({"type": "object"}));

    let first = model
        .complete(&asked)
        .await
        .expect("answered in the next dialect");
    assert_eq!(first.response_format.as_deref(), Some("json_object_schema"));
    assert_eq!(model.dialect(), SchemaSupport::JsonObjectWithSchema);
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2, "no retry of the refused dialect");
    assert_eq!(format_of(&sent[0])["type"], "json_schema");
    assert_eq!(format_of(&sent[1])["type"], "json_object");

    // The next call, and a clone's, go straight to the dialect that worked.
    model.clone().complete(&asked).await.expect("answered");
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 3);
    assert_eq!(format_of(&sent[2])["type"], "json_object");
    assert!(format_of(&sent[2])["schema"].is_object());

    // A request that asks for no JSON is not in any dialect.
    let plain = model.complete(&request("Hello")).await.expect("answered");
    assert_eq!(plain.response_format, None);
}

#[tokio::test]
async fn a_server_refusing_every_response_format_is_asked_in_the_prompt_alone() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(|request: &Request| !format_of(request).is_null())
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_string("Invalid request: unknown field response_format"),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(r#"{"intent": "search", "confidence": 1}"#))
        .mount(&server)
        .await;
    let model = model(&server);
    let out = generate::<Verdict>(&model, request("Is this a search?").messages, 64)
        .await
        .expect("parsed");
    assert_eq!(out.response_format.as_deref(), Some("prompt_only"));
    assert_eq!(requests(&server).await.len(), 4, "one request per dialect");
}

#[tokio::test]
async fn an_error_body_reaches_the_trace_as_one_short_line() {
    let server = MockServer::start().await;
    let page = format!(
        "<html>\n<body>\n{}\n</body>\n</html>",
        "Bad gateway. ".repeat(200)
    );
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string(page))
        .mount(&server)
        .await;
    let error = model(&server)
        .complete(&request("Hello"))
        .await
        .unwrap_err();
    assert!(!error.message.contains('\n'), "{}", error.message);
    assert!(error.message.chars().count() < 300, "{}", error.message);
    assert!(
        error.message.contains("answered HTTP 400"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_gateway_error_that_mentions_response_format_is_not_a_refused_dialect() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(502).set_body_string("upstream sent an invalid response_format"),
        )
        .mount(&server)
        .await;
    let model = model(&server);
    let mut asked = request("Is this a search?");
    asked.json_schema = Some(json!({"type": "object"}));
    let error = model.complete(&asked).await.unwrap_err();
    assert_eq!(error.retry, RetryClass::Transient, "{}", error.message);
    assert_eq!(model.dialect(), SchemaSupport::JsonSchema);
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2, "the call and its one retry");
    assert!(sent.iter().all(|r| format_of(r)["type"] == "json_schema"));
}
