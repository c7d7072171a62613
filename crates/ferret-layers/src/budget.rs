use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What one search may still spend on calls: a count, a wall-clock deadline, and the units each
/// paid backend may still bill. Shared by every attempt of a search, so retries and refinements
/// draw from the same pool.
#[derive(Debug)]
pub struct CallBudget {
    remaining: AtomicU32,
    ends_at: Instant,
    paid_limit: u32,
    paid_spent: Mutex<HashMap<String, u32>>,
}

impl CallBudget {
    /// `calls` calls until `wall_time` from now has passed; paid backends unlimited.
    pub fn new(calls: u32, wall_time: Duration) -> Self {
        Self {
            remaining: AtomicU32::new(calls),
            ends_at: Instant::now() + wall_time,
            paid_limit: u32::MAX,
            paid_spent: Mutex::new(HashMap::new()),
        }
    }

    /// At most `units` billed units (credits or requests) at each paid backend.
    pub fn with_paid_limit(mut self, units: u32) -> Self {
        self.paid_limit = units;
        self
    }

    /// Reserve `units` at `backend`; false, reserving nothing, when that would pass its limit.
    pub fn take_paid(&self, backend: &str, units: u32) -> bool {
        let mut spent = self
            .paid_spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let spent = spent.entry(backend.to_owned()).or_insert(0);
        match spent
            .checked_add(units)
            .filter(|&total| total <= self.paid_limit)
        {
            Some(total) => {
                *spent = total;
                true
            }
            None => false,
        }
    }

    /// Give back `units` reserved at `backend` for a call that was not made.
    pub fn return_paid(&self, backend: &str, units: u32) {
        let mut spent = self
            .paid_spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(spent) = spent.get_mut(backend) {
            *spent = spent.saturating_sub(units);
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
    fn each_paid_backend_has_its_own_limit() {
        let budget = CallBudget::new(10, Duration::from_secs(60)).with_paid_limit(3);
        assert!(budget.take_paid("tavily", 2));
        assert!(
            !budget.take_paid("tavily", 2),
            "2 + 2 passes the limit of 3"
        );
        assert!(budget.take_paid("tavily", 1));
        assert!(budget.take_paid("brave", 3), "brave's units are its own");
        budget.return_paid("tavily", 1);
        assert!(budget.take_paid("tavily", 1));
        assert!(
            budget.take(),
            "paid units do not spend the call count's budget"
        );
    }

    #[test]
    fn no_call_is_taken_once_time_is_up() {
        let budget = CallBudget::new(5, Duration::ZERO);
        assert!(!budget.take());
        assert!(budget.is_exhausted());
    }
}
