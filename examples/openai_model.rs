//! The stages asking an OpenAI-compatible model (llama.cpp's server, vLLM, Ollama, OpenAI),
//! over the built-in Wikipedia slice: each stage falls back to its rules when the model's reply
//! will not do, and the trace says which one ran. The server is named by `FERRET_LLM_BASE_URL`
//! (up to `/v1`) and `FERRET_LLM_MODEL`, as `.ci/llama-server` prints them; without them the
//! program says so and stops.
//!
//! `FERRET_LLM_BASE_URL=http://127.0.0.1:8080/v1 FERRET_LLM_MODEL=smollm2 cargo run -p ferret-examples --bin openai-model`

use std::sync::Arc;
use std::time::Duration;

use ferret::jobs::search::TraceStep;
use ferret::models::{OpenAiConfig, OpenAiModel};
use ferret::{Budget, Ferret, Query};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (Ok(url), Ok(name)) = (
        std::env::var("FERRET_LLM_BASE_URL"),
        std::env::var("FERRET_LLM_MODEL"),
    ) else {
        println!(
            "skipped: set FERRET_LLM_BASE_URL and FERRET_LLM_MODEL to an OpenAI-compatible server"
        );
        return Ok(());
    };
    let mut config = OpenAiConfig::new(url, name);
    if let Ok(key) = std::env::var("FERRET_LLM_API_KEY") {
        config = config.api_key(key);
    }
    config.timeout = Duration::from_secs(120);
    let model = OpenAiModel::new(config)?;

    let ferret = Ferret::builder()
        .default_corpus()
        .language_model(Arc::new(model))
        .build()?;
    // A model on a CPU is slow: give the search time.
    let budget = Budget {
        wall_time: Duration::from_secs(600),
        call_deadline: Duration::from_secs(180),
        ..Budget::default()
    };
    let query =
        Query::new("Who were the members of the Final Five gymnastics team?")?.with_budget(budget);
    let response = ferret.search(query).await?;
    match &response.answer {
        Some(answer) => println!("{answer}"),
        None => println!("{}", response.message.as_deref().unwrap_or_default()),
    }
    let calls = response
        .trace
        .steps
        .iter()
        .filter(|step| matches!(step, TraceStep::LlmCall { .. }))
        .count();
    println!("model calls: {calls}");
    anyhow::ensure!(calls > 0, "the stages asked the model");
    Ok(())
}
