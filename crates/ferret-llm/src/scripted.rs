use std::sync::Mutex;

use async_trait::async_trait;
use ferret_core::{Completion, CompletionRequest, LanguageModel, LlmError, RetryClass, TokenUsage};
use serde::{Deserialize, Serialize};

/// One recorded model reply. When `expect_contains` is set, the request's last message must
/// contain it, so a replay notices when the pipeline sends something else than was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Text the last message of the request must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_contains: Option<String>,
    /// The reply, verbatim (malformed output included: that is what the fixtures test).
    pub reply: String,
}

/// A model that replays recorded exchanges in order, for deterministic tests. When the script is
/// used up, or a request does not match, it fails with a permanent error.
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    exchanges: Mutex<std::collections::VecDeque<Exchange>>,
}

impl ScriptedModel {
    /// Replay `exchanges` in order under `name`.
    pub fn new(name: impl Into<String>, exchanges: Vec<Exchange>) -> Self {
        Self {
            name: name.into(),
            exchanges: Mutex::new(exchanges.into()),
        }
    }

    /// Reply `replies` in order under `name`, whatever is asked.
    pub fn replying(name: impl Into<String>, replies: &[&str]) -> Self {
        let exchanges = replies
            .iter()
            .map(|reply| Exchange {
                expect_contains: None,
                reply: (*reply).to_owned(),
            })
            .collect();
        Self::new(name, exchanges)
    }

    /// Load a JSONL transcript: one [`Exchange`] per line.
    pub fn from_jsonl(name: impl Into<String>, jsonl: &str) -> Result<Self, String> {
        let exchanges = jsonl
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", n + 1)))
            .collect::<Result<Vec<Exchange>, _>>()?;
        Ok(Self::new(name, exchanges))
    }

    /// Exchanges not yet replayed.
    pub fn remaining(&self) -> usize {
        self.exchanges.lock().map(|q| q.len()).unwrap_or(0)
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let fail = |message: String| LlmError {
            message,
            retry: RetryClass::Permanent,
        };
        let exchange = self
            .exchanges
            .lock()
            .map_err(|_| fail("the script's lock was poisoned".into()))?
            .pop_front()
            .ok_or_else(|| fail(format!("scripted model `{}` has no reply left", self.name)))?;
        let last = request
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or_default();
        if let Some(expected) = &exchange.expect_contains {
            if !last.contains(expected.as_str()) {
                return Err(fail(format!(
                    "the request does not contain the recorded `{expected}`"
                )));
            }
        }
        let words = |s: &str| s.split_whitespace().count() as u64;
        let prompt_tokens = request.messages.iter().map(|m| words(&m.content)).sum();
        Ok(Completion {
            usage: TokenUsage {
                prompt_tokens,
                completion_tokens: words(&exchange.reply),
            },
            text: exchange.reply,
            model: self.name.clone(),
            response_format: None,
            constrained: false,
        })
    }
}
