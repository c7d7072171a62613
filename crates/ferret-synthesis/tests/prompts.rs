//! The rendered prompts of the model synthesizer, for realistic contexts, pinned as snapshots: these
//! are the words a model reads, so any change to them should be seen and reviewed.

use ferret_llm::{PromptContext, PromptSource, Prompts, Stage};
use ferret_synthesis::{EarlierTurn, SynthesisContext};

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
        context: std::collections::BTreeMap::from([
            ("java_version".into(), "21".into()),
            ("spring_boot_version".into(), "1.1.9".into()),
        ]),
        conversation: Vec::new(),
        search: Vec::new(),
    };
    insta::assert_snapshot!(Stage::Synthesis.name(), render(&context));
}

/// A follow-up in a chat: the writer reads the earlier turns and what the search did.
#[test]
fn synthesis_prompt_in_a_conversation() {
    let context = SynthesisContext {
        question: "What about Spring Boot 2.7 on Java 21?".into(),
        sources: spring_sources(),
        context: Default::default(),
        conversation: vec![EarlierTurn {
            question: "Why does Spring Boot 1.1.9 fail with a CGLIB NoClassDefFoundError on Java 21?"
                .into(),
            answer: "Spring Boot 1.1.9 bundles a CGLIB that cannot read Java 21 class files; upgrade Spring Boot."
                .into(),
        }],
        search: vec![
            "read the follow-up \"What about Spring Boot 2.7 on Java 21?\" as \"Spring Boot 2.7 Java 21 CGLIB NoClassDefFoundError\"".into(),
            "searched for \"Spring Boot 2.7 Java 21 CGLIB NoClassDefFoundError\" (as asked)".into(),
            "web failed for \"Spring Boot 2.7 Java 21\": rate limited (429)".into(),
            "kept 3 of 8 results; quality medium".into(),
        ],
    };
    insta::assert_snapshot!("synthesis_in_a_conversation", render(&context));
}
