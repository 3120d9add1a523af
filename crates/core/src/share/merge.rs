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
use crate::report::{Opened, ReportBody, ReportError, Verification};

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
pub fn merge(sources: &[(String, Opened)], created: String) -> Result<ReportBody, MergeError> {
    let n = sources.len();
    if n < 2 {
        return Err(MergeError::TooFew(n));
    }
    let mut key_ids = Vec::new();
    for (title, o) in sources {
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
        crate::sort::sort_by_key(&mut recs, |r| r.index);
        let count = recs.len();
        for (k, mut r) in recs.into_iter().enumerate() {
            shift(&mut r, dt);
            r.index = u32::try_from(k)
                .unwrap_or(u32::MAX)
                .saturating_mul(n32)
                .saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
            records.push(r);
        }
        let digest = o
            .report
            .signed_bytes()
            .map(|b| format!("sha256:{}", crate::card::digest_of(&b)))
            .unwrap_or_default();
        listed.push(MergeSource {
            title: title.clone(),
            digest,
            key_id: key_ids[i].clone(),
            created: o.report.body.created.clone(),
            records: u32::try_from(count).unwrap_or(u32::MAX),
            measured_us: *w,
        });
    }
    crate::sort::sort_by_key(&mut records, |r| r.index);
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
