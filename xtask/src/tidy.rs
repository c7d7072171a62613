//! Repository rules checked by tests: the crate dependency rules of the brief, and the house
//! style that every crate opens with a `//!` paragraph.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// A rule of the brief's crate table: `crate` must not reach any of `forbidden`, directly or not.
pub struct Rule {
    pub krate: &'static str,
    pub forbidden: &'static [&'static str],
    pub why: &'static str,
}

const HTTP_LLM_STORE_RUNTIME: &[&str] = &[
    "reqwest",
    "hyper",
    "axum",
    "async-openai",
    "qdrant-edge",
    "qdrant-client",
    "tokio",
    "candle-core",
    "ort",
    "moka",
    "governor",
    "ferret-llm",
    "ferret-embed",
];
const BACKENDS: &[&str] = &[
    "ferret-backends-local",
    "ferret-backends-qdrant",
    "ferret-backends-web",
    "ferret-backends-hub",
];

pub const RULES: &[Rule] = &[
    Rule {
        krate: "ferret-core",
        forbidden: HTTP_LLM_STORE_RUNTIME,
        why: "core is vocabulary only",
    },
    Rule {
        krate: "ferret-llm",
        forbidden: BACKENDS,
        why: "models know nothing of backends",
    },
    Rule {
        krate: "ferret-embed",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-llm",
        ],
        why:
            "embedders know nothing of backends, and need only the OpenAI HTTP layer of the models",
    },
    Rule {
        krate: "ferret-openai",
        forbidden: &[
            "ferret-llm",
            "ferret-exec",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "the OpenAI HTTP layer is shared by the model and the embedder, below both",
    },
    Rule {
        krate: "ferret-plan",
        forbidden: &[
            "ferret-agent",
            "ferret-exec",
            "ferret-llm",
            "ferret-synthesis",
            "ferret-grading",
            "ferret-query-intel",
            "tokio",
            "reqwest",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "the plan language is text and vocabulary: whoever reads or writes plans pays for nothing else",
    },
    Rule {
        krate: "ferret-query-intel",
        forbidden: &[
            "ferret-exec",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "query understanding never runs searches",
    },
    Rule {
        krate: "ferret-layers",
        forbidden: &[
            "ferret-exec",
            "ferret-llm",
            "ferret-embed",
            "async-openai",
            "reqwest",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "call layers know calls, not backends or models, so both can use them",
    },
    Rule {
        krate: "ferret-record",
        forbidden: &[
            "ferret-exec",
            "ferret-agent",
            "ferret-llm",
            "ferret-embed",
            "reqwest",
            "tokio",
            "candle-core",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "a recording sits at the traits' seams: it knows the traits, not what implements them",
    },
    Rule {
        krate: "ferret-exec",
        forbidden: &[
            "ferret-llm",
            "async-openai",
            "candle-core",
            "candle-transformers",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "the executor runs any backend, and no model",
    },
    Rule {
        krate: "ferret-grading",
        forbidden: &[
            "ferret-exec",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "grading judges hits, whoever found them",
    },
    Rule {
        krate: "ferret-synthesis",
        forbidden: &[
            "ferret-exec",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
        ],
        why: "synthesis writes from hits, whoever found them",
    },
    Rule {
        krate: "ferret-agent",
        forbidden: BACKENDS,
        why: "strategies see backends only through the executor",
    },
    Rule {
        krate: "ferret-collection",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-embed",
            "ferret-llm",
            "reqwest",
            "candle-core",
        ],
        why: "the shared schema is data and text, no store, model or HTTP",
    },
    Rule {
        krate: "ferret-backends-local",
        forbidden: &[
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-llm",
            "ferret-embed",
        ],
        why: "a backend stands alone and takes any embedder",
    },
    Rule {
        krate: "ferret-backends-qdrant",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-llm",
            "ferret-embed",
        ],
        why: "a backend stands alone and takes any embedder",
    },
    Rule {
        krate: "ferret-backends-web",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-hub",
        ],
        why: "a backend stands alone",
    },
    Rule {
        krate: "ferret-backends-hub",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-exec",
            "ferret-agent",
            "ferret-llm",
            "ferret-embed",
        ],
        why: "a backend stands alone: layers are the executor's, judgement the agent's",
    },
    Rule {
        krate: "ferret-fetch",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-agent",
            "ferret-llm",
            "ferret-embed",
            "ferret-collection",
        ],
        why: "fetching a page is one guarded HTTP exchange: what becomes of it is the caller's",
    },
    Rule {
        krate: "ferret-research",
        forbidden: &[
            "ferret-agent",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-embed",
        ],
        why: "research searches through traits and writes with synthesis's report stages: the facade wires the indexes, the web engines and the agent",
    },
    Rule {
        krate: "ferret-knowledge",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-agent",
            "ferret-embed",
        ],
        why: "the registry works over any index: the index is a trait its caller implements",
    },
    Rule {
        krate: "ferret-workflow",
        forbidden: &[
            "reqwest",
            "ferret-http",
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-agent",
            "ferret-llm",
            "ferret-embed",
        ],
        why: "reading a workflow is reading files: no network, no search, no model",
    },
    Rule {
        krate: "ferret-http",
        forbidden: &[
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-exec",
            "ferret-layers",
            "ferret-llm",
            "ferret-embed",
            "ferret-agent",
        ],
        why: "the shared HTTP side knows HTTP, not providers or what calls it",
    },
];

/// Libraries report typed errors; `anyhow` belongs to binaries and xtask.
const ANYHOW_ALLOWED: &[&str] = &["ferret-cli", "ferret-examples", "xtask"];

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

/// Package name to the names of its normal and build dependencies.
type Graph = HashMap<String, Vec<String>>;

/// The workspace members and the normal (non-dev) dependency graph, by package name.
fn dependency_graph() -> anyhow::Result<(HashSet<String>, Graph)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(workspace_root())
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let name_of: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let members: HashSet<String> = meta["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| name_of.get(id.as_str()?).map(|n| n.to_string()))
        .collect();
    let mut graph = Graph::new();
    for node in meta["resolve"]["nodes"].as_array().into_iter().flatten() {
        let Some(name) = node["id"].as_str().and_then(|id| name_of.get(id)) else {
            continue;
        };
        let deps = node["deps"].as_array().into_iter().flatten().filter(|d| {
            d["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null() || k["kind"] == "build")
        });
        let entry = graph.entry(name.to_string()).or_default();
        entry.extend(deps.filter_map(|d| name_of.get(d["pkg"].as_str()?).map(|n| n.to_string())));
    }
    Ok((members, graph))
}

fn reachable(graph: &Graph, from: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(next) = stack.pop() {
        for dep in graph.get(&next).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen
}

/// Every violation of the dependency rules, as sentences.
pub fn dependency_violations() -> anyhow::Result<Vec<String>> {
    let (members, graph) = dependency_graph()?;
    Ok(violations_in(&members, &graph))
}

/// The dependency rules `graph` breaks, for the crates in `members`. A rule for a crate that does
/// not exist yet waits for it: the day it appears, its dependencies are checked.
fn violations_in(members: &HashSet<String>, graph: &Graph) -> Vec<String> {
    let mut violations = Vec::new();
    for rule in RULES.iter().filter(|r| members.contains(r.krate)) {
        let deps = reachable(graph, rule.krate);
        for forbidden in rule.forbidden.iter().filter(|f| deps.contains(**f)) {
            violations.push(format!(
                "{} depends on {forbidden}: {}",
                rule.krate, rule.why
            ));
        }
    }
    for member in members
        .iter()
        .filter(|m| !ANYHOW_ALLOWED.contains(&m.as_str()))
    {
        if graph
            .get(member)
            .is_some_and(|deps| deps.iter().any(|d| d == "anyhow"))
        {
            violations.push(format!(
                "{member} depends on anyhow: libraries return typed errors"
            ));
        }
    }
    // xtask is no library: its evaluations run the finder against the hubs' stand-ins.
    for member in members.iter().filter(|m| m.as_str() != "xtask") {
        if graph
            .get(member)
            .is_some_and(|deps| deps.iter().any(|d| d == TEST_SUPPORT))
        {
            violations.push(format!(
                "{member} depends on {TEST_SUPPORT}: test doubles are dev-dependencies only"
            ));
        }
    }
    // The service layers reach backends through the facade only.
    for service in ["ferret-server", "ferret-mcp"] {
        let Some(deps) = graph.get(service) else {
            continue;
        };
        for backend in BACKENDS.iter().filter(|b| deps.iter().any(|d| d == *b)) {
            violations.push(format!(
                "{service} depends on {backend} directly: it goes through the facade"
            ));
        }
    }
    violations.sort();
    violations
}

/// The crate of test doubles, which only tests may use.
const TEST_SUPPORT: &str = "ferret-test-support";

/// The module a source file is (`src/planner/stages.rs` → `planner::stages`, `src/planner/mod.rs`
/// → `planner`); empty for the crate root.
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?;
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = path.pop()?;
    let stem = last.strip_suffix(".rs")?;
    let at_root = path.is_empty() && matches!(stem, "lib" | "main");
    if stem != "mod" && !at_root {
        path.push(stem.to_owned());
    }
    Some(path)
}

/// The paths a file names through `crate::`, `super::` and `self::`, each as the segments
/// after its prefix (a `{...}` group gives one path per member), with the module it starts
/// from resolved against `module`.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let Some(offset) = ["crate::", "super::", "self::"]
            .iter()
            .filter_map(|p| rest.find(p))
            .min()
        else {
            break;
        };
        let start = at + offset;
        at = start + 1;
        // `foo::crate::` or `my_super::` is not a path prefix.
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let mut base: Vec<String> = module.to_vec();
        let mut cursor = start;
        loop {
            let here = &text[cursor..];
            if let Some(next) = here.strip_prefix("crate::") {
                base.clear();
                cursor = text.len() - next.len();
            } else if let Some(next) = here.strip_prefix("super::") {
                base.pop();
                cursor = text.len() - next.len();
            } else if let Some(next) = here.strip_prefix("self::") {
                cursor = text.len() - next.len();
            } else {
                break;
            }
        }
        at = cursor;
        for tail in path_tails(&text[cursor..]) {
            found.push(base.iter().cloned().chain(tail).collect());
        }
    }
    found
}

/// The segments of the path at the start of `text`: `a::b::C` gives one, `{a::X, b}` one per
/// member (the first level of the group only).
fn path_tails(text: &str) -> Vec<Vec<String>> {
    let ident = |t: &str| -> String {
        t.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => return true,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    false
                })
                .map_or(group.len(), |(i, _)| i);
            return group[..end]
                .split(',')
                .map(str::trim)
                .filter(|member| !member.is_empty())
                .map(|member| {
                    let mut path = segments.clone();
                    path.extend(member.split("::").map(|s| ident(s.trim())));
                    path
                })
                .collect();
        }
        let name = ident(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        segments.push(name);
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    vec![segments]
}

/// What of a source file the module graph reads: its code before its tests (a test may reach
/// anywhere), without comments (a doc link is not a dependency).
fn code_of(text: &str) -> String {
    text.lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each module cycle in the crate in `src`: modules of one parent that name each other, through
/// `crate::`, `super::` or `self::` paths, or through a name their parent re-exports from one
/// of them (`pub use child::Name`), as `a -> b -> a` (`parent::a -> parent::b -> parent::a`
/// below the root).
pub fn module_cycles(src: &Path) -> anyhow::Result<Vec<String>> {
    let mut files: Vec<(Vec<String>, String)> = Vec::new();
    let mut stack = vec![src.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Some(module) = module_path(src, &path) {
                // A `tests.rs` is a test module of its own: tests may reach anywhere.
                if module.last().is_some_and(|m| m == "tests") {
                    continue;
                }
                files.push((module, code_of(&std::fs::read_to_string(&path)?)));
            }
        }
    }
    let modules: HashSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    // The names each module re-exports from a child: `pub use child::{A, B}`.
    let mut exported: HashMap<Vec<String>, HashMap<String, String>> = HashMap::new();
    for (module, text) in &files {
        for line in text.lines().map(str::trim) {
            let Some(used) = line.strip_prefix("pub use ") else {
                continue;
            };
            let used = used.strip_prefix("self::").unwrap_or(used);
            for path in path_tails(used) {
                if let [child, .., name] = path.as_slice() {
                    let mut child_module = module.clone();
                    child_module.push(child.clone());
                    if modules.contains(&child_module) {
                        exported
                            .entry(module.clone())
                            .or_default()
                            .insert(name.clone(), child.clone());
                    }
                }
            }
        }
    }
    // Edges between siblings, by parent.
    let mut edges: HashMap<Vec<String>, HashMap<String, HashSet<String>>> = HashMap::new();
    for (module, text) in &files {
        for path in named_paths(text, module) {
            // The longest module the path names, then through its re-exports.
            let mut target: Vec<String> = Vec::new();
            let mut segments = path.iter();
            for segment in segments.by_ref() {
                let mut longer = target.clone();
                longer.push(segment.clone());
                if modules.contains(&longer) {
                    target = longer;
                    continue;
                }
                match exported.get(&target).and_then(|names| names.get(segment)) {
                    Some(child) => target.push(child.clone()),
                    None => break,
                }
                break;
            }
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue; // itself, an ancestor or a descendant
            }
            edges
                .entry(module[..common].to_vec())
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, edges) in &edges {
        let prefix: String = parent.iter().map(|p| format!("{p}::")).collect();
        let mut children: Vec<&String> = edges.keys().collect();
        children.sort();
        for start in children {
            // A path from `start` back to itself, found depth first.
            let mut paths = vec![vec![start.clone()]];
            let mut seen: HashSet<String> = HashSet::new();
            while let Some(path) = paths.pop() {
                let last = path.last().expect("paths are never empty");
                for next in edges.get(last).into_iter().flatten() {
                    if next == start {
                        let cycle = path
                            .iter()
                            .chain([start])
                            .map(|m| format!("{prefix}{m}"))
                            .collect::<Vec<_>>()
                            .join(" -> ");
                        cycles.push(cycle);
                    } else if seen.insert(next.clone()) {
                        paths.push(path.iter().chain([next]).cloned().collect());
                    }
                }
            }
        }
    }
    cycles.sort();
    cycles.dedup();
    Ok(cycles)
}

/// Crates whose `lib.rs` does not open with a `//!` paragraph.
pub fn missing_crate_docs() -> anyhow::Result<Vec<String>> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(workspace_root().join("crates"))? {
        let lib = entry?.path().join("src/lib.rs");
        if lib.is_file() && !std::fs::read_to_string(&lib)?.starts_with("//!") {
            missing.push(lib.display().to_string());
        }
    }
    Ok(missing)
}

/// The stage crates a user can import for their heuristics alone.
pub const LIGHT_CRATES: &[&str] = &["ferret-query-intel", "ferret-grading", "ferret-synthesis"];

/// Crates that mean an HTTP client or a model runtime.
pub const HEAVY_CRATES: &[&str] = &[
    "reqwest",
    "hyper",
    "async-openai",
    "candle-core",
    "candle-transformers",
    "tokenizers",
    "ort",
];

/// The heavy crates in `krate`'s normal dependency graph with no default features, as cargo
/// resolves it for that crate alone.
pub fn heavy_dependencies(krate: &str) -> anyhow::Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "tree",
            "-p",
            krate,
            "-e",
            "normal",
            "--no-default-features",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "cargo tree -p {krate} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut heavy: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| HEAVY_CRATES.contains(name))
        .map(str::to_owned)
        .collect();
    heavy.sort();
    heavy.dedup();
    Ok(heavy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heuristic_stage_crates_build_with_no_http_client_and_no_model_runtime() {
        for krate in LIGHT_CRATES {
            let heavy = heavy_dependencies(krate).unwrap();
            assert!(
                heavy.is_empty(),
                "{krate} with no default features pulls in {heavy:?}"
            );
        }
        // The check sees heavy crates where they are: the embedder crate runs models.
        let embed = heavy_dependencies("ferret-embed").unwrap();
        assert!(embed.contains(&"candle-core".to_owned()), "{embed:?}");
    }

    #[test]
    fn crates_keep_the_dependency_rules_of_the_brief() {
        let violations = dependency_violations().unwrap();
        assert!(
            violations.is_empty(),
            "dependency rules broken:\n{}",
            violations.join("\n")
        );
    }

    #[test]
    fn a_crate_that_appears_later_is_held_to_its_rules() {
        let graph: Graph = [
            (
                "ferret-backends-web",
                vec!["ferret-core", "ferret-backends-local"],
            ),
            ("ferret-server", vec!["ferret", "ferret-backends-qdrant"]),
            (
                "ferret",
                vec!["ferret-backends-local", "ferret-backends-qdrant"],
            ),
            ("ferret-backends-local", vec!["ferret-core"]),
            ("ferret-backends-qdrant", vec!["ferret-core"]),
            ("ferret-core", vec![]),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into_iter().map(String::from).collect()))
        .collect();
        let members: HashSet<String> = graph.keys().cloned().collect();
        let violations = violations_in(&members, &graph);
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with("ferret-backends-web depends on ferret-backends-local")),
            "{violations:?}"
        );
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with("ferret-server depends on ferret-backends-qdrant directly")),
            "{violations:?}"
        );
        assert_eq!(
            violations.len(),
            2,
            "through the facade is fine: {violations:?}"
        );
    }

    #[test]
    fn the_rules_cover_the_crates_that_exist() {
        let (members, _) = dependency_graph().unwrap();
        for rule in RULES {
            let folder = workspace_root().join("crates").join(rule.krate);
            assert_eq!(
                members.contains(rule.krate),
                folder.is_dir(),
                "{} is not a workspace member",
                rule.krate
            );
        }
        assert!(members.contains("ferret-core"));
    }

    #[test]
    fn reachability_follows_transitive_dependencies() {
        let graph: Graph = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec![])]
            .into_iter()
            .map(|(k, v)| (k.into(), v.into_iter().map(String::from).collect()))
            .collect();
        assert!(reachable(&graph, "a").contains("c"));
        assert!(!reachable(&graph, "b").contains("a"));
    }

    #[test]
    fn no_crate_has_a_module_cycle() {
        let mut found = Vec::new();
        let crates = std::fs::read_dir(workspace_root().join("crates")).unwrap();
        let sources = crates
            .map(|entry| entry.unwrap().path().join("src"))
            .chain([workspace_root().join("xtask/src")]);
        for src in sources {
            if src.is_dir() {
                for cycle in module_cycles(&src).unwrap() {
                    found.push(format!("{}: {cycle}", src.display()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "modules that name each other:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn a_cycle_between_modules_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("lib.rs"), "mod a; mod b; use crate::a::X;").unwrap();
        std::fs::write(dir.path().join("a.rs"), "use crate::b::Y;").unwrap();
        std::fs::write(dir.path().join("b/mod.rs"), "mod c;").unwrap();
        std::fs::write(dir.path().join("b/c.rs"), "use crate::a::X;").unwrap();
        assert_eq!(
            module_cycles(dir.path()).unwrap(),
            ["a -> b -> a", "b -> a -> b"]
        );
        std::fs::write(dir.path().join("b/c.rs"), "use super::Z;").unwrap();
        assert!(module_cycles(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_cycle_through_super_and_a_parents_reexport_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(dir.path().join("lib.rs"), "mod p;").unwrap();
        std::fs::write(
            p.join("mod.rs"),
            "mod x;\nmod y;\npub use x::{Thing, Other};",
        )
        .unwrap();
        std::fs::write(p.join("x.rs"), "use super::{y::Helper, Thing};").unwrap();
        std::fs::write(p.join("y.rs"), "use super::Other;").unwrap();
        assert_eq!(
            module_cycles(dir.path()).unwrap(),
            ["p::x -> p::y -> p::x", "p::y -> p::x -> p::y"]
        );
        std::fs::write(p.join("y.rs"), "use crate::p::x::Thing;").unwrap();
        assert_eq!(
            module_cycles(dir.path()).unwrap().len(),
            2,
            "the same through crate::"
        );
        std::fs::write(p.join("y.rs"), "pub struct Helper;").unwrap();
        assert!(module_cycles(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn every_crate_opens_with_a_doc_paragraph() {
        let missing = missing_crate_docs().unwrap();
        assert!(
            missing.is_empty(),
            "lib.rs without a leading //! paragraph: {missing:?}"
        );
    }
}
