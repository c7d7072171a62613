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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// Bytes this process holds for the store's turns, for a store that keeps them in memory;
    /// `None` for one that keeps them elsewhere.
    fn held_bytes(&self) -> Option<u64> {
        None
    }
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
    /// Bytes all threads' turns may hold (their questions and the responses they got): past
    /// it, the threads idle longest go first, and a thread that alone holds more keeps only its
    /// newest turn. Counts bound nothing when responses are long.
    pub max_bytes: usize,
    /// Least cosine similarity of two questions' embeddings for one to repeat the other.
    pub similarity: f32,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_age: Duration::from_secs(60 * 60),
            max_threads: 1_000,
            max_bytes: 32 * 1024 * 1024,
            similarity: 0.8,
        }
    }
}

#[derive(Default)]
struct Thread {
    /// Each turn with what it weighs.
    turns: VecDeque<(Turn, usize)>,
    numbered: u32,
    used: Option<SystemTime>,
    bytes: usize,
}

impl Thread {
    fn forget_oldest(&mut self) -> Option<usize> {
        let (_, weight) = self.turns.pop_front()?;
        self.bytes -= weight;
        Some(weight)
    }
}

/// What a turn holds in memory, roughly: its strings, its embedding, and its response as long
/// as the response's JSON (text dominates both).
fn turn_bytes(thread: &str, turn: &Turn) -> usize {
    let response = serde_json::to_vec(&turn.response).map_or(0, |json| json.len());
    std::mem::size_of::<Turn>()
        + thread.len()
        + turn.question.len()
        + turn.normalized.len()
        + turn.error_signature.as_ref().map_or(0, String::len)
        + turn.embedding.as_ref().map_or(0, |e| e.len() * 4)
        + response
}

#[derive(Default)]
struct Threads {
    by_id: HashMap<String, Thread>,
    /// What every thread's turns weigh.
    bytes: usize,
}

/// Turns kept in memory within [`SessionLimits`].
#[derive(Default)]
pub struct InMemorySessions {
    limits: SessionLimits,
    threads: Mutex<Threads>,
}

impl InMemorySessions {
    /// A store within `limits`.
    pub fn new(limits: SessionLimits) -> Self {
        Self {
            limits,
            threads: Mutex::new(Threads::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Threads> {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drop `thread`'s turns past the age and count limits; returns the bytes freed.
    fn forget_old(&self, thread: &mut Thread, now: SystemTime) -> usize {
        let max_age = self.limits.max_age;
        let mut freed = 0;
        while thread
            .turns
            .front()
            .is_some_and(|(t, _)| now.duration_since(t.at).unwrap_or_default() >= max_age)
            || thread.turns.len() > self.limits.max_turns
        {
            freed += thread.forget_oldest().unwrap_or(0);
        }
        freed
    }
}

impl Threads {
    /// Forget the threads idle longest, other than `keep`, until within `max_threads` and
    /// `max_bytes`; then `keep`'s own oldest turns, down to its newest.
    fn make_room(&mut self, keep: &str, max_threads: usize, max_bytes: usize) {
        while self.by_id.len() > max_threads.max(1) || self.bytes > max_bytes {
            let idlest = self
                .by_id
                .iter()
                .filter(|(name, _)| name.as_str() != keep)
                .min_by_key(|(_, t)| t.used)
                .map(|(name, _)| name.clone());
            let Some(name) = idlest else { break };
            if let Some(gone) = self.by_id.remove(&name) {
                self.bytes -= gone.bytes;
            }
        }
        if let Some(kept) = self.by_id.get_mut(keep) {
            while self.bytes > max_bytes && kept.turns.len() > 1 {
                self.bytes -= kept.forget_oldest().unwrap_or(0);
            }
        }
    }
}

#[async_trait]
impl SessionStore for InMemorySessions {
    async fn turns(&self, thread: &str) -> Vec<Turn> {
        let mut threads = self.lock();
        let Some(found) = threads.by_id.get_mut(thread) else {
            return Vec::new();
        };
        let freed = self.forget_old(found, SystemTime::now());
        let turns = found.turns.iter().map(|(t, _)| t.clone()).collect();
        threads.bytes -= freed;
        turns
    }

    async fn record(&self, thread: &str, mut turn: Turn) -> u32 {
        let weight = turn_bytes(thread, &turn);
        let mut threads = self.lock();
        let now = SystemTime::now();
        let entry = threads.by_id.entry(thread.to_owned()).or_default();
        entry.numbered += 1;
        entry.used = Some(now);
        turn.number = entry.numbered;
        let number = entry.numbered;
        entry.turns.push_back((turn, weight));
        entry.bytes += weight;
        let freed = self.forget_old(entry, now);
        threads.bytes = threads.bytes + weight - freed;
        threads.make_room(thread, self.limits.max_threads, self.limits.max_bytes);
        number
    }

    fn held_bytes(&self) -> Option<u64> {
        Some(self.lock().bytes as u64)
    }
}

/// Turns kept on disk, one JSON file a thread under a folder, so that a thread outlives the
/// process: a command-line agent calling `ferret search --thread NAME` twice gets its repeat
/// recognised. Within [`SessionLimits`]' turn count and age; processes writing one thread at
/// once keep the last writer's turns. A thread that cannot be read or written is a thread with
/// no turns, said in the log: the search it serves goes on.
pub struct FileSessions {
    dir: std::path::PathBuf,
    limits: SessionLimits,
    /// Serialises this process's reads and writes.
    lock: Mutex<()>,
}

impl FileSessions {
    /// Threads kept under `dir` (made when the first turn is recorded), within `limits`.
    pub fn new(dir: impl Into<std::path::PathBuf>, limits: SessionLimits) -> Self {
        Self {
            dir: dir.into(),
            limits,
            lock: Mutex::new(()),
        }
    }

    /// The file of `thread`: its name with every character but lower-case ASCII letters, digits,
    /// `-` and `_` written as `%XX` (so two names never share a file, on a file system that
    /// ignores case too, and none leaves the folder).
    pub fn path_of(&self, thread: &str) -> std::path::PathBuf {
        let mut name = String::with_capacity(thread.len() + 5);
        for byte in thread.bytes() {
            match byte {
                b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => name.push(byte as char),
                other => name.push_str(&format!("%{other:02X}")),
            }
        }
        name.push_str(".json");
        self.dir.join(name)
    }

    fn read(&self, thread: &str) -> Vec<Turn> {
        let path = self.path_of(thread);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "a thread's turns could not be read");
                return Vec::new();
            }
        };
        match serde_json::from_str(&text) {
            Ok(turns) => turns,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "a thread's file is not turns; it starts again");
                Vec::new()
            }
        }
    }

    /// `turns` within the limits at `now`: the newest `max_turns`, none older than `max_age`.
    fn within_limits(&self, mut turns: Vec<Turn>, now: SystemTime) -> Vec<Turn> {
        turns.retain(|t| now.duration_since(t.at).unwrap_or_default() < self.limits.max_age);
        let excess = turns.len().saturating_sub(self.limits.max_turns);
        turns.drain(..excess);
        turns
    }

    fn write(&self, thread: &str, turns: &[Turn]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path_of(thread);
        // Written beside and renamed over, so a reader never sees half a file.
        let partial = path.with_extension(format!("json.{}.partial", std::process::id()));
        std::fs::write(&partial, serde_json::to_vec(turns)?)?;
        std::fs::rename(&partial, &path)
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl SessionStore for FileSessions {
    async fn turns(&self, thread: &str) -> Vec<Turn> {
        let _guard = self.guard();
        self.within_limits(self.read(thread), SystemTime::now())
    }

    async fn record(&self, thread: &str, mut turn: Turn) -> u32 {
        let _guard = self.guard();
        let mut turns = self.read(thread);
        turn.number = turns.last().map_or(0, |t| t.number) + 1;
        let number = turn.number;
        turns.push(turn);
        let turns = self.within_limits(turns, SystemTime::now());
        if let Err(e) = self.write(thread, &turns) {
            tracing::warn!(thread, error = %e, "a thread's turn could not be kept");
        }
        number
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
    async fn a_thread_on_disk_outlives_its_store_within_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SessionLimits {
            max_turns: 2,
            ..SessionLimits::default()
        };
        let store = FileSessions::new(dir.path().join("threads"), limits);
        for q in ["one", "two", "three"] {
            store.record("agent/1", turn(q)).await;
        }
        // Another process: a new store over the same folder.
        let again = FileSessions::new(dir.path().join("threads"), limits);
        let kept: Vec<(u32, String)> = again
            .turns("agent/1")
            .await
            .into_iter()
            .map(|t| (t.number, t.question))
            .collect();
        assert_eq!(kept, [(2, "two".to_owned()), (3, "three".to_owned())]);
        assert!(
            again.turns("agent").await.is_empty(),
            "names do not share files"
        );
        let file = again.path_of("agent/1");
        assert_eq!(file.parent(), Some(dir.path().join("threads").as_path()));
        assert_eq!(file.file_name().unwrap(), "agent%2F1.json");

        // A damaged file is a thread with no turns, and the next turn starts it again.
        std::fs::write(&file, "{ not turns").unwrap();
        assert!(again.turns("agent/1").await.is_empty());
        assert_eq!(again.record("agent/1", turn("four")).await, 1);

        let stale = FileSessions::new(
            dir.path().join("threads"),
            SessionLimits {
                max_age: Duration::ZERO,
                ..limits
            },
        );
        assert!(
            stale.turns("agent/1").await.is_empty(),
            "older than the age limit"
        );
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

    #[tokio::test]
    async fn turns_are_forgotten_past_the_byte_budget_idlest_thread_first() {
        let long = |q: &str| {
            let mut t = turn(q);
            t.response.answer = Some("x".repeat(10_000));
            t
        };
        let store = InMemorySessions::new(SessionLimits {
            max_bytes: 25_000,
            ..SessionLimits::default()
        });
        store.record("a", long("one")).await;
        store.record("b", long("two")).await;
        assert_eq!(store.turns("a").await.len(), 1);
        store.record("b", long("three")).await;
        assert!(
            store.turns("a").await.is_empty(),
            "the idlest thread goes first"
        );
        assert_eq!(store.turns("b").await.len(), 2);
        store.record("b", long("four")).await;
        let kept: Vec<u32> = store.turns("b").await.iter().map(|t| t.number).collect();
        assert_eq!(kept, [2, 3], "a thread alone over budget keeps its newest");
        let held = store.held_bytes().unwrap();
        assert!((20_000..=25_000).contains(&held), "{held}");
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
