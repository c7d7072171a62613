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
            "ferret-backends-local",
            "ferret-backends-qdrant",
            "ferret-backends-web",
            "ferret-backends-hub",
            "ferret-embed",
        ],
        why: "research searches through traits: the facade wires the indexes and the web engines",
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
const ANYHOW_ALLOWED: &[&str] = &["ferret-cli", "xtask"];

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
    for member in members {
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

/// The top-level module a source file belongs to (`src/strategy/auto.rs` → `strategy`); `None`
/// for the crate root.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// Each module cycle among the top-level modules of the crate in `src` (a module naming another
/// through `crate::`), as `a -> b -> a`.
pub fn module_cycles(src: &Path) -> anyhow::Result<Vec<String>> {
    let mut edges: HashMap<String, HashSet<String>> = HashMap::new();
    let mut stack = vec![src.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Some(from) =
                top_module(src, &path).filter(|_| path.extension().is_some_and(|e| e == "rs"))
            else {
                continue;
            };
            let text = std::fs::read_to_string(&path)?;
            let targets = edges.entry(from.clone()).or_default();
            for (at, _) in text.match_indices("crate::") {
                let name: String = text[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty()
                    && name != from
                    && name.chars().next().is_some_and(|c| c.is_lowercase())
                {
                    targets.insert(name);
                }
            }
        }
    }
    let mut cycles = Vec::new();
    let mut modules: Vec<&String> = edges.keys().collect();
    modules.sort();
    for start in modules {
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
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" -> ");
                    cycles.push(cycle);
                } else if seen.insert(next.clone()) {
                    paths.push(path.iter().chain([next]).cloned().collect());
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
        for entry in std::fs::read_dir(workspace_root().join("crates")).unwrap() {
            let src = entry.unwrap().path().join("src");
            if src.is_dir() {
                let cycles = module_cycles(&src).unwrap();
                assert!(
                    cycles.is_empty(),
                    "{}: modules that name each other: {cycles:?}",
                    src.display()
                );
            }
        }
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
    fn every_crate_opens_with_a_doc_paragraph() {
        let missing = missing_crate_docs().unwrap();
        assert!(
            missing.is_empty(),
            "lib.rs without a leading //! paragraph: {missing:?}"
        );
    }
}
