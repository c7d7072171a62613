//! Civitai's public REST API: `GET /api/v1/models` (search by `query`, `types`, a cursor for
//! the next page) and `GET /api/v1/model-versions/by-hash/{hash}`; a key, when given, goes in
//! `Authorization: Bearer`.

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use ferret_core::{
    address_in_query, hash_in_query, BackendCapabilities, BackendError, CallRate, Hit, ModelFile,
    ModelSource, ModelType, QueryForm, SearchBackend, SearchRequest,
};
use ferret_http::{base_url, endpoint, ApiKey, Http, HttpSetupError, KeyForm};
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;

use crate::files::{is_model_file, rank_score};

/// The variable Civitai's key is read from.
pub const CIVITAI_KEY_VARIABLE: &str = "CIVITAI_API_KEY";

/// Models Civitai returns per page at most.
const MAX_PAGE_SIZE: usize = 100;

/// How a [`CivitaiBackend`] searches. It reads from `ferret.toml`'s `[hub.civitai]` table as it
/// is (`timeout_seconds` for the timeout); what the table leaves out keeps its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CivitaiConfig {
    /// The API key, when there is one: public models need none.
    #[serde(skip)]
    pub key: Option<ApiKey>,
    /// The variable the key is read from, when set and `key` is `None`, as the backend is made
    /// (default `CIVITAI_API_KEY`).
    pub key_variable: Option<String>,
    /// Where the API lives; a mock server's address in tests.
    pub base_url: String,
    /// Where model pages live (links in hits).
    pub site_url: String,
    /// The backend's name in traces and failures; not read from a file, since the model-file
    /// finder knows the hubs by their names.
    #[serde(skip)]
    pub name: String,
    /// Pages of search results read at most per call (each up to the request's limit).
    pub max_pages: usize,
    /// Longest wait for one answer.
    #[serde(rename = "timeout_seconds", deserialize_with = "ferret_http::seconds")]
    pub timeout: Duration,
    /// Calls per second at most. Civitai documents no number for its public reads (they are
    /// cached, with throttling against abuse), so this stays modest.
    pub rate_per_second: NonZeroU32,
}

impl Default for CivitaiConfig {
    /// The public API, with the key from `CIVITAI_API_KEY` when it is set.
    fn default() -> Self {
        Self {
            key_variable: Some(CIVITAI_KEY_VARIABLE.to_owned()),
            ..Self::with_key(None)
        }
    }
}

impl CivitaiConfig {
    /// The public API with `key`, if any, and no variable to read one from.
    pub fn with_key(key: Option<ApiKey>) -> Self {
        Self {
            key,
            key_variable: None,
            base_url: "https://civitai.com".into(),
            site_url: "https://civitai.com".into(),
            name: ModelSource::Civitai.as_str().into(),
            max_pages: 2,
            timeout: Duration::from_secs(20),
            rate_per_second: NonZeroU32::new(2).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// Civitai model search as a [`SearchBackend`]: one hit per file of each version found.
#[derive(Debug, Clone)]
pub struct CivitaiBackend {
    config: CivitaiConfig,
    api: url::Url,
    site: url::Url,
    http: Http,
}

impl CivitaiBackend {
    /// The backend `config` describes.
    pub fn new(config: CivitaiConfig) -> Result<Self, HttpSetupError> {
        let api = base_url(&config.base_url)?;
        let site = base_url(&config.site_url)?;
        let mut http = Http::new(&config.name, config.timeout)?
            .with_refusal_hint("this model needs a signed-in download: set CIVITAI_API_KEY");
        if let Some(key) = crate::key_or_variable(&config.key, &config.key_variable) {
            http = http.with_key(AUTHORIZATION, key, KeyForm::Bearer);
        }
        Ok(Self {
            config,
            api,
            site,
            http,
        })
    }

    async fn search_models(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        let mut url = endpoint(&self.api, "api/v1/models");
        url.query_pairs_mut()
            .append_pair("query", request.query.trim())
            .append_pair("limit", &request.limit.clamp(1, MAX_PAGE_SIZE).to_string());
        for kind in request
            .options
            .model_type
            .map_or(&[][..], ModelType::civitai_types)
        {
            url.query_pairs_mut().append_pair("types", kind);
        }
        let mut files = Vec::new();
        let mut next = Some(url);
        for _ in 0..self.config.max_pages.max(1) {
            let Some(url) = next.take() else { break };
            let page: ModelsPage = self.http.json(self.http.get(url.clone())).await?;
            for model in &page.items {
                for version in &model.model_versions {
                    files.extend(self.files_of(&model.name, model.id, &model.kind, version, None));
                }
            }
            // Civitai pages a search by cursor only (a page number with a query is refused).
            next = page
                .metadata
                .and_then(|m| m.next_cursor)
                .filter(|_| files.len() < request.limit)
                .map(|cursor| {
                    let mut url = url.clone();
                    let kept: Vec<(String, String)> = url
                        .query_pairs()
                        .filter(|(key, _)| key != "cursor")
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    url.query_pairs_mut()
                        .clear()
                        .extend_pairs(kept)
                        .append_pair("cursor", &cursor.to_string());
                    url
                });
        }
        Ok(self.hits(files))
    }

    async fn by_hash(&self, sha256: &str) -> Result<Vec<Hit>, BackendError> {
        let url = endpoint(
            &self.api,
            &format!("api/v1/model-versions/by-hash/{sha256}"),
        );
        self.version_files(url, Some(sha256)).await
    }

    /// The files of the version a Civitai address names (`/api/download/models/{version}`,
    /// `/models/{model}?modelVersionId={version}`); nothing for any other address.
    async fn at_address(&self, address: &url::Url) -> Result<Vec<Hit>, BackendError> {
        match place_of(address, &self.site) {
            Some(Place::Version(version)) => {
                let url = endpoint(&self.api, &format!("api/v1/model-versions/{version}"));
                self.version_files(url, None).await
            }
            Some(Place::Model(id)) => {
                // A model's page without a version: every version's files.
                let url = endpoint(&self.api, &format!("api/v1/models/{id}"));
                let Some(model) = self
                    .http
                    .json_or_absent::<Model>(self.http.get(url))
                    .await?
                else {
                    return Ok(Vec::new());
                };
                let files = model
                    .model_versions
                    .iter()
                    .flat_map(|v| self.files_of(&model.name, model.id, &model.kind, v, None))
                    .collect();
                Ok(self.hits(files))
            }
            None => Ok(Vec::new()),
        }
    }

    /// The files of the version `url` answers with (a 404: none), only the one with `sha256`
    /// when the version lists it.
    async fn version_files(
        &self,
        url: url::Url,
        sha256: Option<&str>,
    ) -> Result<Vec<Hit>, BackendError> {
        let Some(version) = self
            .http
            .json_or_absent::<Version>(self.http.get(url))
            .await?
        else {
            return Ok(Vec::new());
        };
        let (name, kind) = version
            .model
            .as_ref()
            .map(|m| (m.name.clone(), m.kind.clone()))
            .unwrap_or_default();
        let model_id = version.model_id.unwrap_or_default();
        let files = self.files_of(&name, model_id, &kind, &version, sha256);
        Ok(self.hits(files))
    }

    /// The model files of `version`; with `sha256`, only the file with that hash when the
    /// version lists it.
    fn files_of(
        &self,
        model_name: &str,
        model_id: u64,
        kind: &str,
        version: &Version,
        sha256: Option<&str>,
    ) -> Vec<(ModelFile, String)> {
        let page = {
            let mut page = endpoint(&self.site, &format!("models/{model_id}"));
            page.query_pairs_mut()
                .append_pair("modelVersionId", &version.id.to_string());
            page.to_string()
        };
        let name = match version.name.as_deref() {
            Some(v) if !v.trim().is_empty() => format!("{model_name} ({})", v.trim()),
            _ => model_name.to_owned(),
        };
        let matching = |file: &&CivitaiFile| {
            sha256.is_none_or(|wanted| {
                file.hashes
                    .sha256
                    .as_deref()
                    .is_some_and(|h| h.eq_ignore_ascii_case(wanted))
            })
        };
        let any_match = version.files.iter().any(|f| matching(&f));
        version
            .files
            .iter()
            .filter(|file| is_model_file(&file.name))
            .filter(|file| !any_match || matching(file))
            .map(|file| {
                let model = ModelFile {
                    file_name: file.name.clone(),
                    path: None,
                    model_name: name.clone(),
                    source: ModelSource::Civitai,
                    // A version's files may include its VAE, typed as such.
                    model_type: match file.kind.as_deref() {
                        Some("VAE") => Some(ModelType::Vae),
                        _ => kind.parse().ok(),
                    },
                    base_model: version.base_model.clone().filter(|b| !b.trim().is_empty()),
                    // Civitai states sizes in kilobytes (kibibytes), often with a fraction.
                    size_bytes: file
                        .size_kb
                        .filter(|kb| kb.is_finite() && *kb > 0.0)
                        .map(|kb| (kb * 1024.0).round() as u64),
                    sha256: file.hashes.sha256.as_deref().map(str::to_ascii_lowercase),
                    download_url: file
                        .download_url
                        .clone()
                        .or_else(|| version.download_url.clone()),
                    page_url: Some(page.clone()),
                    gate: None,
                };
                let id = format!("civitai:{}:{}", version.id, file.name);
                (model, id)
            })
            .collect()
    }

    fn hits(&self, files: Vec<(ModelFile, String)>) -> Vec<Hit> {
        files
            .into_iter()
            .enumerate()
            .map(|(rank, (file, id))| {
                // A file's own address: its download, which names the file; the page is shared
                // by a version's files.
                let address = file.download_url.clone().or_else(|| file.page_url.clone());
                file.into_hit(id, address, rank_score(rank), self.name())
            })
            .collect()
    }
}

#[derive(Deserialize)]
struct ModelsPage {
    #[serde(default)]
    items: Vec<Model>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    next_cursor: Option<Cursor>,
}

/// Civitai's cursor: documented as a string, sometimes a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Cursor {
    Text(String),
    Number(u64),
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(text) => f.write_str(text),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Model {
    id: u64,
    #[serde(default)]
    name: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    model_versions: Vec<Version>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Version {
    id: u64,
    #[serde(default)]
    model_id: Option<u64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    base_model: Option<String>,
    #[serde(default)]
    download_url: Option<String>,
    #[serde(default)]
    files: Vec<CivitaiFile>,
    /// Present in a lookup by hash: the model the version belongs to.
    #[serde(default)]
    model: Option<VersionModel>,
}

#[derive(Deserialize, Default, Clone)]
struct VersionModel {
    #[serde(default)]
    name: String,
    #[serde(default, rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CivitaiFile {
    #[serde(default)]
    name: String,
    /// `Model`, `VAE`, `Config`, `Training Data`, …
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, rename = "sizeKB")]
    size_kb: Option<f64>,
    #[serde(default)]
    hashes: Hashes,
    #[serde(default)]
    download_url: Option<String>,
}

#[derive(Deserialize, Default)]
struct Hashes {
    #[serde(default, rename = "SHA256")]
    sha256: Option<String>,
}

#[async_trait]
impl SearchBackend for CivitaiBackend {
    fn name(&self) -> &str {
        &self.http.backend
    }

    fn call_rate(&self) -> Option<CallRate> {
        Some(CallRate::PerSecond(self.config.rate_per_second))
    }

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities {
            // Public models: an asker's groups do not restrict them.
            access: true,
            model_hub: Some(ModelSource::Civitai),
            ..BackendCapabilities::default()
        }
    }

    fn query_form(&self) -> QueryForm {
        QueryForm::Keywords
    }

    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, BackendError> {
        if let Some(sha256) = hash_in_query(&request.query) {
            return self.by_hash(&sha256).await;
        }
        if let Some(address) = address_in_query(&request.query) {
            return self.at_address(&address).await;
        }
        self.search_models(request).await
    }
}

/// What a Civitai address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// One version: `/api/download/models/{version}`, `/models/{model}?modelVersionId={version}`.
    Version(u64),
    /// A model's page, `/models/{model}[/{slug}]`: all its versions.
    Model(u64),
}

/// What a Civitai address names, on civitai.com or the configured site.
fn place_of(address: &url::Url, site: &url::Url) -> Option<Place> {
    if let Some(version) = version_of(address, site) {
        return Some(Place::Version(version));
    }
    let ours = ModelSource::of_address(address) == Some(ModelSource::Civitai)
        || address
            .host_str()
            .is_some_and(|h| Some(h) == site.host_str());
    let segments: Vec<&str> = address.path_segments()?.filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["models", model, ..] if ours => model.parse().ok().map(Place::Model),
        _ => None,
    }
}

/// The model version a Civitai address names: `/api/download/models/{version}` or
/// `/models/{model}?modelVersionId={version}`, on civitai.com or the configured site.
fn version_of(address: &url::Url, site: &url::Url) -> Option<u64> {
    let ours = ModelSource::of_address(address) == Some(ModelSource::Civitai)
        || address
            .host_str()
            .is_some_and(|h| Some(h) == site.host_str());
    if !ours {
        return None;
    }
    let segments: Vec<&str> = address.path_segments()?.filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["api", "download", "models", version] => version.parse().ok(),
        ["models", _model, ..] => address
            .query_pairs()
            .find(|(key, _)| key == "modelVersionId")
            .and_then(|(_, version)| version.parse().ok()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_civitai_model_page_names_the_model() {
        let site = url::Url::parse("https://civitai.com").unwrap();
        let place = |raw: &str| place_of(&url::Url::parse(raw).unwrap(), &site);
        assert_eq!(
            place("https://civitai.com/models/122359/detail-tweaker-xl"),
            Some(Place::Model(122359))
        );
        assert_eq!(
            place("https://civitai.com/models/122359?modelVersionId=135867"),
            Some(Place::Version(135867))
        );
        assert_eq!(place("https://example.com/models/122359"), None);
        assert_eq!(place("https://civitai.com/user/someone"), None);
    }

    #[test]
    fn a_civitai_address_names_its_version() {
        let site = url::Url::parse("https://civitai.com").unwrap();
        let version = |raw: &str| version_of(&url::Url::parse(raw).unwrap(), &site);
        assert_eq!(
            version("https://civitai.com/api/download/models/135867?type=Model"),
            Some(135867)
        );
        assert_eq!(
            version("https://civitai.com/models/122359?modelVersionId=135867"),
            Some(135867)
        );
        assert_eq!(version("https://civitai.com/models/122359"), None);
        assert_eq!(version("https://example.com/api/download/models/1"), None);
    }
}
