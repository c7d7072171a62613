//! `ferret.toml`: the backends a deployment searches, their provider options, rate limits and the
//! variables holding their keys, in one file the CLI and the service both read. Unknown keys are
//! errors naming their line, so a misspelt option never silently falls back to a default.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferret_agent::{ModelFamily, SessionLimits};
use ferret_backends_hub::{CivitaiBackend, CivitaiConfig, HuggingFaceBackend, HuggingFaceConfig};
use ferret_backends_web::HttpSetupError;
use ferret_backends_web::{
    BraveBackend, BraveConfig, SearxngBackend, SearxngConfig, TavilyBackend, TavilyConfig, WebError,
};
use ferret_core::{ModelSource, RetrievalMode, SearchBackend};
use ferret_exec::ExecutorConfig;
use ferret_fetch::{AllowedTarget, FetchConfig, IpNet, RobotsPolicy};
use serde::Deserialize;

use crate::FerretBuilder;

/// The variable naming the configuration file, when `--config` does not.
pub const CONFIG_VARIABLE: &str = "FERRET_CONFIG";

/// Why a configuration file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not valid: a syntax error, an unknown key, a value of the wrong kind.
    #[error("{path}, line {line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line at fault, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A `ferret.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The embedded index.
    #[serde(default)]
    pub local: Option<LocalSection>,
    /// The web search providers.
    #[serde(default)]
    pub web: WebSection,
    /// The model hubs the model-file finder searches.
    #[serde(default)]
    pub hub: HubSection,
    /// `[finder]`: what the model-file finder knows beside its built-in tables.
    #[serde(default)]
    pub finder: FinderSection,
    /// `[fetch]`: how `ferret ingest <url>` fetches pages.
    #[serde(default)]
    pub fetch: FetchSection,
    /// `[server]`: what `ferret serve` asks of a request.
    #[serde(default)]
    pub server: ServerSection,
    /// `[memory]`: what a long-running searcher keeps between requests, in bytes.
    #[serde(default)]
    pub memory: MemorySection,
}

/// `[finder]`: what the model-file finder knows beside its built-in tables.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinderSection {
    /// `[[finder.families]]`: base-model families as file names write them (`written`, word
    /// sequences), as Civitai's model names do (`name`) and as HuggingFace repository ids do
    /// (`repository`); one named as a built-in family replaces it.
    #[serde(default)]
    pub families: Vec<ModelFamily>,
}

/// `[memory]`: the byte budget of each store a long-running searcher (`ferret serve`,
/// `ferret mcp`) fills as it answers, in MiB; a store left out keeps its default. Past its
/// budget a store forgets what was used least recently, so memory levels off under any load.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// Backends' results kept for repeated calls (default 64).
    pub result_cache_mib: Option<u64>,
    /// Threads' remembered questions and the responses they got (default 32).
    pub sessions_mib: Option<u64>,
    /// Who started each thread, on `ferret serve` with tokens (default 8).
    pub thread_owners_mib: Option<u64>,
    /// Hits kept for MCP `fetch` (default 16).
    pub seen_hits_mib: Option<u64>,
}

/// `mib` mebibytes in bytes, saturating.
fn mib(mib: u64) -> u64 {
    mib.saturating_mul(1024 * 1024)
}

impl MemorySection {
    /// `executor` with the result cache's budget this section sets.
    pub fn executor(&self, executor: ExecutorConfig) -> ExecutorConfig {
        ExecutorConfig {
            cache_max_bytes: self.result_cache_mib.map_or(executor.cache_max_bytes, mib),
            ..executor
        }
    }

    /// `limits` with the sessions' budget this section sets.
    pub fn session_limits(&self, limits: SessionLimits) -> SessionLimits {
        SessionLimits {
            max_bytes: self.sessions_mib.map_or(limits.max_bytes, |m| {
                usize::try_from(mib(m)).unwrap_or(usize::MAX)
            }),
            ..limits
        }
    }

    /// The budget of the record of threads' owners, in bytes, when this section sets one.
    pub fn thread_owner_bytes(&self) -> Option<u64> {
        self.thread_owners_mib.map(mib)
    }

    /// The budget of the hits kept for MCP `fetch`, in bytes, when this section sets one.
    pub fn seen_hit_bytes(&self) -> Option<usize> {
        self.seen_hits_mib
            .map(|m| usize::try_from(mib(m)).unwrap_or(usize::MAX))
    }
}

/// `[fetch]`: how pages are fetched for ingestion; anything left out keeps the safe default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchSection {
    /// Hosts (`wiki.internal`) or address ranges (`10.1.0.0/16`, `192.168.1.5`) that may be
    /// fetched although they are private; nothing private is fetched otherwise.
    #[serde(default)]
    pub allow: Vec<String>,
    /// `respect` (the default) or `ignore` robots.txt.
    pub robots: Option<String>,
    /// Seconds a fetch may take.
    pub timeout_seconds: Option<u64>,
    /// Largest page taken, in bytes.
    pub max_bytes: Option<usize>,
    /// Redirects followed at most.
    pub max_redirects: Option<usize>,
}

impl FetchSection {
    /// The fetch configuration this table describes; a value that is not one names itself.
    pub fn fetch_config(&self) -> Result<FetchConfig, String> {
        let mut config = FetchConfig::default();
        for entry in &self.allow {
            let entry = entry.trim();
            let target = if let Ok(range) = entry.parse::<IpNet>() {
                AllowedTarget::Range(range)
            } else if let Ok(address) = entry.parse::<std::net::IpAddr>() {
                AllowedTarget::Range(IpNet::from(address))
            } else if !entry.is_empty() && !entry.contains(['/', ':', ' ', '*']) {
                AllowedTarget::Host(entry.to_ascii_lowercase())
            } else {
                return Err(format!(
                    "[fetch] allow: `{entry}` is neither a host name nor an address range"
                ));
            };
            config.allow.push(target);
        }
        config.robots = match self.robots.as_deref().map(str::trim) {
            None | Some("respect") => RobotsPolicy::Respect,
            Some("ignore") => RobotsPolicy::Ignore,
            Some(other) => {
                return Err(format!(
                    "[fetch] robots: `{other}` is neither `respect` nor `ignore`"
                ))
            }
        };
        if let Some(seconds) = self.timeout_seconds {
            config.timeout = Duration::from_secs(seconds);
        }
        set(&mut config.max_body_bytes, self.max_bytes);
        set(&mut config.max_redirects, self.max_redirects);
        if config.timeout.is_zero() || config.max_body_bytes == 0 {
            return Err(
                "[fetch] timeout_seconds and max_bytes must be more than 0: nothing could be fetched"
                    .to_owned(),
            );
        }
        Ok(config)
    }
}

/// `[hub.*]`: one table per model hub; a hub without a table keeps its defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubSection {
    /// `[hub.civitai]`: the backend's own config, read as it is.
    pub civitai: Option<CivitaiConfig>,
    /// `[hub.huggingface]`: the backend's own config, read as it is.
    pub huggingface: Option<HuggingFaceConfig>,
}

/// `[server]`: what `ferret serve` asks of a request.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// `[[server.tokens]]`: the bearer tokens taken, each held in a variable, never in the file.
    #[serde(default)]
    pub tokens: Vec<TokenSection>,
    /// Are documents that carry no `acl` readable only through a group (`true`), or by every
    /// principal (`false`, the default)?
    #[serde(default)]
    pub private_by_default: bool,
    /// Requests a minute each principal may make, unless their token says otherwise; none
    /// means no quota.
    #[serde(default)]
    pub requests_per_minute: Option<std::num::NonZeroU32>,
}

/// One bearer token `ferret serve` takes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSection {
    /// Whom the token stands for (shown in logs; the token never is).
    pub principal: String,
    /// The variable holding the token.
    pub variable: String,
    /// The groups whose documents the principal may read (documents list theirs in `acl`).
    #[serde(default)]
    pub groups: Vec<String>,
    /// Requests a minute this principal may make, over `[server] requests_per_minute`.
    #[serde(default)]
    pub requests_per_minute: Option<std::num::NonZeroU32>,
    /// May the principal add documents (`POST /v1/ingest`)? An ingest says who may read what
    /// it adds, so this is off unless set.
    #[serde(default)]
    pub ingest: bool,
}

/// `[local]`: the embedded index.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Its directory.
    pub index: PathBuf,
    /// How it ranks: bm25, dense or hybrid.
    #[serde(default)]
    pub mode: Option<RetrievalMode>,
}

/// `[web.*]`: one table per provider searched.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSection {
    /// `[web.tavily]`: the backend's own config, read as it is.
    pub tavily: Option<TavilyConfig>,
    /// `[web.brave]`: the backend's own config, read as it is.
    pub brave: Option<BraveConfig>,
    /// `[web.searxng]`: the backend's own config, read as it is.
    pub searxng: Option<SearxngConfig>,
}

/// A web provider a configuration names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebProvider {
    /// Tavily.
    Tavily,
    /// Brave Search.
    Brave,
    /// A SearXNG instance.
    Searxng,
}

impl FileConfig {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Check `text`, read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigFileError> {
        toml::from_str(text).map_err(|error| ConfigFileError::Invalid {
            path: path.to_owned(),
            line: error.span().map_or(1, |span| {
                text[..span.start.min(text.len())].matches('\n').count() + 1
            }),
            message: error.message().to_owned(),
        })
    }

    /// The file the CLI and the service read: `explicit`, else `$FERRET_CONFIG`, else
    /// `ferret.toml` in the user's configuration folder if it is there.
    pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
        if let Some(path) = explicit {
            return Some(path.to_owned());
        }
        if let Some(path) = std::env::var_os(CONFIG_VARIABLE).filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path));
        }
        let folder = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
        Some(folder.join("ferret").join("ferret.toml")).filter(|p| p.exists())
    }

    /// The file [`FileConfig::locate`] finds, read; the empty configuration when there is none.
    pub fn located(explicit: Option<&Path>) -> Result<Self, ConfigFileError> {
        match Self::locate(explicit) {
            Some(path) => Self::load(&path),
            None => Ok(Self::default()),
        }
    }

    /// The providers the file declares.
    pub fn web_providers(&self) -> Vec<WebProvider> {
        [
            self.web.tavily.as_ref().map(|_| WebProvider::Tavily),
            self.web.brave.as_ref().map(|_| WebProvider::Brave),
            self.web.searxng.as_ref().map(|_| WebProvider::Searxng),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// `provider` as the file configures it (its defaults when the file has no table for it); it
    /// declares its rate limit.
    pub fn web_backend(&self, provider: WebProvider) -> Result<Arc<dyn SearchBackend>, WebError> {
        let web = &self.web;
        Ok(match provider {
            WebProvider::Tavily => {
                Arc::new(TavilyBackend::new(web.tavily.clone().unwrap_or_default())?)
            }
            WebProvider::Brave => {
                Arc::new(BraveBackend::new(web.brave.clone().unwrap_or_default())?)
            }
            WebProvider::Searxng => Arc::new(SearxngBackend::new(
                web.searxng.clone().unwrap_or_default(),
            )?),
        })
    }

    /// The model hubs the file has a `[hub.*]` table for, in the order they are documented.
    pub fn hub_sources(&self) -> Vec<ModelSource> {
        let mut sources = Vec::new();
        if self.hub.civitai.is_some() {
            sources.push(ModelSource::Civitai);
        }
        if self.hub.huggingface.is_some() {
            sources.push(ModelSource::HuggingFace);
        }
        sources
    }

    /// The model hub `source` as the file configures it (its defaults when the file has no
    /// table for it); it declares its rate limit. Keys are optional: a hub without one searches public
    /// models.
    pub fn hub_backend(
        &self,
        source: ModelSource,
    ) -> Result<Arc<dyn SearchBackend>, HttpSetupError> {
        let hub = &self.hub;
        Ok(match source {
            ModelSource::Civitai => Arc::new(CivitaiBackend::new(
                hub.civitai.clone().unwrap_or_default(),
            )?),
            ModelSource::HuggingFace => Arc::new(HuggingFaceBackend::new(
                hub.huggingface.clone().unwrap_or_default(),
            )?),
        })
    }

    /// `builder` with the model hubs `sources` added as this file configures them, each at its
    /// rate limit; one that cannot be set up is named in the returned warnings.
    pub fn add_hubs(
        &self,
        mut builder: FerretBuilder,
        sources: &[ModelSource],
    ) -> (FerretBuilder, Vec<String>) {
        let mut warnings = Vec::new();
        builder = builder.model_families(self.finder.families.clone());
        for &source in sources {
            match self.hub_backend(source) {
                Ok(backend) => builder = builder.backend(backend),
                Err(error) => warnings.push(format!("{source} is left out: {error}")),
            }
        }
        (builder, warnings)
    }

    /// `builder` with `providers` added as this file configures them, each at its rate limit. A
    /// provider that cannot be set up (its key missing) is left out and named in the returned
    /// warnings, so the others still run.
    pub fn add_web(
        &self,
        mut builder: FerretBuilder,
        providers: &[WebProvider],
    ) -> (FerretBuilder, Vec<String>) {
        let mut warnings = Vec::new();
        for &provider in providers {
            match self.web_backend(provider) {
                Ok(backend) => builder = builder.backend(backend),
                Err(error) => warnings.push(format!("{provider:?} left out: {error}")),
            }
        }
        (builder, warnings)
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::CallRate;
    use std::num::NonZeroU32;

    #[test]
    fn the_fetch_table_allows_named_hosts_and_ranges_and_refuses_nonsense() {
        let path = Path::new("ferret.toml");
        let text = "[fetch]\nallow = [\"wiki.internal\", \"10.1.0.0/16\", \"192.168.1.5\"]\nrobots = \"ignore\"\n";
        let config = FileConfig::parse(text, path)
            .unwrap()
            .fetch
            .fetch_config()
            .unwrap();
        assert_eq!(config.robots, RobotsPolicy::Ignore);
        assert_eq!(config.allow.len(), 3);
        assert_eq!(config.allow[0], AllowedTarget::Host("wiki.internal".into()));
        let bad = FileConfig::parse("[fetch]\nallow = [\"http://x/\"]\n", path).unwrap();
        assert!(bad.fetch.fetch_config().unwrap_err().contains("http://x/"));
        assert_eq!(
            FetchSection::default().fetch_config().unwrap(),
            FetchConfig::default()
        );
    }

    #[test]
    fn hub_tables_name_the_hubs_the_finder_may_search_and_refuse_unknown_keys() {
        let path = Path::new("ferret.toml");
        let text = "[hub.huggingface]\nbase_url = \"http://127.0.0.1:9\"\nrequests_per_minute = 40\nfile_lists = 1\n";
        let file = FileConfig::parse(text, path).unwrap();
        assert_eq!(file.hub_sources(), [ModelSource::HuggingFace]);
        let backend = file.hub_backend(ModelSource::HuggingFace).unwrap();
        assert_eq!(backend.name(), "huggingface");
        assert_eq!(
            backend.capabilities().model_hub,
            Some(ModelSource::HuggingFace)
        );
        // Each call makes a search and one file-list request.
        assert_eq!(
            backend.call_rate(),
            Some(CallRate::PerMinute(NonZeroU32::new(20).unwrap()))
        );
        let civitai = file.hub_backend(ModelSource::Civitai).unwrap();
        assert_eq!(
            civitai.call_rate(),
            Some(CallRate::PerSecond(NonZeroU32::new(2).unwrap()))
        );
        let error = FileConfig::parse("[hub.civitai]\nrate = 3\n", path).unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
    }

    #[test]
    fn a_file_declares_backends_and_their_options() {
        let text = r#"
[local]
index = "./ferret-index"
mode = "hybrid"

[web.tavily]
key_variable = "MY_TAVILY_KEY"
base_url = "http://127.0.0.1:8081"
search_depth = "advanced"
rate_per_second = 2

[web.searxng]
url = "http://localhost:8080"
safe_search = "strict"

[server]
private_by_default = true
requests_per_minute = 60

[[server.tokens]]
principal = "alice"
variable = "ALICE_TOKEN"
groups = ["finance"]
requests_per_minute = 600
ingest = true
"#;
        let config = FileConfig::parse(text, Path::new("ferret.toml")).unwrap();
        assert_eq!(
            config.server.tokens,
            [TokenSection {
                principal: "alice".into(),
                variable: "ALICE_TOKEN".into(),
                groups: vec!["finance".into()],
                requests_per_minute: std::num::NonZeroU32::new(600),
                ingest: true,
            }]
        );
        assert!(config.server.private_by_default);
        assert_eq!(
            config.server.requests_per_minute,
            std::num::NonZeroU32::new(60)
        );
        assert_eq!(
            config.local.as_ref().unwrap().mode,
            Some(RetrievalMode::Hybrid)
        );
        assert_eq!(
            config.web_providers(),
            [WebProvider::Tavily, WebProvider::Searxng]
        );
        let tavily = config.web.tavily.clone().unwrap();
        assert_eq!(
            tavily.base_url, "http://127.0.0.1:8081",
            "a proxy or stand-in"
        );
        assert_eq!(tavily.search_depth, ferret_core::SearchDepth::Advanced);
        assert_eq!(tavily.rate_per_second.get(), 2);
        assert_eq!(
            tavily.timeout,
            TavilyConfig::default().timeout,
            "left out: the backend's default"
        );
        let backend = config.web_backend(WebProvider::Searxng).unwrap();
        assert_eq!(backend.name(), "searxng");
        assert_eq!(
            backend.call_rate(),
            Some(CallRate::PerSecond(
                SearxngConfig::new("http://x").rate_per_second
            ))
        );
        let missing = config
            .web_backend(WebProvider::Tavily)
            .err()
            .unwrap()
            .to_string();
        assert!(missing.contains("MY_TAVILY_KEY"), "{missing}");
    }

    #[test]
    fn variables_named_in_a_table_are_read_when_the_backend_is_made() {
        let path = Path::new("ferret.toml");
        let text = "[web.searxng]\nurl_variable = \"FERRET_TEST_UNSET_SEARXNG\"\n\n[hub.huggingface]\nkey_variable = \"FERRET_TEST_UNSET_HF\"\nfile_lists = 0\n";
        let file = FileConfig::parse(text, path).unwrap();
        let missing = file
            .web_backend(WebProvider::Searxng)
            .err()
            .unwrap()
            .to_string();
        assert!(missing.contains("FERRET_TEST_UNSET_SEARXNG"), "{missing}");
        // No token in its variable: the Hub's limit without one, a call being one request.
        let hub = file.hub_backend(ModelSource::HuggingFace).unwrap();
        assert_eq!(
            hub.call_rate(),
            Some(CallRate::PerMinute(NonZeroU32::new(100).unwrap()))
        );
        let named = FileConfig::parse("[hub.civitai]\nname = \"mine\"\n", path).unwrap_err();
        assert!(named.to_string().contains("name"), "{named}");
    }

    #[test]
    fn memory_budgets_are_read_in_mib_and_default_when_left_out() {
        let text = "[memory]\nresult_cache_mib = 8\nsessions_mib = 4\nseen_hits_mib = 1\n";
        let memory = FileConfig::parse(text, Path::new("ferret.toml"))
            .unwrap()
            .memory;
        assert_eq!(
            memory.executor(ExecutorConfig::default()).cache_max_bytes,
            8 << 20
        );
        assert_eq!(
            memory.session_limits(SessionLimits::default()).max_bytes,
            4 << 20
        );
        assert_eq!(memory.seen_hit_bytes(), Some(1 << 20));
        assert_eq!(memory.thread_owner_bytes(), None, "left out: the default");
        let error = FileConfig::parse("[memory]\nsessions = 4\n", Path::new("ferret.toml"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("sessions"), "{error}");
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_its_line() {
        let text = "[web.brave]\nrate_per_second = 1\nsafesearch = \"off\"\n";
        let error = FileConfig::parse(text, Path::new("ferret.toml")).unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(error, ConfigFileError::Invalid { line: 3, .. }),
            "{shown}"
        );
        assert!(shown.contains("safesearch"), "{shown}");
        let wrong = FileConfig::parse("[web.tavily]\nsearch_depth = \"deep\"\n", Path::new("f"));
        assert!(matches!(
            wrong,
            Err(ConfigFileError::Invalid { line: 2, .. })
        ));
    }
}
