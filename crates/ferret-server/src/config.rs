use std::num::NonZeroU32;
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
    /// Bytes the record of who started each thread may hold; past it the thread used least
    /// recently is forgotten (and continuing it is refused as not found).
    pub thread_owner_bytes: u64,
    /// Bytes the hits kept for MCP `fetch` may hold; past it the oldest are forgotten.
    pub seen_hit_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 256 * 1024,
            max_ingest_bytes: 64 * 1024 * 1024,
            max_question_chars: ferret::jobs::search::MAX_QUESTION_CHARS,
            request_deadline: Duration::from_secs(30),
            max_concurrent: 16,
            retry_after_secs: 1,
            thread_owner_bytes: 8 * 1024 * 1024,
            seen_hit_bytes: ferret_mcp::DEFAULT_SEEN_BYTES,
        }
    }
}

/// One accepted token: whom it stands for, their groups, and their quota.
#[derive(Clone)]
pub struct BearerToken {
    principal: String,
    secret: Vec<u8>,
    groups: Vec<String>,
    requests_per_minute: Option<NonZeroU32>,
    may_ingest: bool,
    operator: bool,
}

impl BearerToken {
    /// `secret`, presented by `principal`. An empty secret is refused: it would let anyone in.
    pub fn new(principal: impl Into<String>, secret: impl Into<String>) -> Option<Self> {
        // A token read from a file often ends with a newline no client sends.
        let secret = secret.into().trim().to_owned();
        (!secret.is_empty()).then(|| Self {
            principal: principal.into(),
            secret: secret.into_bytes(),
            groups: Vec::new(),
            requests_per_minute: None,
            may_ingest: false,
            operator: false,
        })
    }

    /// The groups whose documents the principal may read (see [`ferret::Access`]).
    pub fn with_groups(mut self, groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.groups = groups
            .into_iter()
            .map(|g| g.into().trim().to_owned())
            .filter(|g| !g.is_empty())
            .collect();
        self
    }

    /// Let the principal add documents (`POST /v1/ingest`): documents they may read, with
    /// access lists of their own groups (a document listing none gets them); a stored document
    /// they may not read is not replaced. Without it they get 403.
    pub fn allowing_ingest(mut self) -> Self {
        self.may_ingest = true;
        self
    }

    /// The operator's token: it may ingest, and write any document with any access list.
    /// Another token allowed to ingest writes only documents its principal may read, with
    /// lists of the principal's groups.
    pub fn as_operator(mut self) -> Self {
        self.may_ingest = true;
        self.operator = true;
        self
    }

    /// Hold the principal to `requests` a minute; past it they get 429 with `Retry-After`.
    pub fn with_requests_per_minute(mut self, requests: NonZeroU32) -> Self {
        self.requests_per_minute = Some(requests);
        self
    }

    /// Two of `tokens` with one secret, by their principals' names: a request carrying it
    /// could stand for either, so a server must refuse to start with them.
    pub fn sharing_a_secret(tokens: &[BearerToken]) -> Option<(&str, &str)> {
        tokens.iter().enumerate().find_map(|(i, a)| {
            tokens[i + 1..]
                .iter()
                .find(|b| a.secret == b.secret)
                .map(|b| (a.principal(), b.principal()))
        })
    }

    /// Whom the token stands for.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    pub(crate) fn groups(&self) -> &[String] {
        &self.groups
    }

    pub(crate) fn requests_per_minute(&self) -> Option<NonZeroU32> {
        self.requests_per_minute
    }

    pub(crate) fn may_ingest(&self) -> bool {
        self.may_ingest
    }

    pub(crate) fn is_operator(&self) -> bool {
        self.operator
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
            .field("groups", &self.groups)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("may_ingest", &self.may_ingest)
            .field("operator", &self.operator)
            .finish()
    }
}
