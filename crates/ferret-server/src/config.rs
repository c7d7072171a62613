use std::time::Duration;

/// What one request may ask, and how many run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes; a larger one is refused with 413.
    pub max_body_bytes: usize,
    /// Largest `POST /v1/ingest` body, in bytes (documents are sent whole); a larger one is
    /// refused with 413.
    pub max_ingest_bytes: usize,
    /// Longest question, in characters; a longer one is refused with 413.
    pub max_question_chars: usize,
    /// Longest a search may run: a request's budget asking for more wall time gets this much,
    /// and the search returns what it has when it is spent.
    pub request_deadline: Duration,
    /// Searches running at once; one more is refused with 503 and `Retry-After` (0 refuses
    /// every search).
    pub max_concurrent: usize,
    /// Seconds a refused client is told to wait (`Retry-After`).
    pub retry_after_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 256 * 1024,
            max_ingest_bytes: 64 * 1024 * 1024,
            max_question_chars: ferret::MAX_QUESTION_CHARS,
            request_deadline: Duration::from_secs(30),
            max_concurrent: 16,
            retry_after_secs: 1,
        }
    }
}

/// One accepted token and whom it stands for.
#[derive(Clone)]
pub struct BearerToken {
    principal: String,
    secret: Vec<u8>,
}

impl BearerToken {
    /// `secret`, presented by `principal`. An empty secret is refused: it would let anyone in.
    pub fn new(principal: impl Into<String>, secret: impl Into<String>) -> Option<Self> {
        // A token read from a file often ends with a newline no client sends.
        let secret = secret.into().trim().to_owned();
        (!secret.is_empty()).then(|| Self {
            principal: principal.into(),
            secret: secret.into_bytes(),
        })
    }

    /// Whom the token stands for.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    pub(crate) fn secret(&self) -> &[u8] {
        &self.secret
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerToken")
            .field("principal", &self.principal)
            .field("secret", &"REDACTED")
            .finish()
    }
}
