//! Planning the searches for a model file: which hub to ask, with which query. The heuristic
//! plan searches every configured hub for the name's variants; the model's plan follows the
//! strategy prompt's `{tool, query}` steps, checked before anything runs.

use async_trait::async_trait;
use ferret_core::{FileRequest, ModelSource, StageOutput};
use ferret_llm::StageModel;

use super::names::{civitai_queries, huggingface_fragments, ModelFamilies};
use crate::prompts::{ModelSearchPlanningContext, SearchToolDescription};

/// Most searches one file's plan runs.
pub const MAX_FIND_STEPS: usize = 8;
/// Most searches the heuristic plan sends one hub for a name.
const QUERIES_PER_HUB: usize = 3;
/// Longest query a plan step may send.
const MAX_QUERY_CHARS: usize = 100;

/// One planned search: a hub and a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindStep {
    /// The hub searched.
    pub source: ModelSource,
    /// What is searched for: a name, or `sha256:<hex>` for a lookup by hash.
    pub query: String,
}

impl FindStep {
    /// The step as the plan prompt writes it: `civitai_search: query`.
    pub fn line(&self) -> String {
        format!("{}: {}", tool_name(self.source), self.query)
    }
}

/// The name the plan prompt gives the tool searching `source`.
pub fn tool_name(source: ModelSource) -> String {
    format!("{}_search", source.as_str())
}

/// Plans the searches for a file, given the hubs that are configured.
#[async_trait]
pub trait ModelSearchPlanner: Send + Sync {
    /// The steps, most promising first; only for `sources`.
    async fn plan(
        &self,
        request: &FileRequest,
        sources: &[ModelSource],
    ) -> StageOutput<Vec<FindStep>>;
}

/// Each configured hub searched in the terms it can answer: Civitai by the words of model
/// names, the Hub by fragments of repository ids, as the names' words and families give them.
#[derive(Debug, Clone, Default)]
pub struct HeuristicModelSearchPlanner {
    families: ModelFamilies,
}

impl HeuristicModelSearchPlanner {
    /// A planner recognising `families` in file names.
    pub fn new(families: ModelFamilies) -> Self {
        Self { families }
    }

    /// The plan, alternating between the hubs, the preferred hub's step first.
    pub fn steps(&self, request: &FileRequest, sources: &[ModelSource]) -> Vec<FindStep> {
        let mut ordered = sources.to_vec();
        ordered.sort_by_key(|s| Some(*s) != request.prefer);
        let per_hub: Vec<(ModelSource, Vec<String>)> = ordered
            .into_iter()
            .map(|source| {
                let mut queries = match source {
                    ModelSource::Civitai => civitai_queries(&request.file_name, &self.families),
                    ModelSource::HuggingFace => {
                        huggingface_fragments(&request.file_name, &self.families)
                    }
                };
                queries.truncate(QUERIES_PER_HUB);
                (source, queries)
            })
            .collect();
        let mut steps = Vec::new();
        for round in 0..QUERIES_PER_HUB {
            for (source, queries) in &per_hub {
                if let Some(query) = queries.get(round) {
                    steps.push(FindStep {
                        source: *source,
                        query: query.clone(),
                    });
                }
            }
        }
        steps.truncate(MAX_FIND_STEPS);
        steps
    }
}

#[async_trait]
impl ModelSearchPlanner for HeuristicModelSearchPlanner {
    async fn plan(
        &self,
        request: &FileRequest,
        sources: &[ModelSource],
    ) -> StageOutput<Vec<FindStep>> {
        StageOutput::heuristic(self.steps(request, sources))
    }
}

/// The plan a model writes with the strategy prompt; a plan naming no configured hub, or with
/// an empty, overlong or address-like query, falls back to the heuristic plan.
#[derive(Debug, Clone)]
pub struct LlmModelSearchPlanner {
    model: StageModel,
    fallback: HeuristicModelSearchPlanner,
}

impl LlmModelSearchPlanner {
    /// A planner asking `model`, falling back to `fallback`'s plan.
    pub fn new(model: StageModel, fallback: HeuristicModelSearchPlanner) -> Self {
        Self { model, fallback }
    }
}

#[async_trait]
impl ModelSearchPlanner for LlmModelSearchPlanner {
    async fn plan(
        &self,
        request: &FileRequest,
        sources: &[ModelSource],
    ) -> StageOutput<Vec<FindStep>> {
        let context = ModelSearchPlanningContext {
            model_name: request.file_name.clone(),
            context: request_context(request),
            tools: sources
                .iter()
                .map(|&source| SearchToolDescription {
                    name: tool_name(source),
                    description: match source {
                        ModelSource::Civitai => {
                            "searches Civitai's models (checkpoints, LoRAs, VAEs, ControlNets, embeddings, upscalers) by the words of their names, never by file name: a few words a model's name would hold".into()
                        }
                        ModelSource::HuggingFace => {
                            "searches HuggingFace Hub repository ids (owner/name) for a substring, never file names: one fragment such as `stable-diffusion-xl` or `control-lora`".into()
                        }
                    },
                })
                .collect(),
            max_steps: MAX_FIND_STEPS,
        };
        let accept = |reply: crate::prompts::ModelSearchPlanReply| {
            let mut steps: Vec<FindStep> = Vec::new();
            for step in reply.steps {
                let tool = step.tool.trim().to_ascii_lowercase();
                // Tools the plan names that are not configured are skipped, as the seed's
                // executor does; a plan left empty is refused below.
                let Some(&source) = sources.iter().find(|&&s| tool == tool_name(s)) else {
                    continue;
                };
                let query = step.query.trim();
                if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
                    return Err(format!("the query `{query}` is empty or too long"));
                }
                if query.contains("://") {
                    return Err(format!("`{query}` holds an address: steps take names"));
                }
                let step = FindStep {
                    source,
                    query: query.to_owned(),
                };
                if !steps.contains(&step) {
                    steps.push(step);
                }
            }
            if steps.is_empty() {
                return Err("the plan names none of the tools".into());
            }
            steps.truncate(MAX_FIND_STEPS);
            Ok(steps)
        };
        let fallback = async { StageOutput::heuristic(self.fallback.steps(request, sources)) };
        self.model.run(&context, 300, accept, fallback).await
    }
}

/// Steps the request's own evidence calls for, whatever the planner wrote: a lookup by the
/// recorded SHA-256 on Civitai, and the file at a recorded Civitai or Hub address.
pub(crate) fn recorded_steps(request: &FileRequest, sources: &[ModelSource]) -> Vec<FindStep> {
    let mut steps = Vec::new();
    if let Some(hash) = &request.sha256 {
        if sources.contains(&ModelSource::Civitai) {
            steps.push(FindStep {
                source: ModelSource::Civitai,
                query: ferret_core::hash_query(hash),
            });
        }
    }
    if let Some((source, query)) = request.url.as_deref().and_then(recorded_address) {
        if sources.contains(&source) {
            steps.push(FindStep { source, query });
        }
    }
    steps
}

/// The hub a recorded address belongs to, and the query that asks that hub for the file
/// there; `None` for an address of neither hub. The hub reads its own ids out of the address
/// and asks its API; nothing fetches the address itself.
fn recorded_address(url: &str) -> Option<(ModelSource, String)> {
    let query = ferret_core::address_query(url);
    let source = ModelSource::of_address(&ferret_core::address_in_query(&query)?)?;
    Some((source, query))
}

/// What the workflow says of a file, as the prompts show it.
pub(crate) fn request_context(request: &FileRequest) -> std::collections::BTreeMap<String, String> {
    let mut context = std::collections::BTreeMap::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            context.insert(key.to_owned(), value);
        }
    };
    put(
        "model_type",
        request.model_type.map(|t| t.as_str().to_owned()),
    );
    put("base_model", request.base_model.clone());
    put("node", request.node.clone());
    put("prefer", request.prefer.map(|s| s.as_str().to_owned()));
    context
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heuristic_plan_alternates_hubs_in_their_own_terms_preferred_first() {
        let request = FileRequest::new("sd_xl_base_1.0_fp16.safetensors")
            .unwrap()
            .preferring(ModelSource::HuggingFace);
        let planner = HeuristicModelSearchPlanner::default();
        let steps = planner.steps(&request, &ModelSource::ALL);
        let lines: Vec<String> = steps.iter().map(FindStep::line).collect();
        assert_eq!(
            lines,
            [
                "huggingface_search: stable-diffusion-xl-base",
                "civitai_search: sdxl base",
                "huggingface_search: sdxl-base",
                "huggingface_search: stable-diffusion-xl",
            ]
        );
        let only_civitai = planner.steps(&request, &[ModelSource::Civitai]);
        assert!(recorded_steps(&request, &ModelSource::ALL).is_empty());
        assert!(only_civitai
            .iter()
            .all(|s| s.source == ModelSource::Civitai));
    }

    #[test]
    fn a_recorded_hash_and_hub_address_add_their_steps() {
        let mut request = FileRequest::by_hash(&"c".repeat(64), Some("x.safetensors")).unwrap();
        request.url = Some("https://huggingface.co/org/repo-1.0/resolve/main/x.safetensors".into());
        let lines: Vec<String> = recorded_steps(&request, &ModelSource::ALL)
            .iter()
            .map(FindStep::line)
            .collect();
        assert_eq!(
            lines,
            [
                format!("civitai_search: sha256:{}", "c".repeat(64)),
                "huggingface_search: address:https://huggingface.co/org/repo-1.0/resolve/main/x.safetensors".to_owned()
            ]
        );
        request.url = Some("https://example.com/org/repo/resolve/main/x".into());
        assert_eq!(
            recorded_steps(&request, &[ModelSource::HuggingFace]).len(),
            0
        );
        request.url = Some("https://civitai.com/api/download/models/135867".into());
        let civitai = recorded_steps(&request, &ModelSource::ALL);
        assert_eq!(civitai[1].source, ModelSource::Civitai);
        // A Civitai address is not asked of the Hub.
        assert_eq!(
            recorded_steps(&request, &[ModelSource::HuggingFace]).len(),
            0
        );
    }
}
