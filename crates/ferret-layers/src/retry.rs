use std::future::Future;
use std::time::{Duration, Instant};

use ferret_core::RetryClass;

use crate::{Deadline, Elapsed};

/// How a failed call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt, for transient and rate-limited failures only.
    pub max_retries: u32,
    /// Wait before a retry when the service did not say how long (`Retry-After`).
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 1,
            backoff: Duration::from_millis(200),
        }
    }
}

/// An error a call can end with, as the retry layer reads it.
pub trait Retryable {
    /// Its retry class; `None` for an error no retry can change (the budget is spent).
    fn retry_class(&self) -> Option<&RetryClass>;
    /// Is this the error of a call that ran out of time? Retrying it would run out again.
    fn is_elapsed(&self) -> bool;
}

/// Repeats a failed call while its retry class allows, its policy has retries left, and the wait
/// fits before the call's deadline. Each attempt gets the time left until that deadline.
#[derive(Debug, Clone, Copy, Default)]
pub struct Retry {
    policy: RetryPolicy,
}

impl Retry {
    /// Retry by `policy`.
    pub fn new(policy: RetryPolicy) -> Self {
        Self { policy }
    }

    /// Run `attempt` until it succeeds or may not be retried, all within `deadline` from now; an
    /// attempt cut short by the deadline fails with `elapsed`.
    pub async fn run<T, E, Fut>(
        &self,
        deadline: Deadline,
        elapsed: impl Fn() -> E,
        mut attempt: impl FnMut() -> Fut,
    ) -> Result<T, E>
    where
        E: Retryable + std::fmt::Display,
        Fut: Future<Output = Result<T, E>>,
    {
        let ends_at = Instant::now() + deadline.within();
        let mut retries_left = self.policy.max_retries;
        loop {
            let remaining = Deadline::new(ends_at.saturating_duration_since(Instant::now()));
            let error = match remaining.run(attempt()).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => error,
                Err(Elapsed) => elapsed(),
            };
            let wait = match error.retry_class() {
                Some(RetryClass::Transient) => self.policy.backoff,
                Some(RetryClass::RateLimited { retry_after }) => {
                    retry_after.unwrap_or(self.policy.backoff)
                }
                _ => return Err(error),
            };
            // A retry that could not finish before the deadline only wastes the service's capacity.
            let time_left = ends_at.saturating_duration_since(Instant::now());
            if retries_left == 0 || wait >= time_left || error.is_elapsed() {
                return Err(error);
            }
            retries_left -= 1;
            tracing::debug!(?wait, error = %error, "retrying call");
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Failure {
        Class(RetryClass),
        TimedOut,
    }

    impl std::fmt::Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl Retryable for Failure {
        fn retry_class(&self) -> Option<&RetryClass> {
            match self {
                Failure::Class(class) => Some(class),
                Failure::TimedOut => Some(&RetryClass::Transient),
            }
        }
        fn is_elapsed(&self) -> bool {
            *self == Failure::TimedOut
        }
    }

    async fn attempts_until(
        policy: RetryPolicy,
        deadline: Duration,
        failures: Vec<Failure>,
    ) -> (Result<&'static str, Failure>, u32) {
        let calls = AtomicU32::new(0);
        let failures = std::sync::Mutex::new(failures);
        let result = Retry::new(policy)
            .run(
                Deadline::new(deadline),
                || Failure::TimedOut,
                || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let next = failures.lock().unwrap().pop();
                    async move { next.map_or(Ok("hits"), Err) }
                },
            )
            .await;
        (result, calls.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn a_transient_failure_is_retried_once() {
        let policy = RetryPolicy::default();
        let minute = Duration::from_secs(60);
        let transient = || Failure::Class(RetryClass::Transient);
        assert_eq!(
            attempts_until(policy, minute, vec![transient()]).await,
            (Ok("hits"), 2)
        );
        let (result, calls) = attempts_until(policy, minute, vec![transient(), transient()]).await;
        assert_eq!((result.is_err(), calls), (true, 2), "one retry, no more");
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_failure_is_not_retried() {
        let (result, calls) = attempts_until(
            RetryPolicy::default(),
            Duration::from_secs(60),
            vec![Failure::Class(RetryClass::Permanent)],
        )
        .await;
        assert_eq!(
            (result, calls),
            (Err(Failure::Class(RetryClass::Permanent)), 1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_longer_than_the_time_left_is_not_waited_for() {
        let limited = Failure::Class(RetryClass::RateLimited {
            retry_after: Some(Duration::from_secs(30)),
        });
        let (result, calls) = attempts_until(
            RetryPolicy::default(),
            Duration::from_secs(5),
            vec![limited],
        )
        .await;
        assert!(result.is_err());
        assert_eq!(calls, 1);
    }
}
