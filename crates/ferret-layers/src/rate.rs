use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Paces the calls to one service (at most so many a second), or holds one caller to a quota
/// (at most so many a minute).
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

    /// At most `per_minute` calls a minute; a minute's worth may come at once.
    pub fn per_minute(per_minute: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::direct(Quota::per_minute(per_minute)),
        }
    }

    /// Wait until one more call is allowed.
    pub async fn ready(&self) {
        self.limiter.until_ready().await;
    }

    /// Count one call now if the rate allows it; else how long until it would, for a caller to
    /// be refused rather than kept waiting.
    pub fn try_now(&self) -> Result<(), Duration> {
        self.limiter
            .check()
            .map_err(|not_yet| not_yet.wait_time_from(DefaultClock::default().now()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_quota_refuses_past_its_minute_and_says_how_long_to_wait() {
        let quota = RateLimit::per_minute(NonZeroU32::new(2).unwrap());
        assert_eq!(quota.try_now(), Ok(()));
        assert_eq!(quota.try_now(), Ok(()));
        let wait = quota.try_now().unwrap_err();
        // One call's worth of a minute comes back every 30 s.
        assert!(
            wait > Duration::from_secs(20) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
    }

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
