//! Report v1: one JSON document with the pins, the client verdict, every request's record,
//! the summary and an Ed25519 signature.
//!
//! ```text
//! { "schema": "pinbench.report/v1", "body": { … }, "signature": { "alg": "Ed25519", … } }
//! ```
//!
//! The signature covers the RFC 8785 canonical bytes of the document without its
//! `signature` member (i.e. `{"body":…,"schema":…}`). Verification works on the parsed
//! JSON value, not on a re-serialised struct, so nothing the file says escapes it. Stored
//! numbers are integers (µs, tokens, ×1000 rates) except the sampling temperature.
//! The summary can be recomputed from the records; [`recompute`] lists any mismatch.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::share::card_doc::Card;
pub use crate::sign::{SignatureBlock, ALG};

use crate::histogram::Hist;
use crate::metrics::{self, ClientEnv, ClientVerdict, MetricsPlan, Slo, Summary};
use crate::pins::RunConfig;
use crate::record::RequestRecord;
use crate::sign::{self, SignError};

/// The schema tag of this version.
pub const SCHEMA: &str = "pinbench.report/v1";

/// Largest report accepted, bytes: a 100,000-request run at up to 2.5 KB a request (the
/// 128 → 128-token fixture is 1.2 KB a request; the one-hour soak's reports 0.5 KB).
pub const MAX_REPORT_BYTES: usize = 256 << 20;

/// Largest integer a report may hold: JCS compares numbers as IEEE doubles, so larger
/// integers could be changed without changing the signed bytes.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Errors of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReportError {
    /// The file is larger than [`MAX_REPORT_BYTES`].
    #[error("report is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Not JSON (or nested too deeply).
    #[error("report is not valid JSON: {0}")]
    Json(String),
    /// Not a pinbench report of this version.
    #[error("unsupported report schema {found:?} (this viewer reads {SCHEMA:?})")]
    WrongSchema {
        /// The schema found (empty when missing).
        found: String,
    },
    /// JSON of the right version that does not match the schema.
    #[error("report does not match {SCHEMA}: {0}")]
    Schema(String),
    /// Signing failed.
    #[error(transparent)]
    Sign(#[from] SignError),
    /// The summary could not be computed.
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
}

/// The tool that wrote the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// `pinbench`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Tool {
    /// This build of pinbench (the core's version is the workspace's, one for every crate).
    pub fn this() -> Self {
        Self {
            name: "pinbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// What a probe read from the endpoint: its URL, status, and (as a JSON object of field
/// → value) what the answer said that became pins — never the whole body, which may hold
/// the server's local paths and other details.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSnapshot {
    /// URL read (never with credentials).
    pub url: String,
    /// HTTP status.
    pub status: u16,
    /// The fields read, as JSON text (older reports: the body, truncated to 64 KiB).
    pub body: String,
}

impl ProbeSnapshot {
    /// Largest body kept, bytes.
    pub const MAX_BODY: usize = 64 << 10;

    /// A snapshot, the body cut to [`Self::MAX_BODY`] at a character boundary.
    pub fn new(url: &str, status: u16, body: &str) -> Self {
        let mut end = body.len().min(Self::MAX_BODY);
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        Self {
            url: url.into(),
            status,
            body: body[..end].into(),
        }
    }
}

/// Everything that is signed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportBody {
    /// Writer.
    pub tool: Tool,
    /// When the run started (ISO 8601, as the browser gave it).
    pub created: String,
    /// The pins.
    pub config: RunConfig,
    /// SLOs used for goodput.
    pub slo: Option<Slo>,
    /// Probe snapshots.
    pub probes: Vec<ProbeSnapshot>,
    /// The client's verdict.
    pub client: ClientVerdict,
    /// Every request.
    pub records: Vec<RequestRecord>,
    /// Every figure, computed from the records when the report was written, kept as the
    /// file states it (see [`StoredSummary`]).
    pub summary: StoredSummary,
    /// What a reader must know that the figures do not say (e.g. the run was interrupted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Present when the report merges several clients' reports (`share::merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeInfo>,
    /// Present when the load steps are an SLO search's probes (`run::search`): its plan,
    /// each probe's judged figures and its answer, judged again by [`recompute`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search::SearchRecord>,
}

/// One merged source, as the merged report lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeSource {
    /// The source's name (its file name).
    pub title: String,
    /// SHA-256 of the source's signed bytes (`sha256:` + base64url).
    pub digest: String,
    /// The key that signed it.
    pub key_id: String,
    /// When it started.
    pub created: String,
    /// Its records.
    pub records: u32,
    /// Its measured window on the merged clock, µs.
    pub measured_us: (u64, u64),
    /// The source report as its file had it (signature included), so that a reader
    /// re-verifies it and merges again (`merge::check_sources`). Absent in merges made
    /// before it was kept: those cannot be re-verified, and say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<SourceDocument>,
}

/// A merged source's document, kept verbatim (its signature covers its canonical form).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SourceDocument(pub Box<serde_json::value::RawValue>);

impl PartialEq for SourceDocument {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Eq for SourceDocument {}

/// What a merge adds to a report (`share::merge`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeInfo {
    /// The sources, in the order given.
    pub sources: Vec<MergeSource>,
    /// The window every source was measuring (the intersection of their measured
    /// windows), merged clock, µs.
    pub common_us: (u64, u64),
    /// Output tokens received by all sources inside the common window.
    pub common_output_tokens: u64,
    /// Aggregate output tok/s over the common window, all sources (milli-tok/s).
    pub common_aggregate_output_milli: u64,
}

impl ReportBody {
    /// Builds a body, computing the summary and client verdict from the records.
    pub fn build(
        created: String,
        config: RunConfig,
        slo: Option<Slo>,
        probes: Vec<ProbeSnapshot>,
        env: ClientEnv,
        records: Vec<RequestRecord>,
    ) -> Result<Self, ReportError> {
        Self::build_figured(created, config, slo, probes, env, records).map(|(body, _)| body)
    }

    /// [`Self::build`], with the figures it computed (typed, for showing them).
    pub fn build_figured(
        created: String,
        config: RunConfig,
        slo: Option<Slo>,
        probes: Vec<ProbeSnapshot>,
        env: ClientEnv,
        records: Vec<RequestRecord>,
    ) -> Result<(Self, Summary), ReportError> {
        let summary = metrics::summarize(&records, &MetricsPlan::from_config(&config, slo))?;
        let cleartext = config.endpoint.base_url.starts_with("http://");
        let client = metrics::client_verdict(&records, &summary, env, cleartext);
        let body = Self {
            tool: Tool::this(),
            created,
            config,
            slo,
            probes,
            client,
            records,
            summary: StoredSummary::of(&summary)?,
            notes: Vec::new(),
            merged: None,
            search: None,
        };
        Ok((body, summary))
    }

    /// Every figure, computed from the records (what the viewer shows: the stored summary
    /// is only compared with it, by [`recompute`]).
    pub fn figures(&self) -> Result<Summary, ReportError> {
        Ok(metrics::summarize(
            &self.records,
            &MetricsPlan::from_config(&self.config, self.slo),
        )?)
    }
}

/// A report with its figures computed from its records (what a page shows of it).
#[derive(Clone, Debug)]
pub struct FiguredReport {
    /// The document.
    pub report: Report,
    /// [`ReportBody::figures`] of its body.
    pub figures: Summary,
}

/// A report's summary as its file states it: the JSON text, kept verbatim and never read
/// into typed figures. Nothing a reader sees comes from it: the viewer shows the figures
/// computed from the records ([`ReportBody::figures`]), and [`recompute`] lists where the
/// stored text differs from them. (It is signed like the rest of the body; reading it
/// into types only to compare it would add a second parser of every figure's type.)
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StoredSummary(Box<serde_json::value::RawValue>);

impl StoredSummary {
    /// The stored form of a summary's JSON text.
    pub fn from_raw(raw: Box<serde_json::value::RawValue>) -> Self {
        StoredSummary(raw)
    }

    /// The stored form of computed figures.
    pub fn of(summary: &Summary) -> Result<Self, ReportError> {
        serde_json::value::to_raw_value(summary)
            .map(StoredSummary)
            .map_err(|e| ReportError::Json(e.to_string()))
    }

    /// The JSON text, as the file has it.
    pub fn text(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for StoredSummary {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

/// What a tab keeps of a run in progress, so that closing it loses no completed request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// When the run started.
    pub created: String,
    /// The pins.
    pub config: RunConfig,
    /// The browser environment measured so far.
    pub env: ClientEnv,
    /// Requests planned in all, when known.
    pub planned: Option<u32>,
    /// Every completed request (the first ones, when storage could not hold them all).
    pub records: Vec<RequestRecord>,
    /// Completed requests left out because the browser's storage was full.
    #[serde(default)]
    pub dropped: u32,
    /// An SLO search's plan, when the run is one: its probes are rebuilt from the records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search::SearchPlan>,
}

impl Checkpoint {
    /// A report body from the completed requests, with a note saying the run was cut short.
    pub fn into_body(mut self) -> Result<ReportBody, ReportError> {
        let n = self.records.len();
        let search = match self.search.take() {
            Some(plan) => Some(
                crate::search::rebuild(plan, &mut self.config, &self.records)
                    .map_err(|e| ReportError::Schema(format!("the checkpoint's search: {e}")))?,
            ),
            None => None,
        };
        let dropped = if self.dropped > 0 {
            format!(" ({} more completed requests did not fit in the browser's storage and are not included)", self.dropped)
        } else {
            String::new()
        };
        let planned = self
            .planned
            .map(|p| format!(" of {p} planned"))
            .unwrap_or_default();
        let mut body = ReportBody::build(
            self.created,
            self.config,
            None,
            Vec::new(),
            self.env,
            self.records,
        )?;
        body.search = search;
        body.notes.push(format!(
            "Partial — interrupted: the run stopped before its end (its tab was closed, or its process killed). This report holds the {n} requests completed by then{planned}; requests in flight were lost, and the later windows may be short or empty.{dropped}"
        ));
        Ok(body)
    }
}

/// A whole report document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// The signed content.
    pub body: ReportBody,
    /// The embeddable card, signed on its own by the same key (so that a link can carry
    /// it without the report); covered by the report's signature too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<Card>,
    /// The signature, if signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureBlock>,
}

fn is_unsafe_number(n: &serde_json::Number) -> bool {
    n.as_u64()
        .map(|u| u > MAX_SAFE_INTEGER)
        .or_else(|| n.as_i64().map(|i| i.unsigned_abs() > MAX_SAFE_INTEGER))
        == Some(true)
}

fn has_unsafe_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => is_unsafe_number(n),
        Value::Array(a) => a.iter().any(has_unsafe_number),
        Value::Object(o) => o.values().any(has_unsafe_number),
        _ => false,
    }
}

/// The path of the first unsafe integer (only walked once one is known to exist).
fn unsafe_number_path(path: &str, v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if is_unsafe_number(n) => Some(format!("{path}: integer {n}")),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| unsafe_number_path(&format!("{path}[{i}]"), x)),
        Value::Object(o) => o
            .iter()
            .find_map(|(k, x)| unsafe_number_path(&format!("{path}.{k}"), x)),
        _ => None,
    }
}

/// Rejects integers beyond [`MAX_SAFE_INTEGER`] (they would not be covered exactly by the
/// signature).
fn check_safe_numbers(v: &Value) -> Result<(), ReportError> {
    if !has_unsafe_number(v) {
        return Ok(());
    }
    let at = unsafe_number_path("", v).unwrap_or_default();
    Err(ReportError::Schema(format!(
        "{at} is beyond 2^53 and cannot be signed exactly"
    )))
}

/// The canonical form a signature covers: JCS of the document without `signature`.
fn signed_doc(doc: &Value) -> Result<sign::CanonicalDoc, ReportError> {
    check_safe_numbers(doc)?;
    Ok(sign::canonical_doc(doc, &["signature"])?)
}

/// The bytes a signature covers: JCS of `{"body":…,"schema":…}`.
fn signed_bytes_of_value(doc: &Value) -> Result<Vec<u8>, ReportError> {
    Ok(signed_doc(doc)?.bytes)
}

impl Report {
    /// An unsigned report of `body`.
    pub fn new(body: ReportBody) -> Self {
        Self {
            schema: SCHEMA.into(),
            body,
            card: None,
            signature: None,
        }
    }

    /// The bytes its signature covers: the canonical form of its JSON text without
    /// `signature` (integers beyond 2^53 are refused by the canonicaliser).
    pub fn signed_bytes(&self) -> Result<Vec<u8>, ReportError> {
        Ok(sign::canonical_doc(self, &["signature"])?.bytes)
    }

    /// Attaches the card's signature (see [`Self::card_to_sign`]).
    pub fn attach_card_signature(&mut self, block: SignatureBlock) {
        if let Some(c) = self.card.as_mut() {
            c.signature = Some(block);
        }
    }

    /// Attaches the report's signature over [`Self::signed_bytes`].
    pub fn attach_signature(&mut self, block: SignatureBlock) {
        self.signature = Some(block);
    }

    /// Compact JSON text (no indentation: a 10,000-request report is a third smaller, and
    /// opens faster).
    pub fn to_json(&self) -> Result<String, ReportError> {
        serde_json::to_string(self).map_err(|e| ReportError::Json(e.to_string()))
    }
}

/// The state of a report's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verification {
    /// The signature matches; the key's fingerprint is given (trust is the viewer's call).
    Valid {
        /// Fingerprint.
        key_id: String,
        /// Public key, base64.
        public_key: String,
    },
    /// No signature block.
    Unsigned,
    /// Present but wrong: the content was modified, or the block is malformed.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// A report read from text: the typed document and its signature state.
#[derive(Clone, Debug)]
pub struct Opened {
    /// The document.
    pub report: Report,
    /// Signature state.
    pub verification: Verification,
}

/// Verifies any signed document of ours (`{…, "signature": {…}}`): the signature covers
/// the JCS bytes of the document without its `signature` member.
pub fn verify_value(doc: &Value) -> Verification {
    match signed_bytes_of_value(doc) {
        Ok(bytes) => verify_bytes(doc, &bytes),
        Err(e) => Verification::Invalid {
            reason: e.to_string(),
        },
    }
}

/// Verifies `doc`'s signature block over already computed signed bytes.
fn verify_bytes(doc: &Value, signed: &[u8]) -> Verification {
    let Some(block) = doc.get("signature") else {
        return Verification::Unsigned;
    };
    match crate::json::from_str::<SignatureBlock>(&block.to_string()) {
        Ok(b) => verify_block(&b, signed),
        Err(e) => Verification::Invalid {
            reason: format!("malformed signature block: {e}"),
        },
    }
}

/// Verifies a signature block over already computed signed bytes.
pub fn verify_block(block: &SignatureBlock, signed: &[u8]) -> Verification {
    if block.alg != ALG {
        return Verification::Invalid {
            reason: format!("unsupported algorithm {:?}", block.alg),
        };
    }
    let check = || -> Result<(), ReportError> {
        let pk = sign::public_key_from_base64(&block.public_key)?;
        if sign::key_id(&pk) != block.key_id {
            return Err(ReportError::Schema(
                "key id does not match the public key".into(),
            ));
        }
        let sig = sign::signature_from_base64(&block.signature)?;
        sign::verify(&pk, signed, &sig)?;
        Ok(())
    };
    match check() {
        Ok(()) => Verification::Valid {
            key_id: block.key_id.clone(),
            public_key: block.public_key.clone(),
        },
        Err(e) => Verification::Invalid {
            reason: e.to_string(),
        },
    }
}

/// Parses JSON text within the size limit.
pub fn parse_json(text: &str) -> Result<Value, ReportError> {
    if text.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            size: text.len(),
            limit: MAX_REPORT_BYTES,
        });
    }
    serde_json::from_str::<NoDuplicates>(text)
        .map(|v| v.0)
        .map_err(|e| {
            let msg = e.to_string();
            if msg.contains("recursion limit") {
                ReportError::Json(format!("nested too deeply (more than 128 levels): {msg}"))
            } else {
                ReportError::Json(msg)
            }
        })
}

/// A JSON value parsed with every object's keys checked unique: a document that says
/// a thing twice has no one meaning (`serde_json::Value` would keep the last, a
/// canonicaliser or another reader the first), so it is refused.
struct NoDuplicates(Value);

impl<'de> Deserialize<'de> for NoDuplicates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicatesVisitor).map(NoDuplicates)
    }
}

struct NoDuplicatesVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicatesVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(NoDuplicates(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let NoDuplicates(v) = map.next_value()?;
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key {key:?}: a key may appear once in an object"
                )));
            }
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parses and verifies a report: size limit, JSON, schema version, strict schema
/// (unknown fields rejected), then the signature.
pub fn open(text: &str) -> Result<Opened, ReportError> {
    crate::budget::with(crate::budget::REPORT, || open_unbudgeted(text))
}

fn open_unbudgeted(text: &str) -> Result<Opened, ReportError> {
    if text.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            size: text.len(),
            limit: MAX_REPORT_BYTES,
        });
    }
    match crate::jcs::canonicalize(text, &["signature"]) {
        Ok(canonical) => open_canonical(text, canonical, &mut |_| {}),
        // The slow path gives serde_json's messages (line and column) and the JSON path
        // of an unsafe integer; it refuses duplicate keys as the canonicaliser does.
        Err(_) => open_value(parse_json(text)?),
    }
}

/// The top-level `schema` string of a canonicalised document.
pub fn schema_of(canonical: &sign::CanonicalDoc) -> Option<String> {
    canonical
        .member("schema")
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| serde_json::from_str::<String>(t).ok())
}

/// Opens a report whose canonical form was computed from its text
/// ([`crate::jcs::canonicalize`], `signature` skipped): the typed parse reads the text
/// directly, never a `Value` tree. `lap` is told when each stage ends (for timing).
pub fn open_canonical(
    text: &str,
    canonical: sign::CanonicalDoc,
    lap: &mut dyn FnMut(&'static str),
) -> Result<Opened, ReportError> {
    let found = schema_of(&canonical).unwrap_or_default();
    if found != SCHEMA {
        return Err(ReportError::WrongSchema { found });
    }
    let report: Report = crate::json::from_str(text).map_err(ReportError::Schema)?;
    lap("typed parse");
    let verification = match &report.signature {
        Some(block) => verify_block(block, &canonical.bytes),
        None => Verification::Unsigned,
    };
    lap("signature");
    Ok(Opened {
        report,
        verification,
    })
}

/// [`open`] of an already parsed document.
pub fn open_value(doc: Value) -> Result<Opened, ReportError> {
    let found = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    if found != SCHEMA {
        return Err(ReportError::WrongSchema {
            found: found.into(),
        });
    }
    let canonical = signed_doc(&doc)?;
    let verification = verify_bytes(&doc, &canonical.bytes);
    // Typed from text, as the fast path does: one parser of the report's types (a
    // second one, from a `Value`, would double their code in the wasm).
    let report: Report = crate::json::from_str(&doc.to_string()).map_err(ReportError::Schema)?;
    Ok(Opened {
        report,
        verification,
    })
}

/// Records that appear twice in a report: the same dispatch index or the same response id
/// (a copy of a record counts its tokens twice). One line per duplicate, none when clean.
pub fn duplicate_records(body: &ReportBody) -> Vec<String> {
    let mut out = Vec::new();
    let mut idx: Vec<u32> = body.records.iter().map(|r| r.index).collect();
    crate::sort::sort(&mut idx);
    for w in idx.windows(2).filter(|w| w[0] == w[1]) {
        out.push(format!("record index {} appears more than once", w[0]));
    }
    let mut ids: Vec<&str> = body
        .records
        .iter()
        .filter_map(|r| r.response_id.as_deref())
        .filter(|id| !id.is_empty())
        .collect();
    crate::sort::sort(&mut ids);
    for w in ids.windows(2).filter(|w| w[0] == w[1]) {
        out.push(format!("response id {} appears more than once", w[0]));
    }
    out.dedup();
    out
}

/// One figure whose stored value differs from the value recomputed from the records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// JSON path of the figure, e.g. `summary.steps[0].ttft_us.p99`.
    pub path: String,
    /// Stored value.
    pub stored: String,
    /// Recomputed value.
    pub recomputed: String,
}

fn diff(path: &str, stored: &Value, fresh: &Value, out: &mut Vec<Mismatch>) {
    match (stored, fresh) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            crate::sort::sort(&mut keys);
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                if path.ends_with(".histograms") {
                    // Compare histograms by content, not by their compressed bytes.
                    let same = match (x.as_str().map(Hist::decode), y.as_str().map(Hist::decode)) {
                        (Some(Ok(h1)), Some(Ok(h2))) => h1 == h2,
                        _ => false,
                    };
                    if !same {
                        out.push(Mismatch {
                            path: p,
                            stored: "histogram".into(),
                            recomputed: "different histogram".into(),
                        });
                    }
                } else {
                    diff(&p, x, y, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if stored == fresh => {}
        _ => out.push(Mismatch {
            path: path.into(),
            stored: stored.to_string(),
            recomputed: fresh.to_string(),
        }),
    }
}

/// Recomputes the summary and client verdict from the records; returns every mismatch.
pub fn recompute(report: &Report) -> Result<Vec<Mismatch>, ReportError> {
    recompute_figured(report).map(|(_, mismatches)| mismatches)
}

/// [`recompute`], with the figures computed from the records (what a viewer shows).
pub fn recompute_figured(report: &Report) -> Result<(Summary, Vec<Mismatch>), ReportError> {
    crate::budget::with(crate::budget::REPORT, || recompute_unbudgeted(report))
}

fn recompute_unbudgeted(report: &Report) -> Result<(Summary, Vec<Mismatch>), ReportError> {
    let b = &report.body;
    let summary = b.figures()?;
    let cleartext = b.config.endpoint.base_url.starts_with("http://");
    let client = metrics::client_verdict(&b.records, &summary, b.client.env, cleartext);
    let mut out = Vec::new();
    let stored: Value =
        serde_json::from_str(b.summary.text()).map_err(|e| ReportError::Json(e.to_string()))?;
    diff("summary", &stored, &to_value(&summary)?, &mut out);
    diff(
        "client",
        &to_value(&b.client)?,
        &to_value(&client)?,
        &mut out,
    );
    if let Some(search) = &b.search {
        out.extend(crate::search::check(search, &summary).into_iter().map(
            |(path, stored, recomputed)| Mismatch {
                path,
                stored,
                recomputed,
            },
        ));
    }
    Ok((summary, out))
}

/// `v` as a JSON tree, through its text: the wasm then holds one serialiser per type (to
/// text), not a second one into `Value`.
fn to_value<T: Serialize>(v: &T) -> Result<Value, ReportError> {
    let text = serde_json::to_string(v).map_err(|e| ReportError::Json(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| ReportError::Json(e.to_string()))
}

/// The measured, successful records of one step, in dispatch order.
pub fn measured_ok(report: &Report, step: u32) -> Vec<&RequestRecord> {
    let mut recs: Vec<&RequestRecord> = report
        .body
        .records
        .iter()
        .filter(|r| r.step == step)
        .collect();
    crate::sort::sort_by_key(&mut recs, |r| r.index);
    let phases = crate::metrics::classify(&recs, &report.body.config.window.value);
    recs.into_iter()
        .zip(phases)
        .filter(|(r, p)| *p == crate::metrics::Phase::Measured && r.outcome.is_ok())
        .map(|(r, _)| r)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dialect::Dialect;
    use crate::record::{RequestTimeline, StreamEnd};
    use crate::sign::KeyPair;

    pub fn sample_config() -> RunConfig {
        crate::pins::Pins::reference()
            .with(&[
                ("model_id", "tiny <b>"),
                ("model_params", "270M"),
                ("model_quant", "Q4_K_M"),
                ("model_engine", "pinbench-ref 0.1"),
                ("prompt_exactness", "server_tokenizer"),
                ("max_model_len", "2048"),
                ("kv_capacity", "8192"),
                ("max_num_seqs", "8"),
                ("phases", "colocated"),
                ("temperature", "0.7"),
                ("sampling_extra", "{\"seed\":1}"),
                ("reasoning", "none"),
            ])
            .lengths(16, 4)
            .windows("1", "4", "1")
            .build()
            .expect("pinned")
    }

    /// Records made by feeding real SSE bytes through the timeline.
    pub fn sample_records(n: u32) -> Vec<RequestRecord> {
        (0..n)
            .map(|i| {
                let t0 = u64::from(i / 2) * 50_000 + u64::from(i % 2) * 1_000;
                let mut tl = RequestTimeline::new(i, 0, Dialect::Completions, 16, 4, t0);
                tl.on_headers(t0 + 800, 200, Some("text/event-stream"));
                for k in 0..4u64 {
                    tl.on_bytes(t0 + 10_000 + k * 5_000 + u64::from(i) * 7, format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"t{k}\"}}]}}\n\n").as_bytes());
                }
                tl.on_bytes(t0 + 30_000, b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n");
                tl.finish(t0 + 30_100, StreamEnd::Eof)
            })
            .collect()
    }

    pub fn sample_report() -> Report {
        let env = ClientEnv {
            timer_resolution_us: 5,
            cross_origin_isolated: true,
            event_loop_lag_p99_us: 300,
            event_loop_lag_max_us: 900,
            host: None,
            clock_epoch_us: None,
            ..Default::default()
        };
        let body = ReportBody::build(
            "2026-11-29T15:00:00Z".into(),
            sample_config(),
            Some(Slo {
                ttft_us: Some(20_000),
                tpot_us: None,
                e2e_us: None,
            }),
            vec![],
            env,
            sample_records(6),
        )
        .expect("body");
        Report::new(body)
    }

    #[test]
    fn signed_report_round_trips_and_verifies() {
        let mut rep = sample_report();
        let key = KeyPair::from_secret([9; 32]);
        rep.sign(&key).expect("sign");
        let text = rep.to_json().expect("json");
        let opened = open(&text).expect("opens");
        assert_eq!(
            opened.verification,
            Verification::Valid {
                key_id: key.key_id(),
                public_key: key.public_key_base64()
            }
        );
        assert_eq!(opened.report, rep);
        assert_eq!(recompute(&opened.report).expect("recompute"), vec![]);
        let figures = rep.body.figures().expect("figures");
        let s = &figures.steps[0];
        assert_eq!(s.requests.warmup, vec![0]);
        assert_eq!(s.requests.cooldown, vec![5]);
        assert_eq!(s.output_len.exact, 4);
    }

    #[test]
    fn any_changed_byte_of_the_signed_bytes_fails() {
        let mut rep = sample_report();
        let key = KeyPair::from_secret([3; 32]);
        rep.sign(&key).expect("sign");
        let msg = rep.signed_bytes().expect("bytes");
        let sig = sign::signature_from_base64(&rep.signature.as_ref().expect("sig").signature)
            .expect("sig");
        sign::verify(&key.public_key(), &msg, &sig).expect("valid");
        for i in 0..msg.len() {
            let mut m = msg.clone();
            m[i] ^= 0x20;
            assert!(
                sign::verify(&key.public_key(), &m, &sig).is_err(),
                "byte {i} changed but verified"
            );
        }
    }

    #[test]
    fn any_changed_byte_of_the_file_is_caught() {
        let mut rep = sample_report();
        rep.body.records.truncate(2);
        rep.body.summary = StoredSummary::of(&rep.body.figures().expect("s")).expect("stored");
        rep.sign(&KeyPair::from_secret([5; 32])).expect("sign");
        let text = serde_json::to_string(&rep).expect("compact");
        let original: Value = serde_json::from_str(&text).expect("v");
        let bytes = text.as_bytes();
        let mut checked = 0;
        for i in 0..bytes.len() {
            let mut b = bytes.to_vec();
            b[i] ^= 0x01;
            let Ok(t) = std::str::from_utf8(&b) else {
                continue;
            };
            match open(t) {
                Ok(o) if matches!(o.verification, Verification::Valid { .. }) => {
                    let v: Value = serde_json::from_str(t).expect("parsed before");
                    assert_eq!(v, original, "byte {i} changed the content but verified");
                }
                _ => checked += 1,
            }
        }
        assert!(checked > bytes.len() / 2);
    }

    #[test]
    fn tampered_summary_is_flagged_by_recompute_and_signature() {
        let mut rep = sample_report();
        rep.sign(&KeyPair::from_secret([1; 32])).expect("sign");
        let mut v: Value = serde_json::to_value(&rep).expect("v");
        v["body"]["summary"]["steps"][0]["ttft_us"]["p99"] = Value::from(1u64);
        let opened = open(&v.to_string()).expect("opens");
        assert!(matches!(opened.verification, Verification::Invalid { .. }));
        let mism = recompute(&opened.report).expect("recompute");
        assert_eq!(mism.len(), 1, "{mism:?}");
        assert_eq!(mism[0].path, "summary.steps[0].ttft_us.p99");
    }

    #[test]
    fn swapped_and_stripped_signatures() {
        let mut a = sample_report();
        a.sign(&KeyPair::from_secret([1; 32])).expect("sign");
        let mut b = sample_report();
        b.body.created = "2026-11-30T00:00:00Z".into();
        b.sign(&KeyPair::from_secret([2; 32])).expect("sign");
        let mut swapped = a.clone();
        swapped.signature = b.signature.clone();
        assert!(matches!(
            open(&swapped.to_json().expect("j"))
                .expect("o")
                .verification,
            Verification::Invalid { .. }
        ));
        let mut stripped = a.clone();
        stripped.signature = None;
        assert_eq!(
            open(&stripped.to_json().expect("j"))
                .expect("o")
                .verification,
            Verification::Unsigned
        );
        let mut wrong_id = a.clone();
        if let Some(s) = wrong_id.signature.as_mut() {
            s.key_id = KeyPair::from_secret([2; 32]).key_id();
        }
        assert!(matches!(
            open(&wrong_id.to_json().expect("j"))
                .expect("o")
                .verification,
            Verification::Invalid { .. }
        ));
    }

    #[test]
    fn probe_snapshots_are_capped_at_a_char_boundary() {
        let body = "é".repeat(ProbeSnapshot::MAX_BODY);
        let p = ProbeSnapshot::new("http://x/v1/models", 200, &body);
        assert!(
            p.body.len() <= ProbeSnapshot::MAX_BODY && p.body.len() >= ProbeSnapshot::MAX_BODY - 1
        );
        assert_eq!(ProbeSnapshot::new("u", 200, "{}").body, "{}");
    }

    #[test]
    fn hostile_inputs_get_typed_errors() {
        assert!(matches!(open("{"), Err(ReportError::Json(_))));
        assert!(matches!(
            open("{\"schema\":\"pinbench.report/v2\"}"),
            Err(ReportError::WrongSchema { .. })
        ));
        assert!(matches!(open("[]"), Err(ReportError::WrongSchema { .. })));
        let deep = "[".repeat(100_000);
        assert!(matches!(open(&deep), Err(ReportError::Json(_))));
        let big = " ".repeat(MAX_REPORT_BYTES + 1);
        assert!(matches!(open(&big), Err(ReportError::TooLarge { .. })));
        let mut v = serde_json::to_value(sample_report()).expect("v");
        v["body"]["records"][0]["t_send_us"] = Value::from(MAX_SAFE_INTEGER + 1);
        assert!(matches!(open(&v.to_string()), Err(ReportError::Schema(m)) if m.contains("2^53")));
        let mut v = serde_json::to_value(sample_report()).expect("v");
        v["body"]["extra"] = Value::from(1);
        assert!(matches!(open(&v.to_string()), Err(ReportError::Schema(_))));
    }

    #[test]
    fn report_uses_integers_except_temperature() {
        fn walk(path: &str, v: &Value, floats: &mut Vec<String>) {
            match v {
                Value::Number(n) if n.is_f64() => floats.push(path.to_owned()),
                Value::Object(o) => o
                    .iter()
                    .for_each(|(k, x)| walk(&format!("{path}.{k}"), x, floats)),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(&format!("{path}[{i}]"), x, floats)),
                _ => {}
            }
        }
        let mut floats = Vec::new();
        walk(
            "",
            &serde_json::to_value(sample_report()).expect("v"),
            &mut floats,
        );
        assert_eq!(
            floats,
            vec![".body.config.sampling.value.temperature".to_owned()]
        );
    }
}
