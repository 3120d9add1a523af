//! The pins (DESIGN §1): the typed run configuration, built from raw form input by
//! `TryFrom`, so that a run whose configuration is not fully pinned cannot be expressed.
//!
//! Every value carries its [`Provenance`]. "Undisclosed" is a legal value only for
//! server-side facts the client cannot know, and only when typed explicitly.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::dialect::{Dialect, LengthEnforcement};

/// Where a value came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Provenance {
    /// Typed (or chosen from a preset) by the user.
    #[default]
    Declared,
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
}

/// A value with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub provenance: Provenance,
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
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LengthDist {
    /// Every request has this length.
    Fixed {
        /// Tokens.
        tokens: u32,
    },
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
    /// The largest length it can produce.
    pub fn max(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Uniform { max, .. } | LengthDist::NormalClipped { max, .. } => max,
        }
    }

    /// The mean length (ignoring clipping for the normal).
    pub fn mean(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Uniform { min, max } => min + (max - min) / 2,
            LengthDist::NormalClipped { mean, .. } => mean,
        }
    }

    /// Draws a length from a uniform sample `u` in [0, 1) and a standard-normal sample `z`
    /// (randomness is the caller's).
    pub fn sample(&self, u: f64, z: f64) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Uniform { min, max } => {
                let span = f64::from(max - min + 1);
                (min + (u.clamp(0.0, 1.0) * span) as u32).min(max)
            }
            LengthDist::NormalClipped {
                mean,
                std,
                min,
                max,
            } => {
                let v = f64::from(mean) + z * f64::from(std);
                (v.round().clamp(f64::from(min), f64::from(max))) as u32
            }
        }
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LengthDist::Fixed { tokens } => write!(f, "{tokens}"),
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
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Arrival {
    /// Exponential inter-arrival times.
    Poisson,
    /// Gamma inter-arrival times with this shape ×1000 (shape < 1 is burstier).
    Gamma {
        /// Shape parameter × 1000.
        shape_milli: u32,
    },
}

/// One load level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
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
                    Arrival::Poisson => "Poisson".to_owned(),
                    Arrival::Gamma { shape_milli } => {
                        format!("gamma k={}", milli(u64::from(shape_milli)))
                    }
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

/// KV capacity as the server states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
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
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
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
    /// A unique nonce prefix per request (defeats prefix caching).
    pub nonce_prefix: bool,
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

/// A fully pinned run configuration. Only [`TryFrom<&RawConfig>`] builds one from input.
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
}

/// One raw form field: the text typed (or probed) and where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RawField {
    /// The text.
    pub text: String,
    /// Its provenance.
    pub source: Provenance,
}

impl RawField {
    /// A declared value.
    pub fn declared(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            source: Provenance::Declared,
        }
    }
}

macro_rules! raw_config {
    ($($(#[$doc:meta])* $name:ident => $pin:expr,)*) => {
        /// The config form's raw input: every field is text plus provenance.
        #[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct RawConfig {
            $($(#[$doc])* pub $name: RawField,)*
        }

        impl RawConfig {
            /// Every field's name and the pin it belongs to, in form order.
            pub const FIELDS: &'static [(&'static str, PinId)] = &[$((stringify!($name), $pin),)*];

            /// The field with this name.
            pub fn field(&self, name: &str) -> Option<&RawField> {
                match name { $(stringify!($name) => Some(&self.$name),)* _ => None }
            }

            /// The field with this name, mutable.
            pub fn field_mut(&mut self, name: &str) -> Option<&mut RawField> {
                match name { $(stringify!($name) => Some(&mut self.$name),)* _ => None }
            }
        }
    };
}

raw_config! {
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    endpoint_url => PinId::Endpoint,
    /// `completions` or `chat`.
    dialect => PinId::Endpoint,
    /// API model id.
    model_id => PinId::Model,
    /// Parameter count: `8B`, `270M`, an integer, or `undisclosed`.
    model_params => PinId::Model,
    /// Precision / quantization (`bf16`, `Q4_K_M`) or `undisclosed`.
    model_quant => PinId::Model,
    /// Engine and version, or `undisclosed`.
    model_engine => PinId::Model,
    /// `128`, `uniform(100,200)` or `normal(mean,std,min,max)`.
    prompt_tokens => PinId::PromptLength,
    /// `server_tokenizer`, `usage_calibrated` or `approximate`.
    prompt_exactness => PinId::PromptLength,
    /// Output length distribution (as prompt_tokens).
    output_tokens => PinId::OutputLength,
    /// `ignore_eos`, `min_tokens`, `both` or `none`.
    output_enforcement => PinId::OutputLength,
    /// `closed` or `open`.
    load_mode => PinId::Load,
    /// Closed loop: concurrency, or a comma list for a sweep.
    concurrency => PinId::Load,
    /// Open loop: req/s, or a comma list for a sweep.
    rate_rps => PinId::Load,
    /// Open loop: `poisson` or `gamma(shape)`.
    arrival => PinId::Load,
    /// Open loop: most requests in flight.
    in_flight_cap => PinId::Load,
    /// Seconds without a byte before a request is abandoned.
    stall_timeout_s => PinId::Load,
    /// Max model length, tokens, or `undisclosed`.
    max_model_len => PinId::KvBudget,
    /// KV capacity: tokens, `gpu:0.9`, or `undisclosed`.
    kv_capacity => PinId::KvBudget,
    /// Max concurrent sequences, or `undisclosed`.
    max_num_seqs => PinId::KvBudget,
    /// `colocated`, `disaggregated`, `chunked_prefill` or `undisclosed`.
    phases => PinId::PrefillDecode,
    /// `continuous`, `static` or `undisclosed`.
    scheduling => PinId::Scheduling,
    /// Warm-up: `N requests` / `N` or `Ns`.
    warmup => PinId::Window,
    /// Measured window: `N requests` / `N` or `Ns`.
    measured => PinId::Window,
    /// Cool-down: `N requests` / `N` or `Ns`.
    cooldown => PinId::Window,
    /// `on` or `off`.
    nonce_prefix => PinId::CachePolicy,
    /// Temperature.
    temperature => PinId::Sampling,
    /// Other sampling fields as a JSON object (may be `{}`).
    sampling_extra => PinId::Sampling,
}

impl RawConfig {
    /// The non-empty fields as a JSON object `{field: text}`, for a shareable link. It holds
    /// only pins: the API key is not part of the configuration and never enters it.
    pub fn to_share_json(&self) -> String {
        let map: BTreeMap<&str, &str> = Self::FIELDS
            .iter()
            .filter_map(|(name, _)| self.field(name).map(|f| (*name, f.text.trim())))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        serde_json::to_string(&map).unwrap_or_default()
    }

    /// Fills fields from [`RawConfig::to_share_json`]'s output as declared values; unknown
    /// names are ignored. `None` when the text is not such an object.
    pub fn from_share_json(text: &str) -> Option<RawConfig> {
        let map: BTreeMap<String, String> = serde_json::from_str(text).ok()?;
        let mut r = RawConfig::default();
        for (name, value) in map {
            if let Some(f) = r.field_mut(&name) {
                *f = RawField::declared(value);
            }
        }
        Some(r)
    }
}

/// The pins of DESIGN §1 (plus the endpoint itself).
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
        }
    }
}

/// What is wrong with one field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// Left empty.
    Missing,
    /// Not understood.
    Invalid {
        /// What would have been accepted.
        expected: String,
    },
}

/// One unpinned or invalid field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinProblem {
    /// The pin.
    pub pin: PinId,
    /// The raw field name.
    pub field: String,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for PinProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = self.field.replace('_', " ");
        match &self.problem {
            Problem::Missing => write!(f, "{}: {field} is missing", self.pin.label()),
            Problem::Invalid { expected } => {
                write!(
                    f,
                    "{}: {field} is invalid (expected {expected})",
                    self.pin.label()
                )
            }
        }
    }
}

/// Errors of this module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// Some pins are missing or invalid; every one is listed.
    #[error("the run is not pinned: {}", .0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Unpinned(Vec<PinProblem>),
}

impl PinError {
    /// The problems, in form order.
    pub fn problems(&self) -> &[PinProblem] {
        match self {
            PinError::Unpinned(p) => p,
        }
    }
}

/// Parses one field, collecting problems.
struct Parser<'a> {
    raw: &'a RawConfig,
    problems: Vec<PinProblem>,
}

impl<'a> Parser<'a> {
    fn pin_of(name: &str) -> PinId {
        RawConfig::FIELDS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
            .unwrap_or(PinId::Endpoint)
    }

    fn get<T>(
        &mut self,
        name: &'static str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<Pinned<T>> {
        let field = self.raw.field(name)?;
        let text = field.text.trim();
        let problem = if text.is_empty() {
            Problem::Missing
        } else if let Some(value) = parse(text) {
            return Some(Pinned {
                value,
                provenance: field.source.clone(),
            });
        } else {
            Problem::Invalid {
                expected: expected.to_owned(),
            }
        };
        self.problems.push(PinProblem {
            pin: Self::pin_of(name),
            field: name.to_owned(),
            problem,
        });
        None
    }

    fn disclosed<T>(
        &mut self,
        name: &'static str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<Pinned<Disclosure<T>>> {
        let expected = format!("{expected}, or \"undisclosed\"");
        self.get(name, &expected, |t| {
            if t.eq_ignore_ascii_case("undisclosed") {
                Some(Disclosure::Undisclosed)
            } else {
                parse(t).map(Disclosure::Value)
            }
        })
    }
}

impl Parser<'_> {
    /// A field that takes one of `options`; the error lists exactly those names.
    fn choice<T: Copy>(&mut self, name: &'static str, options: &[(&str, T)]) -> Option<Pinned<T>> {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let expected = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        };
        self.get(name, &expected, |t| parse_choice(t, options))
    }
}

fn parse_u32(t: &str) -> Option<u32> {
    t.replace('_', "").parse().ok()
}

fn parse_positive_u32(t: &str) -> Option<u32> {
    parse_u32(t).filter(|&v| v > 0)
}

/// Parses a non-negative decimal into an integer ×1000 (`2.5` → 2500).
pub fn parse_milli(t: &str) -> Option<u64> {
    let t = t.trim();
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || frac.len() > 3
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = format!("{frac:0<3}").parse().ok()?;
    i.checked_mul(1000)?.checked_add(f)
}

/// Parses `8B`, `1.5B`, `270M`, `7e9` or a plain integer into a parameter count.
pub fn parse_param_count(t: &str) -> Option<u64> {
    let t = t.trim().replace(['_', ','], "");
    let (num, mult) = match t.chars().last()?.to_ascii_uppercase() {
        'T' => (&t[..t.len() - 1], 1_000_000_000_000u64),
        'B' | 'G' => (&t[..t.len() - 1], 1_000_000_000),
        'M' => (&t[..t.len() - 1], 1_000_000),
        'K' => (&t[..t.len() - 1], 1_000),
        _ => (t.as_str(), 1),
    };
    let m = parse_milli(num)?;
    let v = u128::from(m) * u128::from(mult) / 1000;
    u64::try_from(v).ok().filter(|&v| v > 0)
}

fn parse_args(t: &str, name: &str) -> Option<Vec<u32>> {
    let inner = t
        .strip_prefix(name)?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?;
    inner.split(',').map(|a| parse_u32(a.trim())).collect()
}

/// Parses a length distribution: `128`, `uniform(100,200)`, `normal(mean,std,min,max)`.
pub fn parse_length_dist(t: &str) -> Option<LengthDist> {
    let t = t.trim().to_ascii_lowercase();
    if let Some(v) = parse_positive_u32(&t) {
        return Some(LengthDist::Fixed { tokens: v });
    }
    if let Some(a) = parse_args(&t, "uniform") {
        return match a[..] {
            [min, max] if min >= 1 && min <= max => Some(LengthDist::Uniform { min, max }),
            _ => None,
        };
    }
    if let Some(a) = parse_args(&t, "normal") {
        return match a[..] {
            [mean, std, min, max] if min >= 1 && min <= mean && mean <= max => {
                Some(LengthDist::NormalClipped {
                    mean,
                    std,
                    min,
                    max,
                })
            }
            _ => None,
        };
    }
    None
}

/// Parses `64`, `64 requests` or `30s` / `1.5 s`.
pub fn parse_span(t: &str) -> Option<Span> {
    let t = t.trim().to_ascii_lowercase();
    if let Some(n) = t
        .strip_suffix("requests")
        .or_else(|| t.strip_suffix("request"))
    {
        return parse_u32(n.trim()).map(|count| Span::Requests { count });
    }
    if let Some(s) = t.strip_suffix('s') {
        return parse_milli(s.trim()).map(|ms| Span::Duration { ms });
    }
    parse_u32(&t).map(|count| Span::Requests { count })
}

fn parse_list<T>(t: &str, item: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let items: Option<Vec<T>> = t.split(',').map(|s| item(s.trim())).collect();
    items.filter(|v| !v.is_empty())
}

fn parse_arrival(t: &str) -> Option<Arrival> {
    let t = t.trim().to_ascii_lowercase();
    if t == "poisson" {
        return Some(Arrival::Poisson);
    }
    let inner = t
        .strip_prefix("gamma")?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let shape_milli = u32::try_from(parse_milli(inner)?).ok().filter(|&s| s > 0)?;
    Some(Arrival::Gamma { shape_milli })
}

fn parse_kv_capacity(t: &str) -> Option<KvCapacity> {
    let t = t.trim().to_ascii_lowercase();
    if let Some(f) = t.strip_prefix("gpu:") {
        let milli = u32::try_from(parse_milli(f)?)
            .ok()
            .filter(|&m| m > 0 && m <= 1000)?;
        return Some(KvCapacity::GpuMemoryUtilization { milli });
    }
    let t = t.strip_suffix("tokens").unwrap_or(&t).trim();
    t.replace('_', "")
        .parse()
        .ok()
        .filter(|&v: &u64| v > 0)
        .map(|tokens| KvCapacity::Tokens { tokens })
}

/// Whether a URL points at this machine (`127.0.0.0/8`, `localhost`, `[::1]`) — the only
/// endpoints a run started by a link may use, and the only places a finished report may
/// be posted to.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, tail)) if tail.is_empty() || tail.starts_with(':') => h,
            _ => return false,
        }
    } else {
        authority.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    if host == "localhost" || host == "::1" {
        return true;
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u8>().is_ok())
}

/// Normalises a base URL: `http(s)://host[:port][/path]`, without credentials, query,
/// fragment, trailing slash or trailing `/v1`.
pub fn parse_base_url(t: &str) -> Option<String> {
    let t = t.trim();
    let rest = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"))?;
    let scheme = &t[..t.len() - rest.len()];
    if rest.contains(['?', '#', ' ']) {
        return None;
    }
    let host_end = rest.find('/').unwrap_or(rest.len());
    let host = &rest[..host_end];
    if host.is_empty() || host.contains('@') {
        return None;
    }
    let mut path = rest[host_end..].trim_end_matches('/').to_owned();
    if path.ends_with("/v1") {
        path.truncate(path.len() - 3);
    }
    Some(format!("{scheme}{host}{path}"))
}

fn parse_choice<T: Copy>(t: &str, options: &[(&str, T)]) -> Option<T> {
    let t = t.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    options.iter().find(|(n, _)| *n == t).map(|(_, v)| *v)
}

impl TryFrom<&RawConfig> for RunConfig {
    type Error = PinError;

    fn try_from(raw: &RawConfig) -> Result<Self, PinError> {
        let mut p = Parser {
            raw,
            problems: Vec::new(),
        };
        let url = p.get(
            "endpoint_url",
            "http(s)://host:port without credentials",
            parse_base_url,
        );
        let dialect = p.choice(
            "dialect",
            &[
                ("completions", Dialect::Completions),
                ("chat", Dialect::Chat),
            ],
        );
        let model_id = p.get("model_id", "the API model id", |t| Some(t.to_owned()));
        let params = p.disclosed(
            "model_params",
            "a parameter count like 8B or 270M",
            parse_param_count,
        );
        let quant = p.disclosed("model_quant", "a precision like bf16 or Q4_K_M", |t| {
            Some(t.to_owned())
        });
        let engine = p.disclosed(
            "model_engine",
            "an engine and version like vLLM 0.11",
            |t| Some(t.to_owned()),
        );
        let dist_help = "a token count, uniform(min,max) or normal(mean,std,min,max)";
        let prompt_len = p.get("prompt_tokens", dist_help, parse_length_dist);
        let exactness = p.choice(
            "prompt_exactness",
            &[
                ("server_tokenizer", PromptExactness::ServerTokenizer),
                ("usage_calibrated", PromptExactness::UsageCalibrated),
                ("approximate", PromptExactness::Approximate),
            ],
        );
        let output_len = p.get("output_tokens", dist_help, parse_length_dist);
        let enforcement = p.choice(
            "output_enforcement",
            &[
                ("ignore_eos", LengthEnforcement::IgnoreEos),
                ("min_tokens", LengthEnforcement::MinTokens),
                ("both", LengthEnforcement::Both),
                ("none", LengthEnforcement::None),
            ],
        );
        let mode = p.choice("load_mode", &[("closed", true), ("open", false)]);
        let steps = match mode.as_ref().map(|m| m.value) {
            Some(true) => p
                .get(
                    "concurrency",
                    "a concurrency ≥ 1, or a comma list for a sweep",
                    |t| parse_list(t, parse_positive_u32),
                )
                .map(|c| Pinned {
                    value: c
                        .value
                        .into_iter()
                        .map(|concurrency| LoadStep::Closed { concurrency })
                        .collect::<Vec<_>>(),
                    provenance: c.provenance,
                }),
            Some(false) => {
                let rates = p.get(
                    "rate_rps",
                    "a rate in req/s > 0, or a comma list for a sweep",
                    |t| parse_list(t, |r| parse_milli(r).filter(|&m| m > 0)),
                );
                let arrival = p.get("arrival", "poisson or gamma(shape)", parse_arrival);
                let cap = p.get("in_flight_cap", "a count ≥ 1", parse_positive_u32);
                match (rates, arrival, cap) {
                    (Some(r), Some(a), Some(c)) => Some(Pinned {
                        value: r
                            .value
                            .into_iter()
                            .map(|rate_milli_rps| LoadStep::Open {
                                rate_milli_rps,
                                arrival: a.value,
                                in_flight_cap: c.value,
                            })
                            .collect(),
                        provenance: r.provenance,
                    }),
                    _ => None,
                }
            }
            None => None,
        };
        let stall = p.get("stall_timeout_s", "seconds > 0", |t| {
            parse_milli(t).filter(|&m| m > 0)
        });
        let max_model_len = p.disclosed("max_model_len", "tokens", parse_positive_u32);
        let capacity = p.disclosed("kv_capacity", "KV tokens, or gpu:0.9", parse_kv_capacity);
        let max_num_seqs = p.disclosed("max_num_seqs", "a count", parse_positive_u32);
        let phases = p.choice(
            "phases",
            &[
                ("colocated", PhaseMode::Colocated),
                ("disaggregated", PhaseMode::Disaggregated),
                ("chunked_prefill", PhaseMode::ChunkedPrefill),
                ("undisclosed", PhaseMode::Undisclosed),
            ],
        );
        let scheduling = p.choice(
            "scheduling",
            &[
                ("continuous", Scheduling::Continuous),
                ("static", Scheduling::Static),
                ("undisclosed", Scheduling::Undisclosed),
            ],
        );
        let span_help = "a request count like 8 or a duration like 10s";
        let warmup = p.get("warmup", span_help, parse_span);
        let measured = p.get("measured", "a request count ≥ 1 or a duration > 0", |t| {
            parse_span(t)
                .filter(|s| !matches!(s, Span::Requests { count: 0 } | Span::Duration { ms: 0 }))
        });
        let cooldown = p.get("cooldown", span_help, parse_span);
        let nonce = p.choice(
            "nonce_prefix",
            &[
                ("on", true),
                ("off", false),
                ("true", true),
                ("false", false),
            ],
        );
        let temperature = p.get("temperature", "a number ≥ 0", |t| {
            t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
        });
        let extra = p.get(
            "sampling_extra",
            "a JSON object such as {} or {\"top_p\":0.9}",
            |t| serde_json::from_str::<BTreeMap<String, serde_json::Value>>(t).ok(),
        );

        if !p.problems.is_empty() {
            return Err(PinError::Unpinned(p.problems));
        }
        // Every `Option` below is `Some` when no problem was recorded.
        let unpinned = || PinError::Unpinned(Vec::new());
        let (url, dialect, model_id, params, quant, engine) = (
            url.ok_or_else(unpinned)?,
            dialect.ok_or_else(unpinned)?,
            model_id.ok_or_else(unpinned)?,
            params.ok_or_else(unpinned)?,
            quant.ok_or_else(unpinned)?,
            engine.ok_or_else(unpinned)?,
        );
        let (steps, stall) = (steps.ok_or_else(unpinned)?, stall.ok_or_else(unpinned)?);
        let (warmup, measured, cooldown) = (
            warmup.ok_or_else(unpinned)?,
            measured.ok_or_else(unpinned)?,
            cooldown.ok_or_else(unpinned)?,
        );
        let (temperature, extra) = (
            temperature.ok_or_else(unpinned)?,
            extra.ok_or_else(unpinned)?,
        );
        Ok(RunConfig {
            endpoint: Endpoint {
                base_url: url.value,
                dialect: dialect.value,
            },
            model: ModelPin {
                id: model_id,
                params,
                quantization: quant,
                engine,
            },
            prompt_len: prompt_len.ok_or_else(unpinned)?,
            prompt_exactness: exactness.ok_or_else(unpinned)?,
            output_len: output_len.ok_or_else(unpinned)?,
            output_enforcement: enforcement.ok_or_else(unpinned)?,
            load: Pinned {
                value: Load {
                    steps: steps.value,
                    stall_timeout_ms: stall.value,
                },
                provenance: steps.provenance,
            },
            kv: KvPin {
                max_model_len: max_model_len.ok_or_else(unpinned)?,
                capacity: capacity.ok_or_else(unpinned)?,
                max_num_seqs: max_num_seqs.ok_or_else(unpinned)?,
            },
            phases: phases.ok_or_else(unpinned)?,
            scheduling: scheduling.ok_or_else(unpinned)?,
            window: Pinned {
                value: WindowPlan {
                    warmup: warmup.value,
                    measured: measured.value,
                    cooldown: cooldown.value,
                },
                provenance: measured.provenance,
            },
            cache: nonce
                .map(|n| Pinned {
                    value: CachePolicy {
                        nonce_prefix: n.value,
                    },
                    provenance: n.provenance,
                })
                .ok_or_else(unpinned)?,
            sampling: Pinned {
                value: Sampling {
                    temperature: temperature.value,
                    extra: extra.value,
                },
                provenance: temperature.provenance,
            },
        })
    }
}

/// Inputs of the fit check; each may be unknown (a form being filled, or undisclosed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitInputs {
    /// Most concurrent requests the client will have in flight.
    pub concurrency: Option<u32>,
    /// Largest prompt, tokens.
    pub prompt_max: Option<u32>,
    /// Largest output, tokens.
    pub output_max: Option<u32>,
    /// Server max model length.
    pub max_model_len: Option<u32>,
    /// Server KV capacity, tokens.
    pub kv_tokens: Option<u64>,
    /// Server max concurrent sequences.
    pub max_num_seqs: Option<u32>,
}

impl FitInputs {
    /// Reads what a raw form already pins (fields that do not parse count as unknown).
    pub fn from_raw(raw: &RawConfig) -> Self {
        fn known(f: &RawField) -> Option<&str> {
            Some(f.text.trim()).filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("undisclosed"))
        }
        let closed = parse_choice(&raw.load_mode.text, &[("closed", true), ("open", false)]);
        let concurrency = match closed {
            Some(true) => known(&raw.concurrency)
                .and_then(|t| parse_list(t, parse_positive_u32))
                .and_then(|v| v.into_iter().max()),
            Some(false) => known(&raw.in_flight_cap).and_then(parse_positive_u32),
            None => None,
        };
        Self {
            concurrency,
            prompt_max: known(&raw.prompt_tokens)
                .and_then(parse_length_dist)
                .map(|d| d.max()),
            output_max: known(&raw.output_tokens)
                .and_then(parse_length_dist)
                .map(|d| d.max()),
            max_model_len: known(&raw.max_model_len).and_then(parse_positive_u32),
            kv_tokens: known(&raw.kv_capacity)
                .and_then(parse_kv_capacity)
                .and_then(|c| match c {
                    KvCapacity::Tokens { tokens } => Some(tokens),
                    KvCapacity::GpuMemoryUtilization { .. } => None,
                }),
            max_num_seqs: known(&raw.max_num_seqs).and_then(parse_positive_u32),
        }
    }

    /// Reads a pinned configuration.
    pub fn from_config(cfg: &RunConfig) -> Self {
        Self {
            concurrency: cfg
                .load
                .value
                .steps
                .iter()
                .map(|s| s.max_concurrency())
                .max(),
            prompt_max: Some(cfg.prompt_len.value.max()),
            output_max: Some(cfg.output_len.value.max()),
            max_model_len: cfg.kv.max_model_len.value.known().copied(),
            kv_tokens: match cfg.kv.capacity.value {
                Disclosure::Value(KvCapacity::Tokens { tokens }) => Some(tokens),
                _ => None,
            },
            max_num_seqs: cfg.kv.max_num_seqs.value.known().copied(),
        }
    }
}

/// The fit check's conclusion, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitVerdict {
    /// Requests longer than the context: the server will reject (or truncate) them.
    Rejects,
    /// The server will have to queue or preempt requests.
    Queues,
    /// Not enough is known to say.
    Unknown,
    /// Everything fits.
    Fits,
}

/// The fit check: its verdict and plain sentences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FitCheck {
    /// Worst finding.
    pub verdict: FitVerdict,
    /// One sentence per finding.
    pub lines: Vec<String>,
}

/// Concurrency × (prompt + output) against the KV budget, max sequences and max length.
pub fn fit_check(i: &FitInputs) -> FitCheck {
    let mut lines = Vec::new();
    let mut verdict = FitVerdict::Fits;
    let worse = |v: FitVerdict, verdict: &mut FitVerdict| *verdict = (*verdict).min(v);
    let per_seq = match (i.prompt_max, i.output_max) {
        (Some(p), Some(o)) => Some(u64::from(p) + u64::from(o)),
        _ => {
            lines.push(
                "Prompt and output lengths are not pinned yet: the fit cannot be checked.".into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
            None
        }
    };
    match (per_seq, i.max_model_len) {
        (Some(s), Some(m)) if s > u64::from(m) => {
            lines.push(format!("A request needs up to {s} tokens of context but max model length is {m}: the server will reject or cut such requests."));
            worse(FitVerdict::Rejects, &mut verdict);
        }
        (Some(s), Some(m)) => lines.push(format!(
            "A request needs up to {s} tokens of context; max model length {m} holds it."
        )),
        (Some(_), None) => {
            lines.push(
                "Max model length is undisclosed: whether the longest requests fit is unknown."
                    .into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
        }
        (None, _) => {}
    }
    match (i.concurrency, i.max_num_seqs) {
        (Some(c), Some(m)) if c > m => {
            lines.push(format!("Concurrency {c} exceeds the server's {m} concurrent sequences: {} requests will wait in the server queue.", c - m));
            worse(FitVerdict::Queues, &mut verdict);
        }
        (Some(c), Some(m)) => lines.push(format!(
            "Concurrency {c} is within the server's {m} concurrent sequences."
        )),
        (None, _) => {
            lines.push("Load is not pinned yet: concurrency is unknown.".into());
            worse(FitVerdict::Unknown, &mut verdict);
        }
        (Some(_), None) => {
            lines.push("Max concurrent sequences is undisclosed.".into());
            worse(FitVerdict::Unknown, &mut verdict);
        }
    }
    match (i.concurrency, per_seq, i.kv_tokens) {
        (Some(c), Some(s), Some(kv)) => {
            let need = u64::from(c) * s;
            if need > kv {
                let fit = kv / s.max(1);
                lines.push(format!("{c} streams × {s} tokens = {need} KV tokens, but the KV cache holds {kv}: only {fit} sequences fit at full length; the rest will queue or be preempted."));
                worse(FitVerdict::Queues, &mut verdict);
            } else {
                lines.push(format!(
                    "{c} streams × {s} tokens = {need} KV tokens of {kv} ({}%).",
                    need * 100 / kv.max(1)
                ));
            }
        }
        (Some(_), Some(_), None) => {
            lines.push(
                "KV capacity in tokens is undisclosed: whether the load fits the cache is unknown."
                    .into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
        }
        _ => {}
    }
    FitCheck { verdict, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fully pinned raw config (the "chat 128→128 at c=8" shape).
    pub(crate) fn full_raw() -> RawConfig {
        let mut r = RawConfig::default();
        for (name, text) in [
            ("endpoint_url", "http://127.0.0.1:8000/v1/"),
            ("dialect", "completions"),
            ("model_id", "tiny"),
            ("model_params", "8B"),
            ("model_quant", "bf16"),
            ("model_engine", "undisclosed"),
            ("prompt_tokens", "128"),
            ("prompt_exactness", "server_tokenizer"),
            ("output_tokens", "128"),
            ("output_enforcement", "ignore_eos"),
            ("load_mode", "closed"),
            ("concurrency", "8"),
            ("stall_timeout_s", "30"),
            ("max_model_len", "4096"),
            ("kv_capacity", "65536"),
            ("max_num_seqs", "256"),
            ("phases", "colocated"),
            ("scheduling", "continuous"),
            ("warmup", "8"),
            ("measured", "64 requests"),
            ("cooldown", "8"),
            ("nonce_prefix", "on"),
            ("temperature", "0"),
            ("sampling_extra", "{}"),
        ] {
            *r.field_mut(name).expect("field") = RawField::declared(text);
        }
        r
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
    fn one_missing_pin_blocks_the_run() {
        for (name, _) in RawConfig::FIELDS {
            let mut raw = full_raw();
            raw.field_mut(name).expect("field").text.clear();
            let optional = matches!(*name, "rate_rps" | "arrival" | "in_flight_cap");
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
        let cfg = RunConfig::try_from(&full_raw()).expect("pinned");
        assert_eq!(FitInputs::from_config(&cfg), base);
        assert_eq!(FitInputs::from_raw(&full_raw()), base);
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
