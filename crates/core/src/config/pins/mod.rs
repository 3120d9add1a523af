//! The pins (docs/DEFINITIONS.md §1): the typed run configuration, built from raw form input by
//! `TryFrom`, so that a run whose configuration is not fully pinned cannot be expressed.
//!
//! Every value carries its [`Provenance`]. "Undisclosed" is a legal value only for
//! server-side facts the client cannot know, and only when typed explicitly.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::decimal::bounded;
use crate::dialect::{Dialect, LengthEnforcement, ReasoningMode, ReasoningRequest};

mod example;
mod fit;
mod form;
mod parse;
mod raw;

pub use example::{Pins, PinsError};
pub use fit::*;
pub use form::*;
pub use parse::*;
pub use raw::*;

/// Where a value came from.
///
/// Read through [`ProvenanceWire`], a flat struct: serde's reader of an internally tagged
/// enum buffers every member first and costs the card page kilobytes per variant; the
/// flat reader refuses the same documents (unknown kinds, members of another kind).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "ProvenanceWire"
)]
pub enum Provenance {
    /// Typed (or chosen from a preset) by the user.
    Declared {},
    /// Read from the endpoint.
    Probed {
        /// The URL that was read.
        url: String,
        /// The field that held the value.
        field: String,
    },
    /// Observed during the run.
    Measured {
        /// What was observed.
        what: String,
    },
    /// From pinbench's table of hosted APIs (`core::vendors`): what that vendor speaks
    /// and what it never discloses.
    Vendor {
        /// The vendor.
        vendor: String,
        /// Why the value is what it is.
        why: String,
    },
}

/// The members a provenance may have, as read (see [`Provenance`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceWire {
    kind: String,
    url: Option<String>,
    field: Option<String>,
    what: Option<String>,
    vendor: Option<String>,
    why: Option<String>,
}

impl TryFrom<ProvenanceWire> for Provenance {
    type Error = String;

    fn try_from(w: ProvenanceWire) -> Result<Self, String> {
        let ProvenanceWire {
            kind,
            url,
            field,
            what,
            vendor,
            why,
        } = w;
        let p = match (kind.as_str(), url, field, what, vendor, why) {
            ("declared", None, None, None, None, None) => Provenance::Declared {},
            ("probed", Some(url), Some(field), None, None, None) => {
                Provenance::Probed { url, field }
            }
            ("measured", None, None, Some(what), None, None) => Provenance::Measured { what },
            ("vendor", None, None, None, Some(vendor), Some(why)) => {
                Provenance::Vendor { vendor, why }
            }
            _ => {
                return Err(kind_error(
                    "a provenance",
                    &kind,
                    &[
                        ("declared", &[]),
                        ("probed", &["url", "field"]),
                        ("measured", &["what"]),
                        ("vendor", &["vendor", "why"]),
                    ],
                ))
            }
        };
        Ok(p)
    }
}

use crate::json::kind_error;

/// The members a length distribution may have, as read (see [`ProvenanceWire`] for why).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LengthDistWire {
    kind: String,
    tokens: Option<u32>,
    mean: Option<u32>,
    std: Option<u32>,
    min: Option<u32>,
    max: Option<u32>,
}

impl TryFrom<LengthDistWire> for LengthDist {
    type Error = String;

    fn try_from(w: LengthDistWire) -> Result<Self, String> {
        Ok(
            match (w.kind.as_str(), w.tokens, w.mean, w.std, w.min, w.max) {
                ("fixed", Some(tokens), None, None, None, None) => LengthDist::Fixed { tokens },
                ("trace", None, None, None, None, None) => LengthDist::Trace {},
                ("dataset", None, None, None, None, None) => LengthDist::Dataset {},
                ("dataset_text", None, None, None, None, None) => LengthDist::DatasetText {},
                ("uniform", None, None, None, Some(min), Some(max)) => {
                    LengthDist::Uniform { min, max }
                }
                ("normal_clipped", None, Some(mean), Some(std), Some(min), Some(max)) => {
                    LengthDist::NormalClipped {
                        mean,
                        std,
                        min,
                        max,
                    }
                }
                _ => {
                    return Err(kind_error(
                        "a length distribution",
                        &w.kind,
                        &[
                            ("fixed", &["tokens"]),
                            ("trace", &[]),
                            ("dataset", &[]),
                            ("dataset_text", &[]),
                            ("uniform", &["min", "max"]),
                            ("normal_clipped", &["mean", "std", "min", "max"]),
                        ],
                    ))
                }
            },
        )
    }
}

/// The members an arrival process may have, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalWire {
    kind: String,
    shape_milli: Option<u32>,
}

impl TryFrom<ArrivalWire> for Arrival {
    type Error = String;

    fn try_from(w: ArrivalWire) -> Result<Self, String> {
        Ok(match (w.kind.as_str(), w.shape_milli) {
            ("poisson", None) => Arrival::Poisson {},
            ("gamma", Some(shape_milli)) => Arrival::Gamma { shape_milli },
            ("trace", None) => Arrival::Trace {},
            _ => {
                return Err(kind_error(
                    "an arrival",
                    &w.kind,
                    &[
                        ("poisson", &[]),
                        ("gamma", &["shape_milli"]),
                        ("trace", &[]),
                    ],
                ))
            }
        })
    }
}

/// The members a load step may have, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadStepWire {
    kind: String,
    concurrency: Option<u32>,
    rate_milli_rps: Option<u64>,
    arrival: Option<Arrival>,
    in_flight_cap: Option<u32>,
}

impl TryFrom<LoadStepWire> for LoadStep {
    type Error = String;

    fn try_from(w: LoadStepWire) -> Result<Self, String> {
        Ok(
            match (
                w.kind.as_str(),
                w.concurrency,
                w.rate_milli_rps,
                w.arrival,
                w.in_flight_cap,
            ) {
                ("closed", Some(concurrency), None, None, None) => LoadStep::Closed { concurrency },
                ("open", None, Some(rate_milli_rps), Some(arrival), Some(in_flight_cap)) => {
                    LoadStep::Open {
                        rate_milli_rps,
                        arrival,
                        in_flight_cap,
                    }
                }
                _ => {
                    return Err(kind_error(
                        "a load step",
                        &w.kind,
                        &[
                            ("closed", &["concurrency"]),
                            ("open", &["rate_milli_rps", "arrival", "in_flight_cap"]),
                        ],
                    ))
                }
            },
        )
    }
}

/// The members a window span may have, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanWire {
    kind: String,
    count: Option<u32>,
    ms: Option<u64>,
}

impl TryFrom<SpanWire> for Span {
    type Error = String;

    fn try_from(w: SpanWire) -> Result<Self, String> {
        Ok(match (w.kind.as_str(), w.count, w.ms) {
            ("requests", Some(count), None) => Span::Requests { count },
            ("duration", None, Some(ms)) => Span::Duration { ms },
            _ => {
                return Err(kind_error(
                    "a window span",
                    &w.kind,
                    &[("requests", &["count"]), ("duration", &["ms"])],
                ))
            }
        })
    }
}

impl Default for Provenance {
    /// [`Provenance::Declared`].
    fn default() -> Self {
        Provenance::Declared {}
    }
}

/// A value with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pinned<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub provenance: Provenance,
}

/// [`Pinned`] as JSON holds it, its value still as text: one reader of the wrapper for
/// every pin, rather than one derived reader per value type (about twenty of them, a few
/// KB gzip in each wasm bundle).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinnedWire {
    value: Box<serde_json::value::RawValue>,
    provenance: Provenance,
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Pinned<T> {
    /// Reads `{"value": …, "provenance": …}` (nothing else), then the value with `T`'s own
    /// reader; a refused value is named as `value: …`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = PinnedWire::deserialize(d)?;
        let value = serde_json::from_str(w.value.get())
            .map_err(|e| serde::de::Error::custom(format_args!("value: {e}")))?;
        Ok(Pinned {
            value,
            provenance: w.provenance,
        })
    }
}

/// A server-side fact: a value, or explicitly undisclosed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disclosure<T> {
    /// Known value.
    Value(T),
    /// The server does not say, and the user chose "undisclosed" explicitly.
    Undisclosed,
}

impl<T> Disclosure<T> {
    /// The value, if disclosed.
    pub fn known(&self) -> Option<&T> {
        match self {
            Disclosure::Value(v) => Some(v),
            Disclosure::Undisclosed => None,
        }
    }
}

impl<T: fmt::Display> fmt::Display for Disclosure<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disclosure::Value(v) => v.fmt(f),
            Disclosure::Undisclosed => f.write_str("undisclosed"),
        }
    }
}

/// A distribution of lengths in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "LengthDistWire"
)]
pub enum LengthDist {
    /// Every request has this length.
    Fixed {
        /// Tokens.
        tokens: u32,
    },
    /// Each request has its trace row's length (a replay: [`RunConfig::trace`]).
    Trace {},
    /// Each request has the lengths of a dataset row ([`RunConfig::dataset`]); its text is
    /// synthetic.
    Dataset {},
    /// A prompt only: each request sends a dataset row's own prompt text (ShareGPT), whose
    /// length the endpoint's `/tokenize` counted.
    DatasetText {},
    /// Uniform over `[min, max]`.
    Uniform {
        /// Smallest.
        min: u32,
        /// Largest.
        max: u32,
    },
    /// Normal with `mean` and `std`, clipped to `[min, max]`.
    NormalClipped {
        /// Mean.
        mean: u32,
        /// Standard deviation.
        std: u32,
        /// Smallest.
        min: u32,
        /// Largest.
        max: u32,
    },
}

impl LengthDist {
    /// Whether a dataset's rows give it ([`RunConfig::dataset`]).
    pub fn is_dataset(&self) -> bool {
        matches!(self, LengthDist::Dataset {} | LengthDist::DatasetText {})
    }

    /// The smallest length it can produce.
    pub fn min(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => 1,
            LengthDist::Uniform { min, .. } | LengthDist::NormalClipped { min, .. } => min,
        }
    }

    /// The largest length it can produce.
    pub fn max(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            // The trace's own longest is in its pin ([`TraceRef`]); a dataset's rows are
            // counted by the host ([`crate::dataset`]).
            LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => 0,
            LengthDist::Uniform { max, .. } | LengthDist::NormalClipped { max, .. } => max,
        }
    }

    /// The mean length (ignoring clipping for the normal).
    pub fn mean(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => 0,
            LengthDist::Uniform { min, max } => min + (max - min) / 2,
            LengthDist::NormalClipped { mean, .. } => mean,
        }
    }

    /// Draws a length from a uniform sample `u` in [0, 1) and a standard-normal sample `z`
    /// (randomness is the caller's).
    pub fn sample(&self, u: f64, z: f64) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            // A replay or a dataset takes each row's length, never a draw.
            LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => 1,
            LengthDist::Uniform { min, max } => {
                let span = f64::from(max - min + 1);
                (min + (bounded(u, 0.0, 1.0) * span) as u32).min(max)
            }
            LengthDist::NormalClipped {
                mean,
                std,
                min,
                max,
            } => {
                let v = f64::from(mean) + z * f64::from(std);
                bounded(v.round(), f64::from(min), f64::from(max)) as u32
            }
        }
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LengthDist::Fixed { tokens } => write!(f, "{tokens}"),
            LengthDist::Trace {} => f.write_str("trace"),
            LengthDist::Dataset {} => f.write_str("dataset"),
            LengthDist::DatasetText {} => f.write_str("dataset_text"),
            LengthDist::Uniform { min, max } => write!(f, "uniform({min},{max})"),
            LengthDist::NormalClipped {
                mean,
                std,
                min,
                max,
            } => {
                write!(f, "normal({mean},{std},{min},{max})")
            }
        }
    }
}

/// How prompt lengths are made exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptExactness {
    /// Built with the server's `/tokenize`: exact.
    ServerTokenizer,
    /// Calibrated from `usage.prompt_tokens` during warm-up.
    UsageCalibrated,
    /// Estimated from characters: flagged as approximate.
    Approximate,
}

/// Arrival process of an open loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "ArrivalWire"
)]
pub enum Arrival {
    /// Exponential inter-arrival times.
    Poisson {},
    /// Gamma inter-arrival times with this shape ×1000 (shape < 1 is burstier).
    Gamma {
        /// Shape parameter × 1000.
        shape_milli: u32,
    },
    /// The replayed trace's own arrival times ([`RunConfig::trace`]), scaled.
    Trace {},
}

/// One load level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "LoadStepWire"
)]
pub enum LoadStep {
    /// N streams, each sending its next request when the previous one ends.
    Closed {
        /// Concurrent streams.
        concurrency: u32,
    },
    /// Requests arrive at a rate, whatever the server does, up to a cap in flight.
    Open {
        /// Arrival rate, requests per 1000 s (i.e. req/s × 1000).
        rate_milli_rps: u64,
        /// Arrival process.
        arrival: Arrival,
        /// Most requests in flight at once; arrivals beyond it wait in the client.
        in_flight_cap: u32,
    },
}

impl LoadStep {
    /// Concurrency this step aims for (closed: N; open: the in-flight cap).
    pub fn max_concurrency(&self) -> u32 {
        match *self {
            LoadStep::Closed { concurrency } => concurrency,
            LoadStep::Open { in_flight_cap, .. } => in_flight_cap,
        }
    }
}

impl fmt::Display for LoadStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LoadStep::Closed { concurrency } => write!(f, "closed loop, c={concurrency}"),
            LoadStep::Open {
                rate_milli_rps,
                arrival,
                in_flight_cap,
            } => {
                let a = match arrival {
                    Arrival::Poisson {} => "Poisson".to_owned(),
                    Arrival::Gamma { shape_milli } => {
                        format!("gamma k={}", milli(u64::from(shape_milli)))
                    }
                    Arrival::Trace {} => "as the trace (mean rate)".to_owned(),
                };
                write!(
                    f,
                    "open loop, {} req/s {a}, cap {in_flight_cap}",
                    milli(rate_milli_rps)
                )
            }
        }
    }
}

/// Formats a ×1000 integer as a decimal.
pub fn milli(v: u64) -> String {
    if v % 1000 == 0 {
        format!("{}", v / 1000)
    } else {
        let s = format!("{}.{:03}", v / 1000, v % 1000);
        s.trim_end_matches('0').to_owned()
    }
}

/// The load: one step, or a sweep over several of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// The steps, run in order (one = no sweep).
    pub steps: Vec<LoadStep>,
    /// A request with no new byte for this long is abandoned as stalled, ms.
    pub stall_timeout_ms: u64,
}

impl Load {
    /// The steps as text, in order (`closed loop, c=1 → closed loop, c=4`).
    pub fn steps_text(&self) -> String {
        self.steps
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// KV capacity as the server states it (read through [`KvCapacityWire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "KvCapacityWire"
)]
pub enum KvCapacity {
    /// Tokens of KV cache.
    Tokens {
        /// Tokens.
        tokens: u64,
    },
    /// Only the fraction of GPU memory given to the engine is known (×1000).
    GpuMemoryUtilization {
        /// Fraction × 1000.
        milli: u32,
    },
}

/// The members a KV capacity may have, as read (see [`ProvenanceWire`] for why).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvCapacityWire {
    kind: String,
    tokens: Option<u64>,
    milli: Option<u32>,
}

impl TryFrom<KvCapacityWire> for KvCapacity {
    type Error = String;

    fn try_from(w: KvCapacityWire) -> Result<Self, String> {
        Ok(match (w.kind.as_str(), w.tokens, w.milli) {
            ("tokens", Some(tokens), None) => KvCapacity::Tokens { tokens },
            ("gpu_memory_utilization", None, Some(milli)) => {
                KvCapacity::GpuMemoryUtilization { milli }
            }
            _ => {
                return Err(kind_error(
                    "a KV capacity",
                    &w.kind,
                    &[
                        ("tokens", &["tokens"]),
                        ("gpu_memory_utilization", &["milli"]),
                    ],
                ))
            }
        })
    }
}

impl fmt::Display for KvCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KvCapacity::Tokens { tokens } => write!(f, "{tokens} tokens"),
            KvCapacity::GpuMemoryUtilization { milli: m } => {
                write!(f, "gpu-memory-utilization {}", milli(u64::from(m)))
            }
        }
    }
}

/// How the server runs prefill and decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseMode {
    /// Prefill and decode on the same workers, in separate steps.
    Colocated,
    /// Prefill and decode on different workers.
    Disaggregated,
    /// Prefill chunks mixed into decode steps.
    ChunkedPrefill,
    /// Not disclosed by the server.
    Undisclosed,
}

/// How the server batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduling {
    /// Requests join and leave the batch at every step.
    Continuous,
    /// A batch runs to completion before new requests start.
    Static,
    /// Not disclosed by the server.
    Undisclosed,
}

/// A window length: a number of requests (by dispatch order) or a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "SpanWire"
)]
pub enum Span {
    /// This many requests, in dispatch order.
    Requests {
        /// Count.
        count: u32,
    },
    /// Requests dispatched within this many ms.
    Duration {
        /// Milliseconds.
        ms: u64,
    },
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Span::Requests { count } => write!(f, "{count} requests"),
            Span::Duration { ms } => write!(f, "{} s", milli(ms)),
        }
    }
}

/// The windows of each load step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowPlan {
    /// Discarded at the start.
    pub warmup: Span,
    /// Measured.
    pub measured: Span,
    /// Load kept up after the measured window (so measured requests end under full load),
    /// then discarded.
    pub cooldown: Span,
}

/// Cache policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePolicy {
    /// A unique nonce per request (defeats prefix caching): before the prompt, or before
    /// its unique suffix when a prefix is shared.
    pub nonce_prefix: bool,
    /// A prefix shared by every request (or by each group of requests); `None` when every
    /// prompt is its own text. Absent in reports made before the pin existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix: Option<SharedPrefix>,
}

/// Pin 12: the conversation each load slot runs. One turn: independent requests. More:
/// the first turn is a prompt of the prompt-length pin (shared prefix and nonce
/// included); each later turn sends the whole history (every earlier message and the
/// answer actually received) and a new user message of the prompt length less the shared
/// prefix (sent once, at the start); the next turn follows the answer after the think
/// time. Concurrency (or an open loop's arrivals) counts conversations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Turns per conversation.
    pub turns: LengthDist,
    /// Between an answer's end and the next turn's request, ms.
    pub think_ms: u64,
}

impl Conversation {
    /// Independent single-turn requests.
    pub fn single() -> Self {
        Self {
            turns: LengthDist::Fixed { tokens: 1 },
            think_ms: 0,
        }
    }

    /// Whether a conversation may have more than one turn.
    pub fn is_multi_turn(&self) -> bool {
        self.turns.max() > 1
    }

    /// The longest prompt a conversation can send, tokens: the first prompt, then every
    /// later turn's answer and message (chat templates add a few per message).
    pub fn context_max(&self, prompt_max: u32, output_max: u32, prefix: u32) -> u32 {
        let later = self.turns.max().max(1) - 1;
        let message = prompt_max.saturating_sub(prefix).max(1);
        prompt_max.saturating_add(later.saturating_mul(message.saturating_add(output_max)))
    }
}

impl fmt::Display for Conversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.turns)?;
        if self.think_ms > 0 {
            write!(f, " think={}s", milli(self.think_ms))?;
        }
        Ok(())
    }
}

/// A replayed trace: which file (by its SHA-256), what it holds, and how it is replayed.
/// Its rows set each request's arrival (the trace's time since its first row, times the
/// scale, after the offset), prompt and output lengths, and (Mooncake) which 512-token
/// blocks of its prompt are shared with other rows. A row sent later than its due time
/// is recorded as late (its intended time kept), never shifted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRef {
    /// A built-in slice's name, or the file's name.
    pub name: String,
    /// Built in (no file needed) or a file the host reads.
    pub builtin: bool,
    /// The file's format.
    pub format: crate::trace::TraceFormat,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// Rows in the file (the offset skips the first ones).
    pub rows: u32,
    /// The file's first to last arrival, unscaled, µs.
    pub span_us: u64,
    /// Longest prompt in the file, tokens.
    pub input_max: u32,
    /// Longest output in the file, tokens.
    pub output_max: u32,
    /// Time scale × 1000 (500: twice as fast).
    pub scale_milli: u32,
    /// Rows before this time (unscaled, from the first row) are skipped, ms.
    pub offset_ms: u64,
}

impl TraceRef {
    /// The pin for `trace` replayed at `scale_milli` from `offset_ms`.
    pub fn of(
        name: &str,
        builtin: bool,
        trace: &crate::trace::Trace,
        scale_milli: u32,
        offset_ms: u64,
    ) -> Self {
        let rows = &trace.rows;
        Self {
            name: name.to_owned(),
            builtin,
            format: trace.format,
            sha256: trace.sha256.clone(),
            rows: u32::try_from(rows.len()).unwrap_or(u32::MAX),
            span_us: rows.last().map_or(0, |r| r.t_us),
            input_max: rows.iter().map(|r| r.input).max().unwrap_or(0),
            output_max: rows.iter().map(|r| r.output).max().unwrap_or(0),
            scale_milli,
            offset_ms,
        }
    }

    /// The offered rate, req/s × 1000: the file's mean, its rows over its scaled span.
    pub fn rate_milli_rps(&self) -> u64 {
        let span = self.span_us.saturating_mul(u64::from(self.scale_milli)) / 1000;
        if span == 0 {
            return u64::from(self.rows).saturating_mul(1000);
        }
        (u64::from(self.rows.saturating_sub(1)) * 1_000_000_000) / span
    }

    /// As the form writes it: `NAME scale=S offset=Ns` (a file: `file:NAME sha256=HEX
    /// format=F rows=N span_us=N input_max=N output_max=N`, what [`parse_trace`] reads).
    pub fn form_text(&self) -> String {
        let head = if self.builtin {
            self.name.clone()
        } else {
            format!(
                "file:{} sha256={} format={} rows={} span_us={} input_max={} output_max={}",
                self.name,
                self.sha256,
                self.format.wire(),
                self.rows,
                self.span_us,
                self.input_max,
                self.output_max
            )
        };
        format!(
            "{head} scale={} offset={}s",
            milli(u64::from(self.scale_milli)),
            milli(self.offset_ms)
        )
    }
}

impl fmt::Display for TraceRef {
    /// `replay of NAME (FORMAT, sha256 PREFIX…, N rows over S s) at scale X from +O s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay of {}{} ({}, sha256 {}…, {} rows over {} s) at time scale {} from +{} s",
            if self.builtin { "" } else { "file " },
            self.name,
            self.format.label(),
            self.sha256.get(..12).unwrap_or(&self.sha256),
            self.rows,
            milli(self.span_us / 1000),
            milli(u64::from(self.scale_milli)),
            milli(self.offset_ms)
        )
    }
}

/// A dataset whose rows give each request's prompt and output lengths (joint per row):
/// which file (by its SHA-256), its format and rows, and how many of them a run uses (the
/// first of the file's fixed order, [`crate::dataset::Dataset::order`], cycling). A
/// ShareGPT file's texts are counted by the endpoint's `/tokenize` before the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetRef {
    /// The file's name.
    pub name: String,
    /// The file's format.
    pub format: crate::dataset::DatasetFormat,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// Usable rows in the file.
    pub rows: u32,
    /// Rows a run uses (at most [`crate::dataset::MAX_SAMPLED`]).
    pub sampled: u32,
}

impl DatasetRef {
    /// The pin for a dataset file read by a host.
    pub fn of(name: &str, d: &crate::dataset::Dataset) -> Self {
        Self {
            name: name
                .chars()
                .map(|c| if c.is_whitespace() { '_' } else { c })
                .collect(),
            format: d.format,
            sha256: d.sha256.clone(),
            rows: u32::try_from(d.rows.len()).unwrap_or(u32::MAX),
            sampled: u32::try_from(d.sampled()).unwrap_or(u32::MAX),
        }
    }

    /// As the form writes it: `file:NAME sha256=HEX format=F rows=N sampled=N` (what
    /// [`parse_dataset`] reads).
    pub fn form_text(&self) -> String {
        format!(
            "file:{} sha256={} format={} rows={} sampled={}",
            self.name,
            self.sha256,
            self.format.wire(),
            self.rows,
            self.sampled
        )
    }
}

impl fmt::Display for DatasetRef {
    /// `lengths of dataset NAME (FORMAT, sha256 PREFIX…, N of M rows[, counted by …])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lengths of dataset {} ({}, sha256 {}…, {} of its {} rows in the file's fixed order{})",
            self.name,
            self.format.label(),
            self.sha256.get(..12).unwrap_or(&self.sha256),
            self.sampled,
            self.rows,
            match self.format {
                crate::dataset::DatasetFormat::ShareGpt => ", counted by the server's /tokenize",
                crate::dataset::DatasetFormat::LengthsCsv => "",
            }
        )
    }
}

/// The rows a replay sends: those at or after `offset_ms`, times from the first of them.
pub fn replay_rows(trace: &crate::trace::Trace, offset_ms: u64) -> Vec<crate::trace::TraceRow> {
    let from = offset_ms.saturating_mul(1000);
    let rows: Vec<_> = trace
        .rows
        .iter()
        .filter(|r| r.t_us >= from)
        .cloned()
        .collect();
    let t0 = rows.first().map_or(0, |r| r.t_us);
    rows.into_iter()
        .map(|mut r| {
            r.t_us -= t0;
            r
        })
        .collect()
}

/// Words in a nonce (32 choices each: 60 bits); one token each on common tokenizers.
pub const NONCE_WORDS: u32 = 12;

/// A shared prefix: the first `tokens` of every prompt are one of `groups` texts (request
/// `i` takes text `i mod groups`), drawn from the run's random bytes, so a run starts with
/// none of them in the server's cache. What a prefix cache can reuse is that prefix: the
/// rest of the prompt (after the nonce, when pinned) is unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// Prefix length in tokens, counted as a prompt of its own (BOS and, for chat, the
    /// template included).
    pub tokens: u32,
    /// Distinct prefixes (1: one prefix for every request).
    pub groups: u32,
}

impl fmt::Display for SharedPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.groups == 1 {
            write!(f, "{}", self.tokens)
        } else {
            write!(f, "{}x{}", self.tokens, self.groups)
        }
    }
}

/// Sampling fields sent with every request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// Temperature.
    pub temperature: f64,
    /// Other fields, sent verbatim.
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// The endpoint (never with credentials).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// Base URL, without credentials, query or a trailing `/v1`.
    pub base_url: String,
    /// API dialect.
    pub dialect: Dialect,
}

/// Pin 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPin {
    /// API model id.
    pub id: Pinned<String>,
    /// Parameter count.
    pub params: Pinned<Disclosure<u64>>,
    /// Weight precision / quantization.
    pub quantization: Pinned<Disclosure<String>>,
    /// Serving engine and version.
    pub engine: Pinned<Disclosure<String>>,
}

/// Pin 5.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvPin {
    /// Max model length (context), tokens.
    pub max_model_len: Pinned<Disclosure<u32>>,
    /// KV capacity.
    pub capacity: Pinned<Disclosure<KvCapacity>>,
    /// Max concurrent sequences.
    pub max_num_seqs: Pinned<Disclosure<u32>>,
}

/// A fully pinned run configuration. Only [`TryFrom<&RawConfig>`] builds one from input
/// (or a report's `config`, read back as it was written).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Where requests go.
    pub endpoint: Endpoint,
    /// Pin 1: model.
    pub model: ModelPin,
    /// Pin 2: prompt lengths.
    pub prompt_len: Pinned<LengthDist>,
    /// Pin 2: how prompt lengths are made exact.
    pub prompt_exactness: Pinned<PromptExactness>,
    /// Pin 3: output lengths.
    pub output_len: Pinned<LengthDist>,
    /// Pin 3: how output lengths are enforced.
    pub output_enforcement: Pinned<LengthEnforcement>,
    /// Pin 4: load.
    pub load: Pinned<Load>,
    /// Pin 5: KV budget.
    pub kv: KvPin,
    /// Pin 6: prefill/decode arrangement.
    pub phases: Pinned<PhaseMode>,
    /// Pin 7: scheduling.
    pub scheduling: Pinned<Scheduling>,
    /// Pin 8: windows.
    pub window: Pinned<WindowPlan>,
    /// Pin 9: cache policy.
    pub cache: Pinned<CachePolicy>,
    /// Pin 10: sampling.
    pub sampling: Pinned<Sampling>,
    /// Pin 11: reasoning — none, visible or hidden, with the effort or budget sent.
    /// Absent only in reports made before the pin existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Pinned<ReasoningRequest>>,
    /// Pin 12: turns per conversation and think time. Absent in reports made before the
    /// pin existed (single turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Pinned<Conversation>>,
    /// Pin 4 (load), a replay: the trace whose rows set arrivals and lengths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Pinned<TraceRef>>,
    /// Pins 2 and 3 (prompt and output lengths) taken from a dataset's rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Pinned<DatasetRef>>,
}

impl RunConfig {
    /// What the run asks of a reasoning model (nothing, for a configuration made before
    /// the reasoning pin).
    pub fn reasoning_request(&self) -> ReasoningRequest {
        self.reasoning
            .as_ref()
            .map_or_else(ReasoningRequest::none, |p| p.value.clone())
    }

    /// The conversation each slot runs (single turns, for a configuration made before
    /// the pin).
    pub fn conversation(&self) -> Conversation {
        self.conversation
            .as_ref()
            .map_or_else(Conversation::single, |p| p.value)
    }
}

/// The pins of docs/DEFINITIONS.md §1 (plus the endpoint itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinId {
    /// The endpoint URL and dialect.
    Endpoint,
    /// 1.
    Model,
    /// 2.
    PromptLength,
    /// 3.
    OutputLength,
    /// 4.
    Load,
    /// 5.
    KvBudget,
    /// 6.
    PrefillDecode,
    /// 7.
    Scheduling,
    /// 8.
    Window,
    /// 9.
    CachePolicy,
    /// 10.
    Sampling,
    /// 11.
    Reasoning,
    /// 12.
    Conversation,
}

impl PinId {
    /// Human name.
    pub fn label(self) -> &'static str {
        match self {
            PinId::Endpoint => "endpoint",
            PinId::Model => "model",
            PinId::PromptLength => "prompt length",
            PinId::OutputLength => "output length",
            PinId::Load => "load",
            PinId::KvBudget => "KV cache budget",
            PinId::PrefillDecode => "prefill/decode mix",
            PinId::Scheduling => "scheduling",
            PinId::Window => "window",
            PinId::CachePolicy => "cache policy",
            PinId::Sampling => "sampling",
            PinId::Reasoning => "reasoning",
            PinId::Conversation => "conversation",
        }
    }
}

/// The name a value has in the report and the form (its serde name, e.g. `ignore_eos`,
/// `chunked_prefill`), for text shown to users — never a `Debug` rendering.
pub fn wire_name<T: Serialize>(v: &T) -> String {
    // Through its text, not `to_value`: one serialiser per type in the wasm.
    let Ok(text) = serde_json::to_string(v) else {
        return String::new();
    };
    serde_json::from_str::<String>(&text).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Serialize + serde::de::DeserializeOwned + PartialEq + fmt::Debug>(v: T) {
        let text = serde_json::to_string(&v).expect("ser");
        let back: T = serde_json::from_str(&text).expect(&text);
        assert_eq!(back, v, "{text}");
    }

    /// Every variant of every tagged pin type reads back what it writes.
    #[test]
    fn tagged_pin_types_round_trip_every_variant() {
        round_trips(Provenance::Declared {});
        round_trips(Provenance::Probed {
            url: "u".into(),
            field: "f".into(),
        });
        round_trips(Provenance::Measured { what: "w".into() });
        round_trips(Provenance::Vendor {
            vendor: "v".into(),
            why: "w".into(),
        });
        // The flat reader refuses what the tagged one did.
        for bad in [
            r#"{"kind":"declared","url":"u"}"#,
            r#"{"kind":"probed","url":"u"}"#,
            r#"{"kind":"measured","what":"w","why":"y"}"#,
            r#"{"kind":"vendor","vendor":"v"}"#,
            r#"{"kind":"guessed"}"#,
            r#"{"kind":"declared","colour":"red"}"#,
            r#"{"kind":"measured","what":"a","what":"b"}"#,
            r#"{"url":"u","field":"f"}"#,
        ] {
            assert!(serde_json::from_str::<Provenance>(bad).is_err(), "{bad}");
        }
        round_trips(LengthDist::Fixed { tokens: 1 });
        round_trips(LengthDist::Uniform { min: 1, max: 2 });
        round_trips(LengthDist::NormalClipped {
            mean: 5,
            std: 1,
            min: 1,
            max: 9,
        });
        round_trips(Arrival::Poisson {});
        round_trips(Arrival::Gamma { shape_milli: 500 });
        round_trips(LoadStep::Closed { concurrency: 8 });
        round_trips(LoadStep::Open {
            rate_milli_rps: 2500,
            arrival: Arrival::Gamma { shape_milli: 700 },
            in_flight_cap: 64,
        });
        round_trips(KvCapacity::Tokens { tokens: 1 << 20 });
        round_trips(KvCapacity::GpuMemoryUtilization { milli: 900 });
        round_trips(Span::Requests { count: 3 });
        round_trips(Span::Duration { ms: 4000 });
    }

    /// What serde's internally tagged enums refused is still refused (through the flat
    /// wire structs), with the reason.
    #[test]
    fn tagged_pin_types_refuse_what_they_always_refused() {
        for (text, says) in [
            (r#"{"count":3}"#, "missing field `kind`"),
            (
                r#"{"kind":"forever"}"#,
                "unknown kind `forever` of a window span, expected one of `requests`, `duration`",
            ),
            (
                r#"{"kind":"requests"}"#,
                "a window span of kind `requests` has exactly the members `count`",
            ),
            (
                r#"{"kind":"requests","count":3,"ms":4}"#,
                "a window span of kind `requests` has exactly the members `count`",
            ),
            (
                r#"{"kind":"requests","count":3,"days":4}"#,
                "unknown field `days`",
            ),
            (
                r#"{"kind":"requests","count":3,"kind":"duration"}"#,
                "duplicate field `kind`",
            ),
            (
                r#"{"kind":"requests","count":3,"count":4}"#,
                "duplicate field `count`",
            ),
            (r#"{"kind":"requests","count":-1}"#, "invalid value"),
        ] {
            let e = serde_json::from_str::<Span>(text)
                .expect_err(text)
                .to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        let e = serde_json::from_str::<LoadStep>(
            r#"{"kind":"open","rate_milli_rps":1,"in_flight_cap":1,"arrival":{"kind":"gamma"}}"#,
        )
        .expect_err("nested")
        .to_string();
        assert!(
            e.contains("an arrival of kind `gamma` has exactly the members `shape_milli`"),
            "{e}"
        );
    }

    /// A fully pinned raw config (the "chat 128→128 at c=8" shape).
    pub fn full_raw() -> RawConfig {
        Pins::reference()
            .endpoint("http://127.0.0.1:8000/v1/")
            .with(&[
                ("model_id", "tiny"),
                ("model_params", "8B"),
                ("model_engine", "undisclosed"),
                ("prompt_exactness", "server_tokenizer"),
                ("stall_timeout_s", "30"),
                ("kv_capacity", "65536"),
                ("max_num_seqs", "256"),
                ("phases", "colocated"),
            ])
            .lengths(128, 128)
            .concurrency(8)
            .windows("8", "64 requests", "8")
            .raw()
            .expect("known fields")
    }

    #[test]
    fn a_full_form_pins_a_run() {
        let mut raw = full_raw();
        raw.max_model_len = RawField {
            text: "4096".into(),
            source: Provenance::Probed {
                url: "http://127.0.0.1:8000/v1/models".into(),
                field: "data[0].max_model_len".into(),
            },
        };
        let cfg = RunConfig::try_from(&raw).expect("pinned");
        assert_eq!(cfg.endpoint.base_url, "http://127.0.0.1:8000");
        assert_eq!(cfg.model.params.value, Disclosure::Value(8_000_000_000));
        assert_eq!(cfg.model.engine.value, Disclosure::Undisclosed);
        assert_eq!(
            cfg.load.value.steps,
            vec![LoadStep::Closed { concurrency: 8 }]
        );
        assert_eq!(cfg.load.value.stall_timeout_ms, 30_000);
        assert_eq!(cfg.window.value.measured, Span::Requests { count: 64 });
        assert!(matches!(
            cfg.kv.max_model_len.provenance,
            Provenance::Probed { .. }
        ));
        assert_eq!(cfg.kv.max_model_len.value, Disclosure::Value(4096));
        let json = serde_json::to_string(&cfg).expect("ser");
        let back: RunConfig = serde_json::from_str(&json).expect("de");
        assert_eq!(back, cfg);
    }

    #[test]
    fn every_missing_pin_is_named() {
        let err = RunConfig::try_from(&RawConfig::default()).expect_err("nothing pinned");
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        for must in [
            "endpoint_url",
            "model_id",
            "model_params",
            "prompt_tokens",
            "output_tokens",
            "load_mode",
            "max_model_len",
            "kv_capacity",
            "max_num_seqs",
            "phases",
            "scheduling",
            "warmup",
            "measured",
            "cooldown",
            "nonce_prefix",
            "temperature",
            "sampling_extra",
        ] {
            assert!(fields.contains(&must), "{must} not named in {fields:?}");
        }
        assert!(err.problems().iter().all(|p| p.problem == Problem::Missing));
        assert!(
            err.to_string()
                .contains("KV cache budget: kv capacity is missing"),
            "{err}"
        );
    }

    #[test]
    fn a_dataset_gives_both_lengths_and_is_pinned_by_its_file() {
        let d =
            crate::dataset::parse(b"input_tokens,output_tokens\n100,20\n30,4\n").expect("reads");
        let pin = DatasetRef::of("my lengths.csv", &d);
        assert_eq!(pin.name, "my_lengths.csv");
        assert_eq!(parse_dataset(&pin.form_text()), Some(pin.clone()));
        let mut raw = full_raw();
        raw.prompt_tokens = RawField::declared("dataset");
        raw.output_tokens = RawField::declared("dataset");
        raw.dataset = RawField::declared(pin.form_text());
        let cfg = RunConfig::try_from(&raw).expect("pinned");
        assert_eq!(cfg.dataset.as_ref().map(|d| &d.value), Some(&pin));
        assert!(form::applies(&raw, "dataset"));
        // Read back from its JSON, and the form it fills is the same.
        let back: RunConfig =
            crate::json::from_str(&serde_json::to_string(&cfg).expect("json")).expect("reads");
        assert_eq!(back, cfg);
        // One length from the dataset is both; the file is needed; no shared prefix.
        for (field, text, bad) in [
            ("output_tokens", "128", "output_tokens"),
            ("dataset", "", "dataset"),
            (
                "dataset",
                "file:x sha256=00 format=sharegpt rows=2 sampled=2",
                "dataset",
            ),
            (
                "dataset",
                &pin.form_text().replace("sampled=2", "sampled=1"),
                "dataset",
            ),
            ("shared_prefix", "2048", "shared_prefix"),
            ("turns", "5", "turns"),
        ] {
            let mut r = raw.clone();
            *r.field_mut(field).expect("field") = RawField::declared(text);
            let e = RunConfig::try_from(&r).expect_err(field);
            assert!(
                e.problems().iter().any(|p| p.field == bad),
                "{field}={text}: {e}"
            );
        }
        // The dataset's own prompts: only a file of texts has them, sent without a nonce;
        // the output is never `dataset_text`.
        let mut t = raw.clone();
        t.prompt_tokens = RawField::declared("dataset_text");
        t.nonce_prefix = RawField::declared("off");
        let e = RunConfig::try_from(&t).expect_err("a CSV has no text");
        assert!(
            e.problems().iter().any(|p| p.field == "prompt_tokens"),
            "{e}"
        );
        let g = crate::dataset::parse(
            br#"[{"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a"}]}]"#,
        )
        .expect("reads");
        t.dataset = RawField::declared(DatasetRef::of("g.json", &g).form_text());
        let cfg = RunConfig::try_from(&t).expect("pinned");
        assert_eq!(cfg.prompt_len.value, LengthDist::DatasetText {});
        for (field, text) in [("nonce_prefix", "on"), ("output_tokens", "dataset_text")] {
            let mut r = t.clone();
            *r.field_mut(field).expect("field") = RawField::declared(text);
            let e = RunConfig::try_from(&r).expect_err(field);
            assert!(
                e.problems().iter().any(|p| p.field == field),
                "{field}: {e}"
            );
        }
        // Without a dataset, `dataset` is not a length.
        let mut r = full_raw();
        r.prompt_tokens = RawField::declared("128");
        r.dataset = RawField::declared(pin.form_text());
        assert_eq!(RunConfig::try_from(&r).expect("pinned").dataset, None);
        assert!(!form::applies(&r, "dataset"));
    }

    #[test]
    fn one_missing_pin_blocks_the_run() {
        for (name, _) in RawConfig::FIELDS {
            let mut raw = full_raw();
            raw.field_mut(name).expect("field").text.clear();
            let optional = matches!(
                *name,
                "rate_rps" | "arrival" | "in_flight_cap" | "trace" | "dataset"
            );
            match RunConfig::try_from(&raw) {
                Ok(_) => assert!(optional, "{name} empty still pinned a run"),
                Err(e) => {
                    assert!(!optional, "{name} is not needed in closed loop");
                    assert_eq!(e.problems().len(), 1);
                    assert_eq!(e.problems()[0].field, *name);
                }
            }
        }
    }

    #[test]
    fn a_replay_takes_its_lengths_and_arrivals_from_its_trace() {
        let replay = |extra: &[(&str, &str)]| {
            let mut raw = full_raw();
            for (k, v) in [
                ("load_mode", "replay"),
                ("trace", "mooncake-conversation-60 scale=0.5 offset=0s"),
                ("in_flight_cap", "8"),
                ("prompt_tokens", "trace"),
                ("output_tokens", "trace"),
                ("nonce_prefix", "off"),
            ]
            .iter()
            .chain(extra)
            {
                *raw.field_mut(k).expect("field") = RawField::declared(*v);
            }
            RunConfig::try_from(&raw)
        };
        let cfg = replay(&[]).expect("pinned");
        let t = &cfg.trace.as_ref().expect("a replay").value;
        assert_eq!((t.rows, t.span_us), (60, 15_000_000));
        assert_eq!((t.input_max, t.output_max), (87_169, 929));
        assert_eq!(t.scale_milli, 500);
        // 59 gaps over 7.5 s.
        assert_eq!(t.rate_milli_rps(), 7_866);
        assert_eq!(
            cfg.load.value.steps,
            vec![LoadStep::Open {
                rate_milli_rps: 7_866,
                arrival: Arrival::Trace {},
                in_flight_cap: 8
            }]
        );
        // An offset is pinned beside the file's facts (they describe the file); past the
        // file's last row it leaves nothing to replay and is refused.
        let later = replay(&[("trace", "mooncake-conversation-60 offset=10s")]).expect("pinned");
        let later = later.trace.expect("a replay").value;
        assert_eq!((later.rows, later.offset_ms), (60, 10_000));
        for (field, text) in [
            ("prompt_tokens", "128"),
            ("output_tokens", "uniform(1,9)"),
            ("nonce_prefix", "on"),
            ("shared_prefix", "2048"),
            ("turns", "5"),
            ("trace", "no-such-trace"),
            ("trace", "mooncake-conversation-60 scale=0"),
            ("trace", "mooncake-conversation-60 offset=15.001s"),
            (
                "trace",
                "file:x.jsonl sha256=12 format=mooncake rows=1 span_us=0 input_max=1 output_max=1",
            ),
        ] {
            let e = replay(&[(field, text)]).expect_err(text);
            assert_eq!(e.problems().len(), 1, "{field}={text}: {e}");
            assert_eq!(e.problems()[0].field, field);
        }
        // Outside a replay no length comes from a trace.
        let mut raw = full_raw();
        *raw.field_mut("prompt_tokens").expect("field") = RawField::declared("trace");
        let e = RunConfig::try_from(&raw).expect_err("not a replay");
        assert_eq!(e.problems()[0].field, "prompt_tokens");
    }

    #[test]
    fn invalid_values_are_explained() {
        let cases = [
            ("endpoint_url", "ftp://x"),
            ("endpoint_url", "http://user:pw@host"),
            ("model_params", "lots"),
            ("prompt_tokens", "uniform(200,100)"),
            ("prompt_tokens", "0"),
            ("concurrency", "8,zero"),
            ("kv_capacity", "gpu:1.5"),
            ("warmup", "soon"),
            ("measured", "0"),
            ("temperature", "-1"),
            ("sampling_extra", "[1]"),
            ("dialect", "anthropic"),
        ];
        for (name, text) in cases {
            let mut raw = full_raw();
            raw.field_mut(name).expect("field").text = text.into();
            let err = RunConfig::try_from(&raw).expect_err(text);
            assert!(
                matches!(err.problems()[0].problem, Problem::Invalid { .. }),
                "{name}={text}"
            );
        }
    }

    #[test]
    fn a_vendor_api_cannot_be_pinned_to_hold_the_output_length() {
        let run = |url: &str, dialect: &str, enforcement: &str| {
            let mut raw = full_raw();
            raw.endpoint_url.text = url.into();
            raw.dialect.text = dialect.into();
            raw.output_enforcement.text = enforcement.into();
            RunConfig::try_from(&raw)
        };
        for (url, dialect, who) in [
            ("https://h.example", "messages", "Anthropic Messages"),
            ("https://h.example", "gemini", "Gemini"),
            ("https://h.example", "responses", "OpenAI Responses"),
            ("https://api.openai.com", "chat", "OpenAI"),
            ("https://api.groq.com/openai/v1", "chat", "Groq"),
        ] {
            for e in ["ignore_eos", "min_tokens", "both"] {
                let err = run(url, dialect, e).expect_err(e);
                let p = &err.problems()[0];
                assert_eq!(p.field, "output_enforcement");
                assert!(
                    p.to_string().contains(&format!(
                        "expected none: {who} takes neither ignore_eos nor min_tokens"
                    )),
                    "{p}"
                );
            }
            assert!(run(url, dialect, "none").is_ok(), "{url} {dialect}");
        }
        // A self-hosted OpenAI-compatible server holds it.
        assert!(run("https://h.example", "chat", "ignore_eos").is_ok());
    }

    #[test]
    fn undisclosed_only_where_allowed() {
        let mut raw = full_raw();
        raw.prompt_tokens.text = "undisclosed".into();
        assert!(RunConfig::try_from(&raw).is_err());
        let mut raw = full_raw();
        raw.kv_capacity.text = "undisclosed".into();
        raw.scheduling.text = "undisclosed".into();
        let cfg = RunConfig::try_from(&raw).expect("server facts may be undisclosed");
        assert_eq!(cfg.kv.capacity.value, Disclosure::Undisclosed);
    }

    #[test]
    fn open_loop_sweep() {
        let mut raw = full_raw();
        raw.load_mode.text = "open".into();
        raw.rate_rps.text = "0.5, 1, 2.25".into();
        raw.arrival.text = "gamma(0.5)".into();
        raw.in_flight_cap.text = "64".into();
        let cfg = RunConfig::try_from(&raw).expect("pinned");
        assert_eq!(
            cfg.load.value.steps,
            vec![
                LoadStep::Open {
                    rate_milli_rps: 500,
                    arrival: Arrival::Gamma { shape_milli: 500 },
                    in_flight_cap: 64
                },
                LoadStep::Open {
                    rate_milli_rps: 1000,
                    arrival: Arrival::Gamma { shape_milli: 500 },
                    in_flight_cap: 64
                },
                LoadStep::Open {
                    rate_milli_rps: 2250,
                    arrival: Arrival::Gamma { shape_milli: 500 },
                    in_flight_cap: 64
                },
            ]
        );
        raw.arrival.text.clear();
        assert_eq!(
            RunConfig::try_from(&raw).expect_err("arrival").problems()[0].field,
            "arrival"
        );
    }

    #[test]
    fn share_json_round_trips_pins_only() {
        let raw = full_raw();
        let text = raw.to_share_json();
        assert!(!text.contains("provenance"));
        let back = RawConfig::from_share_json(&text).expect("parses");
        assert_eq!(back, raw);
        assert_eq!(RunConfig::try_from(&back), RunConfig::try_from(&raw));
        assert!(RawConfig::from_share_json("[1]").is_none());
        let partial = RawConfig::from_share_json(r#"{"model_id":"m","nope":"x"}"#).expect("object");
        assert_eq!(partial.model_id.text, "m");
        // A member that is not text (even an unknown one) makes it not a share link, as a
        // `{field: text}` map reads it.
        for bad in [
            r#"{"model_id":1}"#,
            r#"{"nope":null}"#,
            r#"{"model_id":["m"]}"#,
            "\"m\"",
        ] {
            assert!(RawConfig::from_share_json(bad).is_none(), "{bad}");
        }
        // Escapes in names and texts survive the round trip.
        let mut odd = RawConfig::default();
        odd.model_id.text = "a \"quoted\" \\ na\nme\u{1}!".into();
        let back = RawConfig::from_share_json(&odd.to_share_json()).expect("parses");
        assert_eq!(back.model_id.text, odd.model_id.text);
    }

    #[test]
    fn small_parsers() {
        assert_eq!(parse_param_count("270M"), Some(270_000_000));
        assert_eq!(parse_param_count("1.5B"), Some(1_500_000_000));
        assert_eq!(parse_param_count("70b"), Some(70_000_000_000));
        assert_eq!(parse_param_count("123456"), Some(123_456));
        assert_eq!(parse_milli("2.5"), Some(2500));
        assert_eq!(parse_milli(".25"), Some(250));
        assert_eq!(parse_milli("1.2345"), None);
        assert_eq!(parse_span("30s"), Some(Span::Duration { ms: 30_000 }));
        assert_eq!(parse_span("1.5 s"), Some(Span::Duration { ms: 1_500 }));
        assert_eq!(
            parse_length_dist("normal(1000,200,500,1500)"),
            Some(LengthDist::NormalClipped {
                mean: 1000,
                std: 200,
                min: 500,
                max: 1500
            })
        );
        assert_eq!(
            parse_base_url("https://api.example.com/v1"),
            Some("https://api.example.com".into())
        );
        assert_eq!(parse_base_url("http://h:1/x?key=1"), None);
        assert_eq!(milli(2500), "2.5");
        assert_eq!(
            LengthDist::Uniform { min: 10, max: 20 }.sample(0.9999, 0.0),
            20
        );
        assert_eq!(
            LengthDist::NormalClipped {
                mean: 100,
                std: 10,
                min: 90,
                max: 120
            }
            .sample(0.0, -5.0),
            90
        );
    }

    #[test]
    fn fit_check_findings() {
        let base = FitInputs {
            concurrency: Some(8),
            prompt_max: Some(128),
            output_max: Some(128),
            max_model_len: Some(4096),
            kv_tokens: Some(65_536),
            max_num_seqs: Some(256),
            cleartext: Some(false),
        };
        let ok = fit_check(&base);
        assert_eq!(ok.verdict, FitVerdict::Fits, "{:?}", ok.lines);
        assert!(
            ok.lines
                .iter()
                .any(|l| l.contains("2048 KV tokens of 65536")),
            "{:?}",
            ok.lines
        );
        let kv = fit_check(&FitInputs {
            concurrency: Some(16),
            prompt_max: Some(8000),
            output_max: Some(4000),
            max_model_len: Some(16_384),
            ..base
        });
        assert_eq!(kv.verdict, FitVerdict::Queues);
        assert!(
            kv.lines.iter().any(|l| l.contains("only 5 sequences fit")),
            "{:?}",
            kv.lines
        );
        let long = fit_check(&FitInputs {
            prompt_max: Some(4000),
            output_max: Some(200),
            ..base
        });
        assert_eq!(long.verdict, FitVerdict::Rejects);
        let seqs = fit_check(&FitInputs {
            max_num_seqs: Some(4),
            ..base
        });
        assert!(seqs
            .lines
            .iter()
            .any(|l| l.contains("4 requests will wait")));
        assert_eq!(
            fit_check(&FitInputs {
                kv_tokens: None,
                ..base
            })
            .verdict,
            FitVerdict::Unknown
        );
        // full_raw's endpoint is http:// (HTTP/1.1 in a browser): c=8 cannot be sent.
        let cfg = RunConfig::try_from(&full_raw()).expect("pinned");
        let h1 = FitInputs {
            cleartext: Some(true),
            ..base
        };
        assert_eq!(FitInputs::from_config(&cfg), h1);
        assert_eq!(FitInputs::from_raw(&full_raw()), h1);
        let limited = fit_check(&h1);
        assert_eq!(limited.verdict, FitVerdict::ClientLimited);
        assert!(limited.lines[0].contains("at most 6 requests would be in flight"));
        let six = fit_check(&FitInputs {
            concurrency: Some(6),
            ..h1
        });
        assert_eq!(six.verdict, FitVerdict::Fits, "{:?}", six.lines);
    }

    #[test]
    fn wire_names_are_the_form_words() {
        assert_eq!(wire_name(&LengthEnforcement::IgnoreEos), "ignore_eos");
        assert_eq!(wire_name(&Scheduling::Continuous), "continuous");
        assert_eq!(wire_name(&PhaseMode::ChunkedPrefill), "chunked_prefill");
    }

    #[test]
    fn loopback_urls_are_recognised() {
        for u in [
            "http://127.0.0.1:8000",
            "https://127.0.0.1",
            "http://localhost:80/x",
            "http://[::1]:9/",
            "http://127.1.2.3",
        ] {
            assert!(is_loopback_url(u), "{u}");
        }
        for u in [
            "http://128.0.0.1",
            "https://example.com",
            "http://127.0.0.1.evil.com",
            "http://user@127.0.0.1",
            "ftp://127.0.0.1",
            "http://[::2]",
            "http://localhost.evil",
            "127.0.0.1",
        ] {
            assert!(!is_loopback_url(u), "{u}");
        }
    }
}
