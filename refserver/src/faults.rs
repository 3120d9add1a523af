//! Faults on demand: per request via the `x-pinbench-fault` header, or for the whole
//! server via `--fault` (optionally only every N-th request).
//!
//! A spec is a comma list of: `status=429|500|503|529`, `reset_after=N`, `stall_ms=M@N`,
//! `malformed@N`, `no_done`, `eos_at=N`, `error_event@N`, `slow_headers_ms=M`
//! (N counts generated tokens).

/// Parsed faults for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Answer with this HTTP status instead of streaming.
    pub status: Option<u16>,
    /// Reset the connection after this many tokens.
    pub reset_after: Option<u32>,
    /// Stall this many ms after this many tokens.
    pub stall: Option<(u64, u32)>,
    /// Send a malformed JSON event after this many tokens.
    pub malformed_at: Option<u32>,
    /// Omit `data: [DONE]`.
    pub no_done: bool,
    /// Stop (EOS) after this many tokens.
    pub eos_at: Option<u32>,
    /// Send an error event (and end) after this many tokens.
    pub error_event_at: Option<u32>,
    /// Delay the response headers this many ms.
    pub slow_headers_ms: Option<u64>,
}

/// Errors parsing a fault spec.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FaultError {
    /// Not understood.
    #[error("unknown fault {0:?} (expected status=429|500|503|529, reset_after=N, stall_ms=M@N, malformed@N, no_done, eos_at=N, error_event@N, slow_headers_ms=M)")]
    Unknown(String),
}

/// Longest stall or header delay a fault may ask for.
pub const MAX_STALL_MS: u64 = 60_000;

fn num<T: std::str::FromStr>(s: &str, item: &str) -> Result<T, FaultError> {
    s.trim()
        .parse()
        .map_err(|_| FaultError::Unknown(item.to_owned()))
}

impl Faults {
    /// Parses a spec.
    pub fn parse(spec: &str) -> Result<Self, FaultError> {
        let mut f = Faults::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once(['=', '@']).unwrap_or((item, ""));
            match k {
                "status" => {
                    let s: u16 = num(v, item)?;
                    if ![429, 500, 503, 529].contains(&s) {
                        return Err(FaultError::Unknown(item.into()));
                    }
                    f.status = Some(s);
                }
                "reset_after" => f.reset_after = Some(num(v, item)?),
                "stall_ms" => {
                    let (ms, at) = v
                        .split_once('@')
                        .ok_or_else(|| FaultError::Unknown(item.into()))?;
                    let ms = num(ms, item)?;
                    // A stall is bounded: a fault must not hold a connection for ever.
                    if ms > MAX_STALL_MS {
                        return Err(FaultError::Unknown(format!(
                            "{item} (at most {MAX_STALL_MS} ms)"
                        )));
                    }
                    f.stall = Some((ms, num(at, item)?));
                }
                "malformed" => f.malformed_at = Some(num(v, item)?),
                "no_done" => f.no_done = true,
                "eos_at" => f.eos_at = Some(num(v, item)?),
                "error_event" => f.error_event_at = Some(num(v, item)?),
                "slow_headers_ms" => {
                    let ms = num(v, item)?;
                    if ms > MAX_STALL_MS {
                        return Err(FaultError::Unknown(format!(
                            "{item} (at most {MAX_STALL_MS} ms)"
                        )));
                    }
                    f.slow_headers_ms = Some(ms);
                }
                _ => return Err(FaultError::Unknown(item.into())),
            }
        }
        Ok(f)
    }

    /// Whether any fault is set.
    pub fn any(&self) -> bool {
        *self != Faults::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault() {
        let f = Faults::parse("status=429").expect("ok");
        assert_eq!(f.status, Some(429));
        assert!(
            Faults::parse("stall_ms=60001@1").is_err(),
            "stalls are bounded"
        );
        assert!(Faults::parse("slow_headers_ms=999999999").is_err());
        let f = Faults::parse("reset_after=5, stall_ms=300@2, malformed@3, no_done, eos_at=7, error_event@4, slow_headers_ms=250").expect("ok");
        assert_eq!(f.reset_after, Some(5));
        assert_eq!(f.stall, Some((300, 2)));
        assert_eq!(f.malformed_at, Some(3));
        assert!(f.no_done);
        assert_eq!(f.eos_at, Some(7));
        assert_eq!(f.error_event_at, Some(4));
        assert_eq!(f.slow_headers_ms, Some(250));
        assert!(Faults::parse("status=404").is_err());
        assert!(Faults::parse("explode").is_err());
        assert!(!Faults::parse("").expect("empty").any());
    }
}
