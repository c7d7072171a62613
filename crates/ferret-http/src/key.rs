//! API keys: read from configuration or the environment, held so that no log, trace, error or
//! snapshot can show them.

use secrecy::{ExposeSecret, SecretString};

use crate::HttpSetupError;

/// A provider's API key and the variable it is read from, which errors name.
#[derive(Clone)]
pub struct ApiKey {
    secret: SecretString,
    variable: String,
}

impl ApiKey {
    /// A key given in configuration; `variable` is where it would otherwise come from, named in
    /// errors about it.
    pub fn new(secret: impl Into<String>, variable: impl Into<String>) -> Self {
        Self {
            secret: SecretString::from(secret.into()),
            variable: variable.into(),
        }
    }

    /// The key held in the environment variable `variable`.
    pub fn from_env(variable: &str) -> Result<Self, HttpSetupError> {
        match std::env::var(variable) {
            Ok(value) if !value.trim().is_empty() => Ok(Self::new(value.trim(), variable)),
            _ => Err(HttpSetupError::MissingKey {
                variable: variable.to_owned(),
            }),
        }
    }

    /// `given` when there is one, else the key in `variable` (a config's key, or the variable it
    /// names, read as its backend is made).
    pub fn given_or_from_env(given: Option<&Self>, variable: &str) -> Result<Self, HttpSetupError> {
        match given {
            Some(key) => Ok(key.clone()),
            None => Self::from_env(variable),
        }
    }

    /// The variable the key comes from.
    pub fn variable(&self) -> &str {
        &self.variable
    }

    pub(crate) fn expose(&self) -> &str {
        self.secret.expose_secret()
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}: [redacted])", self.variable)
    }
}
