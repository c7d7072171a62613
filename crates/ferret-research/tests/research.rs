//! The research run's rules over stand-ins for the index, the searches and the evaluator: when
//! a rejected note is planned again, and which addresses a plan may fetch.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferret_collection::IngestReport;
use ferret_core::{Hit, StageOutput};
use ferret_knowledge::{Documentalist, DocumentalistError, KnowledgeIndex, KnowledgeRegistry};
use ferret_research::{
    ResearchConfig, ResearchError, ResearchPlanRequest, ResearchPlanner, ResearchToolError,
    ResearchTools, Researcher, Syllabus,
};
use ferret_synthesis::{HeuristicReportWriter, ReportEvaluator, Verdict};

/// An index that takes every file as new.
struct Taking;

#[async_trait::async_trait]
impl KnowledgeIndex for Taking {
    fn name(&self) -> String {
        "test-index".into()
    }

    async fn ingest_file(&self, _path: &Path) -> Result<IngestReport, DocumentalistError> {
        Ok(IngestReport {
            files: 1,
            added: 1,
            ..IngestReport::default()
        })
    }
}

/// Searches that find one page about anything, counting the searches.
#[derive(Default)]
struct OnePage(AtomicUsize);

#[async_trait::async_trait]
impl ResearchTools for OnePage {
    async fn file_search(&self, query: &str, _limit: usize) -> Result<Vec<Hit>, ResearchToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(vec![Hit::new(
            "notes#0",
            "Agents",
            format!("{query}: an agent plans, then calls tools."),
            1.0,
            "local",
        )])
    }

    fn searches_web(&self) -> bool {
        false
    }

    async fn web_search(
        &self,
        _: &str,
        _: Option<&str>,
        _: usize,
    ) -> Result<Vec<Hit>, ResearchToolError> {
        Err(ResearchToolError::NothingToSearch {
            what: "no web here".into(),
        })
    }
}

/// Rejects every note.
struct Never;

#[async_trait::async_trait]
impl ReportEvaluator for Never {
    async fn evaluate(&self, _question: &str, _report: &str) -> StageOutput<Verdict> {
        StageOutput::heuristic(Verdict {
            acceptable: false,
            feedback: "Say more.".into(),
        })
    }
}

/// Plans what it is given.
struct Scripted(String);

#[async_trait::async_trait]
impl ResearchPlanner for Scripted {
    async fn plan(&self, _request: &ResearchPlanRequest<'_>) -> StageOutput<String> {
        StageOutput::heuristic(self.0.clone())
    }
}

const SYLLABUS: &str = "# Agents course\n\n## Module 1: Agents\n\nAgents plan and act.\n\n\
## References\n\n- https://a.example/agents.md\n";

fn researcher(dir: &Path, tools: Arc<OnePage>) -> Researcher {
    let documentalist = Documentalist::new(KnowledgeRegistry::beside(dir), Arc::new(Taking));
    Researcher::new(
        tools,
        Arc::new(documentalist),
        Arc::new(HeuristicReportWriter::default()),
        ResearchConfig::default(),
    )
}

#[tokio::test]
async fn a_rejected_note_planned_again_into_the_same_plan_is_not_searched_again() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(OnePage::default());
    let researcher = researcher(dir.path(), tools.clone()).with_evaluator(Arc::new(Never));
    let record = researcher
        .research(&Syllabus::read(SYLLABUS))
        .await
        .unwrap()
        .record;
    assert!(record.earlier.is_empty(), "{:?}", record.earlier);
    assert_eq!(record.run.verdicts.len(), 1);
    assert!(!record.run.verdicts[0].acceptable);
    assert_eq!(tools.0.load(Ordering::SeqCst), 1, "one round of searches");
    assert_eq!(record.calls, 1);
    assert!(record.report.contains("## Agents"), "{}", record.report);
}

#[tokio::test]
async fn a_plan_may_fetch_a_listed_address_however_written_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let plan = "#E0 = Documentalist[vector_store=\"Agents course\"]\n\
        #E1 = Documentalist[url=\"HTTPS://A.EXAMPLE/agents.md#planning\", vector_store=#E0]\n\
        #E2 = Documentalist[url=\"https://a.example/other.md\", vector_store=#E1]\n\
        #E3 = FileSearch[\"agents\", vector_store=#E2]";
    let researcher =
        researcher(dir.path(), Arc::default()).with_planner(Arc::new(Scripted(plan.into())));
    let record = researcher
        .research(&Syllabus::read(SYLLABUS))
        .await
        .unwrap()
        .record;
    let error = |variable: &str| {
        record
            .run
            .steps
            .iter()
            .find(|s| s.variable == variable)
            .and_then(|s| s.error.clone())
            .unwrap_or_default()
    };
    // The listed page is asked for (and fails here only for want of a fetcher).
    assert!(
        error("E1").contains("fetching is not set up"),
        "{}",
        error("E1")
    );
    assert_eq!(
        error("E2"),
        "https://a.example/other.md is not listed in the syllabus's References: only those are fetched"
    );
    // The knowledge base is still searched.
    assert_eq!(error("E3"), "");
}

#[tokio::test]
async fn an_unreadable_registry_stops_the_run_with_an_error_worth_retrying() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(KnowledgeRegistry::FILE_NAME), "not json").unwrap();
    let error = researcher(dir.path(), Arc::default())
        .research(&Syllabus::read(SYLLABUS))
        .await
        .err()
        .unwrap();
    assert!(matches!(error, ResearchError::Registry(_)), "{error}");
    assert!(error.is_retryable());
    assert!(error.to_string().contains("registry"), "{error}");
}
