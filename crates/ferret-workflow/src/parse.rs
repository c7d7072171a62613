//! Reading both workflow formats into the model files their nodes reference.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

use ferret_core::{FileRequest, ModelType};
use serde_json::{Map, Value};

use crate::names::{
    embedding_names, folder_type, guess_type, has_model_extension, input_kind, loader_kind,
    sha256_of, split_name, Kind,
};
use crate::{Workflow, WorkflowError, WorkflowModel};

/// Node types whose values are not files a run loads: notes hold text for people, and the
/// editor's primitive node only feeds its value to a widget, whose node holds it too (and is
/// the loader that says what the file is).
const SKIPPED_NODES: [&str; 3] = ["Note", "MarkdownNote", "PrimitiveNode"];

/// The UI format's node modes under which a node does not run: 2 is "Never" (muted), 4 "Bypass"
/// (its inputs are passed through). The files of such a node, or of any node inside such a
/// subgraph or group node, are not loaded.
const SKIPPED_MODES: [u64; 2] = [2, 4];

/// How deep subgraphs may nest: far beyond what the editor makes, and bounded so that no file
/// can exhaust the stack.
const MAX_SUBGRAPH_DEPTH: usize = 32;

/// The workflow in the file at `path`, with the model files it references (see
/// [`parse_workflow`]).
pub fn read_workflow(path: &Path) -> Result<Workflow, WorkflowError> {
    let bytes = fs::read(path).map_err(|error| WorkflowError::unreadable(path, &error))?;
    let json = String::from_utf8(bytes).map_err(|error| WorkflowError::NotJson {
        file: path.to_owned(),
        reason: format!("not UTF-8 text: {error}"),
    })?;
    parse_workflow(&json, path)
}

/// The model files a workflow references, in the UI format (with the nodes of its subgraphs and
/// group nodes) or the API format: each file (file name in its subfolder) once, where it first
/// appears (API-format nodes in the order of their ids), with what later references of it add
/// (a type, URL, hash, directory). Bypassed and muted nodes, and LoRAs switched off in a
/// list of them (`"on": false`), load nothing and are skipped. `origin` names the workflow in
/// errors.
pub fn parse_workflow(json: &str, origin: &Path) -> Result<Workflow, WorkflowError> {
    let root: Value = serde_json::from_str(json).map_err(|error| WorkflowError::NotJson {
        file: origin.to_owned(),
        reason: error.to_string(),
    })?;
    let not_a_workflow = || WorkflowError::NotAWorkflow {
        file: origin.to_owned(),
    };
    let mut found = Found::default();
    match root.get("nodes") {
        Some(Value::Array(nodes)) => UiWorkflow::new(&root, nodes).read(nodes, &mut found),
        Some(_) => return Err(not_a_workflow()),
        None => {
            for (id, node) in api_nodes(&root).ok_or_else(not_a_workflow)? {
                found.read(&api_node(id, node));
            }
        }
    }
    if found.models.is_empty() {
        return Err(WorkflowError::NoLoaders {
            file: origin.to_owned(),
        });
    }
    let mut workflow = Workflow::new(found.models);
    workflow.links = links(&root);
    Ok(workflow)
}

/// The links between nodes, as pairs of node ids: the UI format's `links` (the list form
/// `[id, from, from slot, to, to slot, type]` or objects with `origin_id` and `target_id`), or
/// the API format's inputs that name another node's output (`["4", 0]`).
fn links(root: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    if root.get("nodes").is_some() {
        for link in array_field(root, "links") {
            let (from, to) = match link {
                Value::Array(parts) => (parts.get(1), parts.get(3)),
                Value::Object(fields) => (fields.get("origin_id"), fields.get("target_id")),
                _ => continue,
            };
            if let (Some(from), Some(to)) = (from.and_then(id_text), to.and_then(id_text)) {
                pairs.push((from, to));
            }
        }
        return pairs;
    }
    for (id, node) in api_nodes(root).unwrap_or_default() {
        let inputs = node.get("inputs").and_then(Value::as_object);
        for input in inputs.into_iter().flat_map(|inputs| inputs.values()) {
            if let Some([from, Value::Number(_)]) = input.as_array().map(Vec::as_slice) {
                if let Some(from) = id_text(from) {
                    pairs.push((from, id.to_owned()));
                }
            }
        }
    }
    pairs
}

/// The files found so far, each once.
#[derive(Default)]
struct Found {
    models: Vec<WorkflowModel>,
    /// Where each (subfolder, file name) is in `models`: files of one name in two subfolders
    /// ("canny/diffusion_pytorch_model.safetensors", "depth/...") are two files.
    seen: HashMap<(Option<String>, String), usize>,
}

impl Found {
    /// Adds the files `node` references: embeddings its text names, and values that end in a
    /// model extension. A loader's other values ("default", "flux", numbers) are not files.
    fn read(&mut self, node: &Node<'_>) {
        if SKIPPED_NODES.contains(&node.node_type) {
            return;
        }
        for &(key, value) in &node.values {
            let embeddings = embedding_names(value);
            if !embeddings.is_empty() {
                for name in embeddings {
                    self.add(node.model(name, None, |_| Kind::of(ModelType::Embedding)));
                }
                continue;
            }
            let value = value.trim();
            // A custom node may take the file's address: its name is the path's last part.
            let url =
                (value.starts_with("https://") || value.starts_with("http://")).then_some(value);
            let path = url.map_or(value, |url| url.split(['?', '#']).next().unwrap_or(url));
            // The name itself must have the extension: "models/.safetensors" names no file.
            if !split_name(path).is_some_and(|(_, name)| has_model_extension(&name)) {
                continue;
            }
            self.add(node.model(path, url, |directory| kind(node.node_type, key, directory)));
        }
    }

    /// Adds `model`, or what it adds to the same file found before.
    fn add(&mut self, model: Option<WorkflowModel>) {
        let Some(model) = model else { return };
        // A name the finder would refuse ("..") cannot be looked for.
        if FileRequest::new(model.file_name.as_str()).is_err() {
            return;
        }
        let key = (model.subfolder.clone(), model.file_name.clone());
        match self.seen.get(&key).and_then(|&at| self.models.get_mut(at)) {
            Some(first) => fill(first, model),
            None => {
                self.seen.insert(key, self.models.len());
                self.models.push(model);
            }
        }
    }
}

/// What a file value's node, the name of the field holding it and its `properties.models`
/// directory say of it, the surest first: ComfyUI's own loaders, then the directory the
/// workflow states (which is the folder, and so the type when the folder is one of a type),
/// then an input name of ComfyUI's loaders, and last the words of the node's or the field's
/// name. A directory or input of a folder no type stands for ("clip_vision") means no type,
/// whatever the name suggests.
fn kind(node_type: &str, key: Option<&str>, directory: Option<&str>) -> Kind {
    if let Some(kind) = loader_kind(node_type) {
        return kind;
    }
    if let Some(directory) = directory {
        return Kind {
            model_type: folder_type(directory),
            directory: None,
        };
    }
    if let Some(kind) = key.and_then(input_kind) {
        return kind;
    }
    Kind {
        model_type: guess_type(node_type).or_else(|| key.and_then(guess_type)),
        directory: None,
    }
}

/// Fills in what `first` does not say of its file from `later`, a reference to the same file.
/// The type only when `first` has no directory either: a directory without a type means a file
/// of no type ("clip_vision"), which a later guess must not make a text encoder.
fn fill(first: &mut WorkflowModel, later: WorkflowModel) {
    if first.model_type.is_none() && first.directory.is_none() {
        first.model_type = later.model_type;
    }
    if first.directory.is_none() {
        first.directory = later.directory;
    }
    if first.url.is_none() {
        first.url = later.url;
    }
    if first.sha256.is_none() {
        first.sha256 = later.sha256;
    }
}

/// One node as either format holds it: what its files are read from.
struct Node<'a> {
    id: String,
    node_type: &'a str,
    /// Its string values, each with the name of the field that holds it when there is one.
    values: Vec<(Option<&'a str>, &'a str)>,
    /// Its `properties.models` entries, then the workflow's own `models` list.
    entries: [&'a [Value]; 2],
}

impl Node<'_> {
    /// The file `value` names, its type and folder chosen by `kind` from the directory its
    /// entry states; the entry's directory, when it states one, is the file's.
    fn model(
        &self,
        value: &str,
        url: Option<&str>,
        kind: impl FnOnce(Option<&str>) -> Kind,
    ) -> Option<WorkflowModel> {
        let (subfolder, file_name) = split_name(value)?;
        let entry = self.entry(&file_name);
        let text = |field: &str| {
            entry
                .and_then(|entry| entry.get(field))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|text| !text.is_empty())
        };
        let directory = text("directory");
        let kind = kind(directory);
        Some(WorkflowModel {
            model_type: kind.model_type,
            url: text("url").or(url).map(str::to_owned),
            sha256: text("hash").and_then(|hash| sha256_of(hash, text("hash_type"))),
            directory: directory.or(kind.directory).map(str::to_owned),
            subfolder,
            file_name,
            node_type: self.node_type.to_owned(),
            node_id: self.id.clone(),
            present_at: None,
        })
    }

    /// The model entry describing `file_name`: the node's own first, then the workflow's.
    fn entry(&self, file_name: &str) -> Option<&Map<String, Value>> {
        self.entries
            .iter()
            .flat_map(|entries| entries.iter())
            .filter_map(Value::as_object)
            .find(|entry| {
                entry
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(split_name)
                    .is_some_and(|(_, name)| name == file_name)
            })
    }
}

/// The string values in `value`, each with the name of the nearest field that holds it.
fn strings<'a>(value: &'a Value, key: Option<&'a str>, out: &mut Vec<(Option<&'a str>, &'a str)>) {
    match value {
        Value::String(text) => out.push((key, text)),
        Value::Array(items) => items.iter().for_each(|item| strings(item, key, out)),
        // rgthree's Power Lora Loader keeps a LoRA switched off in its list as
        // `{"on": false, "lora": ...}`: a run does not load it.
        Value::Object(fields) if fields.get("on") == Some(&Value::Bool(false)) => {}
        Value::Object(fields) => fields
            .iter()
            .for_each(|(name, field)| strings(field, Some(name), out)),
        _ => {}
    }
}

/// Whether a UI-format node runs: not bypassed nor muted.
fn runs(node: &Map<String, Value>) -> bool {
    !node
        .get("mode")
        .and_then(Value::as_u64)
        .is_some_and(|mode| SKIPPED_MODES.contains(&mode))
}

/// A node id as text, whether saved as a number or a string.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(number) => Some(number.to_string()),
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

fn text_field<'a>(object: &'a Map<String, Value>, field: &str) -> &'a str {
    object
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn array_field<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value
        .get(field)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// The API format's nodes (`{"4": {"class_type": ..., "inputs": {...}}}`), in the order of their
/// ids ("4" before "10", "12" before "12:5"); `None` when the JSON has none.
fn api_nodes(root: &Value) -> Option<Vec<(&str, &Map<String, Value>)>> {
    let mut nodes: Vec<_> = root
        .as_object()?
        .iter()
        .filter_map(|(id, node)| {
            let node = node.as_object()?;
            node.get("class_type")?.as_str()?;
            Some((id.as_str(), node))
        })
        .collect();
    nodes.sort_by_cached_key(|(id, _)| {
        id.split(':')
            .map(|part| (part.parse::<u64>().unwrap_or(u64::MAX), part.to_owned()))
            .collect::<Vec<_>>()
    });
    (!nodes.is_empty()).then_some(nodes)
}

fn api_node<'a>(id: &str, node: &'a Map<String, Value>) -> Node<'a> {
    let mut values = Vec::new();
    for (name, input) in node
        .get("inputs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        // `["4", 0]` is a link to another node's output, not a value.
        let link = matches!(
            input.as_array().map(Vec::as_slice),
            Some([Value::String(_), Value::Number(_)])
        );
        if !link {
            strings(input, Some(name), &mut values);
        }
    }
    Node {
        id: id.to_owned(),
        node_type: text_field(node, "class_type"),
        values,
        entries: [&[], &[]],
    }
}

/// A UI-format workflow's subgraph definitions and legacy group nodes, which nodes of its graph
/// stand for.
struct UiWorkflow<'a> {
    /// Each subgraph's id (the type of the nodes that use it) and nodes, in definition order.
    subgraphs: Vec<(&'a str, &'a [Value])>,
    /// Each group node's name (its nodes' type is "workflow>NAME") and nodes.
    groups: Vec<(&'a str, &'a [Value])>,
    /// The workflow's own `models` list.
    models: &'a [Value],
    /// The types of all nodes, whether they run or not, in the graph and in every definition
    /// (but a subgraph's own, inside it): a definition whose id or name is among them is used,
    /// and read where it is (or not at all, when its only uses are bypassed).
    used: HashSet<&'a str>,
    /// Subgraphs already read: every use of one holds the same files, so once is enough, and a
    /// subgraph that holds itself ends.
    read_subgraphs: HashSet<&'a str>,
    /// Group nodes already read.
    read_groups: HashSet<&'a str>,
}

impl<'a> UiWorkflow<'a> {
    fn new(root: &'a Value, nodes: &'a [Value]) -> Self {
        let subgraphs = match root.pointer("/definitions/subgraphs") {
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|subgraph| {
                    Some((
                        subgraph.get("id")?.as_str()?,
                        array_field(subgraph, "nodes"),
                    ))
                })
                .collect(),
            // Some tools save the definitions keyed by id.
            Some(Value::Object(by_id)) => by_id
                .iter()
                .map(|(id, subgraph)| (id.as_str(), array_field(subgraph, "nodes")))
                .collect(),
            _ => Vec::new(),
        };
        let groups = root
            .pointer("/extra/groupNodes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, group)| (name.as_str(), array_field(group, "nodes")))
            .collect();
        let type_of = |node: &'a Value| node.get("type").and_then(Value::as_str);
        let mut used: HashSet<&'a str> = nodes.iter().filter_map(type_of).collect();
        for (id, inner) in subgraphs.iter().chain(&groups) {
            used.extend(inner.iter().filter_map(type_of).filter(|kind| kind != id));
        }
        Self {
            subgraphs,
            groups,
            models: array_field(root, "models"),
            used,
            read_subgraphs: HashSet::new(),
            read_groups: HashSet::new(),
        }
    }

    fn read(&mut self, nodes: &'a [Value], found: &mut Found) {
        self.read_graph(nodes, "", 0, found);
        // Definitions no node uses still belong to the workflow: the editor can add them.
        for (id, nodes) in self.subgraphs.clone() {
            if !self.used.contains(id) && self.read_subgraphs.insert(id) {
                self.read_graph(nodes, &format!("{id}:"), 1, found);
            }
        }
        for (name, nodes) in self.groups.clone() {
            let used = ["workflow>", "workflow/"]
                .iter()
                .any(|prefix| self.used.contains(format!("{prefix}{name}").as_str()));
            if !used && self.read_groups.insert(name) {
                self.read_group(nodes, None, name, found);
            }
        }
    }

    fn read_graph(&mut self, nodes: &'a [Value], prefix: &str, depth: usize, found: &mut Found) {
        for (position, node) in nodes.iter().enumerate() {
            // A bypassed or muted subgraph or group node skips all inside it too.
            let Some(object) = node.as_object().filter(|object| runs(object)) else {
                continue;
            };
            let id = object
                .get("id")
                .and_then(id_text)
                .unwrap_or_else(|| position.to_string());
            let id = format!("{prefix}{id}");
            let node_type = text_field(object, "type");
            if let Some(inner) = self.subgraph(node_type) {
                if depth < MAX_SUBGRAPH_DEPTH && self.read_subgraphs.insert(node_type) {
                    self.read_graph(inner, &format!("{id}:"), depth + 1, found);
                }
            } else if let Some((name, inner)) = self.group(node_type) {
                self.read_groups.insert(name);
                let widgets = object.get("widgets_values").and_then(Value::as_array);
                if self.read_group(inner, widgets.map(Vec::as_slice), &id, found) {
                    continue;
                }
            }
            found.read(&self.ui_node(object, id, None));
        }
    }

    /// Reads a group node's inner nodes as node `id`'s. Its own widget values, when they are
    /// its inner nodes' one after the other, are the ones a run uses (the definition keeps those
    /// the group was made with); returns whether they were read so.
    fn read_group(
        &self,
        inner: &'a [Value],
        own: Option<&'a [Value]>,
        id: &str,
        found: &mut Found,
    ) -> bool {
        let counts: Vec<usize> = inner
            .iter()
            .map(|node| array_field(node, "widgets_values").len())
            .collect();
        let mut own = own.filter(|own| own.len() == counts.iter().sum::<usize>());
        let mapped = own.is_some();
        for (position, (node, count)) in inner.iter().zip(counts).enumerate() {
            let Some(object) = node.as_object() else {
                continue;
            };
            let widgets = own.map(|values| {
                let (mine, rest) = values.split_at(count.min(values.len()));
                own = Some(rest);
                mine
            });
            // Its values were taken from the group's all the same: they are its share of them.
            if !runs(object) {
                continue;
            }
            let index = object
                .get("index")
                .and_then(id_text)
                .unwrap_or_else(|| position.to_string());
            found.read(&self.ui_node(object, format!("{id}:{index}"), widgets));
        }
        mapped
    }

    fn subgraph(&self, node_type: &str) -> Option<&'a [Value]> {
        self.subgraphs
            .iter()
            .find(|(id, _)| *id == node_type)
            .map(|(_, nodes)| *nodes)
    }

    /// The group node a node type stands for: "workflow>NAME" (or "workflow/NAME" before
    /// ComfyUI's frontend 1.2.63).
    fn group(&self, node_type: &str) -> Option<(&'a str, &'a [Value])> {
        let name = node_type
            .strip_prefix("workflow>")
            .or_else(|| node_type.strip_prefix("workflow/"))?;
        self.groups
            .iter()
            .find(|(group, _)| *group == name)
            .copied()
    }

    /// A UI node, its widget values replaced by `widgets` when given.
    fn ui_node(
        &self,
        object: &'a Map<String, Value>,
        id: String,
        widgets: Option<&'a [Value]>,
    ) -> Node<'a> {
        let mut values = Vec::new();
        match widgets {
            Some(widgets) => widgets
                .iter()
                .for_each(|value| strings(value, None, &mut values)),
            // Usually a list; some custom nodes save an object of named values.
            None => {
                if let Some(widgets) = object.get("widgets_values") {
                    strings(widgets, None, &mut values);
                }
            }
        }
        let own = object
            .get("properties")
            .map_or(&[][..], |properties| array_field(properties, "models"));
        Node {
            id,
            node_type: text_field(object, "type"),
            values,
            entries: [own, self.models],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Vec<WorkflowModel>, WorkflowError> {
        parse_workflow(json, Path::new("w.json")).map(|w| w.models)
    }

    fn names(json: &str) -> Vec<(String, String, Option<ModelType>)> {
        parse(json)
            .unwrap()
            .into_iter()
            .map(|m| (m.file_name, m.node_id, m.model_type))
            .collect()
    }

    #[test]
    fn shapes_of_neither_format_are_not_workflows() {
        for json in [
            "[]",
            "null",
            "{}",
            r#"{"nodes": {"4": {}}}"#,
            r#"{"4": {"inputs": {"ckpt_name": "x.safetensors"}}}"#,
        ] {
            assert!(
                matches!(parse(json), Err(WorkflowError::NotAWorkflow { .. })),
                "{json}"
            );
        }
        assert!(matches!(
            parse(r#"{"nodes": []}"#),
            Err(WorkflowError::NoLoaders { .. })
        ));
    }

    #[test]
    fn odd_values_are_skipped_not_fatal() {
        // Names the finder refuses (too long, a NUL) are skipped too.
        let long = "x".repeat(300);
        let json = r#"{"nodes": [
            1, null, "x",
            {"id": "a", "type": "VAELoader", "widgets_values": [[["deep.safetensors"]], null, 3]},
            {"type": "LoraLoader", "widgets_values": ["..", "/", "", "a/.pt", "ok.safetensors"]},
            {"id": 8, "type": "VAELoader", "widgets_values": ["LONG.safetensors", "x\u0000.pt"]},
            {"id": 9, "type": 7, "widgets_values": {"nested": {"file": "n.ckpt"}}}
        ], "definitions": {"subgraphs": [{"nodes": 5}, 3]}, "extra": {"groupNodes": []}}"#
            .replace("LONG", &long);
        assert_eq!(
            names(&json),
            [
                ("deep.safetensors".into(), "a".into(), Some(ModelType::Vae)),
                ("ok.safetensors".into(), "4".into(), Some(ModelType::Lora)),
                ("n.ckpt".into(), "9".into(), None),
            ]
        );
    }

    #[test]
    fn a_subgraph_that_holds_itself_is_read_once() {
        let json = r#"{"nodes": [{"id": 1, "type": "loop"}],
            "definitions": {"subgraphs": [{"id": "loop", "nodes": [
                {"id": 2, "type": "loop"},
                {"id": 3, "type": "VAELoader", "widgets_values": ["ae.safetensors"]}
            ]}]}}"#;
        assert_eq!(
            names(json),
            [("ae.safetensors".into(), "1:3".into(), Some(ModelType::Vae))]
        );
    }

    #[test]
    fn a_group_nodes_values_that_do_not_line_up_leave_its_definitions_in_place() {
        // The instance has one value too many to split among its inner nodes.
        let json = r#"{"nodes": [{"id": 5, "type": "workflow/Loaders",
                "widgets_values": ["new.safetensors", "extra"]}],
            "extra": {"groupNodes": {"Loaders": {"nodes": [
                {"type": "CheckpointLoaderSimple", "widgets_values": ["old.safetensors"], "index": 0}
            ]}}}}"#;
        assert_eq!(
            names(json),
            [
                (
                    "old.safetensors".into(),
                    "5:0".into(),
                    Some(ModelType::Checkpoint)
                ),
                ("new.safetensors".into(), "5".into(), None),
            ]
        );
    }

    #[test]
    fn the_workflows_own_models_list_describes_files_its_nodes_do_not() {
        let json = r#"{"nodes": [{"id": 1, "type": "MyLoader", "widgets_values": ["m.safetensors"]}],
            "models": [{"name": "m.safetensors", "url": "https://example.org/m",
                        "directory": "loras", "hash": "not a sha"}]}"#;
        let model = &parse(json).unwrap()[0];
        assert_eq!(model.url.as_deref(), Some("https://example.org/m"));
        assert_eq!(model.model_type, Some(ModelType::Lora));
        assert_eq!(model.sha256, None);
    }

    #[test]
    fn an_api_input_names_the_type_when_the_node_does_not() {
        let json = r#"{"1": {"class_type": "Efficient Loader", "inputs": {
            "ckpt_name": "a.safetensors", "vae_name": "b.safetensors", "lora_name": "None",
            "model": ["2", 0]}}}"#;
        assert_eq!(
            names(json),
            [
                (
                    "a.safetensors".into(),
                    "1".into(),
                    Some(ModelType::Checkpoint)
                ),
                ("b.safetensors".into(), "1".into(), Some(ModelType::Vae)),
            ]
        );
    }

    /// Each file's name, type and directory.
    fn kinds(json: &str) -> Vec<(String, Option<ModelType>, Option<String>)> {
        parse(json)
            .unwrap()
            .into_iter()
            .map(|m| (m.file_name, m.model_type, m.directory))
            .collect()
    }

    #[test]
    fn loaders_of_folders_without_a_type_give_their_folder_and_no_type() {
        let json = r#"{"nodes": [
            {"id": 1, "type": "CLIPVisionLoader", "widgets_values": ["vit-h.safetensors"]},
            {"id": 2, "type": "StyleModelLoader", "widgets_values": ["flux1-redux-dev.safetensors"]},
            {"id": 3, "type": "IPAdapterModelLoader", "widgets_values": ["ip-adapter_sd15.safetensors"]},
            {"id": 4, "type": "UpscaleModelLoader", "widgets_values": ["4x-UltraSharp.pth"]},
            {"id": 5, "type": "HypernetworkLoader", "widgets_values": ["anime.pt", 1]},
            {"id": 6, "type": "CLIPLoader", "widgets_values": ["clip_l.safetensors", "stable_diffusion"]}
        ]}"#;
        let kind = |name: &str, model_type, directory: &str| {
            (name.to_owned(), model_type, Some(directory.to_owned()))
        };
        assert_eq!(
            kinds(json),
            [
                kind("vit-h.safetensors", None, "clip_vision"),
                kind("flux1-redux-dev.safetensors", None, "style_models"),
                kind("ip-adapter_sd15.safetensors", None, "ipadapter"),
                kind(
                    "4x-UltraSharp.pth",
                    Some(ModelType::Upscaler),
                    "upscale_models"
                ),
                kind("anime.pt", None, "hypernetworks"),
                kind(
                    "clip_l.safetensors",
                    Some(ModelType::TextEncoder),
                    "text_encoders"
                ),
            ]
        );
    }

    #[test]
    fn the_workflows_directory_and_a_known_input_outweigh_the_nodes_name() {
        // The name says "CLIP" and "Checkpoint": the entry and the input say otherwise.
        let ui = r#"{"nodes": [{"id": 1, "type": "CLIPVisionLoaderAdvanced",
            "widgets_values": ["vit-g.safetensors"],
            "properties": {"models": [{"name": "vit-g.safetensors", "directory": "clip_vision"}]}}]}"#;
        assert_eq!(
            kinds(ui),
            [("vit-g.safetensors".into(), None, Some("clip_vision".into()))]
        );
        let api = r#"{"1": {"class_type": "CLIPCheckpointLoader", "inputs": {
                "ckpt_name": "a.safetensors", "ipadapter_file": "b.safetensors"}},
            "2": {"class_type": "ClipStyleLoader", "inputs": {"style_model_name": "c.safetensors"}}}"#;
        assert_eq!(
            kinds(api),
            [
                (
                    "a.safetensors".into(),
                    Some(ModelType::Checkpoint),
                    Some("checkpoints".into())
                ),
                ("b.safetensors".into(), None, Some("ipadapter".into())),
                ("c.safetensors".into(), None, Some("style_models".into())),
            ]
        );
    }

    #[test]
    fn a_bypassed_group_node_and_a_lora_switched_off_are_skipped_in_either_format() {
        // The group's only use is bypassed: its definition is not read as an unused one.
        let ui = r#"{"nodes": [
                {"id": 1, "type": "workflow>Loaders", "mode": 4, "widgets_values": ["a.safetensors"]},
                {"id": 2, "type": "VAELoader", "mode": 0, "widgets_values": ["ae.safetensors"]}
            ],
            "extra": {"groupNodes": {"Loaders": {"nodes": [
                {"type": "CheckpointLoaderSimple", "widgets_values": ["a.safetensors"], "index": 0}
            ]}}}}"#;
        assert_eq!(
            names(ui),
            [("ae.safetensors".into(), "2".into(), Some(ModelType::Vae))]
        );
        let api = r#"{"3": {"class_type": "Power Lora Loader (rgthree)", "inputs": {
            "lora_1": {"on": false, "lora": "off.safetensors", "strength": 1},
            "lora_2": {"on": true, "lora": "on.safetensors", "strength": 1},
            "model": ["4", 0]}}}"#;
        assert_eq!(
            names(api),
            [("on.safetensors".into(), "3".into(), Some(ModelType::Lora))]
        );
    }

    #[test]
    fn a_repeated_file_takes_what_the_first_reference_lacks_from_the_later() {
        let json = r#"{"nodes": [
            {"id": 1, "type": "MyLoader", "widgets_values": ["m.safetensors"]},
            {"id": 2, "type": "LoraLoader", "widgets_values": ["m.safetensors", 1, 1],
             "properties": {"models": [{"name": "m.safetensors", "url": "https://example.org/m"}]}},
            {"id": 3, "type": "MyLoader", "widgets_values": ["a/m.safetensors"]}
        ]}"#;
        let models = parse(json).unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].node_id, "1");
        assert_eq!(models[0].model_type, Some(ModelType::Lora));
        assert_eq!(models[0].url.as_deref(), Some("https://example.org/m"));
        assert_eq!(models[0].directory.as_deref(), Some("loras"));
        assert_eq!(models[1].subfolder.as_deref(), Some("a"));
    }

    #[test]
    fn links_are_read_in_both_formats() {
        let ui = r#"{"nodes": [
            {"id": 4, "type": "CheckpointLoaderSimple", "widgets_values": ["a.safetensors"]},
            {"id": 10, "type": "LoraLoader", "widgets_values": ["b.safetensors", 1, 1]}],
            "links": [[1, 4, 0, 10, 0, "MODEL"], {"id": 2, "origin_id": 10, "target_id": 3}]}"#;
        let workflow = parse_workflow(ui, Path::new("w.json")).unwrap();
        assert_eq!(
            workflow.links,
            [("4".into(), "10".into()), ("10".into(), "3".into())]
        );
        assert!(workflow.connected("4", "3"));
        let api = r#"{"4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "a.safetensors"}},
            "10": {"class_type": "LoraLoader", "inputs": {"lora_name": "b.safetensors", "model": ["4", 0], "strength_model": 1}}}"#;
        let workflow = parse_workflow(api, Path::new("w.json")).unwrap();
        assert_eq!(workflow.links, [("4".to_owned(), "10".to_owned())]);
    }

    #[test]
    fn text_that_is_not_utf8_is_not_json() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("latin1.json");
        fs::write(&file, b"{\"nodes\": [\"\xe9\"]}").unwrap();
        let error = read_workflow(&file).unwrap_err();
        assert!(matches!(error, WorkflowError::NotJson { .. }), "{error}");
    }
}
