//! `ferret-mcp` offers Ferret's search to coding agents and assistants as MCP tools (the
//! official Rust SDK, `rmcp`): `search` answers a question with its short answer, citations
//! and hits as structured content, and `fetch` gives the whole text of a hit a search returned,
//! or of a document of the index, by its id (it never fetches a URL); `find_model` finds a model
//! file on the model hubs by name or hash. Over HTTP behind a
//! server that authenticates, both act for the request's [`ferret::Principal`]: searches are
//! limited to what they may read, and `fetch` gives only what they may read. [`FerretMcp`] is the server; [`serve_stdio`] runs it over
//! standard input and output, [`http_service`] gives the streamable HTTP service that
//! `ferret serve` mounts under `/mcp`.
//!
//! It reaches backends, stages and models only through the facade: it must not depend on a
//! backend crate directly.

mod seen;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ferret::jobs::find_model::{
    parse_workflow, FileOutcome, FileRequest, FindStatus, ModelCandidate, ModelSource, ModelType,
    Workflow, WorkflowFind,
};
use ferret::jobs::search::ResponseType;
use ferret::{Ferret, Filters, Hit, Principal, Query, Response, Strategy};
use ferret_core::text::{cut, CutMark};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::Extensions;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, Json, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use crate::seen::{SeenHits, DEFAULT_SEEN_BYTES};

/// Characters of a hit's text shown with it in search results; `fetch` gives the rest.
const SNIPPET_CHARS: usize = 300;

/// The arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The question, in plain words, as a person would ask it.
    pub question: String,
    /// Most hits to return, from 1 to 50; 10 when left out.
    #[serde(default)]
    pub limit: Option<usize>,
    /// How to search: `single_pass` (one search), `refine` (search again when results are
    /// weak), `multi_hop` (follow what one page names to the next), `tool_loop`, `plan`, or
    /// `auto` (chosen from the question; the default). To find a model file, call `find_model`.
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// Restrict every search to a date range (`date_range`: `from` and `to`, `YYYY-MM-DD`) or
    /// to the most recent documents (`most_recent`: how many).
    #[serde(default)]
    pub filters: Option<Filters>,
}

/// The arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The id of a hit or citation a `search` returned (`hit_id` of a citation, `id` of a hit).
    pub id: String,
}

/// The arguments of `find_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindModelArgs {
    /// The model file's name as a workflow writes it (`sd_xl_base_1.0.safetensors`), without
    /// folders; may be left out when `sha256` is given.
    #[serde(default)]
    pub file_name: Option<String>,
    /// The type the loader expects: checkpoint, lora, vae, controlnet, embedding, upscaler,
    /// text_encoder or diffusion_model.
    #[serde(default)]
    pub model_type: Option<ModelType>,
    /// The base model the workflow uses (`SDXL 1.0`, `SD 1.5`, `Flux.1 D`).
    #[serde(default)]
    pub base_model: Option<String>,
    /// The hub to rank higher when candidates are otherwise equal: `civitai` or `huggingface`.
    #[serde(default)]
    pub prefer: Option<ModelSource>,
    /// The file's SHA-256, when known: a file with this hash is the file.
    #[serde(default)]
    pub sha256: Option<String>,
    /// A ComfyUI workflow as saved (the UI or the API format), instead of one file: each model
    /// file its loader nodes reference is found, and the result lists them in `files`.
    #[serde(default)]
    pub workflow: Option<serde_json::Value>,
}

/// What `find_model` found: for one file, its status and candidates; for a workflow, `files`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct FindModelResult {
    /// `FOUND` when the best candidate is the file by its name or hash, `UNSEARCHED` when no
    /// hub answered, else `UNCERTAIN`; for one file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<FindStatus>,
    /// The candidates, best first, each with its confidence (0-100), the reason, its page and
    /// download addresses, size, hash and the ComfyUI folder it belongs in.
    pub candidates: Vec<ModelCandidate>,
    /// Why there is no candidate, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Hubs that failed during the search, each with what failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// For a workflow: the base model its checkpoint gave its other files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// For a workflow: each of its model files, in its order, as one file's result is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<WorkflowFileResult>,
}

/// One file of a workflow `find_model` was given.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkflowFileResult {
    /// The file's name.
    pub file_name: String,
    /// The node that loads it.
    pub node_id: String,
    /// What was found of it, as for one file.
    #[serde(flatten)]
    pub result: FindModelResult,
    /// Why it was not searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `search` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// `results` when the search answered, `message` when it did not (the question was not
    /// searched, or nothing relevant was found: `message` says which).
    pub response_type: String,
    /// The answer, its `[n]` markers pointing at `citations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The answer in a few words (a name, a date, a number, yes or no), when the question asks
    /// for one and a cited source states it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_answer: Option<String>,
    /// Why there is no answer, for a `message` response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The sources the answer's markers point at.
    pub citations: Vec<CitedSource>,
    /// The results, best first, each with the start of its text; `fetch` gives the rest.
    pub hits: Vec<FoundHit>,
}

/// A source the answer cites.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CitedSource {
    /// The number of its `[n]` marker in the answer.
    pub marker: usize,
    /// The id to `fetch` its text with.
    pub hit_id: String,
    /// Its title.
    pub title: String,
    /// Where it lives, when it has an address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One result of a search.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundHit {
    /// The id to `fetch` its whole text with.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Where it lives, when it has an address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The start of its text.
    pub snippet: String,
    /// The backend that found it.
    pub backend: String,
}

/// A hit's whole text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchedDocument {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Where it lives, when it has an address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its whole text, as the backend returned it.
    pub text: String,
}

/// What a tool asks the searcher to do.
#[derive(Debug, Clone)]
pub enum ToolJob {
    /// Answer a question ([`Ferret::search`]).
    Search(Query),
    /// Find a model file ([`Ferret::find_model`]).
    FindModel(FileRequest),
    /// Find a workflow's model files ([`Ferret::find_models`]).
    FindModels(Workflow),
}

/// What a tool's job gave.
#[derive(Debug)]
pub enum ToolOutput {
    /// A search's or one file's response.
    Response(Box<Response>),
    /// A workflow's files.
    Workflow(WorkflowFind),
}

/// How the tools run their jobs: by default on the [`Ferret`] served; a server passes its own,
/// so that tool calls hold its concurrency limit, deadline and metrics like its other routes.
pub type JobRunner = Arc<
    dyn Fn(ToolJob) -> Pin<Box<dyn Future<Output = Result<ToolOutput, String>> + Send>>
        + Send
        + Sync,
>;

/// What the streamable HTTP service takes beside the searcher.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// Cancelled when the server shuts down: it ends the sessions and their open streams.
    pub stop: CancellationToken,
    /// `Host` values accepted beside `localhost`, `127.0.0.1` and `::1` (the SDK's guard
    /// against DNS rebinding), for a server its clients reach by another name.
    pub extra_hosts: Vec<String>,
    /// Runs each tool's job; `None` runs it on the [`Ferret`] served.
    pub run: Option<JobRunner>,
    /// Where the sessions keep the hits searches returned, within its byte budget.
    pub seen: Arc<SeenHits>,
}

/// Ferret as an MCP server. Cheap to clone; clones share the searcher and the hits searches
/// returned.
#[derive(Clone)]
pub struct FerretMcp {
    ferret: Ferret,
    seen: Arc<SeenHits>,
    run: JobRunner,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for FerretMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FerretMcp")
            .field("backends", &self.ferret.backend_names())
            .finish_non_exhaustive()
    }
}

#[tool_router(router = tool_router)]
impl FerretMcp {
    /// Serve `ferret`'s searches.
    pub fn new(ferret: Ferret) -> Self {
        let searcher = ferret.clone();
        let run: JobRunner = Arc::new(move |job| {
            let searcher = searcher.clone();
            Box::pin(async move {
                let response = match job {
                    ToolJob::Search(query) => searcher.search(query).await,
                    ToolJob::FindModel(request) => searcher.find_model(&request).await,
                    ToolJob::FindModels(workflow) => {
                        return Ok(ToolOutput::Workflow(searcher.find_models(&workflow).await))
                    }
                };
                response
                    .map(|r| ToolOutput::Response(Box::new(r)))
                    .map_err(|e| e.to_string())
            })
        });
        Self {
            ferret,
            seen: Arc::new(SeenHits::default()),
            run,
            tool_router: Self::tool_router(),
        }
    }

    /// Keep the hits searches return in `seen` (for `fetch`), rather than in a store of the
    /// default budget of its own.
    pub fn with_seen(mut self, seen: Arc<SeenHits>) -> Self {
        self.seen = seen;
        self
    }

    /// Run the tools' jobs with `run` rather than on the [`Ferret`] served.
    pub fn with_runner(mut self, run: JobRunner) -> Self {
        self.run = run;
        self
    }

    /// Search the configured sources for an answer to a question, with citations. Use it for
    /// questions about what the indexed documents (and the web, when configured) say; it
    /// returns an answer whose [n] markers point at `citations`, a short answer when the
    /// question asks for a name, date or number, and the hits found. Call `fetch` with a hit's
    /// id to read its whole text.
    #[tool(name = "search")]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        request: Extensions,
    ) -> Result<Json<SearchResult>, String> {
        let asker = asker_of(&request);
        let mut query = query_of(args).map_err(|e| e.to_string())?;
        if let Some(asker) = &asker {
            query = query.with_access(asker.access.clone());
        }
        let ToolOutput::Response(response) = (self.run)(ToolJob::Search(query)).await? else {
            return Err("the search gave no response".into());
        };
        self.seen.remember(asker_name(&asker), &response.hits);
        Ok(Json(result_of(*response)))
    }

    /// Find a model file (a checkpoint, LoRA, VAE, ControlNet, embedding, upscaler, text
    /// encoder or diffusion model) on Civitai and the HuggingFace Hub by its file name or
    /// SHA-256, as a ComfyUI workflow names it, or every model file of a ComfyUI workflow
    /// (`workflow`). Returns FOUND, UNCERTAIN or UNSEARCHED and ranked candidates with
    /// download addresses and the folder each belongs in.
    #[tool(name = "find_model")]
    async fn find_model(
        &self,
        Parameters(args): Parameters<FindModelArgs>,
        request_parts: Extensions,
    ) -> Result<Json<FindModelResult>, String> {
        let asker = asker_of(&request_parts);
        if let Some(json) = &args.workflow {
            if args.file_name.is_some() || args.sha256.is_some() {
                return Err(
                    "give a `workflow` or one file (`file_name`, `sha256`), not both".into(),
                );
            }
            let mut workflow = parse_workflow(
                &json.to_string(),
                std::path::Path::new("the workflow given"),
            )
            .map_err(|e| e.to_string())?;
            workflow.base_model.clone_from(&args.base_model);
            workflow.prefer = args.prefer;
            let ToolOutput::Workflow(found) = (self.run)(ToolJob::FindModels(workflow)).await?
            else {
                return Err("the finder gave no result for the workflow".into());
            };
            let mut files = Vec::new();
            for file in found.files {
                let (result, error) = match file.outcome {
                    FileOutcome::Searched(response) => {
                        self.seen.remember(asker_name(&asker), &response.hits);
                        (file_result(*response), None)
                    }
                    FileOutcome::NotSearched(error) => {
                        (FindModelResult::default(), Some(error.to_string()))
                    }
                    FileOutcome::Present(_) => {
                        (FindModelResult::default(), Some("already present".into()))
                    }
                };
                files.push(WorkflowFileResult {
                    file_name: file.model.file_name,
                    node_id: file.model.node_id,
                    result,
                    error,
                });
            }
            return Ok(Json(FindModelResult {
                base_model: found.base_model,
                files,
                ..FindModelResult::default()
            }));
        }
        let mut request =
            FileRequest::named_or_hashed(args.file_name.as_deref(), args.sha256.as_deref())
                .map_err(|e| e.to_string())?;
        request.model_type = args.model_type;
        request.prefer = args.prefer;
        if let Some(base) = &args.base_model {
            request = request.with_base_model(base.as_str());
        }
        let ToolOutput::Response(response) = (self.run)(ToolJob::FindModel(request)).await? else {
            return Err("the finder gave no result".into());
        };
        // A candidate's hit can be read with `fetch`, as a search's can.
        self.seen.remember(asker_name(&asker), &response.hits);
        if response.model_file.is_none() {
            return Err(response
                .message
                .clone()
                .unwrap_or_else(|| "the finder gave no result".to_owned()));
        }
        Ok(Json(file_result(*response)))
    }

    /// Read the whole text of a hit or cited source that `search` returned, or of a document
    /// of the index, by its id. Use it when a snippet is not enough to answer; it does not
    /// fetch URLs.
    #[tool(name = "fetch")]
    async fn fetch(
        &self,
        Parameters(args): Parameters<FetchArgs>,
        request: Extensions,
    ) -> Result<Json<FetchedDocument>, String> {
        // What a search for the same principal returned (another's hits are not theirs), else
        // the index's document, if the principal may read it.
        let asker = asker_of(&request);
        let remembered = match self.seen.get(asker_name(&asker), &args.id) {
            // Remembered under the access lists of its search: shown only if they still let
            // the asker read it.
            Some(hit) => match &asker {
                Some(asker) => {
                    let revoked = self.ferret.unreadable([&hit], &asker.access).await;
                    revoked.is_empty().then_some(hit)
                }
                None => Some(hit),
            },
            None => None,
        };
        let hit = match remembered {
            Some(hit) => Some(hit),
            None => self.index_document(&args.id, asker.as_ref()).await?,
        };
        // The id is not repeated: whether a document exists is not the asker's to learn.
        let hit = hit.ok_or_else(|| {
            "no document with this id is here: search first, then fetch an id it returned"
                .to_owned()
        })?;
        Ok(Json(FetchedDocument {
            id: hit.id.0,
            title: hit.title.to_string(),
            url: hit.url,
            text: hit.text.to_string(),
        }))
    }
}

impl FerretMcp {
    /// Document `id` of the searcher's own index, read off the async threads (the engine
    /// blocks), when `asker` may read it.
    async fn index_document(
        &self,
        id: &str,
        asker: Option<&Principal>,
    ) -> Result<Option<Hit>, String> {
        let Some(index) = self.ferret.writable_index().cloned() else {
            return Ok(None);
        };
        let (id, access) = (id.to_owned(), asker.map(|a| a.access.clone()));
        tokio::task::spawn_blocking(move || index.document(&id, access.as_ref(), "local"))
            .await
            .map_err(|e| format!("reading the index stopped: {e}"))?
            .map_err(|e| e.to_string())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FerretMcp {}

/// The principal the server authenticated for this call (HTTP with tokens); none over stdio or
/// an open server.
fn asker_of(request: &Extensions) -> Option<Principal> {
    request
        .get::<http::request::Parts>()?
        .extensions
        .get::<Principal>()
        .cloned()
}

fn asker_name(asker: &Option<Principal>) -> &str {
    asker.as_ref().map_or("", |a| a.name.as_str())
}

/// The query `args` ask for, checked as the library checks any query.
fn query_of(args: SearchArgs) -> Result<Query, ferret::jobs::search::QueryError> {
    // A coding agent pastes whole logs: one over the limit keeps its failure and its question.
    let mut query = Query::from_log(args.question)?;
    if let Some(limit) = args.limit {
        query = query.with_limit(limit)?;
    }
    if let Some(filters) = args.filters {
        query = query.with_filters(filters)?;
    }
    if let Some(strategy) = args.strategy {
        query = query.with_strategy(strategy);
    }
    Ok(query)
}

fn result_of(response: Response) -> SearchResult {
    SearchResult {
        response_type: match response.response_type {
            ResponseType::Results => "results",
            ResponseType::Message => "message",
        }
        .to_owned(),
        answer: response.answer,
        short_answer: response.short_answer.map(|s| s.text),
        message: response.message,
        citations: response
            .citations
            .into_iter()
            .map(|c| CitedSource {
                marker: c.marker,
                hit_id: c.hit_id.0,
                title: c.title,
                url: c.url,
            })
            .collect(),
        hits: response.hits.iter().map(found).collect(),
    }
}

fn found(hit: &Hit) -> FoundHit {
    FoundHit {
        id: hit.id.0.clone(),
        title: hit.title.to_string(),
        url: hit.url.clone(),
        snippet: cut(&hit.text, SNIPPET_CHARS, CutMark::Ellipsis),
        backend: hit.backend.clone(),
    }
}

/// One file's result: its status and candidates, or the finder's message.
fn file_result(response: Response) -> FindModelResult {
    let failures = response.distinct_failures();
    let Some(find) = response.model_file else {
        return FindModelResult {
            message: response.message,
            failures,
            ..FindModelResult::default()
        };
    };
    FindModelResult {
        status: Some(find.status),
        message: find
            .candidates
            .is_empty()
            .then(|| response.message.unwrap_or_default()),
        candidates: find.candidates,
        failures,
        ..FindModelResult::default()
    }
}

/// Serve `server` over standard input and output until the client closes them.
pub async fn serve_stdio(server: FerretMcp) -> std::io::Result<()> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// The streamable HTTP service of `ferret`'s MCP server, to mount under `/mcp`. Its sessions
/// share the searcher and the hits searches returned; cancelling `options.stop` ends them, and
/// their open streams, so that a server shutting down is not held by a connected client.
pub fn http_service(
    ferret: Ferret,
    options: HttpOptions,
) -> StreamableHttpService<FerretMcp, LocalSessionManager> {
    let mut server = FerretMcp::new(ferret).with_seen(options.seen);
    if let Some(run) = options.run {
        server = server.with_runner(run);
    }
    let config = StreamableHttpServerConfig::default();
    let hosts: Vec<String> = config
        .allowed_hosts
        .iter()
        .cloned()
        .chain(options.extra_hosts)
        .collect();
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config
            .with_allowed_hosts(hosts)
            .with_cancellation_token(options.stop),
    )
}
