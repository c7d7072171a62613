//! Finding every model file a workflow references, a few files at a time, each as
//! [`Ferret::find_model`] finds one.

use ferret_core::{FerretError, Response};
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
}

/// One file of a workflow and what the finder made of it.
#[derive(Debug)]
pub struct FileFind {
    /// The file as the workflow references it.
    pub model: WorkflowModel,
    /// The finder's response (its `model_file` holds the status and candidates), or why the
    /// file could not be searched: a name no file can have, or a budget that cannot be spent.
    pub found: Result<Response, FerretError>,
}

impl Ferret {
    /// Find every model file `workflow` references on the configured model hubs, a few at a
    /// time: each file's request says what its loader node says of it and what the workflow
    /// says of all of them (its base model, the preferred hub). A file that cannot be searched
    /// is reported with the others rather than ending the run. Files a models folder already
    /// holds are left out by the caller first (see `ModelsDir::holds`).
    pub async fn find_models(&self, workflow: &Workflow) -> WorkflowFind {
        let files = futures::stream::iter(&workflow.models)
            .map(|model| async move {
                let found = match workflow.request_for(model) {
                    Ok(request) => self.find_model(&request).await,
                    Err(error) => Err(error.into()),
                };
                FileFind {
                    model: model.clone(),
                    found,
                }
            })
            .buffered(FILES_AT_ONCE)
            .collect()
            .await;
        WorkflowFind { files }
    }
}
