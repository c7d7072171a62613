//! Who writes the research brief: the syllabus's headings ([`HeuristicBriefWriter`]) or a
//! model reading the whole agenda ([`LlmBriefWriter`], falling back to the headings).

use ferret_core::text::one_line;
use ferret_core::StageOutput;
use ferret_llm::{PromptContext, Stage, StageModel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ResearchBrief, Syllabus, Theme};

/// Writes the brief of a research run.
#[async_trait::async_trait]
pub trait BriefWriter: Send + Sync {
    /// The brief for `syllabus`.
    async fn brief(&self, syllabus: &Syllabus) -> StageOutput<ResearchBrief>;
}

/// The brief the syllabus's headings give ([`ResearchBrief::from_syllabus`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicBriefWriter;

#[async_trait::async_trait]
impl BriefWriter for HeuristicBriefWriter {
    async fn brief(&self, syllabus: &Syllabus) -> StageOutput<ResearchBrief> {
        StageOutput::heuristic(ResearchBrief::from_syllabus(syllabus))
    }
}

/// Context of the research brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchBriefContext {
    /// The syllabus's agenda as markdown: title, introduction, each module's heading and text.
    pub syllabus: String,
    /// Characters of it the model reads.
    pub max_chars: usize,
}

/// One theme of the model's brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThemeReply {
    /// A few words, without numbering.
    pub name: String,
    /// The topics under it.
    #[serde(default)]
    pub sub_themes: Vec<String>,
    /// One to four questions or lines of research, one sentence each.
    #[serde(default)]
    pub axes: Vec<String>,
}

/// The model's brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResearchBriefReply {
    /// The course's major themes, in the syllabus's order.
    pub themes: Vec<ThemeReply>,
}

impl PromptContext for ResearchBriefContext {
    const STAGE: Stage = Stage::ResearchBrief;
    const TEMPLATE: &'static str = include_str!("../templates/research_brief.j2");
    type Reply = ResearchBriefReply;
}

/// Characters of the agenda the model reads.
const AGENDA_CHARS: usize = 6000;
/// Themes kept from a reply, at most; sub-themes and axes per theme, at most.
const MAX_THEMES: usize = 12;
const MAX_PER_THEME: usize = 8;
/// Characters of a theme's name, at most: a longer one is a sentence.
const MAX_NAME_CHARS: usize = 120;

impl ResearchBriefContext {
    /// The context of `syllabus`.
    pub fn new(syllabus: &Syllabus) -> Self {
        let mut agenda = String::new();
        if let Some(title) = &syllabus.title {
            agenda.push_str(&format!("# {title}\n"));
        }
        if let Some(introduction) = &syllabus.introduction {
            agenda.push_str(&format!("\n{introduction}\n"));
        }
        for module in &syllabus.modules {
            let level = usize::from(module.level.clamp(2, 6));
            agenda.push_str(&format!("\n{} {}\n", "#".repeat(level), module.heading));
            if !module.text.trim().is_empty() {
                agenda.push_str(&format!("\n{}\n", module.text.trim()));
            }
        }
        Self {
            syllabus: agenda,
            max_chars: AGENDA_CHARS,
        }
    }
}

/// The brief a model writes from the syllabus's agenda; the headings' brief when the model
/// fails or gives no usable theme. The title and introduction are the syllabus's own.
#[derive(Debug, Clone)]
pub struct LlmBriefWriter {
    model: StageModel,
}

impl LlmBriefWriter {
    /// A brief writer asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl BriefWriter for LlmBriefWriter {
    async fn brief(&self, syllabus: &Syllabus) -> StageOutput<ResearchBrief> {
        let from_headings = ResearchBrief::from_syllabus(syllabus);
        if syllabus.modules.is_empty() {
            return StageOutput::heuristic(from_headings);
        }
        let context = ResearchBriefContext::new(syllabus);
        let accept = |reply: ResearchBriefReply| {
            let clean = |items: Vec<String>| -> Vec<String> {
                items
                    .into_iter()
                    .map(|i| one_line(&i))
                    .filter(|i| !i.is_empty())
                    .take(MAX_PER_THEME)
                    .collect()
            };
            let themes: Vec<Theme> = reply
                .themes
                .into_iter()
                .map(|t| Theme {
                    name: one_line(&t.name),
                    sub_themes: clean(t.sub_themes),
                    axes: clean(t.axes),
                })
                .filter(|t| !t.name.is_empty() && t.name.chars().count() <= MAX_NAME_CHARS)
                .take(MAX_THEMES)
                .collect();
            if themes.is_empty() {
                return Err(
                    "themes is empty: give the course's themes, each with a name of a few words"
                        .to_owned(),
                );
            }
            Ok(ResearchBrief {
                themes,
                ..from_headings.clone()
            })
        };
        let fallback = async { StageOutput::heuristic(from_headings.clone()) };
        self.model.run(&context, 700, accept, fallback).await
    }
}
