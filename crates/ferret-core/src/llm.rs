use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::RetryClass;

/// Who speaks in a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The request.
    User,
    /// The model's earlier replies.
    Assistant,
}

/// One message of a chat prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatMessage {
    /// Who speaks.
    pub role: ChatRole,
    /// What is said.
    pub content: String,
}

/// A request to a language model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompletionRequest {
    /// The prompt.
    pub messages: Vec<ChatMessage>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature; 0 for the most deterministic output the model offers.
    pub temperature: f32,
    /// JSON Schema the output must follow, when structured output is wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<serde_json::Value>,
    /// Text that ends the answer where it first appears; the answer stops before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// When the answer is no longer wanted (the query's per-call deadline or the end of its wall
    /// time): a provider stops working on it then, and waits for a retry only if it fits before.
    #[serde(skip)]
    pub deadline: Option<std::time::Instant>,
}

/// Receives text as a model writes it, one piece at a time.
pub type TextSink<'a> = dyn for<'t> Fn(&'t str) + Send + Sync + 'a;

/// Tokens counted for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Completion {
    /// The generated text.
    pub text: String,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The model that answered.
    pub model: String,
    /// The structured-output dialect the request was sent in (`json_schema`,
    /// `json_object_schema`, `json_object`, `prompt_only`), when it asked for JSON and the
    /// provider has dialects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// The reply was decoded under its JSON Schema's grammar, so it parses by construction and
    /// asking the model to repair it cannot help.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constrained: bool,
}

/// A model call that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("language model call failed: {message}")]
pub struct LlmError {
    /// What happened.
    pub message: String,
    /// Whether and when to retry.
    pub retry: RetryClass,
}

/// A chat model: a remote OpenAI-compatible server, an embedded local model, or a scripted replay.
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// The model's name, for traces and usage accounting.
    fn name(&self) -> &str;

    /// Generate one completion.
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError>;

    /// Whether the stages should ask this model to write what the user reads (answers, reports,
    /// actions), not only to classify, rewrite, grade and plan. A model too small to write prose
    /// faithful to its sources says no, and the extractive stages write instead.
    fn writes_answers(&self) -> bool {
        true
    }

    /// Generate one completion, handing `sink` each piece of text as the model writes it. A
    /// model that does not stream hands it nothing (the default) and answers as
    /// [`complete`](Self::complete) does. Pieces from an attempt that fails are not taken back.
    async fn complete_streaming(
        &self,
        request: &CompletionRequest,
        sink: &TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let _ = sink;
        self.complete(request).await
    }
}

/// An embedding call that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedding failed: {message}")]
pub struct EmbedError {
    /// What happened.
    pub message: String,
    /// Whether and when to retry.
    pub retry: RetryClass,
}

/// Turns text into dense vectors of a fixed dimension.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Names the model and every setting that changes its vectors (such as the token limit):
    /// vectors from embedders with different names are never mixed or reused for each other.
    fn name(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// Embed a batch of texts; the result has one vector per input, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// The cosine similarity of two embeddings of one embedder; 0 for vectors of different lengths
/// or a zero vector.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let norms = norm(a) * norm(b);
    if norms > 0.0 {
        dot / norms
    } else {
        0.0
    }
}

/// How a vector-store backend ranks documents for a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum RetrievalMode {
    /// Keyword search: BM25 over sparse term vectors.
    #[default]
    Bm25,
    /// Nearest neighbours of the query's embedding.
    Dense,
    /// Both, fused by reciprocal rank.
    Hybrid,
}

impl RetrievalMode {
    /// Every mode, in the order reports list them.
    pub const ALL: [Self; 3] = [Self::Bm25, Self::Dense, Self::Hybrid];

    /// True when the mode needs an [`Embedder`].
    pub fn needs_embeddings(self) -> bool {
        !matches!(self, Self::Bm25)
    }

    /// The form of query the mode searches best with: a dense index matches the question as
    /// asked; BM25 and hybrid score its words.
    pub fn query_form(self) -> crate::QueryForm {
        match self {
            Self::Dense => crate::QueryForm::Question,
            Self::Bm25 | Self::Hybrid => crate::QueryForm::Keywords,
        }
    }

    /// The mode's name, as written on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Dense => "dense",
            Self::Hybrid => "hybrid",
        }
    }
}

impl std::fmt::Display for RetrievalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RetrievalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown retrieval mode `{s}`: use bm25, dense or hybrid"))
    }
}
