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
pub mod reasoning;
pub mod tls;
pub mod tokenizer;
pub mod truth;
pub mod wire;

use std::time::Instant;

/// Microseconds since `origin` (the server's monotonic clock).
pub fn micros_since(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The port of `key` (`http=` or `https=`) in the ready line the binary prints
/// (`listening http=127.0.0.1:8000 https=127.0.0.1:8443 …`).
pub fn port_in_ready_line(line: &str, key: &str) -> Option<u16> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ready_line_ports() {
        let line = "listening http=127.0.0.1:8000 https=127.0.0.1:8443 profile=tiny";
        assert_eq!(super::port_in_ready_line(line, "http="), Some(8000));
        assert_eq!(super::port_in_ready_line(line, "https="), Some(8443));
        assert_eq!(
            super::port_in_ready_line("listening http=127.0.0.1:1 https=off", "https="),
            None
        );
    }
}
