use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Paces the calls to one service: at most so many a second.
#[derive(Debug)]
pub struct RateLimit {
    limiter: DefaultDirectRateLimiter,
}

impl RateLimit {
    /// At most `per_second` calls a second.
    pub fn per_second(per_second: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
        }
    }

    /// Wait until one more call is allowed.
    pub async fn ready(&self) {
        self.limiter.until_ready().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[tokio::test]
    async fn calls_past_the_rate_wait_their_turn() {
        let limit = RateLimit::per_second(NonZeroU32::new(10).unwrap());
        let started = Instant::now();
        for _ in 0..12 {
            limit.ready().await;
        }
        // A second's worth passes at once; the next two wait about 100 ms each.
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "{:?}",
            started.elapsed()
        );
    }
}
