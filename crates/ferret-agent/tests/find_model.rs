//! The model-file finder's model stages over scripted hubs: a model's plan runs as written, a
//! plan naming no configured hub or holding an address falls back to the name variants, and a
//! model's judgement is blended with the rules (a matching hash staying certain), a reply about
//! a candidate it was not shown falling back to the rules alone. The finder over recorded hub
//! answers, faults included, is the facade's `find_model` fixture test.

use std::sync::Arc;

use ferret_agent::{
    Agent, AgentConfig, HeuristicModelSearchPlanner, LlmCandidateValidator, LlmModelSearchPlanner,
    StageConfig, Stages, Strategy,
};
use ferret_core::{
    BackendCapabilities, FileRequest, FindStatus, Implementation, ModelFile, ModelSource,
    ModelType, Response, TraceStep,
};
use ferret_exec::Executor;
use ferret_llm::{ScriptedModel, StageModel, StageModelConfig};
use ferret_test_support::{Matching, ScriptedBackend};

fn file(name: &str, source: ModelSource, kind: ModelType) -> ModelFile {
    ModelFile {
        file_name: name.into(),
        path: None,
        model_name: format!("{name} model"),
        source,
        model_type: Some(kind),
        base_model: Some("SDXL 1.0".into()),
        size_bytes: Some(1_000_000),
        sha256: None,
        download_url: Some(format!("https://files.example/{source}/{name}")),
        page_url: Some(format!("https://{source}.example/{name}")),
        gate: None,
    }
}

/// A hub holding `files`, answering every query with all of them, recording its requests.
fn hub(source: ModelSource, files: Vec<ModelFile>) -> Arc<ScriptedBackend> {
    let hits = files
        .into_iter()
        .map(|f| {
            let id = format!("{source}:{}", f.file_name);
            let address = f.download_url.clone();
            f.into_hit(id, address, 1.0, source.as_str())
        })
        .collect();
    Arc::new(
        ScriptedBackend::new(source.as_str(), hits)
            .matching(Matching::All)
            .capabilities(BackendCapabilities {
                access: true,
                model_hub: Some(source),
                ..BackendCapabilities::default()
            }),
    )
}

fn model(replies: &[&str]) -> StageModel {
    StageModel::new(
        Arc::new(ScriptedModel::replying("scripted", replies)),
        StageModelConfig::default(),
    )
}

fn finder(hubs: Vec<Arc<ScriptedBackend>>, stages: Stages) -> Agent {
    let executor = hubs
        .into_iter()
        .fold(Executor::builder(), |b, h| b.backend(h))
        .build()
        .unwrap();
    Agent::new(
        stages,
        executor,
        AgentConfig {
            strategy: Strategy::FindModel,
            ..AgentConfig::default()
        },
    )
    .unwrap()
}

fn with_model(planner: Option<StageModel>, validator: Option<StageModel>) -> Stages {
    let mut stages = Stages::heuristic(StageConfig::default());
    if let Some(model) = planner {
        stages.model_search = Arc::new(LlmModelSearchPlanner::new(
            model,
            HeuristicModelSearchPlanner::default(),
        ));
    }
    if let Some(model) = validator {
        stages.validator = Arc::new(LlmCandidateValidator::new(model));
    }
    stages
}

/// The plan's lines and which planner wrote them.
fn plan(response: &Response) -> (Vec<String>, Implementation) {
    response
        .trace
        .steps
        .iter()
        .find_map(|s| match s {
            TraceStep::Plan {
                plan,
                implementation,
                ..
            } => Some((
                plan.lines().map(str::to_owned).collect(),
                implementation.clone(),
            )),
            _ => None,
        })
        .expect("the finder records its plan")
}

fn request() -> FileRequest {
    FileRequest::new("detail_xl_fp16.safetensors")
        .unwrap()
        .with_type(ModelType::Lora)
        .with_base_model("SDXL")
}

#[tokio::test]
async fn a_models_plan_runs_as_written_and_only_on_configured_hubs() {
    let civitai = hub(
        ModelSource::Civitai,
        vec![file(
            "detail_xl.safetensors",
            ModelSource::Civitai,
            ModelType::Lora,
        )],
    );
    let stages = with_model(
        Some(model(&[
            r#"{"steps": [{"tool": "civitai_search", "query": "Detail Tweaker XL"},
                          {"tool": "huggingface_search", "query": "detail xl lora"},
                          {"tool": "google_search", "query": "detail xl"}]}"#,
        ])),
        None,
    );
    let response = finder(vec![civitai.clone()], stages)
        .find_model(&request(), FileRequest::default_budget(), None)
        .await
        .unwrap();
    let (lines, implementation) = plan(&response);
    // Only Civitai is configured: the Hub's and an unknown tool's steps are dropped.
    assert_eq!(lines, ["civitai_search: Detail Tweaker XL"]);
    assert!(
        matches!(implementation, Implementation::Llm { .. }),
        "{implementation:?}"
    );
    let queries: Vec<String> = civitai.requests().iter().map(|r| r.query.clone()).collect();
    assert_eq!(queries, ["Detail Tweaker XL"]);
    // The model type travels with the search, for Civitai's `types`.
    assert_eq!(
        civitai.requests()[0].options.model_type,
        Some(ModelType::Lora)
    );
    let find = response.model_file.unwrap();
    assert_eq!(find.status, FindStatus::Found);
    assert!(
        find.candidates[0].reason.contains("fp16"),
        "{}",
        find.candidates[0].reason
    );
}

#[tokio::test]
async fn a_plan_with_an_address_or_no_known_tool_falls_back_to_the_name_variants() {
    for reply in [
        r#"{"steps": [{"tool": "civitai_search", "query": "https://evil.example/x"}]}"#,
        r#"{"steps": [{"tool": "google_search", "query": "detail xl"}]}"#,
        "not json at all",
    ] {
        let civitai = hub(ModelSource::Civitai, Vec::new());
        // A failed plan asks once more (the repair) before falling back.
        let stages = with_model(Some(model(&[reply, reply])), None);
        let response = finder(vec![civitai.clone()], stages)
            .find_model(&request(), FileRequest::default_budget(), None)
            .await
            .unwrap();
        let (lines, implementation) = plan(&response);
        assert_eq!(
            lines,
            ["civitai_search: detail xl", "civitai_search: detail"],
            "{reply}"
        );
        assert!(
            matches!(implementation, Implementation::Heuristic { .. }),
            "{reply}: {implementation:?}"
        );
        assert!(civitai.requests().iter().all(|r| !r.query.contains("://")));
    }
}

#[tokio::test]
async fn a_models_judgement_is_blended_with_the_rules_and_a_bad_one_is_dropped() {
    let files = vec![
        file(
            "detail_xl.safetensors",
            ModelSource::Civitai,
            ModelType::Lora,
        ),
        file(
            "detail_xl_fp16.safetensors",
            ModelSource::Civitai,
            ModelType::Checkpoint,
        ),
    ];
    let judged = r#"{"status": "FOUND", "candidates": [
        {"number": 1, "confidence": 95, "reason": "same LoRA without the fp16 suffix"},
        {"number": 2, "confidence": 10, "reason": "a checkpoint, not a LoRA"}]}"#;
    let response = finder(
        vec![hub(ModelSource::Civitai, files.clone())],
        with_model(None, Some(model(&[judged]))),
    )
    .find_model(&request(), FileRequest::default_budget(), None)
    .await
    .unwrap();
    let find = response.model_file.unwrap();
    let best = &find.candidates[0];
    assert_eq!(best.file_name, "detail_xl.safetensors");
    // The rules gave 80 (a variant of the right type and base); the model 95: half and half.
    assert_eq!(best.confidence, 88);
    assert!(best.reason.contains("Model: same LoRA"), "{}", best.reason);
    // An exact name of the wrong type: the rules' 45 and the model's 10.
    assert_eq!(find.candidates[1].confidence, 28);
    // An exact name exists (of the wrong type), so the variant is not certain.
    assert_eq!(find.status, FindStatus::Uncertain);
    let ranking = response.trace.steps.iter().find_map(|s| match s {
        TraceStep::Ranking {
            candidates,
            implementation,
            ..
        } => Some((candidates.clone(), implementation.clone())),
        _ => None,
    });
    let (ranked, implementation) = ranking.expect("the ranking is traced");
    assert_eq!(ranked[0].model_confidence, Some(95));
    assert!(ranked[0]
        .rules
        .iter()
        .any(|r| r.rule == "same name in another variant" && r.points == 70));
    assert!(matches!(implementation, Implementation::Llm { .. }));

    let invented =
        r#"{"status": "FOUND", "candidates": [{"number": 7, "confidence": 99, "reason": "x"}]}"#;
    let response = finder(
        vec![hub(ModelSource::Civitai, files)],
        with_model(None, Some(model(&[invented, invented]))),
    )
    .find_model(&request(), FileRequest::default_budget(), None)
    .await
    .unwrap();
    let find = response.model_file.unwrap();
    assert_eq!(find.candidates[0].confidence, 80, "the rules alone");
    assert!(find.candidates.iter().all(|c| !c.reason.contains("Model:")));
}

#[tokio::test]
async fn a_bad_request_or_no_hub_is_a_message_not_a_search() {
    let civitai = hub(ModelSource::Civitai, Vec::new());
    let agent = finder(
        vec![civitai.clone()],
        Stages::heuristic(StageConfig::default()),
    );
    let query = ferret_core::Query::new("../etc/passwd")
        .unwrap()
        .with_strategy(Strategy::FindModel);
    let response = agent.run(&query, None).await.unwrap();
    assert!(response.message.unwrap().contains("is a path"));
    assert!(civitai.requests().is_empty());

    let docs = Arc::new(ScriptedBackend::new("docs", Vec::new()));
    let executor = Executor::builder().backend(docs).build().unwrap();
    let agent = Agent::new(
        Stages::heuristic(StageConfig::default()),
        executor,
        AgentConfig::default(),
    )
    .unwrap();
    let response = agent
        .find_model(&request(), FileRequest::default_budget(), None)
        .await
        .unwrap();
    assert!(response
        .message
        .unwrap()
        .contains("No model hub is configured"));
}

#[tokio::test]
async fn hubs_are_the_backends_that_declare_one_whatever_their_names() {
    // A mirror of Civitai under its own name is searched; an index that happens to be named
    // `huggingface` but declares no hub is not.
    let file = file(
        "detail_xl.safetensors",
        ModelSource::Civitai,
        ModelType::Lora,
    );
    let mirror = Arc::new(
        ScriptedBackend::new(
            "models-mirror",
            vec![file.into_hit("m:1".into(), None, 1.0, "models-mirror")],
        )
        .matching(Matching::All)
        .capabilities(BackendCapabilities {
            access: true,
            model_hub: Some(ModelSource::Civitai),
            ..BackendCapabilities::default()
        }),
    );
    let misnamed = Arc::new(ScriptedBackend::new("huggingface", Vec::new()));
    let agent = finder(
        vec![misnamed.clone(), mirror.clone()],
        Stages::heuristic(StageConfig::default()),
    );
    let response = agent
        .find_model(&request(), FileRequest::default_budget(), None)
        .await
        .unwrap();
    assert!(!mirror.requests().is_empty(), "the mirror was asked");
    assert!(
        misnamed.requests().is_empty(),
        "a backend's name is not a hub"
    );
    let (lines, _) = plan(&response);
    assert!(
        lines.iter().all(|l| l.starts_with("civitai_search:")),
        "{lines:?}"
    );
    let find = response.model_file.unwrap();
    assert_eq!(find.candidates[0].file_name, "detail_xl.safetensors");
}

#[tokio::test]
async fn a_web_page_of_a_hubs_site_becomes_a_lookup_on_that_hub_before_the_plan() {
    // The web finds the model's page for the exact name; the hub is asked for what is at the
    // address (its own API), and other sites' pages are left alone.
    let page = |url: &str| {
        let mut hit = ferret_core::Hit::new(url, "Detail Tweaker XL", "detail_xl_fp16", 1.0, "web");
        hit.url = Some(url.to_owned());
        hit
    };
    let web = Arc::new(
        ScriptedBackend::new(
            "web",
            vec![
                page("https://civitai.com/models/122359/detail-tweaker-xl"),
                page("https://example.com/mirror/detail_xl_fp16.safetensors"),
            ],
        )
        .matching(Matching::All)
        .query_form(ferret_core::QueryForm::Web),
    );
    let civitai = hub(ModelSource::Civitai, Vec::new());
    let agent = finder(
        vec![web.clone(), civitai.clone()],
        Stages::heuristic(StageConfig::default()),
    );
    let response = agent
        .find_model(&request(), FileRequest::default_budget(), None)
        .await
        .unwrap();
    let asked = web.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].query, "\"detail_xl_fp16.safetensors\"");
    assert_eq!(asked[0].options.include_domains, ["civitai.com"]);
    let (lines, _) = plan(&response);
    assert_eq!(
        lines[0],
        "civitai_search: address:https://civitai.com/models/122359/detail-tweaker-xl"
    );
    assert!(
        lines.iter().all(|l| !l.contains("example.com")),
        "{lines:?}"
    );
    assert!(civitai
        .queries()
        .contains(&"address:https://civitai.com/models/122359/detail-tweaker-xl".to_owned()));
}
