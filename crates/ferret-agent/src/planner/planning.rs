//! Writing a plan: the heuristic planner and the one that asks a model.

use std::collections::HashSet;

use crate::{PlanReply, PlanningContext};
use async_trait::async_trait;
use ferret_core::text::{one_line, term_set};
use ferret_core::StageOutput;
use ferret_llm::StageModel;
use ferret_plan::{plan_text, without_references};
use ferret_query_intel::{
    BridgeFinder, Complexity, HeuristicDecomposer, HeuristicRewriter, QuestionShape,
};

use super::stages::{PlanRequest, Planner};
use crate::tools::SEARCH_TOOL;

/// The planner without a model. `#E1` searches the question (rewritten for search engines); a
/// complex question adds one search per part the [`HeuristicDecomposer`] finds; a bridge
/// question (one that names a thing and asks about another its document names, as
/// [`BridgeFinder::shape`] decides) adds `#E2 = search[#E1]`, a search for the name the first
/// results lead to. Never more than `max_steps` steps (at least one); previous plans and
/// problems are ignored: the same request gets the same plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicPlanner {
    bridge: BridgeFinder,
}

impl HeuristicPlanner {
    /// A planner reading questions' shapes with `bridge`.
    pub fn new(bridge: BridgeFinder) -> Self {
        Self { bridge }
    }

    /// The plan's text, synchronously.
    pub fn plan_text(&self, request: &PlanRequest<'_>) -> String {
        let tool = request
            .tools
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(SEARCH_TOOL))
            .or(request.tools.first())
            .map_or(SEARCH_TOOL, |t| t.name.as_str());
        let max_steps = request.max_steps.max(1);
        let question = without_references(&one_line(request.question));
        let first = match HeuristicRewriter.rewritten(&question, request.analysis) {
            rewritten if rewritten.trim().is_empty() => question.clone(),
            rewritten => rewritten,
        };
        let mut steps: Vec<(&str, String)> =
            vec![("Find material on the question as a whole.", first.clone())];
        if request.analysis.complexity == Complexity::Complex {
            let mut seen: Vec<HashSet<String>> = vec![term_set(&first)];
            for part in HeuristicDecomposer.sub_queries(
                &question,
                request.analysis,
                max_steps.saturating_sub(1),
            ) {
                let terms = term_set(&part);
                if !terms.is_empty() && !seen.contains(&terms) {
                    seen.push(terms);
                    steps.push((
                        "Find material on one part of the question.",
                        one_line(&part),
                    ));
                }
            }
        } else if self.bridge.shape(&question, request.analysis) == QuestionShape::Bridge {
            steps.push((
                "Follow the name the first results lead to.",
                "#E1".to_owned(),
            ));
        }
        steps.truncate(max_steps);
        let mut text = String::new();
        for (n, (reasoning, argument)) in steps.iter().enumerate() {
            text.push_str(&format!(
                "Plan: {reasoning}\n#E{} = {tool}[{argument}]\n",
                n + 1
            ));
        }
        text
    }
}

#[async_trait]
impl Planner for HeuristicPlanner {
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String> {
        StageOutput::heuristic(self.plan_text(request))
    }
}

/// The planner that asks a model (the lead researcher), falling back to the
/// [`HeuristicPlanner`] when the model fails or answers with no plan.
#[derive(Debug, Clone)]
pub struct LlmPlanner {
    model: StageModel,
    fallback: HeuristicPlanner,
}

impl LlmPlanner {
    /// A planner asking `model`, falling back to `fallback`.
    pub fn new(model: StageModel, fallback: HeuristicPlanner) -> Self {
        Self { model, fallback }
    }
}

#[async_trait]
impl Planner for LlmPlanner {
    async fn plan(&self, request: &PlanRequest<'_>) -> StageOutput<String> {
        let context = PlanningContext {
            question: request.question.to_owned(),
            tools: request.tools.to_vec(),
            max_steps: u32::try_from(request.max_steps).unwrap_or(u32::MAX),
            previous_plan: request.previous_plan.map(str::to_owned),
            problems: request.problems.to_vec(),
        };
        let accept = |reply: PlanReply| plan_text(&reply.plan);
        self.model
            .run(&context, 400, accept, self.fallback.plan(request))
            .await
    }
}

#[cfg(test)]
mod tests {
    use crate::ToolDescription;
    use ferret_query_intel::HeuristicAnalyzer;

    use crate::planner::Plan;

    use super::*;

    fn search_tool() -> Vec<ToolDescription> {
        vec![ToolDescription {
            name: "search".into(),
            description: "searches".into(),
            argument: Some("a query".into()),
        }]
    }

    fn heuristic_plan(question: &str, max_steps: usize) -> Plan {
        let analysis = HeuristicAnalyzer.analysis(question);
        let tools = search_tool();
        let request = PlanRequest {
            question,
            analysis: &analysis,
            tools: &tools,
            max_steps,
            previous_plan: None,
            problems: &[],
        };
        let text = HeuristicPlanner::default().plan_text(&request);
        Plan::parse(&text, &["search"], max_steps).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn the_heuristic_plan_searches_the_question_then_its_parts() {
        let plan = heuristic_plan("What causes volcanic eruptions? How do glaciers form?", 6);
        assert!(plan.steps.len() >= 3, "{plan:?}");
        assert!(plan
            .steps
            .iter()
            .all(|s| s.tool == "search" && s.depends_on.is_empty()));
        assert_eq!(plan.waves().len(), 1, "the parts are independent");
        assert_eq!(
            heuristic_plan("What causes volcanic eruptions? How do glaciers form?", 2)
                .steps
                .len(),
            2
        );
        assert_eq!(heuristic_plan("What is BM25?", 6).steps.len(), 1);
    }

    #[test]
    fn a_bridge_question_follows_the_first_result() {
        let plan = heuristic_plan(
            "In what year was the university where Sergei Aleksandrovich Tokarev was a professor founded?",
            6,
        );
        assert_eq!(plan.steps.len(), 2, "{plan:?}");
        assert_eq!(plan.steps[1].argument, "#E1");
        assert_eq!(plan.waves(), vec![vec![0], vec![1]]);
    }

    #[test]
    fn a_question_cannot_refer_to_a_step() {
        let plan = heuristic_plan("what does #E1 mean\nin #e2 plans", 6);
        assert!(plan.steps[0].depends_on.is_empty(), "{plan:?}");
        assert!(!plan.steps[0].argument.contains('\n'));
    }
}
