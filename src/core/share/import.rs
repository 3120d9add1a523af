//! Result files of other tools, read into a [`Subject`] so they share the viewer and the
//! comparison — with every pin they leave free marked unpinned.
//!
//! Formats (as their documentation describes them):
//! - vLLM `vllm bench serve --save-result`: one flat object (`model_id`, `max_concurrency`,
//!   `request_rate`, `burstiness`, `completed`, `total_input_tokens`, `total_output_tokens`,
//!   `output_throughput`, `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`, … `_tpot_ms`,
//!   `_itl_ms`, `_e2el_ms`).
//! - AIPerf `profile_export_aiperf.json`: one stats block per metric tag (`unit`, `avg`,
//!   `p50`, `p99`, …), top-level or under `records`, plus `input_config`.
//! - guidellm `benchmarks.json`: `benchmarks[]`, each with `metrics.<name>.successful`
//!   (`mean`, `median`, `percentiles.p99`, …) and its profile/strategy and arguments.

use serde_json::Value;

use crate::core::compare::{order, Number, Subject};
use crate::core::pins::PinId;
use crate::core::view::{PinRow, PinStatus};

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    /// Not a format we know.
    #[error("not a pinbench report, vLLM bench result, AIPerf profile export or guidellm benchmarks file")]
    Unknown,
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
    /// NVIDIA AIPerf.
    Aiperf,
    /// guidellm.
    Guidellm,
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
                r.label = crate::core::compare::KEYS
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
    let t = format!("{rate:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Imports a file of a known tool.
pub fn import(title: &str, v: &Value) -> Result<Subject, ImportError> {
    match detect(v).ok_or(ImportError::Unknown)? {
        Tool::Vllm => vllm(title, v),
        Tool::Aiperf => aiperf(title, v),
        Tool::Guidellm => guidellm(title, v),
    }
}

fn vllm(title: &str, v: &Value) -> Result<Subject, ImportError> {
    let src = |field: &str| format!("vLLM result ({field})");
    let completed = f(v, &["completed"]).ok_or(ImportError::Field {
        tool: "vLLM",
        what: "`completed` is missing or not a number".into(),
    })?;
    let mut rows = Vec::new();
    match s(v, &["model_id"]) {
        Some(m) => rows.push(pinned(PinId::Model, "model.id", m, src("model_id"))),
        None => rows.push(unpinned(PinId::Model, "model.id", "", src("model_id"))),
    }
    let rate = v.get("request_rate");
    let rate = rate.and_then(Value::as_f64).or_else(|| {
        rate.and_then(Value::as_str)
            .filter(|s| *s == "inf")
            .map(|_| f64::INFINITY)
    });
    let conc = f(v, &["max_concurrency"]);
    let load = match (rate, conc) {
        (Some(r), Some(c)) if r.is_infinite() => Some(format!("closed loop, c={c}")),
        (Some(r), c) if r.is_finite() => {
            let burst = f(v, &["burstiness"]).unwrap_or(1.0);
            let arrival = if (burst - 1.0).abs() < 1e-9 {
                "Poisson".to_owned()
            } else {
                format!("gamma k={}", rate_text(burst))
            };
            Some(match c {
                Some(c) => format!("open loop, {} req/s {arrival}, cap {c}", rate_text(r)),
                None => format!("open loop, {} req/s {arrival}, no cap", rate_text(r)),
            })
        }
        _ => None,
    };
    match load {
        Some(l) => rows.push(pinned(
            PinId::Load,
            "load",
            l,
            src("request_rate, max_concurrency"),
        )),
        None => rows.push(unpinned(
            PinId::Load,
            "load",
            "every request sent at once, no concurrency cap",
            src("request_rate=inf, max_concurrency=null"),
        )),
    }
    rows.push(unpinned(
        PinId::PromptLength,
        "prompt_len",
        "requested length not recorded",
        src("—"),
    ));
    rows.push(unpinned(
        PinId::OutputLength,
        "output_len",
        "requested length and EOS handling not recorded",
        src("—"),
    ));
    rows.push(pinned(
        PinId::Window,
        "window",
        "whole run incl. ramp-up and tail (no warm-up)".into(),
        "vLLM's definition".into(),
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
    Ok(Subject {
        title: title.into(),
        tool: "vLLM bench serve".into(),
        pins: finish(rows),
        prompt_mean: mean_len("total_input_tokens"),
        output_mean: mean_len("total_output_tokens"),
        numbers,
    })
}

fn aiperf(title: &str, v: &Value) -> Result<Subject, ImportError> {
    let stats = v.get("records").filter(|r| r.is_object()).unwrap_or(v);
    let cfg = v.get("input_config").unwrap_or(&Value::Null);
    let src = |field: &str| format!("AIPerf input_config ({field})");
    let mut rows = Vec::new();
    match s(cfg, &["endpoint", "model_names"]) {
        Some(m) => rows.push(pinned(
            PinId::Model,
            "model.id",
            m,
            src("endpoint.model_names"),
        )),
        None => rows.push(unpinned(
            PinId::Model,
            "model.id",
            "",
            src("endpoint.model_names"),
        )),
    }
    let isl_mean = f(cfg, &["input", "prompt", "input_tokens", "mean"]);
    let isl_std = f(cfg, &["input", "prompt", "input_tokens", "stddev"]).unwrap_or(0.0);
    match isl_mean {
        Some(m) if isl_std == 0.0 => rows.push(pinned(
            PinId::PromptLength,
            "prompt_len",
            format!("{m}"),
            src("input.prompt.input_tokens"),
        )),
        Some(m) => rows.push(pinned(
            PinId::PromptLength,
            "prompt_len",
            format!("normal({m},{isl_std})"),
            src("input.prompt.input_tokens"),
        )),
        None => rows.push(unpinned(PinId::PromptLength, "prompt_len", "", src("—"))),
    }
    let osl = f(cfg, &["input", "prompt", "output_tokens", "mean"]);
    rows.push(unpinned(
        PinId::OutputLength,
        "output_len",
        &osl.map_or_else(
            || "not recorded".to_owned(),
            |o| format!("max_tokens {o}; stopping at EOS not pinned"),
        ),
        src("input.prompt.output_tokens"),
    ));
    let load = if let Some(c) = f(cfg, &["loadgen", "concurrency"]) {
        match f(cfg, &["loadgen", "request_rate"]) {
            Some(r) => Some(format!(
                "open loop, {} req/s Poisson, cap {c}",
                rate_text(r)
            )),
            None => Some(format!("closed loop, c={c}")),
        }
    } else {
        f(cfg, &["loadgen", "request_rate"])
            .map(|r| format!("open loop, {} req/s Poisson, no cap", rate_text(r)))
    };
    match load {
        Some(l) => rows.push(pinned(PinId::Load, "load", l, src("loadgen"))),
        None => rows.push(unpinned(PinId::Load, "load", "", src("loadgen"))),
    }
    let warm = f(cfg, &["loadgen", "warmup_request_count"]).unwrap_or(0.0);
    rows.push(pinned(
        PinId::Window,
        "window",
        format!("warm-up {warm} requests, measured: rest of run, no cool-down"),
        src("loadgen.warmup_request_count"),
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
    Ok(Subject {
        title: title.into(),
        tool: format!(
            "AIPerf (schema {})",
            s(v, &["schema_version"]).unwrap_or_else(|| "?".into())
        ),
        pins: finish(rows),
        prompt_mean: st("input_sequence_length", "avg"),
        output_mean: st("output_sequence_length", "avg"),
        numbers,
    })
}

fn guidellm(title: &str, v: &Value) -> Result<Subject, ImportError> {
    let benches = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .filter(|b| !b.is_empty())
        .ok_or(ImportError::Field {
            tool: "guidellm",
            what: "`benchmarks` is empty".into(),
        })?;
    let first = &benches[0];
    let src = |field: &str| format!("guidellm ({field})");
    let mut rows = Vec::new();
    let model = s(first, &["worker", "backend_model"])
        .or_else(|| s(v, &["args", "model"]))
        .or_else(|| s(first, &["args", "model"]));
    match model {
        Some(m) => rows.push(pinned(
            PinId::Model,
            "model.id",
            m,
            src("worker.backend_model"),
        )),
        None => rows.push(unpinned(PinId::Model, "model.id", "", src("—"))),
    }
    // Synthetic data arguments, e.g. "prompt_tokens=256,output_tokens=128".
    let data = s(first, &["request_loader", "data"])
        .or_else(|| s(v, &["args", "data"]))
        .unwrap_or_default();
    let kv = |name: &str| {
        data.split([',', ' '])
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, x)| x.trim().to_owned())
    };
    match kv("prompt_tokens") {
        Some(p) => rows.push(pinned(PinId::PromptLength, "prompt_len", p, src("data"))),
        None => rows.push(unpinned(PinId::PromptLength, "prompt_len", "", src("data"))),
    }
    rows.push(unpinned(
        PinId::OutputLength,
        "output_len",
        &kv("output_tokens").map_or_else(
            || "not recorded".to_owned(),
            |o| format!("max_tokens {o}; stopping at EOS not pinned"),
        ),
        src("data"),
    ));
    let mut steps = Vec::new();
    let mut numbers = Vec::new();
    let multi = benches.len() > 1;
    let (mut pm, mut om, mut nm) = (0.0, 0.0, 0.0);
    for (i, b) in benches.iter().enumerate() {
        let strat = b
            .get("args")
            .and_then(|a| a.get("strategy"))
            .or_else(|| b.get("strategy"))
            .unwrap_or(&Value::Null);
        let kind = s(strat, &["type_"]).unwrap_or_default();
        let step =
            match kind.as_str() {
                "synchronous" => Some("closed loop, c=1".to_owned()),
                "concurrent" => f(strat, &["streams"]).map(|c| format!("closed loop, c={c}")),
                "constant" => f(strat, &["rate"])
                    .map(|r| format!("open loop, {} req/s constant", rate_text(r))),
                "poisson" => f(strat, &["rate"])
                    .map(|r| format!("open loop, {} req/s Poisson", rate_text(r))),
                _ => None,
            };
        steps.push(step.clone().unwrap_or_else(|| format!("{kind} (unpinned)")));
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
            src("strategy"),
        ));
    } else {
        rows.push(unpinned(
            PinId::Load,
            "load",
            &steps.join(" → "),
            src("strategy"),
        ));
    }
    let warm = f(first, &["args", "warmup_number"])
        .map(|w| format!("warm-up {w} requests"))
        .or_else(|| f(first, &["args", "warmup_duration"]).map(|w| format!("warm-up {w} s")));
    match warm {
        Some(w) => rows.push(pinned(
            PinId::Window,
            "window",
            format!("{w}, measured: rest"),
            src("args"),
        )),
        None => rows.push(pinned(
            PinId::Window,
            "window",
            "whole benchmark (no warm-up)".into(),
            src("args"),
        )),
    }
    Ok(Subject {
        title: title.into(),
        tool: "guidellm".into(),
        pins: finish(rows),
        prompt_mean: (nm > 0.0).then(|| pm / nm),
        output_mean: (nm > 0.0).then(|| om / nm),
        numbers,
    })
}
