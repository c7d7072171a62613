//! The hits this server's searches returned, by principal and id, for `fetch`: the newest kept,
//! the oldest forgotten past a bound on their number and one on their bytes, so memory stays
//! level however long the server runs. A principal fetches only what their own searches
//! returned, and only while the index's access lists still let them read it (`fetch` checks
//! each kept hit with the backend before showing it: the store keys on principal and id, not
//! on the lists of the moment it was kept).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ferret::Hit;

/// Hits kept for `fetch`, at most.
const KEPT: usize = 2_000;
/// Bytes the kept hits may hold unless told otherwise: a few long documents must not hold more
/// than the bound on their number meant.
pub const DEFAULT_SEEN_BYTES: usize = 16 * 1024 * 1024;

/// What one kept hit holds, roughly, in bytes.
fn weight(asker: &str, hit: &Hit) -> usize {
    std::mem::size_of::<Hit>() + asker.len() + hit.heap_bytes()
}

/// The hits searches returned, kept for `fetch` within a number and a byte budget. One store
/// may serve several MCP services (each session of the HTTP service, say), and its owner reads
/// [`SeenHits::bytes`] for its metrics.
#[derive(Debug)]
pub struct SeenHits {
    inner: Mutex<Kept>,
    max_bytes: usize,
}

impl Default for SeenHits {
    fn default() -> Self {
        Self::new(DEFAULT_SEEN_BYTES)
    }
}

/// A principal's name and a hit's id.
type Key = (String, String);

#[derive(Debug, Default)]
struct Kept {
    by_id: HashMap<Key, Hit>,
    /// Keys, oldest first; a key seen again moves to the back.
    order: VecDeque<Key>,
    /// What the kept hits weigh, in bytes.
    bytes: usize,
}

impl SeenHits {
    /// A store whose hits hold at most `max_bytes`.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Kept::default()),
            max_bytes,
        }
    }

    /// Keep the `hits` a search for `asker` returned, forgetting the oldest past the bound.
    pub(crate) fn remember(&self, asker: &str, hits: &[Hit]) {
        let Ok(mut kept) = self.inner.lock() else {
            return;
        };
        for hit in hits {
            let id = (asker.to_owned(), hit.id.0.clone());
            kept.bytes += weight(asker, hit);
            if let Some(old) = kept.by_id.insert(id.clone(), hit.clone()) {
                kept.bytes -= weight(asker, &old);
                kept.order.retain(|seen| *seen != id);
            }
            kept.order.push_back(id);
        }
        while kept.order.len() > KEPT || kept.bytes > self.max_bytes {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some(hit) = kept.by_id.remove(&oldest) {
                kept.bytes -= weight(&oldest.0, &hit);
            }
        }
    }

    /// What the kept hits weigh now, in bytes.
    pub fn bytes(&self) -> usize {
        self.inner.lock().map_or(0, |kept| kept.bytes)
    }

    /// The hit with `id` a search for `asker` returned, if it is still kept.
    pub(crate) fn get(&self, asker: &str, id: &str) -> Option<Hit> {
        let key = (asker.to_owned(), id.to_owned());
        self.inner.lock().ok()?.by_id.get(&key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_hits_are_forgotten_past_the_bound() {
        let seen = SeenHits::default();
        let hits: Vec<Hit> = (0..KEPT + 5)
            .map(|i| Hit::new(format!("h{i}"), "t", "text", 1.0, "b"))
            .collect();
        seen.remember("alice", &hits);
        assert!(seen.get("alice", "h0").is_none());
        let newest = format!("h{}", KEPT + 4);
        assert!(seen.get("alice", &newest).is_some());
        assert!(
            seen.get("bob", &newest).is_none(),
            "bob's searches did not return it"
        );
        assert_eq!(seen.inner.lock().unwrap().order.len(), KEPT);
    }

    #[test]
    fn long_hits_are_forgotten_past_the_byte_bound() {
        let seen = SeenHits::default();
        let long = "x".repeat(DEFAULT_SEEN_BYTES / 4);
        let hits: Vec<Hit> = (0..8)
            .map(|i| Hit::new(format!("h{i}"), "t", long.as_str(), 1.0, "b"))
            .collect();
        seen.remember("alice", &hits);
        assert!(seen.bytes() <= DEFAULT_SEEN_BYTES, "{}", seen.bytes());
        assert!(seen.get("alice", "h0").is_none());
        assert!(seen.get("alice", "h7").is_some());
        seen.remember("alice", &hits[7..]);
        assert!(seen.bytes() <= DEFAULT_SEEN_BYTES);
    }
}
