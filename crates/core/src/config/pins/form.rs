//! The Run form as the product's idea: one section per pin with why it matters, each
//! field's control (choice, length distribution, window span, number with a unit), the
//! sections' status badges, workload presets and the summary shown before Start. Plain
//! data and pure functions; the view only renders them.

use super::parse::{parse_choice, parse_length_dist, parse_span};
use super::*;

/// How a field is edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Free text.
    Text,
    /// A number (or a comma list, for sweeps), with its unit.
    Number {
        /// The unit shown after the box.
        unit: &'static str,
    },
    /// One of a fixed set: `(value, label)`.
    Choice(&'static [(&'static str, &'static str)]),
    /// A length distribution: fixed, uniform(min,max) or normal(mean,std,min,max).
    Length,
    /// An arrival process: poisson or gamma(shape).
    Arrival,
    /// A window: a request count or a duration in seconds.
    Span,
}

impl Control {
    /// Whether the field accepts `undisclosed` (server facts the client cannot know).
    pub fn disclosable(name: &str) -> bool {
        matches!(
            name,
            "model_params"
                | "model_quant"
                | "model_engine"
                | "max_model_len"
                | "kv_capacity"
                | "max_num_seqs"
        )
    }
}

/// One field of the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The [`RawConfig`] field name (also the `pin-{name}` test id).
    pub name: &'static str,
    /// Visible label.
    pub label: &'static str,
    /// How it is edited.
    pub control: Control,
    /// An example of a valid value.
    pub example: &'static str,
}

const DIALECTS: &[(&str, &str)] = &[
    ("completions", "completions (/v1/completions)"),
    ("chat", "chat (/v1/chat/completions)"),
    ("responses", "OpenAI Responses (/v1/responses)"),
    ("messages", "Anthropic Messages (/v1/messages)"),
    ("gemini", "Gemini (:streamGenerateContent)"),
];
const EXACTNESS: &[(&str, &str)] = &[
    (
        "server_tokenizer",
        "exact: built with the server's /tokenize",
    ),
    (
        "usage_calibrated",
        "calibrated from the server's usage counts",
    ),
    ("approximate", "approximate: estimated from characters"),
];
const ENFORCEMENT: &[(&str, &str)] = &[
    ("ignore_eos", "ignore_eos (generate exactly this many)"),
    ("min_tokens", "min_tokens + max_tokens"),
    ("both", "both ignore_eos and min_tokens"),
    ("none", "none: max_tokens only, may stop early"),
];
const LOAD_MODES: &[(&str, &str)] = &[
    (
        "closed",
        "closed loop: a fixed number of requests in flight",
    ),
    ("open", "open loop: requests arrive at a rate"),
    (
        "replay",
        "replay: requests arrive as a real trace's did, with its lengths",
    ),
];
const PHASES: &[(&str, &str)] = &[
    ("colocated", "colocated"),
    ("chunked_prefill", "chunked prefill"),
    ("disaggregated", "disaggregated prefill/decode"),
    ("undisclosed", "undisclosed"),
];
const SCHEDULING: &[(&str, &str)] = &[
    ("continuous", "continuous batching"),
    ("static", "static batching"),
    ("undisclosed", "undisclosed"),
];
const NONCE: &[(&str, &str)] = &[
    (
        "on",
        "on: a unique prefix per request (no prefix-cache hits)",
    ),
    ("off", "off: prompts may share a cached prefix"),
];

/// Every field's spec, in [`RawConfig::FIELDS`] order.
pub const FIELD_SPECS: &[FieldSpec] = &[
    FieldSpec {
        name: "endpoint_url",
        label: "Base URL",
        control: Control::Text,
        example: "https://127.0.0.1:8443",
    },
    FieldSpec {
        name: "dialect",
        label: "API",
        control: Control::Choice(DIALECTS),
        example: "completions",
    },
    FieldSpec {
        name: "model_id",
        label: "Model id",
        control: Control::Text,
        example: "meta-llama/Llama-3.1-8B-Instruct",
    },
    FieldSpec {
        name: "model_params",
        label: "Parameters",
        control: Control::Text,
        example: "8B, 70B or 270M",
    },
    FieldSpec {
        name: "model_quant",
        label: "Precision",
        control: Control::Text,
        example: "bf16, fp8 or Q4_K_M",
    },
    FieldSpec {
        name: "model_engine",
        label: "Engine and version",
        control: Control::Text,
        example: "vLLM 0.11.0",
    },
    FieldSpec {
        name: "prompt_tokens",
        label: "Prompt length",
        control: Control::Length,
        example: "128",
    },
    FieldSpec {
        name: "prompt_exactness",
        label: "Prompt exactness",
        control: Control::Choice(EXACTNESS),
        example: "server_tokenizer",
    },
    FieldSpec {
        name: "output_tokens",
        label: "Output length",
        control: Control::Length,
        example: "128",
    },
    FieldSpec {
        name: "output_enforcement",
        label: "Length enforcement",
        control: Control::Choice(ENFORCEMENT),
        example: "ignore_eos",
    },
    FieldSpec {
        name: "dataset",
        label: "Dataset (its rows give both lengths)",
        control: Control::Text,
        example: "file:sharegpt.json sha256=… format=sharegpt rows=… sampled=…",
    },
    FieldSpec {
        name: "load_mode",
        label: "Load",
        control: Control::Choice(LOAD_MODES),
        example: "closed",
    },
    FieldSpec {
        name: "concurrency",
        label: "Concurrency",
        control: Control::Number {
            unit: "requests in flight",
        },
        example: "8, or 1,4,16 for a sweep",
    },
    FieldSpec {
        name: "rate_rps",
        label: "Arrival rate",
        control: Control::Number { unit: "req/s" },
        example: "2, or 1,2,4 for a sweep",
    },
    FieldSpec {
        name: "arrival",
        label: "Arrivals",
        control: Control::Arrival,
        example: "poisson",
    },
    FieldSpec {
        name: "trace",
        label: "Trace (replayed: arrivals, lengths, shared blocks)",
        control: Control::Text,
        example: "mooncake-conversation-60 scale=1 offset=0s",
    },
    FieldSpec {
        name: "in_flight_cap",
        label: "In-flight cap",
        control: Control::Number { unit: "requests" },
        example: "64",
    },
    FieldSpec {
        name: "stall_timeout_s",
        label: "Stall timeout",
        control: Control::Number { unit: "s" },
        example: "30",
    },
    FieldSpec {
        name: "max_model_len",
        label: "Max model length",
        control: Control::Number { unit: "tokens" },
        example: "8192",
    },
    FieldSpec {
        name: "kv_capacity",
        label: "KV cache capacity",
        control: Control::Number { unit: "tokens" },
        example: "430000, or gpu:0.9",
    },
    FieldSpec {
        name: "max_num_seqs",
        label: "Max sequences",
        control: Control::Number { unit: "sequences" },
        example: "256",
    },
    FieldSpec {
        name: "phases",
        label: "Prefill/decode",
        control: Control::Choice(PHASES),
        example: "chunked_prefill",
    },
    FieldSpec {
        name: "scheduling",
        label: "Batching",
        control: Control::Choice(SCHEDULING),
        example: "continuous",
    },
    FieldSpec {
        name: "warmup",
        label: "Warm-up (excluded)",
        control: Control::Span,
        example: "8 requests or 10 s",
    },
    FieldSpec {
        name: "measured",
        label: "Measured window",
        control: Control::Span,
        example: "64 requests or 60 s",
    },
    FieldSpec {
        name: "cooldown",
        label: "Cool-down (excluded)",
        control: Control::Span,
        example: "8 requests or 10 s",
    },
    FieldSpec {
        name: "nonce_prefix",
        label: "Unique prompt prefix",
        control: Control::Choice(NONCE),
        example: "on",
    },
    FieldSpec {
        name: "shared_prefix",
        label: "Shared prompt prefix (tokens, × groups)",
        control: Control::Text,
        example: "none, 2048, or 2048x4",
    },
    FieldSpec {
        name: "temperature",
        label: "Temperature",
        control: Control::Number { unit: "" },
        example: "0",
    },
    FieldSpec {
        name: "sampling_extra",
        label: "Other sampling fields (JSON)",
        control: Control::Text,
        example: "{} or {\"top_p\":0.9}",
    },
    FieldSpec {
        name: "reasoning",
        label: "Reasoning (none, visible or hidden; effort or budget sent)",
        control: Control::Text,
        example: "none, visible effort=high, hidden budget=2048",
    },
    FieldSpec {
        name: "turns",
        label: "Turns per conversation (think time between)",
        control: Control::Text,
        example: "1, 5 think=2s, uniform(3,8)",
    },
];

/// The spec of field `name`.
pub fn field_spec(name: &str) -> Option<&'static FieldSpec> {
    FIELD_SPECS.iter().find(|s| s.name == name)
}

/// Why a pin matters, in one line (the product's argument).
pub fn why(pin: PinId) -> &'static str {
    match pin {
        PinId::Endpoint => "Where requests go and in which API shape. Browsers speak HTTP/2 only over https; over http:// they open at most 6 connections to it.",
        PinId::Model => "Speed scales with model size and precision: an 8B bf16 figure says nothing about a 70B or a 4-bit model, or another engine.",
        PinId::PromptLength => "Prefill grows with the prompt: TTFT at 128 tokens is not TTFT at 8,000.",
        PinId::OutputLength => "Decode slows as the KV cache fills: tok/s over 128 output tokens overstates tok/s over 4,000.",
        PinId::Load => "Aggregate tok/s grows with concurrency while per-stream tok/s falls: the two differ by about the concurrency.",
        PinId::KvBudget => "The KV cache bounds how many sequences decode at once; past it, requests queue and latency jumps.",
        PinId::PrefillDecode => "Whether prefill shares the GPU with decode (colocated, chunked) or not (disaggregated) decides how new prompts slow running streams.",
        PinId::Scheduling => "Continuous batching admits a request mid-batch; static batching makes it wait: TTFT under load differs widely.",
        PinId::Window => "The first seconds (a burst) differ from steady state: warm-up and cool-down are excluded, the measured window is what the numbers cover.",
        PinId::CachePolicy => "A prefix cache skips prefill of what a prompt shares with earlier ones: a unique prefix per request measures the uncached cost, a shared system prompt states exactly what the cache can reuse.",
        PinId::Sampling => "Sampling settings change the work per token and when generation stops.",
        PinId::Conversation => "Chats and agents resend their whole history every turn: prompts grow turn by turn and the prefix cache decides whether turn 10 is fast. Concurrency then counts conversations.",
        PinId::Reasoning => "A reasoning model spends tokens thinking before it answers: TTFT, the first answer token and tok/s at low effort say nothing about high effort, and hidden reasoning tokens are never timed.",
    }
}

/// One section of the form: a pin and its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The pin.
    pub pin: PinId,
    /// Its fields, in form order.
    pub fields: Vec<&'static str>,
}

/// The form's sections, in the order of the pins.
pub fn sections() -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for &(name, pin) in RawConfig::FIELDS {
        match out.iter_mut().find(|s| s.pin == pin) {
            Some(s) => s.fields.push(name),
            None => out.push(Section {
                pin,
                fields: vec![name],
            }),
        }
    }
    out
}

/// Whether field `name` applies to the form as it is (open-loop fields only in an open
/// loop, and the other way round).
pub fn applies(raw: &RawConfig, name: &str) -> bool {
    let mode = parse_choice(
        &raw.load_mode.text,
        &[("closed", 0), ("open", 1), ("replay", 2)],
    );
    match name {
        "concurrency" => mode.is_none_or(|m| m == 0),
        "rate_rps" | "arrival" => mode == Some(1),
        "in_flight_cap" => matches!(mode, Some(1 | 2)),
        "trace" => mode == Some(2),
        "dataset" => [&raw.prompt_tokens, &raw.output_tokens]
            .iter()
            .any(|f| parse_length_dist(&f.text).is_some_and(|d| d.is_dataset())),
        _ => true,
    }
}

/// A section's status badge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinStatus {
    /// A field is empty or invalid.
    Missing,
    /// Set, and at least one value is `undisclosed`.
    Undisclosed,
    /// Set, and at least one value was read from the endpoint.
    Probed,
    /// Set by the user (typed, chosen, a preset or a link).
    Pinned,
}

impl PinStatus {
    /// The badge's word.
    pub fn label(self) -> &'static str {
        match self {
            PinStatus::Missing => "missing",
            PinStatus::Undisclosed => "undisclosed",
            PinStatus::Probed => "probed",
            PinStatus::Pinned => "pinned",
        }
    }
}

/// The status of `section` given the fields the pin parser found missing or invalid.
pub fn section_status(raw: &RawConfig, section: &Section, problems: &[&str]) -> PinStatus {
    let fields = || {
        section
            .fields
            .iter()
            .filter(|n| applies(raw, n))
            .filter_map(|n| raw.field(n).map(|f| (*n, f)))
    };
    if fields().any(|(n, _)| problems.contains(&n)) {
        return PinStatus::Missing;
    }
    if fields().any(|(_, f)| f.text.trim().eq_ignore_ascii_case("undisclosed")) {
        return PinStatus::Undisclosed;
    }
    if fields().any(|(_, f)| {
        matches!(
            f.source,
            Provenance::Probed { .. } | Provenance::Vendor { .. }
        )
    }) {
        return PinStatus::Probed;
    }
    PinStatus::Pinned
}

/// The provenance tag's word and the source shown on hover or focus.
pub fn provenance_tag(p: &Provenance) -> (&'static str, String) {
    match p {
        Provenance::Declared {} => ("declared", "typed, chosen, or from a preset or link".into()),
        Provenance::Probed { url, field } => ("probed", format!("read from {url} ({field})")),
        Provenance::Measured { what } => ("measured", format!("measured: {what}")),
        Provenance::Vendor { vendor, why } => (
            "vendor",
            format!("{vendor} (pinbench's vendor table): {why}"),
        ),
    }
}

/// The shape of a length distribution in the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthShape {
    /// One length.
    Fixed,
    /// uniform(min,max).
    Uniform,
    /// normal(mean,std,min,max), clipped.
    Normal,
    /// The lengths of a dataset file's rows (opened with the Run screen's Dataset file).
    Dataset,
    /// A prompt only: a dataset row's own prompt text, sent as it is.
    DatasetText,
}

impl LengthShape {
    /// All shapes, in menu order.
    pub const ALL: [LengthShape; 5] = [
        LengthShape::Fixed,
        LengthShape::Uniform,
        LengthShape::Normal,
        LengthShape::Dataset,
        LengthShape::DatasetText,
    ];

    /// Its value in the form (and menu).
    pub fn id(self) -> &'static str {
        match self {
            LengthShape::Fixed => "fixed",
            LengthShape::Uniform => "uniform",
            LengthShape::Normal => "normal",
            LengthShape::Dataset => "dataset",
            LengthShape::DatasetText => "dataset_text",
        }
    }

    /// The names of its numbers.
    pub fn parts(self) -> &'static [&'static str] {
        match self {
            LengthShape::Fixed => &["tokens"],
            LengthShape::Uniform => &["min", "max"],
            LengthShape::Normal => &["mean", "std", "min", "max"],
            LengthShape::Dataset | LengthShape::DatasetText => &[],
        }
    }

    /// The shape with this id.
    pub fn from_id(id: &str) -> Option<LengthShape> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }
}

/// Splits a length field's text into its shape and the text of each number (as typed,
/// so a half-typed value survives): `uniform(100,` → (Uniform, ["100", ""]).
pub fn length_parts(text: &str) -> (LengthShape, Vec<String>) {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    for shape in [LengthShape::Dataset, LengthShape::DatasetText] {
        if lower == shape.id() {
            return (shape, Vec::new());
        }
    }
    for shape in [LengthShape::Uniform, LengthShape::Normal] {
        if let Some(rest) = lower.strip_prefix(shape.id()) {
            let inner = rest.trim().trim_start_matches('(').trim_end_matches(')');
            let mut parts: Vec<String> = inner.split(',').map(|s| s.trim().to_owned()).collect();
            parts.resize(shape.parts().len(), String::new());
            return (shape, parts);
        }
    }
    (LengthShape::Fixed, vec![t.to_owned()])
}

/// The text of a length field from its shape and numbers.
pub fn length_text(shape: LengthShape, parts: &[String]) -> String {
    match shape {
        LengthShape::Fixed => parts.first().cloned().unwrap_or_default(),
        s @ (LengthShape::Dataset | LengthShape::DatasetText) => s.id().into(),
        s => format!("{}({})", s.id(), parts.join(",")),
    }
}

/// The text of a length field switched to `shape`, keeping what it can: a fixed 128
/// becomes uniform(128,128) and normal(128,0,128,128).
pub fn length_reshape(text: &str, shape: LengthShape) -> String {
    let (old, parts) = length_parts(text);
    if old == shape {
        return text.to_owned();
    }
    let typical = match parse_length_dist(text) {
        Some(LengthDist::Fixed { tokens }) => tokens.to_string(),
        Some(LengthDist::Uniform { min, max }) => (min / 2 + max / 2).to_string(),
        Some(LengthDist::NormalClipped { mean, .. }) => mean.to_string(),
        Some(LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {}) | None => {
            parts.first().cloned().unwrap_or_default()
        }
    };
    let parts: Vec<String> = match shape {
        LengthShape::Fixed => vec![typical],
        LengthShape::Dataset | LengthShape::DatasetText => Vec::new(),
        LengthShape::Uniform => vec![typical.clone(), typical],
        LengthShape::Normal => vec![typical.clone(), "0".into(), typical.clone(), typical],
    };
    length_text(shape, &parts)
}

/// Splits a window's text into its number and whether it is a duration (seconds):
/// `30s` → ("30", true), `8 requests` → ("8", false).
pub fn span_parts(text: &str) -> (String, bool) {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if let Some(n) = lower
        .strip_suffix("requests")
        .or_else(|| lower.strip_suffix("request"))
    {
        return (n.trim().to_owned(), false);
    }
    if let Some(n) = lower.strip_suffix('s') {
        return (n.trim().to_owned(), true);
    }
    (t.to_owned(), false)
}

/// A window's text from its number and unit. A number typed with its own unit keeps it.
pub fn span_text(number: &str, seconds: bool) -> String {
    let n = number.trim();
    if n.is_empty() || parse_span(n).is_some_and(|_| n.ends_with(|c: char| c.is_ascii_alphabetic()))
    {
        return n.to_owned();
    }
    if seconds {
        format!("{n}s")
    } else {
        n.to_owned()
    }
}

/// Splits an arrival's text: `gamma(2)` → (true, "2"), `poisson` → (false, "").
pub fn arrival_parts(text: &str) -> (bool, String) {
    let lower = text.trim().to_ascii_lowercase();
    match lower.strip_prefix("gamma") {
        Some(rest) => (
            true,
            rest.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim()
                .to_owned(),
        ),
        None => (false, String::new()),
    }
}

/// An arrival's text from its parts.
pub fn arrival_text(gamma: bool, shape: &str) -> String {
    if gamma {
        format!("gamma({})", shape.trim())
    } else {
        "poisson".into()
    }
}

/// A workload preset: fills every workload pin (never model, endpoint or server pins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// Whose methodology it follows (`pinbench`, `Artificial Analysis`, …).
    pub group: &'static str,
    /// Stable id (`preset-{id}` test id).
    pub id: &'static str,
    /// Button label.
    pub label: &'static str,
    /// `(field, text)` it sets.
    pub fills: &'static [(&'static str, &'static str)],
    /// Goodput SLOs the methodology judges by (TTFT, TPOT, ms), when it has them.
    pub slo_ms: Option<(&'static str, &'static str)>,
}

/// The workload pins every preset states the same way: exact prompts, exact output
/// lengths, a unique prefix per request, greedy sampling, a 30 s stall timeout.
const PRESET_COMMON: [(&str, &str); 9] = [
    ("prompt_exactness", "server_tokenizer"),
    ("output_enforcement", "ignore_eos"),
    ("load_mode", "closed"),
    ("stall_timeout_s", "30"),
    ("nonce_prefix", "on"),
    ("temperature", "0"),
    ("sampling_extra", "{}"),
    ("shared_prefix", "none"),
    ("turns", "1"),
];

/// An Artificial Analysis workload (`prompt` → `output` tokens) as one stream (1 warm-up,
/// 10 measured) or as 10 parallel (10 warm-up, 40 measured, 10 cool-down).
macro_rules! aa_preset {
    (single, $id:literal, $label:literal, $prompt:literal, $output:literal) => {
        aa_preset!(@ $id, $label, $prompt, $output, "1", "1", "10", "0")
    };
    (parallel, $id:literal, $label:literal, $prompt:literal, $output:literal) => {
        aa_preset!(@ $id, $label, $prompt, $output, "10", "10", "40", "10")
    };
    (@ $id:literal, $label:literal, $prompt:literal, $output:literal, $c:literal, $w:literal, $m:literal, $cd:literal) => {
        Preset {
            group: "Artificial Analysis",
            id: $id,
            label: $label,
            fills: &[
                ("prompt_tokens", $prompt),
                ("output_tokens", $output),
                ("concurrency", $c),
                ("warmup", $w),
                ("measured", $m),
                ("cooldown", $cd),
            ],
            slo_ms: None,
        }
    };
}

/// The presets, first the one a newcomer is offered.
pub const PRESETS: &[Preset] = &[
    Preset {
        group: "pinbench",
        id: "chat",
        label: "chat 128→128, c=8",
        fills: &[
            ("prompt_tokens", "128"),
            ("output_tokens", "128"),
            ("concurrency", "8"),
            ("warmup", "8"),
            ("measured", "64"),
            ("cooldown", "8"),
        ],
        slo_ms: None,
    },
    // A chat product's traffic: every request begins with the same 2k-token system
    // prompt (a prefix cache reuses it), then a unique 128-token message.
    Preset {
        group: "pinbench",
        id: "shared-system",
        label: "chat, shared 2k system prompt 2176→128, c=8",
        fills: &[
            ("prompt_tokens", "2176"),
            ("output_tokens", "128"),
            ("shared_prefix", "2048"),
            ("concurrency", "8"),
            ("warmup", "8"),
            ("measured", "64"),
            ("cooldown", "8"),
        ],
        slo_ms: None,
    },
    // A chat's conversations: five turns, each resending the history, a second's reading
    // between them; concurrency counts conversations.
    Preset {
        group: "pinbench",
        id: "chat-5-turns",
        label: "5-turn chat 128→128 per turn, think 1 s, 8 conversations",
        fills: &[
            ("prompt_tokens", "128"),
            ("output_tokens", "128"),
            ("turns", "5 think=1"),
            ("concurrency", "8"),
            ("warmup", "8"),
            ("measured", "64"),
            ("cooldown", "8"),
        ],
        slo_ms: None,
    },
    // A coding agent's session: a 3k-token system prompt and tool list shared by every
    // session, a 512-token task, then 8 turns in all, each appending a 512-token tool
    // result to the growing context and answering with a short 64-token step; 0.5 s of
    // tool time between turns. Its last prompt is ~7.6k tokens.
    Preset {
        group: "pinbench",
        id: "agentic",
        label: "agentic session: 3k shared prefix, 8 turns of 512-token tool results → 64, c=8",
        fills: &[
            ("prompt_tokens", "3584"),
            ("output_tokens", "64"),
            ("shared_prefix", "3072"),
            ("turns", "8 think=0.5"),
            ("concurrency", "8"),
            ("warmup", "8"),
            ("measured", "64"),
            ("cooldown", "8"),
        ],
        slo_ms: None,
    },
    // A real trace: the first 60 requests of Mooncake's conversation trace (kvcache-ai,
    // FAST'25) as they arrived over 15 s, with their lengths (up to 87k-token prompts) and
    // shared 512-token blocks; at most 64 in flight.
    Preset {
        group: "pinbench",
        id: "mooncake-replay",
        label: "Mooncake conversation trace replay, 60 requests over 15 s",
        fills: &[
            ("load_mode", "replay"),
            ("trace", "mooncake-conversation-60 scale=1 offset=0s"),
            ("in_flight_cap", "64"),
            ("prompt_tokens", "trace"),
            ("output_tokens", "trace"),
            ("nonce_prefix", "off"),
            ("warmup", "0"),
            ("measured", "60"),
            ("cooldown", "0"),
        ],
        slo_ms: None,
    },
    Preset {
        group: "pinbench",
        id: "agent",
        label: "agent 8000→256, c=16",
        fills: &[
            ("prompt_tokens", "8000"),
            ("output_tokens", "256"),
            ("concurrency", "16"),
            ("warmup", "16"),
            ("measured", "64"),
            ("cooldown", "16"),
        ],
        slo_ms: None,
    },
    Preset {
        group: "pinbench",
        id: "long-decode",
        label: "long decode 8000→4000, c=16",
        fills: &[
            ("prompt_tokens", "8000"),
            ("output_tokens", "4000"),
            ("concurrency", "16"),
            ("warmup", "16"),
            ("measured", "32"),
            ("cooldown", "16"),
        ],
        slo_ms: None,
    },
    Preset {
        group: "pinbench",
        id: "single",
        label: "single stream 128→32, c=1",
        fills: &[
            ("prompt_tokens", "128"),
            ("output_tokens", "32"),
            ("concurrency", "1"),
            ("warmup", "2"),
            ("measured", "16"),
            ("cooldown", "0"),
        ],
        slo_ms: None,
    },
    // Artificial Analysis: each workload as one stream and as 10 parallel, a unique
    // prompt per request; their headline figures are the median per-stream output speed
    // after the first chunk, and the median TTFT.
    aa_preset!(single, "aa-100-300-c1", "100→300, 1 stream", "100", "300"),
    aa_preset!(
        single,
        "aa-1k-1k-c1",
        "1k→1k (default), 1 stream",
        "1000",
        "1000"
    ),
    aa_preset!(
        single,
        "aa-10k-1500-c1",
        "10k→1.5k, 1 stream",
        "10000",
        "1500"
    ),
    aa_preset!(
        single,
        "aa-100k-2k-c1",
        "100k→2k, 1 stream",
        "100000",
        "2000"
    ),
    aa_preset!(
        parallel,
        "aa-100-300-c10",
        "100→300, 10 parallel",
        "100",
        "300"
    ),
    aa_preset!(
        parallel,
        "aa-1k-1k-c10",
        "1k→1k, 10 parallel",
        "1000",
        "1000"
    ),
    aa_preset!(
        parallel,
        "aa-10k-1500-c10",
        "10k→1.5k, 10 parallel",
        "10000",
        "1500"
    ),
    aa_preset!(
        parallel,
        "aa-100k-2k-c10",
        "100k→2k, 10 parallel",
        "100000",
        "2000"
    ),
    // MLPerf Inference, server scenario: Poisson arrivals at a target rate, judged by
    // 99th-percentile TTFT and TPOT limits (here the Llama 2 70B limits: TTFT ≤ 2 s,
    // TPOT ≤ 200 ms). The lengths are pinbench's choice, not MLPerf's dataset.
    Preset {
        group: "MLPerf server",
        id: "mlperf-server",
        label: "Poisson 2 req/s, 1024→256, p99 TTFT ≤ 2 s / TPOT ≤ 200 ms",
        fills: &[
            ("load_mode", "open"),
            ("rate_rps", "2"),
            ("arrival", "poisson"),
            ("in_flight_cap", "100"),
            ("prompt_tokens", "1024"),
            ("output_tokens", "256"),
            ("warmup", "10s"),
            ("measured", "60s"),
            ("cooldown", "10s"),
        ],
        slo_ms: Some(("2000", "200")),
    },
    // vLLM `bench serve` with the random dataset's defaults: 1024 input and 128 output
    // tokens, 1000 prompts sent at once, no ignore_eos (outputs may stop early).
    Preset {
        group: "vLLM bench serve",
        id: "vllm-random",
        label: "random dataset defaults: 1024→128, 1000 prompts at once",
        fills: &[
            ("prompt_tokens", "1024"),
            ("output_tokens", "128"),
            ("output_enforcement", "none"),
            ("concurrency", "1000"),
            ("warmup", "0"),
            ("measured", "1000"),
            ("cooldown", "0"),
        ],
        slo_ms: None,
    },
];

impl Preset {
    /// Every `(field, text)` the preset sets: its own, and the common workload pins it does
    /// not set itself.
    pub fn all_fills(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let own = self.fills;
        PRESET_COMMON
            .into_iter()
            .filter(move |(name, _)| !own.iter().any(|(n, _)| n == name))
            .chain(own.iter().copied())
    }

    /// Applies the preset to a form (each value declared).
    pub fn apply(&self, raw: &mut RawConfig) {
        for (name, text) in self.all_fills() {
            if let Some(f) = raw.field_mut(name) {
                *f = RawField::declared(text);
            }
        }
    }
}

/// The fields a re-run takes from a report: every workload pin (lengths, exactness,
/// enforcement, load, windows, cache policy, sampling). Endpoint, model and server pins
/// are left out, to be probed or typed for the new endpoint.
pub const WORKLOAD_FIELDS: &[&str] = &[
    "prompt_tokens",
    "prompt_exactness",
    "output_tokens",
    "output_enforcement",
    "dataset",
    "load_mode",
    "concurrency",
    "rate_rps",
    "arrival",
    "in_flight_cap",
    "trace",
    "stall_timeout_s",
    "warmup",
    "measured",
    "cooldown",
    "nonce_prefix",
    "shared_prefix",
    "temperature",
    "sampling_extra",
    "reasoning",
    "turns",
];

/// The reasoning pin as the form writes it: `none`, `visible effort=high`, `hidden budget=2048`.
pub fn reasoning_form(r: &crate::dialect::ReasoningRequest) -> String {
    let mut s = match r.mode {
        crate::dialect::ReasoningMode::None => "none",
        crate::dialect::ReasoningMode::Visible => "visible",
        crate::dialect::ReasoningMode::Hidden => "hidden",
    }
    .to_owned();
    if let Some(e) = &r.effort {
        s.push_str(" effort=");
        s.push_str(e);
    }
    if let Some(b) = r.budget_tokens {
        s.push_str(&format!(" budget={b}"));
    }
    s
}

/// A span as the form writes it: `8` (requests) or `1.5s`.
fn span_form(s: Span) -> String {
    match s {
        Span::Requests { count } => count.to_string(),
        Span::Duration { ms } => format!("{}s", milli(ms)),
    }
}

/// The workload pins of a pinned configuration as form text ([`WORKLOAD_FIELDS`]), each
/// declared: what "Run these pins against my endpoint" fills in.
pub fn workload_form(cfg: &RunConfig) -> RawConfig {
    let mut raw = RawConfig::default();
    let list = |v: Vec<String>| v.join(",");
    let steps = &cfg.load.value.steps;
    let closed: Vec<String> = steps
        .iter()
        .filter_map(|s| match s {
            LoadStep::Closed { concurrency } => Some(concurrency.to_string()),
            LoadStep::Open { .. } => None,
        })
        .collect();
    let open: Vec<(String, String, String)> = steps
        .iter()
        .filter_map(|s| match *s {
            LoadStep::Open {
                rate_milli_rps,
                arrival,
                in_flight_cap,
            } => Some((
                milli(rate_milli_rps),
                match arrival {
                    Arrival::Poisson {} => "poisson".to_owned(),
                    Arrival::Gamma { shape_milli } => {
                        format!("gamma({})", milli(u64::from(shape_milli)))
                    }
                    Arrival::Trace {} => "trace".to_owned(),
                },
                in_flight_cap.to_string(),
            )),
            LoadStep::Closed { .. } => None,
        })
        .collect();
    let w = cfg.window.value;
    let mut fills: Vec<(&str, String)> = vec![
        ("prompt_tokens", cfg.prompt_len.value.to_string()),
        ("prompt_exactness", wire_name(&cfg.prompt_exactness.value)),
        ("output_tokens", cfg.output_len.value.to_string()),
        (
            "output_enforcement",
            wire_name(&cfg.output_enforcement.value),
        ),
        ("stall_timeout_s", milli(cfg.load.value.stall_timeout_ms)),
        ("warmup", span_form(w.warmup)),
        ("measured", span_form(w.measured)),
        ("cooldown", span_form(w.cooldown)),
        (
            "nonce_prefix",
            if cfg.cache.value.nonce_prefix {
                "on"
            } else {
                "off"
            }
            .to_owned(),
        ),
        (
            "shared_prefix",
            cfg.cache
                .value
                .shared_prefix
                .map_or_else(|| "none".to_owned(), |s| s.to_string()),
        ),
        (
            "temperature",
            crate::decimal::Shortest(cfg.sampling.value.temperature).to_string(),
        ),
        (
            "sampling_extra",
            serde_json::to_string(&cfg.sampling.value.extra).unwrap_or_else(|_| "{}".into()),
        ),
    ];
    if let Some(r) = &cfg.reasoning {
        fills.push(("reasoning", reasoning_form(&r.value)));
    }
    fills.push(("turns", cfg.conversation().to_string()));
    if let Some(d) = &cfg.dataset {
        fills.push(("dataset", d.value.form_text()));
    }
    if let Some(t) = &cfg.trace {
        fills.push(("load_mode", "replay".into()));
        fills.push(("trace", t.value.form_text()));
        if let Some(first) = open.first() {
            fills.push(("in_flight_cap", first.2.clone()));
        }
    } else if open.is_empty() {
        fills.push(("load_mode", "closed".into()));
        fills.push(("concurrency", list(closed)));
    } else {
        fills.push(("load_mode", "open".into()));
        fills.push(("rate_rps", list(open.iter().map(|o| o.0.clone()).collect())));
        if let Some(first) = open.first() {
            fills.push(("arrival", first.1.clone()));
            fills.push(("in_flight_cap", first.2.clone()));
        }
    }
    for (name, text) in fills {
        if let Some(f) = raw.field_mut(name) {
            *f = RawField::declared(text);
        }
    }
    raw
}

/// Per-stream decode time assumed for the rough duration when nothing was measured.
pub const ASSUMED_MS_PER_TOKEN: u64 = 20;

/// What a pinned run will do, said before Start.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSummary {
    /// The endpoint's origin (where requests go).
    pub origin: String,
    /// Requests over all steps, when every window counts requests.
    pub requests: Option<u64>,
    /// Expected prompt and output tokens over those requests (means of the distributions).
    pub tokens: Option<(u64, u64)>,
    /// A rough duration, seconds, and how it was reached.
    pub duration: (u64, String),
}

/// The summary of a pinned run. `ms_per_token`: a measured per-stream decode time, if the
/// page has one; else [`ASSUMED_MS_PER_TOKEN`] (said in the text).
pub fn plan_summary(cfg: &RunConfig, ms_per_token: Option<u64>) -> PlanSummary {
    let w = cfg.window.value;
    let count = |s: Span| match s {
        Span::Requests { count } => Some(u64::from(count)),
        Span::Duration { .. } => None,
    };
    let secs = |s: Span| match s {
        Span::Duration { ms } => Some(ms.div_ceil(1000)),
        Span::Requests { .. } => None,
    };
    let steps = &cfg.load.value.steps;
    let n_steps = steps.len() as u64;
    let per_step = match (count(w.warmup), count(w.measured), count(w.cooldown)) {
        (Some(a), Some(b), Some(c)) => Some(a + b + c),
        _ => None,
    };
    let requests = per_step.map(|n| n.saturating_mul(n_steps));
    let mean = |d: &LengthDist| match *d {
        LengthDist::Fixed { tokens } => u64::from(tokens),
        LengthDist::Uniform { min, max } => (u64::from(min) + u64::from(max)) / 2,
        LengthDist::NormalClipped { mean, .. } => u64::from(mean),
        // A replay's or a dataset's lengths are its rows': their means are not pinned.
        LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => 0,
    };
    let (p, o) = (mean(&cfg.prompt_len.value), mean(&cfg.output_len.value));
    let tokens = requests.map(|n| (n.saturating_mul(p), n.saturating_mul(o)));
    let spans_secs = match (secs(w.warmup), secs(w.measured), secs(w.cooldown)) {
        (Some(a), Some(b), Some(c)) => Some((a + b + c).saturating_mul(n_steps)),
        _ => None,
    };
    let (tpot, assumed) = match ms_per_token {
        Some(ms) => (ms, false),
        None => (ASSUMED_MS_PER_TOKEN, true),
    };
    let duration = match (spans_secs, per_step) {
        (Some(s), _) => (s, "the windows' durations".to_owned()),
        (None, Some(n)) => {
            let request_ms = o.saturating_mul(tpot);
            let total_ms: u64 = steps
                .iter()
                .map(|s| match *s {
                    LoadStep::Closed { concurrency } => n
                        .div_ceil(u64::from(concurrency.max(1)))
                        .saturating_mul(request_ms),
                    LoadStep::Open { rate_milli_rps, .. } => {
                        n.saturating_mul(1_000_000) / rate_milli_rps.max(1) + request_ms
                    }
                })
                .fold(0, u64::saturating_add);
            let how = if assumed {
                format!("assuming {tpot} ms per output token per stream (not measured yet)")
            } else {
                format!("at {tpot} ms per output token per stream, as measured")
            };
            (total_ms.div_ceil(1000), how)
        }
        // Mixed windows: the durations that are known, plus the rest at the assumed pace.
        (None, None) => (0, "mixed request-count and duration windows".to_owned()),
    };
    PlanSummary {
        origin: origin_of(&cfg.endpoint.base_url).unwrap_or_default(),
        requests,
        tokens,
        duration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_a_spec_in_form_order() {
        let names: Vec<&str> = RawConfig::FIELDS.iter().map(|f| f.0).collect();
        let specs: Vec<&str> = FIELD_SPECS.iter().map(|s| s.name).collect();
        assert_eq!(names, specs);
        // Every choice's values are what the pin parser accepts.
        for s in FIELD_SPECS {
            if let Control::Choice(opts) = s.control {
                for (v, _) in opts {
                    let mut raw = crate::pins::tests::full_raw();
                    *raw.field_mut(s.name).expect("field") = RawField::declared(*v);
                    let problems = match RunConfig::try_from(&raw) {
                        Ok(_) => Vec::new(),
                        Err(e) => e.problems().iter().map(|p| p.field.clone()).collect(),
                    };
                    assert!(!problems.iter().any(|p| p == s.name), "{} = {v}", s.name);
                }
            }
        }
    }

    #[test]
    fn sections_follow_the_pins() {
        let s = sections();
        let pins: Vec<PinId> = s.iter().map(|s| s.pin).collect();
        assert_eq!(
            pins,
            vec![
                PinId::Endpoint,
                PinId::Model,
                PinId::PromptLength,
                PinId::OutputLength,
                PinId::Load,
                PinId::KvBudget,
                PinId::PrefillDecode,
                PinId::Scheduling,
                PinId::Window,
                PinId::CachePolicy,
                PinId::Sampling,
                PinId::Reasoning,
                PinId::Conversation,
            ]
        );
        assert_eq!(
            s.iter().map(|s| s.fields.len()).sum::<usize>(),
            RawConfig::FIELDS.len()
        );
    }

    #[test]
    fn every_preset_pins_every_workload_field() {
        // With the endpoint and server facts a probe gives, a preset alone pins the run.
        for p in PRESETS {
            let mut raw = RawConfig::default();
            for (name, text) in [
                ("endpoint_url", "https://127.0.0.1:8443"),
                ("dialect", "completions"),
                ("model_id", "m"),
                ("model_params", "8B"),
                ("model_quant", "bf16"),
                ("model_engine", "pinbench-refserver 0.1.0"),
                ("max_model_len", "8192"),
                ("kv_capacity", "430000"),
                ("max_num_seqs", "256"),
                ("phases", "chunked_prefill"),
                ("scheduling", "continuous"),
                ("reasoning", "none"),
            ] {
                *raw.field_mut(name).expect("field") = RawField::declared(text);
            }
            p.apply(&mut raw);
            let cfg = RunConfig::try_from(&raw);
            assert!(cfg.is_ok(), "{}: {:?}", p.id, cfg.err());
            // No preset touches a model, endpoint or server pin.
            for (name, _) in p.all_fills() {
                let pin = RawConfig::FIELDS.iter().find(|f| f.0 == name).map(|f| f.1);
                assert!(
                    !matches!(
                        pin,
                        Some(
                            PinId::Endpoint
                                | PinId::Model
                                | PinId::KvBudget
                                | PinId::PrefillDecode
                                | PinId::Scheduling
                        )
                    ),
                    "{}: {name}",
                    p.id
                );
            }
        }
    }

    #[test]
    fn length_sub_form_round_trips() {
        for t in [
            "128",
            "uniform(100,200)",
            "normal(500,100,100,900)",
            "uniform(100,",
            "dataset",
            "dataset_text",
            "",
        ] {
            let (shape, parts) = length_parts(t);
            let back = length_text(shape, &parts);
            assert_eq!(length_parts(&back), (shape, parts), "{t}");
        }
        assert_eq!(
            length_reshape("128", LengthShape::Uniform),
            "uniform(128,128)"
        );
        assert_eq!(
            length_reshape("128", LengthShape::Normal),
            "normal(128,0,128,128)"
        );
        assert_eq!(
            length_reshape("uniform(100,200)", LengthShape::Fixed),
            "150"
        );
        assert!(parse_length_dist(&length_reshape("64", LengthShape::Normal)).is_some());
        assert_eq!(length_reshape("64", LengthShape::Dataset), "dataset");
        assert_eq!(parse_length_dist("dataset"), Some(LengthDist::Dataset {}));
    }

    #[test]
    fn span_and_arrival_sub_forms() {
        assert_eq!(span_parts("30s"), ("30".into(), true));
        assert_eq!(span_parts("8 requests"), ("8".into(), false));
        assert_eq!(span_parts("8"), ("8".into(), false));
        assert_eq!(span_text("30", true), "30s");
        assert_eq!(span_text("8", false), "8");
        assert_eq!(span_text("30s", false), "30s");
        assert_eq!(span_text("", true), "");
        assert_eq!(arrival_parts("gamma(0.5)"), (true, "0.5".into()));
        assert_eq!(arrival_text(true, "0.5"), "gamma(0.5)");
        assert_eq!(arrival_parts("poisson"), (false, String::new()));
    }

    #[test]
    fn section_status_badges() {
        let mut raw = crate::pins::tests::full_raw();
        raw.model_engine = RawField::declared("vLLM 0.11.0");
        let secs = sections();
        let model = secs.iter().find(|s| s.pin == PinId::Model).expect("model");
        assert_eq!(section_status(&raw, model, &[]), PinStatus::Pinned);
        raw.model_quant = RawField::declared("undisclosed");
        assert_eq!(section_status(&raw, model, &[]), PinStatus::Undisclosed);
        raw.model_id = RawField {
            text: "m".into(),
            source: Provenance::Probed {
                url: "u".into(),
                field: "f".into(),
            },
        };
        raw.model_quant = RawField::declared("bf16");
        assert_eq!(section_status(&raw, model, &[]), PinStatus::Probed);
        assert_eq!(
            section_status(&raw, model, &["model_id"]),
            PinStatus::Missing
        );
        // An open-loop field does not make a closed loop's load section missing.
        let load = secs.iter().find(|s| s.pin == PinId::Load).expect("load");
        assert_eq!(section_status(&raw, load, &["rate_rps"]), PinStatus::Pinned);
    }

    #[test]
    fn a_reports_workload_pins_round_trip_through_the_form() {
        for extra in [
            vec![],
            vec![
                ("load_mode", "open"),
                ("rate_rps", "1.5,4"),
                ("arrival", "gamma(0.5)"),
                ("in_flight_cap", "32"),
                ("measured", "12.5s"),
                ("prompt_tokens", "normal(500,100,100,900)"),
                ("nonce_prefix", "off"),
                ("shared_prefix", "24x3"),
                ("sampling_extra", "{\"top_p\":0.9}"),
                ("temperature", "0.7"),
            ],
            vec![
                ("load_mode", "replay"),
                ("trace", "mooncake-conversation-60 scale=0.5 offset=2s"),
                ("in_flight_cap", "16"),
                ("prompt_tokens", "trace"),
                ("output_tokens", "trace"),
                ("nonce_prefix", "off"),
            ],
            vec![
                ("load_mode", "replay"),
                ("trace", "file:conv.jsonl sha256=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff format=mooncake rows=3 span_us=2000000 input_max=900 output_max=40 scale=2 offset=0s"),
                ("in_flight_cap", "4"),
                ("prompt_tokens", "trace"),
                ("output_tokens", "trace"),
                ("nonce_prefix", "off"),
            ],
        ] {
            let mut raw = crate::pins::tests::full_raw();
            for (k, v) in extra {
                *raw.field_mut(k).expect("field") = RawField::declared(v);
            }
            let cfg = RunConfig::try_from(&raw).expect("pinned");
            let w = workload_form(&cfg);
            // Only workload fields are filled.
            for &(name, _) in RawConfig::FIELDS {
                let filled = !w.field(name).map(|f| f.text.is_empty()).unwrap_or(true);
                if filled {
                    assert!(WORKLOAD_FIELDS.contains(&name), "{name}");
                }
            }
            // With the same server pins, the form pins the same workload.
            let mut again = raw.clone();
            for name in WORKLOAD_FIELDS {
                *again.field_mut(name).expect("field") = w.field(name).cloned().unwrap_or_default();
            }
            let back = RunConfig::try_from(&again).expect("pinned again");
            assert_eq!(back.prompt_len.value, cfg.prompt_len.value);
            assert_eq!(back.output_len.value, cfg.output_len.value);
            assert_eq!(back.load.value, cfg.load.value);
            assert_eq!(back.window.value, cfg.window.value);
            assert_eq!(back.cache.value, cfg.cache.value);
            assert_eq!(back.sampling.value, cfg.sampling.value);
            assert_eq!(back.prompt_exactness.value, cfg.prompt_exactness.value);
            assert_eq!(back.output_enforcement.value, cfg.output_enforcement.value);
            assert_eq!(back.trace, cfg.trace);
        }
    }

    #[test]
    fn plan_summary_counts_requests_and_tokens() {
        let raw = crate::pins::tests::full_raw();
        let cfg = RunConfig::try_from(&raw).expect("pinned");
        let s = plan_summary(&cfg, None);
        let w = cfg.window.value;
        let n = |s: Span| match s {
            Span::Requests { count } => u64::from(count),
            Span::Duration { .. } => 0,
        };
        let per_step = n(w.warmup) + n(w.measured) + n(w.cooldown);
        let steps = cfg.load.value.steps.len() as u64;
        assert_eq!(s.requests, Some(per_step * steps));
        let (p, o) = s.tokens.expect("tokens");
        assert_eq!(p, per_step * steps * u64::from(cfg.prompt_len.value.max()));
        assert_eq!(o, per_step * steps * u64::from(cfg.output_len.value.max()));
        assert!(s.duration.1.contains("assuming"));
        let measured = plan_summary(&cfg, Some(5));
        assert!(measured.duration.0 <= s.duration.0);
        assert!(!s.origin.is_empty());
    }
}
