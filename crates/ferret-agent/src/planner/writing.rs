//! Writing the report with a model; the heuristic writer it falls back to is
//! `ferret-synthesis`'s.

use crate::{ReportReply, ReportWritingContext};
use async_trait::async_trait;
use ferret_core::{Report, ReportSection, StageOutput};
use ferret_llm::{PromptSource, StageModel};
use ferret_synthesis::{
    check_citations, report_title, HeuristicReportWriter, ReportRequest, ReportWriter,
};

/// The writer that asks a model. A report is accepted when it has a
/// section with text and cites at least one source; markers that point at no source are
/// dropped. Otherwise, or when the model fails, the heuristic writer writes it.
#[derive(Debug, Clone)]
pub struct LlmReportWriter {
    model: StageModel,
    fallback: HeuristicReportWriter,
}

impl LlmReportWriter {
    /// A writer asking `model`, falling back to `fallback`.
    pub fn new(model: StageModel, fallback: HeuristicReportWriter) -> Self {
        Self { model, fallback }
    }
}

#[async_trait]
impl ReportWriter for LlmReportWriter {
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report> {
        let context = ReportWritingContext {
            question: request.question.to_owned(),
            plan: request.plan.to_owned(),
            sources: PromptSource::numbered(request.evidence),
            feedback: request.feedback.map(str::to_owned),
            brief: request.brief.map(str::to_owned),
        };
        let accept = |reply: ReportReply| {
            let sections: Vec<ReportSection> = reply
                .sections
                .into_iter()
                .map(|s| ReportSection {
                    heading: s.heading.trim().to_owned(),
                    text: s.text.trim().to_owned(),
                })
                .filter(|s| !s.text.is_empty())
                .collect();
            if sections.is_empty() {
                return Err("the report has no section with text".to_owned());
            }
            let joined: Vec<&str> = sections.iter().map(|s| s.text.as_str()).collect();
            let checked = check_citations(&joined.join("\n"), request.evidence);
            if checked.citations.is_empty() {
                return Err(format!(
                    "the report cites none of the {} sources ({} invalid markers)",
                    request.evidence.len(),
                    checked.dropped_markers
                ));
            }
            let title = match reply.title.trim() {
                "" => report_title(request.question),
                title => title.to_owned(),
            };
            Ok(Report { title, sections })
        };
        self.model
            .run(&context, 900, accept, self.fallback.write(request))
            .await
    }
}
