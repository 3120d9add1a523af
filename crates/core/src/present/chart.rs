//! Chart geometry and SVG text, in plain Rust (the split the chartistry crate uses: projection,
//! ticks and shapes here, tested natively; the UI only places the finished SVG).
//!
//! Every string that comes from data goes through [`escape`], so a report's text can never
//! become markup.

use std::fmt::Write as _;

use crate::decimal::{bounded, Fixed, Shortest};
use crate::histogram::Hist;
use crate::metrics::{in_flight_timeline, StepSummary, Summary};
use crate::record::RequestRecord;
use crate::report::Report;

pub use crate::markup::escape;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A polyline through the points.
    Line,
    /// A step line (CDFs, in-flight counts).
    Step,
    /// Vertical bars from 0 (points are bar centres).
    Bars,
    /// Dots joined by a line (sweep curves).
    Dots,
    /// A dashed reference line (a target).
    Reference,
}

/// One data series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points in data units.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub mark: Mark,
}

/// A shaded span of the x axis (a window).
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Label.
    pub label: String,
    /// Start, x units.
    pub x0: f64,
    /// End, x units.
    pub x1: f64,
}

/// A chart: axes, series, shaded bands.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Stable id (`ttft-cdf`, …) for test ids.
    pub id: String,
    /// Title.
    pub title: String,
    /// X axis label (with unit).
    pub x_label: String,
    /// Y axis label (with unit).
    pub y_label: String,
    /// Logarithmic x axis.
    pub x_log: bool,
    /// X values are whole numbers (ticks only on integers).
    pub x_integer: bool,
    /// Y values are whole numbers, e.g. counts (ticks only on integers).
    pub y_integer: bool,
    /// The series.
    pub series: Vec<Series>,
    /// Shaded windows.
    pub bands: Vec<Band>,
}

/// "Nice" tick values covering `[lo, hi]` (about `n` of them): steps of 1, 2 or 5 × 10^k.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo || n == 0 {
        return vec![lo];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut v = start;
    while v <= hi + step * 1e-9 && out.len() < 50 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// Ticks for a log axis inside `[lo, hi]`: decades, plus 2× and 5× when the range spans
/// under three decades, so a range inside one decade (12–90 ms) still has labelled ticks.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi.is_finite() && hi >= lo) {
        return Vec::new();
    }
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let b = b.min(a + 12);
    let mults: &[f64] = if b - a <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let inside: Vec<f64> = (a..=b)
        .flat_map(|e| mults.iter().map(move |m| m * 10f64.powi(e)))
        .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
        .collect();
    if inside.len() >= 2 {
        return inside;
    }
    // Fewer than two nice values inside: label the ends.
    let mut ends = vec![lo];
    ends.extend(inside.into_iter().filter(|v| (v / lo - 1.0).abs() > 0.05));
    if (hi / lo - 1.0).abs() > 0.05 {
        ends.push(hi);
    }
    ends
}

/// Ticks on whole numbers only, covering `[lo, hi]` (steps of 1, 2, 5 × 10^k, at least 1).
pub fn integer_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let t = nice_ticks(lo, hi, n);
    let step = t.windows(2).map(|w| w[1] - w[0]).next().unwrap_or(1.0);
    if step >= 1.0 {
        return t;
    }
    let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
    (a..=b).take(50).map(|v| v as f64).collect()
}

/// Compact number text for ticks.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = Fixed(v, 2).to_string();
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// Plot area inside the SVG.
const W: f64 = 560.0;
const H: f64 = 260.0;
const ML: f64 = 56.0;
const MR: f64 = 12.0;
const MT: f64 = 26.0;
const MB: f64 = 40.0;

struct Proj {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    log: bool,
}

impl Proj {
    fn fx(&self, x: f64) -> f64 {
        let (a, b, v) = if self.log {
            (self.x0.log10(), self.x1.log10(), x.max(self.x0).log10())
        } else {
            (self.x0, self.x1, x)
        };
        ML + (v - a) / (b - a) * (W - ML - MR)
    }
    fn fy(&self, y: f64) -> f64 {
        H - MB - (y - self.y0) / (self.y1 - self.y0) * (H - MT - MB)
    }
}

const COLORS: [&str; 6] = [
    "#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2",
];

/// Renders a chart as a standalone SVG element (`role="img"`, titled).
pub fn render_svg(c: &Chart) -> String {
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
    for &(x, y) in pts {
        if x.is_finite() && y.is_finite() && (!c.x_log || x > 0.0) {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    for b in &c.bands {
        x0 = x0.min(b.x0);
        x1 = x1.max(b.x1);
    }
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" role="img" aria-label="{t}" data-testid="chart-{id}" class="chart"><title>{t}</title>"#,
        Shortest(W),
        Shortest(H),
        t = escape(&c.title),
        id = escape(&c.id)
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="16" class="chart__title" font-size="13" font-weight="600">{}</text>"#,
        Shortest(ML),
        escape(&c.title)
    );
    if !x0.is_finite() || !x1.is_finite() {
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" font-size="12">no data</text></svg>"#,
            Shortest(W / 2.0 - 20.0),
            Shortest(H / 2.0)
        );
        return s;
    }
    if c.x_integer && !c.x_log {
        // Whole-number bars sit on their ticks, half a step from either edge.
        x0 -= 0.5;
        x1 += 0.5;
    } else if x1 <= x0 {
        x1 = x0 + if c.x_log { x0.max(1.0) } else { 1.0 };
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    let yt = if c.y_integer {
        integer_ticks(0.0, y1.max(1.0), 4)
    } else {
        nice_ticks(0.0, y1, 4)
    };
    let y1 = yt.last().copied().filter(|v| *v >= y1).unwrap_or(y1);
    let p = Proj {
        x0,
        x1,
        y0: 0.0,
        y1,
        log: c.x_log,
    };
    for b in &c.bands {
        let (a, z) = (p.fx(b.x0), p.fx(b.x1));
        // The window the numbers come from is tinted; excluded windows are grey.
        let counted = b.label.contains("measured") || b.label.contains("steady");
        let (fill, op) = if counted {
            ("#2563eb", "0.10")
        } else {
            ("#94a3b8", "0.22")
        };
        let _ = write!(
            s,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" fill-opacity="{op}"><title>{l}</title></rect><text x="{}" y="{}" font-size="10" fill="currentColor">{l}</text>"##,
            Fixed(a, 1),
            Shortest(MT),
            Fixed((z - a).max(0.5), 1),
            Fixed(H - MT - MB, 1),
            Fixed(a + 2.0, 1),
            Fixed(MT + 10.0, 1),
            l = escape(&b.label)
        );
    }
    // Axes and ticks.
    let _ = write!(
        s,
        r##"<path d="M{} {}V{}H{}" fill="none" stroke="#64748b"/>"##,
        Shortest(ML),
        Shortest(MT),
        Shortest(H - MB),
        Shortest(W - MR)
    );
    for v in &yt {
        let y = p.fy(*v);
        let _ = write!(
            s,
            r##"<path d="M{} {}h-4" stroke="#64748b"/><text x="{}" y="{}" font-size="10" text-anchor="end">{}</text>"##,
            Shortest(ML),
            Fixed(y, 1),
            Shortest(ML - 6.0),
            Fixed(y + 3.0, 1),
            tick_label(*v)
        );
    }
    let xt = if c.x_log {
        log_ticks(x0, x1)
    } else if c.x_integer {
        integer_ticks(x0, x1, 6)
    } else {
        nice_ticks(x0, x1, 6)
    };
    for v in xt.into_iter().filter(|v| *v >= x0 && *v <= x1) {
        let x = p.fx(v);
        let _ = write!(
            s,
            r##"<path d="M{x} {b}v4" stroke="#64748b"/><text x="{x}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
            Shortest(H - MB + 15.0),
            tick_label(v),
            x = Fixed(x, 1),
            b = Shortest(H - MB)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text><text x="12" y="{}" font-size="11" text-anchor="middle" transform="rotate(-90 12 {})">{}</text>"#,
        Shortest((ML + W - MR) / 2.0),
        Shortest(H - 6.0),
        escape(&c.x_label),
        Shortest((MT + H - MB) / 2.0),
        Shortest((MT + H - MB) / 2.0),
        escape(&c.y_label)
    );
    for (i, ser) in c.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let ok: Vec<(f64, f64)> = ser
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!c.x_log || *x > 0.0))
            .collect();
        match ser.mark {
            Mark::Bars => {
                let bw = bounded((W - ML - MR) / ok.len().max(1) as f64 * 0.8, 1.0, 24.0);
                for (x, y) in &ok {
                    let (px, py) = (p.fx(*x), p.fy(*y));
                    let _ = write!(
                        s,
                        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{color}"><title>{}</title></rect>"#,
                        Fixed(px - bw / 2.0, 1),
                        Fixed(py, 1),
                        Fixed(bw, 1),
                        Fixed((H - MB - py).max(0.0), 1),
                        point_tip(c, *x, *y)
                    );
                }
            }
            mark => {
                let mut d = String::new();
                let mut last_y = None;
                for (k, (x, y)) in ok.iter().enumerate() {
                    let (px, py) = (Fixed(p.fx(*x), 1), Fixed(p.fy(*y), 1));
                    if k == 0 {
                        let _ = write!(d, "M{px} {py}");
                    } else if mark == Mark::Step {
                        let _ = write!(d, "H{px}V{py}");
                    } else {
                        let _ = write!(d, "L{px} {py}");
                    }
                    last_y = Some(py);
                }
                let _ = last_y;
                let dash = if mark == Mark::Reference {
                    r#" stroke-dasharray="5 4""#
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>"#
                );
                // Dots always; a short line gets hover targets with its values.
                if mark == Mark::Dots || (mark == Mark::Line && ok.len() <= 120) {
                    let r = if mark == Mark::Dots { 3.0 } else { 2.0 };
                    for (x, y) in &ok {
                        let _ = write!(
                            s,
                            r#"<circle cx="{}" cy="{}" r="{}" fill="{color}"><title>{}</title></circle>"#,
                            Fixed(p.fx(*x), 1),
                            Fixed(p.fy(*y), 1),
                            Shortest(r),
                            point_tip(c, *x, *y)
                        );
                    }
                }
            }
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" font-size="10" fill="{color}" text-anchor="end">{}</text>"#,
            Shortest(W - MR),
            Shortest(MT + 12.0 * (i as f64 + 1.0)),
            escape(&ser.name)
        );
    }
    s.push_str("</svg>");
    s
}

/// A point's tooltip: both values with their axis labels.
fn point_tip(c: &Chart, x: f64, y: f64) -> String {
    escape(&format!(
        "{}: {} · {}: {}",
        c.x_label,
        tick_label(x),
        c.y_label,
        tick_label(y)
    ))
}

/// The CDF of an encoded HDR histogram, values in ms (at most `max_points` points).
pub fn cdf_of_histogram(encoded: &str, max_points: usize) -> Vec<(f64, f64)> {
    let Ok(h) = Hist::decode(encoded) else {
        return Vec::new();
    };
    let total = h.count() as f64;
    if total == 0.0 {
        return Vec::new();
    }
    let buckets: Vec<(u64, u64)> = h.buckets().collect();
    let stride = buckets.len().div_ceil(max_points.max(1)).max(1);
    let mut cum = 0u64;
    let mut out = Vec::new();
    for (i, (v, c)) in buckets.iter().enumerate() {
        cum += c;
        if i % stride == 0 || i + 1 == buckets.len() {
            out.push((*v as f64 / 1000.0, cum as f64 / total));
        }
    }
    out
}

/// Log-spaced bins of an encoded HDR histogram, values in ms: (bin centre, count).
pub fn log_bins_of_histogram(encoded: &str, bins: usize) -> Vec<(f64, f64)> {
    let Ok(h) = Hist::decode(encoded) else {
        return Vec::new();
    };
    let buckets: Vec<(f64, f64)> = h
        .buckets()
        .filter(|(v, _)| *v > 0)
        .map(|(v, c)| (v as f64 / 1000.0, c as f64))
        .collect();
    let (Some(lo), Some(hi)) = (
        buckets.iter().map(|b| b.0).reduce(f64::min),
        buckets.iter().map(|b| b.0).reduce(f64::max),
    ) else {
        return Vec::new();
    };
    let (a, b) = (lo.log10(), (hi * 1.0001).log10().max(lo.log10() + 1e-6));
    let width = (b - a) / bins as f64;
    let mut counts = vec![0f64; bins];
    for (v, c) in buckets {
        let i = (((v.log10() - a) / width) as usize).min(bins - 1);
        counts[i] += c;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            (
                (std::f64::consts::LN_10 * (a + (i as f64 + 0.5) * width)).exp(),
                c,
            )
        })
        .collect()
}

/// The achieved in-flight count as at most `bins` steps: the largest count in each bin
/// (a 10,000-request run has 40,000 changes, more than a chart can show).
pub fn downsample_max(tl: &[(u64, u32, u32)], t0: u64, end: u64, bins: usize) -> Vec<(f64, f64)> {
    let span = end.saturating_sub(t0).max(1) as f64;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(bins + 1);
    let mut current: Option<(usize, u32)> = None;
    let secs = |us: u64| us.saturating_sub(t0) as f64 / 1e6;
    for &(t, _, a) in tl {
        let b = ((t.saturating_sub(t0)) as f64 / span * bins as f64) as usize;
        match current {
            Some((cb, m)) if cb == b => current = Some((cb, m.max(a))),
            Some((cb, m)) => {
                out.push((
                    secs(t0) + cb as f64 * span / bins as f64 / 1e6,
                    f64::from(m),
                ));
                current = Some((b, a));
            }
            None => current = Some((b, a)),
        }
    }
    if let Some((cb, m)) = current {
        out.push((
            secs(t0) + cb as f64 * span / bins as f64 / 1e6,
            f64::from(m),
        ));
    }
    out
}

/// Every chart of one load step of a report. Distributions come from the step's HDR
/// histograms (which recomputation checks against the records); time series from the
/// records.
pub fn report_charts(report: &Report, figures: &Summary, step: u32) -> Vec<Chart> {
    let b = &report.body;
    let Some(s) = figures.steps.iter().find(|s| s.step == step) else {
        return Vec::new();
    };
    let step_recs: Vec<&RequestRecord> = b.records.iter().filter(|r| r.step == step).collect();
    let mut charts = step_charts(s, &step_recs);
    charts.extend(arrival_chart(&step_recs));
    charts.extend(ttft_by_prompt_chart(&crate::report::measured_ok(
        report, step,
    )));
    if figures.steps.len() > 1 {
        charts.push(sweep_chart(figures));
    }
    charts
}

/// The charts of one step from its summary and its records (a report's step, or the
/// requests of another tool's file recomputed by pinbench).
pub fn step_charts(s: &StepSummary, step_recs: &[&RequestRecord]) -> Vec<Chart> {
    let t0 = step_recs.iter().map(|r| r.t_send_us).min().unwrap_or(0);
    let secs = |us: u64| us.saturating_sub(t0) as f64 / 1e6;
    let mut charts = Vec::new();
    let h = &s.histograms;
    for (name, enc) in [
        ("TTFT", &h.ttft_us),
        ("TPOT", &h.tpot_us),
        ("E2E", &h.e2e_us),
    ] {
        charts.push(Chart {
            id: format!("{}-cdf", name.to_ascii_lowercase()),
            title: format!("{name} distribution (CDF, measured window)"),
            x_label: format!("{name}, ms (log)"),
            y_label: "fraction of requests".into(),
            x_log: true,
            x_integer: false,
            y_integer: false,
            series: vec![Series {
                name: name.into(),
                points: cdf_of_histogram(enc, 400),
                mark: Mark::Step,
            }],
            bands: vec![],
        });
    }
    charts.push(Chart {
        id: "inter-chunk".into(),
        title: "Gap between token chunks (measured window)".into(),
        x_label: "gap, ms (log)".into(),
        y_label: "chunks".into(),
        x_log: true,
        x_integer: false,
        y_integer: true,
        series: vec![Series {
            name: "inter-chunk gap".into(),
            points: log_bins_of_histogram(&h.inter_chunk_us, 40),
            mark: Mark::Bars,
        }],
        bands: vec![],
    });
    charts.push(Chart {
        id: "tokens-per-chunk".into(),
        title: "Tokens per chunk (measured window)".into(),
        x_label: "tokens in one chunk".into(),
        y_label: "chunks".into(),
        x_log: false,
        x_integer: true,
        y_integer: true,
        series: vec![Series {
            name: "chunks".into(),
            points: s
                .tokens_per_chunk
                .iter()
                .map(|(k, v)| (f64::from(*k), *v as f64))
                .collect(),
            mark: Mark::Bars,
        }],
        bands: vec![],
    });
    // Throughput and in-flight over time, with the windows shaded.
    let end = step_recs.iter().map(|r| r.t_end_us()).max().unwrap_or(t0);
    let span = end.saturating_sub(t0).max(1);
    let nbins = 60u64;
    let bin = span.div_ceil(nbins).max(1);
    let mut tok = vec![0u64; nbins as usize + 1];
    for r in step_recs {
        for c in &r.chunks {
            let i = (c.t_us.saturating_sub(t0) / bin) as usize;
            if let Some(x) = tok.get_mut(i) {
                *x += u64::from(c.tokens);
            }
        }
    }
    let through: Vec<(f64, f64)> = tok
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                (i as f64 + 0.5) * bin as f64 / 1e6,
                *n as f64 / (bin as f64 / 1e6),
            )
        })
        .collect();
    let mut bands = Vec::new();
    if let Some(w) = s.windows.measured.filter(|w| w.start_us > t0) {
        bands.push(Band {
            label: "warm-up".into(),
            x0: 0.0,
            x1: secs(w.start_us),
        });
    }
    if let Some(w) = s.windows.steady {
        bands.push(Band {
            label: "steady".into(),
            x0: secs(w.start_us),
            x1: secs(w.end_us),
        });
    }
    let tl = in_flight_timeline(step_recs);
    let [through_chart, in_flight] = time_charts(
        ["throughput-time", "in-flight-time"],
        [
            "Aggregate output tok/s over time (all streams)",
            "Requests in flight over time",
        ],
        "time since first send, s",
        through,
        (
            "achieved (on the wire, max per bin)",
            downsample_max(&tl, t0, end, 600),
        ),
        (s.concurrency.target, secs(end)),
        bands,
    );
    charts.push(through_chart);
    charts.push(in_flight);
    charts.push(Chart {
        id: "decode-slowdown".into(),
        title: "Decode slowdown by output position (mean TPOT)".into(),
        x_label: "output token position".into(),
        y_label: "ms per token".into(),
        x_log: false,
        x_integer: false,
        y_integer: false,
        series: vec![Series {
            name: "mean TPOT".into(),
            points: s
                .decode_slowdown
                .iter()
                .filter_map(|k| {
                    let mid =
                        k.to.map_or(k.from as f64 * 1.5, |to| (k.from + to) as f64 / 2.0);
                    k.mean_tpot_us.map(|t| (mid, t as f64 / 1000.0))
                })
                .collect(),
            mark: Mark::Dots,
        }],
        bands: vec![],
    });
    charts
}

/// An open loop's or a replay's arrivals: requests due (their intended send times: the
/// arrival process, or the trace's rows scaled) and requests sent, cumulative, over time
/// since the first was due. Where the sent curve lags the offered one, the client (or the
/// in-flight cap) sent late; the gap is recorded, not hidden. `None` for a closed loop.
pub fn arrival_chart(step_recs: &[&RequestRecord]) -> Option<Chart> {
    let mut due: Vec<u64> = step_recs.iter().filter_map(|r| r.t_intended_us).collect();
    if due.len() < 2 {
        return None;
    }
    let mut sent: Vec<u64> = step_recs
        .iter()
        .filter(|r| r.t_intended_us.is_some())
        .map(|r| r.t_send_us)
        .collect();
    crate::sort::sort_by_key(&mut due, |t| *t);
    crate::sort::sort_by_key(&mut sent, |t| *t);
    let t0 = due[0].min(sent[0]);
    // At most 600 steps per curve: every k-th arrival, and the last.
    let curve = |ts: &[u64]| -> Vec<(f64, f64)> {
        let k = ts.len().div_ceil(600).max(1);
        let mut pts: Vec<(f64, f64)> = ts
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % k == 0 || i + 1 == ts.len())
            .map(|(i, t)| (t.saturating_sub(t0) as f64 / 1e6, (i + 1) as f64))
            .collect();
        pts.insert(0, (0.0, 0.0));
        pts
    };
    Some(Chart {
        id: "arrivals".into(),
        title: "Arrivals: offered (due) and achieved (sent), cumulative".into(),
        x_label: "time since the first was due, s".into(),
        y_label: "requests".into(),
        x_log: false,
        x_integer: false,
        y_integer: true,
        series: vec![
            Series {
                name: "offered: due (intended send time)".into(),
                points: curve(&due),
                mark: Mark::Step,
            },
            Series {
                name: "achieved: sent".into(),
                points: curve(&sent),
                mark: Mark::Step,
            },
        ],
        bands: vec![],
    })
}

/// TTFT against prompt length, from the measured window's answered requests: sorted by
/// prompt length (the server's count, else the length asked for) and cut into up to ten
/// groups of equal count (at least five requests each), each drawn at its median prompt
/// length with its exact TTFT p50 and p99. `None` when the prompts are all one length.
pub fn ttft_by_prompt_chart(measured: &[&RequestRecord]) -> Option<Chart> {
    let mut pts: Vec<(u64, u64)> = measured
        .iter()
        .filter_map(|r| {
            let ttft = crate::metrics::request_metrics(r).ttft_us?;
            let prompt = r
                .usage
                .map_or(u64::from(r.prompt_tokens_requested), |u| u.prompt_tokens);
            Some((prompt, ttft))
        })
        .collect();
    crate::sort::sort_by_key(&mut pts, |p| p.0);
    let (lo, hi) = (pts.first()?.0, pts.last()?.0);
    if lo == hi || pts.len() < 10 {
        return None;
    }
    let log = lo > 0 && hi >= lo.saturating_mul(20);
    let groups = (pts.len() / 5).clamp(2, 10);
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for g in 0..groups {
        let part = &pts[g * pts.len() / groups..(g + 1) * pts.len() / groups];
        let x = part[part.len() / 2].0 as f64;
        let mut t: Vec<u64> = part.iter().map(|p| p.1).collect();
        crate::sort::sort_by_key(&mut t, |v| *v);
        // Nearest rank.
        let q = |f: f64| t[((f * t.len() as f64).ceil() as usize).clamp(1, t.len()) - 1];
        p50.push((x, q(0.5) as f64 / 1000.0));
        p99.push((x, q(0.99) as f64 / 1000.0));
    }
    Some(Chart {
        id: "ttft-by-prompt".into(),
        title: "TTFT by prompt length (measured window)".into(),
        x_label: if log {
            "prompt tokens (server's count, log)".into()
        } else {
            "prompt tokens (server's count)".into()
        },
        y_label: "TTFT (ms)".into(),
        x_log: log,
        x_integer: false,
        y_integer: false,
        series: vec![
            Series {
                name: format!("p50 of {groups} equal-count groups"),
                points: p50,
                mark: Mark::Dots,
            },
            Series {
                name: "p99".into(),
                points: p99,
                mark: Mark::Dots,
            },
        ],
        bands: vec![],
    })
}

/// Runs of the same pins over time (e.g. `pinbench watch`'s reports): each headline
/// figure — TTFT and TPOT p50 and p99, aggregate output tok/s — against when its run
/// started, runs the client judged INVALID drawn apart. Empty unless at least two
/// pinbench runs with start times are given (the caller checks that their pins match).
pub fn over_time_charts(subjects: &[crate::compare::Subject]) -> Vec<Chart> {
    let mut runs: Vec<(u64, bool, &crate::compare::Subject)> = subjects
        .iter()
        .filter_map(|s| {
            let r = s.run.as_ref()?;
            Some((crate::trace::datetime_us(&r.created)?, r.invalid, s))
        })
        .collect();
    if runs.len() < 2 || runs.len() != subjects.len() {
        return Vec::new();
    }
    crate::sort::sort_by_key(&mut runs, |r| r.0);
    let t0 = runs[0].0;
    let span_s = runs[runs.len() - 1].0.saturating_sub(t0) / 1_000_000;
    let (unit, div) = if span_s >= 7200 {
        ("h", 3.6e9)
    } else if span_s >= 120 {
        ("min", 6e7)
    } else {
        ("s", 1e6)
    };
    let chart = |id: &str, title: &str, y: &str, keys: &[(&str, &str)]| {
        let mut series = Vec::new();
        for &(key, name) in keys {
            for invalid in [false, true] {
                let points: Vec<(f64, f64)> = runs
                    .iter()
                    .filter(|r| r.1 == invalid)
                    .filter_map(|(t, _, s)| {
                        let n = s.numbers.iter().find(|n| n.key == key)?;
                        Some((t.saturating_sub(t0) as f64 / div, n.value))
                    })
                    .collect();
                if !points.is_empty() {
                    series.push(Series {
                        name: if invalid {
                            format!("{name}, runs judged INVALID")
                        } else {
                            name.to_owned()
                        },
                        points,
                        mark: Mark::Dots,
                    });
                }
            }
        }
        Chart {
            id: id.into(),
            title: title.into(),
            x_label: format!("time since the first run, {unit}"),
            y_label: y.into(),
            x_log: false,
            x_integer: false,
            y_integer: false,
            series,
            bands: vec![],
        }
    };
    vec![
        chart(
            "ttft-over-time",
            "TTFT over time (each run's measured window)",
            "TTFT (ms)",
            &[("ttft_p50_ms", "p50"), ("ttft_p99_ms", "p99")],
        ),
        chart(
            "tpot-over-time",
            "TPOT over time (each run's measured window)",
            "TPOT (ms)",
            &[("tpot_p50_ms", "p50"), ("tpot_p99_ms", "p99")],
        ),
        chart(
            "aggregate-over-time",
            "Aggregate output tok/s over time (each run's headline window)",
            "tok/s",
            &[("aggregate_tok_s", "aggregate output tok/s")],
        ),
    ]
    .into_iter()
    .filter(|c| !c.series.is_empty())
    .collect()
}

/// The two time charts of a run (the report's and the live view's): aggregate output
/// tok/s, and requests in flight against the target (dashed), with the windows shaded.
/// `in_flight` is (series name, points); `target` is (target, end of the x axis, s).
pub fn time_charts(
    ids: [&str; 2],
    titles: [&str; 2],
    x_label: &str,
    throughput: Vec<(f64, f64)>,
    in_flight: (&str, Vec<(f64, f64)>),
    target: (u32, f64),
    bands: Vec<Band>,
) -> [Chart; 2] {
    let t = f64::from(target.0);
    [
        Chart {
            id: ids[0].into(),
            title: titles[0].into(),
            x_label: x_label.into(),
            y_label: "tok/s".into(),
            x_log: false,
            x_integer: false,
            y_integer: false,
            series: vec![Series {
                name: "aggregate tok/s".into(),
                points: throughput,
                mark: Mark::Line,
            }],
            bands: bands.clone(),
        },
        Chart {
            id: ids[1].into(),
            title: titles[1].into(),
            x_label: x_label.into(),
            y_label: "in flight".into(),
            x_log: false,
            x_integer: false,
            y_integer: true,
            series: vec![
                Series {
                    name: in_flight.0.into(),
                    points: in_flight.1,
                    mark: Mark::Step,
                },
                Series {
                    name: "target".into(),
                    points: vec![(0.0, t), (target.1, t)],
                    mark: Mark::Reference,
                },
            ],
            bands,
        },
    ]
}

/// A multi-turn step's charts by turn (from [`crate::turns::by_turn`]): TTFT p50 and p99,
/// and the share of each turn's prompt the server served from its cache.
pub fn turn_charts(rows: &[crate::turns::TurnRow]) -> Vec<Chart> {
    let turn = |r: &crate::turns::TurnRow| f64::from(r.turn + 1);
    let ttft = |q: fn((u64, u64)) -> u64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| Some((turn(r), q(r.ttft_us?) as f64 / 1000.0)))
            .collect()
    };
    let cached: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((turn(r), r.cached_permille? as f64 / 10.0)))
        .collect();
    let mut out = vec![Chart {
        id: "ttft-by-turn".into(),
        title: "TTFT by turn of the conversation".into(),
        x_label: "turn".into(),
        y_label: "TTFT (ms)".into(),
        x_log: false,
        x_integer: true,
        y_integer: false,
        series: vec![
            Series {
                name: "p50".into(),
                points: ttft(|q| q.0),
                mark: Mark::Dots,
            },
            Series {
                name: "p99".into(),
                points: ttft(|q| q.1),
                mark: Mark::Dots,
            },
        ],
        bands: vec![],
    }];
    if !cached.is_empty() {
        out.push(Chart {
            id: "cached-by-turn".into(),
            title: "Prompt served from the server's cache, by turn".into(),
            x_label: "turn".into(),
            y_label: "cached share of the prompt (%)".into(),
            x_log: false,
            x_integer: true,
            y_integer: false,
            series: vec![Series {
                name: "cached tokens ÷ prompt tokens (server's counts)".into(),
                points: cached,
                mark: Mark::Dots,
            }],
            bands: vec![],
        });
    }
    out
}

/// The sweep curve: per-stream decode tok/s (p50) against aggregate tok/s, one point per
/// step (the throughput-vs-interactivity frontier).
pub fn sweep_chart(figures: &Summary) -> Chart {
    let points = figures
        .steps
        .iter()
        .filter_map(|s| {
            let (agg, _) = s.windows.headline()?;
            let per = s.decode_speed_milli?;
            Some((
                agg.aggregate_output_milli as f64 / 1000.0,
                per.p50 as f64 / 1000.0,
            ))
        })
        .collect();
    Chart {
        id: "sweep".into(),
        title: "Sweep: per-stream vs aggregate tok/s".into(),
        x_label: "aggregate output tok/s (all streams, steady window)".into(),
        y_label: "per-stream decode tok/s (p50)".into(),
        x_log: false,
        x_integer: false,
        y_integer: false,
        series: vec![Series {
            name: "one point per step".into(),
            points,
            mark: Mark::Dots,
        }],
        bands: vec![],
    }
}

/// The sweep's frontier with a claim placed on it: a per-stream tok/s claim as a
/// horizontal line, an aggregate one as a vertical line (both: where they cross), so the
/// frontier shows whether any step reached it.
pub fn frontier_with_claim(
    figures: &Summary,
    (per_stream, aggregate): (Option<f64>, Option<f64>),
) -> Chart {
    let mut c = sweep_chart(figures);
    c.id = "frontier-claim".into();
    c.title = "Frontier: per-stream vs aggregate tok/s, with the claim".into();
    let pts = c.series.first().map_or(&[][..], |s| &s.points[..]);
    let x_max = pts
        .iter()
        .map(|p| p.0)
        .fold(aggregate.unwrap_or(0.0), f64::max)
        * 1.1;
    let y_max = pts
        .iter()
        .map(|p| p.1)
        .fold(per_stream.unwrap_or(0.0), f64::max)
        * 1.1;
    if let Some(y) = per_stream {
        c.series.push(Series {
            name: format!("claim: {} tok/s per stream", crate::decimal::fixed(y, 0)),
            points: vec![(0.0, y), (x_max, y)],
            mark: Mark::Reference,
        });
    }
    if let Some(x) = aggregate {
        c.series.push(Series {
            name: format!("claim: {} tok/s aggregate", crate::decimal::fixed(x, 0)),
            points: vec![(x, 0.0), (x, y_max)],
            mark: Mark::Reference,
        });
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answered request sent at `send_us` (due at `due_us`) with `prompt` tokens by the
    /// server's count and its first token `ttft_us` after the send.
    fn rec(send_us: u64, due_us: Option<u64>, prompt: u64, ttft_us: u64) -> RequestRecord {
        use crate::record::{RequestTimeline, StreamEnd};
        let mut t =
            RequestTimeline::new(0, 0, crate::dialect::Dialect::Completions, 32, 2, send_us);
        t.on_headers(send_us + 1, 200, Some("text/event-stream"));
        let usage = serde_json::json!({"prompt_tokens": prompt, "completion_tokens": 1});
        let body = format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\" a\"}}]}}\n\ndata: {{\"choices\":[],\"usage\":{usage}}}\n\ndata: [DONE]\n\n"
        );
        t.on_bytes(send_us + ttft_us, body.as_bytes());
        let mut r = t.finish(send_us + ttft_us + 10, StreamEnd::Eof);
        r.t_intended_us = due_us;
        r
    }

    #[test]
    fn arrivals_draw_what_was_due_beside_what_was_sent() {
        // Ten due 100 ms apart; the last four sent 250 ms late (held back).
        let recs: Vec<RequestRecord> = (0..10u64)
            .map(|i| {
                let due = 1_000_000 + i * 100_000;
                rec(due + if i >= 6 { 250_000 } else { 0 }, Some(due), 10, 1000)
            })
            .collect();
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let c = arrival_chart(&refs).expect("an open loop");
        let (due, sent) = (&c.series[0].points, &c.series[1].points);
        assert_eq!(due.last(), Some(&(0.9, 10.0)));
        assert_eq!(sent.last(), Some(&(1.15, 10.0)));
        assert_eq!(due[7], (0.6, 7.0));
        assert_eq!(sent[7], (0.85, 7.0), "the seventh left 250 ms late");
        // A closed loop has no due times: no chart.
        let closed: Vec<RequestRecord> = (0..10).map(|i| rec(i * 1000, None, 10, 1000)).collect();
        assert!(arrival_chart(&closed.iter().collect::<Vec<_>>()).is_none());
        // A long run is drawn with at most 601 points per curve, ending at its count.
        let many: Vec<RequestRecord> = (0..5000u64)
            .map(|i| rec(i * 1000, Some(i * 1000), 10, 100))
            .collect();
        let c = arrival_chart(&many.iter().collect::<Vec<_>>()).expect("chart");
        assert!(c.series.iter().all(|s| s.points.len() <= 601));
        assert_eq!(c.series[0].points.last().map(|p| p.1), Some(5000.0));
    }

    #[test]
    fn ttft_by_prompt_length_is_exact_per_equal_count_group() {
        // Prompts of 100..=5000 tokens (50 requests), TTFT 10 µs per prompt token.
        let recs: Vec<RequestRecord> = (1..=50u64)
            .map(|i| rec(i * 1000, None, i * 100, i * 1000))
            .collect();
        let refs: Vec<&RequestRecord> = recs.iter().rev().collect();
        let c = ttft_by_prompt_chart(&refs).expect("lengths vary");
        assert!(c.x_log, "100 to 5000 tokens");
        let (p50, p99) = (&c.series[0].points, &c.series[1].points);
        assert_eq!(p50.len(), 10, "ten groups of five");
        // Group g holds prompts 500g+100 … 500g+500: median 500g+300; p50 its third
        // TTFT (nearest rank), p99 its fifth.
        for (g, (a, b)) in p50.iter().zip(p99).enumerate() {
            let g = g as f64;
            assert_eq!(*a, (500.0 * g + 300.0, (500.0 * g + 300.0) / 100.0));
            assert_eq!(*b, (500.0 * g + 300.0, (500.0 * g + 500.0) / 100.0));
        }
        // One length, or too few requests: nothing to draw.
        let same: Vec<RequestRecord> = (1..=50u64).map(|i| rec(i, None, 64, i)).collect();
        assert!(ttft_by_prompt_chart(&same.iter().collect::<Vec<_>>()).is_none());
        assert!(ttft_by_prompt_chart(&refs[..9]).is_none());
    }

    #[test]
    fn nice_ticks_cover_the_range_with_round_steps() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ticks(0.0, 1.0, 4), vec![0.0, 0.5, 1.0]);
        let t = nice_ticks(3.0, 1234.0, 5);
        assert!(t.first().copied().unwrap_or(0.0) >= 3.0);
        assert_eq!(t, vec![500.0, 1000.0]);
    }

    #[test]
    fn histogram_cdf_ends_at_one_and_bins_conserve_counts() {
        let mut h = Hist::new();
        for i in 1..=500u64 {
            h.record(i * 370);
        }
        let enc = h.encode().expect("encodes");
        let c = cdf_of_histogram(&enc, 100);
        assert_eq!(c.last().map(|p| p.1), Some(1.0));
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert!(c.len() <= 101);
        let bins = log_bins_of_histogram(&enc, 17);
        assert_eq!(bins.iter().map(|(_, n)| *n).sum::<f64>(), 500.0);
        assert!(cdf_of_histogram("garbage", 10).is_empty());
    }

    #[test]
    fn markup_in_titles_and_series_is_escaped() {
        let c = Chart {
            id: "x\"><script>".into(),
            title: "<img src=x onerror=alert(1)>".into(),
            x_label: "a & b".into(),
            y_label: "'y'".into(),
            x_log: false,
            x_integer: false,
            y_integer: false,
            series: vec![Series {
                name: "</text><script>alert(1)</script>".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                mark: Mark::Line,
            }],
            bands: vec![Band {
                label: "<b>".into(),
                x0: 0.0,
                x1: 0.5,
            }],
        };
        let svg = render_svg(&c);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains("<img"), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }

    #[test]
    fn downsampling_keeps_the_peak_and_bounds_the_points() {
        let tl: Vec<(u64, u32, u32)> = (0..40_000u64)
            .map(|i| (i * 25, 0, if i == 12_345 { 99 } else { (i % 7) as u32 }))
            .collect();
        let d = downsample_max(&tl, 0, 1_000_000, 600);
        assert!(d.len() <= 601, "{}", d.len());
        assert_eq!(d.iter().map(|p| p.1).fold(0.0, f64::max), 99.0);
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn log_axes_inside_one_decade_have_labelled_ticks() {
        assert_eq!(log_ticks(12.0, 90.0), vec![20.0, 50.0]);
        assert_eq!(
            log_ticks(1.0, 1000.0),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(
            log_ticks(0.01, 1e6),
            vec![0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6]
        );
        // Nothing nice inside: the ends are labelled.
        assert_eq!(log_ticks(21.0, 48.0), vec![21.0, 48.0]);
        assert!(log_ticks(0.0, 1.0).is_empty());
    }

    #[test]
    fn integer_quantities_get_integer_ticks() {
        assert_eq!(integer_ticks(0.5, 1.5, 6), vec![1.0]);
        assert_eq!(integer_ticks(0.5, 4.5, 6), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(integer_ticks(0.0, 100.0, 4), vec![0.0, 50.0, 100.0]);
        let c = Chart {
            id: "tpc".into(),
            title: "t".into(),
            x_label: "tokens in one chunk".into(),
            y_label: "chunks".into(),
            x_log: false,
            x_integer: true,
            y_integer: true,
            series: vec![Series {
                name: "chunks".into(),
                points: vec![(1.0, 3.0)],
                mark: Mark::Bars,
            }],
            bands: vec![],
        };
        let svg = render_svg(&c);
        assert!(!svg.contains(">1.2<") && !svg.contains(">0.5<"), "{svg}");
        assert!(
            svg.contains("<title>tokens in one chunk: 1 · chunks: 3</title>"),
            "{svg}"
        );
    }

    #[test]
    fn empty_chart_says_no_data() {
        let c = Chart {
            id: "e".into(),
            title: "t".into(),
            x_label: String::new(),
            y_label: String::new(),
            x_log: true,
            x_integer: false,
            y_integer: false,
            series: vec![],
            bands: vec![],
        };
        assert!(render_svg(&c).contains("no data"));
    }
}
