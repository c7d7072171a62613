//! The hits this server's searches returned, by id, for `fetch`: the newest kept, the oldest
//! forgotten past a bound, so memory stays level however long the server runs.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ferret::Hit;

/// Hits kept for `fetch`.
const KEPT: usize = 2_000;

#[derive(Debug, Default)]
pub(crate) struct Seen {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_id: HashMap<String, Hit>,
    /// Ids, oldest first; an id seen again moves to the back.
    order: VecDeque<String>,
}

impl Seen {
    /// Keep `hits`, forgetting the oldest past the bound.
    pub(crate) fn remember(&self, hits: &[Hit]) {
        let Ok(mut kept) = self.inner.lock() else {
            return;
        };
        for hit in hits {
            let id = hit.id.0.clone();
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

    /// The hit a search returned with `id`, if it is still kept.
    pub(crate) fn get(&self, id: &str) -> Option<Hit> {
        self.inner.lock().ok()?.by_id.get(id).cloned()
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
        seen.remember(&hits);
        assert!(seen.get("h0").is_none());
        assert!(seen.get(&format!("h{}", KEPT + 4)).is_some());
        assert_eq!(seen.inner.lock().unwrap().order.len(), KEPT);
    }
}
