//! Merging reports from several clients that ran the same pins at the same time (tabs,
//! machines, or N copies of the native runner started by a batch scheduler): one report
//! whose records are all the sources' records on one clock, whose load is the sum of the
//! sources' loads, and whose aggregate over the window every source was measuring is
//! stated beside the usual figures. It refuses, with reasons, sources that are unsigned
//! or modified, that carry no wall-clock anchor, whose judged pins differ, or whose
//! measured windows do not overlap.

use crate::compare::{compare, Subject, Verdict};
use crate::decimal::Fixed;
use crate::metrics::{rate_milli, ClientEnv, Summary};
use crate::pins::{LoadStep, Span};
use crate::record::RequestRecord;
pub use crate::report::{MergeInfo, MergeSource};
use crate::report::{Opened, ReportBody, ReportError, SourceDocument, Verification};

/// A report to merge: its name, its file's text (kept in the merged report, so that its
/// signature can be checked again) and the report opened from it.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its name (the file name).
    pub title: String,
    /// The file's text.
    pub text: String,
    /// The report, opened and verified.
    pub opened: Opened,
}

impl Source {
    /// Opens a report file's text for merging.
    pub fn open(title: String, text: String) -> Result<Self, ReportError> {
        let opened = crate::report::open(&text)?;
        Ok(Self {
            title,
            text,
            opened,
        })
    }
}

/// Why reports cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    /// Fewer than two sources.
    #[error("a merge needs at least two reports (got {0})")]
    TooFew(usize),
    /// A source is unsigned or its signature does not verify.
    #[error("{title}: {why} — only signed, unmodified reports are merged")]
    NotSigned {
        /// The source.
        title: String,
        /// What is wrong.
        why: String,
    },
    /// A source's figures cannot be computed from its records.
    #[error("{title}: its figures cannot be computed from its records ({why})")]
    Figures {
        /// The source.
        title: String,
        /// Why.
        why: String,
    },
    /// A source has no wall-clock anchor (made before merging existed).
    #[error("{0}: the report has no wall-clock anchor (env.clock_epoch_us), so its times cannot be put on a common clock; rerun it with this version")]
    NoClock(String),
    /// Two sources are the same report (the same signed bytes).
    #[error("{0} and {1} are the same report (digest {2}): each run is merged once")]
    SameReport(String, String, String),
    /// Two sources are the same run (the same start on the same clock), signed twice.
    #[error("{0} and {1} are the same run (started {2} on the same clock), signed separately: each run is merged once")]
    SameRun(String, String, String),
    /// A request appears twice (in two sources, or twice in one).
    #[error("{0} and {1} both hold request {2} (its response id): each request is merged once")]
    SameRequest(String, String, String),
    /// A source is a sweep.
    #[error("{0}: a sweep (several load steps) cannot be merged; merge one step's runs")]
    Sweep(String),
    /// The judged pins differ (Compare's verdict, in words).
    #[error("the reports' pins differ ({0})")]
    PinsDiffer(String),
    /// The measured windows do not overlap.
    #[error("the measured windows do not overlap (on the wall clock): {0}")]
    NoOverlap(String),
    /// Building the merged report failed.
    #[error("could not build the merged report: {0}")]
    Report(#[from] ReportError),
}

/// Moves every client-clock time of a record by `dt` µs.
fn shift(r: &mut RequestRecord, dt: u64) {
    r.t_send_us += dt;
    if let Some(t) = &mut r.t_intended_us {
        *t += dt;
    }
    if let Some(t) = &mut r.t_headers_us {
        *t += dt;
    }
    if let Some(t) = &mut r.t_done_us {
        *t += dt;
    }
    for c in &mut r.chunks {
        c.t_us += dt;
    }
    if let Some(w) = &mut r.wire {
        for t in [
            &mut w.connect_start_us,
            &mut w.request_start_us,
            &mut w.response_start_us,
            &mut w.response_end_us,
        ] {
            if *t > 0 {
                *t += dt;
            }
        }
    }
}

/// Merges `sources` (title, opened report) into one unsigned report body, made at
/// `created`. The caller signs it (the merger's key).
pub fn merge(given: &[Source], created: String) -> Result<ReportBody, MergeError> {
    let n = given.len();
    if n < 2 {
        return Err(MergeError::TooFew(n));
    }
    let sources: Vec<(String, &Opened)> =
        given.iter().map(|s| (s.title.clone(), &s.opened)).collect();
    let mut key_ids = Vec::new();
    for (title, o) in &sources {
        match &o.verification {
            Verification::Valid { key_id, .. } => key_ids.push(key_id.clone()),
            Verification::Unsigned => {
                return Err(MergeError::NotSigned {
                    title: title.clone(),
                    why: "unsigned".into(),
                })
            }
            Verification::Invalid { reason } => {
                return Err(MergeError::NotSigned {
                    title: title.clone(),
                    why: format!("signature invalid ({reason})"),
                })
            }
        }
        if o.report.body.config.load.value.steps.len() != 1 {
            return Err(MergeError::Sweep(title.clone()));
        }
    }
    distinct(given)?;
    // Each source's figures, computed from its records (its stored summary is not read).
    let figures: Vec<Summary> = sources
        .iter()
        .map(|(title, o)| {
            o.report.body.figures().map_err(|e| MergeError::Figures {
                title: title.clone(),
                why: e.to_string(),
            })
        })
        .collect::<Result<_, _>>()?;
    let subjects: Vec<Subject> = sources
        .iter()
        .zip(&figures)
        .map(|((t, o), f)| Subject::from_report(t, &o.report, Some(f)))
        .collect();
    let verdict = compare(&subjects).verdict;
    if verdict != Verdict::Comparable {
        return Err(MergeError::PinsDiffer(verdict.sentence()));
    }
    let epochs: Vec<u64> = sources
        .iter()
        .map(|(t, o)| {
            o.report
                .body
                .client
                .env
                .clock_epoch_us
                .ok_or_else(|| MergeError::NoClock(t.clone()))
        })
        .collect::<Result<_, _>>()?;
    let base = epochs.iter().copied().min().unwrap_or(0);

    // Each source's measured window on the merged clock, and their intersection.
    let mut windows = Vec::new();
    for (((title, _), f), epoch) in sources.iter().zip(&figures).zip(&epochs) {
        let dt = epoch - base;
        let w = f
            .steps
            .first()
            .and_then(|s| s.windows.measured)
            .ok_or_else(|| MergeError::NoOverlap(format!("{title} has no measured window")))?;
        windows.push((w.start_us + dt, w.end_us + dt));
    }
    let common = (
        windows.iter().map(|w| w.0).max().unwrap_or(0),
        windows.iter().map(|w| w.1).min().unwrap_or(0),
    );
    if common.0 >= common.1 {
        let list: Vec<String> = sources
            .iter()
            .zip(&windows)
            .map(|((t, _), w)| {
                format!(
                    "{t} measured {}–{} s",
                    Fixed(w.0 as f64 / 1e6, 3),
                    Fixed(w.1 as f64 / 1e6, 3)
                )
            })
            .collect();
        return Err(MergeError::NoOverlap(list.join(", ")));
    }

    // Records on one clock. Indices interleave the sources (k-th record of source i →
    // k·n + i), so the first w·n indices are every source's first w: the window counts,
    // multiplied by n, classify each record as its own run did.
    let n32 = u32::try_from(n).unwrap_or(u32::MAX);
    let mut records = Vec::new();
    let mut listed = Vec::new();
    for (i, (((title, o), epoch), w)) in sources.iter().zip(&epochs).zip(&windows).enumerate() {
        let dt = epoch - base;
        let mut recs = o.report.body.records.clone();
        crate::record::sort_by_index(&mut recs);
        let count = recs.len();
        for (k, mut r) in recs.into_iter().enumerate() {
            shift(&mut r, dt);
            r.index = u32::try_from(k)
                .unwrap_or(u32::MAX)
                .saturating_mul(n32)
                .saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
            records.push(r);
        }
        let digest = digest(o);
        listed.push(MergeSource {
            title: title.clone(),
            digest,
            key_id: key_ids[i].clone(),
            created: o.report.body.created.clone(),
            records: u32::try_from(count).unwrap_or(u32::MAX),
            measured_us: *w,
            document: serde_json::value::RawValue::from_string(given[i].text.clone())
                .ok()
                .map(SourceDocument),
        });
    }
    crate::record::sort_by_index(&mut records);
    let common_tokens: u64 = records
        .iter()
        .flat_map(|r| r.chunks.iter())
        .filter(|c| c.t_us >= common.0 && c.t_us < common.1)
        .map(|c| u64::from(c.tokens))
        .sum();

    // The merged pins: the sources' pins with the load and request-count windows summed.
    let first = &sources[0].1.report.body;
    let mut cfg = first.config.clone();
    for s in &mut cfg.load.value.steps {
        *s = match *s {
            LoadStep::Closed { concurrency } => LoadStep::Closed {
                concurrency: concurrency.saturating_mul(n32),
            },
            LoadStep::Open {
                rate_milli_rps,
                arrival,
                in_flight_cap,
            } => LoadStep::Open {
                rate_milli_rps: rate_milli_rps.saturating_mul(n as u64),
                arrival,
                in_flight_cap: in_flight_cap.saturating_mul(n32),
            },
        };
    }
    let scale = |s: Span| match s {
        Span::Requests { count } => Span::Requests {
            count: count.saturating_mul(n32),
        },
        d => d,
    };
    let w = &mut cfg.window.value;
    (w.warmup, w.measured, w.cooldown) = (scale(w.warmup), scale(w.measured), scale(w.cooldown));
    let envs: Vec<ClientEnv> = sources
        .iter()
        .map(|(_, o)| o.report.body.client.env)
        .collect();
    let env = ClientEnv {
        timer_resolution_us: envs
            .iter()
            .map(|e| e.timer_resolution_us)
            .max()
            .unwrap_or(0),
        cross_origin_isolated: envs.iter().all(|e| e.cross_origin_isolated),
        event_loop_lag_p99_us: envs
            .iter()
            .map(|e| e.event_loop_lag_p99_us)
            .max()
            .unwrap_or(0),
        event_loop_lag_max_us: envs
            .iter()
            .map(|e| e.event_loop_lag_max_us)
            .max()
            .unwrap_or(0),
        host: first.client.env.host,
        clock_epoch_us: Some(base),
        // A source that read every entry counts all its records as read.
        wire_timing_read: envs.iter().any(|e| e.wire_timing_read.is_some()).then(|| {
            sources
                .iter()
                .map(|(_, o)| {
                    let b = &o.report.body;
                    b.client
                        .env
                        .wire_timing_read
                        .unwrap_or_else(|| u32::try_from(b.records.len()).unwrap_or(u32::MAX))
                })
                .fold(0u32, u32::saturating_add)
        }),
    };
    let mut body = ReportBody::build(created, cfg, first.slo, first.probes.clone(), env, records)?;
    let info = MergeInfo {
        sources: listed,
        common_us: common,
        common_output_tokens: common_tokens,
        common_aggregate_output_milli: rate_milli(common_tokens, common.1 - common.0).unwrap_or(0),
    };
    body.notes.push(format!(
        "Merged from {n} reports run at the same time by separate clients (each with the load of one; the load here is their sum). Over the window all of them were measuring ({} s), aggregate output {} tok/s.",
        Fixed((common.1 - common.0) as f64 / 1e6, 3),
        crate::pins::milli(info.common_aggregate_output_milli)
    ));
    body.merged = Some(info);
    Ok(body)
}

/// The digest merges list a source under: SHA-256 of its signed bytes.
fn digest(o: &Opened) -> String {
    o.report
        .signed_bytes()
        .map(|b| format!("sha256:{}", crate::card::digest_of(&b)))
        .unwrap_or_default()
}

/// Refuses sources that are not distinct runs: the same report twice (equal digests),
/// the same run signed twice (the same start on the same clock and the same records), or
/// a request in two places (equal response ids).
fn distinct(sources: &[Source]) -> Result<(), MergeError> {
    let digests: Vec<String> = sources.iter().map(|s| digest(&s.opened)).collect();
    for (i, a) in sources.iter().enumerate() {
        for (j, b) in sources.iter().enumerate().skip(i + 1) {
            if digests[i] == digests[j] {
                return Err(MergeError::SameReport(
                    a.title.clone(),
                    b.title.clone(),
                    digests[i].clone(),
                ));
            }
            let (ea, eb) = (&a.opened.report.body, &b.opened.report.body);
            // The same start on the same clock and the same records: one run signed twice
            // (two clients started together differ in their records).
            if ea.created == eb.created
                && ea.client.env.clock_epoch_us == eb.client.env.clock_epoch_us
                && ea.records == eb.records
            {
                return Err(MergeError::SameRun(
                    a.title.clone(),
                    b.title.clone(),
                    ea.created.clone(),
                ));
            }
        }
    }
    let mut ids: Vec<(&str, usize)> = sources
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.opened
                .report
                .body
                .records
                .iter()
                .filter_map(move |r| r.response_id.as_deref().map(|id| (id, i)))
        })
        .filter(|(id, _)| !id.is_empty())
        .collect();
    crate::sort::sort(&mut ids);
    for w in ids.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(MergeError::SameRequest(
                sources[w[0].1].title.clone(),
                sources[w[1].1].title.clone(),
                w[0].0.to_owned(),
            ));
        }
    }
    Ok(())
}

/// One source of a merged report, as a reader re-checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceCheck {
    /// Its name.
    pub title: String,
    /// The key that signed it (as listed; when the document is kept, as verified).
    pub key_id: String,
    /// Its public key (base64), when its document is kept and verifies.
    pub public_key: Option<String>,
    /// Its digest.
    pub digest: String,
    /// When it started.
    pub created: String,
    /// Its records.
    pub records: u32,
    /// Its load.
    pub load: String,
    /// Its measured window on the merged clock, µs.
    pub measured_us: (u64, u64),
    /// What does not hold, if anything.
    pub problem: Option<String>,
}

/// A merged report's sources, re-checked: each kept source document is opened, its
/// signature verified and its digest and signer compared with the listing; then the
/// sources are merged again and the result must be this report's records and pins.
/// `None` when the report is not a merge.
pub fn check_sources(body: &ReportBody) -> Option<(Vec<SourceCheck>, Vec<String>)> {
    let info = body.merged.as_ref()?;
    let mut checks = Vec::new();
    let mut problems = Vec::new();
    let mut reopened = Vec::new();
    for m in &info.sources {
        let mut c = SourceCheck {
            title: m.title.clone(),
            key_id: m.key_id.clone(),
            public_key: None,
            digest: m.digest.clone(),
            created: m.created.clone(),
            records: m.records,
            load: String::new(),
            measured_us: m.measured_us,
            problem: None,
        };
        let opened = match &m.document {
            None => Err("its document is not kept (a merge made before sources were kept), so its signature cannot be checked again".to_owned()),
            Some(d) => Source::open(m.title.clone(), d.0.get().to_owned()).map_err(|e| e.to_string()),
        };
        match opened {
            Ok(s) => {
                c.load = s
                    .opened
                    .report
                    .body
                    .config
                    .load
                    .value
                    .steps
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                c.problem = match &s.opened.verification {
                    Verification::Valid { key_id, public_key } => {
                        c.public_key = Some(public_key.clone());
                        if *key_id != m.key_id {
                            Some(format!("signed by {key_id}, listed as {}", m.key_id))
                        } else if digest(&s.opened) != m.digest {
                            Some("its digest is not the listed one".into())
                        } else {
                            None
                        }
                    }
                    Verification::Unsigned => Some("unsigned".into()),
                    Verification::Invalid { reason } => {
                        Some(format!("signature invalid ({reason})"))
                    }
                };
                reopened.push(s);
            }
            Err(e) => c.problem = Some(e),
        }
        if let Some(p) = &c.problem {
            problems.push(format!("source {}: {p}", c.title));
        }
        checks.push(c);
    }
    if problems.is_empty() {
        match merge(&reopened, body.created.clone()) {
            Ok(again) => {
                if again.records != body.records {
                    problems.push("the merged records are not the sources' records merged".into());
                }
                if again.config != body.config {
                    problems.push("the merged pins are not the sources' pins merged".into());
                }
            }
            Err(e) => problems.push(format!("the sources do not merge again: {e}")),
        }
    }
    Some((checks, problems))
}
