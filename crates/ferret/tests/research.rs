//! Research from the fixture syllabus over a real embedded index, pages served by a local mock
//! server and a scripted web engine: what is classified, ingested, searched and written, and
//! the replay that calls nothing.

use std::sync::Arc;

use ferret::backends::QueryForm;
use ferret::fetch::{AllowedTarget, FetchConfig, Fetcher, RobotsPolicy};
use ferret::jobs::research::{ResearchConfig, ResearchRecord, Researcher, Syllabus, Target};
use ferret::jobs::search::{Implementation, RetrievalMode};
use ferret::knowledge::{ExtractiveDescriber, Given, KnowledgeSource};
use ferret::models::{Exchange, LanguageModel, ScriptedModel};
use ferret::record::RecordedVerdict;
use ferret::{Budget, Ferret, Hit};
use ferret_test_support::ScriptedBackend;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

const SYLLABUS: &str = include_str!("../../../fixtures/research/syllabus/course.md");

/// The References addresses the mock server stands in for: `https://HOST/PATH` is served at
/// `MOCK/HOST/PATH`.
const SERVED: [(&str, &str, &str); 3] = [
    (
        "https://huyenchip.com/2025/01/07/agents.html",
        "text/html",
        "<html><head><title>Agents</title><script>track()</script></head><body>\
         <nav>Home | Blog</nav><main><h1>Agents</h1>\
         <p>An agent plans, calls tools and observes the results before its next step.</p>\
         <p>Planning failures are the most common reason agents fail on long tasks.</p>\
         </main></body></html>",
    ),
    (
        "https://www.promptingguide.ai/introduction/basics.md",
        "text/markdown",
        "# Prompting basics\n\nA few-shot prompt shows the model worked examples before the \
         task. Zero-shot prompting gives only the instruction.\n",
    ),
    (
        "https://react-lm.github.io/",
        "text/html",
        "<html><head><title>ReAct</title></head><body><main><h1>ReAct</h1>\
         <p>ReAct interleaves reasoning traces and tool actions so that agents can plan \
         and act.</p></main></body></html>",
    ),
];

fn web_page(id: &str, title: &str, text: &str) -> Hit {
    let mut hit = Hit::new(id, title, text, 1.0, "web");
    hit.url = Some(format!("https://{id}"));
    hit
}

/// The fixture course: its pages served, its notes in a fresh index, a scripted web engine.
struct Course {
    // Dropped first: the index flushes into `dir` as it closes.
    ferret: Ferret,
    web: Arc<ScriptedBackend>,
    syllabus: String,
    site: MockServer,
    dir: tempfile::TempDir,
}

impl Course {
    fn researcher(&self) -> Researcher {
        let fetch = FetchConfig {
            allow: vec![AllowedTarget::Host("127.0.0.1".into())],
            robots: RobotsPolicy::Ignore,
            ..FetchConfig::default()
        };
        // Pages are described from their text: the scripted model answers the run's stages.
        let documentalist = self
            .ferret
            .documentalist()
            .unwrap()
            .with_describer(Arc::new(ExtractiveDescriber::default()))
            .with_fetcher(
                Fetcher::new(fetch).unwrap(),
                self.dir.path().join("fetched"),
            );
        self.ferret
            .researcher(documentalist, ResearchConfig::default(), &Budget::default())
    }
}

/// The course, searched with the model `model` makes for the mock server's address, if any.
async fn course(model: impl FnOnce(&str) -> Option<Arc<dyn LanguageModel>>) -> Course {
    let site = MockServer::start().await;
    let mut syllabus = SYLLABUS.to_owned();
    for (address, content_type, body) in SERVED {
        let served = address.replacen("https://", &format!("{}/", site.uri()), 1);
        Mock::given(path(served.trim_start_matches(&site.uri()).to_owned()))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
            .mount(&site)
            .await;
        syllabus = syllabus.replace(address, &served);
    }
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    ferret::index::LocalIndex::open_or_create_with(&index, None).unwrap();
    let web = Arc::new(
        ScriptedBackend::new(
            "web",
            vec![
                web_page(
                    "python.langchain.com/rag",
                    "Build a RAG app",
                    "Retrieval augmented generation loads, splits and indexes documents before answering.",
                ),
                web_page(
                    "www.pinecone.io/rag",
                    "What is RAG?",
                    "Retrieval augmented generation grounds a model's answer in retrieved passages.",
                ),
            ],
        )
        .query_form(QueryForm::Web),
    );
    let mut builder = Ferret::builder()
        .local_index(&index)
        .retrieval(RetrievalMode::Bm25)
        .backend(web.clone());
    if let Some(model) = model(&site.uri()) {
        builder = builder.language_model(model);
    }
    let ferret = builder.build().unwrap();

    // The knowledge base already holds the course notes the syllabus names.
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    for (name, text) in [
        (
            "Prompt_Engineering_for_Developers.txt",
            "Prompt engineering for developers: state the task, give the format, and show worked examples in few-shot prompts.",
        ),
        (
            "03_Adversarial_Attacks_on_LLMs.md",
            "# Adversarial attacks on LLMs\n\nPrompt injection hides instructions in retrieved text; jailbreaks talk a model out of its safety rules.\n",
        ),
    ] {
        std::fs::write(notes.join(name), text).unwrap();
        ferret
            .documentalist()
            .unwrap()
            .with_describer(Arc::new(ExtractiveDescriber::default()))
            .add(KnowledgeSource::File(notes.join(name)), Given::default())
            .await
            .unwrap();
    }
    Course {
        site,
        dir,
        syllabus,
        web,
        ferret,
    }
}

#[tokio::test]
async fn a_syllabus_is_researched_over_the_knowledge_base_and_the_web_and_replayed_without_calls() {
    let course = course(|_| None).await;
    let Course {
        site,
        dir,
        syllabus: syllabus_text,
        web,
        ferret,
    } = &course;
    let researcher = course.researcher();
    let syllabus = Syllabus::read(syllabus_text);
    let outcome = researcher.research(&syllabus).await.unwrap();
    let record = &outcome.record;

    let c = &record.classification;
    let targets = |refs: &[ferret::jobs::research::Reference]| -> Vec<String> {
        refs.iter()
            .map(|r| match &r.target {
                Target::Url(url) => url
                    .as_str()
                    .replace(&format!("{}/", site.uri()), "https://"),
                Target::File(name) => name.clone(),
            })
            .collect()
    };
    assert_eq!(
        targets(&c.known),
        [
            "Prompt_Engineering_for_Developers.txt",
            "03_Adversarial_Attacks_on_LLMs.md"
        ]
    );
    assert_eq!(
        targets(&c.to_ingest),
        SERVED.map(|(address, _, _)| address.to_owned())
    );
    assert_eq!(c.ephemeral.len(), 2);
    assert_eq!(targets(&c.missing_files), ["09_Missing_Notes.md"]);
    assert_eq!(c.not_text.len(), 1);

    // The plan, as the planner wrote it (the mock server's address put back).
    insta::assert_snapshot!(record
        .run
        .plan
        .replace(&format!("{}/", site.uri()), "https://"));

    for step in &record.run.steps {
        assert_eq!(step.error, None, "#{} {}", step.variable, step.tool);
    }
    let registry = ferret.documentalist().unwrap();
    let entries = registry.registry().entries().unwrap();
    assert_eq!(entries.len(), 5, "two notes and three pages");
    let agents = registry
        .registry()
        .find_by_url(&format!(
            "{}/huyenchip.com/2025/01/07/agents.html",
            site.uri()
        ))
        .unwrap()
        .unwrap();
    assert_eq!(agents.title.as_deref(), Some("Agents"));
    assert_eq!(agents.summary, "Chip Huyen on agents and planning.");
    assert_eq!(agents.keywords, ["agents", "planning"]);

    // Each ephemeral link's search kept to its site.
    let sites: Vec<Vec<String>> = web
        .requests()
        .iter()
        .map(|r| r.options.include_domains.clone())
        .collect();
    assert_eq!(
        sites,
        [
            vec!["python.langchain.com".to_owned()],
            vec!["www.pinecone.io".to_owned()]
        ]
    );

    let report = &record.report;
    assert!(
        report.starts_with("# Research note: AI Engineer Basic Course\n"),
        "{report}"
    );
    for theme in ["## Prompt Engineering", "## Agents", "## References"] {
        assert!(report.contains(theme), "{theme} in {report}");
    }
    assert!(
        report.contains("ReAct interleaves reasoning traces"),
        "{report}"
    );

    // Saved and replayed: the same note, and nothing called.
    let run = dir.path().join("run");
    record.save(&run, syllabus_text).unwrap();
    let calls = web.calls();
    let fetched = site.received_requests().await.unwrap().len();
    let replayed = Researcher::replay(&ResearchRecord::load(&run).unwrap()).await;
    assert_eq!(&replayed, report);
    assert_eq!(web.calls(), calls);
    assert_eq!(site.received_requests().await.unwrap().len(), fetched);
    for file in [
        "syllabus.md",
        "classification.json",
        "brief.json",
        "brief.md",
        "plan.txt",
        "record.json",
        "report.md",
    ] {
        assert!(run.join(file).is_file(), "{file}");
    }
}

fn exchange(expect: &str, reply: &str) -> Exchange {
    Exchange {
        expect_contains: Some(expect.to_owned()),
        reply: reply.to_owned(),
    }
}

#[tokio::test]
async fn a_models_plan_is_checked_kept_to_the_syllabus_and_replanned_when_the_note_is_rejected() {
    // The model's plans: one with an empty search (sent back), one in the XML form that also
    // asks for a page the syllabus does not list, then after the evaluator's feedback a plan
    // in lines.
    let agents = SERVED[0].0.replacen("https://", "MOCK/", 1);
    let xml_plan = format!(
        r#"{{"plan": "<plan>\n<step id=\"E0\" tool=\"Documentalist\"><arg name=\"vector_store\">AI Engineer Basic Course</arg></step>\n<step id=\"E1\" tool=\"Documentalist\" reason=\"A page the model found somewhere\"><arg name=\"url\">https://attacker.example/notes.html</arg><arg name=\"vector_store\">#E0</arg></step>\n<step id=\"E2\" tool=\"Documentalist\"><arg name=\"url\">{agents}</arg><arg name=\"name\">Agents</arg><arg name=\"keywords\"><item>agents</item></arg><arg name=\"vector_store\">#E1</arg></step>\n<step id=\"E3\" tool=\"FileSearch\"><arg>agents plan tools</arg><arg name=\"vector_store\">#E2</arg></step>\n</plan>"}}"#
    );
    let script = |uri: &str| {
        vec![
            exchange(
                "Syllabus:",
                r#"{"themes": [{"name": "Agents", "sub_themes": ["planning", "tools"], "axes": ["How does an agent choose its next tool?"]}, {"name": "Safety", "axes": ["How are prompt injections defended against?"]}]}"#,
            ),
            exchange(
                "References to ingest",
                r##"{"plan": "#E0 = Documentalist[vector_store=\"AI Engineer Basic Course\"]\n#E1 = FileSearch[vector_store=#E0]"}"##,
            ),
            exchange("What is wrong with it", &xml_plan.replace("MOCK", uri)),
            exchange(
                "Research note",
                r#"{"title": "Agents", "sections": [{"heading": "Agents", "text": "An agent plans, calls tools and observes the results [1]."}]}"#,
            ),
            exchange(
                "Research note",
                r#"{"acceptable": false, "feedback": "Cover the safety module too."}"#,
            ),
            exchange(
                "Cover the safety module too.",
                r##"{"plan": "#E0 = Documentalist[vector_store=\"AI Engineer Basic Course\"]\n#E1 = FileSearch[\"prompt injection jailbreaks\", vector_store=#E0]\n#E2 = FileSearch[\"agents plan tools\", vector_store=#E0]"}"##,
            ),
            exchange(
                "Research note",
                r#"{"title": "Agents and safety", "sections": [{"heading": "Safety", "text": "Prompt injection hides instructions in retrieved text [1]."}, {"heading": "Agents", "text": "An agent plans, calls tools and observes the results [2]."}]}"#,
            ),
            exchange("Research note", r#"{"acceptable": true, "feedback": ""}"#),
        ]
    };
    let course = course(|uri| {
        Some(Arc::new(ScriptedModel::new("scripted", script(uri))) as Arc<dyn LanguageModel>)
    })
    .await;
    let researcher = course.researcher();
    let outcome = researcher
        .research(&Syllabus::read(&course.syllabus))
        .await
        .unwrap();
    let record = &outcome.record;

    // The empty search was sent back once with what is wrong, and the XML plan ran.
    let first = &record.earlier[0];
    assert!(
        first.problems[0].contains("FileSearch"),
        "{:?}",
        first.problems
    );
    let refused = first.steps.iter().find(|s| s.variable == "E1").unwrap();
    assert_eq!(
        refused.error.as_deref(),
        Some("https://attacker.example/notes.html is not listed in the syllabus's References: only those are fetched")
    );
    let added = first.steps.iter().find(|s| s.variable == "E2").unwrap();
    assert_eq!(added.error, None);
    assert_eq!(
        first.verdicts,
        [RecordedVerdict {
            subject: "report".into(),
            acceptable: false,
            feedback: "Cover the safety module too.".into()
        }]
    );

    // The second plan ran after the feedback, and its note was accepted.
    assert!(
        record.run.plan.contains("prompt injection jailbreaks"),
        "{}",
        record.run.plan
    );
    assert_eq!(record.run.verdicts.len(), 2);
    assert!(record.run.verdicts[1].acceptable);
    assert!(matches!(record.planned_by, Implementation::Llm { .. }));
    assert!(matches!(record.written_by, Implementation::Llm { .. }));
    assert_eq!(record.model_calls, 8);
    // The model's brief, with the syllabus's own title.
    assert!(matches!(record.briefed_by, Implementation::Llm { .. }));
    let themes: Vec<&str> = record
        .brief
        .themes
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(themes, ["Agents", "Safety"]);
    assert_eq!(record.brief.title, "AI Engineer Basic Course");
    let report = &record.report;
    assert!(
        report.contains("## Safety") && report.contains("## References"),
        "{report}"
    );

    // The replay gives the model's note back without asking it.
    assert_eq!(&Researcher::replay(record).await, report);
}
