//! `ferret-layers` holds the behaviour every call to an outside service shares, each a small type
//! with one job that can be tested alone. A [`SharedCache`] answers repeated calls and joins
//! identical ones in flight. A [`Deadline`] bounds one call. [`Retry`] repeats a failed call once,
//! by its [`RetryClass`](ferret_core::RetryClass). A [`CallBudget`] counts the calls a search may
//! still make, and a [`RateLimit`] paces one service. The executor stacks them around every backend
//! call; model providers can stack the same ones around their requests.
//!
//! It must not depend on any backend, any model crate or the executor: it knows calls, not what
//! they are for.

mod budget;
mod cache;
mod deadline;
mod rate;
mod retry;

pub use budget::CallBudget;
pub use cache::{Origin, Probe, SharedCache};
pub use deadline::{Deadline, Elapsed};
pub use rate::RateLimit;
pub use retry::{Retry, RetryPolicy, Retryable};
