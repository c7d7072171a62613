//! The rendered prompts of the model synthesizer, for realistic contexts, pinned as snapshots: these
//! are the words a model reads, so any change to them should be seen and reviewed.

use ferret_llm::{PromptContext, PromptSource, Prompts, Stage};
use ferret_synthesis::SynthesisContext;

/// The rendered prompt as a reviewer reads it. Rendering also checks the engine's rules: both
/// messages present, and fenced retrieved text only under the warning that it is data.
fn render<C: PromptContext>(context: &C) -> String {
    Prompts::new()
        .review(context)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Three sources about one error, the last carrying an injected instruction.
fn spring_sources() -> Vec<PromptSource> {
    serde_json::from_str(include_str!(
        "../../../fixtures/prompts/spring-sources.json"
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn synthesis_prompt() {
    let context = SynthesisContext {
        question: "Why does Spring Boot 1.1.9 fail with a CGLIB NoClassDefFoundError on Java 21?"
            .into(),
        sources: spring_sources(),
        guidance: Some(
            "Start with the root cause in one or two sentences, then give the fix step by step."
                .into(),
        ),
        context: std::collections::BTreeMap::from([
            ("java_version".into(), "21".into()),
            ("spring_boot_version".into(), "1.1.9".into()),
        ]),
    };
    insta::assert_snapshot!(Stage::Synthesis.name(), render(&context));
}
