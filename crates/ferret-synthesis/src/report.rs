//! Reports: the stages that write and judge them ([`ReportWriter`], [`ReportEvaluator`], the
//! [`HeuristicReportWriter`] that needs no model), and the report as the user reads it: markers
//! checked against the evidence and renumbered across sections, rendered as markdown with a
//! reference list. A planned search's report and a research run's note are both written here.

use crate::{check_citations, Answer};
use ferret_core::text::{cut, one_line, CutMark};
use ferret_core::{Citation, Hit, Report, ReportSection};

mod heuristic;
mod stages;

pub use heuristic::HeuristicReportWriter;
pub use stages::{ReportEvaluator, ReportRequest, ReportWriter, StepEvidence, Verdict};

/// Longest report title, in characters.
const MAX_TITLE_CHARS: usize = 160;

/// The title of a report on `question` when its writer gave none: the question on one line,
/// cut to a title's length.
pub fn report_title(question: &str) -> String {
    cut(&one_line(question), MAX_TITLE_CHARS, CutMark::Ellipsis)
}

/// Separates sections while their markers are checked together; never in a section's text.
const SECTION_BREAK: char = '\u{1e}';

/// The report with its markers checked against `evidence` and renumbered in order of first use
/// across all sections, and the answer rendering it as markdown with its reference list; `None`
/// when no section is left with text.
pub fn finalize_report(report: Report, evidence: &[Hit]) -> Option<(Report, Answer)> {
    let (headings, texts): (Vec<String>, Vec<String>) = report
        .sections
        .into_iter()
        .map(|s| (plain(&s.heading), s.text.replace(SECTION_BREAK, " ")))
        .filter(|(_, text)| !text.trim().is_empty())
        .unzip();
    if texts.is_empty() {
        return None;
    }
    let checked = check_citations(&texts.join(&format!("\n{SECTION_BREAK}\n")), evidence);
    let sections: Vec<ReportSection> = headings
        .into_iter()
        .zip(checked.text.split(SECTION_BREAK))
        .map(|(heading, text)| ReportSection {
            heading,
            text: text.trim().to_owned(),
        })
        .filter(|s| !s.text.is_empty())
        .collect();
    if sections.is_empty() {
        return None;
    }
    let title = match plain(&report.title) {
        title if title.is_empty() => "Report".to_owned(),
        title => title,
    };
    let report = Report { title, sections };
    let text = render_markdown(&report, &checked.citations);
    let answer = Answer {
        text,
        citations: checked.citations,
        short: None,
        sentences: checked.sentences,
        dropped_markers: checked.dropped_markers,
    };
    Some((report, answer))
}

/// `# title`, a `## heading` and its text per section, then `## References`: `- [n] title (url)`.
fn render_markdown(report: &Report, citations: &[Citation]) -> String {
    let mut out = format!("# {}\n", report.title);
    for section in &report.sections {
        out.push_str(&format!("\n## {}\n\n{}\n", section.heading, section.text));
    }
    if !citations.is_empty() {
        out.push_str("\n## References\n\n");
        for citation in citations {
            out.push_str(&format!(
                "- [{}] {}",
                citation.marker,
                plain(&citation.title)
            ));
            if let Some(url) = &citation.url {
                out.push_str(&format!(" ({})", plain(url)));
            }
            out.push('\n');
        }
    }
    out
}

/// Each citation marker of `text` (`[n]`, `[n, m]`) with `map` applied to its numbers; numbers
/// `map` rejects are dropped, and a marker left empty goes. Other brackets stay as they are.
fn map_markers(text: &str, map: impl Fn(usize) -> Option<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let body = after
            .find(']')
            .map(|close| &after[..close])
            .filter(|body| is_marker_body(body));
        match body {
            Some(body) => {
                let numbers: Vec<String> = body
                    .split(',')
                    .filter_map(|n| n.trim().parse::<usize>().ok())
                    .filter_map(&map)
                    .map(|n| n.to_string())
                    .collect();
                if !numbers.is_empty() {
                    out.push_str(&format!("[{}]", numbers.join(", ")));
                }
                rest = &after[body.len() + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_marker_body(body: &str) -> bool {
    body.split(',').all(|n| {
        let n = n.trim();
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Text for a heading, a title or a reference: one line, no leading `#`, and square brackets
/// made round so that nothing in it reads as a citation marker.
fn plain(text: &str) -> String {
    one_line(text)
        .trim_start_matches('#')
        .trim()
        .replace('[', "(")
        .replace(']', ")")
}

#[cfg(test)]
mod tests {

    use super::*;

    fn hit(id: &str, title: &str, text: &str) -> Hit {
        Hit::new(id, title, text, 1.0, "b")
    }

    #[test]
    fn markers_are_mapped_and_other_brackets_kept() {
        let map = |n: usize| (n <= 2).then_some(n + 10);
        assert_eq!(
            map_markers("a [1]. b [2, 3] c [x] d [] e [3]", map),
            "a [11]. b [12] c [x] d [] e "
        );
        assert_eq!(map_markers("[", map), "[");
    }

    #[test]
    fn finalize_renumbers_across_sections_and_lists_references() {
        let evidence = [
            hit("a", "Alpha [draft]", "a"),
            hit("b", "Beta", "b"),
            hit("c", "Gamma", "c"),
        ];
        let report = Report {
            title: "# Q [1]".into(),
            sections: vec![
                ReportSection {
                    heading: "One".into(),
                    text: "First [3]. Second [9].".into(),
                },
                ReportSection {
                    heading: "Two [2]".into(),
                    text: "Third [1][3].".into(),
                },
                ReportSection {
                    heading: "Empty".into(),
                    text: "[7]".into(),
                },
            ],
        };
        let (report, answer) = finalize_report(report, &evidence).unwrap();
        assert_eq!(report.title, "Q (1)");
        assert_eq!(report.sections.len(), 2, "{report:?}");
        assert_eq!(report.sections[0].text, "First [1]. Second.");
        assert_eq!(report.sections[1].heading, "Two (2)");
        assert_eq!(report.sections[1].text, "Third [2][1].");
        let ids: Vec<&str> = answer
            .citations
            .iter()
            .map(|c| c.hit_id.0.as_str())
            .collect();
        assert_eq!(ids, ["c", "a"]);
        assert_eq!(answer.dropped_markers, 2);
        assert!(
            answer
                .text
                .starts_with("# Q (1)\n\n## One\n\nFirst [1]. Second.\n"),
            "{}",
            answer.text
        );
        assert!(
            answer
                .text
                .ends_with("## References\n\n- [1] Gamma\n- [2] Alpha (draft)\n"),
            "{}",
            answer.text
        );
    }
}
