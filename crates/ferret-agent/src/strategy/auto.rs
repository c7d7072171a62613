//! The automatic choice: it reads the question, records which strategy it chose and why, and
//! hands the search to that strategy. It searches nothing itself.

use async_trait::async_trait;
use ferret_core::{Strategy, StrategyReason, TraceStep};
use ferret_query_intel::{Analysis, Complexity, QueryType, QuestionShape};

use super::multi_hop::MultiHop;
use super::plan::PlanStrategy;
use super::refine::Refine;
use super::SearchStrategy;
use crate::run::{Ending, SearchRun};

/// Choose per question: an error takes the refine loop, a request for a report on a complex
/// subject is planned, a bridge or a comparison question hops, a simple question takes the
/// refine loop (one search when its results are good).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Auto;

/// Words that ask for a written overview rather than a fact.
const REPORT_WORDS: &[&str] = &[
    "report",
    "overview",
    "survey",
    "summarize",
    "summarise",
    "summary",
    "research",
    "review",
];

/// Does the question ask for a report on a subject with several parts: the planner's job?
fn asks_for_report(question: &str, analysis: &Analysis) -> bool {
    analysis.complexity == Complexity::Complex
        && ferret_core::text::words(question).any(|w| REPORT_WORDS.contains(&w.as_str()))
}

#[async_trait]
impl SearchStrategy for Auto {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        let question = run.question();
        let shape = run.stages.bridge.shape(question, &run.analysis);
        // A pasted log names many things (flags, hosts, a `report-service` folder); none of them
        // makes it a request for a report, nor a hop toward the error's fix.
        let (chosen, reason) = if run.analysis.query_type == QueryType::ErrorDiagnosis {
            (Strategy::Refine, StrategyReason::ErrorQuestion)
        } else if asks_for_report(question, &run.analysis) {
            (Strategy::Plan, StrategyReason::AsksForReport)
        } else {
            match shape {
                QuestionShape::Simple => (Strategy::Refine, StrategyReason::SimpleQuestion),
                QuestionShape::Bridge => (Strategy::MultiHop, StrategyReason::BridgeQuestion),
                QuestionShape::Comparison => {
                    (Strategy::MultiHop, StrategyReason::ComparisonQuestion)
                }
            }
        };
        run.rec.step(TraceStep::Strategy { chosen, reason });
        match chosen {
            Strategy::Plan => PlanStrategy.run(run).await,
            Strategy::MultiHop => MultiHop::run_shape(run, shape).await,
            _ => Refine.run(run).await,
        }
    }
}
