//! Finding every model file a workflow references, a few files at a time, each as
//! [`Ferret::find_model`] finds one, the workflow's checkpoint telling the others their base
//! model.

use std::path::PathBuf;

use ferret_agent::base_model_label;
use ferret_core::{FerretError, FindStatus, ModelType, Response};
use ferret_workflow::{Workflow, WorkflowModel};
use futures::StreamExt as _;

use crate::Ferret;

/// Files searched at once; the executor holds each hub to its rate limit besides.
const FILES_AT_ONCE: usize = 4;

/// What the finder made of each of a workflow's files, in the workflow's order.
#[derive(Debug)]
pub struct WorkflowFind {
    /// One per model file of the workflow.
    pub files: Vec<FileFind>,
    /// The base model the workflow's checkpoint gave its other files (`SDXL`), when the
    /// workflow named none: from the found checkpoint's hub, else from its file name.
    pub base_model: Option<String>,
}

/// One file of a workflow and what the finder made of it.
#[derive(Debug)]
pub struct FileFind {
    /// The file as the workflow references it.
    pub model: WorkflowModel,
    /// What became of it.
    pub outcome: FileOutcome,
}

/// What became of one file of a workflow.
#[derive(Debug)]
pub enum FileOutcome {
    /// The models folder holds it already, here; it was not searched.
    Present(PathBuf),
    /// The finder's response: its `model_file` holds the status and candidates.
    Searched(Box<Response>),
    /// It could not be searched: a name no file can have, or a budget that cannot be spent.
    NotSearched(FerretError),
}

impl FileOutcome {
    /// The finder's response, when the file was searched.
    pub fn response(&self) -> Option<&Response> {
        match self {
            Self::Searched(response) => Some(response),
            _ => None,
        }
    }
}

/// Whether a file of this type is made for one base model, so that the workflow's base tells
/// the finder which of its namesakes fits.
fn base_specific(model_type: Option<ModelType>) -> bool {
    matches!(
        model_type,
        Some(ModelType::Lora | ModelType::ControlNet | ModelType::Vae | ModelType::Embedding)
    )
}

fn is_checkpoint(model: &WorkflowModel) -> bool {
    matches!(
        model.model_type,
        Some(ModelType::Checkpoint | ModelType::DiffusionModel)
    )
}

impl Ferret {
    /// Find every model file `workflow` references on the configured model hubs, a few at a
    /// time; files marked present (`ModelsDir::mark_held`) are not searched. Each file's
    /// request says what its loader node says of it and what the workflow says of all of them
    /// (the preferred hub, the base model). When the workflow names no base model, its
    /// checkpoints are found first and give theirs to its LoRAs, ControlNets, VAEs and
    /// embeddings: the found checkpoint's base as its hub states it, else the one its file name
    /// says (`sd_xl_base_1.0.safetensors` is SDXL). A file takes the base of the checkpoints its
    /// node is linked to; one linked to none, the base all checkpoints agree on.
    /// A file that cannot be searched is reported with the others rather than ending the run.
    pub async fn find_models(&self, workflow: &Workflow) -> WorkflowFind {
        let models = &workflow.models;
        let mut outcomes: Vec<Option<FileOutcome>> = models
            .iter()
            .map(|m| m.present_at.clone().map(FileOutcome::Present))
            .collect();
        let checkpoints: Vec<usize> = (0..models.len())
            .filter(|&i| outcomes[i].is_none() && is_checkpoint(&models[i]))
            .collect();
        let checkpoints: Vec<(usize, Option<String>)> =
            checkpoints.into_iter().map(|i| (i, None)).collect();
        for (i, outcome) in self.find_each(workflow, &checkpoints).await {
            outcomes[i] = Some(outcome);
        }
        // Each checkpoint's base, then each other file's: the one base of the checkpoints its
        // node is linked to, else the one all the workflow's checkpoints agree on.
        let bases = checkpoint_bases(models, &outcomes);
        let agreed = match distinct(bases.iter().map(|(_, base)| base.as_str())).as_slice() {
            [one] if workflow.base_model.is_none() => Some((*one).to_owned()),
            _ => None,
        };
        let rest: Vec<(usize, Option<String>)> = (0..models.len())
            .filter(|&i| outcomes[i].is_none())
            .map(|i| {
                let linked = distinct(
                    bases
                        .iter()
                        .filter(|(node, _)| workflow.connected(node, &models[i].node_id))
                        .map(|(_, base)| base.as_str()),
                );
                let base = match linked.as_slice() {
                    _ if workflow.base_model.is_some() => None,
                    [one] => Some((*one).to_owned()),
                    [] => agreed.clone(),
                    _ => None,
                };
                (i, base)
            })
            .collect();
        for (i, outcome) in self.find_each(workflow, &rest).await {
            outcomes[i] = Some(outcome);
        }
        let files = models
            .iter()
            .cloned()
            .zip(outcomes)
            .filter_map(|(model, outcome)| {
                Some(FileFind {
                    model,
                    outcome: outcome?,
                })
            })
            .collect();
        WorkflowFind {
            files,
            base_model: agreed,
        }
    }

    /// The files at `files`, found a few at a time, those of a base-specific type told their
    /// base when their request names none.
    async fn find_each(
        &self,
        workflow: &Workflow,
        files: &[(usize, Option<String>)],
    ) -> Vec<(usize, FileOutcome)> {
        futures::stream::iter(files.to_vec())
            .map(|(i, base)| async move {
                let model = &workflow.models[i];
                let outcome = match workflow.request_for(model) {
                    Ok(mut request) => {
                        if let (Some(base), None) = (base, &request.base_model) {
                            if base_specific(model.model_type) {
                                request = request.with_base_model(base);
                            }
                        }
                        match self.find_model(&request).await {
                            Ok(response) => FileOutcome::Searched(Box::new(response)),
                            Err(error) => FileOutcome::NotSearched(error),
                        }
                    }
                    Err(error) => FileOutcome::NotSearched(error.into()),
                };
                (i, outcome)
            })
            .buffered(FILES_AT_ONCE)
            .collect()
            .await
    }
}

/// Each checkpoint's node and base model: the found one's as its hub states it, else the one
/// its file name says; checkpoints that say none are left out.
fn checkpoint_bases(
    models: &[WorkflowModel],
    outcomes: &[Option<FileOutcome>],
) -> Vec<(String, String)> {
    models
        .iter()
        .zip(outcomes)
        .filter(|(model, _)| is_checkpoint(model))
        .filter_map(|(model, outcome)| {
            let found = outcome
                .as_ref()
                .and_then(FileOutcome::response)
                .and_then(|r| r.model_file.as_ref())
                .filter(|find| find.status == FindStatus::Found)
                .and_then(|find| find.best()?.base_model.clone());
            let base = match found {
                Some(base) => base_model_label(&base).map_or(base, str::to_owned),
                None => base_model_label(&model.file_name)?.to_owned(),
            };
            Some((model.node_id.clone(), base))
        })
        .collect()
}

/// `bases` each once, in order.
fn distinct<'a>(bases: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for base in bases {
        if !seen.contains(&base) {
            seen.push(base);
        }
    }
    seen
}
