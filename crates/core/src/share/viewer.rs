//! Opening a shared file: size limit, JSON, which format it is, schema, signature and
//! trust, recomputation, and the card's binding — everything the viewer shows before it
//! renders a number. Pure: the text and the trusted keys are passed in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::card::{self, CardCheck};
use crate::import::{self, ImportError, Imported};
use crate::jcs;
use crate::metrics::Summary;
use crate::report::{self, Mismatch, Report, ReportError, Verification};
use crate::sign;

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

/// A public key the user trusts, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKey {
    /// The user's name for it.
    pub name: String,
    /// Public key, base64.
    pub public_key: String,
    /// Its fingerprint.
    pub key_id: String,
}

/// The user's trusted keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedKeys {
    /// Keys, in the order added.
    pub keys: Vec<TrustedKey>,
}

impl TrustedKeys {
    /// Adds (or renames) a key given as base64, or as a key id is not enough: the public
    /// key itself is required.
    pub fn add(&mut self, name: &str, public_key_b64: &str) -> Result<&TrustedKey, String> {
        let name = name.trim();
        if name.is_empty() {
            return Err("give the key a name".into());
        }
        let pk = sign::public_key_from_base64(public_key_b64.trim())
            .map_err(|e| format!("not an Ed25519 public key: {e}"))?;
        let key_id = sign::key_id(&pk);
        self.keys.retain(|k| k.key_id != key_id);
        self.keys.push(TrustedKey {
            name: name.into(),
            public_key: public_key_b64.trim().into(),
            key_id,
        });
        self.keys.last().ok_or_else(|| "not added".into())
    }

    /// Removes a key by id.
    pub fn remove(&mut self, key_id: &str) {
        self.keys.retain(|k| k.key_id != key_id);
    }

    /// The name of a trusted key.
    pub fn name_of(&self, key_id: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|k| k.key_id == key_id)
            .map(|k| k.name.as_str())
    }

    /// Reads the stored form (an empty list on anything unreadable), through a JSON tree
    /// (`core::share::read`), as serde's derived reader would read it.
    pub fn from_json(text: &str) -> Self {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| crate::share::read::trusted_keys(&v).ok())
            .unwrap_or_default()
    }

    /// The stored form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"keys\":[]}".into())
    }
}

/// The signature state the viewer shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SigState {
    /// Valid, by a trusted key.
    Trusted {
        /// Fingerprint.
        key_id: String,
        /// The user's name for the key.
        name: String,
    },
    /// Valid, by a key not in the trusted list.
    UnknownKey {
        /// Fingerprint.
        key_id: String,
        /// Public key, base64 (to trust it).
        public_key: String,
    },
    /// Signed, but the signature does not match: modified (or a swapped block).
    InvalidModified {
        /// Detail.
        reason: String,
    },
    /// No signature.
    Unsigned,
}

impl SigState {
    /// From a verification and the trusted keys.
    pub fn of(v: &Verification, trusted: &TrustedKeys) -> Self {
        match v {
            Verification::Valid { key_id, public_key } => match trusted.name_of(key_id) {
                Some(n) => SigState::Trusted {
                    key_id: key_id.clone(),
                    name: n.into(),
                },
                None => SigState::UnknownKey {
                    key_id: key_id.clone(),
                    public_key: public_key.clone(),
                },
            },
            Verification::Unsigned => SigState::Unsigned,
            Verification::Invalid { reason } => SigState::InvalidModified {
                reason: reason.clone(),
            },
        }
    }

    /// Stable short id (`valid`, `unknown-key`, `invalid`, `unsigned`).
    pub fn id(&self) -> &'static str {
        match self {
            SigState::Trusted { .. } => "valid",
            SigState::UnknownKey { .. } => "unknown-key",
            SigState::InvalidModified { .. } => "invalid",
            SigState::Unsigned => "unsigned",
        }
    }

    /// The sentence shown.
    pub fn text(&self) -> String {
        match self {
            SigState::Trusted { key_id, name } => {
                format!("valid: signed by {name} ({key_id})")
            }
            SigState::UnknownKey { key_id, .. } => {
                format!("valid, but from an unknown key ({key_id}); trust it only if you know whose it is")
            }
            SigState::InvalidModified { reason } => {
                format!("invalid: modified — the content does not match its signature ({reason})")
            }
            SigState::Unsigned => "unsigned: nothing vouches for this file".into(),
        }
    }
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
