//! Opening a shared file: size limit, JSON, which format it is, schema, signature and
//! trust, recomputation, and the card's binding — everything the viewer shows before it
//! renders a number. Pure: the text and the trusted keys are passed in.

use serde_json::Value;

use crate::card::{self, CardCheck};
use crate::import::{self, ImportError, Imported};
use crate::jcs;
use crate::metrics::Summary;
use crate::report::{self, Mismatch, Report, ReportError, Verification};
pub use crate::share::trust::{SigState, TrustedKey, TrustedKeys};

/// Why a file could not be opened. Every variant is a message a person can act on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ViewerError {
    /// Over the size limit.
    #[error("the file is {size} bytes; the viewer opens files up to {limit} bytes")]
    TooLarge {
        /// Size.
        size: u64,
        /// Limit.
        limit: u64,
    },
    /// Not JSON.
    #[error("not valid JSON: {0}")]
    Json(String),
    /// A pinbench report of another schema version.
    #[error(
        "unsupported report schema {found:?}; this viewer reads {}",
        report::SCHEMA
    )]
    WrongSchema {
        /// What the file says.
        found: String,
    },
    /// The report does not match the schema.
    #[error("the report does not match schema pinbench.report/v1: {0}")]
    Schema(String),
    /// Not a report and not an importable file.
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// Checks a size before reading (files and downloads report it up front).
pub fn check_size(size: u64) -> Result<(), ViewerError> {
    let limit = report::MAX_REPORT_BYTES as u64;
    if size > limit {
        return Err(ViewerError::TooLarge { size, limit });
    }
    Ok(())
}

/// A report, opened and checked.
#[derive(Clone, Debug)]
pub struct OpenedReport {
    /// The document.
    pub report: Report,
    /// Its raw verification.
    pub verification: Verification,
    /// Signature and trust.
    pub sig: SigState,
    /// The figures computed from the records and how the stored summary differs from
    /// them (`Err` when the records cannot be summarised: then there is neither).
    pub recomputed: Result<Recomputed, String>,
    /// The card's binding.
    pub card: CardCheck,
}

/// What the records say, next to what the file says.
#[derive(Clone, Debug, PartialEq)]
pub struct Recomputed {
    /// The figures computed from the records: what the viewer shows. The file's stored
    /// summary is only compared with them.
    pub figures: Summary,
    /// Stored figures that differ from the recomputed ones.
    pub mismatches: Vec<Mismatch>,
}

impl OpenedReport {
    /// The figures computed from the records (`Err`: why they cannot be).
    pub fn figures(&self) -> Result<&Summary, &str> {
        self.recomputed
            .as_ref()
            .map(|r| &r.figures)
            .map_err(String::as_str)
    }

    /// Stored figures that differ from their recomputation (`Err`: why there is none).
    pub fn mismatches(&self) -> Result<&[Mismatch], &str> {
        self.recomputed
            .as_ref()
            .map(|r| r.mismatches.as_slice())
            .map_err(String::as_str)
    }
}

/// Whether an opened report can be believed, for comparison: a modified file or one
/// whose figures its records do not support is never compared as an equal.
pub fn integrity(o: &OpenedReport) -> crate::compare::Integrity {
    use crate::compare::Integrity;
    let recompute = match o.mismatches() {
        Ok([]) => None,
        Ok(m) => Some(format!("{} figures do not match its records", m.len())),
        Err(e) => Some(format!("could not recompute: {e}")),
    };
    match (&o.sig, recompute) {
        (SigState::InvalidModified { .. }, _) => {
            Integrity::Suspect("modified after signing".into())
        }
        (_, Some(why)) => Integrity::Suspect(why),
        (SigState::Trusted { .. }, None) => {
            Integrity::Sound("signature valid, trusted key · figures recompute".into())
        }
        (SigState::UnknownKey { .. }, None) => {
            Integrity::Sound("signature valid, unknown key · figures recompute".into())
        }
        (SigState::Unsigned, None) => Integrity::Sound("unsigned · figures recompute".into()),
    }
}

/// Anything the viewer can open.
#[derive(Clone, Debug)]
pub enum Opened {
    /// A pinbench report.
    Report(Box<OpenedReport>),
    /// Another tool's result file.
    Imported(Box<Imported>),
}

/// Opens a file's text.
pub fn open(title: &str, text: &str, trusted: &TrustedKeys) -> Result<Opened, ViewerError> {
    open_timed(title, text, trusted, &mut || 0).0
}

/// Time spent in each stage of opening, µs, by the caller's clock.
pub type Timings = Vec<(&'static str, u64)>;

/// [`open`], timing each stage with `clock` (µs; the core has no clock of its own).
pub fn open_timed(
    title: &str,
    text: &str,
    trusted: &TrustedKeys,
    clock: &mut dyn FnMut() -> u64,
) -> (Result<Opened, ViewerError>, Timings) {
    let mut timings = Vec::new();
    let mut last = clock();
    let mut lap = |name: &'static str, timings: &mut Timings| {
        let now = clock();
        timings.push((name, now.saturating_sub(last)));
        last = now;
    };
    let result = crate::budget::with(crate::budget::REPORT, || {
        check_size(text.len() as u64)?;
        let map_report_err = |e: ReportError| match e {
            ReportError::WrongSchema { found } => ViewerError::WrongSchema { found },
            other => ViewerError::Schema(strip(other)),
        };
        // Fast path: canonical form straight from the text, typed parse from the text.
        let fast = jcs::canonicalize(text, &["signature"]).ok();
        lap("canonicalise", &mut timings);
        let o = match fast {
            Some(c) if report::schema_of(&c).is_some_and(|s| s.starts_with("pinbench.")) => {
                report::open_canonical(text, c, &mut |name| lap(name, &mut timings))
                    .map_err(map_report_err)?
            }
            _ => {
                if let Some(imported) = import::import_text(title, text) {
                    let i = imported?;
                    lap("import", &mut timings);
                    return Ok(Opened::Imported(Box::new(i)));
                }
                let doc = report::parse_json(text).map_err(|e| ViewerError::Json(strip(e)))?;
                lap("parse", &mut timings);
                let schema = doc.get("schema").and_then(Value::as_str);
                if let Some(found) = schema.filter(|s| s.starts_with("pinbench.")) {
                    if found != report::SCHEMA {
                        return Err(ViewerError::WrongSchema {
                            found: found.into(),
                        });
                    }
                } else if doc.get("body").is_some() && doc.get("schema").is_some() {
                    return Err(ViewerError::WrongSchema {
                        found: doc["schema"].to_string(),
                    });
                } else {
                    let i = import::import(title, &doc)?;
                    lap("import", &mut timings);
                    return Ok(Opened::Imported(Box::new(i)));
                }
                let o = report::open_value(doc).map_err(map_report_err)?;
                lap("verify + schema", &mut timings);
                o
            }
        };
        let sig = SigState::of(&o.verification, trusted);
        let recomputed = report::recompute_figured(&o.report)
            .map(|(figures, mismatches)| Recomputed {
                figures,
                mismatches,
            })
            .map_err(|e| e.to_string());
        lap("recompute", &mut timings);
        let card = card::check(&o.report, recomputed.as_ref().ok().map(|r| &r.figures));
        lap("card", &mut timings);
        Ok(Opened::Report(Box::new(OpenedReport {
            report: o.report,
            verification: o.verification,
            sig,
            recomputed,
            card,
        })))
    });
    (result, timings)
}

fn strip(e: ReportError) -> String {
    match e {
        ReportError::Json(m) | ReportError::Schema(m) => m,
        other => other.to_string(),
    }
}
