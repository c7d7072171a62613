//! The workflow fixtures (`fixtures/workflow/*`): each folder a workflow and what reading it must
//! give, the model files in order or an error.

use std::fs;
use std::path::{Path, PathBuf};

use ferret_core::ModelType;
use ferret_workflow::{read_workflow, WorkflowModel};
use serde::Deserialize;

/// The cases the fixtures must hold at least: a folder lost must fail the test.
const CASES: [&str; 14] = [
    "ui-basic",
    "api-format",
    "subgraph",
    "group-node",
    "custom-node-by-extension",
    "gguf-and-dual-clip",
    "embedding-in-prompt",
    "subfolder-windows-path",
    "duplicates",
    "same-name-different-folders",
    "bypassed-and-muted",
    "not-json",
    "no-loaders",
    "not-a-workflow",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    models: Option<Vec<ExpectedModel>>,
    error: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedModel {
    file_name: String,
    model_type: Option<ModelType>,
    node_type: String,
    node_id: Option<String>,
    url: Option<String>,
    sha256: Option<String>,
    subfolder: Option<String>,
    directory: Option<String>,
}

impl ExpectedModel {
    /// What was read, in the expectation's terms: the node id only when the case states it.
    fn of(model: &WorkflowModel, with_id: bool) -> Self {
        Self {
            file_name: model.file_name.clone(),
            model_type: model.model_type,
            node_type: model.node_type.clone(),
            node_id: with_id.then(|| model.node_id.clone()),
            url: model.url.clone(),
            sha256: model.sha256.clone(),
            subfolder: model.subfolder.clone(),
            directory: model.directory.clone(),
        }
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/workflow")
}

/// What is wrong with one case, if anything.
fn check(case: &Path) -> Result<(), String> {
    let expected: Expected = serde_json::from_str(
        &fs::read_to_string(case.join("expected.json"))
            .map_err(|e| format!("expected.json: {e}"))?,
    )
    .map_err(|e| format!("expected.json: {e}"))?;
    let workflow = ["workflow.json", "workflow.txt"]
        .into_iter()
        .map(|name| case.join(name))
        .find(|path| path.is_file())
        .ok_or("no workflow.json or workflow.txt")?;
    match (read_workflow(&workflow), expected) {
        (
            Ok(workflow),
            Expected {
                models: Some(want),
                error: None,
            },
        ) => {
            let got: Vec<ExpectedModel> = workflow
                .models
                .iter()
                .zip(
                    want.iter()
                        .map(|w| w.node_id.is_some())
                        .chain(std::iter::repeat(false)),
                )
                .map(|(model, with_id)| ExpectedModel::of(model, with_id))
                .collect();
            if got == want {
                Ok(())
            } else {
                Err(format!("read {got:#?}\nexpected {want:#?}"))
            }
        }
        (
            Err(error),
            Expected {
                models: None,
                error: Some(want),
            },
        ) => {
            let message = error.to_string();
            if !message.contains(&want) {
                Err(format!("the error `{message}` does not say `{want}`"))
            } else if !message.contains(&workflow.display().to_string()) {
                Err(format!("the error `{message}` does not name the file"))
            } else {
                Ok(())
            }
        }
        (
            Ok(models),
            Expected {
                error: Some(want), ..
            },
        ) => Err(format!(
            "expected an error saying `{want}`, read {models:#?}"
        )),
        (
            Err(error),
            Expected {
                models: Some(_), ..
            },
        ) => Err(format!("failed: {error}")),
        (_, _) => Err("expected.json must hold `models` or `error`, not both".into()),
    }
}

#[test]
fn every_fixture_workflow_reads_as_expected() {
    let mut cases: Vec<PathBuf> = fs::read_dir(fixtures())
        .expect("fixtures/workflow is readable")
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    let names: Vec<String> = cases
        .iter()
        .filter_map(|case| Some(case.file_name()?.to_str()?.to_owned()))
        .collect();
    for required in CASES {
        assert!(
            names.iter().any(|name| name == required),
            "the case `{required}` is missing"
        );
    }
    let failures: Vec<String> = cases
        .iter()
        .zip(&names)
        .filter_map(|(case, name)| check(case).err().map(|why| format!("{name}: {why}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
