use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

/// Where a [`SharedCache`] answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// This caller ran the call.
    Ran,
    /// An earlier call's result, still fresh.
    Cached,
    /// An identical call in flight, which this caller waited on.
    Joined,
}

/// Results of calls kept for a while, and identical calls in flight run once: the others wait
/// for it. Only successes are kept. Cheap to clone; clones share the entries.
#[derive(Clone)]
pub struct SharedCache<K, V> {
    cache: Cache<K, Arc<V>>,
}

impl<K, V> SharedCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// At most `capacity` results, each kept `ttl`.
    pub fn new(capacity: u64, ttl: Duration) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(capacity)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// At most `max_weight` of results as `weigh` counts them (bytes, say), the least used
    /// dropped first, each kept `ttl`.
    pub fn weighed(
        max_weight: u64,
        ttl: Duration,
        weigh: impl Fn(&K, &V) -> u32 + Send + Sync + 'static,
    ) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(max_weight)
                .weigher(move |key: &K, value: &Arc<V>| weigh(key, value))
                .time_to_live(ttl)
                .build(),
        }
    }

    /// What the kept results weigh now: their count, or their weight for a weighed cache
    /// (the cache's pending housekeeping is done first).
    pub async fn weight(&self) -> u64 {
        self.cache.run_pending_tasks().await;
        self.cache.weighted_size()
    }

    /// Drop every kept result (calls in flight still finish for those waiting on them).
    pub fn clear(&self) {
        self.cache.invalidate_all();
    }

    /// Drop the result kept for `key`, so the next call for it runs (a refresh).
    pub async fn forget(&self, key: &K) {
        self.cache.invalidate(key).await;
    }

    /// A probe for a call about to be made with `key`: after the call, or after giving up on
    /// it, it tells where the answer came from.
    pub fn probe(&self, key: &K) -> Probe {
        Probe {
            was_cached: self.cache.contains_key(key),
            ran: AtomicBool::new(false),
        }
    }

    /// The result for `key`: kept, joined from a call in flight, or from running `call`; `probe`
    /// (from [`SharedCache::probe`]) records which.
    pub async fn get_or_run<E>(
        &self,
        key: K,
        probe: &Probe,
        call: impl Future<Output = Result<V, E>>,
    ) -> Result<Arc<V>, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        self.cache
            .try_get_with(key, async {
                probe.ran.store(true, Ordering::SeqCst);
                call.await.map(Arc::new)
            })
            .await
    }
}

/// Where one call's answer came from, known even when the caller stopped waiting for it.
#[derive(Debug)]
pub struct Probe {
    was_cached: bool,
    ran: AtomicBool,
}

impl Probe {
    /// Where the answer came from (so far: a call given up on while joined says `Joined`).
    pub fn origin(&self) -> Origin {
        match (self.ran.load(Ordering::SeqCst), self.was_cached) {
            (true, _) => Origin::Ran,
            (false, true) => Origin::Cached,
            (false, false) => Origin::Joined,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    #[tokio::test]
    async fn a_kept_result_answers_and_identical_calls_in_flight_run_once() {
        let cache: SharedCache<&str, u32> = SharedCache::new(10, Duration::from_secs(60));
        let runs = AtomicU32::new(0);
        let call = || async {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<u32, String>(7)
        };
        let (first, second) = (cache.probe(&"q"), cache.probe(&"q"));
        let (a, b) = tokio::join!(
            cache.get_or_run("q", &first, call()),
            cache.get_or_run("q", &second, call())
        );
        assert_eq!((*a.unwrap(), *b.unwrap()), (7, 7));
        let mut origins = [first.origin(), second.origin()];
        origins.sort_by_key(|o| *o as u8);
        assert_eq!(origins, [Origin::Ran, Origin::Joined]);
        let third = cache.probe(&"q");
        let again = cache.get_or_run("q", &third, call()).await;
        assert_eq!((*again.unwrap(), third.origin()), (7, Origin::Cached));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_weighed_cache_keeps_within_its_weight() {
        let cache: SharedCache<u32, String> =
            SharedCache::weighed(100, Duration::from_secs(60), |_, text: &String| {
                u32::try_from(text.len()).unwrap()
            });
        for key in 0..10 {
            let probe = cache.probe(&key);
            let text = "x".repeat(40);
            let kept = cache
                .get_or_run(key, &probe, async { Ok::<_, ()>(text) })
                .await;
            assert!(kept.is_ok());
        }
        let weight = cache.weight().await;
        assert!(weight <= 100, "{weight}");
        assert!(weight >= 40, "the newest are kept");
    }

    #[tokio::test]
    async fn a_failure_is_not_kept() {
        let cache: SharedCache<&str, u32> = SharedCache::new(10, Duration::from_secs(60));
        let probe = cache.probe(&"q");
        let failed = cache
            .get_or_run("q", &probe, async { Err::<u32, _>("down") })
            .await;
        assert_eq!(*failed.unwrap_err(), "down");
        let probe = cache.probe(&"q");
        let ok = cache
            .get_or_run("q", &probe, async { Ok::<u32, &str>(3) })
            .await;
        assert_eq!((*ok.unwrap(), probe.origin()), (3, Origin::Ran));
    }
}
