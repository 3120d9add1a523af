//! Result files of other tools, read into a [`Subject`] so they share the viewer and the
//! comparison — with every pin they state read from the file, and every pin they leave
//! free marked unpinned. Where a file has per-request data, its requests become
//! [`RequestRecord`]s and pinbench recomputes its own figures from them, beside the
//! tool's ([`ImportedRequests`]).
//!
//! Formats, as the real tools write them (fixtures in `tests/fixtures/imports/real/`,
//! produced by `scripts/capture_tool_fixtures.sh`; older documented shapes are still read):
//! - vLLM `vllm bench serve --save-result [--save-detailed]` (0.33): one object with
//!   `model_id`, `backend`, `request_rate`, `burstiness`, `max_concurrency`, `num_prompts`,
//!   the summary (`mean_ttft_ms`, `median_tpot_ms`, `p99_itl_ms`, …) and, detailed, per
//!   request `input_lens`, `output_lens`, `start_times` (s), `ttfts` (s), `itls` (s, one
//!   per chunk after the first, the final finish-only chunk included), `latencies` (s),
//!   `errors`.
//! - AIPerf `profile_export_aiperf.json` (0.13, schema 1.4): one stats block per metric
//!   (`unit`, `avg`, `p50`, `p99`, …) and `input_config` with `models.items[].name`,
//!   `endpoint` (`urls`, `type`, `extra`), `datasets[].prompts.isl/osl` and `phases[]`
//!   (warm-up and profiling, each with its type, concurrency or rate, and request count).
//!   Older exports (`endpoint.model_names`, `input.prompt`, `loadgen`) are still read.
//! - AIPerf `profile_export.jsonl` (records): one JSON object per line, `metadata`
//!   (`benchmark_phase`, `request_start_ns`, `request_end_ns`) and `metrics`
//!   (`time_to_first_token`, `inter_chunk_latency`, `request_latency`, `usage_*`, ms).
//! - guidellm `benchmarks.json` (0.8): `config.spec` (backend target/model/format/extras,
//!   profile with warm-up, data with prompt/output tokens) and `benchmarks[]`, each with
//!   `config.strategy`, `metrics.<name>.successful` and `requests.{successful, errored,
//!   incomplete}` with per-request timings (`request_start`, `first_token_iteration`,
//!   `last_token_iteration`, `token_iterations`, `request_end`) — first and last token
//!   only, so chunk gaps are spread evenly between them and said so.

use serde_json::Value;

use crate::compare::{order, Integrity, Number, Subject};
use crate::decimal::{fixed, Fixed, Shortest};
use crate::dialect::Usage;
use crate::metrics::{self, MetricsPlan, StepSummary};
use crate::pins::{LoadStep, PinId, Span, WindowPlan};
use crate::record::{self, Anomalies, Outcome, RequestRecord, TokenCounts};
use crate::rows::{PinRow, PinStatus};

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    /// Not a format we know.
    #[error("not a pinbench report, vLLM bench result, AIPerf profile export or guidellm benchmarks file")]
    Unknown,
    /// The file claims more than a document may expand to (a decompression bomb?).
    #[error("{tool} file: {what}")]
    Budget {
        /// The tool.
        tool: &'static str,
        /// The budget's message.
        what: String,
    },
    /// The format was recognised but a required field is missing or of the wrong type.
    #[error("{tool} file: {what}")]
    Field {
        /// The tool.
        tool: &'static str,
        /// What is wrong.
        what: String,
    },
}

/// The tools we import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `vllm bench serve`.
    Vllm,
    /// NVIDIA AIPerf, its summary export.
    Aiperf,
    /// guidellm.
    Guidellm,
}

/// How the chunk times of imported requests are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkTimes {
    /// Every chunk's time is in the file.
    Every,
    /// Only the first and last token times (and the number of chunks): the chunks in
    /// between are spread evenly, so chunk-gap figures are not measurements.
    FirstAndLast,
}

/// One figure under the tool's definition and under pinbench's.
#[derive(Clone, Debug, PartialEq)]
pub struct SideBySide {
    /// Stable key.
    pub key: &'static str,
    /// What it is.
    pub label: &'static str,
    /// The tool's own value, as its file states it.
    pub tool: Option<f64>,
    /// The tool's definition.
    pub tool_definition: &'static str,
    /// pinbench's value, recomputed from the file's requests.
    pub pinbench: Option<f64>,
    /// Whether the two definitions are the same (the values must then agree).
    pub same_definition: bool,
}

/// The requests of an imported file and what pinbench computes from them.
#[derive(Clone, Debug)]
pub struct ImportedRequests {
    /// One record per request, warm-up included (the plan's window discards it).
    pub records: Vec<RequestRecord>,
    /// The load and windows the records are summarised with.
    pub plan: MetricsPlan,
    /// pinbench's figures (one step).
    pub summary: StepSummary,
    /// How chunk times are known.
    pub chunk_times: ChunkTimes,
    /// Figures under both definitions.
    pub side_by_side: Vec<SideBySide>,
}

/// An imported file.
#[derive(Clone, Debug)]
pub struct Imported {
    /// Pins and the tool's numbers (what comparison uses).
    pub subject: Subject,
    /// Per-request data, when the file has it.
    pub requests: Option<ImportedRequests>,
}

/// Which tool wrote this JSON, if any we know.
pub fn detect(v: &Value) -> Option<Tool> {
    let o = v.as_object()?;
    if o.contains_key("benchmarks") && o["benchmarks"].is_array() {
        return Some(Tool::Guidellm);
    }
    if o.contains_key("output_throughput")
        && (o.contains_key("mean_ttft_ms") || o.contains_key("model_id"))
    {
        return Some(Tool::Vllm);
    }
    let has_stats = |m: &serde_json::Map<String, Value>| {
        m.get("time_to_first_token")
            .or_else(|| m.get("request_latency"))
            .and_then(|x| x.get("unit"))
            .is_some()
    };
    if has_stats(o)
        || o.get("records")
            .and_then(Value::as_object)
            .is_some_and(has_stats)
        || o.contains_key("input_config") && o.contains_key("schema_version")
    {
        return Some(Tool::Aiperf);
    }
    None
}

/// Whether `text` looks like AIPerf's per-record export (JSON lines, each with
/// `metadata.request_start_ns` and `metrics`).
pub fn is_aiperf_records(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| {
            v.get("metrics").is_some_and(Value::is_object)
                && v.pointer("/metadata/request_start_ns").is_some()
        })
}

fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    x.as_f64()
}

fn s(v: &Value, path: &[&str]) -> Option<String> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    match x {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn pinned(pin: PinId, key: &'static str, value: String, prov: String) -> PinRow {
    PinRow {
        pin,
        key,
        label: "",
        value,
        provenance: prov,
        status: PinStatus::Pinned,
    }
}

fn unpinned(pin: PinId, key: &'static str, note: &str, prov: String) -> PinRow {
    PinRow {
        pin,
        key,
        label: "",
        value: note.into(),
        provenance: prov,
        status: PinStatus::Unpinned,
    }
}

/// Fills labels from the key table.
fn finish(rows: Vec<PinRow>) -> Vec<PinRow> {
    order(rows)
        .into_iter()
        .map(|mut r| {
            if r.label.is_empty() {
                r.label = crate::compare::KEYS
                    .iter()
                    .find(|(k, _, _)| *k == r.key)
                    .map_or("", |(_, l, _)| l);
            }
            r
        })
        .collect()
}

fn num(key: &str, label: &str, value: Option<f64>, window: &str) -> Option<Number> {
    value.filter(|v| v.is_finite()).map(|value| Number {
        key: key.into(),
        label: label.into(),
        value,
        window: window.into(),
    })
}

fn rate_text(rate: f64) -> String {
    let t = fixed(rate, 3);
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Imports a file of a known tool (JSON), or AIPerf's per-record JSON lines.
pub fn import_text(title: &str, text: &str) -> Option<Result<Imported, ImportError>> {
    is_aiperf_records(text).then(|| aiperf_records(title, text))
}

/// Imports a JSON file of a known tool.
pub fn import(title: &str, v: &Value) -> Result<Imported, ImportError> {
    // The chunks a file's requests expand to are charged to the decode budget a report is
    // held to: a file whose requests each claim a million token iterations is refused,
    // never expanded.
    crate::budget::with(crate::budget::REPORT, || {
        match detect(v).ok_or(ImportError::Unknown)? {
            Tool::Vllm => vllm(title, v),
            Tool::Aiperf => aiperf(title, v),
            Tool::Guidellm => guidellm(title, v),
        }
    })
}

/// The token chunks `build_records` makes of a request: every chunk time the file gives,
/// or the spread between its first and last token.
fn chunk_count(r: &RawRequest) -> u64 {
    if r.ttft_us.is_none() || r.error.is_some() {
        return 0;
    }
    match (&r.gaps_us, r.last_token) {
        (Some(g), _) => g.len() as u64 + 1,
        (None, Some((_, n))) => {
            let cap = r.output_tokens.unwrap_or(u64::from(MAX_SPREAD_CHUNKS));
            u64::from(n.clamp(1, MAX_SPREAD_CHUNKS)).min(cap.max(1))
        }
        (None, None) => 1,
    }
}

/// Charges every request's chunks to the active decode budget before any is made.
fn charge(raws: &[RawRequest], tool: &'static str) -> Result<(), ImportError> {
    let total = raws.iter().map(chunk_count).fold(0u64, u64::saturating_add);
    crate::budget::charge_chunks(total).map_err(|what| ImportError::Budget { tool, what })
}

fn arr<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Vec<Value>> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    x.as_array()
}

fn field_err(tool: &'static str, what: impl Into<String>) -> ImportError {
    ImportError::Field {
        tool,
        what: what.into(),
    }
}

/// Seconds (or ms × 1000) to whole µs, for finite non-negative values.
fn us(seconds: f64) -> Option<u64> {
    (0.0..1e12)
        .contains(&seconds)
        .then(|| (seconds * 1e6).round() as u64)
}

/// A length pin from per-request counts: one value, or its range and mean.
fn lengths_text(v: &[u64]) -> Option<String> {
    let (min, max) = (*v.iter().min()?, *v.iter().max()?);
    if min == max {
        return Some(min.to_string());
    }
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    Some(format!("{min}–{max} (mean {})", Fixed(mean, 1)))
}

/// Most chunks spread between a request's first and last token times.
const MAX_SPREAD_CHUNKS: u32 = 1 << 20;

/// One request as another tool's file states it.
#[derive(Clone, Debug, Default)]
struct RawRequest {
    /// Send time, µs on the file's clock.
    t_send_us: u64,
    /// TTFT, µs (absent for a failed request).
    ttft_us: Option<u64>,
    /// Every chunk's gap after the first, µs.
    gaps_us: Option<Vec<u64>>,
    /// Only the last token's time (µs after send) and the number of token chunks.
    last_token: Option<(u64, u32)>,
    /// End − send, µs.
    e2e_us: u64,
    prompt_tokens: Option<u64>,
    output_tokens: Option<u64>,
    prompt_requested: Option<u64>,
    output_requested: Option<u64>,
    error: Option<String>,
    warmup: bool,
}

/// Records from raw requests: sorted by send time, the clock moved to start at 0.
fn build_records(mut raws: Vec<RawRequest>) -> Vec<RequestRecord> {
    crate::sort::sort_by_key(&mut raws, |r| (!r.warmup, r.t_send_us));
    // Warm-up first (the window plan discards the first N); within each, send order.
    let t0 = raws.iter().map(|r| r.t_send_us).min().unwrap_or(0);
    raws.iter()
        .enumerate()
        .map(|(i, r)| {
            let send = r.t_send_us - t0;
            let mut times = Vec::new();
            if let (Some(ttft), None) = (r.ttft_us, &r.error) {
                let first = send.saturating_add(ttft);
                times.push(first);
                if let Some(gaps) = &r.gaps_us {
                    let mut t = first;
                    for g in gaps {
                        t = t.saturating_add(*g);
                        times.push(t);
                    }
                } else if let Some((last, n)) = r.last_token {
                    let last = send.saturating_add(last.max(ttft));
                    // A file's count of chunks is bounded by its token count (and a cap),
                    // never by what it claims alone.
                    let cap = r.output_tokens.unwrap_or(u64::from(MAX_SPREAD_CHUNKS));
                    let n = u128::from(u64::from(n.clamp(1, MAX_SPREAD_CHUNKS)).min(cap.max(1)));
                    let span = u128::from(last - first);
                    for k in 1..n {
                        times.push(first + u64::try_from(span * k / (n - 1)).unwrap_or(0));
                    }
                }
            }
            // A trailing chunk beyond the server's count is the finish-only chunk.
            let trailing = match r.output_tokens {
                Some(u) if u.checked_add(1) == Some(times.len() as u64) => times.pop(),
                _ => None,
            };
            let (chunks, token_counts) =
                record::account_text_chunks(&times, trailing, r.output_tokens);
            let usage = r.output_tokens.map(|c| Usage {
                prompt_tokens: r.prompt_tokens.unwrap_or(0),
                completion_tokens: c,
                cached_tokens: None,
                reasoning_tokens: None,
            });
            let outcome = match &r.error {
                None => Outcome::Ok {},
                Some(m) => Outcome::StreamError { message: m.clone() },
            };
            let clamp = |v: Option<u64>| v.and_then(|x| u32::try_from(x).ok()).unwrap_or(0);
            RequestRecord {
                index: i as u32,
                step: 0,
                prompt_tokens_requested: clamp(r.prompt_requested.or(r.prompt_tokens)),
                output_tokens_requested: clamp(r.output_requested.or(r.output_tokens)),
                t_send_us: send,
                t_intended_us: None,
                held_by_cap: false,
                t_headers_us: None,
                t_done_us: Some(send.saturating_add(r.e2e_us)),
                status: None,
                deltas: times.len() as u32,
                chunks,
                token_counts: if r.error.is_some() {
                    TokenCounts::UnverifiedNoUsage
                } else {
                    token_counts
                },
                usage,
                finish_reason: None,
                response_id: None,
                server_timings: None,
                protocol: None,
                wire: None,
                outcome,
                anomalies: Anomalies::default(),
                reasoning: None,
                throttle: None,
                turn: None,
            }
        })
        .collect()
}

/// Tool figures to set beside pinbench's: (key, label, tool value, tool definition,
/// same definition).
type ToolFigures = Vec<(&'static str, &'static str, Option<f64>, &'static str, bool)>;

fn requests_of(
    raws: Vec<RawRequest>,
    load: LoadStep,
    chunk_times: ChunkTimes,
    tool: ToolFigures,
) -> Option<ImportedRequests> {
    if raws.is_empty() {
        return None;
    }
    let warm = raws.iter().filter(|r| r.warmup).count() as u32;
    let measured = raws.len() as u32 - warm;
    let records = build_records(raws);
    let plan = MetricsPlan {
        steps: vec![load],
        window: WindowPlan {
            warmup: Span::Requests { count: warm },
            measured: Span::Requests { count: measured },
            cooldown: Span::Requests { count: 0 },
        },
        slo: None,
    };
    let summary = metrics::summarize(&records, &plan)
        .ok()?
        .steps
        .into_iter()
        .next()?;
    let ms = |v: Option<u64>| v.map(|x| x as f64 / 1000.0);
    let pinbench = |key: &str| -> Option<f64> {
        match key {
            "ttft_mean_ms" => ms(summary.ttft_us.map(|d| d.mean)),
            "ttft_p50_ms" => ms(summary.ttft_us.map(|d| d.p50)),
            "ttft_p99_ms" => ms(summary.ttft_us.map(|d| d.p99)),
            "tpot_mean_ms" => ms(summary.tpot_us.map(|d| d.mean)),
            "tpot_p50_ms" => ms(summary.tpot_us.map(|d| d.p50)),
            "tpot_p99_ms" => ms(summary.tpot_us.map(|d| d.p99)),
            "e2e_mean_ms" => ms(summary.e2e_us.map(|d| d.mean)),
            "e2e_p50_ms" => ms(summary.e2e_us.map(|d| d.p50)),
            "gap_mean_ms" if chunk_times == ChunkTimes::Every => {
                ms(summary.inter_chunk_us.map(|d| d.mean))
            }
            "aggregate_tok_s" => summary
                .windows
                .measured
                .map(|w| w.aggregate_output_milli as f64 / 1000.0),
            _ => None,
        }
    };
    let side_by_side = tool
        .into_iter()
        .map(|(key, label, value, def, same)| SideBySide {
            key,
            label,
            tool: value,
            tool_definition: def,
            pinbench: pinbench(key),
            same_definition: same,
        })
        .collect();
    Some(ImportedRequests {
        records,
        plan,
        summary,
        chunk_times,
        side_by_side,
    })
}

/// pinbench's recomputed figures as subject numbers.
fn recomputed_numbers(req: &ImportedRequests) -> Vec<Number> {
    req.side_by_side
        .iter()
        .filter_map(|s| {
            num(
                &format!("recomputed.{}", s.key),
                &format!(
                    "{} (pinbench definition, from the file's requests)",
                    s.label
                ),
                s.pinbench,
                "measured requests of the file",
            )
        })
        .collect()
}

fn load_of_rate(
    rate: Option<f64>,
    burst: Option<f64>,
    cap: Option<f64>,
) -> Option<(String, LoadStep)> {
    let cap_u = cap.filter(|c| *c >= 1.0 && *c < 1e6).map(|c| c as u32);
    match rate {
        Some(r) if r.is_infinite() => {
            let c = cap_u?;
            Some((
                format!("closed loop, c={c}"),
                LoadStep::Closed { concurrency: c },
            ))
        }
        Some(r) if r.is_finite() && r > 0.0 => {
            let burst = burst.unwrap_or(1.0);
            let (arrival, text) = if (burst - 1.0).abs() < 1e-9 {
                (crate::pins::Arrival::Poisson {}, "Poisson".to_owned())
            } else {
                (
                    crate::pins::Arrival::Gamma {
                        shape_milli: (burst * 1000.0).round() as u32,
                    },
                    format!("gamma k={}", rate_text(burst)),
                )
            };
            let step = LoadStep::Open {
                rate_milli_rps: (r * 1000.0).round() as u64,
                arrival,
                in_flight_cap: cap_u.unwrap_or(u32::MAX),
            };
            Some(match cap_u {
                Some(c) => (
                    format!("open loop, {} req/s {text}, cap {c}", rate_text(r)),
                    step,
                ),
                None => (
                    format!("open loop, {} req/s {text}, no cap", rate_text(r)),
                    step,
                ),
            })
        }
        _ => None,
    }
}

fn vllm(title: &str, v: &Value) -> Result<Imported, ImportError> {
    let src = |field: &str| format!("vLLM result ({field})");
    let completed = f(v, &["completed"])
        .ok_or_else(|| field_err("vLLM", "`completed` is missing or not a number"))?;
    let mut rows = Vec::new();
    match s(v, &["model_id"]) {
        Some(m) => rows.push(pinned(PinId::Model, "model.id", m, src("model_id"))),
        None => rows.push(unpinned(PinId::Model, "model.id", "", src("model_id"))),
    }
    if let Some(b) = s(v, &["backend"]) {
        let api = match b.as_str() {
            "openai-chat" => "chat completions",
            "vllm" | "openai" => "completions",
            other => other,
        };
        rows.push(pinned(
            PinId::Endpoint,
            "endpoint",
            format!("{api} API (backend {b})"),
            src("backend"),
        ));
    }
    let rate = v.get("request_rate");
    let rate = rate.and_then(Value::as_f64).or_else(|| {
        rate.and_then(Value::as_str)
            .filter(|s| *s == "inf")
            .map(|_| f64::INFINITY)
    });
    let load = load_of_rate(rate, f(v, &["burstiness"]), f(v, &["max_concurrency"]));
    match &load {
        Some((l, _)) => rows.push(pinned(
            PinId::Load,
            "load",
            l.clone(),
            src("request_rate, burstiness, max_concurrency"),
        )),
        None => rows.push(unpinned(
            PinId::Load,
            "load",
            "every request sent at once, no concurrency cap",
            src("request_rate=inf, max_concurrency=null"),
        )),
    }
    let lens = |k: &str| -> Option<Vec<u64>> {
        arr(v, &[k]).map(|a| a.iter().filter_map(Value::as_u64).collect())
    };
    let (input_lens, output_lens) = (lens("input_lens"), lens("output_lens"));
    match input_lens.as_deref().and_then(lengths_text) {
        Some(t) => rows.push(pinned(
            PinId::PromptLength,
            "prompt_len",
            t,
            src("input_lens, the client tokenizer's count"),
        )),
        None => rows.push(unpinned(
            PinId::PromptLength,
            "prompt_len",
            "requested length not recorded",
            src("—"),
        )),
    }
    match output_lens.as_deref().and_then(lengths_text) {
        Some(t) => rows.push(pinned(
            PinId::OutputLength,
            "output_len",
            format!("{t} (how the length was held, e.g. ignore_eos, is not recorded)"),
            src("output_lens, the server's usage"),
        )),
        None => rows.push(unpinned(
            PinId::OutputLength,
            "output_len",
            "requested length and EOS handling not recorded",
            src("—"),
        )),
    }
    let n = f(v, &["num_prompts"]).unwrap_or(completed);
    rows.push(pinned(
        PinId::Window,
        "window",
        format!("all {} requests, ramp-up and tail included (warm-up requests, if any, ran before and are not counted; their number is not recorded)", Shortest(n)),
        src("num_prompts"),
    ));
    let mean_len = |k: &str| {
        f(v, &[k])
            .filter(|_| completed > 0.0)
            .map(|t| t / completed)
    };
    let mut numbers = Vec::new();
    for (key, label, field) in [
        ("ttft_p50_ms", "TTFT p50, ms", "median_ttft_ms"),
        ("ttft_p99_ms", "TTFT p99, ms", "p99_ttft_ms"),
        (
            "tpot_p50_ms",
            "TPOT p50, ms (vLLM: (E2E − TTFT)/(n − 1))",
            "median_tpot_ms",
        ),
        (
            "tpot_p99_ms",
            "TPOT p99, ms (vLLM: (E2E − TTFT)/(n − 1))",
            "p99_tpot_ms",
        ),
        (
            "itl_p50_ms",
            "chunk gap p50, ms (vLLM ITL)",
            "median_itl_ms",
        ),
        (
            "aggregate_tok_s",
            "aggregate output tok/s (all streams)",
            "output_throughput",
        ),
    ] {
        numbers.extend(num(key, label, f(v, &[field]), "whole run (vLLM)"));
    }
    // Per-request data (--save-detailed).
    let mut requests = None;
    if let (Some(starts), Some(ttfts), Some(lat)) = (
        arr(v, &["start_times"]),
        arr(v, &["ttfts"]),
        arr(v, &["latencies"]),
    ) {
        let itls = arr(v, &["itls"]);
        let errors = arr(v, &["errors"]);
        let mut raws = Vec::new();
        for (i, st) in starts.iter().enumerate() {
            let Some(t_send_us) = st.as_f64().and_then(us) else {
                continue;
            };
            let error = errors
                .and_then(|e| e.get(i))
                .and_then(Value::as_str)
                .filter(|e| !e.is_empty())
                .map(|e| e.chars().take(300).collect());
            let ttft = ttfts
                .get(i)
                .and_then(Value::as_f64)
                .and_then(us)
                .filter(|t| *t > 0);
            raws.push(RawRequest {
                t_send_us,
                ttft_us: ttft,
                gaps_us: itls
                    .and_then(|a| a.get(i))
                    .and_then(Value::as_array)
                    .map(|g| g.iter().filter_map(|x| x.as_f64().and_then(us)).collect()),
                e2e_us: lat.get(i).and_then(Value::as_f64).and_then(us).unwrap_or(0),
                prompt_tokens: input_lens.as_ref().and_then(|l| l.get(i).copied()),
                output_tokens: output_lens
                    .as_ref()
                    .and_then(|l| l.get(i).copied())
                    .filter(|_| error.is_none()),
                error: error.or_else(|| ttft.is_none().then(|| "no token received".to_owned())),
                ..RawRequest::default()
            });
        }
        let step = load.as_ref().map_or(
            LoadStep::Closed {
                concurrency: raws.len().max(1) as u32,
            },
            |(_, s)| *s,
        );
        charge(&raws, "vLLM bench")?;
        requests = requests_of(
            raws,
            step,
            ChunkTimes::Every,
            vec![
                (
                    "ttft_mean_ms",
                    "TTFT mean, ms",
                    f(v, &["mean_ttft_ms"]),
                    "first chunk with choices − send",
                    true,
                ),
                (
                    "ttft_p50_ms",
                    "TTFT p50, ms",
                    f(v, &["median_ttft_ms"]),
                    "interpolated percentile",
                    false,
                ),
                (
                    "tpot_mean_ms",
                    "TPOT mean, ms",
                    f(v, &["mean_tpot_ms"]),
                    "(E2E − TTFT)/(output − 1): the time to the final finish-only chunk counts",
                    false,
                ),
                (
                    "e2e_mean_ms",
                    "E2E mean, ms",
                    f(v, &["mean_e2el_ms"]),
                    "end of stream − send",
                    true,
                ),
                (
                    "gap_mean_ms",
                    "chunk gap mean, ms",
                    f(v, &["mean_itl_ms"]),
                    "every gap between chunks with choices, the finish-only chunk included",
                    false,
                ),
                (
                    "aggregate_tok_s",
                    "aggregate output tok/s",
                    f(v, &["output_throughput"]),
                    "output tokens / benchmark duration",
                    false,
                ),
            ],
        );
    }
    if let Some(r) = &requests {
        numbers.extend(recomputed_numbers(r));
    }
    Ok(Imported {
        subject: Subject {
            run: None,
            title: title.into(),
            tool: "vLLM bench serve".into(),
            pins: finish(rows),
            prompt_mean: mean_len("total_input_tokens"),
            output_mean: mean_len("total_output_tokens"),
            numbers,
            integrity: Integrity::Sound("another tool's file: unsigned".into()),
        },
        requests,
    })
}

fn aiperf(title: &str, v: &Value) -> Result<Imported, ImportError> {
    let stats = v.get("records").filter(|r| r.is_object()).unwrap_or(v);
    let cfg = v.get("input_config").unwrap_or(&Value::Null);
    let src = |field: &str| format!("AIPerf input_config ({field})");
    let mut rows = Vec::new();
    let model = arr(cfg, &["models", "items"])
        .and_then(|a| a.first())
        .and_then(|m| s(m, &["name"]))
        .map(|m| (m, "models.items[0].name"))
        .or_else(|| s(cfg, &["endpoint", "model_names"]).map(|m| (m, "endpoint.model_names")));
    match model {
        Some((m, from)) => rows.push(pinned(PinId::Model, "model.id", m, src(from))),
        None => rows.push(unpinned(PinId::Model, "model.id", "", src("models"))),
    }
    if let Some(url) = s(cfg, &["endpoint", "urls"]) {
        let kind = s(cfg, &["endpoint", "type"]).unwrap_or_default();
        rows.push(pinned(
            PinId::Endpoint,
            "endpoint",
            format!("{url} ({kind})"),
            src("endpoint.urls, endpoint.type"),
        ));
    }
    let prompts = arr(cfg, &["datasets"])
        .and_then(|d| d.first())
        .and_then(|d| d.get("prompts"));
    let dist = |node: Option<&Value>| -> Option<String> {
        let node = node?;
        let mean = f(node, &["mean"])?;
        let sd = f(node, &["stddev"]).unwrap_or(0.0);
        Some(if sd == 0.0 {
            rate_text(mean)
        } else {
            format!("normal({},{})", rate_text(mean), rate_text(sd))
        })
    };
    let isl = dist(prompts.and_then(|p| p.get("isl")))
        .map(|t| (t, "datasets[0].prompts.isl"))
        .or_else(|| {
            dist(cfg.pointer("/input/prompt/input_tokens"))
                .map(|t| (t, "input.prompt.input_tokens"))
        });
    match isl {
        Some((t, from)) => rows.push(pinned(PinId::PromptLength, "prompt_len", t, src(from))),
        None => rows.push(unpinned(PinId::PromptLength, "prompt_len", "", src("—"))),
    }
    let osl = dist(prompts.and_then(|p| p.get("osl")))
        .map(|t| (t, "datasets[0].prompts.osl"))
        .or_else(|| {
            dist(cfg.pointer("/input/prompt/output_tokens"))
                .map(|t| (t, "input.prompt.output_tokens"))
        });
    let extra = cfg.pointer("/endpoint/extra");
    let enforced = extra.is_some_and(|e| {
        e.get("ignore_eos").and_then(Value::as_bool) == Some(true) || e.get("min_tokens").is_some()
    });
    match (osl, enforced) {
        (Some((t, from)), true) => rows.push(pinned(
            PinId::OutputLength,
            "output_len",
            format!("{t} (ignore_eos / min_tokens sent)"),
            src(&format!("{from}, endpoint.extra")),
        )),
        (Some((t, from)), false) => rows.push(unpinned(
            PinId::OutputLength,
            "output_len",
            &format!("max_tokens {t}; stopping at EOS not pinned"),
            src(from),
        )),
        (None, _) => rows.push(unpinned(
            PinId::OutputLength,
            "output_len",
            "not recorded",
            src("—"),
        )),
    }
    // Phases (0.13): warm-up and profiling, each with its load.
    let phases = arr(cfg, &["phases"]);
    let phase = |kind: &str| {
        phases.and_then(|p| p.iter().find(|x| s(x, &["kind"]).as_deref() == Some(kind)))
    };
    let load_of = |p: &Value| -> Option<(String, LoadStep)> {
        let conc = f(p, &["concurrency"]);
        match s(p, &["type"]).as_deref() {
            Some("concurrency") => {
                let c = conc.filter(|c| *c >= 1.0)? as u32;
                Some((
                    format!("closed loop, c={c}"),
                    LoadStep::Closed { concurrency: c },
                ))
            }
            _ => load_of_rate(
                f(p, &["request_rate"]).or_else(|| f(p, &["rate"])),
                None,
                conc,
            ),
        }
    };
    let load = phase("profiling")
        .and_then(load_of)
        .map(|l| (l, "phases[profiling]"))
        .or_else(|| {
            let c = f(cfg, &["loadgen", "concurrency"]);
            let r = f(cfg, &["loadgen", "request_rate"]);
            match (c, r) {
                (Some(c), None) if c >= 1.0 => Some((
                    (
                        format!("closed loop, c={}", Shortest(c)),
                        LoadStep::Closed {
                            concurrency: c as u32,
                        },
                    ),
                    "loadgen",
                )),
                (c, Some(r)) => load_of_rate(Some(r), None, c).map(|l| (l, "loadgen")),
                _ => None,
            }
        });
    match &load {
        Some(((l, _), from)) => rows.push(pinned(PinId::Load, "load", l.clone(), src(from))),
        None => rows.push(unpinned(PinId::Load, "load", "", src("phases"))),
    }
    let warm = phase("warmup")
        .and_then(|p| f(p, &["requests"]))
        .map(|w| (w, "phases[warmup].requests"))
        .or_else(|| {
            f(cfg, &["loadgen", "warmup_request_count"])
                .map(|w| (w, "loadgen.warmup_request_count"))
        });
    let measured = phase("profiling").and_then(|p| f(p, &["requests"]));
    let window = match (warm, measured) {
        (w, Some(m)) => format!(
            "warm-up {} requests (excluded), measured {} requests, no cool-down",
            Shortest(w.map_or(0.0, |x| x.0)),
            Shortest(m)
        ),
        (w, None) => format!(
            "warm-up {} requests, measured: rest of run, no cool-down",
            Shortest(w.map_or(0.0, |x| x.0))
        ),
    };
    rows.push(pinned(
        PinId::Window,
        "window",
        window,
        src(warm.map_or("phases", |w| w.1)),
    ));
    let st = |tag: &str, field: &str| f(stats, &[tag, field]);
    let mut numbers = Vec::new();
    for (key, label, tag, field) in [
        ("ttft_p50_ms", "TTFT p50, ms", "time_to_first_token", "p50"),
        ("ttft_p99_ms", "TTFT p99, ms", "time_to_first_token", "p99"),
        (
            "tpot_p50_ms",
            "TPOT p50, ms (AIPerf inter_token_latency)",
            "inter_token_latency",
            "p50",
        ),
        (
            "tpot_p99_ms",
            "TPOT p99, ms (AIPerf inter_token_latency)",
            "inter_token_latency",
            "p99",
        ),
        (
            "per_stream_tok_s",
            "per-stream tok/s (AIPerf per user, p50)",
            "output_token_throughput_per_user",
            "p50",
        ),
        (
            "aggregate_tok_s",
            "aggregate output tok/s (all streams)",
            "output_token_throughput",
            "avg",
        ),
    ] {
        numbers.extend(num(key, label, st(tag, field), "profiling phase (AIPerf)"));
    }
    let schema = s(v, &["schema_version"]).unwrap_or_else(|| "?".into());
    let tool = match s(v, &["aiperf_version"]) {
        Some(ver) => format!("AIPerf {ver} (schema {schema})"),
        None => format!("AIPerf (schema {schema})"),
    };
    Ok(Imported {
        subject: Subject {
            run: None,
            title: title.into(),
            tool,
            pins: finish(rows),
            prompt_mean: st("input_sequence_length", "avg"),
            output_mean: st("output_sequence_length", "avg"),
            numbers,
            integrity: Integrity::Sound("another tool's file: unsigned".into()),
        },
        requests: None,
    })
}

fn aiperf_records(title: &str, text: &str) -> Result<Imported, ImportError> {
    let mut raws = Vec::new();
    // The first model name in sorted order (one is expected).
    let (mut warm, mut models) = (0u32, None::<String>);
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = crate::report::parse_json(line)
            .map_err(|e| field_err("AIPerf records", format!("line {} is not JSON: {e}", n + 1)))?;
        let md = v.get("metadata").unwrap_or(&Value::Null);
        let m = v.get("metrics").unwrap_or(&Value::Null);
        let val = |k: &str| f(m, &[k, "value"]);
        let ms_us = |x: f64| us(x / 1000.0);
        let Some(start_ns) = md.get("request_start_ns").and_then(Value::as_u64) else {
            continue;
        };
        let phase = s(md, &["benchmark_phase"]).unwrap_or_default();
        let warmup = phase == "warmup";
        warm += u32::from(warmup);
        if let Some(model) = s(md, &["model_name"]) {
            if models.as_ref().is_none_or(|m| model < *m) {
                models = Some(model);
            }
        }
        let gaps = m
            .pointer("/inter_chunk_latency/value")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_f64().and_then(ms_us))
                    .collect()
            });
        let error = v
            .get("error")
            .filter(|e| !e.is_null())
            .map(|e| e.to_string().chars().take(300).collect::<String>())
            .or_else(|| {
                (md.get("was_cancelled").and_then(Value::as_bool) == Some(true))
                    .then(|| "cancelled".into())
            });
        let e2e = val("request_latency").and_then(ms_us).or_else(|| {
            md.get("request_end_ns")
                .and_then(Value::as_u64)
                .map(|e| e.saturating_sub(start_ns) / 1000)
        });
        raws.push(RawRequest {
            t_send_us: start_ns / 1000,
            ttft_us: val("time_to_first_token").and_then(ms_us),
            gaps_us: gaps,
            e2e_us: e2e.unwrap_or(0),
            prompt_tokens: val("usage_prompt_tokens")
                .or_else(|| val("input_sequence_length"))
                .map(|x| x as u64),
            output_tokens: val("usage_completion_tokens")
                .or_else(|| val("output_sequence_length"))
                .map(|x| x as u64),
            prompt_requested: val("input_sequence_length").map(|x| x as u64),
            error,
            warmup,
            ..RawRequest::default()
        });
    }
    if raws.is_empty() {
        return Err(field_err(
            "AIPerf records",
            "no record has metadata.request_start_ns",
        ));
    }
    let src = |field: &str| format!("AIPerf records ({field})");
    let measured: Vec<&RawRequest> = raws.iter().filter(|r| !r.warmup).collect();
    let plens: Vec<u64> = measured.iter().filter_map(|r| r.prompt_tokens).collect();
    let olens: Vec<u64> = measured.iter().filter_map(|r| r.output_tokens).collect();
    let mut rows = Vec::new();
    match models {
        Some(m) => rows.push(pinned(
            PinId::Model,
            "model.id",
            m,
            src("metadata.model_name"),
        )),
        None => rows.push(unpinned(
            PinId::Model,
            "model.id",
            "in profile_export_aiperf.json, not in the records",
            src("—"),
        )),
    }
    match lengths_text(&plens) {
        Some(t) => rows.push(pinned(
            PinId::PromptLength,
            "prompt_len",
            t,
            src("metrics.usage_prompt_tokens"),
        )),
        None => rows.push(unpinned(PinId::PromptLength, "prompt_len", "", src("—"))),
    }
    match lengths_text(&olens) {
        Some(t) => rows.push(pinned(
            PinId::OutputLength,
            "output_len",
            t,
            src("metrics.usage_completion_tokens"),
        )),
        None => rows.push(unpinned(PinId::OutputLength, "output_len", "", src("—"))),
    }
    rows.push(unpinned(
        PinId::Load,
        "load",
        "in profile_export_aiperf.json, not in the records",
        src("—"),
    ));
    rows.push(pinned(
        PinId::Window,
        "window",
        format!(
            "warm-up {warm} requests (excluded), measured {} requests",
            measured.len()
        ),
        src("metadata.benchmark_phase"),
    ));
    let mean = |v: &[u64]| {
        (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64)
    };
    let (prompt_mean, output_mean) = (mean(&plens), mean(&olens));
    // The load is not in this file: the most requests in flight at once stands in for
    // the closed-loop concurrency the summaries are computed under (stated as measured).
    let peak = metrics::max_overlap(
        measured
            .iter()
            .map(|r| (r.t_send_us, r.t_send_us.saturating_add(r.e2e_us))),
    )
    .max(1);
    charge(&raws, "AIPerf")?;
    let requests = requests_of(
        raws,
        LoadStep::Closed { concurrency: peak },
        ChunkTimes::Every,
        vec![
            (
                "ttft_mean_ms",
                "TTFT mean, ms",
                None,
                "time_to_first_token (in the summary file)",
                true,
            ),
            (
                "e2e_mean_ms",
                "E2E mean, ms",
                None,
                "request_latency (in the summary file)",
                true,
            ),
        ],
    );
    let mut numbers = Vec::new();
    if let Some(r) = &requests {
        numbers.extend(recomputed_numbers(r));
    }
    Ok(Imported {
        subject: Subject {
            run: None,
            title: title.into(),
            tool: "AIPerf records (profile_export.jsonl)".into(),
            pins: finish(rows),
            prompt_mean,
            output_mean,
            numbers,
            integrity: Integrity::Sound("another tool's file: unsigned".into()),
        },
        requests,
    })
}

/// Requests of a guidellm benchmark that started before its `start_time` (its warm-up).
fn guidellm_warmup_count(b: &Value) -> usize {
    let Some(begin) = f(b, &["start_time"]) else {
        return 0;
    };
    ["successful", "errored", "incomplete"]
        .iter()
        .filter_map(|g| arr(b, &["requests", g]))
        .flatten()
        .filter(|r| f(r, &["info", "timings", "request_start"]).is_some_and(|t| t < begin))
        .count()
}

/// Whether every request of every benchmark says (in its `request_args`, a JSON object or
/// its text) that its body held the output length. False when there are none.
fn guidellm_requests_hold_length(benches: &[Value], holds: &dyn Fn(&Value) -> bool) -> bool {
    let mut n = 0usize;
    for b in benches {
        for g in ["successful", "errored", "incomplete"] {
            for r in arr(b, &["requests", g]).into_iter().flatten() {
                let args = match r.get("request_args") {
                    Some(Value::String(t)) => serde_json::from_str::<Value>(t).ok(),
                    Some(v @ Value::Object(_)) => Some(v.clone()),
                    _ => None,
                };
                if !args.as_ref().and_then(|a| a.get("body")).is_some_and(holds) {
                    return false;
                }
                n += 1;
            }
        }
    }
    n > 0
}

fn guidellm(title: &str, v: &Value) -> Result<Imported, ImportError> {
    let benches = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| field_err("guidellm", "`benchmarks` is empty"))?;
    let first = &benches[0];
    let spec = v.pointer("/config/spec").unwrap_or(&Value::Null);
    let src = |field: &str| format!("guidellm ({field})");
    let mut rows = Vec::new();
    let model = s(spec, &["backend", "model"])
        .map(|m| (m, "config.spec.backend.model"))
        .or_else(|| s(first, &["worker", "backend_model"]).map(|m| (m, "worker.backend_model")))
        .or_else(|| s(v, &["args", "model"]).map(|m| (m, "args.model")))
        .or_else(|| s(first, &["args", "model"]).map(|m| (m, "args.model")));
    match model {
        Some((m, from)) => rows.push(pinned(PinId::Model, "model.id", m, src(from))),
        None => rows.push(unpinned(PinId::Model, "model.id", "", src("—"))),
    }
    if let Some(t) = s(spec, &["backend", "target"]) {
        let fmt = s(spec, &["backend", "request_format"]).unwrap_or_default();
        rows.push(pinned(
            PinId::Endpoint,
            "endpoint",
            format!("{t}{fmt}"),
            src("config.spec.backend.target, request_format"),
        ));
    }
    let data0 = arr(spec, &["data"]).and_then(|d| d.first());
    // Older files: synthetic data arguments as text, e.g. "prompt_tokens=256,output_tokens=128".
    let data_text = s(first, &["request_loader", "data"])
        .or_else(|| s(v, &["args", "data"]))
        .unwrap_or_default();
    let kv = |name: &str| -> Option<String> {
        data0
            .and_then(|d| d.get(name))
            .and_then(Value::as_u64)
            .map(|n| n.to_string())
            .or_else(|| {
                data_text
                    .split([',', ' '])
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| k.trim() == name)
                    .map(|(_, x)| x.trim().to_owned())
            })
    };
    let data_src = if data0.is_some() {
        "config.spec.data[0]"
    } else {
        "data"
    };
    match kv("prompt_tokens") {
        Some(p) => rows.push(pinned(
            PinId::PromptLength,
            "prompt_len",
            p,
            src(&format!("{data_src}.prompt_tokens")),
        )),
        None => rows.push(unpinned(PinId::PromptLength, "prompt_len", "", src("data"))),
    }
    // What the tool sent to hold the length: its configured extra body, or — where guidellm
    // adds `ignore_eos` itself (synthetic data) — what every request's `request_args` says
    // it sent. Each place the tool records it is read.
    let holds = |b: &Value| {
        b.get("ignore_eos").and_then(Value::as_bool) == Some(true) || b.get("min_tokens").is_some()
    };
    let enforced_by = if spec.pointer("/backend/extras/body").is_some_and(holds) {
        Some("backend.extras.body")
    } else if guidellm_requests_hold_length(benches, &holds) {
        Some("every request's request_args.body")
    } else {
        None
    };
    match (kv("output_tokens"), enforced_by) {
        (Some(o), Some(by)) => rows.push(pinned(
            PinId::OutputLength,
            "output_len",
            format!("{o} (ignore_eos / min_tokens sent)"),
            src(&format!("{data_src}.output_tokens, {by}")),
        )),
        (o, _) => rows.push(unpinned(
            PinId::OutputLength,
            "output_len",
            &o.map_or_else(
                || "not recorded".to_owned(),
                |o| format!("max_tokens {o}; stopping at EOS not pinned"),
            ),
            src("data"),
        )),
    }
    let mut steps = Vec::new();
    let mut loads = Vec::new();
    let mut numbers = Vec::new();
    let multi = benches.len() > 1;
    let (mut pm, mut om, mut nm) = (0.0, 0.0, 0.0);
    for (i, b) in benches.iter().enumerate() {
        let strat = b
            .pointer("/config/strategy")
            .or_else(|| b.get("args").and_then(|a| a.get("strategy")))
            .or_else(|| b.get("strategy"))
            .unwrap_or(&Value::Null);
        let kind = s(strat, &["type_"]).unwrap_or_default();
        let step: Option<(String, LoadStep)> = match kind.as_str() {
            "synchronous" => Some((
                "closed loop, c=1".to_owned(),
                LoadStep::Closed { concurrency: 1 },
            )),
            "concurrent" => f(strat, &["streams"]).filter(|c| *c >= 1.0).map(|c| {
                (
                    format!("closed loop, c={}", Shortest(c)),
                    LoadStep::Closed {
                        concurrency: c as u32,
                    },
                )
            }),
            // Constant-rate arrivals have no pinbench load step: pinned, not recomputed.
            "constant" => {
                let text = f(strat, &["rate"])
                    .map(|r| format!("open loop, {} req/s constant", rate_text(r)));
                steps.push(text.clone().unwrap_or_else(|| "constant (unpinned)".into()));
                loads.push(None);
                None
            }
            "poisson" => load_of_rate(
                f(strat, &["rate"]),
                Some(1.0),
                f(strat, &["max_concurrency"]),
            ),
            _ => None,
        };
        if kind != "constant" {
            steps.push(
                step.as_ref()
                    .map_or_else(|| format!("{kind} (unpinned)"), |x| x.0.clone()),
            );
            loads.push(step.map(|x| x.1));
        }
        let m = |name: &str, stat: &[&str]| {
            let mut p = vec!["metrics", name, "successful"];
            p.extend_from_slice(stat);
            f(b, &p)
        };
        let (kp, lp) = if multi {
            (format!("s{i}."), format!("step {i} ({}): ", steps[i]))
        } else {
            (String::new(), String::new())
        };
        for (key, label, name, stat) in [
            (
                "ttft_p50_ms",
                "TTFT p50, ms",
                "time_to_first_token_ms",
                &["median"][..],
            ),
            (
                "ttft_p99_ms",
                "TTFT p99, ms",
                "time_to_first_token_ms",
                &["percentiles", "p99"][..],
            ),
            (
                "tpot_p50_ms",
                "TPOT p50, ms (guidellm inter_token_latency)",
                "inter_token_latency_ms",
                &["median"][..],
            ),
            (
                "tpot_p99_ms",
                "TPOT p99, ms (guidellm inter_token_latency)",
                "inter_token_latency_ms",
                &["percentiles", "p99"][..],
            ),
            (
                "aggregate_tok_s",
                "aggregate output tok/s (all streams)",
                "output_tokens_per_second",
                &["mean"][..],
            ),
        ] {
            numbers.extend(num(
                &format!("{kp}{key}"),
                &format!("{lp}{label}"),
                m(name, stat),
                "benchmark duration (guidellm)",
            ));
        }
        if let (Some(p), Some(o), Some(n)) = (
            m("prompt_token_count", &["mean"]),
            m("output_token_count", &["mean"]),
            m("prompt_token_count", &["count"]),
        ) {
            pm += p * n;
            om += o * n;
            nm += n;
        }
    }
    if steps.iter().all(|s| !s.ends_with("(unpinned)")) {
        rows.push(pinned(
            PinId::Load,
            "load",
            steps.join(" → "),
            src("benchmarks[].config.strategy"),
        ));
    } else {
        rows.push(unpinned(
            PinId::Load,
            "load",
            &steps.join(" → "),
            src("strategy"),
        ));
    }
    // Warm-up: configured in the profile (0.8), or in older args.
    let warm_cfg = spec.pointer("/profile/warmup").filter(|w| !w.is_null());
    let warm = match warm_cfg
        .and_then(|w| f(w, &["value"]).map(|x| (x, s(w, &["mode"]).unwrap_or_default())))
    {
        Some((value, mode)) => {
            let unit = if mode.contains("request") {
                "requests"
            } else {
                "s"
            };
            let applied = f(first, &["warmup_duration"]).unwrap_or(0.0);
            let excluded = guidellm_warmup_count(first);
            Some(format!(
                "warm-up configured {} {unit} ({mode}); {excluded} requests started before the benchmark's start_time (warmup_duration {} s) and are left out of its metrics",
                Shortest(value),
                rate_text(applied),
            ))
        }
        None => f(first, &["args", "warmup_number"])
            .map(|w| format!("warm-up {} requests", Shortest(w)))
            .or_else(|| {
                f(first, &["args", "warmup_duration"]).map(|w| format!("warm-up {} s", Shortest(w)))
            }),
    };
    match warm {
        Some(w) => rows.push(pinned(
            PinId::Window,
            "window",
            format!("{w}; measured: the rest"),
            src("config.spec.profile.warmup, benchmarks[0].warmup_duration"),
        )),
        None => rows.push(pinned(
            PinId::Window,
            "window",
            "whole benchmark (no warm-up)".into(),
            src("args"),
        )),
    }
    // Per-request data of the first benchmark (one step).
    let mut requests = None;
    if let (Some(reqs), Some(load)) = (first.get("requests"), loads.first().copied().flatten()) {
        let mut raws = Vec::new();
        // guidellm keeps warm-up requests in the lists, unmarked; its metrics leave out
        // those that started before the benchmark's start_time.
        let begin = f(first, &["start_time"]).and_then(us);
        for (group, ok) in [
            ("successful", true),
            ("errored", false),
            ("incomplete", false),
        ] {
            for r in arr(reqs, &[group]).into_iter().flatten() {
                let t = r.pointer("/info/timings").unwrap_or(&Value::Null);
                let Some(start) = f(t, &["request_start"]).and_then(us) else {
                    continue;
                };
                let at = |k: &str| f(t, &[k]).and_then(us).map(|x| x.saturating_sub(start));
                let ttft = at("first_token_iteration");
                let last = at("last_token_iteration");
                let iters = f(t, &["token_iterations"]).map(|n| n as u32);
                raws.push(RawRequest {
                    t_send_us: start,
                    ttft_us: ttft,
                    last_token: last.zip(iters),
                    e2e_us: at("request_end").unwrap_or(0),
                    prompt_tokens: f(r, &["prompt_tokens"]).map(|x| x as u64),
                    output_tokens: f(r, &["output_tokens"]).map(|x| x as u64),
                    error: (!ok).then(|| {
                        s(r, &["info", "error"])
                            .unwrap_or_else(|| group.to_owned())
                            .chars()
                            .take(300)
                            .collect()
                    }),
                    warmup: begin.is_some_and(|b| start < b),
                    ..RawRequest::default()
                });
            }
        }
        let m = |name: &str, stat: &str| f(first, &["metrics", name, "successful", stat]);
        // guidellm 0.8 counts its warm-up in request_latency but not in TTFT.
        let warm = raws.iter().filter(|r| r.warmup).count();
        let e2e_same =
            m("request_latency", "count").is_some_and(|c| c as usize == raws.len() - warm);
        // Its inter-token latency is weighted by token (count = Σ (output − 1)): the
        // same requests as pinbench's TPOT when that sum is over the measured ones, and
        // the same mean when every request has the same length.
        let gaps_measured: u64 = raws
            .iter()
            .filter(|r| !r.warmup && r.error.is_none())
            .map(|r| r.output_tokens.unwrap_or(1).saturating_sub(1))
            .sum();
        let itl_same = m("inter_token_latency_ms", "count")
            .is_some_and(|c| c as u64 == gaps_measured)
            && raws
                .iter()
                .all(|r| r.output_tokens == raws[0].output_tokens);
        charge(&raws, "guidellm")?;
        requests = requests_of(
            raws,
            load,
            ChunkTimes::FirstAndLast,
            vec![
                (
                    "ttft_mean_ms",
                    "TTFT mean, ms",
                    m("time_to_first_token_ms", "mean"),
                    "first token iteration − request start",
                    true,
                ),
                (
                    "ttft_p50_ms",
                    "TTFT p50, ms",
                    m("time_to_first_token_ms", "median"),
                    "its percentile method",
                    false,
                ),
                (
                    "tpot_mean_ms",
                    "TPOT mean, ms",
                    m("inter_token_latency_ms", "mean"),
                    if itl_same {
                        "inter_token_latency: (last − first token)/(output − 1), weighted by token"
                    } else {
                        "inter_token_latency: (last − first token)/(output − 1), weighted by token, over every request, its warm-up included"
                    },
                    itl_same,
                ),
                (
                    "e2e_mean_ms",
                    "E2E mean, ms",
                    m("request_latency", "mean").map(|x| x * 1000.0),
                    if e2e_same {
                        "request_end − request_start"
                    } else {
                        "request_end − request_start, over every request, its warm-up included (its TTFT leaves the warm-up out)"
                    },
                    e2e_same,
                ),
                (
                    "aggregate_tok_s",
                    "aggregate output tok/s",
                    m("output_tokens_per_second", "mean"),
                    "mean of its output-rate distribution over the benchmark start–end",
                    false,
                ),
            ],
        );
    }
    if let Some(r) = &requests {
        numbers.extend(recomputed_numbers(r));
    }
    let version = s(v, &["metadata", "guidellm_version"]);
    Ok(Imported {
        subject: Subject {
            run: None,
            title: title.into(),
            tool: version.map_or_else(|| "guidellm".into(), |x| format!("guidellm {x}")),
            pins: finish(rows),
            prompt_mean: (nm > 0.0).then(|| pm / nm),
            output_mean: (nm > 0.0).then(|| om / nm),
            numbers,
            integrity: Integrity::Sound("another tool's file: unsigned".into()),
        },
        requests,
    })
}
