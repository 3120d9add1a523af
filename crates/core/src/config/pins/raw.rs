//! The raw form: every pin as text with its provenance, and the share link's JSON form.

use super::*;

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
            source: Provenance::Declared {},
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
    /// Lengths from a dataset file the host reads: `file:NAME sha256=HEX format=F rows=N
    /// sampled=N` (prompt and output tokens are then `dataset`).
    dataset => PinId::PromptLength,
    /// `closed` or `open`.
    load_mode => PinId::Load,
    /// Closed loop: concurrency, or a comma list for a sweep.
    concurrency => PinId::Load,
    /// Open loop: req/s, or a comma list for a sweep.
    rate_rps => PinId::Load,
    /// Open loop: `poisson` or `gamma(shape)`.
    arrival => PinId::Load,
    /// Replay: a built-in trace's name or `file:NAME sha256=HEX …` (the host reads the
    /// file), then `scale=S` and `offset=Ns`.
    trace => PinId::Load,
    /// Open loop or replay: most requests in flight.
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
    /// `none`, a prefix length in tokens shared by every request (`2048`), or with the
    /// number of distinct prefixes (`2048x4`).
    shared_prefix => PinId::CachePolicy,
    /// Temperature.
    temperature => PinId::Sampling,
    /// Other sampling fields as a JSON object (may be `{}`).
    sampling_extra => PinId::Sampling,
    /// `none`, `visible` or `hidden`, with `effort=LEVEL` or `budget=TOKENS` as sent.
    reasoning => PinId::Reasoning,
    /// Turns per conversation (`1`, `5`, `uniform(3,8)`), with `think=SECONDS` between
    /// an answer and the next turn.
    turns => PinId::Conversation,
}

impl RawConfig {
    /// The non-empty fields as a JSON object `{field: text}`, for a shareable link. It holds
    /// only pins: the API key is not part of the configuration and never enters it.
    pub fn to_share_json(&self) -> String {
        // Inserted one by one: collecting into a map would pull a sort into the wasm.
        let mut map = BTreeMap::new();
        for (name, _) in Self::FIELDS {
            if let Some(t) = self.field(name).map(|f| f.text.trim()) {
                if !t.is_empty() {
                    map.insert(*name, t);
                }
            }
        }
        serde_json::to_string(&map).unwrap_or_default()
    }

    /// Fills fields from [`RawConfig::to_share_json`]'s output as declared values; unknown
    /// names are ignored. `None` when the text is not such an object.
    pub fn from_share_json(text: &str) -> Option<RawConfig> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let map = v.as_object()?;
        let mut r = RawConfig::default();
        // Every member must be a string, as a `{field: text}` map reads.
        for (name, value) in map {
            let value = value.as_str()?;
            if let Some(f) = r.field_mut(name) {
                *f = RawField::declared(value.to_owned());
            }
        }
        Some(r)
    }
}
