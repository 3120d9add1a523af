//! Side-by-side comparison. Every source (a pinbench report or another tool's result
//! file) becomes a [`Subject`]: its pins as rows keyed like [`view::pin_rows`], its measured
//! lengths, and its headline numbers. Two subjects are comparable only when every pin
//! that shapes the numbers is pinned in both and equal (measured mean lengths within
//! [`LENGTH_TOLERANCE`]).

use crate::decimal::{fixed, Fixed, Shortest};
use crate::metrics::Summary;
use crate::pins::PinId;
use crate::report::Report;
use crate::rows::{self as view, PinRow, PinStatus};

/// Relative tolerance on measured mean prompt/output lengths.
pub const LENGTH_TOLERANCE: f64 = 0.02;

/// Pins shown but not judged: the endpoint and engine are what one compares, and a
/// model id is a vendor's name for the model (parameters and quantization are judged).
pub const INFORMATIONAL: &[&str] = &[
    "endpoint",
    "model.id",
    "model.engine",
    "prompt_exactness",
    "load.stall_timeout",
];

/// Every pin key a subject has, in display order.
pub const KEYS: &[(&str, &str, PinId)] = &[
    ("endpoint", "endpoint", PinId::Endpoint),
    ("model.id", "model id", PinId::Model),
    ("model.params", "parameters", PinId::Model),
    ("model.quantization", "quantization", PinId::Model),
    ("model.engine", "engine", PinId::Model),
    ("prompt_len", "prompt length (tokens)", PinId::PromptLength),
    ("prompt_exactness", "prompt exactness", PinId::PromptLength),
    ("output_len", "output length (tokens)", PinId::OutputLength),
    ("load", "load (concurrency / rate)", PinId::Load),
    ("load.stall_timeout", "stall timeout", PinId::Load),
    ("kv.capacity", "KV cache capacity", PinId::KvBudget),
    ("kv.max_model_len", "max model length", PinId::KvBudget),
    (
        "kv.max_num_seqs",
        "max concurrent sequences",
        PinId::KvBudget,
    ),
    ("phases", "prefill/decode mix", PinId::PrefillDecode),
    ("scheduling", "scheduling", PinId::Scheduling),
    ("window", "window", PinId::Window),
    ("cache", "cache policy", PinId::CachePolicy),
    ("sampling", "sampling", PinId::Sampling),
    ("reasoning", "reasoning", PinId::Reasoning),
    ("conversation", "conversation", PinId::Conversation),
];

/// A headline number of a subject.
#[derive(Clone, Debug, PartialEq)]
pub struct Number {
    /// Stable key (`ttft_p50_ms`, …); with a step prefix for sweeps.
    pub key: String,
    /// Label (says per-stream or aggregate).
    pub label: String,
    /// Value.
    pub value: f64,
    /// The window it comes from.
    pub window: String,
}

/// Anything that can be compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    /// Display name (file name).
    pub title: String,
    /// The tool that produced it.
    pub tool: String,
    /// One row per key of [`KEYS`].
    pub pins: Vec<PinRow>,
    /// Measured mean prompt length, tokens.
    pub prompt_mean: Option<f64>,
    /// Measured mean output length, tokens.
    pub output_mean: Option<f64>,
    /// Headline numbers.
    pub numbers: Vec<Number>,
    /// Whether the file can be believed: its signature and recompute state.
    pub integrity: Integrity,
    /// A pinbench run's start (the report's `created`) and its client verdict (`true`:
    /// INVALID): where it sits in a series of runs over time. `None` for other tools.
    pub run: Option<RunStamp>,
}

/// When a run was made and whether its client judged it invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunStamp {
    /// ISO 8601 instant (UTC).
    pub created: String,
    /// The client verdict was INVALID.
    pub invalid: bool,
}

/// Whether a subject's file can be believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Integrity {
    /// Nothing found against it (e.g. "signature valid · figures recompute", or another
    /// tool's unsigned file).
    Sound(String),
    /// Modified after signing, or figures its records do not support: never compared as
    /// an equal.
    Suspect(String),
}

impl Integrity {
    /// The text shown.
    pub fn text(&self) -> &str {
        match self {
            Integrity::Sound(t) | Integrity::Suspect(t) => t,
        }
    }
}

impl Subject {
    /// A subject from a pinbench report whose figures, computed from its records, are
    /// `figures` (`None` when they cannot be computed: the subject then has no numbers).
    pub fn from_report(title: &str, r: &Report, figures: Option<&Summary>) -> Self {
        let steps = figures.map_or(&[][..], |f| &f.steps[..]);
        let pins = view::pin_rows(&r.body.config);
        let (mut pt, mut ot, mut n) = (0u64, 0u64, 0u64);
        let mut numbers = Vec::new();
        let multi = steps.len() > 1;
        for s in steps {
            for rec in crate::report::measured_ok(r, s.step) {
                if let Some(u) = rec.usage {
                    pt += u.prompt_tokens;
                }
                ot += rec.output_tokens();
                n += 1;
            }
            let prefix = if multi {
                format!("step {} ({}): ", s.step, s.load)
            } else {
                String::new()
            };
            let kp = if multi {
                format!("s{}.", s.step)
            } else {
                String::new()
            };
            let mw = format!("measured window, {} requests", s.requests.measured);
            // Per-token figures say how exact their timing is and what reasoning they hold.
            let pw = format!(
                "{mw}{}",
                view::per_token_note(
                    s.inexact_timing(),
                    s.requests.measured_ok,
                    s.reasoning.as_ref()
                )
            );
            let mut push = |key: &str, label: &str, value: Option<f64>, window: String| {
                if let Some(value) = value {
                    numbers.push(Number {
                        key: format!("{kp}{key}"),
                        label: format!("{prefix}{label}"),
                        value,
                        window,
                    });
                }
            };
            let ms = |v: u64| v as f64 / 1000.0;
            push(
                "ttft_p50_ms",
                "TTFT p50, ms",
                s.ttft_us.map(|d| ms(d.p50)),
                mw.clone(),
            );
            push(
                "ttft_p99_ms",
                "TTFT p99, ms",
                s.ttft_us.map(|d| ms(d.p99)),
                mw.clone(),
            );
            let ttfa = s.reasoning.as_ref().and_then(|r| r.ttfa_us);
            push(
                "ttfa_p50_ms",
                "time to first answer token p50, ms",
                ttfa.map(|d| ms(d.p50)),
                mw.clone(),
            );
            push(
                "tpot_p50_ms",
                "TPOT p50, ms",
                s.tpot_us.map(|d| ms(d.p50)),
                pw.clone(),
            );
            push(
                "tpot_p99_ms",
                "TPOT p99, ms",
                s.tpot_us.map(|d| ms(d.p99)),
                pw.clone(),
            );
            push(
                "per_stream_tok_s",
                "per-stream decode tok/s (p50)",
                s.decode_speed_milli.map(|d| ms(d.p50)),
                pw.clone(),
            );
            let w = s.windows.headline();
            push(
                "aggregate_tok_s",
                "aggregate output tok/s (all streams)",
                w.map(|(w, _)| ms(w.aggregate_output_milli)),
                w.map_or("", |(_, name)| name).into(),
            );
        }
        let mean = |t: u64| (n > 0).then(|| t as f64 / n as f64);
        Subject {
            title: title.into(),
            tool: format!("{} {}", r.body.tool.name, r.body.tool.version),
            pins: order(pins),
            prompt_mean: if pt > 0 { mean(pt) } else { None },
            output_mean: mean(ot),
            numbers,
            integrity: Integrity::Sound("not checked".into()),
            run: Some(RunStamp {
                created: r.body.created.clone(),
                invalid: r.body.client.invalid,
            }),
        }
    }

    /// The same subject with its file's integrity (the viewer knows the signature and
    /// recompute state).
    pub fn with_integrity(mut self, integrity: Integrity) -> Self {
        self.integrity = integrity;
        self
    }

    /// The row of a key.
    pub fn pin(&self, key: &str) -> Option<&PinRow> {
        self.pins.iter().find(|p| p.key == key)
    }

    /// Keys of the pins this subject leaves unpinned or undisclosed.
    pub fn open_pins(&self) -> Vec<&PinRow> {
        self.pins
            .iter()
            .filter(|p| p.status != PinStatus::Pinned && !INFORMATIONAL.contains(&p.key))
            .collect()
    }
}

/// Puts rows in [`KEYS`] order, adding an unpinned row for every missing key.
pub fn order(mut rows: Vec<PinRow>) -> Vec<PinRow> {
    KEYS.iter()
        .map(|(key, label, pin)| {
            rows.iter()
                .position(|r| r.key == *key)
                .map(|i| rows.swap_remove(i))
                .unwrap_or_else(|| PinRow {
                    pin: *pin,
                    key,
                    label,
                    value: String::new(),
                    provenance: "not recorded".into(),
                    status: PinStatus::Unpinned,
                })
        })
        .collect()
}

/// One row of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Key.
    pub key: String,
    /// Label.
    pub label: String,
    /// One cell per subject.
    pub cells: Vec<String>,
    /// Values differ (or are unpinned somewhere) and the row is judged.
    pub differs: bool,
    /// Shown only, not judged.
    pub informational: bool,
}

/// The verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every judged pin matches.
    Comparable,
    /// Why not: the labels of the pins that differ, and of those left open.
    NotComparable {
        /// Pins whose values differ.
        differs: Vec<String>,
        /// Pins unpinned or undisclosed in some subject.
        open: Vec<String>,
        /// Files that cannot be believed (title: why).
        suspect: Vec<String>,
    },
}

impl Verdict {
    /// One sentence.
    pub fn sentence(&self) -> String {
        match self {
            Verdict::Comparable => format!(
                "comparable: every pin matches (measured mean lengths within {}%)",
                Shortest(LENGTH_TOLERANCE * 100.0)
            ),
            Verdict::NotComparable {
                differs,
                open,
                suspect,
            } => {
                let mut parts = Vec::new();
                if !suspect.is_empty() {
                    parts.push(format!("cannot be believed: {}", suspect.join("; ")));
                }
                if !differs.is_empty() {
                    parts.push(format!("differs in {}", differs.join(", ")));
                }
                if !open.is_empty() {
                    parts.push(format!("not pinned in every report: {}", open.join(", ")));
                }
                format!("not comparable: {}", parts.join("; "))
            }
        }
    }
}

/// A comparison of two or more subjects.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Pin rows.
    pub pins: Vec<Row>,
    /// Number rows (shown, never judged).
    pub numbers: Vec<Row>,
    /// The verdict.
    pub verdict: Verdict,
}

fn within(a: f64, b: f64) -> bool {
    let m = a.abs().max(b.abs());
    m == 0.0 || (a - b).abs() / m <= LENGTH_TOLERANCE
}

/// Compares subjects.
pub fn compare(subjects: &[Subject]) -> Comparison {
    let mut pins = Vec::new();
    let (mut differs, mut open) = (Vec::new(), Vec::new());
    for (key, label, _) in KEYS {
        let cells: Vec<Option<&PinRow>> = subjects.iter().map(|s| s.pin(key)).collect();
        let informational = INFORMATIONAL.contains(key);
        let any_open = cells
            .iter()
            .any(|c| c.is_none_or(|r| r.status != PinStatus::Pinned));
        let values: Vec<&str> = cells
            .iter()
            .map(|c| c.map_or("", |r| r.value.as_str()))
            .collect();
        let different = values.windows(2).any(|w| w[0] != w[1]);
        if !informational {
            if any_open {
                open.push((*label).to_owned());
            } else if different {
                differs.push((*label).to_owned());
            }
        }
        pins.push(Row {
            key: (*key).into(),
            label: (*label).into(),
            cells: cells
                .iter()
                .map(|c| match c {
                    Some(r) if r.status == PinStatus::Pinned => r.value.clone(),
                    Some(r) if r.value.is_empty() => r.status.label().into(),
                    Some(r) => format!("{} ({})", r.status.label(), r.value),
                    None => "unpinned".into(),
                })
                .collect(),
            differs: !informational && (any_open || different),
            informational,
        });
    }
    for (key, label, get) in [
        (
            "measured.prompt_mean",
            "measured mean prompt length",
            (|s: &Subject| s.prompt_mean) as fn(&Subject) -> Option<f64>,
        ),
        ("measured.output_mean", "measured mean output length", |s| {
            s.output_mean
        }),
    ] {
        let v: Vec<Option<f64>> = subjects.iter().map(get).collect();
        let bad = v.iter().any(Option::is_none)
            || v.windows(2).any(|w| match (w[0], w[1]) {
                (Some(a), Some(b)) => !within(a, b),
                _ => true,
            });
        if bad {
            if v.iter().any(Option::is_none) {
                open.push(label.into());
            } else {
                differs.push(format!(
                    "{label} (beyond {}%)",
                    Shortest(LENGTH_TOLERANCE * 100.0)
                ));
            }
        }
        pins.push(Row {
            key: key.into(),
            label: label.into(),
            cells: v
                .iter()
                .map(|x| x.map_or_else(|| "not measured".into(), |x| fixed(x, 1)))
                .collect(),
            differs: bad,
            informational: false,
        });
    }
    let mut keys: Vec<(String, String)> = Vec::new();
    for s in subjects {
        for n in &s.numbers {
            if !keys.iter().any(|(k, _)| *k == n.key) {
                keys.push((n.key.clone(), n.label.clone()));
            }
        }
    }
    let numbers = keys
        .into_iter()
        .map(|(key, label)| Row {
            cells: subjects
                .iter()
                .map(|s| {
                    s.numbers.iter().find(|n| n.key == key).map_or_else(
                        || "—".into(),
                        |n| format!("{} ({})", Fixed(n.value, 2), n.window),
                    )
                })
                .collect(),
            key,
            label,
            differs: false,
            informational: true,
        })
        .collect();
    let suspect: Vec<String> = subjects
        .iter()
        .filter_map(|s| match &s.integrity {
            Integrity::Suspect(why) => Some(format!("{} ({why})", s.title)),
            Integrity::Sound(_) => None,
        })
        .collect();
    pins.insert(
        0,
        Row {
            key: "integrity".into(),
            label: "file (signature, recompute)".into(),
            cells: subjects
                .iter()
                .map(|s| s.integrity.text().to_owned())
                .collect(),
            differs: !suspect.is_empty(),
            informational: false,
        },
    );
    let verdict = if differs.is_empty() && open.is_empty() && suspect.is_empty() {
        Verdict::Comparable
    } else {
        Verdict::NotComparable {
            differs,
            open,
            suspect,
        }
    };
    Comparison {
        pins,
        numbers,
        verdict,
    }
}
