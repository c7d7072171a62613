//! The rendered prompts of the prompts that wait here for their stages, for realistic contexts, pinned as snapshots: these
//! are the words a model reads, so any change to them should be seen and reviewed.

use ferret_llm::{ActionExtractionContext, CondensationContext};
use ferret_llm::{PromptContext, PromptSource, Prompts, Stage};

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
fn action_extraction_prompt() {
    let context = ActionExtractionContext::new(
        "Why does Spring Boot 1.1.9 fail with a CGLIB NoClassDefFoundError on Java 21?",
        "Spring Boot 1.x bundles a CGLIB that Java 16 and later block [1]. Upgrade the parent in pom.xml to \
         spring-boot-starter-parent 2.7.18, which supports Java 21 [2], then run `mvn clean install -U`.",
        spring_sources().into_iter().take(2).collect(),
    );
    insta::assert_snapshot!(Stage::ActionExtraction.name(), render(&context));
}

#[test]
fn condensation_prompt() {
    let mut source = spring_sources().remove(0);
    source.text = vec![source.text; 3].join(" ");
    let context = CondensationContext {
        question: "Why does Spring Boot 1.1.9 fail with a CGLIB NoClassDefFoundError on Java 21?"
            .into(),
        source,
        max_chars: 600,
    };
    insta::assert_snapshot!(Stage::Condensation.name(), render(&context));
}
