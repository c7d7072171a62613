//! Which referenced files a ComfyUI installation already holds.

use std::fs;
use std::path::{Component, Path, PathBuf};

use ferret_core::{FileRequest, ModelType};
use serde_norway::Value;

use crate::names::has_model_extension;
use crate::{WorkflowError, WorkflowModel};

/// The folders searched for a file of unknown type: every one a type below belongs in.
const ALL_FOLDERS: [&str; 10] = [
    "checkpoints",
    "loras",
    "vae",
    "controlnet",
    "embeddings",
    "upscale_models",
    "clip",
    "text_encoders",
    "unet",
    "diffusion_models",
];

/// How many folders below a models folder a file is looked for: ComfyUI lists files of any
/// subfolder, and a bound keeps a symlink loop from holding the search.
const MAX_DEPTH: usize = 4;

/// Extensions ComfyUI tries for an embedding named without one ("embedding:EasyNegative").
const EMBEDDING_EXTENSIONS: [&str; 3] = [".safetensors", ".pt", ".bin"];

/// A ComfyUI `models` folder, with the folders an `extra_model_paths.yaml` adds: where the files
/// a workflow references may already be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelsDir {
    /// Each searched folder with the name of the kind it holds ("loras"), in search order.
    folders: Vec<(String, PathBuf)>,
}

impl ModelsDir {
    /// The folders of a ComfyUI `models` folder at `root` (`<root>/checkpoints`, `<root>/loras`
    /// and so on; whether they exist is seen when searched).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            folders: ALL_FOLDERS
                .iter()
                .map(|name| ((*name).to_owned(), root.join(name)))
                .collect(),
        }
    }

    /// The same folders and those of the `extra_model_paths.yaml` at `yaml`, searched after
    /// them. Its format is ComfyUI's: sections, each with a `base_path` (relative to the YAML's
    /// folder) and folder names whose values are one path or several lines of paths (relative
    /// to `base_path`); other keys (`is_default`) are ignored.
    pub fn with_extra_paths(mut self, yaml: &Path) -> Result<Self, WorkflowError> {
        let text =
            fs::read_to_string(yaml).map_err(|error| WorkflowError::unreadable(yaml, &error))?;
        let malformed = |reason: String| WorkflowError::ExtraPaths {
            file: yaml.to_owned(),
            reason,
        };
        let document: Value =
            serde_norway::from_str(&text).map_err(|error| malformed(error.to_string()))?;
        let sections = match document {
            Value::Null => return Ok(self),
            Value::Mapping(sections) => sections,
            _ => return Err(malformed("the file is not a mapping of sections".into())),
        };
        let yaml_dir = yaml.parent().unwrap_or(Path::new(""));
        for (section_name, section) in &sections {
            let section_name = section_name.as_str().unwrap_or("?");
            let section = match section {
                Value::Null => continue,
                Value::Mapping(section) => section,
                _ => {
                    return Err(malformed(format!(
                        "section `{section_name}` is not a mapping of folder names to paths"
                    )))
                }
            };
            let base = match section.get("base_path") {
                None | Some(Value::Null) => yaml_dir.to_owned(),
                Some(Value::String(base)) => yaml_dir.join(expand_home(base.trim())),
                Some(_) => {
                    return Err(malformed(format!(
                        "the `base_path` of section `{section_name}` is not a path"
                    )))
                }
            };
            for (key, value) in section {
                let Some(folder) = key.as_str().filter(|key| ALL_FOLDERS.contains(key)) else {
                    continue;
                };
                let paths = match value {
                    Value::Null => continue,
                    Value::String(paths) => paths,
                    _ => {
                        return Err(malformed(format!(
                            "`{folder}` of section `{section_name}` is not a path or lines of paths"
                        )))
                    }
                };
                for path in paths.lines().map(str::trim).filter(|path| !path.is_empty()) {
                    // An absolute path replaces the base, as in ComfyUI's `os.path.join`.
                    let path = normalized(&base.join(expand_home(path)));
                    self.folders.push((folder.to_owned(), path));
                }
            }
        }
        Ok(self)
    }

    /// Where `model` already is, if anywhere: `<folder>/<subfolder>/<file_name>`, else the file
    /// anywhere below a folder (a few levels deep), in each folder its type belongs in (all of
    /// them when the type is unknown). An embedding named without extension is found with
    /// those ComfyUI tries.
    pub fn holds(&self, model: &WorkflowModel) -> Option<PathBuf> {
        // The fields are public: a name that is a path must not reach outside the folders.
        let name = FileRequest::new(model.file_name.as_str()).ok()?.file_name;
        let mut names = vec![name.clone()];
        if model.model_type == Some(ModelType::Embedding) && !has_model_extension(&name) {
            names.extend(
                EMBEDDING_EXTENSIONS
                    .iter()
                    .map(|ext| format!("{name}{ext}")),
            );
        }
        let kinds = model.model_type.map_or(&ALL_FOLDERS[..], folders_of);
        let folders: Vec<&Path> = self
            .folders
            .iter()
            .filter(|(kind, _)| kinds.contains(&kind.as_str()))
            .map(|(_, folder)| folder.as_path())
            .collect();
        if let Some(subfolder) = model.subfolder.as_deref().and_then(inside) {
            let listed = folders.iter().find_map(|folder| {
                let folder = folder.join(&subfolder);
                names
                    .iter()
                    .map(|name| folder.join(name))
                    .find(|path| path.is_file())
            });
            if listed.is_some() {
                return listed;
            }
        }
        folders.iter().find_map(|folder| find_below(folder, &names))
    }
}

/// The folders a type's files belong in, as ComfyUI names them (old names too).
fn folders_of(model_type: ModelType) -> &'static [&'static str] {
    match model_type {
        ModelType::Checkpoint => &["checkpoints"],
        ModelType::Lora => &["loras"],
        ModelType::Vae => &["vae"],
        ModelType::ControlNet => &["controlnet"],
        ModelType::Embedding => &["embeddings"],
        ModelType::Upscaler => &["upscale_models"],
        ModelType::TextEncoder => &["clip", "text_encoders"],
        ModelType::DiffusionModel => &["unet", "diffusion_models"],
    }
}

/// `subfolder` as a relative path that stays inside a folder; `None` for any other.
fn inside(subfolder: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = subfolder
        .split(['/', '\\'])
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let safe = !parts.is_empty()
        && parts
            .iter()
            .all(|part| *part != ".." && !part.contains(':'));
    safe.then(|| parts.iter().collect())
}

/// The first of `names` in `folder` or below it, [`MAX_DEPTH`] levels at most: the shallowest
/// first, and subfolders of a level in name order, so that the answer does not depend on the
/// order the file system lists them in.
fn find_below(folder: &Path, names: &[String]) -> Option<PathBuf> {
    let mut level = vec![folder.to_owned()];
    for depth in 0..=MAX_DEPTH {
        let found = level.iter().find_map(|folder| {
            names
                .iter()
                .map(|name| folder.join(name))
                .find(|path| path.is_file())
        });
        if found.is_some() || depth == MAX_DEPTH {
            return found;
        }
        level = level.iter().flat_map(|folder| subfolders(folder)).collect();
    }
    None
}

/// The folders in `folder`, in name order; none when it cannot be listed.
fn subfolders(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    found.sort();
    found
}

/// `path` with a leading `~` read as the home folder, as ComfyUI's `expanduser` does.
fn expand_home(path: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home,
        (Some(rest), Some(home)) if rest.starts_with(['/', '\\']) => home.join(&rest[1..]),
        _ => PathBuf::from(path),
    }
}

/// `path` with `.` and `folder/..` taken out, as ComfyUI's `normpath` does, so that the paths
/// `holds` answers are the plain ones.
fn normalized(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(clean.components().next_back(), Some(Component::Normal(_))) =>
            {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}
