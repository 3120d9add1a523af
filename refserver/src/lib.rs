//! pinbench reference server: an OpenAI-compatible endpoint backed by a simulated,
//! time-stepped inference engine that records when it emitted every token.
//!
//! It is the default endpoint of the app (no GPU needed) and the oracle of the tests:
//! each SSE event carries its emission time (`pinbench_emit_us`, server monotonic µs) and
//! `GET /truth/{id}` returns a request's full timeline.

pub mod engine;
pub mod faults;
pub mod http;
pub mod profile;
pub mod tls;
pub mod tokenizer;
pub mod truth;

use std::time::Instant;

/// Microseconds since `origin` (the server's monotonic clock).
pub fn micros_since(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
}
