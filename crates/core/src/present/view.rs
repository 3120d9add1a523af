//! What the viewer shows of a report, as plain data: the pins as rows with their
//! provenance, the headline of each load step (always with its window), the same run under
//! other tools' metric definitions, and the per-request records as CSV.

use std::fmt::Write as _;

use crate::decimal::Fixed;
use crate::metrics::{self, classify, request_metrics, Phase, StepSummary, Summary};
use crate::pins::{milli, wire_name};
use crate::record::RequestRecord;
use crate::report::Report;

pub use crate::report::measured_ok;
pub use crate::rows::{fmt_ms, fmt_rate, pin_rows, provenance_label, PinRow, PinStatus};

/// Errors counted by kind, as every screen and the command line print them:
/// `"timeout × 2, http 503 × 1"`, or `"none"`.
pub fn errors_text(errors: &std::collections::BTreeMap<String, u32>) -> String {
    if errors.is_empty() {
        return "none".to_owned();
    }
    let mut out = String::new();
    for (k, n) in errors {
        if !out.is_empty() {
            out.push_str(", ");
        }
        let _ = write!(out, "{k} × {n}");
    }
    out
}

/// Live percentiles (µs) in one format: each to 0.1 ms, the unit once (`46.3 / 83.6 / 87.3 ms`).
pub fn fmt_ms_percentiles(v: &[u64]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|&us| Fixed(us as f64 / 1000.0, 1).to_string())
        .collect();
    format!("{} ms", parts.join(" / "))
}

/// An open loop's arrivals in one sentence: offered against achieved rate, how many
/// arrivals the in-flight cap held back, and TTFT from the intended arrival.
pub fn open_loop_text(o: &crate::metrics::OpenLoopFigures) -> String {
    let ttft = o
        .ttft_from_arrival_us
        .map(|d| format!("p50 {} · p99 {}", fmt_ms(d.p50), fmt_ms(d.p99)))
        .unwrap_or_else(|| "—".into());
    format!(
        "Open loop: offered {} req/s · achieved {} req/s · {} of {} arrivals held back by the in-flight cap · TTFT from the intended arrival {}",
        crate::pins::milli(o.offered_rate_milli),
        o.achieved_rate_milli
            .map(crate::pins::milli)
            .unwrap_or_else(|| "—".into()),
        o.held_by_cap,
        o.arrivals,
        ttft,
    )
}

/// One headline figure: the value and the window it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    /// Stable key.
    pub key: &'static str,
    /// What it is (says per-stream or aggregate).
    pub label: &'static str,
    /// The value with its unit.
    pub value: String,
    /// The window it comes from.
    pub window: String,
    /// Whose figure it is: `aggregate` (all streams together), `per-stream` (one stream's
    /// speed), `per-request` (a latency of each request) or `count`.
    pub scope: &'static str,
}

pub use crate::rows::{per_token_note, reasoning_text};

/// The headline figures of one load step.
pub fn headline(s: &StepSummary) -> Vec<Figure> {
    let mut out = Vec::new();
    let n = s.requests.measured;
    let measured_w = format!("measured window, {n} requests");
    // Every per-token figure says how exact its timing is and what reasoning it holds.
    let per_token_w = format!(
        "{measured_w}{}",
        per_token_note(
            s.inexact_timing(),
            s.requests.measured_ok,
            s.reasoning.as_ref()
        )
    );
    // Where the steady window is the whole measured window, the two figures are one.
    let same = matches!((s.windows.steady, s.windows.measured), (Some(a), Some(b)) if a == b);
    if let Some(w) = s.windows.steady {
        out.push(Figure {
            key: "aggregate_steady",
            label: "aggregate output tok/s (all streams)",
            value: fmt_rate(w.aggregate_output_milli),
            window: format!(
                "{}, {} s",
                if same {
                    "steady window = measured window"
                } else {
                    "steady window"
                },
                Fixed((w.end_us - w.start_us) as f64 / 1e6, 2)
            ),
            scope: "aggregate",
        });
    }
    if let Some(w) = s.windows.measured.filter(|_| !same) {
        out.push(Figure {
            key: "aggregate_measured",
            label: "aggregate output tok/s (all streams)",
            value: fmt_rate(w.aggregate_output_milli),
            window: format!(
                "measured window (incl. ramp), {} s",
                Fixed((w.end_us - w.start_us) as f64 / 1e6, 2)
            ),
            scope: "aggregate",
        });
    }
    if let Some(d) = s.decode_speed_milli {
        out.push(Figure {
            key: "per_stream_decode",
            label: "per-stream decode tok/s (p50)",
            value: fmt_rate(d.p50),
            window: per_token_w.clone(),
            scope: "per-stream",
        });
    }
    let reasons = s.reasoning.is_some();
    let ttfa = s.reasoning.as_ref().and_then(|r| r.ttfa_us);
    for (key, label, d, w) in [
        (
            "ttft",
            if reasons {
                "TTFT (first token of any kind, reasoning included) p50 / p99"
            } else {
                "TTFT p50 / p99"
            },
            s.ttft_us,
            &measured_w,
        ),
        (
            "ttfa",
            "time to first answer token p50 / p99",
            ttfa,
            &measured_w,
        ),
        ("tpot", "TPOT p50 / p99", s.tpot_us, &per_token_w),
        ("e2e", "E2E latency p50 / p99", s.e2e_us, &measured_w),
    ] {
        if let Some(d) = d {
            out.push(Figure {
                key,
                label,
                value: format!("{} / {}", fmt_ms(d.p50), fmt_ms(d.p99)),
                window: w.clone(),
                scope: "per-request",
            });
        }
    }
    out.push(Figure {
        key: "concurrency",
        label: "achieved concurrency (mean / max of target)",
        value: format!(
            "{} / {} of {}",
            milli(s.concurrency.achieved_mean_milli),
            s.concurrency.achieved_max,
            s.concurrency.target
        ),
        window: s.concurrency.window.clone(),
        scope: "aggregate",
    });
    if let Some(g) = s.goodput {
        let slo: Vec<String> = [
            ("TTFT", g.slo.ttft_us),
            ("TPOT", g.slo.tpot_us),
            ("E2E", g.slo.e2e_us),
        ]
        .iter()
        .filter_map(|(n, v)| v.map(|v| format!("{n} ≤ {}", fmt_ms(v))))
        .collect();
        let missing = if g.missing_tpot > 0 {
            format!(
                "; {} without a TPOT (one token chunk) fail the TPOT SLO",
                g.missing_tpot
            )
        } else {
            String::new()
        };
        out.push(Figure {
            key: "goodput",
            label: "goodput req/s (met every SLO, aggregate)",
            value: format!("{} ({} of {} met)", fmt_rate(g.rps_milli), g.met, g.judged),
            window: format!("{measured_w}; SLO {}{missing}", slo.join(", ")),
            scope: "aggregate",
        });
    }
    out.push(Figure {
        key: "requests",
        label: "requests ok / measured",
        value: format!("{} / {}", s.requests.measured_ok, n),
        window: measured_w,
        scope: "count",
    });
    out
}

/// One part of a request's time, µs.
type Part = fn(&RequestRecord) -> Option<u64>;

/// TTFT split by where the time went, from Resource Timing (measured, successful
/// requests that have it): `(label, p50 µs, p99 µs, requests)`.
pub fn ttft_split(report: &Report, step: u32) -> Vec<(&'static str, u64, u64, usize)> {
    let recs: Vec<&RequestRecord> = measured_ok(report, step)
        .into_iter()
        .filter(|r| r.wire.is_some() && !r.chunks.is_empty())
        .collect();
    let parts: [(&'static str, Part); 4] = [
        (
            "in the browser before sending (fetch() → requestStart)",
            |r| {
                r.wire
                    .map(|w| w.request_start_us.saturating_sub(r.t_send_us))
            },
        ),
        (
            "on the wire and in the server until headers (requestStart → responseStart)",
            |r| {
                r.wire
                    .map(|w| w.response_start_us.saturating_sub(w.request_start_us))
            },
        ),
        ("headers → first token seen by the page", |r| {
            let w = r.wire?;
            Some(r.chunks.first()?.t_us.saturating_sub(w.response_start_us))
        }),
        ("TTFT (fetch() → first token)", |r| {
            Some(r.chunks.first()?.t_us.saturating_sub(r.t_send_us))
        }),
    ];
    parts
        .iter()
        .filter_map(|(label, f)| {
            let mut v: Vec<u64> = recs.iter().filter_map(|r| f(r)).collect();
            if v.is_empty() {
                return None;
            }
            crate::sort::sort(&mut v);
            let q = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
            Some((*label, q(0.5), q(0.99), v.len()))
        })
        .collect()
}

/// One cell of the metric translator: what a tool calls a figure, how it defines it, and
/// this run's value under that definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    /// Tool.
    pub tool: &'static str,
    /// The tool's metric name.
    pub name: &'static str,
    /// Its definition, in one line.
    pub definition: &'static str,
    /// This run's value under it (`None` when the tool has no such metric or there is
    /// no data).
    pub value: Option<f64>,
}

/// One concept across tools.
#[derive(Clone, Debug, PartialEq)]
pub struct TranslatorRow {
    /// The concept.
    pub concept: &'static str,
    /// Unit of the values.
    pub unit: &'static str,
    /// pinbench first, then vLLM, AIPerf, guidellm, llmperf, Artificial Analysis, MLPerf
    /// (server scenario).
    pub cells: Vec<Translation>,
}

/// The nearest-rank quantile `q` of the values.
fn quantile(v: impl Iterator<Item = f64>, q: f64) -> Option<f64> {
    let mut xs: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    if xs.is_empty() {
        return None;
    }
    crate::sort::sort_by(&mut xs, f64::total_cmp);
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs.get(rank - 1).copied()
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0u64), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The same step under vLLM `bench serve`, AIPerf, guidellm, llmperf, Artificial Analysis
/// and MLPerf (server scenario) definitions,
/// computed from the records (measured window for tools with warm-up exclusion, every
/// completed request of the step for those without).
pub fn translator<'a>(report: &'a Report, figures: &Summary, step: u32) -> Vec<TranslatorRow> {
    // Per-request figures, computed once: (record, TTFT ms, E2E ms).
    type Row<'a> = (&'a RequestRecord, Option<f64>, Option<f64>);
    let rows = |recs: Vec<&'a RequestRecord>| -> Vec<Row<'a>> {
        recs.into_iter()
            .map(|r| {
                let m = request_metrics(r);
                (
                    r,
                    m.ttft_us.map(|t| t as f64 / 1000.0),
                    m.e2e_us.map(|t| t as f64 / 1000.0),
                )
            })
            .collect()
    };
    let measured = rows(measured_ok(report, step));
    let all = rows(
        report
            .body
            .records
            .iter()
            .filter(|r| r.step == step && r.outcome.is_ok())
            .collect(),
    );
    let ttft = |r: &Row| r.1;
    let e2e = |r: &Row| r.2;
    let n_out = |r: &Row| r.0.output_tokens() as f64;
    let tpot_excl_first = |r: &Row| match (r.2, r.1) {
        (Some(e), Some(t)) if n_out(r) > 1.0 => Some((e - t) / (n_out(r) - 1.0)),
        _ => None,
    };
    let gaps = |rs: &[Row]| {
        mean(rs.iter().flat_map(|r| {
            r.0.chunks
                .windows(2)
                .map(|w| (w[1].t_us - w[0].t_us) as f64 / 1000.0)
        }))
    };
    let agg = |rs: &[Row]| {
        let start = rs.iter().map(|r| r.0.t_send_us).min()?;
        let end = rs.iter().map(|r| r.0.t_end_us()).max()?;
        let tokens: f64 = rs.iter().map(n_out).sum();
        (end > start).then(|| tokens / ((end - start) as f64 / 1e6))
    };
    let s = figures.steps.iter().find(|x| x.step == step);
    let pin_tpot = s.and_then(|s| s.tpot_us).map(|d| d.mean as f64 / 1000.0);
    let pin_ttft = s.and_then(|s| s.ttft_us).map(|d| d.mean as f64 / 1000.0);
    let pin_gap = s
        .and_then(|s| s.inter_chunk_us)
        .map(|d| d.mean as f64 / 1000.0);
    let pin_agg = s
        .and_then(|s| s.windows.headline())
        .map(|(w, _)| w.aggregate_output_milli as f64 / 1000.0);
    let pin_user = s
        .and_then(|s| s.decode_speed_milli)
        .map(|d| d.mean as f64 / 1000.0);
    let m = |rs: &[Row], f: &dyn Fn(&Row) -> Option<f64>| mean(rs.iter().filter_map(f));
    let p =
        |rs: &[Row], f: &dyn Fn(&Row) -> Option<f64>, q: f64| quantile(rs.iter().filter_map(f), q);
    // Artificial Analysis' output speed: tokens after the first chunk / (last chunk −
    // first chunk), per request.
    let after_first = |r: &Row| {
        let (first, last) = (r.0.chunks.first()?, r.0.chunks.last()?);
        let tokens = n_out(r) - f64::from(first.tokens);
        (last.t_us > first.t_us && tokens > 0.0)
            .then(|| tokens / ((last.t_us - first.t_us) as f64 / 1e6))
    };
    vec![
        TranslatorRow {
            concept: "time to first token (mean)",
            unit: "ms",
            cells: vec![
                t("pinbench", "ttft_us", "send → first token chunk; measured window", pin_ttft),
                t("vLLM", "mean_ttft_ms", "send → first non-empty chunk; every request, no warm-up", m(&all, &ttft)),
                t("AIPerf", "time_to_first_token", "send → first response with content; profiling phase", m(&measured, &ttft)),
                t("guidellm", "time_to_first_token_ms", "send → first token; per benchmark", m(&measured, &ttft)),
                t("llmperf", "ttft_s", "send → first chunk; every request", m(&all, &ttft)),
                t("Artificial Analysis", "TTFT (median)", "send → first chunk, median of requests (their headline)", p(&measured, &ttft, 0.5)),
                t("MLPerf server", "TTFT p99", "send → first token, 99th percentile: must meet the scenario's limit", p(&measured, &ttft, 0.99)),
            ],
        },
        TranslatorRow {
            concept: "time per output token (mean)",
            unit: "ms",
            cells: vec![
                t("pinbench", "tpot_us", "(last token chunk − first) / (tokens − first chunk's); measured window", pin_tpot),
                t("vLLM", "mean_tpot_ms", "(E2E − TTFT) / (output tokens − 1); every request", m(&all, &tpot_excl_first)),
                t("AIPerf", "inter_token_latency", "(request latency − TTFT) / (output tokens − 1)", m(&measured, &tpot_excl_first)),
                t("guidellm", "inter_token_latency_ms", "(E2E − TTFT) / (output tokens − 1)", m(&measured, &tpot_excl_first)),
                t("llmperf", "inter_token_latency_s", "sum of chunk gaps incl. TTFT / output tokens (includes TTFT)", m(&all, &|r| {
                    let last = r.0.chunks.last()?;
                    (n_out(r) > 0.0).then(|| (last.t_us - r.0.t_send_us) as f64 / 1000.0 / n_out(r))
                })),
                t("Artificial Analysis", "—", "not reported (see output speed)", None),
                t("MLPerf server", "TPOT p99", "(E2E − TTFT) / (output tokens − 1), 99th percentile: must meet the scenario's limit", p(&measured, &tpot_excl_first, 0.99)),
            ],
        },
        TranslatorRow {
            concept: "time per output token incl. first (mean)",
            unit: "ms",
            cells: vec![
                t("pinbench", "—", "not a pinbench metric (mixes prefill into decode)", None),
                t("vLLM", "—", "no such metric", None),
                t("AIPerf", "—", "no such metric", None),
                t("guidellm", "time_per_output_token_ms", "E2E / output tokens (includes TTFT)", m(&measured, &|r| {
                    e2e(r).filter(|_| n_out(r) > 0.0).map(|e| e / n_out(r))
                })),
                t("llmperf", "—", "see inter_token_latency_s", None),
                t("Artificial Analysis", "—", "no such metric", None),
                t("MLPerf server", "—", "no such metric", None),
            ],
        },
        TranslatorRow {
            concept: "gap between chunks (mean)",
            unit: "ms",
            cells: vec![
                t("pinbench", "inter_chunk_us", "every gap between token chunks (tokens per chunk shown beside); measured window", pin_gap),
                t("vLLM", "mean_itl_ms", "every gap between chunks, not divided by tokens per chunk; every request", gaps(&all)),
                t("AIPerf", "inter_chunk_latency", "every gap between responses", gaps(&measured)),
                t("guidellm", "—", "no such metric", None),
                t("llmperf", "—", "no such metric", None),
                t("Artificial Analysis", "—", "no such metric", None),
                t("MLPerf server", "—", "no such metric", None),
            ],
        },
        TranslatorRow {
            concept: "aggregate output throughput",
            unit: "tok/s",
            cells: vec![
                t("pinbench", "aggregate_output_milli", "tokens arriving in the steady window / its length (all streams)", pin_agg),
                t("vLLM", "output_throughput", "output tokens / (first send → last completion), ramp-up and tail included", agg(&all)),
                t("AIPerf", "output_token_throughput", "output tokens / profiling duration", agg(&measured)),
                t("guidellm", "output_tokens_per_second", "output tokens / benchmark duration", agg(&measured)),
                t("llmperf", "results_mean_output_throughput_token_per_s", "output tokens / whole run's wall time", agg(&all)),
                t("Artificial Analysis", "—", "not reported (per-stream figures only)", None),
                t("MLPerf server", "tokens per second", "output tokens / run duration (the scenario's result, valid only when the latency limits are met)", agg(&measured)),
            ],
        },
        TranslatorRow {
            concept: "per-stream output speed (mean)",
            unit: "tok/s",
            cells: vec![
                t("pinbench", "decode_speed_milli", "tokens after the first / decode span, per request", pin_user),
                t("vLLM", "—", "not reported", None),
                t("AIPerf", "output_token_throughput_per_user", "1 / inter_token_latency, per request", m(&measured, &|r| tpot_excl_first(r).filter(|x| *x > 0.0).map(|x| 1000.0 / x))),
                t("guidellm", "—", "not reported per stream", None),
                t("llmperf", "request_output_throughput_token_per_s", "output tokens / E2E (includes TTFT), per request", m(&all, &|r| e2e(r).filter(|e| *e > 0.0).map(|e| n_out(r) / (e / 1000.0)))),
                t("Artificial Analysis", "output speed (median)", "tokens after the first chunk / (last chunk − first chunk), median of requests (their headline)", p(&measured, &after_first, 0.5)),
                t("MLPerf server", "—", "no such metric", None),
            ],
        },
    ]
}

fn t(
    tool: &'static str,
    name: &'static str,
    definition: &'static str,
    value: Option<f64>,
) -> Translation {
    Translation {
        tool,
        name,
        definition,
        value,
    }
}

/// A CSV cell: quoted when needed, and defused against spreadsheet formula injection.
fn csv_cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if s.contains([',', ';', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The CSV header of [`records_csv`].
pub const CSV_HEADER: &str = "index,step,phase,outcome,status,protocol,prompt_tokens_requested,prompt_tokens,cached_tokens,output_tokens_requested,output_tokens,reasoning_tokens,reasoning_shown,token_counts,chunks,t_send_us,ttft_us,ttfa_us,tpot_us,e2e_us,throttle,retry_after_ms,response_id";

/// A report as plain text for a terminal: what ran (model, load, lengths), each step's
/// headline figures with their windows, and the client verdict with its findings.
pub fn report_text(report: &Report, figures: &Summary) -> String {
    let b = &report.body;
    let c = &b.config;
    let mut out = String::new();
    let _ = writeln!(out, "pinbench report, created {}", b.created);
    for row in pin_rows(c) {
        if matches!(
            row.key,
            "endpoint"
                | "model.id"
                | "model.params"
                | "prompt_len"
                | "output_len"
                | "load"
                | "scheduling"
        ) {
            let _ = writeln!(out, "  {:<14} {}", row.label, row.value);
        }
    }
    for s in &figures.steps {
        let _ = writeln!(out, "step {} ({}):", s.step + 1, s.load);
        for f in headline(s) {
            let _ = writeln!(
                out,
                "  {:<34} {:>14}   {} · {}",
                f.label, f.value, f.scope, f.window
            );
        }
    }
    let host = b.client.env.host.map(|h| h.label()).unwrap_or("browser");
    let _ = writeln!(
        out,
        "client verdict ({host}): {}",
        if b.client.invalid { "INVALID" } else { "valid" }
    );
    for f in &b.client.findings {
        let _ = writeln!(out, "  - {f}");
    }
    let server = crate::server::verdict(&b.records, c);
    let lines = server.lines();
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "server verdict: {}",
            if server.flags() {
                "the server shaped this run"
            } else {
                "nothing shaped"
            }
        );
        for l in lines {
            let _ = writeln!(out, "  - {l}");
        }
    }
    out
}

/// Every request of a report as CSV (one row per request, dispatch order).
pub fn records_csv(report: &Report) -> String {
    let mut out = String::with_capacity(report.body.records.len() * 96);
    out.push_str(CSV_HEADER);
    out.push('\n');
    let steps = report.body.config.load.value.steps.len().max(1) as u32;
    for step in 0..steps {
        let mut recs: Vec<&RequestRecord> = report
            .body
            .records
            .iter()
            .filter(|r| r.step == step)
            .collect();
        crate::sort::sort_by_key(&mut recs, |r| r.index);
        let phases = classify(&recs, &report.body.config.window.value);
        for (r, p) in recs.into_iter().zip(phases) {
            let m = request_metrics(r);
            let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
            let phase = match p {
                Phase::Warmup => "warmup",
                Phase::Measured => "measured",
                Phase::Cooldown => "cooldown",
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.index,
                r.step,
                phase,
                csv_cell(&r.outcome.kind()),
                opt(r.status.map(u64::from)),
                csv_cell(r.protocol.as_deref().unwrap_or("")),
                r.prompt_tokens_requested,
                opt(r.usage.map(|u| u.prompt_tokens)),
                opt(r.cached_tokens()),
                r.output_tokens_requested,
                r.output_tokens(),
                opt(r.reasoning.and_then(|x| x.tokens)),
                r.reasoning.map(|x| wire_name(&x.shown)).unwrap_or_default(),
                csv_cell(&wire_name(&r.token_counts)),
                r.chunks.len(),
                r.t_send_us,
                opt(m.ttft_us),
                opt(m.ttfa_us),
                opt(m.tpot_us),
                opt(m.e2e_us),
                csv_cell(r.throttle.as_ref().map_or("", |t| t.signal.as_str())),
                opt(r.throttle.as_ref().and_then(|t| t.retry_after_ms)),
                csv_cell(r.response_id.as_deref().unwrap_or("")),
            );
        }
    }
    out
}

/// Re-exported for views that label windows.
pub use metrics::Windows;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_counted_by_kind_in_one_text() {
        let mut e = std::collections::BTreeMap::new();
        assert_eq!(errors_text(&e), "none");
        e.insert("timeout".to_owned(), 2);
        e.insert("http 503".to_owned(), 1);
        assert_eq!(errors_text(&e), "http 503 × 1, timeout × 2");
    }

    #[test]
    fn live_percentiles_share_one_format() {
        assert_eq!(
            fmt_ms_percentiles(&[46_335, 83_647, 87_300]),
            "46.3 / 83.6 / 87.3 ms"
        );
        assert_eq!(fmt_ms_percentiles(&[1_000]), "1.0 ms");
    }

    #[test]
    fn one_aggregate_figure_when_the_steady_window_is_the_measured_one() {
        let r = crate::report::open(include_str!(
            "../../../../tests/fixtures/report_signed.json"
        ))
        .expect("fixture")
        .report;
        let figures = r.body.figures().expect("figures");
        let s = &figures.steps[0];
        assert_eq!(s.windows.steady, s.windows.measured);
        let keys: Vec<&str> = headline(s).iter().map(|f| f.key).collect();
        assert!(keys.contains(&"aggregate_steady"), "{keys:?}");
        assert!(!keys.contains(&"aggregate_measured"), "{keys:?}");
        let mut t = s.clone();
        if let Some(w) = t.windows.steady.as_mut() {
            w.start_us += 1;
        }
        let keys: Vec<&str> = headline(&t).iter().map(|f| f.key).collect();
        assert!(keys.contains(&"aggregate_steady") && keys.contains(&"aggregate_measured"));
    }

    #[test]
    fn csv_cells_are_quoted_and_defused() {
        let cases = [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("=HYPERLINK(\"x\")", "\"'=HYPERLINK(\"\"x\"\")\""),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM", "'@SUM"),
            ("line\nbreak", "\"line\nbreak\""),
            // Spreadsheets in many locales split on `;`.
            ("a;b", "\"a;b\""),
        ];
        for (input, want) in cases {
            assert_eq!(csv_cell(input), want, "{input:?}");
        }
    }

    #[test]
    fn ttft_split_parts_add_up() {
        let r = crate::report::open(include_str!(
            "../../../../tests/fixtures/report_signed.json"
        ))
        .expect("fixture")
        .report;
        // The fixture has no Resource Timing: no split, rather than a made-up one.
        assert!(ttft_split(&r, 0).is_empty());
        let mut r = r;
        for rec in &mut r.body.records {
            rec.wire = Some(crate::record::WireTiming {
                connect_start_us: rec.t_send_us + 100,
                request_start_us: rec.t_send_us + 100,
                response_start_us: rec.t_send_us + 900,
                response_end_us: 0,
            });
        }
        let s = ttft_split(&r, 0);
        assert_eq!(s.len(), 4);
        assert_eq!((s[0].1, s[1].1), (100, 800));
        assert_eq!(s[0].1 + s[1].1 + s[2].1, s[3].1);
        assert_eq!(s[3].3, 5);
    }

    #[test]
    fn open_loop_sentence_states_offered_and_achieved() {
        let d = crate::metrics::Dist {
            count: 3,
            min: 1,
            mean: 2,
            p50: 2_000,
            p90: 3,
            p95: 3,
            p99: 9_500,
            p999: 3,
            max: 3,
        };
        let o = crate::metrics::OpenLoopFigures {
            offered_rate_milli: 10_000,
            arrival_rate_milli: Some(9_800),
            achieved_rate_milli: Some(4_125),
            arrivals: 40,
            held_by_cap: 31,
            dispatch_delay_us: None,
            ttft_from_arrival_us: Some(d),
            e2e_from_arrival_us: None,
        };
        assert_eq!(open_loop_text(&o), "Open loop: offered 10 req/s · achieved 4.125 req/s · 31 of 40 arrivals held back by the in-flight cap · TTFT from the intended arrival p50 2.00 ms · p99 9.50 ms");
    }

    #[test]
    fn pin_values_show_their_wire_names() {
        use crate::pins::{PhaseMode, Scheduling};
        assert_eq!(wire_name(&PhaseMode::ChunkedPrefill), "chunked_prefill");
        assert_eq!(wire_name(&Scheduling::Continuous), "continuous");
    }
}
