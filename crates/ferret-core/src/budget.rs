use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A budget that cannot be honoured: every search needs at least one attempt and some time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid budget: {0}")]
pub struct BudgetError(pub String);

/// The one set of limits every stage reads: attempts, sub-queries, backend calls, tokens, wall time.
///
/// When any of them runs out the search returns what it has, with
/// [`StopReason::BudgetExhausted`](crate::StopReason::BudgetExhausted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Search attempts of the refine loop (3 by default).
    pub max_attempts: u32,
    /// Sub-queries a decomposition may produce.
    pub max_sub_queries: u32,
    /// Backend calls over the whole search, cache hits excluded.
    pub max_backend_calls: u32,
    /// LLM tokens over the whole search (prompt + completion).
    pub max_tokens: u64,
    /// Wall time for the whole search.
    #[serde(with = "millis")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub wall_time: Duration,
    /// Deadline for one backend call.
    #[serde(with = "millis")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub call_deadline: Duration,
    /// Units (credits or requests, as each provider bills) the search may spend at each paid
    /// backend; 0 searches free backends only.
    pub max_paid_units: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            max_sub_queries: 3,
            max_backend_calls: 24,
            max_tokens: 32_000,
            wall_time: Duration::from_secs(30),
            call_deadline: Duration::from_secs(10),
            max_paid_units: 20,
        }
    }
}

impl Budget {
    /// Check that the budget allows at least one search.
    pub fn validate(&self) -> Result<(), BudgetError> {
        let zero = [
            ("max_attempts", self.max_attempts == 0),
            ("max_sub_queries", self.max_sub_queries == 0),
            ("max_backend_calls", self.max_backend_calls == 0),
            ("wall_time", self.wall_time.is_zero()),
            ("call_deadline", self.call_deadline.is_zero()),
        ];
        match zero.iter().find(|(_, is_zero)| *is_zero) {
            Some((name, _)) => Err(BudgetError(format!(
                "{name} is zero, so no search could run"
            ))),
            None => Ok(()),
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
