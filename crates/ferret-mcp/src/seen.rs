//! The hits this server's searches returned, by principal and id, for `fetch`: the newest kept,
//! the oldest forgotten past a bound, so memory stays level however long the server runs. A
//! principal fetches only what their own searches returned.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ferret::Hit;

/// Hits kept for `fetch`.
const KEPT: usize = 2_000;

#[derive(Debug, Default)]
pub(crate) struct Seen {
    inner: Mutex<Kept>,
}

/// A principal's name and a hit's id.
type Key = (String, String);

#[derive(Debug, Default)]
struct Kept {
    by_id: HashMap<Key, Hit>,
    /// Keys, oldest first; a key seen again moves to the back.
    order: VecDeque<Key>,
}

impl Seen {
    /// Keep the `hits` a search for `asker` returned, forgetting the oldest past the bound.
    pub(crate) fn remember(&self, asker: &str, hits: &[Hit]) {
        let Ok(mut kept) = self.inner.lock() else {
            return;
        };
        for hit in hits {
            let id = (asker.to_owned(), hit.id.0.clone());
            if kept.by_id.insert(id.clone(), hit.clone()).is_some() {
                kept.order.retain(|seen| *seen != id);
            }
            kept.order.push_back(id);
        }
        while kept.order.len() > KEPT {
            if let Some(oldest) = kept.order.pop_front() {
                kept.by_id.remove(&oldest);
            }
        }
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
        let seen = Seen::default();
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
}
