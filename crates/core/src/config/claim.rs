//! The claim checker: a vendor's headline ("Llama 3.1 70B at 2,100 tokens/s per user on
//! 8×H100, 3× faster than vLLM") → what it pins, what it leaves free, which metric its
//! number can be, and whether it can be checked at all. The vocabulary is plain data (the
//! tables below); the scanning is small and pure. The stated values become a share link's
//! pins, each `declared`; the rest stays open for the vendor or the user.

use serde::Serialize;

use super::pins::{PinId, RawConfig};

/// Model families, most specific first: (text in the claim, canonical name).
const MODELS: &[(&str, &str)] = &[
    ("llama 3.1", "Llama-3.1"),
    ("llama-3.1", "Llama-3.1"),
    ("llama3.1", "Llama-3.1"),
    ("llama 3.3", "Llama-3.3"),
    ("llama-3.3", "Llama-3.3"),
    ("llama 3.2", "Llama-3.2"),
    ("llama-3.2", "Llama-3.2"),
    ("llama 4 maverick", "Llama-4-Maverick"),
    ("llama 4 scout", "Llama-4-Scout"),
    ("llama 4", "Llama-4"),
    ("llama-4", "Llama-4"),
    ("llama 3", "Llama-3"),
    ("llama-3", "Llama-3"),
    ("llama 2", "Llama-2"),
    ("llama", "Llama"),
    ("deepseek-r1", "DeepSeek-R1"),
    ("deepseek r1", "DeepSeek-R1"),
    ("deepseek-v3", "DeepSeek-V3"),
    ("deepseek v3", "DeepSeek-V3"),
    ("qwen3", "Qwen3"),
    ("qwen 3", "Qwen3"),
    ("qwen2.5", "Qwen2.5"),
    ("qwen 2.5", "Qwen2.5"),
    ("mixtral", "Mixtral"),
    ("mistral large", "Mistral-Large"),
    ("mistral", "Mistral"),
    ("gpt-oss", "gpt-oss"),
    ("gemma 3", "Gemma-3"),
    ("gemma", "Gemma"),
    ("kimi k2", "Kimi-K2"),
    ("phi-4", "Phi-4"),
];

/// Precisions and quantizations: (token, canonical).
const QUANTS: &[(&str, &str)] = &[
    ("nvfp4", "NVFP4"),
    ("mxfp4", "MXFP4"),
    ("fp4", "FP4"),
    ("fp8", "FP8"),
    ("int8", "INT8"),
    ("int4", "INT4"),
    ("w4a16", "W4A16"),
    ("w8a8", "W8A8"),
    ("bf16", "bf16"),
    ("fp16", "fp16"),
    ("awq", "AWQ"),
    ("gptq", "GPTQ"),
    ("q4_k_m", "Q4_K_M"),
    ("q8_0", "Q8_0"),
];

/// Engines: (text, canonical).
const ENGINES: &[(&str, &str)] = &[
    ("tensorrt-llm", "TensorRT-LLM"),
    ("trt-llm", "TensorRT-LLM"),
    ("vllm", "vLLM"),
    ("sglang", "SGLang"),
    ("tgi", "TGI"),
    ("llama.cpp", "llama.cpp"),
    ("ollama", "Ollama"),
    ("lmdeploy", "LMDeploy"),
    ("dynamo", "NVIDIA Dynamo"),
];

/// Words before an engine that make it the comparison's baseline, not the engine used.
const BASELINE_WORDS: &[&str] = &["than", "vs", "vs.", "versus", "over", "compared", "against"];

/// Accelerators: (text, canonical).
const HARDWARE: &[(&str, &str)] = &[
    ("gb200", "GB200"),
    ("b200", "B200"),
    ("h200", "H200"),
    ("h100", "H100"),
    ("a100", "A100"),
    ("l40s", "L40S"),
    ("mi355x", "MI355X"),
    ("mi325x", "MI325X"),
    ("mi300x", "MI300X"),
    ("tpu v5e", "TPU v5e"),
    ("tpu v6e", "TPU v6e"),
    ("gaudi 3", "Gaudi 3"),
    ("rtx 4090", "RTX 4090"),
];

/// Phrases that make a tok/s figure one stream's speed.
const PER_STREAM: &[&str] = &[
    "per user",
    "per-user",
    "/user",
    "per stream",
    "per-stream",
    "per request",
    "per sequence",
    "single user",
    "single-user",
    "single stream",
    "single-stream",
    "one user",
    "output speed",
    "interactivity",
];

/// Phrases that make a tok/s figure all streams together.
const AGGREGATE: &[&str] = &[
    "aggregate",
    "total",
    "per gpu",
    "per-gpu",
    "/gpu",
    "per node",
    "per server",
    "system throughput",
    "across",
    "throughput",
];

/// Phrases that put a speed after the first token (TTFT excluded).
const AFTER_FIRST: &[&str] = &[
    "after the first",
    "after first",
    "output speed",
    "decode",
    "tpot",
    "inter-token",
    "excluding ttft",
];

/// Phrases that put the wait for the first token inside a speed.
const WITH_FIRST: &[&str] = &[
    "end-to-end",
    "end to end",
    "e2e",
    "including ttft",
    "including time to first",
];

/// One value the claim states.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stated {
    /// The form field it fills (`concurrency`, `prompt_tokens`, …), or a context key
    /// (`hardware`, `baseline`, …) that is not a pin.
    pub field: &'static str,
    /// The value, as the form takes it.
    pub value: String,
    /// The words of the claim it was read from.
    pub evidence: String,
}

/// Whose speed a tok/s figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One stream's speed.
    PerStream,
    /// All streams together.
    Aggregate,
    /// Not said.
    Unknown,
}

/// Whether a speed counts the wait for the first token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ttft {
    /// After the first token only.
    Excluded,
    /// From the send to the last token.
    Included,
    /// Not said.
    Unknown,
}

/// A number the claim makes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Figure {
    /// tok/s.
    Throughput {
        /// The value, tok/s.
        value: f64,
        /// Per-stream or aggregate.
        scope: Scope,
        /// TTFT inside or not.
        ttft: Ttft,
    },
    /// A latency, ms.
    Latency {
        /// `ttft`, `tpot` or `e2e`.
        what: &'static str,
        /// The value, ms.
        ms: f64,
    },
    /// "3× faster than …".
    Relative {
        /// The factor.
        factor: f64,
        /// What it is relative to, when said.
        baseline: Option<String>,
    },
}

/// What a claim pins, leaves free and means.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClaimAnalysis {
    /// The numbers it makes.
    pub figures: Vec<Figure>,
    /// Pins it states (form fields).
    pub pins: Vec<Stated>,
    /// What it states that is not a pin (hardware, baseline, speculative decoding, …).
    pub context: Vec<Stated>,
    /// Pins it leaves free.
    pub open: Vec<PinId>,
    /// What its number can be, in sentences.
    pub metric: Vec<String>,
    /// Whether pinbench can check it as stated.
    pub checkable: bool,
    /// Why not, when it cannot.
    pub reasons: Vec<String>,
}

impl ClaimAnalysis {
    /// The stated pins as a share link's JSON (`#pins=`): each becomes a declared value.
    pub fn share_json(&self) -> String {
        let mut raw = RawConfig::default();
        for s in &self.pins {
            if let Some(f) = raw.field_mut(s.field) {
                *f = super::pins::RawField::declared(s.value.clone());
            }
        }
        raw.to_share_json()
    }

    /// Where the claim's tok/s sits against a run's pins `cfg` (a sweep's frontier): its
    /// per-stream decode and aggregate figures, when every pin it states is the run's
    /// (the concurrency aside: the frontier spans it) and it states the model and both
    /// lengths; otherwise why it is not comparable, each reason a sentence.
    pub fn against(
        &self,
        cfg: &super::pins::RunConfig,
    ) -> Result<(Option<f64>, Option<f64>), Vec<String>> {
        let mut raw = super::pins::workload_form(cfg);
        for (name, text) in [
            ("model_id", cfg.model.id.value.clone()),
            ("model_quant", cfg.model.quantization.value.to_string()),
            ("model_engine", cfg.model.engine.value.to_string()),
        ] {
            if let Some(f) = raw.field_mut(name) {
                *f = super::pins::RawField::declared(text);
            }
        }
        let same = |a: &str, b: &str| {
            let (a, b) = (a.trim().to_ascii_lowercase(), b.trim().to_ascii_lowercase());
            a == b
                || matches!(
                    (crate::json::parse_f64(&a), crate::json::parse_f64(&b)),
                    (Some(x), Some(y)) if x == y
                )
        };
        let mut why = Vec::new();
        for s in self.pins.iter().filter(|s| s.field != "concurrency") {
            if s.field == "model_params" {
                let run = match cfg.model.params.value {
                    super::pins::Disclosure::Value(v) => Some(v),
                    super::pins::Disclosure::Undisclosed => None,
                };
                if super::pins::parse_param_count(&s.value) != run {
                    why.push(format!(
                        "differs in model_params: the claim says {} (“{}”), the run {}",
                        s.value,
                        s.evidence,
                        run.map_or_else(|| "undisclosed".to_owned(), |v| v.to_string())
                    ));
                }
                continue;
            }
            if let Some(f) = raw.field(s.field).filter(|f| !same(&f.text, &s.value)) {
                why.push(format!(
                    "differs in {}: the claim says {} (“{}”), the run {}",
                    s.field, s.value, s.evidence, f.text
                ));
            }
        }
        for (fields, what) in [
            (&["model_id", "model_params"][..], "the model"),
            (&["prompt_tokens"][..], "the prompt length"),
            (&["output_tokens"][..], "the output length"),
        ] {
            if !fields.iter().any(|f| self.pin(f).is_some()) {
                why.push(format!("the claim does not say {what}"));
            }
        }
        let (mut per_stream, mut aggregate) = (None, None);
        for f in &self.figures {
            if let Figure::Throughput { value, scope, ttft } = *f {
                match (scope, ttft) {
                    (Scope::PerStream, Ttft::Included) => why.push(
                        "its per-stream tok/s includes the wait for the first token: not the frontier's decode speed".into(),
                    ),
                    (Scope::PerStream, _) => per_stream = Some(value),
                    (Scope::Aggregate, _) => aggregate = Some(value),
                    (Scope::Unknown, _) => why.push(
                        "it does not say whether its tok/s is per stream or for all streams".into(),
                    ),
                }
            }
        }
        if per_stream.is_none() && aggregate.is_none() && why.is_empty() {
            why.push("it states no tok/s figure".into());
        }
        if why.is_empty() {
            Ok((per_stream, aggregate))
        } else {
            Err(why)
        }
    }

    /// The value stated for field `name`.
    pub fn pin(&self, name: &str) -> Option<&str> {
        self.pins
            .iter()
            .find(|s| s.field == name)
            .map(|s| s.value.as_str())
    }
}

/// Lower case, one spelling for multiplication signs, arrows, dashes and rate units.
fn normalise(text: &str) -> String {
    let mut t = text.to_ascii_lowercase();
    for (from, to) in [
        ("×", "x"),
        ("→", "->"),
        ("–", "-"),
        ("—", " - "),
        ("tokens per second", "tok/s"),
        ("tokens/second", "tok/s"),
        ("tokens/sec", "tok/s"),
        ("tokens/s", "tok/s"),
        ("token/s", "tok/s"),
        ("tok/sec", "tok/s"),
        ("requests per second", "req/s"),
        ("queries per second", "req/s"),
    ] {
        t = t.replace(from, to);
    }
    // "2,100" stays one number; a comma after a word separates.
    let mut out = String::with_capacity(t.len());
    let chars: Vec<char> = t.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let digit = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
        let keep = match c {
            ',' => i > 0 && digit(i - 1) && digit(i + 1),
            ';' | '(' | ')' | '"' | '!' | '?' | '[' | ']' => false,
            _ => true,
        };
        out.push(if keep { c } else { ' ' });
    }
    out
}

/// Whitespace tokens, trailing sentence punctuation trimmed.
fn tokens(t: &str) -> Vec<String> {
    t.split_whitespace()
        .map(|w| w.trim_end_matches(['.', ',', ':']).to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

/// `2,100` → 2100, `1.5k` → 1500, `2k` → 2000, `128` → 128.
fn number(s: &str) -> Option<f64> {
    let s = s.replace(',', "");
    let (digits, mult) = match s.strip_suffix('k') {
        Some(d) => (d.to_owned(), 1000.0),
        None => match s.strip_suffix('m') {
            Some(d) => (d.to_owned(), 1e6),
            None => (s.clone(), 1.0),
        },
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    crate::json::parse_f64(&digits)
        .map(|v| v * mult)
        .filter(|v| v.is_finite())
}

/// A whole number of tokens, as the form takes it.
fn count(s: &str) -> Option<String> {
    number(s)
        .filter(|v| *v >= 1.0 && v.fract() == 0.0 && *v < 1e9)
        .map(|v| crate::decimal::fixed(v, 0))
}

fn contains_any(hay: &str, needles: &[&str]) -> Option<String> {
    needles
        .iter()
        .find(|n| hay.contains(*n))
        .map(|n| (*n).to_owned())
}

/// Reads a claim.
pub fn analyse(text: &str) -> ClaimAnalysis {
    let t = normalise(text);
    let w = tokens(&t);
    let mut pins: Vec<Stated> = Vec::new();
    let mut context: Vec<Stated> = Vec::new();
    let mut figures = Vec::new();
    let put = |v: &mut Vec<Stated>, field: &'static str, value: String, evidence: String| {
        if !v.iter().any(|s| s.field == field) {
            v.push(Stated {
                field,
                value,
                evidence,
            });
        }
    };

    // Model: family and size.
    let size = w.iter().find_map(|tok| {
        tok.split(['-', '/', '_'])
            .find(|seg| {
                // Split off the last character (which may be more than one byte).
                let cut = seg.char_indices().last().map_or(0, |(i, _)| i);
                let (num, unit) = seg.split_at(cut);
                matches!(unit, "b" | "m")
                    && !num.is_empty()
                    && num.chars().all(|c| c.is_ascii_digit() || c == '.')
                    && num.chars().next().is_some_and(|c| c.is_ascii_digit())
            })
            .map(|seg| (seg.to_ascii_uppercase(), tok.clone()))
    });
    // Engine names that contain a model family's name ("llama.cpp", "ollama") are not
    // models: a family starts a word and is not followed by ".cpp".
    let t_models = t.replace("llama.cpp", " ");
    let family = MODELS.iter().find(|(k, _)| {
        t_models.match_indices(k).any(|(i, _)| {
            t_models[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_ascii_alphanumeric())
        })
    });
    if let Some((k, name)) = family {
        let id = match &size {
            Some((s, _)) => format!("{name}-{s}"),
            None => (*name).to_owned(),
        };
        put(&mut pins, "model_id", id, (*k).to_owned());
    }
    if let Some((s, ev)) = size {
        put(&mut pins, "model_params", s, ev);
    }
    for tok in &w {
        if let Some((_, q)) = QUANTS
            .iter()
            .find(|(k, _)| tok.split(['-', '/']).any(|p| p == *k))
        {
            put(&mut pins, "model_quant", (*q).to_owned(), tok.clone());
        }
    }

    // Engines: used, or the baseline of a comparison.
    for (i, tok) in w.iter().enumerate() {
        if let Some((_, e)) = ENGINES
            .iter()
            .find(|(k, _)| tok == k || tok.trim_end_matches("'s") == *k)
        {
            let before = &w[i.saturating_sub(3)..i];
            if before.iter().any(|b| BASELINE_WORDS.contains(&b.as_str())) {
                put(
                    &mut context,
                    "baseline",
                    (*e).to_owned(),
                    format!("{} {tok}", before.join(" ")),
                );
            } else {
                put(&mut pins, "model_engine", (*e).to_owned(), tok.clone());
            }
        }
    }

    // Hardware: an optional count before the accelerator ("8xh100", "8 x h100", "8 h100s").
    for (i, tok) in w.iter().enumerate() {
        let joined = format!("{tok} {}", w.get(i + 1).map_or("", |s| s.as_str()));
        for (k, name) in HARDWARE {
            let hit = if k.contains(' ') {
                joined.starts_with(k)
            } else {
                let bare = if tok.ends_with('s') && !k.ends_with('s') {
                    &tok[..tok.len() - 1]
                } else {
                    tok.as_str()
                };
                bare == *k || bare.ends_with(&format!("x{k}"))
            };
            if !hit {
                continue;
            }
            let n = tok
                .split_once('x')
                .and_then(|(n, rest)| rest.ends_with(k.trim_end_matches('s')).then_some(n))
                .and_then(count)
                .or_else(|| {
                    let p1 = i.checked_sub(1).and_then(|j| w.get(j)).map(String::as_str);
                    let p2 = i.checked_sub(2).and_then(|j| w.get(j)).map(String::as_str);
                    match (p2, p1) {
                        (Some(n), Some("x")) => count(n),
                        (_, Some(n)) => n.strip_suffix('x').and_then(count).or_else(|| count(n)),
                        _ => None,
                    }
                });
            let v = match n {
                Some(n) => format!("{n}×{name}"),
                None => (*name).to_owned(),
            };
            put(&mut context, "hardware", v, tok.clone());
        }
    }

    // Lengths.
    let mut prompt: Option<(String, String)> = None;
    let mut output: Option<(String, String)> = None;
    const IN_WORDS: &[&str] = &["input", "prompt", "prompts", "in"];
    const OUT_WORDS: &[&str] = &[
        "output",
        "outputs",
        "out",
        "generated",
        "completion",
        "generation",
    ];
    for (i, tok) in w.iter().enumerate() {
        let next = |k: usize| {
            w.get(i + k)
                .map(|s| s.trim_end_matches("-token").to_owned())
                .unwrap_or_default()
        };
        let prev = |k: usize| {
            i.checked_sub(k)
                .and_then(|j| w.get(j))
                .cloned()
                .unwrap_or_default()
        };
        // "1k/1k", "128/128", "1k->1k", "100->300", "1k:1k", "1024/128"
        for sep in ["->", "/", ":"] {
            if let Some((a, b)) = tok.split_once(sep) {
                let tagged = tok.contains('k')
                    || sep == "->"
                    || [
                        "tokens",
                        "isl/osl",
                        "in/out",
                        "input/output",
                        "tokens,",
                        "token",
                    ]
                    .contains(&next(1).as_str())
                    || prev(1) == "isl/osl";
                if let (Some(a), Some(b), true) =
                    (count(a), count(b.trim_end_matches("-token")), tagged)
                {
                    if prompt.is_none() && output.is_none() {
                        prompt = Some((a, tok.clone()));
                        output = Some((b, tok.clone()));
                    }
                }
            }
        }
        // "isl 1024", "input length 2048", "prompt length of 8k", "output length 128"
        let after_label = |labels: &[&str]| -> Option<String> {
            if !labels.contains(&tok.as_str()) {
                return None;
            }
            let mut k = 1;
            while [
                "length", "lengths", "of", "=", "sequence", "tokens", "len", "size",
            ]
            .contains(&next(k).as_str())
            {
                k += 1;
            }
            count(&next(k))
        };
        if let Some(n) = after_label(&["isl", "input", "prompt"]) {
            if prompt.is_none() {
                prompt = Some((n, format!("{tok} … {}", next(1))));
            }
        }
        if let Some(n) = after_label(&["osl", "output"]) {
            if output.is_none() {
                output = Some((n, format!("{tok} … {}", next(1))));
            }
        }
        // "1,000 input tokens", "128 output tokens", "8k-token prompts", "300 out"
        let base = tok.trim_end_matches("-token").trim_end_matches("-tokens");
        if let Some(n) = count(base) {
            let mut k = 1;
            while ["tokens", "token", "of"].contains(&next(k).as_str()) {
                k += 1;
            }
            let word = next(k);
            // "1,850 output tok/s" is a speed, not a length.
            let speed = ["tok/s", "tps"].contains(&next(k + 1).as_str());
            if !speed && IN_WORDS.contains(&word.as_str()) && prompt.is_none() {
                prompt = Some((n.clone(), format!("{tok} {word}")));
            } else if !speed && OUT_WORDS.contains(&word.as_str()) && output.is_none() {
                output = Some((n.clone(), format!("{tok} {word}")));
            }
            // "128k context" → the context length, not a prompt length.
            if ["context", "context-length"].contains(&next(1).as_str()) {
                put(
                    &mut pins,
                    "max_model_len",
                    n.clone(),
                    format!("{tok} context"),
                );
            }
        }
        // "prompts of 8k tokens"
        if ["prompts", "prompt"].contains(&tok.as_str()) && next(1) == "of" && prompt.is_none() {
            if let Some(n) = count(&next(2)) {
                prompt = Some((n, format!("{tok} of {}", next(2))));
            }
        }
    }
    if let Some((n, ev)) = prompt {
        put(&mut pins, "prompt_tokens", n, ev);
    }
    if let Some((n, ev)) = output {
        put(&mut pins, "output_tokens", n, ev);
    }

    // Load: concurrency, batch size, users, or a request rate.
    let single = contains_any(
        &t,
        &[
            "single user",
            "single-user",
            "single stream",
            "single-stream",
            "one user",
            "batch size 1 ",
            "batch size of 1 ",
            "bs=1 ",
            "bs1 ",
        ],
    );
    for (i, tok) in w.iter().enumerate() {
        let next = |k: usize| w.get(i + k).cloned().unwrap_or_default();
        let prev = |k: usize| {
            i.checked_sub(k)
                .and_then(|j| w.get(j))
                .cloned()
                .unwrap_or_default()
        };
        let conc = if ["concurrency", "batch"].contains(&tok.as_str()) {
            let mut k = 1;
            while ["of", "=", "size", "level"].contains(&next(k).as_str()) {
                k += 1;
            }
            count(&next(k)).map(|n| (n, format!("{tok} {}", next(k))))
        } else if let Some(n) = tok
            .strip_prefix("c=")
            .or_else(|| tok.strip_prefix("bs="))
            .or_else(|| tok.strip_prefix("concurrency="))
            .and_then(count)
        {
            Some((n, tok.clone()))
        } else if let Some(n) = count(tok).filter(|_| next(1) == "concurrency") {
            Some((n, format!("{tok} concurrency")))
        } else if let Some(n) = count(tok) {
            let w1 = next(1);
            let w2 = next(2);
            let users = [
                "users",
                "user",
                "requests",
                "streams",
                "sessions",
                "clients",
                "sequences",
            ];
            if ["concurrent", "parallel", "simultaneous"].contains(&w1.as_str()) {
                Some((n, format!("{tok} {w1} {w2}").trim_end().to_owned()))
            } else if users.contains(&w1.as_str()) && prev(1) != "per" && w1 != "requests" {
                Some((n, format!("{tok} {w1}")))
            } else {
                None
            }
        } else {
            None
        };
        if let Some((n, ev)) = conc {
            put(&mut pins, "load_mode", "closed".into(), ev.clone());
            put(&mut pins, "concurrency", n, ev);
        }
        let rate_unit = ["req/s", "qps", "rps", "requests/s"];
        if let Some(n) = number(tok).filter(|_| rate_unit.contains(&next(1).as_str())) {
            put(
                &mut pins,
                "load_mode",
                "open".into(),
                format!("{tok} {}", next(1)),
            );
            put(
                &mut pins,
                "rate_rps",
                crate::decimal::Shortest(n).to_string(),
                format!("{tok} {}", next(1)),
            );
        }
    }
    if let Some(ev) = single {
        put(
            &mut pins,
            "load_mode",
            "closed".into(),
            ev.trim().to_owned(),
        );
        put(&mut pins, "concurrency", "1".into(), ev.trim().to_owned());
    }

    // Server behaviour, cache, sampling, window.
    if let Some(ev) = contains_any(
        &t,
        &[
            "continuous batching",
            "in-flight batching",
            "inflight batching",
        ],
    ) {
        put(&mut pins, "scheduling", "continuous".into(), ev);
    } else if let Some(ev) = contains_any(&t, &["static batching"]) {
        put(&mut pins, "scheduling", "static".into(), ev);
    }
    if let Some(ev) = contains_any(&t, &["disaggregated", "disaggregation", "pd disagg"]) {
        put(&mut pins, "phases", "disaggregated".into(), ev);
    } else if let Some(ev) = contains_any(&t, &["chunked prefill", "chunked-prefill"]) {
        put(&mut pins, "phases", "chunked_prefill".into(), ev);
    }
    if let Some(ev) = contains_any(
        &t,
        &[
            "no prefix cach",
            "prefix caching disabled",
            "prefix cache disabled",
            "unique prompt",
            "cold cache",
            "without prefix cach",
        ],
    ) {
        put(&mut pins, "nonce_prefix", "on".into(), ev);
    } else if let Some(ev) = contains_any(
        &t,
        &[
            "prefix cach",
            "cache hit",
            "cached prompt",
            "kv cache reuse",
            "prompt caching",
        ],
    ) {
        put(&mut pins, "nonce_prefix", "off".into(), ev);
    }
    if let Some(ev) = contains_any(&t, &["greedy"]) {
        put(&mut pins, "temperature", "0".into(), ev);
    }
    // Reasoning: switched off is a pin; an effort or a budget is what was sent, but
    // whether the stream showed the reasoning is not said, so it stays context.
    if let Some(ev) = contains_any(
        &t,
        &[
            "thinking off",
            "thinking disabled",
            "without thinking",
            "no thinking",
            "non-reasoning",
            "reasoning off",
            "without reasoning",
        ],
    ) {
        put(&mut pins, "reasoning", "none".into(), ev);
    }
    for (i, tok) in w.iter().enumerate() {
        let next = |k: usize| w.get(i + k).map_or("", |s| s.as_str());
        let prev = i
            .checked_sub(1)
            .and_then(|j| w.get(j))
            .map_or("", |s| s.as_str());
        if tok == "effort" && ["reasoning", "thinking"].contains(&prev) {
            let level = [
                next(1),
                next(2),
                i.checked_sub(2)
                    .and_then(|j| w.get(j))
                    .map_or("", |s| s.as_str()),
            ]
            .into_iter()
            .find(|l| ["minimal", "low", "medium", "high"].contains(l));
            let value = level.map_or("stated, level not given".to_owned(), |l| {
                format!("effort={l}")
            });
            put(
                &mut context,
                "reasoning_effort",
                value,
                format!("{prev} effort"),
            );
        }
        if tok == "budget" && ["thinking", "reasoning"].contains(&prev) {
            let n = [next(1), next(2), next(3)].into_iter().find_map(count);
            let value = n.map_or("a budget, size not given".to_owned(), |n| {
                format!("budget={n}")
            });
            put(
                &mut context,
                "reasoning_budget",
                value,
                format!("{prev} budget"),
            );
        }
        if tok == "time" && next(1) == "to" && next(2) == "first" && next(3) == "answer" {
            put(
                &mut context,
                "time_to_first_answer",
                "the first answer token, after the reasoning (not TTFT)".into(),
                "time to first answer".into(),
            );
        }
        if (tok == "thinking" || tok == "reasoning")
            && ["model", "models", "mode"].contains(&next(1))
        {
            put(
                &mut context,
                "reasoning_model",
                "a reasoning model: whether its reasoning is shown and timed is not given".into(),
                format!("{tok} {}", next(1)),
            );
        }
    }
    for (i, tok) in w.iter().enumerate() {
        if tok == "temperature" || tok.starts_with("temperature=") {
            let v = tok
                .strip_prefix("temperature=")
                .map(str::to_owned)
                .or_else(|| w.get(i + 1).filter(|n| *n != "of" && *n != "=").cloned())
                .or_else(|| w.get(i + 2).cloned());
            if let Some(v) = v.filter(|v| number(v).is_some()) {
                put(
                    &mut pins,
                    "temperature",
                    v.clone(),
                    format!("temperature {v}"),
                );
            }
        }
        // "over 10 minutes", "sustained for 60 s"
        if ["over", "for"].contains(&tok.as_str()) {
            if let (Some(n), Some(unit)) = (w.get(i + 1).and_then(|n| number(n)), w.get(i + 2)) {
                let secs = match unit.as_str() {
                    "s" | "sec" | "secs" | "seconds" => Some(n),
                    "min" | "mins" | "minute" | "minutes" => Some(n * 60.0),
                    "hour" | "hours" | "h" => Some(n * 3600.0),
                    _ => None,
                };
                if let Some(s) = secs {
                    put(
                        &mut pins,
                        "measured",
                        format!("{}s", crate::decimal::Fixed(s, 0)),
                        format!("{tok} {} {unit}", w[i + 1]),
                    );
                }
            }
        }
    }
    if let Some(ev) = contains_any(&t, &["steady state", "steady-state", "sustained"]) {
        put(&mut context, "window", "steady state".into(), ev);
    } else if let Some(ev) = contains_any(&t, &["peak", "up to", "burst"]) {
        put(
            &mut context,
            "window",
            "a peak (the best moment, not a distribution)".into(),
            ev,
        );
    }
    if let Some(ev) = contains_any(
        &t,
        &[
            "speculative",
            "eagle",
            " mtp",
            "medusa",
            "draft model",
            "multi-token prediction",
        ],
    ) {
        put(&mut context, "speculative_decoding", "on: several tokens per step, so tok/s depends on the acceptance rate of the prompts used".into(), ev.trim().to_owned());
    }

    // Figures.
    for (i, tok) in w.iter().enumerate() {
        let next = |k: usize| w.get(i + k).cloned().unwrap_or_default();
        // "2,100 tok/s", "2,100 output tok/s"
        let unit_at = if next(1) == "tok/s" || next(1) == "tps" {
            Some(1)
        } else if next(2) == "tok/s"
            && ["output", "generated", "decode"].contains(&next(1).as_str())
        {
            Some(2)
        } else {
            None
        };
        let inline = tok.strip_suffix("tok/s").filter(|s| !s.is_empty());
        if let Some(v) = inline
            .and_then(number)
            .or_else(|| unit_at.and_then(|_| number(tok)))
        {
            // The phrases around the number decide its scope.
            let lo = i.saturating_sub(6);
            let hi = (i + 8).min(w.len());
            let around = w[lo..hi].join(" ");
            let scope = if PER_STREAM.iter().any(|p| around.contains(p)) {
                Scope::PerStream
            } else if AGGREGATE.iter().any(|p| around.contains(p)) {
                Scope::Aggregate
            } else {
                Scope::Unknown
            };
            let ttft = if WITH_FIRST.iter().any(|p| around.contains(p)) {
                Ttft::Included
            } else if AFTER_FIRST.iter().any(|p| around.contains(p)) {
                Ttft::Excluded
            } else {
                Ttft::Unknown
            };
            figures.push(Figure::Throughput {
                value: v,
                scope,
                ttft,
            });
        }
        // Latencies: "TTFT of 200 ms", "time to first token under 0.3 s", "150ms TTFT"
        let lat_kind = |s: &str| match s {
            "ttft" => Some("ttft"),
            "tpot" | "itl" => Some("tpot"),
            _ => None,
        };
        let what = lat_kind(tok)
            .or_else(|| (tok == "time" && next(1) == "to" && next(2) == "first").then_some("ttft"));
        if let Some(what) = what {
            // "150 ms TTFT" / "150ms TTFT": the number before.
            let prev = |k: usize| {
                i.checked_sub(k)
                    .and_then(|j| w.get(j))
                    .cloned()
                    .unwrap_or_default()
            };
            let before = match (number(&prev(2)), prev(1).as_str()) {
                (Some(n), "ms") => Some(n),
                (Some(n), "s") => Some(n * 1000.0),
                _ => prev(1).strip_suffix("ms").and_then(number),
            };
            if let Some(ms) = before {
                figures.push(Figure::Latency { what, ms });
                continue;
            }
            for k in 1..6 {
                let cand = next(k);
                let (num, unit) = match cand.strip_suffix("ms") {
                    Some(n) if !n.is_empty() => (number(n), "ms".to_owned()),
                    _ => match cand
                        .strip_suffix('s')
                        .filter(|n| !n.is_empty() && number(n).is_some())
                    {
                        Some(n) => (number(n), "s".to_owned()),
                        None => (number(&cand), next(k + 1)),
                    },
                };
                if let Some(n) = num {
                    let ms = match unit.as_str() {
                        "ms" => Some(n),
                        "s" | "sec" | "seconds" | "second" => Some(n * 1000.0),
                        _ => None,
                    };
                    if let Some(ms) = ms {
                        figures.push(Figure::Latency { what, ms });
                    }
                    break;
                }
            }
        }
        // "3x faster", "2.5x higher throughput"
        if let Some(f) = tok.strip_suffix('x').and_then(number) {
            if [
                "faster", "higher", "more", "better", "lower", "cheaper", "the",
            ]
            .contains(&next(1).as_str())
            {
                let baseline = context
                    .iter()
                    .find(|s| s.field == "baseline")
                    .map(|s| s.value.clone());
                figures.push(Figure::Relative {
                    factor: f,
                    baseline,
                });
            }
        }
    }

    // What is open, and whether it can be checked.
    let stated = |f: &str| pins.iter().any(|s| s.field == f);
    // Each pin (but the endpoint) none of whose form fields the claim states, in pin order.
    let mut open: Vec<PinId> = Vec::new();
    for &(_, pin) in RawConfig::FIELDS {
        let fields = || RawConfig::FIELDS.iter().filter(move |(_, p)| *p == pin);
        if pin != PinId::Endpoint && !open.contains(&pin) && !fields().any(|(f, _)| stated(f)) {
            open.push(pin);
        }
    }
    crate::sort::sort(&mut open);
    let mut reasons = Vec::new();
    let speed = figures.iter().find_map(|f| match f {
        Figure::Throughput { scope, ttft, .. } => Some((*scope, *ttft)),
        _ => None,
    });
    if figures.is_empty() {
        reasons.push("It states no number with a unit (tok/s, ms) to check.".to_owned());
    }
    if !stated("model_id") && !stated("model_params") {
        reasons.push("No model is stated.".to_owned());
    }
    if !stated("prompt_tokens") {
        reasons.push(
            "No prompt (input) length is stated: prefill cost and TTFT depend on it.".to_owned(),
        );
    }
    if !stated("output_tokens") {
        reasons.push("No output length is stated: decode slows as the KV cache fills.".to_owned());
    }
    if !stated("concurrency") && !stated("rate_rps") {
        reasons.push("No concurrency or request rate is stated: per-stream and aggregate tok/s move in opposite directions with load.".to_owned());
    }
    if let Some((Scope::Unknown, _)) = speed {
        reasons.push(
            "It does not say whether the tok/s is one stream's or all streams' together."
                .to_owned(),
        );
    }
    let mut metric = Vec::new();
    match speed {
        Some((Scope::PerStream, ttft)) => metric.push(format!(
            "Per-stream speed (one user's tokens per second). pinbench: per-stream decode tok/s{}",
            match ttft {
                Ttft::Excluded => ", after the first token (TTFT excluded) — the same definition.".to_owned(),
                Ttft::Included => "; the claim counts the wait for the first token, so compare it with pinbench's per-stream end-to-end speed.".to_owned(),
                Ttft::Unknown => "; the claim does not say whether the wait for the first token is inside it — pinbench shows both (decode speed after the first token, and end-to-end speed).".to_owned(),
            }
        )),
        Some((Scope::Aggregate, _)) => metric.push(
            "Aggregate output tok/s (all streams together). pinbench: aggregate output tok/s over the steady (or measured) window; per-stream speed is about this divided by the concurrency.".to_owned(),
        ),
        Some((Scope::Unknown, _)) => metric.push(
            "Either per-stream (one user's speed) or aggregate (all streams together): the two differ by about the concurrency, so the number alone cannot be placed.".to_owned(),
        ),
        None => {}
    }
    for f in &figures {
        match f {
            Figure::Latency { what, .. } => metric.push(format!(
                "A {} latency; it does not say which percentile unless stated (pinbench reports p50 and p99 of the measured window).",
                what.to_ascii_uppercase()
            )),
            Figure::Relative { baseline, .. } => metric.push(format!(
                "A ratio to {}: checkable only by running both with the same pins; pinbench's Compare says whether two reports are comparable.",
                baseline.as_deref().unwrap_or("an unnamed baseline")
            )),
            Figure::Throughput { .. } => {}
        }
    }
    ClaimAnalysis {
        checkable: reasons.is_empty(),
        figures,
        pins,
        context,
        open,
        metric,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize)]
    struct Case {
        claim: String,
        pins: BTreeMap<String, String>,
        #[serde(default)]
        context: BTreeMap<String, String>,
        #[serde(default)]
        scope: Option<String>,
        #[serde(default)]
        ttft: Option<String>,
        #[serde(default)]
        latency: Option<String>,
        #[serde(default)]
        relative: bool,
        checkable: bool,
    }

    fn scope_name(s: Scope) -> &'static str {
        match s {
            Scope::PerStream => "per_stream",
            Scope::Aggregate => "aggregate",
            Scope::Unknown => "unknown",
        }
    }

    /// Every claim of the corpus: exactly its stated pins and context, its metric, and
    /// whether it is checkable. Prints the results table.
    #[test]
    fn the_claim_corpus() {
        let cases: Vec<Case> = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/claims/corpus.json"
        ))
        .expect("corpus");
        assert!(cases.len() >= 30, "{} claims", cases.len());
        let mut failures = Vec::new();
        println!("| # | claim | pins stated | open pins | metric | checkable |");
        println!("|---:|---|---:|---:|---|---|");
        for (i, c) in cases.iter().enumerate() {
            let a = analyse(&c.claim);
            let got: BTreeMap<String, String> = a
                .pins
                .iter()
                .map(|s| (s.field.to_owned(), s.value.clone()))
                .collect();
            if got != c.pins {
                failures.push(format!("#{i} pins: got {got:?}, want {:?}", c.pins));
            }
            let ctx: BTreeMap<String, String> = a
                .context
                .iter()
                .filter(|s| c.context.contains_key(s.field))
                .map(|s| (s.field.to_owned(), s.value.clone()))
                .collect();
            if ctx != c.context {
                failures.push(format!("#{i} context: got {ctx:?}, want {:?}", c.context));
            }
            let speed = a.figures.iter().find_map(|f| match f {
                Figure::Throughput { scope, ttft, .. } => Some((*scope, *ttft)),
                _ => None,
            });
            if speed.map(|s| scope_name(s.0)) != c.scope.as_deref() {
                failures.push(format!("#{i} scope: got {speed:?}, want {:?}", c.scope));
            }
            if let Some(t) = &c.ttft {
                let want = match t.as_str() {
                    "excluded" => Ttft::Excluded,
                    "included" => Ttft::Included,
                    _ => Ttft::Unknown,
                };
                if speed.map(|s| s.1) != Some(want) {
                    failures.push(format!("#{i} ttft: got {speed:?}, want {t}"));
                }
            }
            if let Some(l) = &c.latency {
                if !a
                    .figures
                    .iter()
                    .any(|f| matches!(f, Figure::Latency { what, .. } if what == l))
                {
                    failures.push(format!("#{i} latency {l} not found: {:?}", a.figures));
                }
            }
            if c.relative
                != a.figures
                    .iter()
                    .any(|f| matches!(f, Figure::Relative { .. }))
            {
                failures.push(format!("#{i} relative: {:?}", a.figures));
            }
            if a.checkable != c.checkable {
                failures.push(format!(
                    "#{i} checkable: got {}, reasons {:?}",
                    a.checkable, a.reasons
                ));
            }
            // Not checkable always says why; checkable never has a reason.
            assert_eq!(a.checkable, a.reasons.is_empty(), "#{i}");
            let metric = speed.map_or_else(
                || {
                    if a.figures.is_empty() {
                        "no figure".to_owned()
                    } else {
                        "latency / ratio".to_owned()
                    }
                },
                |s| scope_name(s.0).to_owned(),
            );
            println!(
                "| {i} | {} | {} | {} | {metric} | {} |",
                c.claim.replace('|', "/"),
                a.pins.len(),
                a.open.len(),
                if a.checkable { "yes" } else { "no" }
            );
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_claims_share_link_holds_its_stated_pins_declared() {
        let a = analyse("Llama-3.1-8B bf16, 100 input tokens -> 300 output tokens, 10 parallel requests: 180 tokens/s output speed per stream");
        let raw = RawConfig::from_share_json(&a.share_json()).expect("share json");
        assert_eq!(raw.prompt_tokens.text, "100");
        assert_eq!(raw.output_tokens.text, "300");
        assert_eq!(raw.concurrency.text, "10");
        assert_eq!(raw.model_id.text, "Llama-3.1-8B");
        // Nothing else is filled: the endpoint and the server's facts stay open.
        assert!(raw.endpoint_url.text.is_empty() && raw.kv_capacity.text.is_empty());
        assert!(a.open.contains(&PinId::KvBudget) && a.open.contains(&PinId::Window));
    }

    #[test]
    fn reasoning_words_are_heard() {
        let a = analyse("Our thinking model streams 2,100 tok/s per user at high reasoning effort with a thinking budget of 8192 tokens; time to first answer under 2 s");
        let ctx = |f: &str| {
            a.context
                .iter()
                .filter(|s| s.field == f)
                .map(|s| s.value.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ctx("reasoning_effort"),
            vec!["effort=high".to_owned()],
            "{:?}",
            a.context
        );
        assert_eq!(
            ctx("reasoning_budget"),
            vec!["budget=8192".to_owned()],
            "{:?}",
            a.context
        );
        assert_eq!(ctx("reasoning_model").len(), 1);
        assert_eq!(ctx("time_to_first_answer").len(), 1);
        // An effort is not a pin: whether the reasoning was shown and timed is not said.
        assert!(a.open.contains(&PinId::Reasoning), "{:?}", a.open);
        let off = analyse("Llama 3.1 8B with thinking off: 180 tok/s per user");
        assert!(off
            .pins
            .iter()
            .any(|s| s.field == "reasoning" && s.value == "none"));
    }

    proptest::proptest! {
        /// Whatever is pasted, the checker answers (never panics), and a claim it calls
        /// checkable always has a model, lengths and a load.
        #[test]
        fn any_text_is_analysed(text in "\\PC{0,120}", words in proptest::collection::vec("(70b|8×h100|1k/1k|tok/s|per user|c=8|ttft|…|µs|é|→|3×|than vllm|[0-9,.]{1,6}[kmb]?)", 0..12)) {
            let _ = analyse(&text);
            let a = analyse(&words.join(" "));
            if a.checkable {
                proptest::prop_assert!(a.pin("prompt_tokens").is_some() && a.pin("output_tokens").is_some());
                proptest::prop_assert!(a.pin("concurrency").is_some() || a.pin("rate_rps").is_some());
            }
        }
    }

    #[test]
    fn numbers_and_garbage() {
        assert_eq!(number("2,100"), Some(2100.0));
        assert_eq!(number("1.5k"), Some(1500.0));
        assert_eq!(number("k"), None);
        assert_eq!(count("1.5"), None);
        for junk in [
            "",
            "x",
            "tok/s",
            "->",
            "1k/",
            "/1k",
            "8x",
            "×××",
            "0 tok/s per user",
            "9999999999999999999999k input",
        ] {
            let a = analyse(junk);
            assert!(!a.checkable, "{junk}");
        }
    }
}
