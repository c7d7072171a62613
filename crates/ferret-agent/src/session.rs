//! Sessions: what a thread has asked, so a question it repeats is answered again without a
//! search. A question repeats an earlier one when its words are the same (any order or case),
//! when it names the same failure (error class and component), or, with an embedder, when it
//! means the same (cosine at least [`SessionLimits::similarity`]).
//!
//! A store keys turns by thread id only, and a turn holds the response it got, which was read
//! under the access lists of its time. So for a search with an asker's access, the agent asks
//! the backends which of the turns' hits the asker may read now, and leaves out every turn
//! that showed one they no longer may: such a turn is neither repeated, nor read by a
//! follow-up, nor shown to the answer's writer.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use ferret_core::{cosine, Embedder, RepeatMatch, Response};
use ferret_exec::normalize_query;
use ferret_query_intel::PriorTurn;

/// One question a thread asked, and the response it got.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Its number in the thread, from 1; the store sets it when recording.
    pub number: u32,
    /// The question searched: as asked, or as resolved from the turn before.
    pub question: String,
    /// The question's words, lowercased and sorted.
    pub normalized: String,
    /// Its error class and component, for an error question.
    pub error_signature: Option<String>,
    /// Its embedding, when the session has an embedder.
    pub embedding: Option<Vec<f32>>,
    /// The response it got.
    pub response: Response,
    /// When it was asked.
    pub at: SystemTime,
}

impl Turn {
    /// What this turn offers the follow-up question after it.
    pub fn prior(&self) -> PriorTurn<'_> {
        PriorTurn {
            question: &self.question,
            short_answer: self.response.short_answer.as_ref().map(|s| s.text.as_str()),
            cited: self
                .response
                .citations
                .iter()
                .map(|c| c.title.as_str())
                .collect(),
        }
    }
}

/// Where a thread's turns are kept. The in-memory store serves one process; a service can keep
/// them elsewhere behind the same trait.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The turns of `thread` still remembered, oldest first.
    async fn turns(&self, thread: &str) -> Vec<Turn>;
    /// Remember `turn` in `thread`, numbering it after the thread's last; returns its number.
    async fn record(&self, thread: &str, turn: Turn) -> u32;
}

/// How much a session remembers, and how alike two questions must be to repeat.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionLimits {
    /// Turns kept per thread; the oldest goes first.
    pub max_turns: usize,
    /// Turns older than this are forgotten.
    pub max_age: Duration,
    /// Threads kept; the one idle longest goes first.
    pub max_threads: usize,
    /// Least cosine similarity of two questions' embeddings for one to repeat the other.
    pub similarity: f32,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_age: Duration::from_secs(60 * 60),
            max_threads: 1_000,
            similarity: 0.8,
        }
    }
}

#[derive(Default)]
struct Thread {
    turns: VecDeque<Turn>,
    numbered: u32,
    used: Option<SystemTime>,
}

/// Turns kept in memory within [`SessionLimits`].
#[derive(Default)]
pub struct InMemorySessions {
    limits: SessionLimits,
    threads: Mutex<HashMap<String, Thread>>,
}

impl InMemorySessions {
    /// A store within `limits`.
    pub fn new(limits: SessionLimits) -> Self {
        Self {
            limits,
            threads: Mutex::new(HashMap::new()),
        }
    }

    fn forget_old(&self, thread: &mut Thread, now: SystemTime) {
        let max_age = self.limits.max_age;
        thread
            .turns
            .retain(|t| now.duration_since(t.at).unwrap_or_default() < max_age);
        while thread.turns.len() > self.limits.max_turns {
            thread.turns.pop_front();
        }
    }
}

#[async_trait]
impl SessionStore for InMemorySessions {
    async fn turns(&self, thread: &str) -> Vec<Turn> {
        let mut threads = self
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(found) = threads.get_mut(thread) else {
            return Vec::new();
        };
        self.forget_old(found, SystemTime::now());
        found.turns.iter().cloned().collect()
    }

    async fn record(&self, thread: &str, mut turn: Turn) -> u32 {
        let mut threads = self
            .threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !threads.contains_key(thread) && threads.len() >= self.limits.max_threads.max(1) {
            let idlest = threads
                .iter()
                .min_by_key(|(_, t)| t.used)
                .map(|(name, _)| name.clone());
            if let Some(name) = idlest {
                threads.remove(&name);
            }
        }
        let now = SystemTime::now();
        let entry = threads.entry(thread.to_owned()).or_default();
        entry.numbered += 1;
        entry.used = Some(now);
        turn.number = entry.numbered;
        entry.turns.push_back(turn);
        self.forget_old(entry, now);
        entry.numbered
    }
}

/// The sessions a search consults: where turns are kept, and what reads questions' meaning.
#[derive(Clone)]
pub struct Sessions {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) similarity: f32,
}

impl Sessions {
    /// Turns kept in `store`; with `embedder`, questions that mean the same repeat too, at
    /// cosine `similarity` or more.
    pub fn new(
        store: Arc<dyn SessionStore>,
        embedder: Option<Arc<dyn Embedder>>,
        similarity: f32,
    ) -> Self {
        Self {
            store,
            embedder,
            similarity,
        }
    }

    /// In memory within `limits`, with `embedder` if given.
    pub fn in_memory(limits: SessionLimits, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self::new(
            Arc::new(InMemorySessions::new(limits)),
            embedder,
            limits.similarity,
        )
    }

    /// The question's embedding, when an embedder is configured and answers.
    pub(crate) async fn embed(&self, question: &str) -> Option<Vec<f32>> {
        let embedder = self.embedder.as_ref()?;
        embedder.embed(&[question.to_owned()]).await.ok()?.pop()
    }
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("embedder", &self.embedder.as_ref().map(|e| e.name()))
            .field("similarity", &self.similarity)
            .finish_non_exhaustive()
    }
}

/// What a new question is, to compare with a thread's turns.
pub(crate) struct Asked<'a> {
    pub(crate) normalized: String,
    pub(crate) error_signature: Option<&'a str>,
    pub(crate) embedding: Option<&'a [f32]>,
}

impl Asked<'_> {
    /// The latest turn this question repeats, and how it matched.
    pub(crate) fn repeats<'t>(
        &self,
        turns: &'t [Turn],
        similarity: f32,
    ) -> Option<(&'t Turn, RepeatMatch)> {
        turns.iter().rev().find_map(|turn| {
            if turn.normalized == self.normalized {
                return Some((turn, RepeatMatch::Text));
            }
            if self.error_signature.is_some()
                && self.error_signature == turn.error_signature.as_deref()
            {
                return Some((turn, RepeatMatch::ErrorSignature));
            }
            let close = match (self.embedding, turn.embedding.as_deref()) {
                (Some(a), Some(b)) => cosine(a, b) >= similarity,
                _ => false,
            };
            close.then_some((turn, RepeatMatch::Meaning))
        })
    }
}

/// The words of `question`, lowercased and sorted, as turns are compared.
pub(crate) fn normalized(question: &str) -> String {
    normalize_query(
        &question
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect::<String>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferret_core::{StopReason, Trace};

    fn turn(question: &str) -> Turn {
        Turn {
            question: question.to_owned(),
            number: 0,
            normalized: normalized(question),
            error_signature: None,
            embedding: None,
            response: Response::message(question, StopReason::Answered, Trace::default()),
            at: SystemTime::now(),
        }
    }

    #[tokio::test]
    async fn a_thread_keeps_its_latest_turns_numbered_on() {
        let store = InMemorySessions::new(SessionLimits {
            max_turns: 2,
            ..SessionLimits::default()
        });
        for q in ["one", "two", "three"] {
            store.record("t", turn(q)).await;
        }
        let kept: Vec<u32> = store.turns("t").await.iter().map(|t| t.number).collect();
        assert_eq!(kept, [2, 3], "the oldest goes, numbers stay");
        assert!(store.turns("other").await.is_empty());
    }

    #[tokio::test]
    async fn old_turns_and_idle_threads_are_forgotten() {
        let store = InMemorySessions::new(SessionLimits {
            max_age: Duration::ZERO,
            ..SessionLimits::default()
        });
        store.record("t", turn("one")).await;
        assert!(
            store.turns("t").await.is_empty(),
            "older than the age limit"
        );

        let store = InMemorySessions::new(SessionLimits {
            max_threads: 1,
            ..SessionLimits::default()
        });
        store.record("a", turn("one")).await;
        store.record("b", turn("two")).await;
        assert!(
            store.turns("a").await.is_empty(),
            "a second thread pushes the first out"
        );
        assert_eq!(store.turns("b").await.len(), 1);
    }

    #[test]
    fn a_repeat_is_the_same_words_the_same_failure_or_the_same_meaning() {
        let mut earlier = turn("Why does Spring fail on Java 17?");
        earlier.error_signature = Some("NoClassDefFoundError:cglib.proxy.Enhancer".into());
        earlier.embedding = Some(vec![1.0, 0.0]);
        let turns = [earlier];
        let ask =
            |q: &str, signature: Option<&'static str>, embedding: Option<&'static [f32]>| Asked {
                normalized: normalized(q),
                error_signature: signature,
                embedding,
            };
        let matched = |asked: Asked| asked.repeats(&turns, 0.8).map(|(_, m)| m);
        assert_eq!(
            matched(ask("java 17: why does spring FAIL on", None, None)),
            Some(RepeatMatch::Text)
        );
        assert_eq!(
            matched(ask(
                "Enhancer missing again",
                Some("NoClassDefFoundError:cglib.proxy.Enhancer"),
                None
            )),
            Some(RepeatMatch::ErrorSignature)
        );
        assert_eq!(
            matched(ask("other words", None, Some(&[0.9, 0.1]))),
            Some(RepeatMatch::Meaning)
        );
        assert_eq!(matched(ask("other words", None, Some(&[0.1, 0.9]))), None);
    }
}
