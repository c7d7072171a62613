//! `ferret-record` keeps a search's exchanges with the world and serves them back. A
//! [`Recorder`] wraps backends, a language model and an embedder: each call goes through to the
//! real one, and the request with its outcome (hits, a completion, vectors, or the error) is
//! kept. A [`Recording`] is what one search kept: the query, the strategy, what each wrapped
//! part said of itself (name, capabilities, query form), every exchange and the response, saved
//! as a folder (`case.json`, `exchanges.jsonl`, `response.json`). A [`Replayer`] stands in for
//! those parts from a recording, answering each request with the outcome recorded for it, so
//! the same search runs again with no network and no model, whatever its strategy.
//!
//! Requests are matched by content, not order: concurrent calls may finish in any order. A
//! request the recording does not hold is answered with an error and counted, and
//! [`Replayer::finish`] reports it: a replay that strays from its recording says so instead of
//! answering from something else.
//!
//! It must not depend on any backend, model crate, the executor or the agent: it sits at the
//! traits' seams and knows nothing of what implements them.

mod error;
mod format;
mod recorder;
mod replayer;

pub use error::{RecordingError, ReplayError};
pub use format::{
    comparable, BackendOutcome, BackendProfile, CallError, EmbedOutcome, EmbedderProfile, Exchange,
    ModelOutcome, ModelProfile, RecordedCase, Recording, World, CASE_FILE, EXCHANGES_FILE,
    RECORDING_FORMAT, RESPONSE_FILE,
};
pub use recorder::Recorder;
pub use replayer::Replayer;
