//! Which referenced files a ComfyUI installation already holds.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use ferret_core::{FileRequest, ModelType};
use serde_norway::Value;

use crate::names::has_model_extension;
use crate::{WorkflowError, WorkflowModel};

/// How many folders below a searched folder a file is looked for: ComfyUI lists files of any
/// subfolder, and a bound keeps a deep tree (or a link out of the models folder into a large
/// one) from holding the search.
const MAX_DEPTH: usize = 8;

/// Extensions ComfyUI tries for an embedding named without one ("embedding:EasyNegative").
const EMBEDDING_EXTENSIONS: [&str; 3] = [".safetensors", ".pt", ".bin"];

/// The keys of an `extra_model_paths.yaml` section that name no folder.
const NOT_FOLDERS: [&str; 2] = ["base_path", "is_default"];

/// A ComfyUI `models` folder, with the folders an `extra_model_paths.yaml` adds: where the files
/// a workflow references may already be.
///
/// Each folder searched is listed once, at the first search that needs it, and the listing kept
/// for the searches after it: checking the files of a workflow walks the folders once. Files
/// added later are seen after [`ModelsDir::refresh`] (or by a new `ModelsDir`).
pub struct ModelsDir {
    /// The models folder.
    root: PathBuf,
    /// Each folder of the YAML with the key naming it ("loras", "ipadapter"), in file order.
    extra: Vec<(String, PathBuf)>,
    /// The listings made so far.
    listings: Listings,
}

/// The folders already listed, shared by the searches of one [`ModelsDir`].
#[derive(Default)]
struct Listings {
    /// Each listed folder's files.
    folders: Mutex<HashMap<PathBuf, Arc<Listing>>>,
    /// The folders in the models folder, in name order.
    root_folders: OnceLock<Vec<PathBuf>>,
}

/// The files below a folder by lower-cased file name, each name's paths shallowest first, then
/// in path order, so that the answer does not depend on the order the file system lists them.
type Listing = HashMap<String, Vec<PathBuf>>;

impl ModelsDir {
    /// The folders of a ComfyUI `models` folder at `root` (`<root>/checkpoints`, `<root>/loras`
    /// and every other; whether they exist is seen when searched).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            extra: Vec::new(),
            listings: Listings::default(),
        }
    }

    /// The same folders and those of the `extra_model_paths.yaml` at `yaml`, searched after
    /// them. Its format is ComfyUI's: sections, each with a `base_path` (relative to the YAML's
    /// folder; `~`, `$VAR`, `${VAR}` and `%VAR%` expanded from the environment, a variable not
    /// set left as written) and folder names (any, "ipadapter" as well as "loras") whose values
    /// are one path or several lines of paths (relative to `base_path`); `is_default` is
    /// ignored.
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
                // As ComfyUI's `expandvars(expanduser(base_path))`.
                Some(Value::String(base)) => {
                    let base = expand_home(base.trim());
                    let base = expand_vars(&base.to_string_lossy(), |name| {
                        std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
                    });
                    yaml_dir.join(base)
                }
                Some(_) => {
                    return Err(malformed(format!(
                        "the `base_path` of section `{section_name}` is not a path"
                    )))
                }
            };
            for (key, value) in section {
                let Some(folder) = key.as_str().filter(|key| !NOT_FOLDERS.contains(key)) else {
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
                    self.extra.push((folder.to_owned(), path));
                }
            }
        }
        Ok(self)
    }

    /// Marks each of `workflow`'s files this folder holds with where it is
    /// ([`WorkflowModel::present_at`]), so that the finder leaves it out.
    pub fn mark_held(&self, workflow: &mut crate::Workflow) {
        for model in &mut workflow.models {
            model.present_at = self.holds(model);
        }
    }

    /// Forgets the listings made so far: the next searches see the folders as they are then.
    pub fn refresh(&mut self) {
        self.listings = Listings::default();
    }

    /// Where `model` already is, if anywhere. The folders searched, in order: the `directory`
    /// the workflow names (`<root>/clip_vision` and the YAML's `clip_vision` folders), then
    /// those of its type (`<root>/loras` and the YAML's `loras` folders), or, for a file of
    /// unknown type, every folder in the models folder and every folder of the YAML. In them,
    /// `<folder>/<subfolder>/<file_name>` first, then the file anywhere below a folder (up to
    /// eight levels deep), the shallowest first. An embedding named without extension is found
    /// with those ComfyUI tries.
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
        let folders = self.folders_for(model);
        // Each folder is listed when the search reaches it (and kept for later searches).
        let listings = || {
            folders
                .iter()
                .map(|folder| (folder.as_path(), self.listing(folder)))
        };
        let found = |path: &Path, name: &str| path.file_name().is_some_and(|file| file == name);
        if let Some(subfolder) = model.subfolder.as_deref().and_then(inside) {
            let listed = listings().find_map(|(folder, listing)| {
                let folder = folder.join(&subfolder);
                names.iter().find_map(|name| {
                    paths_named(&listing, name)
                        .find(|path| path.parent() == Some(folder.as_path()) && found(path, name))
                        .cloned()
                })
            });
            if listed.is_some() {
                return listed;
            }
        }
        let anywhere = listings().find_map(|(_, listing)| {
            names.iter().find_map(|name| {
                paths_named(&listing, name)
                    .find(|path| found(path, name))
                    .cloned()
            })
        });
        // A file system that ignores case loads "detail.safetensors" for "Detail.safetensors";
        // elsewhere ComfyUI would not, and nor may this.
        if anywhere.is_some() || !cfg!(any(windows, target_os = "macos")) {
            return anywhere;
        }
        listings().find_map(|(_, listing)| {
            names
                .iter()
                .find_map(|name| paths_named(&listing, name).next().cloned())
        })
    }

    /// The folders to search for `model`, in order, each once.
    fn folders_for(&self, model: &WorkflowModel) -> Vec<PathBuf> {
        let mut folders: Vec<PathBuf> = Vec::new();
        let mut add = |folder: PathBuf| {
            if !folders.contains(&folder) {
                folders.push(folder);
            }
        };
        // The directory as a folder name and what may follow it ("checkpoints/SDXL").
        let directory = model.directory.as_deref().and_then(inside);
        if let Some(directory) = &directory {
            let mut parts = directory.iter();
            let first = parts.next().and_then(|first| first.to_str()).unwrap_or("");
            let rest: PathBuf = parts.collect();
            let names = aliases(first);
            for name in &names {
                add(self.root.join(name).join(&rest));
            }
            for (key, folder) in &self.extra {
                if names.contains(&key.as_str()) {
                    add(folder.join(&rest));
                }
            }
        }
        match model.model_type {
            Some(model_type) => {
                let names = folders_of(model_type);
                for name in names {
                    add(self.root.join(name));
                }
                for (key, folder) in &self.extra {
                    if names.contains(&key.as_str()) {
                        add(folder.clone());
                    }
                }
            }
            None => {
                for folder in self.root_folders() {
                    add(folder.clone());
                }
                for (_, folder) in &self.extra {
                    add(folder.clone());
                }
            }
        }
        folders
    }

    /// The folders in the models folder, in name order, listed once.
    fn root_folders(&self) -> &[PathBuf] {
        self.listings.root_folders.get_or_init(|| {
            let mut found: Vec<PathBuf> = fs::read_dir(&self.root)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect();
            found.sort();
            found
        })
    }

    /// The files below `folder`, listed at the first call for it.
    fn listing(&self, folder: &Path) -> Arc<Listing> {
        let lock = || {
            self.listings
                .folders
                .lock()
                // A listing is inserted whole: a panic elsewhere leaves none half made.
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(listing) = lock().get(folder) {
            return Arc::clone(listing);
        }
        // Listed without the lock, so that searches of other folders need not wait.
        let listing = Arc::new(list(folder));
        Arc::clone(lock().entry(folder.to_owned()).or_insert(listing))
    }
}

impl Clone for ModelsDir {
    /// The same folders, with the listings made so far.
    fn clone(&self) -> Self {
        let folders = self
            .listings
            .folders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let root_folders = self.listings.root_folders.clone();
        Self {
            root: self.root.clone(),
            extra: self.extra.clone(),
            listings: Listings {
                folders: Mutex::new(folders),
                root_folders,
            },
        }
    }
}

impl PartialEq for ModelsDir {
    /// The same folders, whatever has been listed of them.
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.extra == other.extra
    }
}

impl Eq for ModelsDir {}

impl fmt::Debug for ModelsDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelsDir")
            .field("root", &self.root)
            .field("extra", &self.extra)
            .finish_non_exhaustive()
    }
}

/// The paths `listing` holds for `name`, in any case.
fn paths_named<'a>(listing: &'a Listing, name: &str) -> impl Iterator<Item = &'a PathBuf> {
    listing.get(&name.to_lowercase()).into_iter().flatten()
}

/// The folders a type's files belong in, as ComfyUI names them (its current name first, then
/// the old one), in the order ComfyUI searches them.
fn folders_of(model_type: ModelType) -> &'static [&'static str] {
    match model_type {
        ModelType::Checkpoint => &["checkpoints"],
        ModelType::Lora => &["loras"],
        ModelType::Vae => &["vae"],
        ModelType::ControlNet => &["controlnet", "t2i_adapter"],
        ModelType::Embedding => &["embeddings"],
        ModelType::Upscaler => &["upscale_models"],
        ModelType::TextEncoder => &["text_encoders", "clip"],
        ModelType::DiffusionModel => &["diffusion_models", "unet"],
    }
}

/// The names of the folder `name` is one of: those of its type when it is a type's folder
/// ("clip" is "text_encoders" too), else the name alone.
fn aliases(name: &str) -> Vec<&str> {
    ModelType::ALL
        .into_iter()
        .map(folders_of)
        .find(|names| names.contains(&name))
        .map_or_else(|| vec![name], <[&str]>::to_vec)
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

/// The files in `folder` and below it, [`MAX_DEPTH`] levels at most, level by level and each
/// level's folders in name order. A folder is entered once, however many links lead to it (a
/// link to a folder above makes a loop), and by its real path rather than a link of the same
/// level.
fn list(folder: &Path) -> Listing {
    let mut listing = Listing::new();
    let Ok(canonical) = fs::canonicalize(folder) else {
        return listing;
    };
    let mut visited = HashSet::from([canonical]);
    let mut level = vec![folder.to_owned()];
    for depth in 0..=MAX_DEPTH {
        let mut links = Vec::new();
        let mut next = Vec::new();
        for folder in &level {
            for path in entries(folder) {
                // `metadata` follows links: a linked file is a file, a linked folder a folder.
                let Ok(metadata) = fs::metadata(&path) else {
                    continue;
                };
                if metadata.is_file() {
                    if let Some(name) = path.file_name().and_then(|name| name.to_str()) {
                        listing.entry(name.to_lowercase()).or_default().push(path);
                    }
                } else if metadata.is_dir() && depth < MAX_DEPTH {
                    let linked = fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_symlink());
                    if linked {
                        links.push(path);
                    } else {
                        next.push(path);
                    }
                }
            }
        }
        // Real folders are marked first, so that a link to one of the same level is skipped.
        let mut entered = Vec::with_capacity(next.len() + links.len());
        for path in next.into_iter().chain(links) {
            if fs::canonicalize(&path).is_ok_and(|canonical| visited.insert(canonical)) {
                entered.push(path);
            }
        }
        entered.sort();
        if entered.is_empty() {
            break;
        }
        level = entered;
    }
    listing
}

/// The entries of `folder`, in name order; none when it cannot be listed.
fn entries(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// `text` with `$NAME`, `${NAME}` and `%NAME%` replaced by the value `lookup` gives the
/// variable, as Python's `os.path.expandvars` does (`%NAME%` as on Windows); a variable
/// `lookup` does not know is left as written.
fn expand_vars(text: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let is_name = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['$', '%']) {
        out.push_str(&rest[..at]);
        let sign = &rest[at..at + 1];
        let after = &rest[at + 1..];
        // The name, and the length of the whole reference ("${NAME}" is 3 more than NAME).
        let reference = match sign {
            "$" => match after.strip_prefix('{') {
                Some(braced) => braced.find('}').map(|end| (&braced[..end], end + 3)),
                None => {
                    let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                    (end > 0).then(|| (&after[..end], end + 1))
                }
            },
            _ => after
                .find('%')
                .map(|end| (&after[..end], end + 2))
                .filter(|(name, _)| !name.is_empty()),
        };
        match reference.and_then(|(name, length)| Some((lookup(name)?, length))) {
            Some((value, length)) => {
                out.push_str(&value);
                rest = &rest[at + length..];
            }
            None => {
                out.push_str(sign);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(text: &str) -> String {
        expand_vars(text, |name| match name {
            "BASE" => Some("/srv/comfy".into()),
            "É_1" => Some("unicode".into()),
            _ => None,
        })
    }

    #[test]
    fn variables_are_expanded_in_each_form_and_unknown_ones_left_as_written() {
        for (text, expected) in [
            ("$BASE/models", "/srv/comfy/models"),
            ("${BASE}models", "/srv/comfymodels"),
            ("%BASE%\\models", "/srv/comfy\\models"),
            ("$BASE$BASE", "/srv/comfy/srv/comfy"),
            ("$É_1", "unicode"),
            ("$UNSET/models", "$UNSET/models"),
            ("${UNSET}/models", "${UNSET}/models"),
            ("%UNSET%/models", "%UNSET%/models"),
            ("${BASE", "${BASE"),
            ("%BASE", "%BASE"),
            ("100% $ %% $/ ${}", "100% $ %% $/ ${}"),
            ("50%$BASE%", "50%/srv/comfy%"),
            ("", ""),
        ] {
            assert_eq!(expand(text), expected, "{text}");
        }
    }

    #[test]
    fn a_type_folders_other_names_are_searched_with_it() {
        assert_eq!(aliases("clip"), ["text_encoders", "clip"]);
        assert_eq!(aliases("unet"), ["diffusion_models", "unet"]);
        assert_eq!(aliases("clip_vision"), ["clip_vision"]);
    }
}
