//! The HuggingFace Hub's API: `GET /api/models` (search, author, filter, sort; paged by a
//! `Link` header) and `GET /api/models/{repo}/tree/{revision}?recursive=true` (a repository's
//! files with sizes and, for large files, their SHA-256); a token, when given, goes in
//! `Authorization: Bearer`.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{
    address_in_query, hash_in_query, BackendCapabilities, BackendError, CallRate, Gate, Hit,
    ModelFile, ModelSource, ModelType, QueryForm, SearchBackend, SearchRequest,
};
use ferret_http::{base_url, endpoint, ApiKey, Http, HttpSetupError, KeyForm};
use percent_encoding::percent_decode_str;
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;

use crate::files::{file_name, is_model_file, rank_score};

/// The variable the Hub's token is read from.
pub const HF_TOKEN_VARIABLE: &str = "HF_TOKEN";

/// Models the Hub returns per page at most, as the search asks.
const MAX_PAGE_SIZE: usize = 100;

/// How a [`HuggingFaceBackend`] searches. It reads from `ferret.toml`'s `[hub.huggingface]`
/// table as it is (`timeout_seconds` for the timeout); what the table leaves out keeps its
/// default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HuggingFaceConfig {
    /// The token, when there is one: public repositories need none.
    #[serde(skip)]
    pub token: Option<ApiKey>,
    /// The variable the token is read from, when set and `token` is `None`, as the backend is
    /// made (default `HF_TOKEN`).
    pub key_variable: Option<String>,
    /// Where the Hub lives (API, repository pages and downloads); a mock server's address in
    /// tests.
    pub base_url: String,
    /// The backend's name in traces and failures; not read from a file, since the model-file
    /// finder knows the hubs by their names.
    #[serde(skip)]
    pub name: String,
    /// Only repositories of this author or organisation, when set.
    pub author: Option<String>,
    /// Only repositories with all these tags (`filter`), when set.
    pub filter: Vec<String>,
    /// The order of search results (`downloads`, `likes`, `lastModified`), descending.
    pub sort: String,
    /// The revision downloads and file lists are read at.
    pub revision: String,
    /// Pages read at most, of the search and of each file list.
    pub max_pages: usize,
    /// Repositories whose full file list (with sizes and hashes) is read per call; the others
    /// give only their file names.
    pub file_lists: usize,
    /// Longest wait for one answer.
    #[serde(rename = "timeout_seconds", deserialize_with = "ferret_http::seconds")]
    pub timeout: Duration,
    /// API requests a minute the Hub allows; `None` for its documented limits: 100 without a
    /// token (500 per 5 minutes), 200 with one (1,000 per 5 minutes).
    pub requests_per_minute: Option<NonZeroU32>,
}

impl Default for HuggingFaceConfig {
    /// The public Hub, with the token from `HF_TOKEN` when it is set.
    fn default() -> Self {
        Self {
            key_variable: Some(HF_TOKEN_VARIABLE.to_owned()),
            ..Self::with_token(None)
        }
    }
}

impl HuggingFaceConfig {
    /// The public Hub with `token`, if any, and no variable to read one from, at the rate the
    /// Hub allows it.
    pub fn with_token(token: Option<ApiKey>) -> Self {
        Self {
            token,
            key_variable: None,
            base_url: "https://huggingface.co".into(),
            name: ModelSource::HuggingFace.as_str().into(),
            author: None,
            filter: Vec::new(),
            sort: "downloads".into(),
            revision: "main".into(),
            max_pages: 2,
            file_lists: 3,
            timeout: Duration::from_secs(20),
            requests_per_minute: None,
        }
    }
}

/// HuggingFace Hub model search as a [`SearchBackend`]: one hit per model file of each
/// repository found.
#[derive(Debug, Clone)]
pub struct HuggingFaceBackend {
    config: HuggingFaceConfig,
    /// The configured limit, or the Hub's for the token in use.
    requests_per_minute: NonZeroU32,
    base: url::Url,
    http: Http,
}

impl HuggingFaceBackend {
    /// The backend `config` describes.
    pub fn new(config: HuggingFaceConfig) -> Result<Self, HttpSetupError> {
        let base = base_url(&config.base_url)?;
        let mut http = Http::new(&config.name, config.timeout)?.with_refusal_hint(
            "the repository may be gated or private: accept its terms and set HF_TOKEN",
        );
        let token = crate::key_or_variable(&config.token, &config.key_variable);
        let documented = if token.is_some() { 200 } else { 100 };
        let requests_per_minute = config
            .requests_per_minute
            .unwrap_or(NonZeroU32::new(documented).unwrap_or(NonZeroU32::MIN));
        if let Some(token) = token {
            http = http.with_key(AUTHORIZATION, token, KeyForm::Bearer);
        }
        Ok(Self {
            config,
            requests_per_minute,
            base,
            http,
        })
    }

    /// Calls a minute the Hub's request limit allows, for the executor's rate limit: a call
    /// makes one search request and one file-list request per repository listed.
    pub fn calls_per_minute(&self) -> NonZeroU32 {
        let requests_per_call = 1 + u32::try_from(self.config.file_lists).unwrap_or(u32::MAX);
        NonZeroU32::new(self.requests_per_minute.get() / requests_per_call)
            .unwrap_or(NonZeroU32::MIN)
    }

    fn search_url(&self, request: &SearchRequest) -> url::Url {
        let mut url = endpoint(&self.base, "api/models");
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("search", request.query.trim())
                .append_pair("sort", &self.config.sort)
                .append_pair("direction", "-1")
                .append_pair("limit", &request.limit.clamp(1, MAX_PAGE_SIZE).to_string())
                // `full` adds each repository's file names (`siblings`), tags and gating.
                .append_pair("full", "true");
            if let Some(author) = &self.config.author {
                query.append_pair("author", author);
            }
            for tag in &self.config.filter {
                query.append_pair("filter", tag);
            }
        }
        url
    }

    /// The repositories matching `request`, following `Link` pages up to the bound.
    async fn repositories(&self, request: &SearchRequest) -> Result<Vec<Repo>, BackendError> {
        let mut repos: Vec<Repo> = Vec::new();
        let mut next = Some(self.search_url(request));
        for _ in 0..self.config.max_pages.max(1) {
            let Some(url) = next.take() else { break };
            let page = self.http.page::<Vec<Repo>>(self.http.get(url)).await?;
            repos.extend(page.body);
            next = page.next.filter(|_| repos.len() < request.limit);
        }
        Ok(repos)
    }

    /// A repository's files with sizes and hashes, following `Link` pages up to the bound.
    async fn tree(&self, repo: &str) -> Result<Vec<TreeEntry>, BackendError> {
        let mut url = endpoint(
            &self.base,
            &format!("api/models/{repo}/tree/{}", self.config.revision),
        );
        url.query_pairs_mut().append_pair("recursive", "true");
        let mut entries = Vec::new();
        let mut next = Some(url);
        for _ in 0..self.config.max_pages.max(1) {
            let Some(url) = next.take() else { break };
            let page = self.http.page::<Vec<TreeEntry>>(self.http.get(url)).await?;
            entries.extend(page.body);
            next = page.next;
        }
        Ok(entries)
    }

    /// The model files of `repo`: the names the search gave, each with the size and hash its
    /// file list holds when `entries` has them (a list cut at the page bound keeps the names
    /// past it); the list alone when the search gave no names.
    fn files_of(&self, repo: &Repo, entries: Option<Vec<TreeEntry>>) -> Vec<ModelFile> {
        let mut known: HashMap<String, (Option<u64>, Option<String>)> = entries
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.kind == "file")
            .map(|e| {
                let sha256 = e.lfs.as_ref().and_then(|lfs| lfs.oid.clone());
                let size = e.lfs.as_ref().and_then(|lfs| lfs.size).or(e.size);
                (e.path, (size, sha256))
            })
            .collect();
        let listed: Vec<(String, Option<u64>, Option<String>)> = if repo.siblings.is_empty() {
            let mut paths: Vec<String> = known.keys().cloned().collect();
            paths.sort();
            paths
                .into_iter()
                .map(|path| {
                    let (size, sha256) = known.remove(&path).unwrap_or_default();
                    (path, size, sha256)
                })
                .collect()
        } else {
            repo.siblings
                .iter()
                .map(|sibling| {
                    let (size, sha256) = known.remove(&sibling.rfilename).unwrap_or_default();
                    (sibling.rfilename.clone(), size, sha256)
                })
                .collect()
        };
        let gate = repo.gate();
        let base_model = repo.base_model();
        listed
            .into_iter()
            .filter(|(path, _, _)| is_model_file(path))
            .map(|(path, size_bytes, sha256)| ModelFile {
                file_name: file_name(&path).to_owned(),
                model_type: repo.model_type(&path),
                download_url: Some(
                    endpoint(
                        &self.base,
                        &format!("{}/resolve/{}/{path}", repo.id, self.config.revision),
                    )
                    .to_string(),
                ),
                page_url: Some(endpoint(&self.base, &repo.id).to_string()),
                path: path.contains('/').then_some(path),
                model_name: repo.id.clone(),
                source: ModelSource::HuggingFace,
                base_model: base_model.clone(),
                size_bytes,
                sha256: sha256
                    .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
                    .map(|h| h.to_ascii_lowercase()),
                gate,
            })
            .collect()
    }
}

#[derive(Deserialize)]
struct Repo {
    id: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    pipeline_tag: Option<String>,
    #[serde(default)]
    siblings: Vec<Sibling>,
    /// `false`, `"auto"` or `"manual"`.
    #[serde(default)]
    gated: serde_json::Value,
}

impl Repo {
    fn gate(&self) -> Option<Gate> {
        match self.gated.as_str() {
            Some("manual") => Some(Gate::OwnerApproval),
            Some(_) => Some(Gate::AcceptLicence),
            None if self.gated.as_bool() == Some(true) => Some(Gate::AcceptLicence),
            None => None,
        }
    }

    /// The base model the repository's tags name (`base_model:…`, with or without the
    /// relation: `base_model:adapter:…`, `base_model:finetune:…`); a text-to-image repository
    /// that names none is its own base.
    fn base_model(&self) -> Option<String> {
        let named = self.tags.iter().find_map(|tag| {
            let rest = tag.strip_prefix("base_model:")?;
            let rest = ["adapter:", "finetune:", "merge:", "quantized:"]
                .iter()
                .find_map(|relation| rest.strip_prefix(relation))
                .unwrap_or(rest);
            Some(rest.to_owned())
        });
        named.or_else(|| {
            (self.pipeline_tag.as_deref() == Some("text-to-image")).then(|| self.id.clone())
        })
    }

    /// The words of the repository's name (after the owner), lower-cased.
    fn name_words(&self) -> impl Iterator<Item = String> + '_ {
        let name = self.id.rsplit('/').next().unwrap_or(&self.id);
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
    }

    /// The type of the file at `path`, read from the repository's tags, its name and the file's
    /// folder; `None` when none of them says.
    fn model_type(&self, path: &str) -> Option<ModelType> {
        let tagged = |tag: &str| self.tags.iter().any(|t| t.eq_ignore_ascii_case(tag));
        let folder = path
            .rsplit_once('/')
            .map(|(folder, _)| folder.to_ascii_lowercase());
        let in_folder = |name: &str| {
            folder
                .as_deref()
                .is_some_and(|f| f.split('/').any(|part| part == name))
        };
        if in_folder("vae") {
            Some(ModelType::Vae)
        } else if in_folder("text_encoder")
            || in_folder("text_encoder_2")
            || in_folder("text_encoders")
        {
            Some(ModelType::TextEncoder)
        } else if in_folder("unet") || in_folder("transformer") || in_folder("diffusion_models") {
            Some(ModelType::DiffusionModel)
        } else if tagged("lora") {
            Some(ModelType::Lora)
        } else if tagged("controlnet") {
            Some(ModelType::ControlNet)
        } else if self.name_words().any(|word| word == "vae") {
            // `madebyollin/sdxl-vae-fp16-fix`, not `Realistic_Vision_V5.1_noVAE`.
            Some(ModelType::Vae)
        } else {
            // A file at a text-to-image repository's root may be a whole checkpoint or a
            // diffusion model alone (FLUX.1-dev's): guessing would invent a conflict.
            None
        }
    }
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
}

#[derive(Deserialize)]
struct TreeEntry {
    #[serde(rename = "type", default)]
    kind: String,
    path: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    lfs: Option<Lfs>,
}

#[derive(Deserialize)]
struct Lfs {
    /// The SHA-256 of the file's content.
    #[serde(default)]
    oid: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

#[async_trait]
impl SearchBackend for HuggingFaceBackend {
    fn name(&self) -> &str {
        &self.http.backend
    }

    fn call_rate(&self) -> Option<CallRate> {
        Some(CallRate::PerMinute(self.calls_per_minute()))
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            // Public repositories: an asker's groups do not restrict them.
            access: true,
            model_hub: Some(ModelSource::HuggingFace),
            ..BackendCapabilities::default()
        }
    }

    fn query_form(&self) -> QueryForm {
        QueryForm::Keywords
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        // The Hub has no lookup by file hash: a hash query finds nothing here.
        if hash_in_query(&request.query).is_some() {
            return Ok(Vec::new());
        }
        if let Some(address) = address_in_query(&request.query) {
            return self.at_address(&address).await;
        }
        let repos = self.repositories(request).await?;
        let mut lists: HashMap<String, Result<Vec<TreeEntry>, BackendError>> =
            futures::future::join_all(
                repos
                    .iter()
                    .filter(|repo| repo.siblings.iter().any(|s| is_model_file(&s.rfilename)))
                    .take(self.config.file_lists)
                    .map(|repo| async move { (repo.id.clone(), self.tree(&repo.id).await) }),
            )
            .await
            .into_iter()
            .collect();
        let mut files = Vec::new();
        for repo in &repos {
            let entries = match lists.remove(&repo.id) {
                Some(Ok(entries)) => Some(entries),
                Some(Err(error)) => {
                    // The names the search gave still stand; only sizes and hashes are lost.
                    tracing::warn!(repo = %repo.id, %error, "file list unavailable");
                    None
                }
                None => None,
            };
            files.extend(self.files_of(repo, entries));
        }
        Ok(self.hits(files))
    }
}

impl HuggingFaceBackend {
    /// The file a Hub address names (`/{owner}/{name}/resolve/{revision}/{path}`, or `blob`):
    /// its repository's facts and file list, kept to that file; nothing for another address.
    async fn at_address(&self, address: &url::Url) -> Result<Vec<Hit>, BackendError> {
        let Some((repo_id, path)) = file_of(address, &self.base) else {
            return Ok(Vec::new());
        };
        let info = endpoint(&self.base, &format!("api/models/{repo_id}"));
        let Some(repo) = self
            .http
            .json_or_absent::<Repo>(self.http.get(info))
            .await?
        else {
            return Ok(Vec::new());
        };
        let entries = match self.tree(&repo.id).await {
            Ok(entries) => Some(entries),
            Err(error) => {
                tracing::warn!(repo = %repo.id, %error, "file list unavailable");
                None
            }
        };
        // A repository's page (no path) gives all its model files.
        let files = self
            .files_of(&repo, entries)
            .into_iter()
            .filter(|file| {
                path.is_empty() || file.path.as_deref().unwrap_or(&file.file_name) == path
            })
            .collect();
        Ok(self.hits(files))
    }

    /// One hit per file, each at its own page, in the order given.
    fn hits(&self, files: Vec<ModelFile>) -> Vec<Hit> {
        files
            .into_iter()
            .enumerate()
            .map(|(rank, file)| {
                let path = file.path.as_deref().unwrap_or(&file.file_name);
                let id = format!("huggingface:{}/{path}", file.model_name);
                // The file's own page: hits with one address are one result.
                let address = endpoint(
                    &self.base,
                    &format!("{}/blob/{}/{path}", file.model_name, self.config.revision),
                )
                .to_string();
                file.into_hit(id, Some(address), rank_score(rank), self.name())
            })
            .collect()
    }
}

/// The repository and path a Hub address names, on huggingface.co or the configured Hub: a
/// file's (`resolve`, `blob`), or an empty path for the repository's own page or file tab.
fn file_of(address: &url::Url, base: &url::Url) -> Option<(String, String)> {
    let ours = ModelSource::of_address(address) == Some(ModelSource::HuggingFace)
        || address
            .host_str()
            .is_some_and(|h| Some(h) == base.host_str());
    if !ours {
        return None;
    }
    // Segments as written before they were escaped (`50%25_merge` is `50%_merge`).
    let segments: Vec<String> = address
        .path_segments()?
        .map(|segment| percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect();
    match segments.as_slice() {
        [owner, name, kind, _revision, path @ ..]
            if matches!(kind.as_str(), "resolve" | "blob") && !path.is_empty() =>
        {
            Some((format!("{owner}/{name}"), path.join("/")))
        }
        // A repository's own page, or its file tab: the whole repository.
        [owner, name] | [owner, name, _] | [owner, name, _, _]
            if !RESERVED_PATHS.contains(&owner.as_str())
                && segments.get(2).is_none_or(|tab| tab == "tree") =>
        {
            Some((format!("{owner}/{name}"), String::new()))
        }
        _ => None,
    }
}

/// First path segments of the Hub's site that are not repository owners.
const RESERVED_PATHS: [&str; 8] = [
    "api",
    "datasets",
    "spaces",
    "docs",
    "models",
    "blog",
    "papers",
    "collections",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_address_names_a_file_or_a_whole_repository() {
        let base = url::Url::parse("https://huggingface.co").unwrap();
        let named = |raw: &str| file_of(&url::Url::parse(raw).unwrap(), &base);
        let repo = |id: &str, path: &str| Some((id.to_owned(), path.to_owned()));
        assert_eq!(
            named("https://huggingface.co/stabilityai/control-lora/blob/main/control-LoRAs-rank256/control-lora-canny-rank256.safetensors"),
            repo("stabilityai/control-lora", "control-LoRAs-rank256/control-lora-canny-rank256.safetensors")
        );
        assert_eq!(
            named("https://huggingface.co/stabilityai/control-lora"),
            repo("stabilityai/control-lora", "")
        );
        assert_eq!(
            named("https://huggingface.co/stabilityai/control-lora/tree/main"),
            repo("stabilityai/control-lora", "")
        );
        assert_eq!(
            named("https://huggingface.co/stabilityai/control-lora/discussions"),
            None
        );
        assert_eq!(named("https://huggingface.co/datasets/x/y"), None);
        assert_eq!(named("https://example.com/stabilityai/control-lora"), None);
    }
}
