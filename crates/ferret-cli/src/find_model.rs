//! `ferret find-model`: find one model file, a file by its SHA-256, or every model file a
//! ComfyUI workflow needs and a models folder lacks, on Civitai and the HuggingFace Hub.

use std::path::PathBuf;

use ferret::config::AgentConfig;
use ferret::jobs::find_model::{read_workflow, FileOutcome, ModelsDir, Workflow};
use ferret::jobs::find_model::{FileRequest, FindStatus, ModelFind, ModelSource, ModelType};
use ferret::{Ferret, Response, Strategy};
use serde::Serialize;
use std::process::ExitCode;

use crate::llm_args::LlmArgs;

/// What `ferret find-model` is asked.
#[derive(Debug, clap::Args)]
pub(crate) struct FindModelArgs {
    /// The model file's name (sd_xl_base_1.0.safetensors).
    #[arg(required_unless_present_any = ["workflow", "hash"], conflicts_with = "workflow")]
    file: Option<String>,
    /// A ComfyUI workflow (UI or API format): every model file its loader nodes reference is
    /// found, unless --models-dir already holds it.
    #[arg(long, value_name = "WORKFLOW.json")]
    workflow: Option<PathBuf>,
    /// A ComfyUI `models` folder: files it holds are not searched.
    #[arg(long, value_name = "DIR", requires = "workflow")]
    models_dir: Option<PathBuf>,
    /// ComfyUI's extra_model_paths.yaml: its folders are searched for held files too.
    #[arg(long, value_name = "FILE", requires = "models_dir")]
    extra_model_paths: Option<PathBuf>,
    /// The model type the loader expects: checkpoint, lora, vae, controlnet, embedding,
    /// upscaler, text_encoder, diffusion_model.
    #[arg(long = "type", value_name = "TYPE", conflicts_with = "workflow")]
    model_type: Option<ModelType>,
    /// The base model the workflow uses (SDXL, SD 1.5, Flux).
    #[arg(long, value_name = "NAME")]
    base_model: Option<String>,
    /// The hub to rank higher when candidates are otherwise equal: civitai or huggingface.
    #[arg(long, value_name = "HUB")]
    prefer: Option<ModelSource>,
    /// Find the file with this SHA-256 (Civitai looks files up by hash).
    #[arg(long, value_name = "SHA256", conflicts_with = "workflow")]
    hash: Option<String>,
    /// The hubs searched (comma-separated; default both).
    #[arg(long, value_delimiter = ',', value_name = "HUB")]
    hubs: Vec<ModelSource>,
    /// Also search the web (comma-separated: tavily, brave, searxng) for each file's exact
    /// name on the hubs' sites: a page found names the repository or model holding it.
    #[arg(long, value_delimiter = ',', value_name = "PROVIDER")]
    web: Vec<crate::web_args::WebChoice>,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// Also print each file's trace: the plan, every call and the ranking.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    llm: LlmArgs,
    /// The configuration file ([hub.civitai], [hub.huggingface]); default as for `search`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// One file's outcome, as `--json` prints it.
#[derive(Serialize)]
struct Outcome {
    file_name: String,
    /// The folder under the type's folder the workflow names it in (`SDXL`), when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    subfolder: Option<String>,
    /// Where the models folder already holds it, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    present_at: Option<PathBuf>,
    /// The finder's answer, when it was searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ModelFind>,
    /// Hubs that failed while it was searched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failures: Vec<String>,
    /// Why it could not be searched (a name no file can have, a value too long to send).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip)]
    response: Option<Response>,
    /// Its request was refused (a name no model file can have).
    #[serde(skip)]
    bad_request: bool,
}

/// The exit code when a file could not be searched (every hub failed, or the search could not
/// run); files already present and names no model file can have do not count.
const UNSEARCHED_EXIT: u8 = 3;

impl Outcome {
    /// Whether a file that should have been searched could not be: every hub failed, or the
    /// search could not run. A name no model file can have is the request's fault, not this.
    fn unsearched(&self) -> bool {
        let status = self.result.as_ref().map(|find| find.status);
        let search_failed = self.present_at.is_none()
            && self.result.is_none()
            && self.error.is_some()
            && !self.bad_request;
        status == Some(FindStatus::Unsearched) || search_failed
    }

    fn new(file_name: String, subfolder: Option<String>) -> Self {
        Self {
            file_name,
            subfolder,
            present_at: None,
            result: None,
            failures: Vec::new(),
            error: None,
            response: None,
            bad_request: false,
        }
    }

    /// What the finder answered for the file, or why it could not be searched.
    fn searched(mut self, found: Result<Response, ferret::FerretError>) -> Self {
        match found {
            Ok(response) => {
                self.failures = response.distinct_failures();
                self.result = response.model_file.clone();
                self.response = Some(response);
            }
            Err(error) => {
                self.bad_request = matches!(error, ferret::FerretError::FileRequest(_));
                self.error = Some(error.to_string());
            }
        }
        self
    }
}

impl FindModelArgs {
    /// Find what is asked and print it; exit code 3 when a file could not be searched.
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let workflow = match &self.workflow {
            Some(path) => Some(self.read_workflow(path)?),
            None => None,
        };
        let single = match &workflow {
            Some(_) => None,
            None => Some(self.request()?),
        };
        let ferret = self.finder()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let outcomes = match (single, workflow) {
            (Some(request), _) => {
                let outcome = Outcome::new(request.file_name.clone(), None);
                vec![outcome.searched(runtime.block_on(ferret.find_model(&request)))]
            }
            (None, Some(workflow)) => runtime.block_on(self.find_missing(&ferret, workflow))?,
            (None, None) => unreachable!("clap requires a file, a hash or a workflow"),
        };
        if self.json {
            println!("{}", serde_json::to_string_pretty(&outcomes)?);
        } else {
            print!("{}", table(&outcomes, self.verbose));
        }
        let unsearched = outcomes.iter().filter(|o| o.unsearched()).count();
        if unsearched > 0 {
            eprintln!("{unsearched} file(s) could not be searched: no model hub answered");
            return Ok(ExitCode::from(UNSEARCHED_EXIT));
        }
        Ok(ExitCode::SUCCESS)
    }

    /// The one file asked for, by name, hash or both.
    fn request(&self) -> anyhow::Result<FileRequest> {
        let mut request = FileRequest::named_or_hashed(self.file.as_deref(), self.hash.as_deref())?;
        request.model_type = self.model_type;
        request.prefer = self.prefer;
        if let Some(base) = &self.base_model {
            request = request.with_base_model(base.as_str());
        }
        Ok(request)
    }

    /// The workflow at `path`, with what the command line says of all its files.
    fn read_workflow(&self, path: &std::path::Path) -> anyhow::Result<Workflow> {
        let mut workflow = read_workflow(path)?;
        workflow.prefer = self.prefer;
        if self.base_model.is_some() {
            workflow.base_model.clone_from(&self.base_model);
        }
        Ok(workflow)
    }

    /// Each of the workflow's files, in its order: present in the models folder, or searched.
    async fn find_missing(
        &self,
        ferret: &Ferret,
        mut workflow: Workflow,
    ) -> anyhow::Result<Vec<Outcome>> {
        if let Some(dir) = &self.models_dir {
            if !dir.is_dir() {
                eprintln!(
                    "warning: {} is not a folder: every file of the workflow is searched",
                    dir.display()
                );
            }
            let held = ModelsDir::new(dir);
            let held = match &self.extra_model_paths {
                Some(yaml) => held.with_extra_paths(yaml)?,
                None => held,
            };
            held.mark_held(&mut workflow);
        }
        let found = ferret.find_models(&workflow).await;
        if let Some(base) = &found.base_model {
            eprintln!(
                "the workflow's checkpoint is {base}: its other files are looked for as {base}"
            );
        }
        Ok(found
            .files
            .into_iter()
            .map(|file| {
                let outcome = Outcome::new(file.model.file_name, file.model.subfolder);
                match file.outcome {
                    FileOutcome::Present(at) => Outcome {
                        present_at: Some(at),
                        ..outcome
                    },
                    FileOutcome::Searched(response) => outcome.searched(Ok(*response)),
                    FileOutcome::NotSearched(error) => outcome.searched(Err(error)),
                }
            })
            .collect())
    }

    /// A searcher over the hubs asked for, as the configuration file sets them up.
    fn finder(&self) -> anyhow::Result<Ferret> {
        let file = ferret::config::FileConfig::located(self.config.as_deref())?;
        let hubs = if self.hubs.is_empty() {
            ModelSource::ALL.to_vec()
        } else {
            self.hubs.clone()
        };
        let (builder, mut warnings) = file.add_hubs(Ferret::builder(), &hubs);
        let web: Vec<_> = self.web.iter().map(|choice| choice.provider()).collect();
        let (builder, web_warnings) = file.add_web(builder, &web);
        warnings.extend(web_warnings);
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
        let mut builder = builder.agent(AgentConfig {
            strategy: Strategy::FindModel,
            ..AgentConfig::default()
        });
        if let Some(model) = self.llm.model()? {
            builder = builder
                .language_model(model)
                .stage_model(self.llm.stage_config()?);
        }
        Ok(builder.build()?)
    }
}

/// The outcomes as a table (file, status, best candidate, confidence, URL), then for each file
/// what the table has no room for: why, gating, where it goes, failed hubs.
fn table(outcomes: &[Outcome], verbose: bool) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "FILE".into(),
        "STATUS".into(),
        "BEST CANDIDATE".into(),
        "CONFIDENCE".into(),
        "URL".into(),
    ]];
    for outcome in outcomes {
        let row = match (&outcome.present_at, &outcome.result) {
            (Some(path), _) => [
                outcome.file_name.clone(),
                "PRESENT".into(),
                path.display().to_string(),
                "-".into(),
                "-".into(),
            ],
            (None, Some(find)) => {
                let status = find.status.as_str();
                match find.best() {
                    Some(best) => [
                        outcome.file_name.clone(),
                        status.into(),
                        format!("{} ({}, {})", best.file_name, best.name, best.source),
                        best.confidence.to_string(),
                        best.download_url
                            .clone()
                            .or_else(|| best.url.clone())
                            .unwrap_or_else(|| "-".into()),
                    ],
                    None => [
                        outcome.file_name.clone(),
                        status.into(),
                        "(nothing found)".into(),
                        "-".into(),
                        "-".into(),
                    ],
                }
            }
            (None, None) => [
                outcome.file_name.clone(),
                "NOT SEARCHED".into(),
                outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| "(no result)".into()),
                "-".into(),
                "-".into(),
            ],
        };
        rows.push(row);
    }
    let widths: Vec<usize> = (0..5)
        .map(|col| {
            rows.iter()
                .map(|r| r[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for outcome in outcomes {
        let Some(find) = &outcome.result else {
            continue;
        };
        out.push('\n');
        out.push_str(&format!("{}:\n", outcome.file_name));
        match find.best() {
            Some(best) => {
                out.push_str(&format!("  {}\n", best.reason));
                if let Some(folder) = &best.folder {
                    // The workflow names the file under its subfolder: it loads from there.
                    let place = match &outcome.subfolder {
                        Some(sub) => format!("{folder}/{sub}"),
                        None => folder.clone(),
                    };
                    out.push_str(&format!("  belongs in {place}\n"));
                }
                if let Some(size) = best.size_bytes {
                    out.push_str(&format!("  size {:.1} MB\n", size as f64 / 1e6));
                }
                if let Some(page) = &best.url {
                    out.push_str(&format!("  page {page}\n"));
                }
            }
            None => match outcome.response.as_ref().and_then(|r| r.message.as_deref()) {
                Some(message) => out.push_str(&format!("  {message}\n")),
                None => out.push_str("  nothing found on the hubs searched\n"),
            },
        }
        for failure in &outcome.failures {
            out.push_str(&format!("  failed: {failure}\n"));
        }
        if verbose {
            if let Some(response) = &outcome.response {
                for line in crate::render::trace_lines(response) {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        }
    }
    out
}
