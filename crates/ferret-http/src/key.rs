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
