//! Against a real OpenAI-compatible server, when `FERRET_LLM_BASE_URL` (and `FERRET_LLM_MODEL`,
//! optionally `FERRET_LLM_API_KEY`) are set; skipped, saying so, otherwise.

use ferret_core::{ChatMessage, ChatRole, CompletionRequest, LanguageModel};
use ferret_llm::{generate, OpenAiConfig, OpenAiModel};
use schemars::JsonSchema;
use serde::Deserialize;

fn live_model(stream: bool) -> Option<OpenAiModel> {
    let Ok(url) = std::env::var("FERRET_LLM_BASE_URL") else {
        eprintln!("skipped: FERRET_LLM_BASE_URL is not set");
        return None;
    };
    let model = std::env::var("FERRET_LLM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
    let mut config = OpenAiConfig::new(url, model);
    if let Ok(key) = std::env::var("FERRET_LLM_API_KEY") {
        config = config.api_key(key);
    }
    config.stream = stream;
    Some(OpenAiModel::new(config).expect("FERRET_LLM_BASE_URL is a URL"))
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Capital {
    /// The city.
    city: String,
}

#[tokio::test]
async fn a_live_server_answers_plainly_streamed_and_in_json() {
    for stream in [false, true] {
        let Some(model) = live_model(stream) else {
            return;
        };
        let request = CompletionRequest {
            messages: vec![ChatMessage {
                role: ChatRole::User,
                content: "Say the word: ferret".into(),
            }],
            max_tokens: 16,
            temperature: 0.0,
            json_schema: None,
        };
        let answer = model.complete(&request).await.expect("the server answers");
        assert!(
            answer.text.to_lowercase().contains("ferret"),
            "stream={stream}: {}",
            answer.text
        );
        let messages = vec![ChatMessage {
            role: ChatRole::User,
            content: "What is the capital of France?".into(),
        }];
        let capital = generate::<Capital>(&model, messages, 64)
            .await
            .expect("a typed answer");
        assert!(capital.value.city.contains("Paris"), "{:?}", capital.value);
    }
}
