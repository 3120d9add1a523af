//! Run timeline → metrics, with the definitions of docs/DEFINITIONS.md §2.
//!
//! Inputs are per-request records on the client clock (integer µs). Per load step:
//!
//! * Requests are classified by **dispatch order** (or dispatch time, as pinned) into
//!   warm-up, measured and cool-down; the same records always give the same split.
//!   Request-level distributions use measured requests that completed normally.
//! * **TTFT** = first token chunk − `t_send`. **TPOT** = (last token chunk − first token
//!   chunk) / (output tokens − tokens in the first chunk). **Inter-chunk latency** = every
//!   gap between consecutive token chunks (each gap weighted once); **per-token ITL** =
//!   gap / tokens of the later chunk (weighted by those tokens). **E2E** = `t_done` − `t_send`.
//! * Speeds are stored as milli-tokens/s integers: per-stream decode = 1/TPOT, per-stream
//!   end-to-end = output tokens / E2E, prefill = prompt tokens / TTFT, burst = decode speed
//!   over a stream's first [`BURST_TOKENS`] tokens.
//! * **Aggregate output tok/s** over a window = tokens (of any request of the step) whose
//!   chunk arrived in `[start, end)` / window length. The **measured window** runs from the
//!   first measured dispatch to the last measured request's end. The **steady window** is
//!   the part of it where the offered load was fully in flight: from when in-flight first
//!   reached the target (closed loop) to the first request end after the step's last
//!   dispatch (open loop: to the last dispatch).
//! * **Concurrency**: offered in-flight counts a request from `t_send`; achieved counts it
//!   from when it was on the wire (Resource Timing `requestStart`, when known).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{Hist, HistogramError};
use crate::pins::{LoadStep, RunConfig, Span, WindowPlan};
use crate::record::{ReasoningShown, RequestRecord};

/// Tokens at the start of each stream over which the burst speed is taken.
pub const BURST_TOKENS: u64 = 32;

/// Output-position buckets of the decode slowdown curve (inclusive bounds; `None` = open).
pub const POSITION_BUCKETS: [(u64, Option<u64>); 5] = [
    (1, Some(32)),
    (33, Some(128)),
    (129, Some(512)),
    (513, Some(2048)),
    (2049, None),
];

pub use crate::pins::HTTP1_CONNECTIONS_PER_HOST;

/// Event-loop lag (p99) above which chunk timestamps are judged unreliable, µs.
pub const MAX_EVENT_LOOP_LAG_P99_US: u64 = 20_000;

/// Errors of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetricsError {
    /// A histogram failed to encode.
    #[error(transparent)]
    Histogram(#[from] HistogramError),
}

/// Service-level objectives for goodput; each may be absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Largest acceptable TTFT, µs.
    pub ttft_us: Option<u64>,
    /// Largest acceptable TPOT, µs.
    pub tpot_us: Option<u64>,
    /// Largest acceptable E2E latency, µs.
    pub e2e_us: Option<u64>,
}

impl Slo {
    /// Reads the optional SLO fields of the form (milliseconds, decimals allowed; empty =
    /// no limit). `Ok(None)` when all are empty.
    pub fn from_ms_fields(ttft: &str, tpot: &str, e2e: &str) -> Result<Option<Slo>, String> {
        let one = |name: &str, t: &str| -> Result<Option<u64>, String> {
            let t = t.trim();
            if t.is_empty() {
                return Ok(None);
            }
            match crate::json::parse_f64(t) {
                Some(v) if v > 0.0 && v < 1e9 => Ok(Some((v * 1000.0).round() as u64)),
                _ => Err(format!(
                    "SLO {name}: expected a number of milliseconds > 0, got {t:?}"
                )),
            }
        };
        let slo = Slo {
            ttft_us: one("TTFT", ttft)?,
            tpot_us: one("TPOT", tpot)?,
            e2e_us: one("E2E", e2e)?,
        };
        Ok((slo.ttft_us.is_some() || slo.tpot_us.is_some() || slo.e2e_us.is_some()).then_some(slo))
    }
}

/// What the metrics need from the configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsPlan {
    /// The load steps (index = `RequestRecord::step`).
    pub steps: Vec<LoadStep>,
    /// The windows of each step.
    pub window: WindowPlan,
    /// SLOs for goodput.
    pub slo: Option<Slo>,
}

impl MetricsPlan {
    /// The plan of a pinned run.
    pub fn from_config(cfg: &RunConfig, slo: Option<Slo>) -> Self {
        Self {
            steps: cfg.load.value.steps.clone(),
            window: cfg.window.value,
            slo,
        }
    }
}

/// A distribution's summary figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Dist {
    /// Summarises a histogram (`None` when empty).
    pub fn of(h: &Hist) -> Option<Dist> {
        Some(Dist {
            count: h.count(),
            min: h.min()?,
            mean: h.mean()?,
            p50: h.quantile(0.5)?,
            p90: h.quantile(0.9)?,
            p95: h.quantile(0.95)?,
            p99: h.quantile(0.99)?,
            p999: h.quantile(0.999)?,
            max: h.max()?,
        })
    }
}

/// Metrics of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RequestMetrics {
    /// TTFT (first generated text of any kind), µs.
    pub ttft_us: Option<u64>,
    /// Time to the first answer token of a reasoning model's request, µs.
    pub ttfa_us: Option<u64>,
    /// TPOT, µs (rounded).
    pub tpot_us: Option<u64>,
    /// E2E, µs.
    pub e2e_us: Option<u64>,
    /// Per-stream decode speed, milli-tok/s.
    pub decode_milli: Option<u64>,
    /// Per-stream end-to-end speed, milli-tok/s.
    pub e2e_speed_milli: Option<u64>,
    /// Prefill speed, milli-tok/s.
    pub prefill_milli: Option<u64>,
    /// Burst decode speed over the first tokens, milli-tok/s.
    pub burst_milli: Option<u64>,
}

/// `n / d` rounded, at most 2^53 − 1: every figure must stay an integer a signed report
/// stores exactly, whatever a server's counts make of it.
fn div_round(n: u128, d: u128) -> u64 {
    if d == 0 {
        return 0;
    }
    u64::try_from((n.saturating_add(d / 2)) / d)
        .unwrap_or(u64::MAX)
        .min(crate::pins::MAX_JSON_INTEGER)
}

/// `count` per `dur_us`, as milli-units per second.
pub fn rate_milli(count: u64, dur_us: u64) -> Option<u64> {
    (dur_us > 0).then(|| div_round(u128::from(count) * 1_000_000_000, u128::from(dur_us)))
}

/// Computes the per-request metrics of one record.
pub fn request_metrics(rec: &RequestRecord) -> RequestMetrics {
    let mut m = RequestMetrics::default();
    let (Some(first), Some(last)) = (rec.chunks.first(), rec.chunks.last()) else {
        m.e2e_us = rec.t_done_us.map(|d| d.saturating_sub(rec.t_send_us));
        return m;
    };
    // The first generated text of any kind: reasoning (shown in any form) or answer.
    let ttft = rec
        .t_first_token_us()
        .unwrap_or(first.t_us)
        .saturating_sub(rec.t_send_us);
    m.ttft_us = Some(ttft);
    if rec.reasoning.is_some() {
        m.ttfa_us = rec
            .first_answer_chunk()
            .map(|c| c.t_us.saturating_sub(rec.t_send_us));
    }
    // The server's count when it gave one, less reasoning the stream did not time
    // (DEFINITIONS: timed output tokens − first chunk).
    let after_first = rec.timed_tokens().saturating_sub(u64::from(first.tokens));
    let span = last.t_us.saturating_sub(first.t_us);
    if after_first > 0 && span > 0 {
        m.tpot_us = Some(div_round(u128::from(span), u128::from(after_first)));
        m.decode_milli = rate_milli(after_first, span);
    }
    m.e2e_us = rec.t_done_us.map(|d| d.saturating_sub(rec.t_send_us));
    m.e2e_speed_milli = m.e2e_us.and_then(|e| rate_milli(rec.output_tokens(), e));
    m.prefill_milli = rec.usage.and_then(|u| rate_milli(u.prompt_tokens, ttft));
    let mut cum = 0u64;
    for c in &rec.chunks {
        cum += u64::from(c.tokens);
        if cum >= BURST_TOKENS {
            let n = cum - u64::from(first.tokens);
            let dt = c.t_us.saturating_sub(first.t_us);
            if n > 0 && dt > 0 {
                m.burst_milli = rate_milli(n, dt);
            }
            break;
        }
    }
    m
}

/// Which part of the step a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Discarded at the start.
    Warmup,
    /// Measured.
    Measured,
    /// Discarded at the end.
    Cooldown,
}

/// Classifies a step's records (sorted by dispatch index) into phases.
pub fn classify(records: &[&RequestRecord], window: &WindowPlan) -> Vec<Phase> {
    let Some(t0) = records.iter().map(|r| r.t_send_us).min() else {
        return Vec::new();
    };
    let warm: Vec<bool> = records
        .iter()
        .enumerate()
        .map(|(i, r)| match window.warmup {
            Span::Requests { count } => i < count as usize,
            Span::Duration { ms } => r.t_send_us < t0 + ms * 1000,
        })
        .collect();
    let first_measured = warm.iter().position(|w| !w);
    let t_w = match (window.warmup, first_measured) {
        (Span::Duration { ms }, _) => t0 + ms * 1000,
        (Span::Requests { .. }, Some(i)) => records[i].t_send_us,
        (Span::Requests { .. }, None) => u64::MAX,
    };
    let mut measured_seen = 0u32;
    records
        .iter()
        .zip(&warm)
        .map(|(r, &w)| {
            if w {
                return Phase::Warmup;
            }
            let inside = match window.measured {
                Span::Requests { count } => measured_seen < count,
                Span::Duration { ms } => r.t_send_us < t_w.saturating_add(ms * 1000),
            };
            if inside {
                measured_seen += 1;
                Phase::Measured
            } else {
                Phase::Cooldown
            }
        })
        .collect()
}

/// A time window's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowFigures {
    /// Start, µs (client clock).
    pub start_us: u64,
    /// End, µs.
    pub end_us: u64,
    /// Tokens whose chunk arrived in the window.
    pub output_tokens: u64,
    /// Aggregate output tok/s × 1000 (all streams together).
    pub aggregate_output_milli: u64,
}

/// The step's windows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Windows {
    /// First measured dispatch → last measured end.
    pub measured: Option<WindowFigures>,
    /// Where the offered load was fully in flight (the headline window).
    pub steady: Option<WindowFigures>,
}

impl Windows {
    /// The window a headline aggregate comes from, with its name: the steady window,
    /// else the measured one.
    pub fn headline(&self) -> Option<(WindowFigures, &'static str)> {
        self.steady
            .map(|w| (w, "steady window"))
            .or(self.measured.map(|w| (w, "measured window")))
    }
}

/// Offered vs achieved concurrency. Offered counts a request from `t_send` to the page
/// seeing its end; achieved counts it on the wire, `requestStart` to `responseEnd`, when
/// Resource Timing is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Concurrency {
    /// The pinned target (closed: N; open: the in-flight cap).
    pub target: u32,
    /// Time-weighted mean of requests the client had issued, ×1000.
    pub offered_mean_milli: u64,
    /// Time-weighted mean of requests actually on the wire, ×1000.
    pub achieved_mean_milli: u64,
    /// Most requests the client had issued at once (`t_send` → end), over the step.
    #[serde(default)]
    pub offered_max: u32,
    /// Most requests whose response headers had arrived and that had not ended, at once,
    /// over the step: a lower bound on what the browser really had in flight, known
    /// without Timing-Allow-Origin.
    #[serde(default)]
    pub headers_max: u32,
    /// Most requests on the wire at once.
    pub achieved_max: u32,
    /// Whether wire timing was known for every request (else achieved = offered).
    pub wire_timing_known: bool,
    /// Which window the means cover (`steady` or `measured`).
    pub window: String,
}

/// Goodput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goodput {
    /// SLOs applied.
    pub slo: Slo,
    /// Measured requests that met every SLO.
    pub met: u32,
    /// Measured requests judged.
    pub judged: u32,
    /// Judged requests that had no TPOT (fewer than two token chunks) while a TPOT SLO
    /// was set: they fail it (a request too short to show a decode speed has not met a
    /// decode-speed objective).
    #[serde(default)]
    pub missing_tpot: u32,
    /// Requests/s meeting every SLO over the measured window, ×1000.
    pub rps_milli: u64,
}

/// One bucket of the decode slowdown curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowdownBucket {
    /// First output position.
    pub from: u64,
    /// Last output position (`None` = no upper bound).
    pub to: Option<u64>,
    /// Tokens whose chunk started in the bucket.
    pub tokens: u64,
    /// Mean time per output token there, µs (sum of gaps / tokens).
    pub mean_tpot_us: Option<u64>,
}

/// Requested vs achieved lengths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attainment {
    /// Requests whose achieved length is known.
    pub known: u32,
    /// Requests that got exactly the requested length.
    pub exact: u32,
    /// Sum requested (over known).
    pub requested_total: u64,
    /// Sum achieved (over known).
    pub achieved_total: u64,
    /// Smallest achieved − requested.
    pub min_diff: i64,
    /// Largest achieved − requested.
    pub max_diff: i64,
}

impl Attainment {
    fn add(&mut self, requested: u64, achieved: u64) {
        // Saturating: a file may state any count.
        let wide = i128::from(achieved) - i128::from(requested);
        let diff = i64::try_from(wide).unwrap_or(if wide < 0 { i64::MIN } else { i64::MAX });
        if self.known == 0 {
            self.min_diff = diff;
            self.max_diff = diff;
        }
        self.known = self.known.saturating_add(1);
        self.exact = self.exact.saturating_add(u32::from(diff == 0));
        self.requested_total = self.requested_total.saturating_add(requested);
        self.achieved_total = self.achieved_total.saturating_add(achieved);
        self.min_diff = self.min_diff.min(diff);
        self.max_diff = self.max_diff.max(diff);
    }
}

/// Request counts and the exact warm-up / cool-down lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCounts {
    /// Dispatched in the step.
    pub dispatched: u32,
    /// Measured.
    pub measured: u32,
    /// Measured and completed normally.
    pub measured_ok: u32,
    /// Indices discarded as warm-up.
    pub warmup: Vec<u32>,
    /// Indices discarded as cool-down.
    pub cooldown: Vec<u32>,
}

/// An open loop's arrivals: offered against achieved, and latency from the intended
/// arrival (which includes the time the client held a request back), so a binding
/// in-flight cap is shown, not hidden (no coordinated omission).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopFigures {
    /// The pinned arrival rate, req/s × 1000.
    pub offered_rate_milli: u64,
    /// Measured arrivals per second by their intended times, × 1000 (`(n − 1) / span`).
    pub arrival_rate_milli: Option<u64>,
    /// Measured requests actually sent per second, × 1000 (`(n − 1) / span` of sends).
    pub achieved_rate_milli: Option<u64>,
    /// Measured requests.
    pub arrivals: u32,
    /// Measured requests the in-flight cap held back.
    pub held_by_cap: u32,
    /// Send − intended arrival, µs (measured requests).
    pub dispatch_delay_us: Option<Dist>,
    /// TTFT from the intended arrival, µs.
    pub ttft_from_arrival_us: Option<Dist>,
    /// E2E from the intended arrival, µs.
    pub e2e_from_arrival_us: Option<Dist>,
}

/// Encoded histograms of one step (HdrHistogram V2 + DEFLATE, base64).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepHistograms {
    /// TTFT, µs.
    pub ttft_us: String,
    /// TPOT, µs.
    pub tpot_us: String,
    /// E2E, µs.
    pub e2e_us: String,
    /// Inter-chunk gaps, µs.
    pub inter_chunk_us: String,
    /// Per-token ITL, µs.
    pub itl_per_token_us: String,
}

/// All figures of one load step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSummary {
    /// Step index.
    pub step: u32,
    /// The load of this step.
    pub load: LoadStep,
    /// Counts.
    pub requests: RequestCounts,
    /// Failed requests of the step (all phases) by kind.
    pub errors_by_kind: BTreeMap<String, u32>,
    /// Measured requests by how exact their token counts are.
    pub token_counts: BTreeMap<String, u32>,
    /// TTFT, µs.
    pub ttft_us: Option<Dist>,
    /// TPOT, µs.
    pub tpot_us: Option<Dist>,
    /// E2E, µs.
    pub e2e_us: Option<Dist>,
    /// Inter-chunk gaps, µs (each gap once).
    pub inter_chunk_us: Option<Dist>,
    /// Per-token ITL, µs (each token once).
    pub itl_per_token_us: Option<Dist>,
    /// Chunks by tokens carried: tokens → chunks.
    pub tokens_per_chunk: BTreeMap<u32, u64>,
    /// Per-stream decode speed, milli-tok/s.
    pub decode_speed_milli: Option<Dist>,
    /// Per-stream end-to-end speed, milli-tok/s.
    pub e2e_speed_milli: Option<Dist>,
    /// Prefill speed, milli-tok/s.
    pub prefill_speed_milli: Option<Dist>,
    /// Burst decode speed over the first tokens, milli-tok/s.
    pub burst_speed_milli: Option<Dist>,
    /// Windows and aggregate throughput.
    pub windows: Windows,
    /// Goodput, when SLOs were given.
    pub goodput: Option<Goodput>,
    /// TPOT by output position.
    pub decode_slowdown: Vec<SlowdownBucket>,
    /// Offered vs achieved concurrency.
    pub concurrency: Concurrency,
    /// Open loop: offered vs achieved arrivals and latency from the intended arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopFigures>,
    /// Prompt length attainment (server usage vs requested).
    pub prompt_len: Attainment,
    /// Output length attainment.
    pub output_len: Attainment,
    /// Histograms behind the distributions.
    pub histograms: StepHistograms,
    /// A reasoning model's step: how the reasoning was shown and counted, and the time
    /// to the first answer token (absent when no measured request reasoned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningFigures>,
}

/// The reasoning of a step's measured requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningFigures {
    /// Requests with a reasoning part, by how it was shown (`tokens`, `summary`, `hidden`).
    pub shown: BTreeMap<String, u32>,
    /// Reasoning tokens counted (by the server, or by the stream when every one was
    /// streamed), over the requests that counted them.
    pub tokens: u64,
    /// Requests whose reasoning tokens are unknown (never guessed).
    pub unknown: u32,
    /// Counted reasoning tokens that were never timed (hidden or summarised): outside
    /// every TPOT and ITL.
    pub untimed_tokens: u64,
    /// Time to the first answer token, µs.
    pub ttfa_us: Option<Dist>,
}

impl StepSummary {
    /// Measured requests of the step whose per-token timing was estimated or unverified
    /// ([`inexact_timing`]).
    pub fn inexact_timing(&self) -> u32 {
        inexact_timing(&self.token_counts)
    }
}

/// Requests whose per-token timing was estimated or unverified, of a step's counts by
/// token-count kind (their token counts were not exact per chunk).
pub fn inexact_timing(token_counts: &BTreeMap<String, u32>) -> u32 {
    token_counts
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "exact_continuous_usage" | "exact_deltas_match_usage" | "exact_finish_token"
            )
        })
        .map(|(_, v)| *v)
        .sum()
}

/// The run's figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// One per load step.
    pub steps: Vec<StepSummary>,
}

fn aggregate(records: &[&RequestRecord], start: u64, end: u64) -> Option<WindowFigures> {
    (end > start).then(|| {
        let tokens: u64 = records
            .iter()
            .flat_map(|r| r.chunks.iter())
            .filter(|c| c.t_us >= start && c.t_us < end)
            .map(|c| u64::from(c.tokens))
            .sum();
        WindowFigures {
            start_us: start,
            end_us: end,
            output_tokens: tokens,
            aggregate_output_milli: rate_milli(tokens, end - start).unwrap_or(0),
        }
    })
}

/// In-flight counts over time: `(t_us, offered, achieved)` after each change.
pub fn in_flight_timeline(records: &[&RequestRecord]) -> Vec<(u64, u32, u32)> {
    // (time, order, d_offered, d_achieved); ends sort before starts at the same instant.
    let mut ev: Vec<(u64, u8, i32, i32)> = Vec::with_capacity(records.len() * 4);
    for r in records {
        let end = r.t_end_us();
        let wire_end = r.t_wire_end_us();
        ev.push((r.t_send_us, 1, 1, 0));
        ev.push((r.t_active_us().min(wire_end), 1, 0, 1));
        ev.push((end, 0, -1, 0));
        ev.push((wire_end, 0, 0, -1));
    }
    crate::sort::sort(&mut ev);
    let (mut off, mut ach) = (0i64, 0i64);
    let mut out: Vec<(u64, u32, u32)> = Vec::new();
    for (t, _, d_o, d_a) in ev {
        off += i64::from(d_o);
        ach += i64::from(d_a);
        let point = (t, off.max(0) as u32, ach.max(0) as u32);
        match out.last_mut() {
            Some(last) if last.0 == t => *last = point,
            _ => out.push(point),
        }
    }
    out
}

/// Most of the `[start, end)` intervals that overlap at one instant.
pub fn max_overlap(intervals: impl Iterator<Item = (u64, u64)>) -> u32 {
    // Ends sort before starts at the same instant (0 < 1).
    let mut ev: Vec<(u64, u8)> = intervals
        .filter(|(s, e)| e > s)
        .flat_map(|(s, e)| [(s, 1u8), (e, 0u8)])
        .collect();
    crate::sort::sort(&mut ev);
    let (mut cur, mut max) = (0u32, 0u32);
    for (_, start) in ev {
        if start == 1 {
            cur += 1;
            max = max.max(cur);
        } else {
            cur = cur.saturating_sub(1);
        }
    }
    max
}

/// Time-weighted means (×1000) of offered and achieved over `[start, end)` and the
/// achieved maximum.
fn concurrency_over(timeline: &[(u64, u32, u32)], start: u64, end: u64) -> (u64, u64, u32) {
    if end <= start {
        return (0, 0, 0);
    }
    let (mut off_area, mut ach_area, mut max) = (0u128, 0u128, 0u32);
    let (mut cur_o, mut cur_a) = (0u32, 0u32);
    let mut t_prev = start;
    for &(t, o, a) in timeline {
        if t > start {
            let seg_end = t.min(end);
            if seg_end > t_prev {
                off_area += u128::from(cur_o) * u128::from(seg_end - t_prev);
                ach_area += u128::from(cur_a) * u128::from(seg_end - t_prev);
                max = max.max(cur_a);
                t_prev = seg_end;
            }
        }
        if t >= end {
            break;
        }
        cur_o = o;
        cur_a = a;
        if t >= start {
            max = max.max(cur_a);
        }
    }
    if end > t_prev {
        off_area += u128::from(cur_o) * u128::from(end - t_prev);
        ach_area += u128::from(cur_a) * u128::from(end - t_prev);
    }
    let len = u128::from(end - start);
    (
        div_round(off_area * 1000, len),
        div_round(ach_area * 1000, len),
        max,
    )
}

/// Accumulates an open loop's arrival figures over the measured requests.
#[derive(Default)]
struct OpenAcc {
    intended: Option<(u64, u64)>,
    sent: Option<(u64, u64)>,
    arrivals: u32,
    held: u32,
    delay: Option<Hist>,
    ttft: Option<Hist>,
    e2e: Option<Hist>,
}

impl OpenAcc {
    fn add_arrival(&mut self, r: &RequestRecord) {
        let Some(t_i) = r.t_intended_us else { return };
        let span = |s: Option<(u64, u64)>, t: u64| {
            let (a, b) = s.unwrap_or((t, t));
            Some((a.min(t), b.max(t)))
        };
        self.intended = span(self.intended, t_i);
        self.sent = span(self.sent, r.t_send_us);
        self.arrivals += 1;
        self.held += u32::from(r.held_by_cap);
        self.delay
            .get_or_insert_with(Hist::new)
            .record(r.t_send_us.saturating_sub(t_i));
    }

    fn add_latency(&mut self, r: &RequestRecord, m: &RequestMetrics) {
        let Some(t_i) = r.t_intended_us else { return };
        let wait = r.t_send_us.saturating_sub(t_i);
        if let Some(t) = m.ttft_us {
            self.ttft.get_or_insert_with(Hist::new).record(t + wait);
        }
        if let Some(e) = m.e2e_us {
            self.e2e.get_or_insert_with(Hist::new).record(e + wait);
        }
    }

    fn figures(&self, load: LoadStep) -> Option<OpenLoopFigures> {
        let LoadStep::Open { rate_milli_rps, .. } = load else {
            return None;
        };
        if self.arrivals == 0 {
            return None;
        }
        let rate = |s: Option<(u64, u64)>| {
            s.and_then(|(a, b)| rate_milli(u64::from(self.arrivals - 1), b - a))
        };
        Some(OpenLoopFigures {
            offered_rate_milli: rate_milli_rps,
            arrival_rate_milli: rate(self.intended),
            achieved_rate_milli: rate(self.sent),
            arrivals: self.arrivals,
            held_by_cap: self.held,
            dispatch_delay_us: self.delay.as_ref().and_then(Dist::of),
            ttft_from_arrival_us: self.ttft.as_ref().and_then(Dist::of),
            e2e_from_arrival_us: self.e2e.as_ref().and_then(Dist::of),
        })
    }
}

/// Accumulates one step's per-request figures, one record at a time in dispatch order;
/// [`StepAcc::finish`] adds the window figures, which need every record of the step.
struct StepAcc {
    counts: RequestCounts,
    errors: BTreeMap<String, u32>,
    token_counts: BTreeMap<String, u32>,
    ttft: Hist,
    tpot: Hist,
    e2e: Hist,
    gaps: Hist,
    itl: Hist,
    dec: Hist,
    e2es: Hist,
    pre: Hist,
    burst: Hist,
    per_chunk: BTreeMap<u32, u64>,
    /// Tokens per chunk below 64 are counted in an array (the hot path), the rest in the map.
    small_counts: [u64; 64],
    slow: Vec<(u64, u128)>,
    prompt_att: Attainment,
    output_att: Attainment,
    measured_span: Option<(u64, u64)>,
    judged: Vec<RequestMetrics>,
    open: OpenAcc,
    reasoning: Option<(ReasoningFigures, Hist)>,
}

impl StepAcc {
    fn new(dispatched: u32) -> Self {
        Self {
            counts: RequestCounts {
                dispatched,
                ..RequestCounts::default()
            },
            errors: BTreeMap::new(),
            token_counts: BTreeMap::new(),
            ttft: Hist::new(),
            tpot: Hist::new(),
            e2e: Hist::new(),
            gaps: Hist::new(),
            itl: Hist::new(),
            dec: Hist::new(),
            e2es: Hist::new(),
            pre: Hist::new(),
            burst: Hist::new(),
            per_chunk: BTreeMap::new(),
            small_counts: [0u64; 64],
            slow: vec![(0, 0); POSITION_BUCKETS.len()],
            prompt_att: Attainment::default(),
            output_att: Attainment::default(),
            measured_span: None,
            judged: Vec::new(),
            open: OpenAcc::default(),
            reasoning: None,
        }
    }

    /// Adds one record of the step, in dispatch order, with its phase.
    fn add(&mut self, r: &RequestRecord, phase: Phase) {
        if !r.outcome.is_ok() {
            *self.errors.entry(r.outcome.kind()).or_insert(0u32) += 1;
        }
        match phase {
            Phase::Warmup => {
                self.counts.warmup.push(r.index);
                return;
            }
            Phase::Cooldown => {
                self.counts.cooldown.push(r.index);
                return;
            }
            Phase::Measured => {}
        }
        self.counts.measured += 1;
        self.open.add_arrival(r);
        let (s, e) = self.measured_span.unwrap_or((r.t_send_us, r.t_end_us()));
        self.measured_span = Some((s.min(r.t_send_us), e.max(r.t_end_us())));
        if !r.outcome.is_ok() {
            return;
        }
        self.counts.measured_ok += 1;
        let key = r.token_counts.name().to_owned();
        *self.token_counts.entry(key).or_insert(0u32) += 1;
        let m = request_metrics(r);
        let rec_opt = |h: &mut Hist, v: Option<u64>| {
            if let Some(v) = v {
                h.record(v)
            }
        };
        rec_opt(&mut self.ttft, m.ttft_us);
        rec_opt(&mut self.tpot, m.tpot_us);
        rec_opt(&mut self.e2e, m.e2e_us);
        rec_opt(&mut self.dec, m.decode_milli);
        rec_opt(&mut self.e2es, m.e2e_speed_milli);
        rec_opt(&mut self.pre, m.prefill_milli);
        rec_opt(&mut self.burst, m.burst_milli);
        self.open.add_latency(r, &m);
        if let Some(rr) = r.reasoning {
            let (f, ttfa) = self
                .reasoning
                .get_or_insert_with(|| (ReasoningFigures::default(), Hist::new()));
            let shown = match rr.shown {
                ReasoningShown::Tokens => "tokens",
                ReasoningShown::Summary => "summary",
                ReasoningShown::Hidden => "hidden",
            };
            *f.shown.entry(shown.to_owned()).or_insert(0) += 1;
            match rr.tokens {
                Some(n) => {
                    f.tokens = f.tokens.saturating_add(n);
                    if rr.shown != ReasoningShown::Tokens {
                        f.untimed_tokens = f.untimed_tokens.saturating_add(n);
                    }
                }
                None => f.unknown += 1,
            }
            if let Some(t) = m.ttfa_us {
                ttfa.record(t);
            }
        }
        self.judged.push(m);
        let mut cum = 0u64;
        // Positions only grow within a stream, so the bucket is found by moving forward.
        let mut bucket = 0usize;
        for (i, c) in r.chunks.iter().enumerate() {
            match self.small_counts.get_mut(c.tokens as usize) {
                Some(n) => *n += 1,
                None => *self.per_chunk.entry(c.tokens).or_insert(0u64) += 1,
            }
            if i > 0 {
                let gap = c.t_us.saturating_sub(r.chunks[i - 1].t_us);
                self.gaps.record(gap);
                let n = u64::from(c.tokens);
                self.itl
                    .record_n(div_round(u128::from(gap), u128::from(n)), n);
                let pos = cum + 1;
                while bucket < POSITION_BUCKETS.len()
                    && POSITION_BUCKETS[bucket].1.is_some_and(|hi| pos > hi)
                {
                    bucket += 1;
                }
                if let Some(&(lo, _)) = POSITION_BUCKETS.get(bucket) {
                    if pos >= lo {
                        self.slow[bucket].0 += n;
                        self.slow[bucket].1 += u128::from(gap);
                    }
                }
            }
            cum += u64::from(c.tokens);
        }
        // A later turn's prompt is its history and a new message: the pin holds only the
        // message, so only a conversation's first turn is held to its requested length.
        if let (Some(u), true) = (r.usage, r.turn.is_none_or(|t| t.turn == 0)) {
            self.prompt_att
                .add(u64::from(r.prompt_tokens_requested), u.prompt_tokens);
        }
        self.output_att
            .add(u64::from(r.output_tokens_requested), r.output_tokens());
    }

    /// The step's summary: the accumulated figures plus the windows over `records`.
    fn finish(
        self,
        step: u32,
        load: LoadStep,
        records: &[&RequestRecord],
        plan: &MetricsPlan,
    ) -> Result<StepSummary, MetricsError> {
        let StepAcc {
            counts,
            errors,
            token_counts,
            ttft,
            tpot,
            e2e,
            gaps,
            itl,
            dec,
            e2es,
            pre,
            burst,
            mut per_chunk,
            small_counts,
            slow,
            prompt_att,
            output_att,
            measured_span,
            judged,
            open,
            reasoning,
        } = self;
        for (k, n) in small_counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            *per_chunk.entry(k as u32).or_insert(0u64) += n;
        }
        let measured = measured_span.and_then(|(s, e)| aggregate(records, s, e));
        let timeline = in_flight_timeline(records);
        let target = load.max_concurrency();
        let last_dispatch = records.iter().map(|r| r.t_send_us).max().unwrap_or(0);
        let (t_fill, t_drain) = match load {
            LoadStep::Closed { .. } => (
                timeline.iter().find(|p| p.1 >= target).map(|p| p.0),
                records
                    .iter()
                    .map(|r| r.t_end_us())
                    .filter(|&t| t > last_dispatch)
                    .min(),
            ),
            LoadStep::Open { .. } => (
                records.iter().map(|r| r.t_send_us).min(),
                Some(last_dispatch),
            ),
        };
        let steady = match (measured, t_fill, t_drain) {
            (Some(m), Some(f), Some(d)) => aggregate(records, m.start_us.max(f), m.end_us.min(d)),
            _ => None,
        };
        let (cw, cw_name) = match (steady, measured) {
            (Some(s), _) => ((s.start_us, s.end_us), "steady"),
            (None, Some(m)) => ((m.start_us, m.end_us), "measured"),
            (None, None) => ((0, 0), "none"),
        };
        let (offered_mean_milli, achieved_mean_milli, achieved_max) =
            concurrency_over(&timeline, cw.0, cw.1);
        let goodput = plan.slo.map(|slo| {
            // A limit with no value to judge fails: a request without TPOT does not
            // meet a TPOT SLO (counted in `missing_tpot`).
            let ok = |v: Option<u64>, lim: Option<u64>| match (v, lim) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(v), Some(l)) => v <= l,
            };
            let missing_tpot = if slo.tpot_us.is_some() {
                judged.iter().filter(|m| m.tpot_us.is_none()).count() as u32
            } else {
                0
            };
            let met = judged
                .iter()
                .filter(|m| {
                    m.ttft_us.is_some()
                        && ok(m.ttft_us, slo.ttft_us)
                        && ok(m.tpot_us, slo.tpot_us)
                        && ok(m.e2e_us, slo.e2e_us)
                })
                .count() as u32;
            Goodput {
                slo,
                met,
                judged: counts.measured,
                missing_tpot,
                rps_milli: measured
                    .and_then(|w| rate_milli(u64::from(met), w.end_us - w.start_us))
                    .unwrap_or(0),
            }
        });
        Ok(StepSummary {
            step,
            load,
            requests: counts,
            errors_by_kind: errors,
            token_counts,
            ttft_us: Dist::of(&ttft),
            tpot_us: Dist::of(&tpot),
            e2e_us: Dist::of(&e2e),
            inter_chunk_us: Dist::of(&gaps),
            itl_per_token_us: Dist::of(&itl),
            tokens_per_chunk: per_chunk,
            decode_speed_milli: Dist::of(&dec),
            e2e_speed_milli: Dist::of(&e2es),
            prefill_speed_milli: Dist::of(&pre),
            burst_speed_milli: Dist::of(&burst),
            windows: Windows { measured, steady },
            goodput,
            decode_slowdown: POSITION_BUCKETS
                .iter()
                .zip(&slow)
                .map(|(&(from, to), &(tokens, sum))| SlowdownBucket {
                    from,
                    to,
                    tokens,
                    mean_tpot_us: (tokens > 0).then(|| div_round(sum, u128::from(tokens))),
                })
                .collect(),
            concurrency: Concurrency {
                target,
                offered_mean_milli,
                achieved_mean_milli,
                offered_max: max_overlap(records.iter().map(|r| (r.t_send_us, r.t_end_us()))),
                headers_max: max_overlap(
                    records
                        .iter()
                        .filter_map(|r| r.t_headers_us.map(|h| (h, r.t_end_us()))),
                ),
                achieved_max,
                wire_timing_known: records.iter().all(|r| r.wire.is_some()),
                window: cw_name.to_owned(),
            },
            open_loop: open.figures(load),
            prompt_len: prompt_att,
            output_len: output_att,
            histograms: StepHistograms {
                ttft_us: ttft.encode()?,
                tpot_us: tpot.encode()?,
                e2e_us: e2e.encode()?,
                inter_chunk_us: gaps.encode()?,
                itl_per_token_us: itl.encode()?,
            },
            reasoning: reasoning.map(|(mut f, ttfa)| {
                f.ttfa_us = Dist::of(&ttfa);
                f
            }),
        })
    }
}

fn summarize_step(
    step: u32,
    load: LoadStep,
    records: &mut Vec<&RequestRecord>,
    plan: &MetricsPlan,
) -> Result<StepSummary, MetricsError> {
    crate::sort::sort_by_key(records, |r| r.index);
    let phases = classify(records, &plan.window);
    let mut acc = StepAcc::new(records.len() as u32);
    for (r, &phase) in records.iter().zip(&phases) {
        acc.add(r, phase);
    }
    acc.finish(step, load, records, plan)
}

/// Computes every figure of the run from its records.
pub fn summarize(records: &[RequestRecord], plan: &MetricsPlan) -> Result<Summary, MetricsError> {
    let mut steps = Vec::with_capacity(plan.steps.len());
    for (i, load) in plan.steps.iter().enumerate() {
        let mut recs: Vec<&RequestRecord> =
            records.iter().filter(|r| r.step as usize == i).collect();
        steps.push(summarize_step(i as u32, *load, &mut recs, plan)?);
    }
    Ok(Summary { steps })
}

/// What the browser environment was like during the run (measured by the web layer).
/// `Default` is an environment that measured nothing (tests, fixtures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEnv {
    /// Smallest observed `performance.now()` step, µs.
    pub timer_resolution_us: u64,
    /// `crossOriginIsolated`.
    pub cross_origin_isolated: bool,
    /// Event-loop lag p99 during the run, µs.
    pub event_loop_lag_p99_us: u64,
    /// Event-loop lag max during the run, µs.
    pub event_loop_lag_max_us: u64,
    /// Which host ran the measurement loop (absent in reports made before hosts existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<RunHost>,
    /// The wall clock (Unix time, µs) at the host clock's zero: every `t_…_us` of the
    /// records plus this is a wall-clock instant, which is how reports of clients that ran
    /// at the same time are put on one clock (`share::merge`). Absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_epoch_us: Option<u64>,
    /// A browser host that stopped reading Resource Timing during a long run: how many
    /// entries it read (the run's first requests); later requests have no wire timing and
    /// no protocol because the host did not keep them, not because the server hid them (the
    /// browser's buffer keeps a DOM object per entry until it is cleared, so a buffer for
    /// every request of a long run grows the tab with the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_timing_read: Option<u32>,
}

/// Where the run loop (fetch, stream reading, timestamps) ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunHost {
    /// A dedicated Web Worker (the browser default).
    Worker,
    /// The page's main thread (fallback where workers are unavailable).
    MainThread,
    /// The native command (`pinbench run`).
    Native,
}

impl RunHost {
    /// How the host is named in the UI and the report view.
    pub fn label(self) -> &'static str {
        match self {
            RunHost::Worker => "browser, dedicated Web Worker",
            RunHost::MainThread => "browser, page main thread",
            RunHost::Native => "native command",
        }
    }
}

/// What a host cannot do, stated by the host and applied by the client verdict: a
/// browser's rules never judge a native run, nor the reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostLimits {
    /// HTTP/1.1 connections the host opens to one host:port at most (`None`: one per
    /// request in flight, no cap).
    pub http1_connections_per_origin: Option<u32>,
    /// Whether the host can hide a response's protocol and wire timing (a browser does
    /// without `Timing-Allow-Origin`; a native client always knows them).
    pub may_hide_wire_timing: bool,
    /// Whether its timers are coarsened unless the page is cross-origin isolated.
    pub timers_need_isolation: bool,
    /// What the event loop that timestamps chunks is called in findings.
    pub event_loop: &'static str,
}

impl RunHost {
    /// The limits this host states (a report made before hosts were recorded is judged as
    /// a browser's: those were the only host then).
    pub fn limits(self) -> HostLimits {
        match self {
            RunHost::Worker | RunHost::MainThread => HostLimits {
                http1_connections_per_origin: Some(HTTP1_CONNECTIONS_PER_HOST),
                may_hide_wire_timing: true,
                timers_need_isolation: true,
                // The wording of every browser report so far (a worker's too): findings
                // are recomputed and compared when a report is opened.
                event_loop: "The page's event loop",
            },
            RunHost::Native => HostLimits {
                http1_connections_per_origin: None,
                may_hide_wire_timing: false,
                timers_need_isolation: false,
                event_loop: "The native runtime's event loop",
            },
        }
    }
}

/// Whether the client, not the server, limited the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientVerdict {
    /// The environment.
    pub env: ClientEnv,
    /// Requests by `nextHopProtocol` (`unknown` when not exposed).
    pub protocols: BTreeMap<String, u32>,
    /// True when the headline must not be trusted.
    pub invalid: bool,
    /// Why (one sentence each); also notes that do not invalidate.
    pub findings: Vec<String>,
}

/// Judges the client by the limits its host states ([`RunHost::limits`]): protocol
/// connection caps, achieved vs offered concurrency, timer resolution and event-loop lag.
/// `cleartext` is true for an `http://` endpoint, where browsers (and the native host)
/// speak only HTTP/1.1.
pub fn client_verdict(
    records: &[RequestRecord],
    summary: &Summary,
    env: ClientEnv,
    cleartext: bool,
) -> ClientVerdict {
    // A host that stopped reading Resource Timing (`wire_timing_read`) read it for the
    // requests sent up to the last one it holds; later requests' protocol is not unknown
    // to the browser, only unread.
    let read_until = env.wire_timing_read.and_then(|_| {
        records
            .iter()
            .filter(|r| r.wire.is_some() || r.protocol.is_some())
            .map(|r| r.t_send_us)
            .max()
    });
    let mut protocols = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| read_until.is_none_or(|t| r.t_send_us <= t))
    {
        *protocols
            .entry(
                r.protocol
                    .clone()
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "unknown".into()),
            )
            .or_insert(0u32) += 1;
    }
    let limits = env.host.unwrap_or(RunHost::Worker).limits();
    let mut findings = Vec::new();
    let mut invalid = false;
    let http1_only = cleartext
        || (!protocols.is_empty() && protocols.keys().all(|p| p == "http/1.1" || p == "http/1.0"));
    let hidden = !http1_only && protocols.contains_key("unknown");
    for s in &summary.steps {
        let c = &s.concurrency;
        let open = matches!(s.load, LoadStep::Open { .. });
        // What the client asked the browser to have in flight: closed loops, the target;
        // open loops, what was actually issued at once (the cap may never be reached).
        let asked = if open { c.offered_max } else { c.target };
        let cap = limits.http1_connections_per_origin;
        if let Some(cap) = cap.filter(|&cap| http1_only && asked > cap) {
            invalid = true;
            let what = if open {
                format!("up to {asked} requests in flight (open loop)")
            } else {
                format!("target concurrency {asked}")
            };
            findings.push(format!(
                "Step {}: {what} over HTTP/1.1, but a browser opens at most {} connections per host:port: measured achieved concurrency {} (max {}). The client, not the server, limited this run. Use the endpoint over HTTP/2 (https).",
                s.step, cap, crate::pins::milli(c.achieved_mean_milli), c.achieved_max
            ));
        } else if let Some(cap) = cap.filter(|&cap| {
            hidden
                && !c.wire_timing_known
                && limits.may_hide_wire_timing
                && asked > cap
                && c.headers_max <= cap
        }) {
            invalid = true;
            findings.push(format!(
                "Step {}: {asked} requests were sent at once, but at most {} had their response headers at the same time — what a browser's limit of {} HTTP/1.1 connections per host:port gives. The protocol is hidden (no Timing-Allow-Origin), so the client may have limited this run: serve the endpoint over HTTP/2, or send Timing-Allow-Origin so the browser shows the protocol.",
                s.step, c.headers_max, cap
            ));
        } else if c.wire_timing_known && !open && c.achieved_max < c.target {
            invalid = true;
            findings.push(format!(
                "Step {}: target concurrency {}, but at most {} requests were on the wire at once: the client limited this run.",
                s.step, c.target, c.achieved_max
            ));
        }
        if let Some(o) = s.open_loop.filter(|o| o.held_by_cap > 0) {
            invalid = true;
            let p = |d: Option<Dist>| {
                d.map(|d| {
                    format!(
                        "p50 {} ms, p99 {} ms",
                        crate::pins::milli(d.p50),
                        crate::pins::milli(d.p99)
                    )
                })
                .unwrap_or_else(|| "none".into())
            };
            findings.push(format!(
                "Step {}: the in-flight cap ({}) held back {} of {} measured arrivals: offered {} req/s, achieved {} req/s. From the intended arrival, TTFT is {} (from the send: {}); latency from the send alone hides this queueing.",
                s.step,
                c.target,
                o.held_by_cap,
                o.arrivals,
                crate::pins::milli(o.offered_rate_milli),
                o.achieved_rate_milli.map(crate::pins::milli).unwrap_or_else(|| "—".into()),
                p(o.ttft_from_arrival_us),
                p(s.ttft_us),
            ));
        }
        if !c.wire_timing_known && limits.may_hide_wire_timing && read_until.is_none() {
            findings.push(format!("Step {}: the browser did not expose wire timing for every request (a server without Timing-Allow-Origin hides it): achieved concurrency counts those requests from when the page sent them.", s.step));
        }
    }
    if let (Some(n), Some(_)) = (env.wire_timing_read, read_until) {
        findings.push(format!("Wire timing and the HTTP protocol were read for the run's first {n} requests only: the browser's Resource Timing buffer keeps an object per request, so the tab keeps the first ones and drops the rest to bound its memory. Achieved concurrency counts later requests from when the page sent them."));
    }
    if protocols.contains_key("unknown") {
        findings.push("Some requests' HTTP protocol is unknown (no Timing-Allow-Origin).".into());
    }
    if env.event_loop_lag_p99_us > MAX_EVENT_LOOP_LAG_P99_US {
        invalid = true;
        findings.push(format!(
            "{} lagged {} ms at p99: chunk timestamps are late by up to that much.",
            limits.event_loop,
            crate::pins::milli(env.event_loop_lag_p99_us)
        ));
    }
    if !env.cross_origin_isolated && limits.timers_need_isolation {
        findings.push(format!(
            "The page was not cross-origin isolated: timer resolution {} µs.",
            env.timer_resolution_us
        ));
    }
    ClientVerdict {
        env,
        protocols,
        invalid,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_fields_parse_or_explain() {
        assert_eq!(Slo::from_ms_fields("", " ", ""), Ok(None));
        assert_eq!(
            Slo::from_ms_fields("200", "", "1.5"),
            Ok(Some(Slo {
                ttft_us: Some(200_000),
                tpot_us: None,
                e2e_us: Some(1_500)
            }))
        );
        for bad in ["0", "-3", "fast", "NaN", "inf"] {
            let e = Slo::from_ms_fields(bad, "", "").expect_err(bad);
            assert!(e.starts_with("SLO TTFT: expected"), "{e}");
        }
    }
    use crate::dialect::Usage;
    use crate::record::{Anomalies, Outcome, TokenChunk, TokenCounts, WireTiming};

    fn rec(index: u32, t_send: u64, chunks: &[(u64, u32)], t_done: u64) -> RequestRecord {
        let n: u64 = chunks.iter().map(|c| u64::from(c.1)).sum();
        RequestRecord {
            index,
            step: 0,
            prompt_tokens_requested: 100,
            output_tokens_requested: n as u32,
            t_send_us: t_send,
            t_intended_us: None,
            held_by_cap: false,
            t_headers_us: Some(t_send + 100),
            t_done_us: Some(t_done),
            status: Some(200),
            chunks: chunks
                .iter()
                .map(|&(t_us, tokens)| TokenChunk { t_us, tokens })
                .collect(),
            token_counts: TokenCounts::ExactDeltasMatchUsage,
            deltas: chunks.len() as u32,
            usage: Some(Usage {
                prompt_tokens: 100,
                completion_tokens: n,
                cached_tokens: None,
                reasoning_tokens: None,
            }),
            finish_reason: Some("length".into()),
            response_id: None,
            server_timings: None,
            protocol: Some("h2".into()),
            wire: None,
            outcome: Outcome::Ok {},
            anomalies: Anomalies::default(),
            reasoning: None,
            throttle: None,
            turn: None,
        }
    }

    fn plan(steps: Vec<LoadStep>, warmup: u32, measured: u32) -> MetricsPlan {
        MetricsPlan {
            steps,
            window: WindowPlan {
                warmup: Span::Requests { count: warmup },
                measured: Span::Requests { count: measured },
                cooldown: Span::Requests { count: 0 },
            },
            slo: None,
        }
    }

    #[test]
    fn single_request_known_answers() {
        // Sent at 0; chunks at 50ms (1 token), 60ms (1), 80ms (3 tokens), 90ms (1); done 95ms.
        let r = rec(
            0,
            0,
            &[(50_000, 1), (60_000, 1), (80_000, 3), (90_000, 1)],
            95_000,
        );
        let m = request_metrics(&r);
        assert_eq!(m.ttft_us, Some(50_000));
        // (90 - 50) ms / (6 - 1) tokens = 8 ms.
        assert_eq!(m.tpot_us, Some(8_000));
        assert_eq!(m.decode_milli, Some(125_000)); // 125 tok/s
        assert_eq!(m.e2e_us, Some(95_000));
        assert_eq!(m.e2e_speed_milli, Some(63_158)); // 6 / 0.095 s = 63.157..
        assert_eq!(m.prefill_milli, Some(2_000_000)); // 100 tokens / 50 ms
        assert_eq!(m.burst_milli, None, "fewer than 32 tokens");
        let s = summarize(&[r], &plan(vec![LoadStep::Closed { concurrency: 1 }], 0, 1))
            .expect("summary");
        let s = &s.steps[0];
        // Gaps 10ms (1 tok), 20ms (3 tok), 10ms (1 tok): per-token 10ms x1, 6.667ms x3, 10ms x1.
        // Min and max are exact (not the bucket's highest equivalent, 20 015).
        assert_eq!(
            s.inter_chunk_us.map(|d| (d.count, d.min, d.max)),
            Some((3, 10_000, 20_000))
        );
        assert_eq!(s.itl_per_token_us.map(|d| d.count), Some(5));
        assert_eq!(s.tokens_per_chunk, BTreeMap::from([(1, 3), (3, 1)]));
        // Positions 2..6 all in bucket 1–32: 40 ms / 5 tokens = 8 ms.
        assert_eq!(
            s.decode_slowdown[0],
            SlowdownBucket {
                from: 1,
                to: Some(32),
                tokens: 5,
                mean_tpot_us: Some(8_000)
            }
        );
        assert_eq!(s.decode_slowdown[1].tokens, 0);
        let w = s.windows.measured.expect("window");
        assert_eq!((w.start_us, w.end_us, w.output_tokens), (0, 95_000, 6));
        assert_eq!(w.aggregate_output_milli, 63_158);
        assert_eq!(
            s.output_len,
            Attainment {
                known: 1,
                exact: 1,
                requested_total: 6,
                achieved_total: 6,
                min_diff: 0,
                max_diff: 0
            }
        );
    }

    #[test]
    fn burst_and_slowdown_over_long_streams() {
        // 200 tokens, one per chunk; gap 10 ms for positions 2..=128 then 20 ms.
        let mut chunks = vec![(100_000u64, 1u32)];
        let mut t = 100_000;
        for pos in 2..=200u64 {
            t += if pos <= 128 { 10_000 } else { 20_000 };
            chunks.push((t, 1));
        }
        let r = rec(0, 0, &chunks, t + 1);
        let m = request_metrics(&r);
        // 32nd token at 100ms + 31*10ms: 31 tokens / 310 ms = 100 tok/s.
        assert_eq!(m.burst_milli, Some(100_000));
        let s = summarize(&[r], &plan(vec![LoadStep::Closed { concurrency: 1 }], 0, 1))
            .expect("summary");
        let b = &s.steps[0].decode_slowdown;
        assert_eq!((b[0].tokens, b[0].mean_tpot_us), (31, Some(10_000)));
        assert_eq!((b[1].tokens, b[1].mean_tpot_us), (96, Some(10_000)));
        assert_eq!((b[2].tokens, b[2].mean_tpot_us), (72, Some(20_000)));
    }

    #[test]
    fn warmup_is_deterministic_and_failures_are_counted() {
        let mut records: Vec<RequestRecord> = (0..6)
            .map(|i| {
                rec(
                    i,
                    u64::from(i) * 1_000,
                    &[
                        (u64::from(i) * 1_000 + 500, 1),
                        (u64::from(i) * 1_000 + 700, 1),
                    ],
                    u64::from(i) * 1_000 + 800,
                )
            })
            .collect();
        records[3].outcome = Outcome::Http {
            status: 429,
            message: "slow down".into(),
        };
        records[3].chunks.clear();
        records[1].outcome = Outcome::Stalled { timeout_us: 1 };
        // Shuffle the input order: classification follows dispatch index, not input order.
        records.swap(0, 5);
        let s = summarize(
            &records,
            &plan(vec![LoadStep::Closed { concurrency: 1 }], 2, 3),
        )
        .expect("summary");
        let s = &s.steps[0];
        assert_eq!(s.requests.warmup, vec![0, 1]);
        assert_eq!(s.requests.cooldown, vec![5]);
        assert_eq!((s.requests.measured, s.requests.measured_ok), (3, 2));
        assert_eq!(
            s.errors_by_kind,
            BTreeMap::from([("http_429".to_owned(), 1), ("stalled".to_owned(), 1)])
        );
        assert_eq!(s.ttft_us.map(|d| (d.count, d.max)), Some((2, 500)));
        // Measured window: first measured dispatch (2 ms) to last measured end (4.8 ms).
        let w = s.windows.measured.expect("measured");
        assert_eq!((w.start_us, w.end_us), (2_000, 4_800));
    }

    #[test]
    fn time_based_windows_and_straddling_chunks() {
        // Warm-up 1 s, measured 2 s. Requests every 0.5 s, each 0.8 s long.
        let records: Vec<RequestRecord> = (0..8)
            .map(|i| {
                let t = u64::from(i) * 500_000;
                rec(
                    i,
                    t,
                    &[(t + 100_000, 1), (t + 400_000, 1), (t + 700_000, 1)],
                    t + 800_000,
                )
            })
            .collect();
        let p = MetricsPlan {
            steps: vec![LoadStep::Open {
                rate_milli_rps: 2000,
                arrival: crate::pins::Arrival::Poisson {},
                in_flight_cap: 8,
            }],
            window: WindowPlan {
                warmup: Span::Duration { ms: 1000 },
                measured: Span::Duration { ms: 2000 },
                cooldown: Span::Duration { ms: 0 },
            },
            slo: None,
        };
        let s = &summarize(&records, &p).expect("summary").steps[0];
        assert_eq!(s.requests.warmup, vec![0, 1]);
        assert_eq!(s.requests.cooldown, vec![6, 7]);
        let w = s.windows.measured.expect("measured");
        // Measured requests 2..=5 dispatched 1.0–2.5 s; last ends 3.3 s.
        assert_eq!((w.start_us, w.end_us), (1_000_000, 3_300_000));
        // Tokens arriving in [1.0, 3.3): request 1 (0.5 s) contributes its 1.2 s chunk; requests
        // 2..=5 all 3 each = 12; request 6 (3.0 s) its 3.1 s chunk; request 0 none.
        assert_eq!(w.output_tokens, 1 + 12 + 1);
        // Open loop: steady ends at the last dispatch (3.5 s) -> clipped to 3.3 s.
        let st = s.windows.steady.expect("steady");
        assert_eq!((st.start_us, st.end_us), (1_000_000, 3_300_000));
    }

    #[test]
    fn steady_window_and_concurrency_of_a_closed_loop() {
        // c=2: streams A and B each run 3 back-to-back requests of 1 s.
        let mut records = Vec::new();
        for i in 0..6u32 {
            let stream = u64::from(i % 2);
            let k = u64::from(i / 2);
            let t = k * 1_000_000 + stream * 100_000;
            records.push(rec(
                i,
                t,
                &[(t + 200_000, 1), (t + 900_000, 1)],
                t + 1_000_000,
            ));
        }
        let s = &summarize(
            &records,
            &plan(vec![LoadStep::Closed { concurrency: 2 }], 0, 6),
        )
        .expect("summary")
        .steps[0];
        let st = s.windows.steady.expect("steady");
        // Fill when B starts (0.1 s); drain at the first end after the last dispatch (2.1 s),
        // A's third request at 3.0 s (B's second, which ended at 2.1 s, triggered that dispatch).
        assert_eq!((st.start_us, st.end_us), (100_000, 3_000_000));
        assert_eq!(s.concurrency.offered_mean_milli, 2_000);
        assert_eq!(s.concurrency.achieved_max, 2);
        assert_eq!(s.concurrency.window, "steady");
    }

    #[test]
    fn http1_connection_cap_is_named() {
        // c=8 over HTTP/1.1: wire timing shows only 6 on the wire. The page sees the first
        // six end 50 ms late (a busy event loop) while the queued two are already on the
        // wire: achieved concurrency follows the wire (responseEnd), not the page.
        let mut records = Vec::new();
        for i in 0..8u32 {
            let mut r = rec(i, 0, &[(500_000, 1), (900_000, 1)], 1_050_000);
            if i >= 6 {
                r.wire = Some(WireTiming {
                    connect_start_us: 1_000_000,
                    request_start_us: 1_000_000,
                    response_start_us: 1_400_000,
                    response_end_us: 2_000_000,
                });
                r.chunks = vec![
                    TokenChunk {
                        t_us: 1_500_000,
                        tokens: 1,
                    },
                    TokenChunk {
                        t_us: 1_900_000,
                        tokens: 1,
                    },
                ];
                r.t_done_us = Some(2_000_000);
            } else {
                r.wire = Some(WireTiming {
                    connect_start_us: 10,
                    request_start_us: 10,
                    response_start_us: 400_000,
                    response_end_us: 1_000_000,
                });
            }
            r.protocol = Some("http/1.1".into());
            records.push(r);
        }
        let summary = summarize(
            &records,
            &plan(vec![LoadStep::Closed { concurrency: 8 }], 0, 8),
        )
        .expect("summary");
        assert_eq!(summary.steps[0].concurrency.achieved_max, 6);
        let env = ClientEnv {
            timer_resolution_us: 5,
            cross_origin_isolated: true,
            event_loop_lag_p99_us: 100,
            event_loop_lag_max_us: 500,
            host: None,
            clock_epoch_us: None,
            ..Default::default()
        };
        let v = client_verdict(&records, &summary, env, false);
        assert!(v.invalid);
        assert!(
            v.findings[0].contains("at most 6 connections"),
            "{:?}",
            v.findings
        );
        assert_eq!(v.protocols, BTreeMap::from([("http/1.1".to_owned(), 8)]));
        // Same run over h2 with everything on the wire: valid.
        let h2: Vec<RequestRecord> = records
            .iter()
            .map(|r| RequestRecord {
                protocol: Some("h2".into()),
                wire: Some(WireTiming {
                    connect_start_us: 0,
                    request_start_us: 0,
                    response_start_us: 1,
                    response_end_us: 0,
                }),
                ..r.clone()
            })
            .collect();
        let s2 = summarize(&h2, &plan(vec![LoadStep::Closed { concurrency: 8 }], 0, 8))
            .expect("summary");
        assert!(!client_verdict(&h2, &s2, env, false).invalid);
        // A cleartext endpoint is HTTP/1.1 even when no protocol was exposed.
        let unknown: Vec<RequestRecord> = h2
            .iter()
            .map(|r| RequestRecord {
                protocol: None,
                wire: None,
                ..r.clone()
            })
            .collect();
        let s3 = summarize(
            &unknown,
            &plan(vec![LoadStep::Closed { concurrency: 8 }], 0, 8),
        )
        .expect("summary");
        assert!(!client_verdict(&unknown, &s3, env, false).invalid);
        assert!(client_verdict(&unknown, &s3, env, true).invalid);
        let laggy = ClientEnv {
            event_loop_lag_p99_us: 50_000,
            ..env
        };
        assert!(client_verdict(&h2, &s2, laggy, false).invalid);
    }

    #[test]
    fn a_host_that_stopped_reading_wire_timing_says_so_and_blames_no_server() {
        // A worker run of 8 h2 requests at c=4 whose host read Resource Timing for the
        // first 4 only: the later 4 have no protocol and no wire timing.
        let records: Vec<RequestRecord> = (0..8u32)
            .map(|i| {
                let t = u64::from(i / 4) * 1_100_000;
                let mut r = rec(i, t, &[(t + 500_000, 1), (t + 900_000, 1)], t + 1_000_000);
                if i < 4 {
                    r.protocol = Some("h2".into());
                    r.wire = Some(WireTiming {
                        connect_start_us: t,
                        request_start_us: t + 10,
                        response_start_us: t + 400_000,
                        response_end_us: t + 1_000_000,
                    });
                } else {
                    r.protocol = None;
                    r.wire = None;
                }
                r
            })
            .collect();
        let summary = summarize(
            &records,
            &plan(vec![LoadStep::Closed { concurrency: 4 }], 0, 8),
        )
        .expect("summary");
        let env = ClientEnv {
            timer_resolution_us: 5,
            cross_origin_isolated: true,
            event_loop_lag_p99_us: 100,
            event_loop_lag_max_us: 500,
            host: Some(RunHost::Worker),
            clock_epoch_us: None,
            wire_timing_read: Some(4),
        };
        let v = client_verdict(&records, &summary, env, false);
        assert!(!v.invalid, "{:?}", v.findings);
        assert_eq!(v.protocols, BTreeMap::from([("h2".to_owned(), 4)]));
        assert_eq!(v.findings.len(), 1, "{:?}", v.findings);
        assert!(v.findings[0].contains("first 4 requests only"));
        // The same records from a host that read every entry: the server hid them.
        let all = ClientEnv {
            wire_timing_read: None,
            ..env
        };
        let v = client_verdict(&records, &summary, all, false);
        assert_eq!(v.protocols.get("unknown"), Some(&4));
        assert!(v.findings.iter().any(|f| f.contains("Timing-Allow-Origin")));
        assert!(!v.findings.iter().any(|f| f.contains("first 4 requests")));
    }

    #[test]
    fn each_host_is_judged_by_its_own_limits() {
        // c=8 over http:// (HTTP/1.1), all 8 on the wire at once: a native client opens a
        // connection per request and achieved its load; a browser would have had at most 6.
        let records: Vec<RequestRecord> = (0..8u32)
            .map(|i| {
                let mut r = rec(i, 0, &[(500_000, 1), (900_000, 1)], 1_000_000);
                r.protocol = Some("http/1.1".into());
                r.wire = Some(WireTiming {
                    connect_start_us: 0,
                    request_start_us: 0,
                    response_start_us: 400_000,
                    response_end_us: 1_000_000,
                });
                r
            })
            .collect();
        let summary = summarize(
            &records,
            &plan(vec![LoadStep::Closed { concurrency: 8 }], 0, 8),
        )
        .expect("summary");
        assert_eq!(summary.steps[0].concurrency.achieved_max, 8);
        let env = |host| ClientEnv {
            timer_resolution_us: 1,
            cross_origin_isolated: false,
            event_loop_lag_p99_us: 100,
            event_loop_lag_max_us: 500,
            host: Some(host),
            clock_epoch_us: None,
            ..Default::default()
        };
        let native = client_verdict(&records, &summary, env(RunHost::Native), true);
        assert!(!native.invalid, "{:?}", native.findings);
        assert!(native.findings.is_empty(), "{:?}", native.findings);
        for host in [RunHost::Worker, RunHost::MainThread] {
            let v = client_verdict(&records, &summary, env(host), true);
            assert!(v.invalid, "{host:?}");
            assert!(v.findings[0].contains("at most 6 connections"), "{v:?}");
            // A browser's timers are coarse without isolation; a native host's are not.
            assert!(v
                .findings
                .iter()
                .any(|f| f.contains("cross-origin isolated")));
        }
        // A native host that did not reach its load is still judged on what was on the wire.
        let short: Vec<RequestRecord> = records
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if r.index >= 6 {
                    if let Some(w) = r.wire.as_mut() {
                        w.request_start_us = 1_000_000;
                        w.response_start_us = 1_400_000;
                        w.response_end_us = 2_000_000;
                    }
                }
                r
            })
            .collect();
        let s = summarize(
            &short,
            &plan(vec![LoadStep::Closed { concurrency: 8 }], 0, 8),
        )
        .expect("summary");
        let v = client_verdict(&short, &s, env(RunHost::Native), true);
        assert!(v.invalid, "{:?}", v.findings);
        assert!(
            v.findings[0].contains("at most 6 requests were on the wire"),
            "{v:?}"
        );
    }

    #[test]
    fn goodput_counts_requests_meeting_every_slo() {
        let records = vec![
            rec(0, 0, &[(100_000, 1), (200_000, 1)], 210_000),
            rec(1, 0, &[(300_000, 1), (400_000, 1)], 410_000),
            rec(2, 0, &[(100_000, 1), (900_000, 1)], 910_000),
        ];
        let mut p = plan(vec![LoadStep::Closed { concurrency: 3 }], 0, 3);
        p.slo = Some(Slo {
            ttft_us: Some(200_000),
            tpot_us: Some(150_000),
            e2e_us: None,
        });
        let s = &summarize(&records, &p).expect("summary").steps[0];
        let g = s.goodput.expect("goodput");
        assert_eq!((g.met, g.judged), (1, 3));
        // 1 request over the 0.91 s measured window.
        assert_eq!(g.rps_milli, 1_099);
    }

    #[test]
    fn sweep_steps_are_separate() {
        let mut a = rec(0, 0, &[(10, 1), (20, 1)], 30);
        a.step = 0;
        let mut b = rec(1, 100, &[(110, 1), (130, 1)], 140);
        b.step = 1;
        let s = summarize(
            &[a, b],
            &plan(
                vec![
                    LoadStep::Closed { concurrency: 1 },
                    LoadStep::Closed { concurrency: 2 },
                ],
                0,
                10,
            ),
        )
        .expect("summary");
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[1].tpot_us.map(|d| d.p50), Some(20));
        assert_eq!(s.steps[1].load, LoadStep::Closed { concurrency: 2 });
    }

    #[test]
    fn prompt_attainment_reports_differences() {
        let mut r = rec(0, 0, &[(10, 1), (20, 1)], 30);
        r.usage = Some(Usage {
            prompt_tokens: 97,
            completion_tokens: 2,
            cached_tokens: None,
            reasoning_tokens: None,
        });
        let s = summarize(&[r], &plan(vec![LoadStep::Closed { concurrency: 1 }], 0, 1))
            .expect("summary");
        assert_eq!(
            s.steps[0].prompt_len,
            Attainment {
                known: 1,
                exact: 0,
                requested_total: 100,
                achieved_total: 97,
                min_diff: -3,
                max_diff: -3
            }
        );
    }
}
