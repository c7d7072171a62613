//! End to end with the embedded SmolLM2-135M on the default corpus: whatever the small model
//! writes, the answer's citations resolve. Needs `cargo xtask models`; without the model the test
//! says it was skipped, unless `FERRET_REQUIRE_MODELS` is set (as CI does), when it fails.

use std::sync::Arc;

use ferret::{Ferret, LocalModel, Query, ResponseType, TraceStep, SMOLLM2_FILE};

mod common;
use common::{assert_citations_resolve, use_temporary_ferret_home};

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_model_answers_with_valid_citations() {
    // Resolved before the temporary home replaces the cache folder the models live in.
    let models = ferret::default_models_dir();
    if !models.join(SMOLLM2_FILE).is_file() {
        assert!(
            std::env::var_os("FERRET_REQUIRE_MODELS").is_none(),
            "{SMOLLM2_FILE} is not in {}",
            models.display()
        );
        eprintln!(
            "skipped: {SMOLLM2_FILE} is not in {} (run `cargo xtask models`)",
            models.display()
        );
        return;
    }
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
    for stage in ["intent", "analysis", "rewrite", "grading", "synthesis"] {
        assert!(
            stages.contains(&stage),
            "the model was asked for {stage}: {stages:?}"
        );
    }
    assert!(
        response.usage.llm_calls >= 5
            && response.usage.prompt_tokens > 0
            && response.usage.completion_tokens > 0
    );
}
