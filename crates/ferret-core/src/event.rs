use serde::{Deserialize, Serialize};

use crate::{Actions, BackendFailure, Citation, Hit, Response, ShortAnswer, TraceStep};

/// The streamed form of a search: the same facts as the [`Response`] and its trace, as they happen.
///
/// A stream always ends with exactly one `Done`; a search that could not start sends an `Error`
/// first, and its `Done` carries a message response with [`StopReason::Refused`](crate::StopReason).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "event")]
#[non_exhaustive]
pub enum Event {
    /// A stage reported a step; the same step ends up in `Response::trace`.
    Step {
        /// The step.
        step: TraceStep,
    },
    /// A backend call failed; the search goes on without it.
    Failure {
        /// The failure.
        failure: BackendFailure,
    },
    /// The fused results of one attempt, best first.
    Hits {
        /// Attempt number, from 1.
        attempt: u32,
        /// The hits.
        hits: Vec<Hit>,
    },
    /// The search will not show results; the message says why.
    Message {
        /// The message.
        text: String,
    },
    /// A piece of the answer as the model writes it, when it streams: provisional (its markers
    /// not yet checked, the reply possibly refused and written by the rules instead). The
    /// `Answer` event that follows is the answer to show.
    AnswerDelta {
        /// The text written since the last piece.
        text: String,
    },
    /// The answer and its citations.
    Answer {
        /// The answer with `[n]` markers.
        text: String,
        /// The answer in a few words, when the question asks for one and a source states it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        short_answer: Option<ShortAnswer>,
        /// What the markers point at.
        citations: Vec<Citation>,
    },
    /// What the answer tells its reader to do.
    Actions {
        /// The actions, each citing its hit.
        actions: Actions,
    },
    /// The search could not start; `Done` follows.
    Error {
        /// What is wrong, and what to fix.
        message: String,
    },
    /// The search is over; the complete response.
    Done {
        /// The response `search` would have returned.
        response: Box<Response>,
    },
}
