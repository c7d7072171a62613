//! The rendered prompts of the prompts that wait here for their stages, for realistic contexts, pinned as snapshots: these
//! are the words a model reads, so any change to them should be seen and reviewed.

use ferret_llm::{
    ActionExtractionContext, CandidateValidationContext, FileCandidate, RequestedFile,
};
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
fn candidate_validation_prompt() {
    let context = CandidateValidationContext {
        requested: RequestedFile {
            filename: "add-detail-xl.safetensors".into(),
            model_type: Some("lora".into()),
            preferred_source: Some("civitai".into()),
            context: Some(
                "loaded by a LoraLoader node of a ComfyUI workflow, with an SDXL checkpoint".into(),
            ),
        },
        candidates: vec![
            FileCandidate {
                number: 1,
                name: "Detail Tweaker XL".into(),
                filename: Some("add-detail-xl.safetensors".into()),
                model_type: Some("lora".into()),
                source: "civitai".into(),
                url: Some("https://civitai.com/models/122359".into()),
            },
            FileCandidate {
                number: 2,
                name: "Detail Tweaker LoRA (SD 1.5)".into(),
                filename: Some("add_detail.safetensors".into()),
                model_type: Some("lora".into()),
                source: "civitai".into(),
                url: Some("https://civitai.com/models/58390".into()),
            },
            FileCandidate {
                number: 3,
                name: "someone/add-detail-xl".into(),
                filename: None,
                model_type: None,
                source: "huggingface".into(),
                url: Some("https://huggingface.co/someone/add-detail-xl".into()),
            },
        ],
    };
    insta::assert_snapshot!(Stage::CandidateValidation.name(), render(&context));
}
