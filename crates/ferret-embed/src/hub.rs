use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::EmbedderError;

/// Where model files come from when they are fetched from a HuggingFace-compatible hub.
///
/// `Debug` shows the token as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct HubSource {
    /// The hub's base URL, `https://huggingface.co` unless a mirror is used.
    pub endpoint: String,
    /// Downloaded files live in `<cache_dir>/<org>--<name>/`; a file already there is not fetched again.
    pub cache_dir: PathBuf,
    /// Token for gated or private models.
    pub token: Option<SecretString>,
    /// Limit for one file's download.
    pub timeout: Duration,
}

impl HubSource {
    /// The public hub, or the mirror in `HF_ENDPOINT`, with the token in `HF_TOKEN` if set.
    pub fn from_env(cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            endpoint: std::env::var("HF_ENDPOINT")
                .unwrap_or_else(|_| "https://huggingface.co".into()),
            cache_dir: cache_dir.into(),
            token: std::env::var("HF_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
                .map(SecretString::from),
            timeout: Duration::from_secs(600),
        }
    }

    /// Fetch `files` of `model_id` (`org/name`) from the main revision, returning their local
    /// paths in the same order.
    pub async fn download(
        &self,
        model_id: &str,
        files: &[&str],
    ) -> Result<Vec<PathBuf>, EmbedderError> {
        let hub_error = |url: &str, reason: String| EmbedderError::Hub {
            model_id: model_id.to_owned(),
            url: url.to_owned(),
            reason,
        };
        let valid_id = model_id.split('/').count() == 2
            && model_id.split('/').all(|part| {
                !part.is_empty()
                    && part != ".."
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            });
        if !valid_id {
            return Err(hub_error(
                &self.endpoint,
                "a model id is `organisation/name`".into(),
            ));
        }
        let folder = self.cache_dir.join(model_id.replace('/', "--"));
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|e| hub_error(&self.endpoint, e.to_string()))?;
        let mut paths = Vec::with_capacity(files.len());
        for file in files {
            let path = folder.join(file);
            if !path.is_file() {
                let url = format!(
                    "{}/{model_id}/resolve/main/{file}",
                    self.endpoint.trim_end_matches('/')
                );
                let bytes = self
                    .fetch(&http, &url)
                    .await
                    .map_err(|reason| hub_error(&url, reason))?;
                write_atomically(&path, &bytes).map_err(|e| {
                    hub_error(&url, format!("cannot write {}: {e}", path.display()))
                })?;
            }
            paths.push(path);
        }
        Ok(paths)
    }

    async fn fetch(&self, http: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
        let mut request = http.get(url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token.expose_secret());
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                format!("no answer within {:?}", self.timeout)
            } else {
                format!("cannot reach the hub ({e}); without internet, fetch the model with `cargo xtask models`")
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => ": the model is gated or private, set HF_TOKEN",
                404 => ": no such model or file",
                _ => "",
            };
            return Err(format!("HTTP {status}{hint}"));
        }
        response
            .bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| format!("download cut: {e}"))
    }
}

/// Write beside the target and rename, so an interrupted download never looks complete.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}
