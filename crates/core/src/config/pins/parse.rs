//! Raw form → pinned configuration (`TryFrom<&RawConfig> for RunConfig`), with every
//! missing or invalid pin listed by name; the parsers of each kind of value.

use super::*;

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

pub(super) fn parse_u32(t: &str) -> Option<u32> {
    t.replace('_', "").parse().ok()
}

pub(super) fn parse_positive_u32(t: &str) -> Option<u32> {
    parse_u32(t).filter(|&v| v > 0)
}

pub use crate::decimal::parse_milli;

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
    // A report stores it as a JSON integer a signature covers exactly: ≤ 2^53 − 1.
    u64::try_from(v)
        .ok()
        .filter(|&v| v > 0 && v <= MAX_JSON_INTEGER)
}

/// A parameter count in human units, exact: `8.03 B` for 8,030,000,000, `270 M`,
/// `268.098176 M` (never rounded, so two different counts never read the same).
pub fn fmt_params(n: u64) -> String {
    const UNITS: [(u64, &str, usize); 4] = [
        (1_000_000_000_000, "T", 12),
        (1_000_000_000, "B", 9),
        (1_000_000, "M", 6),
        (1_000, "K", 3),
    ];
    for (unit, name, zeros) in UNITS {
        if n >= unit {
            let (whole, frac) = (n / unit, n % unit);
            if frac == 0 {
                return format!("{whole} {name}");
            }
            let digits = format!("{frac:0zeros$}");
            return format!("{whole}.{} {name}", digits.trim_end_matches('0'));
        }
    }
    n.to_string()
}

/// A parameter count as form text a person reads and the form parses back exactly:
/// `8.03B` for 8,030,000,000; the plain integer where no unit says it exactly.
pub fn param_count_text(n: u64) -> String {
    let t = fmt_params(n).replace(' ', "");
    if parse_param_count(&t) == Some(n) {
        t
    } else {
        n.to_string()
    }
}

pub use crate::json::MAX_JSON_INTEGER;

/// Request fields pinbench sets itself: `sampling_extra` may not override them (the
/// report would misstate what ran). `n`, `best_of` and beam search multiply generation.
pub const RESERVED_REQUEST_FIELDS: &[&str] = &[
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "min_tokens",
    "ignore_eos",
    "stream",
    "stream_options",
    "temperature",
    "n",
    "best_of",
    "use_beam_search",
];

/// Whether every integer in `v` is within ±(2^53 − 1).
fn json_safe(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Number(n) => {
            n.as_u64().is_none_or(|x| x <= MAX_JSON_INTEGER)
                && n.as_i64()
                    .is_none_or(|x| x.unsigned_abs() <= MAX_JSON_INTEGER)
        }
        serde_json::Value::Array(a) => a.iter().all(json_safe),
        serde_json::Value::Object(o) => o.values().all(json_safe),
        _ => true,
    }
}

/// Parses `sampling_extra`: a JSON object that sets none of
/// [`RESERVED_REQUEST_FIELDS`] and holds only JSON-safe integers.
pub fn parse_sampling_extra(t: &str) -> Option<BTreeMap<String, serde_json::Value>> {
    let m: BTreeMap<String, serde_json::Value> = serde_json::from_str(t).ok()?;
    let clash = m
        .keys()
        .any(|k| RESERVED_REQUEST_FIELDS.contains(&k.as_str()));
    (!clash && m.values().all(json_safe)).then_some(m)
}

pub(super) fn parse_args(t: &str, name: &str) -> Option<Vec<u32>> {
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
    if t == "trace" {
        return Some(LengthDist::Trace {});
    }
    if t == "dataset" {
        return Some(LengthDist::Dataset {});
    }
    if t == "dataset_text" {
        return Some(LengthDist::DatasetText {});
    }
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

pub(super) fn parse_list<T>(t: &str, item: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let items: Option<Vec<T>> = t.split(',').map(|s| item(s.trim())).collect();
    items.filter(|v| !v.is_empty())
}

pub(super) fn parse_arrival(t: &str) -> Option<Arrival> {
    let t = t.trim().to_ascii_lowercase();
    if t == "poisson" {
        return Some(Arrival::Poisson {});
    }
    let inner = t
        .strip_prefix("gamma")?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let shape_milli = u32::try_from(parse_milli(inner)?).ok().filter(|&s| s > 0)?;
    Some(Arrival::Gamma { shape_milli })
}

pub(super) fn parse_kv_capacity(t: &str) -> Option<KvCapacity> {
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
        .filter(|&v: &u64| v > 0 && v <= MAX_JSON_INTEGER)
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
    // A key in the path would travel into every report and link: refused (keys go in
    // the API key field).
    if path.split('/').any(looks_like_key_in_path) {
        return None;
    }
    if path.ends_with("/v1") {
        path.truncate(path.len() - 3);
    }
    Some(format!("{scheme}{host}{path}"))
}

/// The origin (`scheme://host[:port]`, lower-case) of an endpoint URL: what an API key is
/// tied to, so that a link naming another endpoint never receives it.
pub fn origin_of(url: &str) -> Option<String> {
    let base = parse_base_url(url)?;
    let (scheme, rest) = base.split_once("://")?;
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// Whether a URL path segment looks like a credential: `sk-…`, or 32+ characters of
/// letters, digits and `_` with at least six of each of letters and digits.
pub fn looks_like_key_in_path(seg: &str) -> bool {
    if seg.starts_with("sk-") && seg.len() >= 12 {
        return true;
    }
    seg.len() >= 32
        && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && seg.chars().filter(char::is_ascii_digit).count() >= 6
        && seg.chars().filter(char::is_ascii_alphabetic).count() >= 6
}

/// Parses the reasoning pin: `none`, `visible` or `hidden`, then optionally
/// `effort=LEVEL` or `budget=TOKENS` (what the requests send). `none` sends nothing.
pub fn parse_reasoning(t: &str) -> Option<ReasoningRequest> {
    let mut words = t
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty());
    let mode = match words.next()?.to_ascii_lowercase().as_str() {
        "none" | "off" => ReasoningMode::None,
        "visible" | "shown" => ReasoningMode::Visible,
        "hidden" => ReasoningMode::Hidden,
        _ => return None,
    };
    let mut r = ReasoningRequest {
        mode,
        effort: None,
        budget_tokens: None,
    };
    for w in words {
        let (k, v) = w.split_once('=')?;
        match k.to_ascii_lowercase().as_str() {
            "effort" if r.effort.is_none() => {
                let v = v.to_ascii_lowercase();
                ["none", "minimal", "low", "medium", "high"]
                    .contains(&v.as_str())
                    .then_some(())?;
                r.effort = Some(v);
            }
            "budget" if r.budget_tokens.is_none() => {
                r.budget_tokens = Some(v.parse::<u32>().ok().filter(|n| *n > 0)?);
            }
            _ => return None,
        }
    }
    // No reasoning asks for none.
    (mode != ReasoningMode::None || (r.effort.is_none() && r.budget_tokens.is_none())).then_some(r)
}

/// Parses the trace pin: a built-in trace's name, or `file:NAME` with the facts a host
/// wrote from the file (`sha256=HEX format=mooncake rows=N span_us=N input_max=N
/// output_max=N`), then `scale=S` and `offset=SECONDS`.
pub fn parse_trace(t: &str) -> Option<TraceRef> {
    let mut words = t.split_whitespace();
    let head = words.next()?;
    let mut kv = BTreeMap::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        kv.insert(k.to_ascii_lowercase(), v.to_owned());
    }
    let scale_milli = match kv.get("scale") {
        Some(s) => u32::try_from(parse_milli(s)?).ok().filter(|&v| v > 0)?,
        None => 1000,
    };
    let offset_ms = match kv.get("offset") {
        Some(s) => parse_milli(s.strip_suffix('s').unwrap_or(s))?,
        None => 0,
    };
    // An offset past the last row leaves nothing to replay.
    let within = |span_us: u64| offset_ms.saturating_mul(1000) <= span_us;
    if let Some(name) = head.strip_prefix("file:") {
        let num = |k: &str| kv.get(k).and_then(|v| v.parse::<u64>().ok());
        let sha256 = kv.get("sha256")?.to_ascii_lowercase();
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let format = match kv.get("format")?.as_str() {
            "mooncake" => crate::trace::TraceFormat::Mooncake,
            "burst_gpt" | "burstgpt" => crate::trace::TraceFormat::BurstGpt,
            "azure" => crate::trace::TraceFormat::Azure,
            _ => return None,
        };
        return Some(TraceRef {
            name: name.to_owned(),
            builtin: false,
            format,
            sha256,
            rows: u32::try_from(num("rows")?).ok().filter(|&r| r > 0)?,
            span_us: num("span_us").filter(|&s| within(s))?,
            input_max: u32::try_from(num("input_max")?).ok()?,
            output_max: u32::try_from(num("output_max")?).ok()?,
            scale_milli,
            offset_ms,
        });
    }
    let b = crate::trace::builtin(head).filter(|b| within(b.facts.span_us))?;
    Some(TraceRef {
        name: b.name.to_owned(),
        builtin: true,
        format: b.format,
        sha256: b.sha256.to_owned(),
        rows: b.facts.rows,
        span_us: b.facts.span_us,
        input_max: b.facts.input_max,
        output_max: b.facts.output_max,
        scale_milli,
        offset_ms,
    })
}

/// The trace pin's text for a trace file a host has read: its name (spaces made `_`),
/// digest and facts, with the `scale=` and `offset=` of `existing` (the pin as the user
/// wrote it, e.g. `file:conv.jsonl scale=0.5`; 1 and 0 when it has none). `None` when
/// those are not valid.
pub fn trace_file_pin(existing: &str, name: &str, trace: &crate::trace::Trace) -> Option<String> {
    let mut scale_milli = 1000;
    let mut offset_ms = 0;
    for w in existing.split_whitespace() {
        if let Some(v) = w.strip_prefix("scale=") {
            scale_milli = u32::try_from(parse_milli(v)?).ok().filter(|&v| v > 0)?;
        } else if let Some(v) = w.strip_prefix("offset=") {
            offset_ms = parse_milli(v.strip_suffix('s').unwrap_or(v))?;
        }
    }
    let name: String = name
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    Some(TraceRef::of(&name, false, trace, scale_milli, offset_ms).form_text())
}

/// Parses the dataset pin: `file:NAME sha256=HEX format=sharegpt|lengths_csv rows=N
/// sampled=N`, the facts a host wrote from the file ([`DatasetRef::form_text`]).
pub fn parse_dataset(t: &str) -> Option<DatasetRef> {
    let mut words = t.split_whitespace();
    let name = words.next()?.strip_prefix("file:")?;
    let mut kv = BTreeMap::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        kv.insert(k.to_ascii_lowercase(), v.to_owned());
    }
    let num = |k: &str| {
        kv.get(k)
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&n| n > 0)
    };
    let sha256 = kv.get("sha256")?.to_ascii_lowercase();
    if name.is_empty() || sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (rows, sampled) = (num("rows")?, num("sampled")?);
    let most = u32::try_from(crate::dataset::MAX_SAMPLED).unwrap_or(u32::MAX);
    let format = crate::dataset::DatasetFormat::from_wire(kv.get("format")?)?;
    (sampled == rows.min(most)).then(|| DatasetRef {
        name: name.to_owned(),
        format,
        sha256,
        rows,
        sampled,
    })
}

/// Parses the conversation pin: a turn count or distribution (`1`, `5`, `uniform(3,8)`),
/// then optionally `think=SECONDS` (`think=2`, `think=0.5s`).
pub fn parse_conversation(t: &str) -> Option<Conversation> {
    let t = t.trim().to_ascii_lowercase();
    let (turns, think) = match t.split_once("think=") {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (t.as_str(), None),
    };
    let turns = parse_length_dist(turns).filter(|d| d.max() <= 1000)?;
    let think_ms = match think {
        Some(s) => parse_milli(s.strip_suffix('s').unwrap_or(s).trim())?,
        None => 0,
    };
    Some(Conversation { turns, think_ms })
}

/// Parses the shared-prefix pin: `none`, `2048` (one prefix) or `2048x4` (four groups);
/// `Some(None)` for none.
pub fn parse_shared_prefix(t: &str) -> Option<Option<SharedPrefix>> {
    let t = t.trim().to_ascii_lowercase().replace(['_', ' '], "");
    if t == "none" || t == "off" {
        return Some(None);
    }
    let (tokens, groups) = match t.split_once(['x', '×']) {
        Some((a, b)) => (parse_positive_u32(a)?, parse_positive_u32(b)?),
        None => (parse_positive_u32(&t)?, 1),
    };
    (groups <= 1_000_000).then_some(Some(SharedPrefix { tokens, groups }))
}

pub(super) fn parse_choice<T: Copy>(t: &str, options: &[(&str, T)]) -> Option<T> {
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
                ("responses", Dialect::Responses),
                ("messages", Dialect::Messages),
                ("gemini", Dialect::Gemini),
            ],
        );
        let model_id = p.get("model_id", "the API model id", |t| Some(t.to_owned()));
        let params = p.disclosed(
            "model_params",
            "a parameter count like 8B or 270M (at most 9,007T)",
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
        // Only OpenAI-compatible servers take ignore_eos / min_tokens; a vendor's API takes
        // neither (an unknown field is refused or ignored): the pin would not hold.
        let enforcement = match (&enforcement, &dialect, &url) {
            (Some(e), Some(d), Some(u)) if e.value != LengthEnforcement::None => {
                let why = match crate::vendors::by_url(&u.value) {
                    Some(v) if !v.holds_length => Some(v.name.to_owned()),
                    _ if !d.value.is_openai_compatible() => Some(d.value.label().to_owned()),
                    _ => None,
                };
                match why {
                    Some(who) => {
                        p.problems.push(PinProblem {
                            pin: PinId::OutputLength,
                            field: "output_enforcement".into(),
                            problem: Problem::Invalid {
                                expected: format!("none: {who} takes neither ignore_eos nor min_tokens, so the output length is measured and flagged"),
                            },
                        });
                        None
                    }
                    None => enforcement,
                }
            }
            _ => enforcement,
        };
        let mode = p.choice(
            "load_mode",
            &[
                ("closed", Some(true)),
                ("open", Some(false)),
                ("replay", None),
            ],
        );
        let mut trace: Option<Pinned<TraceRef>> = None;
        let steps = match mode.as_ref().map(|m| m.value) {
            None => None,
            Some(None) => {
                let t = p.get(
                    "trace",
                    "a built-in trace (mooncake-conversation-60) or a file read by the host (file:NAME sha256=HEX …), then scale=S (0.5: twice as fast) and offset=SECONDS",
                    parse_trace,
                );
                let cap = p.get("in_flight_cap", "a count ≥ 1", parse_positive_u32);
                match (t, cap) {
                    (Some(t), Some(c)) => {
                        let step = LoadStep::Open {
                            rate_milli_rps: t.value.rate_milli_rps(),
                            arrival: Arrival::Trace {},
                            in_flight_cap: c.value,
                        };
                        let provenance = t.provenance.clone();
                        trace = Some(t);
                        Some(Pinned {
                            value: vec![step],
                            provenance,
                        })
                    }
                    _ => None,
                }
            }
            Some(Some(true)) => p
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
            Some(Some(false)) => {
                let rates = p.get(
                    "rate_rps",
                    "a rate in req/s > 0, or a comma list for a sweep",
                    |t| parse_list(t, |r| parse_milli(r).filter(|&m| m > 0)),
                );
                let arrival = p.get("arrival", "poisson or gamma(shape)", |t| {
                    parse_arrival(t).filter(|a| *a != Arrival::Trace {})
                });
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
        let shared = p.get(
            "shared_prefix",
            "none, a prefix length in tokens like 2048, or with its number of groups like 2048x4",
            parse_shared_prefix,
        );
        // The prefix leaves room for the nonce and at least one unique token in every prompt.
        let shared = match (shared, &prompt_len, &nonce) {
            (Some(s), Some(len), Some(n)) => match s.value {
                Some(sp) => {
                    let nonce_tokens = if n.value { NONCE_WORDS } else { 0 };
                    let room = len.value.min().saturating_sub(nonce_tokens + 1);
                    if sp.tokens > room {
                        p.problems.push(PinProblem {
                            pin: PinId::CachePolicy,
                            field: "shared_prefix".into(),
                            problem: Problem::Invalid {
                                expected: format!(
                                    "a prefix of at most {room} tokens: the shortest prompt is {} tokens and each needs {} unique{}",
                                    len.value.min(),
                                    nonce_tokens + 1,
                                    if n.value { " (the nonce and one more)" } else { "" }
                                ),
                            },
                        });
                        None
                    } else {
                        Some(s)
                    }
                }
                None => Some(s),
            },
            (s, _, _) => s,
        };
        let temperature = p.get("temperature", "a number ≥ 0", |t| {
            crate::json::parse_f64(t).filter(|v| *v >= 0.0)
        });
        let extra = p.get(
            "sampling_extra",
            "a JSON object such as {} or {\"top_p\":0.9}, without fields pinbench sets (model, prompt, messages, max_tokens, min_tokens, ignore_eos, stream, stream_options, temperature, n, best_of) and with integers under 2^53",
            parse_sampling_extra,
        );

        let reasoning = p.get(
            "reasoning",
            "none, visible or hidden, optionally with effort=none|minimal|low|medium|high or budget=TOKENS (what is sent)",
            parse_reasoning,
        );

        // A replay takes lengths and shared blocks from its trace: the fields say so, and
        // nothing else shapes its prompts.
        let replay = matches!(mode.as_ref().map(|m| m.value), Some(None));
        let must = |p: &mut Parser, field: &str, pin: PinId, ok: bool, expected: &str| {
            if !ok {
                p.problems.push(PinProblem {
                    pin,
                    field: field.into(),
                    problem: Problem::Invalid {
                        expected: expected.into(),
                    },
                });
            }
        };
        for (field, pin, d) in [
            ("prompt_tokens", PinId::PromptLength, &prompt_len),
            ("output_tokens", PinId::OutputLength, &output_len),
        ] {
            if let Some(d) = d {
                let from_trace = d.value == LengthDist::Trace {};
                if replay {
                    must(
                        &mut p,
                        field,
                        pin,
                        from_trace,
                        "trace: a replay takes each row's length",
                    );
                } else {
                    must(
                        &mut p,
                        field,
                        pin,
                        !from_trace,
                        "a length: only a replay takes lengths from its trace",
                    );
                }
            }
        }
        // A dataset gives both lengths of a request, from one row.
        let from_dataset =
            |d: &Option<Pinned<LengthDist>>| d.as_ref().is_some_and(|d| d.value.is_dataset());
        let mut dataset: Option<Pinned<DatasetRef>> = None;
        if from_dataset(&prompt_len) || from_dataset(&output_len) {
            for (field, pin, d) in [
                ("prompt_tokens", PinId::PromptLength, &prompt_len),
                ("output_tokens", PinId::OutputLength, &output_len),
            ] {
                let ok = d.is_none() || from_dataset(d);
                must(
                    &mut p,
                    field,
                    pin,
                    ok,
                    "dataset: a dataset row gives both lengths",
                );
            }
            dataset = p.get(
                "dataset",
                "a dataset file read by the host (file:NAME sha256=HEX format=sharegpt|lengths_csv rows=N sampled=N): open it with Dataset file",
                parse_dataset,
            );
            if let Some(s) = &shared {
                must(
                    &mut p,
                    "shared_prefix",
                    PinId::CachePolicy,
                    s.value.is_none(),
                    "none: a dataset row's prompt is one length",
                );
            }
            if let Some(o) = &output_len {
                must(
                    &mut p,
                    "output_tokens",
                    PinId::OutputLength,
                    o.value != LengthDist::DatasetText {},
                    "dataset: the output is as long as the row's answer (dataset_text is a prompt)",
                );
            }
            // The row's own prompt is sent as it is: only a file of texts has one, and a
            // nonce would change its length.
            if prompt_len.as_ref().map(|p| p.value) == Some(LengthDist::DatasetText {}) {
                let texts = dataset
                    .as_ref()
                    .is_none_or(|d| d.value.format == crate::dataset::DatasetFormat::ShareGpt);
                must(
                    &mut p,
                    "prompt_tokens",
                    PinId::PromptLength,
                    texts,
                    "dataset: a CSV of lengths has no text to send (dataset_text needs a ShareGPT file)",
                );
                if let Some(n) = &nonce {
                    must(
                        &mut p,
                        "nonce_prefix",
                        PinId::CachePolicy,
                        !n.value,
                        "off: the dataset's own prompts are sent as they are",
                    );
                }
            }
        }
        if replay {
            if let Some(n) = &nonce {
                must(
                    &mut p,
                    "nonce_prefix",
                    PinId::CachePolicy,
                    !n.value,
                    "off: a replay's block ids decide what its prompts share",
                );
            }
            if let Some(s) = &shared {
                must(
                    &mut p,
                    "shared_prefix",
                    PinId::CachePolicy,
                    s.value.is_none(),
                    "none: a replay's block ids decide what its prompts share",
                );
            }
        }
        let conversation = p.get(
            "turns",
            "turns per conversation (1, 5 or uniform(3,8), at most 1000), optionally with think=SECONDS between turns",
            parse_conversation,
        );
        if let (true, Some(c)) = (replay, &conversation) {
            must(
                &mut p,
                "turns",
                PinId::Conversation,
                !c.value.is_multi_turn(),
                "1: a replay's requests are its trace's rows",
            );
        }
        if let (true, Some(c)) = (dataset.is_some(), &conversation) {
            must(
                &mut p,
                "turns",
                PinId::Conversation,
                !c.value.is_multi_turn(),
                "1: a dataset's rows are single requests",
            );
        }

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
            cache: match (nonce, shared) {
                (Some(n), Some(s)) => Pinned {
                    value: CachePolicy {
                        nonce_prefix: n.value,
                        shared_prefix: s.value,
                    },
                    provenance: n.provenance,
                },
                _ => return Err(unpinned()),
            },
            sampling: Pinned {
                value: Sampling {
                    temperature: temperature.value,
                    extra: extra.value,
                },
                provenance: temperature.provenance,
            },
            reasoning: Some(reasoning.ok_or_else(unpinned)?),
            conversation: Some(conversation.ok_or_else(unpinned)?),
            trace,
            dataset,
        })
    }
}
