use ferret_core::{BackendFailure, Event, Hit, TraceStep, Usage};
use ferret_exec::ExecOutcome;

use crate::recorder::Recorder;

/// What a search has spent and met so far, whatever the strategy: backend usage, failures, and
/// which hits it has already seen, so each round can say how many of its hits are new.
#[derive(Default)]
pub(crate) struct Gathered {
    pub(crate) usage: Usage,
    pub(crate) failures: Vec<BackendFailure>,
    /// Some backend call succeeded, so an empty result means nothing matched rather than no
    /// backend was reachable.
    pub(crate) any_call_answered: bool,
    /// Calls not made, each with why (a filter a backend cannot honour, paid units spent).
    pub(crate) skipped: Vec<String>,
    /// Keyed like fusion (ids are only unique within a backend), by a hash of backend and id
    /// under this search's own random key: no strings copied per hit, and a collision (one in
    /// 2^64, not one an input can aim at) would only count a new hit as seen. The keys are
    /// hashes already, so the set hashes them no further than Fx's one multiply.
    seen: rustc_hash::FxHashSet<u64>,
    hasher: std::hash::RandomState,
}

impl Gathered {
    /// Record one round's calls, failures and usage in the trace and the events; hand back its
    /// hits and how many of them no earlier round had found.
    pub(crate) fn absorb(
        &mut self,
        outcome: ExecOutcome,
        round: u32,
        rec: &mut Recorder,
    ) -> (Vec<Hit>, usize) {
        for step in outcome.calls {
            self.any_call_answered |= matches!(step, TraceStep::BackendCall { error: None, .. });
            rec.step(step);
        }
        for failure in outcome.failures {
            rec.emit(|| Event::Failure {
                failure: failure.clone(),
            });
            self.failures.push(failure);
        }
        self.usage.backend_calls += outcome.backend_calls;
        self.usage.cache_hits += outcome.cache_hits;
        self.usage.coalesced += outcome.coalesced;
        self.usage.merge_paid(outcome.paid.paid);
        self.skipped.extend(outcome.skipped);
        rec.emit(|| Event::Hits {
            attempt: round,
            hits: outcome.hits.clone(),
        });
        let new_hits = outcome
            .hits
            .iter()
            .filter(|h| {
                let key = std::hash::BuildHasher::hash_one(&self.hasher, (&h.backend, &h.id));
                self.seen.insert(key)
            })
            .count();
        (outcome.hits, new_hits)
    }
}
