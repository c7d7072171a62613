//! The report writer without a model: the extractive answer to each step's query, one section
//! a step.

use std::collections::HashSet;

use async_trait::async_trait;
use ferret_core::text::{cut, term_set, CutMark};
use ferret_core::{Hit, Report, ReportSection, StageOutput};
use ferret_grading::{heuristic_relevance, GradingConfig};

use super::map_markers;
use super::stages::{ReportRequest, ReportWriter, StepEvidence};
use crate::ExtractiveSynthesizer;

/// Longest section heading, in characters.
const MAX_HEADING_CHARS: usize = 80;

/// The writer without a model: one section per step that found evidence, in plan order, headed
/// by the step's query ("Overview" for the question itself), its text the
/// [`ExtractiveSynthesizer`]'s answer to that query from the step's hits. A hit one section
/// cites is left to it, so sections do not repeat each other: focused steps choose first, a
/// search of the whole question gets what they left, and a step left with nothing gets no
/// section. A section cites only the hits a grader would keep for its query. Feedback is ignored.
#[derive(Debug, Clone, Default)]
pub struct HeuristicReportWriter {
    synthesizer: ExtractiveSynthesizer,
    grading: GradingConfig,
}

impl HeuristicReportWriter {
    /// A writer picking sentences with `synthesizer` from the hits a grader with `grading` keeps.
    pub fn new(synthesizer: ExtractiveSynthesizer, grading: GradingConfig) -> Self {
        Self {
            synthesizer,
            grading,
        }
    }

    /// The report, synchronously.
    pub fn report(&self, request: &ReportRequest<'_>) -> Report {
        let question_terms = term_set(request.question);
        let is_overview = |step: &StepEvidence| {
            let terms = term_set(&step.query);
            !terms.is_empty() && terms == question_terms
        };
        // Focused steps choose first: a search of the whole question finds a bit of everything,
        // and its section keeps what the others left.
        let mut order: Vec<usize> = (0..request.steps.len()).collect();
        order.sort_by_key(|&i| is_overview(&request.steps[i]));
        let mut cited: HashSet<usize> = HashSet::new();
        let mut sections: Vec<(usize, ReportSection)> = Vec::new();
        for i in order {
            let step = &request.steps[i];
            let mut positions: Vec<usize> = step
                .hits
                .iter()
                .copied()
                .filter(|p| *p < request.evidence.len() && !cited.contains(p))
                .collect();
            // A search also finds results that merely share a word with its query: a section
            // cites only those a grader would keep.
            let found: Vec<Hit> = positions
                .iter()
                .map(|&p| request.evidence[p].clone())
                .collect();
            let judged = heuristic_relevance(&step.query, &found);
            positions = positions
                .into_iter()
                .zip(judged)
                .filter(|(_, j)| self.grading.is_kept(j.relevance))
                .map(|(p, _)| p)
                .collect();
            if positions.is_empty() {
                continue;
            }
            let hits: Vec<Hit> = positions
                .iter()
                .map(|&p| request.evidence[p].clone())
                .collect();
            let answer = self.synthesizer.answer(&step.query, &hits);
            if answer.text.trim().is_empty() {
                continue;
            }
            // The answer's markers number its citations; each becomes the hit's evidence position.
            let position_of = |marker: usize| -> Option<usize> {
                let id = &answer.citations.get(marker.checked_sub(1)?)?.hit_id;
                hits.iter().position(|h| &h.id == id).map(|i| positions[i])
            };
            let text = map_markers(&answer.text, |marker| position_of(marker).map(|p| p + 1));
            cited.extend((1..=answer.citations.len()).filter_map(position_of));
            let heading = if is_overview(step) {
                "Overview".to_owned()
            } else {
                capitalized(&cut(&step.query, MAX_HEADING_CHARS, CutMark::Ellipsis))
            };
            sections.push((i, ReportSection { heading, text }));
        }
        sections.sort_by_key(|(i, _)| *i);
        let sections = sections.into_iter().map(|(_, section)| section).collect();
        Report {
            title: super::report_title(request.question),
            sections,
        }
    }
}

#[async_trait]
impl ReportWriter for HeuristicReportWriter {
    async fn write(&self, request: &ReportRequest<'_>) -> StageOutput<Report> {
        StageOutput::heuristic(self.report(request))
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn hit(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "b")
    }

    #[test]
    fn the_heuristic_writer_gives_each_step_a_section_citing_evidence_positions() {
        let evidence = [
            hit(
                "v",
                "Volcano",
                "Volcanic eruptions are caused by magma rising through the crust.",
            ),
            hit(
                "g",
                "Glacier",
                "Glaciers form where snow accumulates faster than it melts.",
            ),
            hit(
                "x",
                "Ash",
                "Volcanic ash from eruptions can darken glaciers.",
            ),
            hit(
                "s",
                "Five Summer Stories",
                "A surf film, its premiere an eruption of cheers.",
            ),
        ];
        let step = |variable: &str, query: &str, hits: Vec<usize>| StepEvidence {
            variable: variable.into(),
            tool: "search".into(),
            query: query.into(),
            reasoning: None,
            hits,
        };
        let steps = [
            step("E1", "volcanic eruptions glaciers", vec![0, 1, 2, 3]),
            step("E2", "glaciers form", vec![1]),
            step("E3", "causes of volcanic eruptions", vec![0]),
        ];
        let request = ReportRequest {
            question: "volcanic eruptions glaciers",
            plan: "",
            steps: &steps,
            evidence: &evidence,
            feedback: None,
            brief: None,
        };
        let report = HeuristicReportWriter::default().report(&request);
        let sections: Vec<(&str, &str)> = report
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.text.as_str()))
            .collect();
        // The focused steps chose first; the overview keeps what they left that is relevant (not
        // the film sharing one word), and comes first.
        assert_eq!(
            sections,
            [
                (
                    "Overview",
                    "Volcanic ash from eruptions can darken glaciers [3]."
                ),
                (
                    "Glaciers form",
                    "Glaciers form where snow accumulates faster than it melts [2]."
                ),
                (
                    "Causes of volcanic eruptions",
                    "Volcanic eruptions are caused by magma rising through the crust [1]."
                ),
            ]
        );
        // A step whose hits were all cited by another gets no section.
        let repeated = [
            step("E1", "glaciers form", vec![1]),
            step("E2", "glaciers", vec![1]),
        ];
        let report = HeuristicReportWriter::default().report(&ReportRequest {
            steps: &repeated,
            ..request
        });
        assert_eq!(report.sections.len(), 1, "{report:?}");
    }

    #[test]
    fn headings_start_with_a_capital() {
        assert_eq!(capitalized("élan"), "Élan");
    }
}
