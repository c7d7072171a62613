use std::future::Future;
use std::time::Duration;

/// A call that did not finish within its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// Bounds one call in time.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    within: Duration,
}

impl Deadline {
    /// A deadline `within` from when the call starts.
    pub fn new(within: Duration) -> Self {
        Self { within }
    }

    /// How long a call may take.
    pub fn within(&self) -> Duration {
        self.within
    }

    /// Run `call`, or give up when the deadline passes.
    pub async fn run<T>(&self, call: impl Future<Output = T>) -> Result<T, Elapsed> {
        tokio::time::timeout(self.within, call)
            .await
            .map_err(|_| Elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_is_given_up() {
        let deadline = Deadline::new(Duration::from_millis(100));
        assert_eq!(deadline.run(async { 7 }).await, Ok(7));
        let slow = tokio::time::sleep(Duration::from_millis(200));
        assert_eq!(deadline.run(slow).await, Err(Elapsed));
    }
}
