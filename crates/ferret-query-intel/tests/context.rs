//! The asker's context reaches the model-backed analyzer's prompt, and the analysis carries it.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferret_core::Implementation;
use ferret_llm::{Exchange, ScriptedModel, StageModel, StageModelConfig};
use ferret_query_intel::{Complexity, LlmAnalyzer, QueryAnalyzer};

#[tokio::test]
async fn the_model_reads_the_askers_context_beside_the_question() {
    let reply = r#"{"query_type": "error_diagnosis", "entities": [], "intent": "fix_error", "complexity": "simple"}"#;
    let model = ScriptedModel::new(
        "scripted",
        vec![Exchange {
            expect_contains: Some("- java_version: 17".into()),
            reply: reply.into(),
        }],
    );
    let model = StageModel::new(Arc::new(model), StageModelConfig::default());
    let context = BTreeMap::from([("java_version".to_owned(), "17".to_owned())]);
    let out = LlmAnalyzer::new(model)
        .analyze_in(
            "NoClassDefFoundError: net/sf/cglib/proxy/Enhancer",
            &context,
        )
        .await;
    assert!(
        matches!(out.implementation, Implementation::Llm { .. }),
        "{out:?}"
    );
    assert_eq!(out.value.context, context);
    assert_eq!(
        out.value.complexity,
        Complexity::Complex,
        "an error the context gives versions for is complex"
    );
}
