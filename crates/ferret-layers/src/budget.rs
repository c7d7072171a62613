use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What one search may still spend on calls: a count and a wall-clock deadline. Shared by every
/// attempt of a search, so retries and refinements draw from the same pool.
#[derive(Debug)]
pub struct CallBudget {
    remaining: AtomicU32,
    ends_at: Instant,
}

impl CallBudget {
    /// `calls` calls until `wall_time` from now has passed.
    pub fn new(calls: u32, wall_time: Duration) -> Self {
        Self {
            remaining: AtomicU32::new(calls),
            ends_at: Instant::now() + wall_time,
        }
    }

    /// Take one call from the budget; false when none is left or time is up.
    pub fn take(&self) -> bool {
        self.time_left() > Duration::ZERO
            && self
                .remaining
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
    }

    /// Time until the search's deadline.
    pub fn time_left(&self) -> Duration {
        self.ends_at.saturating_duration_since(Instant::now())
    }

    /// True when no call can be made any more.
    pub fn is_exhausted(&self) -> bool {
        self.remaining.load(Ordering::SeqCst) == 0 || self.time_left().is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_taken_until_none_is_left() {
        let budget = CallBudget::new(2, Duration::from_secs(60));
        assert!(budget.take() && budget.take());
        assert!(!budget.take());
        assert!(budget.is_exhausted());
    }

    #[test]
    fn no_call_is_taken_once_time_is_up() {
        let budget = CallBudget::new(5, Duration::ZERO);
        assert!(!budget.take());
        assert!(budget.is_exhausted());
    }
}
