//! Bytes on the wire → per-request records: the SSE decoder, the API dialects, and the
//! request timeline that builds each record (token accounting included).

pub mod dialect;
pub mod record;
pub mod sse;
pub mod vendor;
#[cfg(test)]
mod vendor_tests;
