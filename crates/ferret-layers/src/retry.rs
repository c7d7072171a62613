//! The one retry layer of every call Ferret makes: backends, models and embedders alike.

use std::future::Future;
use std::time::{Duration, Instant};

use ferret_core::{LlmError, RetryClass};

use crate::{Deadline, Elapsed};

/// How a failed call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt, for transient and rate-limited failures only.
    pub max_retries: u32,
    /// Wait before retrying a transient failure (a timeout, a 5xx, a dropped connection).
    pub backoff: Duration,
    /// Wait before retrying a rate limit whose service did not say how long (`Retry-After`).
    pub rate_limited_wait: Duration,
    /// The longest wait honoured: a service asking for more is not retried, since the caller
    /// is better served by a failure now than by a wait that long.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    /// A backend call's: one retry, 200 ms after either failure, at most 10 s of waiting.
    fn default() -> Self {
        Self {
            max_retries: 1,
            backoff: Duration::from_millis(200),
            rate_limited_wait: Duration::from_millis(200),
            max_wait: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// A model or embedder call's: one retry, 250 ms after a transient failure and 1 s after a
    /// rate limit that says no more (a model server's limits reset more slowly than a search
    /// API's), at most 10 s of waiting.
    pub fn for_models() -> Self {
        Self {
            max_retries: 1,
            backoff: Duration::from_millis(250),
            rate_limited_wait: Duration::from_secs(1),
            max_wait: Duration::from_secs(10),
        }
    }
}

/// An error a call can end with, as the retry layer reads it.
pub trait Retryable {
    /// Its retry class; `None` for an error no retry can change (the budget is spent).
    fn retry_class(&self) -> Option<&RetryClass>;
    /// Is this the error of a call that ran out of time? Retrying it would run out again.
    fn is_elapsed(&self) -> bool;
    /// The error as returned when a retry it asked for is not made, with `why`; the default
    /// returns it unchanged.
    fn not_retried(self, why: &str) -> Self
    where
        Self: Sized,
    {
        let _ = why;
        self
    }
}

impl Retryable for LlmError {
    fn retry_class(&self) -> Option<&RetryClass> {
        Some(&self.retry)
    }

    fn is_elapsed(&self) -> bool {
        false
    }

    fn not_retried(self, why: &str) -> Self {
        LlmError {
            message: format!("{} (not retried: {why})", self.message),
            retry: self.retry,
        }
    }
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
        attempt: impl FnMut() -> Fut,
    ) -> Result<T, E>
    where
        E: Retryable + std::fmt::Display,
        Fut: Future<Output = Result<T, E>>,
    {
        let ends_at = Instant::now() + deadline.within();
        self.run_until(Some(ends_at), elapsed, attempt).await
    }

    /// [`Retry::run`] for a call that ends at `ends_at` when it has an end (a model call bounded
    /// by its search's wall time), or runs as long as its own timeouts allow.
    pub async fn run_until<T, E, Fut>(
        &self,
        ends_at: Option<Instant>,
        elapsed: impl Fn() -> E,
        mut attempt: impl FnMut() -> Fut,
    ) -> Result<T, E>
    where
        E: Retryable + std::fmt::Display,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut retries_left = self.policy.max_retries;
        loop {
            let outcome = match ends_at {
                Some(ends_at) => {
                    let remaining = ends_at.saturating_duration_since(Instant::now());
                    Deadline::new(remaining).run(attempt()).await
                }
                None => Ok(attempt().await),
            };
            let (error, cut) = match outcome {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => (error, false),
                Err(Elapsed) => (elapsed(), true),
            };
            let wait = match error.retry_class() {
                Some(RetryClass::Transient) => self.policy.backoff,
                Some(RetryClass::RateLimited { retry_after }) => {
                    retry_after.unwrap_or(self.policy.rate_limited_wait)
                }
                _ => return Err(error),
            };
            if retries_left == 0 || cut || error.is_elapsed() {
                return Err(error);
            }
            // A retry that could not finish before the deadline only wastes the service's
            // capacity; one asking for a longer wait than the policy allows holds the caller.
            let time_left = ends_at.map(|end| end.saturating_duration_since(Instant::now()));
            if wait > self.policy.max_wait || time_left.is_some_and(|left| wait >= left) {
                let why = format!(
                    "a retry would wait {wait:?}{}",
                    time_left
                        .map_or_else(String::new, |left| format!(", the call has {left:?} left"))
                );
                return Err(error.not_retried(&why));
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
    async fn a_retry_after_past_the_longest_wait_is_not_waited_for_and_says_so() {
        let policy = RetryPolicy {
            max_wait: Duration::from_secs(2),
            ..RetryPolicy::for_models()
        };
        let calls = AtomicU32::new(0);
        let result: Result<(), LlmError> = Retry::new(policy)
            .run_until(
                None,
                || unreachable!("no deadline"),
                || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async {
                        Err(LlmError {
                            message: "HTTP 429".into(),
                            retry: RetryClass::RateLimited {
                                retry_after: Some(Duration::from_secs(5)),
                            },
                        })
                    }
                },
            )
            .await;
        let error = result.unwrap_err();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(error.message.contains("not retried"), "{}", error.message);
        assert!(error.message.contains("5s"), "{}", error.message);
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limit_that_says_no_wait_waits_the_policys() {
        let policy = RetryPolicy::for_models();
        let started = tokio::time::Instant::now();
        let limited = Failure::Class(RetryClass::RateLimited { retry_after: None });
        let (result, calls) = attempts_until(policy, Duration::from_secs(60), vec![limited]).await;
        assert_eq!((result, calls), (Ok("hits"), 2));
        assert_eq!(started.elapsed(), policy.rate_limited_wait);
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
