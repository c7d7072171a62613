use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Paces the calls to one service (at most so many a second), or holds one caller to a quota
/// (at most so many a minute).
#[derive(Debug)]
pub struct RateLimit {
    limiter: DefaultDirectRateLimiter,
    /// The most the quota grants at once.
    burst: NonZeroU32,
}

impl RateLimit {
    /// At most `per_second` calls a second.
    pub fn per_second(per_second: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
            burst: per_second,
        }
    }

    /// At most `per_minute` calls a minute; a minute's worth may come at once.
    pub fn per_minute(per_minute: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::direct(Quota::per_minute(per_minute)),
            burst: per_minute,
        }
    }

    /// Wait until one more call is allowed.
    pub async fn ready(&self) {
        self.limiter.until_ready().await;
    }

    /// Wait until `units` more are allowed (a call's tokens against a tokens-a-minute quota); a
    /// call larger than the whole quota waits for all of it.
    pub async fn ready_for(&self, units: NonZeroU32) {
        // Never more than the burst, so the wait always ends.
        let _ = self.limiter.until_n_ready(units.min(self.burst)).await;
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

    #[test]
    fn units_are_counted_against_the_quota_and_no_call_waits_for_more_than_it_holds() {
        let tokens = RateLimit::per_minute(NonZeroU32::new(1000).unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let started = Instant::now();
        // Larger than the quota: takes all of it, at once.
        runtime.block_on(tokens.ready_for(NonZeroU32::new(5000).unwrap()));
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(tokens.try_now().is_err(), "the minute's tokens are spent");
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
