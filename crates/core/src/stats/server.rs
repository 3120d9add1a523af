//! What the server did to the run, read from its own answers: whether its rate or load
//! limits shaped the load (throttled answers), and what it says it served from its prefix
//! cache against the cache pin. Derived from the records each time (never stored: a
//! report's records are its evidence), shown beside the client verdict.

use std::collections::BTreeMap;

use crate::pins::RunConfig;
use crate::record::RequestRecord;

/// A request counts as a cache hit when the server says more than this many of its prompt
/// tokens came from its cache: a chat template's fixed head (a few tokens before the nonce)
/// may be cached even when the prompt itself cannot be.
pub const CACHE_HIT_MIN_TOKENS: u64 = 32;

/// The server's side of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerVerdict {
    /// Requests the server refused or cut for its limits, when there were any.
    pub throttling: Option<Throttling>,
    /// What the server said about its prefix cache, when it said anything.
    pub cache: Option<CacheCounts>,
}

/// Throttled answers over the run (every phase: a refusal in the warm-up shapes the load
/// as much as one in the measured window).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Throttling {
    /// Throttled requests.
    pub throttled: u32,
    /// Every request of the run.
    pub requests: u32,
    /// Throttled requests by signal (`http_429`, `overloaded_error`, …).
    pub by_signal: BTreeMap<String, u32>,
    /// The longest `Retry-After` the server asked for, ms.
    pub retry_after_max_ms: Option<u64>,
    /// Whether any throttled answer carried rate-limit headers the host could read.
    pub headers_seen: bool,
}

/// The server's own count of cached prompt tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheCounts {
    /// Requests whose answer said how many prompt tokens were cached.
    pub reporting: u32,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Of those, cached.
    pub cached_tokens: u64,
    /// Requests with more than [`CACHE_HIT_MIN_TOKENS`] cached.
    pub hits: u32,
    /// The run was pinned cold beyond its shared prefix (a unique nonce before every
    /// prompt, or before every prompt's unique part).
    pub pinned_cold: bool,
    /// The pinned shared prefix, tokens: what the cache may reuse.
    pub shared_prefix_tokens: Option<u32>,
    /// Requests with more cached than the shared prefix (plus [`CACHE_HIT_MIN_TOKENS`]
    /// of a template's slack).
    pub beyond_prefix: u32,
}

impl CacheCounts {
    /// A run pinned cold whose server reports more cached than the pins allow (any hit,
    /// or more than the shared prefix): the pin does not hold.
    pub fn contradicts_pin(&self) -> bool {
        self.pinned_cold && self.beyond_prefix > 0
    }
}

/// The server's verdict on a run's records under its pins.
pub fn verdict(records: &[RequestRecord], cfg: &RunConfig) -> ServerVerdict {
    let mut by_signal = BTreeMap::new();
    let mut retry_after_max_ms = None;
    let mut headers_seen = false;
    let mut cache = CacheCounts {
        reporting: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        hits: 0,
        pinned_cold: cfg.cache.value.nonce_prefix,
        shared_prefix_tokens: cfg.cache.value.shared_prefix.map(|p| p.tokens),
        beyond_prefix: 0,
    };
    let allowed = u64::from(cache.shared_prefix_tokens.unwrap_or(0)) + CACHE_HIT_MIN_TOKENS;
    for r in records {
        if let Some(t) = &r.throttle {
            *by_signal.entry(t.signal.clone()).or_insert(0u32) += 1;
            retry_after_max_ms = retry_after_max_ms.max(t.retry_after_ms);
            headers_seen |= !t.headers.is_empty();
        }
        if let (Some(cached), Some(u)) = (r.cached_tokens(), r.usage) {
            cache.reporting += 1;
            cache.prompt_tokens += u.prompt_tokens;
            cache.cached_tokens += cached;
            if cached > CACHE_HIT_MIN_TOKENS {
                cache.hits += 1;
            }
            if cached > allowed {
                cache.beyond_prefix += 1;
            }
        }
    }
    let throttled: u32 = by_signal.values().sum();
    ServerVerdict {
        throttling: (throttled > 0).then_some(Throttling {
            throttled,
            requests: records.len() as u32,
            by_signal,
            retry_after_max_ms,
            headers_seen,
        }),
        cache: (cache.reporting > 0).then_some(cache),
    }
}

impl ServerVerdict {
    /// Whether a finding here means the headline does not measure what its pins say.
    pub fn flags(&self) -> bool {
        self.throttling.is_some() || self.cache.as_ref().is_some_and(|c| c.contradicts_pin())
    }

    /// One sentence per finding: throttling, then the cache.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(t) = &self.throttling {
            let signals: Vec<String> = t
                .by_signal
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            let retry = match t.retry_after_max_ms {
                Some(ms) => format!(
                    "; it asked to retry after up to {} s",
                    crate::decimal::fixed(ms as f64 / 1000.0, 1)
                ),
                None => String::new(),
            };
            out.push(format!(
                "Rate limiting shaped the load: the server refused or cut {} of {} requests for its limits ({}){retry}. The load it served was less than the load offered: these figures measure the vendor's limits as much as its engine.",
                t.throttled,
                t.requests,
                signals.join(", ")
            ));
        }
        if let Some(c) = &self.cache {
            let share = if c.prompt_tokens > 0 {
                crate::decimal::fixed(c.cached_tokens as f64 * 100.0 / c.prompt_tokens as f64, 1)
            } else {
                "0".into()
            };
            let counts = format!(
                "the server reports {} of {} prompt tokens served from its cache ({share} %), {} of {} requests over {CACHE_HIT_MIN_TOKENS} cached tokens",
                c.cached_tokens, c.prompt_tokens, c.hits, c.reporting
            );
            out.push(match (c.contradicts_pin(), c.shared_prefix_tokens) {
                (true, None) => format!("Cache pin contradicted: the run is pinned cold (a unique nonce before every prompt), but {counts}. Prefill was not measured cold."),
                (true, Some(p)) => format!("Cache pin contradicted: only a {p}-token shared prefix may be cached (a unique nonce follows it), but {} requests had more cached; {counts}. Prefill of the unique part was not measured cold.", c.beyond_prefix),
                (false, _) => {
                    let pin = match (c.pinned_cold, c.shared_prefix_tokens) {
                        (true, None) => "cold".to_owned(),
                        (true, Some(p)) => format!("a {p}-token shared prefix, the rest cold"),
                        (false, Some(p)) => format!("a {p}-token shared prefix, no nonce (more may hit)"),
                        (false, None) => "warm (prompts may share a prefix)".to_owned(),
                    };
                    format!("Prefix cache: {counts}; pinned {pin}.")
                }
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{ServerTimings, Usage};
    use crate::pins::Pins;
    use crate::record::{Outcome, Throttle};

    fn rec(cached: Option<u64>, prompt: u64) -> RequestRecord {
        let mut r =
            crate::record::RequestTimeline::new(0, 0, crate::dialect::Dialect::Chat, 100, 8, 0)
                .finish(10, crate::record::StreamEnd::Eof);
        r.usage = Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: 8,
            cached_tokens: cached,
            reasoning_tokens: None,
        });
        r
    }

    fn cfg(nonce: &str) -> RunConfig {
        Pins::reference()
            .set("nonce_prefix", nonce)
            .build()
            .expect("pinned")
    }

    #[test]
    fn a_cold_run_with_cache_hits_is_flagged() {
        let records = vec![
            rec(Some(0), 100),
            rec(Some(96), 100),
            rec(Some(8), 100),
            rec(None, 100),
        ];
        let v = verdict(&records, &cfg("on"));
        let c = v.cache.clone().expect("counts");
        assert_eq!(
            (c.reporting, c.prompt_tokens, c.cached_tokens, c.hits),
            (3, 300, 104, 1)
        );
        assert!(c.contradicts_pin() && v.flags());
        assert!(
            v.lines()[0].starts_with("Cache pin contradicted"),
            "{:?}",
            v.lines()
        );
        // Pinned warm, the same counts are a figure, not a flag.
        let v = verdict(&records, &cfg("off"));
        assert!(!v.flags());
        assert!(
            v.lines()[0].starts_with("Prefix cache: the server reports 104 of 300"),
            "{:?}",
            v.lines()
        );
        // A template head under the threshold is no hit.
        let v = verdict(&[rec(Some(CACHE_HIT_MIN_TOKENS), 100)], &cfg("on"));
        assert!(!v.flags());
    }

    #[test]
    fn a_shared_prefix_may_be_cached_and_nothing_beyond_it() {
        let cfg = Pins::reference()
            .lengths(128, 16)
            .set("shared_prefix", "64")
            .build()
            .expect("pinned");
        // The prefix's 4 blocks cached: a hit, within the pin.
        let v = verdict(&[rec(Some(64), 128), rec(Some(0), 128)], &cfg);
        let c = v.cache.clone().expect("counts");
        assert_eq!((c.hits, c.beyond_prefix), (1, 0));
        assert!(!v.flags());
        assert!(
            v.lines()[0].ends_with("pinned a 64-token shared prefix, the rest cold."),
            "{:?}",
            v.lines()
        );
        // The whole prompt cached: past the prefix and the template's slack.
        let v = verdict(&[rec(Some(127), 128)], &cfg);
        assert!(v.flags());
        assert!(
            v.lines()[0].starts_with("Cache pin contradicted: only a 64-token shared prefix"),
            "{:?}",
            v.lines()
        );
    }

    #[test]
    fn llama_cpp_cache_n_counts_when_usage_does_not_say() {
        let mut r = rec(None, 200);
        r.server_timings = Some(ServerTimings {
            prompt_n: 10,
            prompt_us: 1,
            predicted_n: 8,
            predicted_us: 1,
            cache_n: Some(190),
        });
        let v = verdict(&[r], &cfg("on"));
        assert_eq!(v.cache.map(|c| (c.cached_tokens, c.hits)), Some((190, 1)));
    }

    #[test]
    fn throttled_answers_say_rate_limiting_shaped_the_load() {
        let mut records = vec![rec(None, 10); 4];
        for (r, (signal, retry)) in records.iter_mut().zip([
            ("http_429", Some(1000)),
            ("http_429", Some(20_000)),
            ("overloaded_error", None),
        ]) {
            r.outcome = Outcome::Http {
                status: 429,
                message: String::new(),
            };
            r.throttle = Some(Throttle {
                signal: signal.into(),
                retry_after_ms: retry,
                headers: BTreeMap::new(),
            });
        }
        let v = verdict(&records, &cfg("on"));
        let t = v.throttling.clone().expect("throttled");
        assert_eq!(
            (t.throttled, t.requests, t.retry_after_max_ms),
            (3, 4, Some(20_000))
        );
        assert_eq!(t.by_signal.get("http_429"), Some(&2));
        assert!(v.flags());
        assert_eq!(
            v.lines()[0],
            "Rate limiting shaped the load: the server refused or cut 3 of 4 requests for its limits (http_429 ×2, overloaded_error ×1); it asked to retry after up to 20.0 s. The load it served was less than the load offered: these figures measure the vendor's limits as much as its engine."
        );
        assert_eq!(
            verdict(&[rec(None, 1)], &cfg("on")),
            ServerVerdict::default()
        );
    }
}
