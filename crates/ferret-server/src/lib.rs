//! Ferret as a service: an HTTP API (axum) over the [`ferret`] facade.
//!
//! [`router`] gives the routes (`POST /v1/search`, `POST /v1/search/stream` as Server-Sent Events, `POST /v1/chat`,
//! `POST /v1/ingest` and its stream, `GET /healthz`, `GET /readyz`, `GET /metrics` in the Prometheus text format) behind the operational [`Limits`]: request body
//! and question size, a per-request deadline, a concurrency limit answered with 503 and
//! `Retry-After`, and a request id on every response. [`serve`] runs them on a listener until a
//! shutdown signal, finishing the requests in flight. The wire types are in [`wire`]; every
//! refusal is an [`ApiError`] with a JSON body.
//!
//! It reaches backends, stages and models only through the facade: it must not depend on a
//! backend crate directly.

mod auth;
mod config;
mod error;
mod guard;
mod ingest;
mod metrics;
#[cfg(feature = "schema")]
mod openapi;
mod routes;
mod state;
pub mod wire;

pub use config::{BearerToken, Limits};
pub use error::ApiError;
#[cfg(feature = "schema")]
pub use openapi::openapi;
pub use routes::{router, serve};
pub use state::AppState;
