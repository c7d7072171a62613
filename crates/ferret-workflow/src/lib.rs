//! `ferret-workflow` reads ComfyUI workflow files, in the UI format (with the nodes of its
//! subgraphs and legacy group nodes) and in the API format, into a [`Workflow`]: the model files
//! their loader nodes reference ([`WorkflowModel`], each turned into the finder's [`FileRequest`]),
//! leaving out bypassed and muted nodes; [`ModelsDir`] says which of them a ComfyUI `models`
//! folder (and the folders of its `extra_model_paths.yaml`) already holds.
//!
//! It reads files, nothing else: it must not depend on any HTTP client, backend crate, the
//! executor, the agent or a model crate; only on `ferret-core` (for the finder's vocabulary),
//! serde, serde_json, thiserror and a YAML parser.

mod models_dir;
mod names;
mod parse;

use std::path::{Path, PathBuf};

use ferret_core::{FileRequest, FileRequestError, ModelSource, ModelType};
use serde::{Deserialize, Serialize};

pub use models_dir::ModelsDir;
pub use parse::{parse_workflow, read_workflow};

/// A workflow's model files, and what the finder is told of all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workflow {
    /// The model files its loader nodes reference, each once, in the order they appear.
    pub models: Vec<WorkflowModel>,
    /// The base model its files are for ("SDXL 1.0"), when known: the finder ranks files made
    /// for another base lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// The hub to rank higher for every file when candidates are otherwise equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer: Option<ModelSource>,
    /// The links between its nodes, as pairs of node ids (which output feeds which input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<(String, String)>,
}

impl Workflow {
    /// A workflow referencing `models`, with nothing else known.
    pub fn new(models: Vec<WorkflowModel>) -> Self {
        Self {
            models,
            base_model: None,
            prefer: None,
            links: Vec::new(),
        }
    }

    /// Whether links join the nodes `a` and `b`, in either direction and through any nodes
    /// between; a node inside a subgraph or group node (`"12:3"`) counts as that node (`"12"`).
    pub fn connected(&self, a: &str, b: &str) -> bool {
        let outer = |id: &str| id.split(':').next().unwrap_or(id).to_owned();
        let (start, goal) = (outer(a), outer(b));
        let mut reached = std::collections::HashSet::from([start.clone()]);
        let mut next = vec![start];
        while let Some(node) = next.pop() {
            if node == goal {
                return true;
            }
            for (from, to) in &self.links {
                let (from, to) = (outer(from), outer(to));
                let other = if from == node {
                    to
                } else if to == node {
                    from
                } else {
                    continue;
                };
                if reached.insert(other.clone()) {
                    next.push(other);
                }
            }
        }
        false
    }

    /// The finder's request for `model`, one of this workflow's files: what the model's node
    /// says of it, and what the workflow says of every file.
    pub fn request_for(&self, model: &WorkflowModel) -> Result<FileRequest, FileRequestError> {
        let mut request = model.to_request()?;
        request.prefer = self.prefer;
        if let Some(base) = &self.base_model {
            request = request.with_base_model(base.as_str());
        }
        Ok(request)
    }
}

/// One model file a workflow references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowModel {
    /// The last path component of the value ("SDXL\\x.safetensors" gives "x.safetensors").
    pub file_name: String,
    /// The folder part of the value when it had one ("SDXL"), with `/` separators; `None` when
    /// it would leave the models folder (`..`, a drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subfolder: Option<String>,
    /// The finder's type of the file: the one ComfyUI's loader implies, else the one the
    /// directory of its `properties.models` entry names, else the one a known API input
    /// ("ckpt_name") implies, else the one the words of the node's name suggest. `None` for
    /// files of no such type (CLIP vision, IP-Adapter, style models, hypernetworks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<ModelType>,
    /// The type of the node that references it ("LoraLoader").
    pub node_type: String,
    /// That node's id as text ("12"; a node inside a subgraph or group node:
    /// "<its node's id>:<inner id>"), as ComfyUI names it when it runs the workflow.
    pub node_id: String,
    /// Where the workflow says the file is downloaded from (its `properties.models` entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The file's SHA-256 the workflow states, lower-case hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The models folder the file belongs in, when known ("loras", "clip_vision"): the one its
    /// `properties.models` entry names, else the one its loader or API input reads from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// Where a models folder already holds it ([`ModelsDir::mark_held`]): it is not searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present_at: Option<PathBuf>,
}

impl WorkflowModel {
    /// The finder's request for this file (name, type, loader node, hash, url), checked as any
    /// request is: the fields are public, so they may no longer be what the parser made.
    pub fn to_request(&self) -> Result<FileRequest, FileRequestError> {
        let mut request = match &self.sha256 {
            Some(hash) => FileRequest::by_hash(hash, Some(&self.file_name))?,
            None => FileRequest::new(self.file_name.as_str())?,
        };
        request.model_type = self.model_type;
        if !self.node_type.trim().is_empty() {
            request = request.loaded_by(self.node_type.as_str());
        }
        request.url.clone_from(&self.url);
        Ok(request)
    }
}

/// A workflow or an `extra_model_paths.yaml` that cannot be read; each names its file and
/// says what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The file cannot be read.
    #[error("cannot read {}: {reason}", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file is not JSON.
    #[error("{} is not JSON ({reason}): expected a ComfyUI workflow saved as JSON", file.display())]
    NotJson {
        /// The file.
        file: PathBuf,
        /// The parser's complaint, with its line and column.
        reason: String,
    },
    /// The file is JSON but neither workflow format.
    #[error(
        "{}: expected a ComfyUI workflow: the UI format with `nodes`, or the API format with \
         `class_type` and `inputs`",
        file.display()
    )]
    NotAWorkflow {
        /// The file.
        file: PathBuf,
    },
    /// The workflow references no model file.
    #[error(
        "{}: no loader node references a model file (expected loaders such as \
         CheckpointLoaderSimple or LoraLoader naming a file)",
        file.display()
    )]
    NoLoaders {
        /// The file.
        file: PathBuf,
    },
    /// The `extra_model_paths.yaml` is not ComfyUI's format.
    #[error(
        "{} is not a usable extra_model_paths.yaml: {reason} (expected sections, each with an \
         optional `base_path` and folder names such as `checkpoints` or `loras` whose values are \
         one path or several lines of paths)",
        file.display()
    )]
    ExtraPaths {
        /// The file.
        file: PathBuf,
        /// What is wrong in it.
        reason: String,
    },
}

impl WorkflowError {
    fn unreadable(file: &Path, error: &std::io::Error) -> Self {
        Self::Unreadable {
            file: file.to_owned(),
            reason: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(file_name: &str) -> WorkflowModel {
        WorkflowModel {
            file_name: file_name.into(),
            subfolder: None,
            model_type: Some(ModelType::Lora),
            node_type: "LoraLoader".into(),
            node_id: "10".into(),
            url: Some("https://example.org/x.safetensors".into()),
            sha256: Some("ab".repeat(32)),
            directory: Some("loras".into()),
            present_at: None,
        }
    }

    #[test]
    fn nodes_are_connected_through_links_in_either_direction() {
        let mut workflow = Workflow::new(Vec::new());
        workflow.links = vec![
            ("4".into(), "10".into()),
            ("10".into(), "3".into()),
            ("20".into(), "21".into()),
        ];
        assert!(workflow.connected("4", "3"));
        assert!(workflow.connected("3", "4"));
        assert!(workflow.connected("10:2", "4"), "a node inside node 10");
        assert!(!workflow.connected("4", "21"));
    }

    #[test]
    fn a_model_becomes_the_finders_request_with_all_it_knows() {
        let request = model("x.safetensors").to_request().unwrap();
        assert_eq!(request.file_name, "x.safetensors");
        assert_eq!(request.model_type, Some(ModelType::Lora));
        assert_eq!(request.node.as_deref(), Some("LoraLoader"));
        assert_eq!(request.sha256, Some("ab".repeat(32)));
        assert_eq!(
            request.url.as_deref(),
            Some("https://example.org/x.safetensors")
        );
    }

    #[test]
    fn a_model_edited_into_a_path_or_a_bad_hash_is_refused() {
        assert!(matches!(
            model("../x.safetensors").to_request(),
            Err(FileRequestError::PathLike(_))
        ));
        let mut bad_hash = model("x.safetensors");
        bad_hash.sha256 = Some("abc".into());
        assert!(matches!(
            bad_hash.to_request(),
            Err(FileRequestError::BadHash(_))
        ));
    }
}
