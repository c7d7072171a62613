//! The query's budget as every model call sees it. A search runs its stages inside
//! [`with_model_budget`]; each structured call made in that scope is bounded by the per-call
//! deadline and by what is left of the wall time (the request carries the earlier of the two,
//! and the call is abandoned then), and is not made at all once the query's tokens are spent.
//! Outside a scope (a stage used on its own) calls are unbounded.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the model calls of one query may spend.
#[derive(Debug)]
pub struct ModelBudget {
    /// When the query's wall time ends.
    pub ends: Instant,
    /// Longest one call may take.
    pub per_call: Duration,
    tokens_left: AtomicU64,
}

impl ModelBudget {
    /// A budget ending at `ends`, `per_call` at most per call, `tokens` in all.
    pub fn new(ends: Instant, per_call: Duration, tokens: u64) -> Self {
        Self {
            ends,
            per_call,
            tokens_left: AtomicU64::new(tokens),
        }
    }

    /// The deadline of a call starting now: the per-call deadline or the end of the wall time,
    /// whichever comes first.
    pub fn call_deadline(&self) -> Instant {
        (Instant::now() + self.per_call).min(self.ends)
    }

    /// Tokens the query may still spend.
    pub fn tokens_left(&self) -> u64 {
        self.tokens_left.load(Ordering::Relaxed)
    }

    /// Count `tokens` as spent.
    pub fn spend(&self, tokens: u64) {
        let _ = self
            .tokens_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                Some(left.saturating_sub(tokens))
            });
    }

    /// Why a call of up to `tokens` cannot be made now, if it cannot.
    pub fn refuses(&self, tokens: u64) -> Option<String> {
        if Instant::now() >= self.ends {
            return Some("the query's wall time is spent".to_owned());
        }
        let left = self.tokens_left();
        (tokens > left).then(|| {
            format!("the query's token budget has {left} tokens left, the call could use {tokens}")
        })
    }
}

tokio::task_local! {
    static BUDGET: Arc<ModelBudget>;
}

/// Run `work` with `budget` bounding every model call it makes (in its own task; tasks it
/// spawns are not bounded).
pub async fn with_model_budget<F: Future>(budget: ModelBudget, work: F) -> F::Output {
    BUDGET.scope(Arc::new(budget), work).await
}

/// The budget of the scope the caller runs in, if any.
pub fn current_budget() -> Option<Arc<ModelBudget>> {
    BUDGET.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_is_bounded_by_the_earlier_of_its_deadline_and_the_wall_time() {
        assert!(current_budget().is_none());
        let ends = Instant::now() + Duration::from_secs(2);
        let budget = ModelBudget::new(ends, Duration::from_secs(60), 1000);
        with_model_budget(budget, async {
            let budget = current_budget().expect("in scope");
            assert_eq!(budget.call_deadline(), ends);
            assert_eq!(budget.refuses(900), None);
            budget.spend(300);
            assert_eq!(budget.tokens_left(), 700);
            assert!(budget
                .refuses(900)
                .expect("too many")
                .contains("700 tokens left"));
            budget.spend(5000);
            assert_eq!(budget.tokens_left(), 0);
        })
        .await;
        let spent = ModelBudget::new(Instant::now(), Duration::from_secs(1), 10);
        assert!(spent.refuses(1).expect("no time").contains("wall time"));
    }
}
