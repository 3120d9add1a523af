//! Probes that pin what servers do not say, by measuring: the batching regime (does a late
//! arrival start decoding before an earlier request ends?), the prefix cache (is the same
//! prompt's second TTFT much shorter?) and decode slowdown with context (TPOT at a few
//! prompt lengths, one stream). The requests to send and the decisions are here; a host
//! sends the requests, times them (a `RequestTimeline` each) and hands the records back.

use serde::{Deserialize, Serialize};

use crate::decimal::Fixed;
use crate::dialect::{Dialect, LengthEnforcement, RequestSpec};
use crate::metrics::request_metrics;
use crate::pins::Provenance;
use crate::prompt::{self, Calibration};
use crate::record::RequestRecord;

/// One probe request's timings, client clock µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timed {
    /// Sent.
    pub send_us: u64,
    /// First token chunk arrived.
    pub first_token_us: u64,
    /// Stream ended.
    pub end_us: u64,
    /// TPOT, µs, when the request had more than one token chunk.
    pub tpot_us: Option<u64>,
}

impl Timed {
    /// The timings of a record (`None` when it failed or carried no token).
    pub fn of(r: &RequestRecord) -> Option<Timed> {
        if !r.outcome.is_ok() {
            return None;
        }
        let first = r.chunks.first()?.t_us;
        Some(Timed {
            send_us: r.t_send_us,
            first_token_us: first,
            end_us: r.t_end_us(),
            tpot_us: request_metrics(r).tpot_us,
        })
    }

    /// TTFT, µs.
    pub fn ttft_us(&self) -> u64 {
        self.first_token_us.saturating_sub(self.send_us)
    }
}

/// The body of a probe request: `words` words of the prompt list (each prompt its own
/// `variant`), an optional nonce, exactly `max_tokens` output tokens.
pub fn request_body(
    dialect: Dialect,
    model: &str,
    prompt_tokens: u32,
    variant: u32,
    nonce: Option<String>,
    max_tokens: u32,
) -> String {
    RequestSpec {
        model: model.to_owned(),
        prompt: prompt::build(prompt_tokens, &Calibration::default(), None, variant),
        max_tokens,
        enforcement: LengthEnforcement::IgnoreEos,
        temperature: Some(0.0),
        extra: Default::default(),
        nonce,
        include_usage: true,
        continuous_usage: false,
        reasoning: crate::dialect::ReasoningRequest::none(),
        history: Vec::new(),
    }
    .body(dialect)
    .to_string()
}

/// The batching probe: request A (a long output) is sent; once its first token has
/// arrived, request B (short) is sent. A server that batches continuously starts B while
/// A decodes; a static batcher makes B wait for A's batch to end.
pub mod batching {
    /// A's output tokens.
    pub const A_TOKENS: u32 = 256;
    /// B's output tokens.
    pub const B_TOKENS: u32 = 8;
    /// Prompt tokens of both.
    pub const PROMPT_TOKENS: u32 = 32;
    /// How long after A is sent B is sent, ms (the verdict checks that B went out while
    /// A decoded).
    pub const B_DELAY_MS: u32 = 40;
}

/// The batching probe's two request bodies, A then B (each behind its nonce, if given).
pub fn batching_requests(
    dialect: Dialect,
    model: &str,
    nonces: [Option<String>; 2],
) -> [String; 2] {
    let [na, nb] = nonces;
    [
        request_body(
            dialect,
            model,
            batching::PROMPT_TOKENS,
            1,
            na,
            batching::A_TOKENS,
        ),
        request_body(
            dialect,
            model,
            batching::PROMPT_TOKENS,
            2,
            nb,
            batching::B_TOKENS,
        ),
    ]
}

/// What the batching probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchingVerdict {
    /// B's first token came while A was still decoding.
    Continuous,
    /// B's first token came only after A ended.
    Static,
    /// B was not sent while A was decoding (A too short, or a request failed).
    Unclear,
}

/// How far before A's end B's first token must come to count as "while A decoded", µs:
/// four of A's token gaps, and at least 10 ms. One client observes both streams, so
/// their times can be skewed by a late wake-up (a busy thread or event loop), while a
/// static batch starts B right after A ends: without this margin a few ms of skew read
/// as continuous batching. A continuous server gives B its first token long before A
/// ends (A has 256 tokens to go).
pub fn skew_tolerance_us(a: &Timed) -> u64 {
    a.tpot_us.unwrap_or(0).saturating_mul(4).max(10_000)
}

/// Decides the batching regime from A's and B's timings, with the evidence in words.
pub fn batching_verdict(a: &Timed, b: &Timed) -> (BatchingVerdict, String) {
    let ms = |us: u64| Fixed(us as f64 / 1000.0, 1);
    if b.send_us <= a.first_token_us || b.send_us >= a.end_us {
        return (
            BatchingVerdict::Unclear,
            format!(
                "B was sent at {} ms, not while A decoded ({}–{} ms)",
                ms(b.send_us - a.send_us.min(b.send_us)),
                ms(a.first_token_us - a.send_us),
                ms(a.end_us - a.send_us)
            ),
        );
    }
    let rel = |t: u64| ms(t.saturating_sub(a.send_us));
    let tolerance = skew_tolerance_us(a);
    let head = format!(
        "B (sent at {} ms, while A decoded) got its first token at {} ms",
        rel(b.send_us),
        rel(b.first_token_us)
    );
    let end = rel(a.end_us);
    if b.first_token_us.saturating_add(tolerance) < a.end_us {
        (
            BatchingVerdict::Continuous,
            format!("{head}, before A ended at {end} ms"),
        )
    } else if b.first_token_us >= a.end_us {
        (
            BatchingVerdict::Static,
            format!("{head}, only after A ended at {end} ms"),
        )
    } else {
        (
            BatchingVerdict::Static,
            format!(
                "{head}, {} ms before A ended at {end} ms: within the {} ms two streams' times may skew, so not while A decoded",
                ms(a.end_us - b.first_token_us),
                Fixed(tolerance as f64 / 1000.0, 0)
            ),
        )
    }
}

/// The prefix-cache probe: a prompt sent twice as it is (cold, then warm), and once more
/// with a fresh nonce before it (control, never cached).
pub mod prefix_cache {
    /// Prompt tokens (long enough for prefill to show in TTFT).
    pub const PROMPT_TOKENS: u32 = 3000;
    /// Output tokens.
    pub const OUTPUT_TOKENS: u32 = 4;
}

/// What the prefix-cache probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheVerdict {
    /// The repeated prompt's TTFT is under half of the uncached ones'.
    On,
    /// The repeated prompt's TTFT is like the uncached ones'.
    Off,
    /// In between: noise, or a partial cache.
    Unclear,
}

/// The prefix-cache probe's request bodies, in sending order: the prompt (behind `same`,
/// if given) cold, then warm, control, warm, control — the controls behind the two fresh
/// nonces. Sending the repeat and the control twice and keeping the shorter of each halves
/// the noise of a loaded client ([`cache_verdict_of`]).
pub fn cache_requests(
    dialect: Dialect,
    model: &str,
    same: Option<String>,
    fresh: [String; 2],
) -> [String; 5] {
    let body = |nonce: Option<String>| {
        request_body(
            dialect,
            model,
            prefix_cache::PROMPT_TOKENS,
            7,
            nonce,
            prefix_cache::OUTPUT_TOKENS,
        )
    };
    let [f1, f2] = fresh;
    [
        body(same.clone()),
        body(same.clone()),
        body(Some(f1)),
        body(same),
        body(Some(f2)),
    ]
}

/// Decides from the TTFTs (µs) of [`cache_requests`], in the same order.
pub fn cache_verdict_of(ttfts: [u64; 5]) -> (CacheVerdict, String) {
    cache_verdict(ttfts[0], ttfts[1].min(ttfts[3]), ttfts[2].min(ttfts[4]))
}

/// Decides from the three TTFTs (µs): the cold first sending, the warm repeat, and the
/// control with a nonce.
pub fn cache_verdict(cold: u64, warm: u64, control: u64) -> (CacheVerdict, String) {
    let uncached = cold.min(control).max(1);
    let ratio = warm as f64 / uncached as f64;
    let v = if ratio < 0.5 {
        CacheVerdict::On
    } else if ratio > 0.8 {
        CacheVerdict::Off
    } else {
        CacheVerdict::Unclear
    };
    (
        v,
        format!(
            "TTFT of the same prompt: first {} ms, repeated {} ms; with a fresh nonce {} ms (repeat / uncached = {})",
            Fixed(cold as f64 / 1000.0, 1),
            Fixed(warm as f64 / 1000.0, 1),
            Fixed(control as f64 / 1000.0, 1),
            Fixed(ratio, 2)
        ),
    )
}

/// The decode-slowdown probe: TPOT at these prompt lengths, one stream, one request each.
pub mod slowdown {
    /// Prompt lengths, tokens.
    pub const PROMPTS: [u32; 3] = [128, 1024, 3072];
    /// Output tokens of each request.
    pub const OUTPUT_TOKENS: u32 = 64;
}

/// Decode slowdown: how TPOT grows with the context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    /// (prompt tokens, TPOT µs).
    pub points: Vec<(u32, u64)>,
    /// TPOT at the longest prompt ÷ TPOT at the shortest.
    pub ratio: f64,
}

/// TPOT against prompt length.
pub fn slowdown_of(points: &[(u32, u64)]) -> Option<(Slowdown, String)> {
    let (first, last) = (points.first()?, points.last()?);
    if first.1 == 0 || last.0 <= first.0 {
        return None;
    }
    let ratio = last.1 as f64 / first.1 as f64;
    let text = format!(
        "TPOT at one stream: {} — {}× from {} to {} prompt tokens",
        points
            .iter()
            .map(|(p, t)| format!("{p} tokens {} ms", Fixed(*t as f64 / 1000.0, 2)))
            .collect::<Vec<_>>()
            .join(", "),
        Fixed(ratio, 2),
        first.0,
        last.0
    );
    Some((
        Slowdown {
            points: points.to_vec(),
            ratio,
        },
        text,
    ))
}

/// The provenance of a pin a behaviour probe filled.
pub fn probed(probe: &str, evidence: &str) -> Provenance {
    Provenance::Probed {
        url: format!("measured by pinbench: {probe}"),
        field: evidence.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(send: u64, first: u64, end: u64) -> Timed {
        Timed {
            send_us: send,
            first_token_us: first,
            end_us: end,
            tpot_us: None,
        }
    }

    #[test]
    fn batching_decisions() {
        let a = t(0, 10_000, 300_000);
        // B's first token a few ms before A's observed end: skew, as a static batch.
        let (v, why) = batching_verdict(&a, &t(30_000, 296_000, 310_000));
        assert_eq!(v, BatchingVerdict::Static, "{why}");
        assert!(
            why.contains("4.0 ms before") && why.contains("10 ms"),
            "{why}"
        );
        // The tolerance grows with A's token gap.
        let slow = Timed {
            tpot_us: Some(20_000),
            ..a
        };
        assert_eq!(skew_tolerance_us(&slow), 80_000);
        // (A, B, verdict): B's first token against A's end, with A's tolerance.
        for (a, b, want) in [
            // 11 ms before A's end, beyond the 10 ms tolerance.
            (a, t(30_000, 289_000, 300_500), BatchingVerdict::Continuous),
            (slow, t(30_000, 250_000, 320_000), BatchingVerdict::Static),
            (
                slow,
                t(30_000, 200_000, 320_000),
                BatchingVerdict::Continuous,
            ),
            (a, t(30_000, 45_000, 60_000), BatchingVerdict::Continuous),
            (a, t(30_000, 305_000, 320_000), BatchingVerdict::Static),
            // B sent before A's first token, or after A ended.
            (a, t(5_000, 15_000, 20_000), BatchingVerdict::Unclear),
            (a, t(400_000, 410_000, 420_000), BatchingVerdict::Unclear),
        ] {
            let (v, why) = batching_verdict(&a, &b);
            assert_eq!(v, want, "{b:?}: {why}");
        }
    }

    #[test]
    fn cache_and_slowdown_decisions() {
        assert_eq!(cache_verdict(20_000, 2_000, 21_000).0, CacheVerdict::On);
        assert_eq!(cache_verdict(20_000, 19_000, 21_000).0, CacheVerdict::Off);
        assert_eq!(
            cache_verdict(20_000, 13_000, 21_000).0,
            CacheVerdict::Unclear
        );
        let (s, text) =
            slowdown_of(&[(128, 1_000), (1024, 1_500), (3072, 3_000)]).expect("slowdown");
        assert!((s.ratio - 3.0).abs() < 1e-9);
        assert!(text.contains("3.00×"));
        assert!(slowdown_of(&[(128, 0), (256, 10)]).is_none());
        assert!(slowdown_of(&[]).is_none());
    }

    #[test]
    fn probe_bodies_are_exact_and_nonced_when_asked() {
        let a = request_body(Dialect::Completions, "m", 32, 1, None, 8);
        let b = request_body(Dialect::Completions, "m", 32, 1, None, 8);
        assert_eq!(a, b, "the same prompt twice");
        let c = request_body(
            Dialect::Completions,
            "m",
            32,
            1,
            Some("nonce words ".into()),
            8,
        );
        assert!(c.contains("nonce words"));
        let r = cache_requests(
            Dialect::Completions,
            "m",
            None,
            ["n1 ".into(), "n2 ".into()],
        );
        assert!(r[0] == r[1] && r[1] == r[3] && r[2] != r[4] && r[2].contains("n1"));
        let v: serde_json::Value = serde_json::from_str(&a).expect("json");
        assert_eq!(v["max_tokens"], 8);
        assert_eq!(v["ignore_eos"], true);
    }
}
