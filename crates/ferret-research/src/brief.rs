//! The research brief: what a run looks for, read from the syllabus's agenda. Each top-level
//! module is a theme, the headings under it its sub-themes, and the opening sentence of each
//! module's text a research axis.

use serde::{Deserialize, Serialize};

use crate::{Module, Syllabus};

/// Characters of one research axis, at most.
const MAX_AXIS_CHARS: usize = 200;

/// What a research run looks for, persisted next to the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResearchBrief {
    /// The subject: the syllabus's title.
    pub title: String,
    /// What the course is, when the syllabus says it before its first module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introduction: Option<String>,
    /// The major themes, in the syllabus's order.
    pub themes: Vec<Theme>,
}

/// One major theme of the brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Theme {
    /// Its name, without the module's numbering ("Prompt Engineering").
    pub name: String,
    /// The sub-themes under it.
    #[serde(default)]
    pub sub_themes: Vec<String>,
    /// What to find out about it.
    #[serde(default)]
    pub axes: Vec<String>,
}

impl ResearchBrief {
    /// The brief the syllabus's headings give: a theme per top-level module (the shallowest
    /// heading level after the title), its sub-headings as sub-themes, the first sentence of
    /// each one's text as a research axis.
    pub fn from_syllabus(syllabus: &Syllabus) -> Self {
        let top = syllabus.modules.iter().map(|m| m.level).min();
        let mut themes: Vec<Theme> = Vec::new();
        for module in &syllabus.modules {
            if Some(module.level) == top {
                themes.push(Theme {
                    name: without_numbering(&module.heading),
                    sub_themes: Vec::new(),
                    axes: Vec::new(),
                });
            } else if let Some(theme) = themes.last_mut() {
                theme.sub_themes.push(without_numbering(&module.heading));
            }
            if let (Some(theme), Some(axis)) = (themes.last_mut(), opening_sentence(module)) {
                if !theme.axes.contains(&axis) {
                    theme.axes.push(axis);
                }
            }
        }
        Self {
            title: syllabus
                .title
                .clone()
                .unwrap_or_else(|| "Research note".to_owned()),
            introduction: syllabus.introduction.clone(),
            themes,
        }
    }

    /// The brief as markdown, for the run folder and the reader.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# Research brief: {}\n", self.title);
        if let Some(introduction) = &self.introduction {
            out.push_str(&format!("\n{introduction}\n"));
        }
        for theme in &self.themes {
            out.push_str(&format!("\n## {}\n", theme.name));
            if !theme.sub_themes.is_empty() {
                out.push_str(&format!("\nSub-themes: {}.\n", theme.sub_themes.join("; ")));
            }
            if !theme.axes.is_empty() {
                out.push_str("\nResearch axes:\n\n");
                for axis in &theme.axes {
                    out.push_str(&format!("- {axis}\n"));
                }
            }
        }
        out
    }
}

/// `heading` without a leading "Module 2:", "Week 3 -", "Part IV." or "2." numbering.
pub(crate) fn without_numbering(heading: &str) -> String {
    let heading = heading.trim();
    let mut words = heading.splitn(3, char::is_whitespace);
    let first = words.next().unwrap_or_default();
    let second = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default();
    let is_number = |w: &str| {
        let w = w.trim_end_matches([':', '.', ')', '-']);
        !w.is_empty()
            && (w.chars().all(|c| c.is_ascii_digit())
                || w.chars().all(|c| matches!(c, 'I' | 'V' | 'X' | 'L')))
    };
    let named = [
        "module", "week", "part", "unit", "chapter", "session", "lesson",
    ]
    .iter()
    .any(|n| first.eq_ignore_ascii_case(n));
    let stripped = if named && is_number(second) {
        rest
    } else if is_number(first) && first.len() > first.trim_end_matches([':', '.', ')']).len() {
        heading[first.len()..].trim_start()
    } else {
        heading
    };
    let stripped = stripped.trim_start_matches(['-', ':', '–', '—']).trim();
    if stripped.is_empty() {
        heading.to_owned()
    } else {
        stripped.to_owned()
    }
}

/// The first sentence of `module`'s text, cut to [`MAX_AXIS_CHARS`].
fn opening_sentence(module: &Module) -> Option<String> {
    let text = module.text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '?' | '!')
                && text[i + c.len_utf8()..].starts_with(char::is_whitespace)
        })
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    let sentence = text[..end].trim();
    if sentence.chars().count() <= MAX_AXIS_CHARS {
        return Some(sentence.to_owned());
    }
    let cut: String = sentence.chars().take(MAX_AXIS_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    Some(format!("{cut}…"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_dropped_from_theme_names() {
        for (heading, name) in [
            ("Module 1: Prompt Engineering", "Prompt Engineering"),
            ("Week 3 - Agents", "Agents"),
            ("Part IV. Safety", "Safety"),
            ("2. Retrieval", "Retrieval"),
            ("Readings", "Readings"),
            ("Module 7", "Module 7"),
            ("3D printing", "3D printing"),
        ] {
            assert_eq!(without_numbering(heading), name, "{heading}");
        }
    }

    #[test]
    fn themes_come_from_top_level_modules_and_axes_from_their_opening_sentences() {
        let syllabus = Syllabus::read(
            "# Course\n\nAbout it.\n\n## Module 1: Prompts\n\nHow to write prompts. More.\n\n\
             ### Readings\n\nRead the notes first. Then more.\n\n## Module 2: Agents\n\n\
             Agents plan and act.\n",
        );
        let brief = ResearchBrief::from_syllabus(&syllabus);
        assert_eq!(brief.title, "Course");
        assert_eq!(
            brief.themes,
            vec![
                Theme {
                    name: "Prompts".into(),
                    sub_themes: vec!["Readings".into()],
                    axes: vec![
                        "How to write prompts.".into(),
                        "Read the notes first.".into()
                    ],
                },
                Theme {
                    name: "Agents".into(),
                    sub_themes: vec![],
                    axes: vec!["Agents plan and act.".into()],
                },
            ]
        );
        let markdown = brief.to_markdown();
        assert!(
            markdown.starts_with("# Research brief: Course\n\nAbout it.\n"),
            "{markdown}"
        );
        assert!(
            markdown.contains("\n## Prompts\n\nSub-themes: Readings.\n"),
            "{markdown}"
        );
    }

    #[test]
    fn a_syllabus_without_headings_gives_a_brief_without_themes() {
        let brief = ResearchBrief::from_syllabus(&Syllabus::read("just some text"));
        assert_eq!(brief.title, "Research note");
        assert!(brief.themes.is_empty());
    }
}
