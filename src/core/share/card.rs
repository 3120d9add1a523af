//! The embeddable card: the pins beside the headline numbers, small enough to travel in a
//! URL fragment, signed on its own by the report's key and bound to the report by the
//! SHA-256 of the report body's canonical JSON.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::core::chart::escape;
use crate::core::metrics::{Dist, Windows};
use crate::core::pins::{LoadStep, RunConfig};
use crate::core::report::{self, Report, ReportError, SignatureBlock, Verification};
use crate::core::sign::{self, KeyPair};
use crate::core::view;

/// Card schema id (typed data).
pub const CARD_SCHEMA: &str = "pinbench.card/v2";

/// The first card schema (display text), still read.
pub const CARD_SCHEMA_V1: &str = "pinbench.card/v1";

/// Largest card accepted from a link (decoded JSON bytes).
pub const MAX_CARD_BYTES: usize = 32 << 10;

/// The fragment key of the link-only form: `#card=<base64url(deflate(json))>`.
pub const FRAGMENT_KEY: &str = "card=";

/// A labelled text value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// Label.
    pub label: String,
    /// Value.
    pub value: String,
    /// The window a number comes from (empty for pins).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub window: String,
}

/// What the card shows (signed): typed data from the report — the pins and the first
/// step's figures — from which the display is derived. A change in how a label is
/// written never changes a signed card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypedBody {
    /// base64url SHA-256 of the JCS bytes of the report body without its records
    /// ([`report_digest`]).
    pub report_digest: String,
    /// When the run started.
    pub created: String,
    /// The pins, as the report holds them.
    pub config: RunConfig,
    /// The first load step's figures.
    pub step: CardStep,
    /// The client verdict said the client limited the run.
    pub client_invalid: bool,
    /// Load steps in the report (the card shows the first).
    pub steps: u32,
    /// Request records in the report.
    pub records: u32,
    /// The report's notes (e.g. an interrupted run).
    pub notes: Vec<String>,
}

/// The figures of one load step that a card shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardStep {
    /// The step's load.
    pub load: LoadStep,
    /// Measured requests.
    pub measured: u32,
    /// Aggregate windows.
    pub windows: Windows,
    /// Per-stream decode speed, milli-tok/s.
    pub decode_speed_milli: Option<Dist>,
    /// TTFT, µs.
    pub ttft_us: Option<Dist>,
    /// TPOT, µs.
    pub tpot_us: Option<Dist>,
}

/// The first card format (`pinbench.card/v1`): display text, signed as written. Still
/// verified (signature, key, report binding); its text is not recomputed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyBody {
    /// See [`TypedBody::report_digest`].
    pub report_digest: String,
    /// When the run started.
    pub created: String,
    /// Model id.
    pub model: String,
    /// The pins, as text.
    pub pins: Vec<Item>,
    /// Headline numbers, as text.
    pub headline: Vec<Item>,
    /// The client limited the run.
    pub client_invalid: bool,
    /// Load steps.
    pub steps: u32,
}

/// A card's signed content, typed (v2) or legacy text (v1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CardBody {
    /// `pinbench.card/v2`.
    Typed(Box<TypedBody>),
    /// `pinbench.card/v1`.
    Legacy(LegacyBody),
}

impl CardBody {
    /// The digest binding the card to its report.
    pub fn report_digest(&self) -> &str {
        match self {
            CardBody::Typed(b) => &b.report_digest,
            CardBody::Legacy(b) => &b.report_digest,
        }
    }

    /// The model id.
    pub fn model(&self) -> String {
        match self {
            CardBody::Typed(b) => b.config.model.id.value.clone(),
            CardBody::Legacy(b) => b.model.clone(),
        }
    }

    /// The pins as display items (derived for a typed card).
    pub fn pins(&self) -> Vec<Item> {
        match self {
            CardBody::Typed(b) => pin_items(&b.config),
            CardBody::Legacy(b) => b.pins.clone(),
        }
    }

    /// The headline numbers as display items (derived for a typed card).
    pub fn headline(&self) -> Vec<Item> {
        match self {
            CardBody::Typed(b) => headline_items(&b.step),
            CardBody::Legacy(b) => b.headline.clone(),
        }
    }

    /// Whether the client limited the run.
    pub fn client_invalid(&self) -> bool {
        match self {
            CardBody::Typed(b) => b.client_invalid,
            CardBody::Legacy(b) => b.client_invalid,
        }
    }

    /// Load steps in the report.
    pub fn steps(&self) -> u32 {
        match self {
            CardBody::Typed(b) => b.steps,
            CardBody::Legacy(b) => b.steps,
        }
    }

    /// The report's notes and record count (typed cards only).
    pub fn notes(&self) -> (Vec<String>, Option<u32>) {
        match self {
            CardBody::Typed(b) => (b.notes.clone(), Some(b.records)),
            CardBody::Legacy(_) => (Vec::new(), None),
        }
    }
}

fn pin_items(c: &RunConfig) -> Vec<Item> {
    let rows = view::pin_rows(c);
    let get = |k: &str| {
        rows.iter()
            .find(|p| p.key == k)
            .map(|p| p.value.clone())
            .unwrap_or_default()
    };
    vec![
        item(
            "model",
            format!(
                "{} · {} params · {}",
                c.model.id.value, c.model.params.value, c.model.quantization.value
            ),
        ),
        item("engine", get("model.engine")),
        item(
            "lengths",
            format!("{} → {} tokens", get("prompt_len"), get("output_len")),
        ),
        item("load", get("load")),
        item(
            "KV",
            format!(
                "{} · max len {} · max seqs {}",
                get("kv.capacity"),
                get("kv.max_model_len"),
                get("kv.max_num_seqs")
            ),
        ),
        item(
            "server",
            format!("{} batching · {} phases", get("scheduling"), get("phases")),
        ),
        item("window", get("window")),
        item(
            "cache, sampling",
            format!("{} · {}", get("cache"), get("sampling")),
        ),
    ]
}

fn headline_items(s: &CardStep) -> Vec<Item> {
    let measured_w = format!("measured window, {} requests", s.measured);
    let mut out = Vec::new();
    if let Some((w, name)) = s.windows.headline() {
        out.push(Item {
            label: "aggregate output tok/s (all streams)".into(),
            value: view::fmt_rate(w.aggregate_output_milli),
            window: format!("{name}, {:.2} s", (w.end_us - w.start_us) as f64 / 1e6),
        });
    }
    if let Some(d) = s.decode_speed_milli {
        out.push(Item {
            label: "per-stream decode tok/s (p50)".into(),
            value: view::fmt_rate(d.p50),
            window: measured_w.clone(),
        });
    }
    for (label, d) in [("TTFT p50 / p99", s.ttft_us), ("TPOT p50 / p99", s.tpot_us)] {
        if let Some(d) = d {
            out.push(Item {
                label: label.into(),
                value: format!("{} / {}", view::fmt_ms(d.p50), view::fmt_ms(d.p99)),
                window: measured_w.clone(),
            });
        }
    }
    out
}

/// A card document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Card {
    /// [`CARD_SCHEMA`].
    pub schema: String,
    /// The signed content.
    pub body: CardBody,
    /// Signature by the report's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureBlock>,
}

/// Why a card could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CardError {
    /// Not base64url / deflate / JSON of a card.
    #[error("the card link is damaged: {0}")]
    Damaged(String),
    /// Too large.
    #[error("the card is larger than {MAX_CARD_BYTES} bytes")]
    TooLarge,
    /// Wrong schema.
    #[error("not a pinbench card (schema {0:?})")]
    WrongSchema(String),
}

/// base64url SHA-256 of canonical bytes.
pub fn digest_of(canonical: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(canonical))
}

/// What binds a card to its report: base64url SHA-256 of the canonical JSON of the
/// report body without its records (`tool`, `created`, `config`, `slo`, `probes`,
/// `client`, `summary`). The records are bound through the summary, which the viewer
/// recomputes from them; leaving them out keeps the card check from hashing megabytes.
pub fn report_digest(r: &Report) -> Result<String, ReportError> {
    let b = &r.body;
    let v = serde_json::json!({
        "tool": b.tool,
        "created": b.created,
        "config": b.config,
        "slo": b.slo,
        "probes": b.probes,
        "client": b.client,
        "summary": b.summary,
    });
    Ok(digest_of(&sign::canonical_bytes(&v)?))
}

fn item(label: &str, value: String) -> Item {
    Item {
        label: label.into(),
        value,
        window: String::new(),
    }
}

impl Card {
    /// The card of a report (unsigned).
    pub fn of(r: &Report) -> Result<Card, ReportError> {
        Ok(Self::with_digest(r, report_digest(r)?))
    }

    /// The card of a report whose [`report_digest`] is already known.
    pub fn with_digest(r: &Report, report_digest: String) -> Card {
        let b = &r.body;
        let step = b.summary.steps.first();
        Card {
            schema: CARD_SCHEMA.into(),
            body: CardBody::Typed(Box::new(TypedBody {
                report_digest,
                created: b.created.clone(),
                config: b.config.clone(),
                step: CardStep {
                    load: step.map_or_else(
                        || {
                            b.config
                                .load
                                .value
                                .steps
                                .first()
                                .copied()
                                .unwrap_or(LoadStep::Closed { concurrency: 1 })
                        },
                        |s| s.load,
                    ),
                    measured: step.map_or(0, |s| s.requests.measured),
                    windows: step.map(|s| s.windows).unwrap_or_default(),
                    decode_speed_milli: step.and_then(|s| s.decode_speed_milli),
                    ttft_us: step.and_then(|s| s.ttft_us),
                    tpot_us: step.and_then(|s| s.tpot_us),
                },
                client_invalid: b.client.invalid,
                steps: b.summary.steps.len() as u32,
                records: b.records.len() as u32,
                notes: b.notes.clone(),
            })),
            signature: None,
        }
    }

    /// Signs the card.
    pub fn sign(&mut self, key: &KeyPair) -> Result<(), ReportError> {
        let bytes = self.signing_bytes()?;
        self.signature = Some(SignatureBlock::ed25519(
            &key.public_key(),
            &key.sign(&bytes),
        ));
        Ok(())
    }

    /// The bytes the card's signature covers (the card without its signature).
    pub fn signing_bytes(&self) -> Result<Vec<u8>, ReportError> {
        let mut unsigned = self.clone();
        unsigned.signature = None;
        Ok(sign::canonical_bytes(&unsigned)?)
    }

    /// Verifies the card's own signature.
    pub fn verify(&self) -> Verification {
        match serde_json::to_value(self) {
            Ok(v) => report::verify_value(&v),
            Err(e) => Verification::Invalid {
                reason: e.to_string(),
            },
        }
    }

    /// The link-only form's fragment value (without `#`).
    pub fn to_fragment(&self) -> Result<String, ReportError> {
        use flate2::{write::DeflateEncoder, Compression};
        use std::io::Write as _;
        let json = serde_json::to_vec(self).map_err(|e| ReportError::Json(e.to_string()))?;
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::best());
        enc.write_all(&json)
            .map_err(|e| ReportError::Json(e.to_string()))?;
        let z = enc.finish().map_err(|e| ReportError::Json(e.to_string()))?;
        Ok(format!(
            "{FRAGMENT_KEY}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(z)
        ))
    }

    /// Reads a card from a fragment (with or without `#`; other `&`-separated keys are
    /// ignored).
    pub fn from_fragment(fragment: &str) -> Result<Card, CardError> {
        use flate2::read::DeflateDecoder;
        use std::io::Read as _;
        let f = fragment.trim_start_matches('#');
        let data = f
            .split('&')
            .find_map(|p| p.strip_prefix(FRAGMENT_KEY))
            .ok_or_else(|| CardError::Damaged("no card in the link".into()))?;
        let z = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(data.trim_end_matches('='))
            .map_err(|e| CardError::Damaged(e.to_string()))?;
        let mut json = Vec::new();
        DeflateDecoder::new(&z[..])
            .take(MAX_CARD_BYTES as u64 + 1)
            .read_to_end(&mut json)
            .map_err(|e| CardError::Damaged(e.to_string()))?;
        if json.len() > MAX_CARD_BYTES {
            return Err(CardError::TooLarge);
        }
        let text = std::str::from_utf8(&json).map_err(|e| CardError::Damaged(e.to_string()))?;
        // The same parser as reports: duplicate keys are refused.
        let v = report::parse_json(text).map_err(|e| CardError::Damaged(e.to_string()))?;
        let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != CARD_SCHEMA && schema != CARD_SCHEMA_V1 {
            return Err(CardError::WrongSchema(schema.into()));
        }
        serde_json::from_value(v).map_err(|e| CardError::Damaged(e.to_string()))
    }
}

/// How a report's card relates to the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardCheck {
    /// The report carries no card.
    Absent,
    /// Signed by the report's key, bound to this body, and equal to the card recomputed
    /// from it.
    Matches,
    /// A first-format card (display text): signed by the report's key and bound to this
    /// body, but its text is not recomputed.
    Legacy,
    /// Something does not hold.
    Mismatch(String),
}

/// Checks a report's card against the report.
pub fn check(r: &Report) -> CardCheck {
    let Some(card) = &r.card else {
        return CardCheck::Absent;
    };
    let key = match card.verify() {
        Verification::Valid { key_id, .. } => key_id,
        Verification::Unsigned => return CardCheck::Mismatch("the card is unsigned".into()),
        Verification::Invalid { reason } => {
            return CardCheck::Mismatch(format!("card signature invalid: {reason}"))
        }
    };
    if r.signature.as_ref().map(|s| &s.key_id) != Some(&key) {
        return CardCheck::Mismatch("the card is signed by a different key than the report".into());
    }
    let digest = match report_digest(r) {
        Ok(d) => d,
        Err(e) => return CardCheck::Mismatch(e.to_string()),
    };
    if card.body.report_digest() != digest {
        return CardCheck::Mismatch("the card belongs to a different report".into());
    }
    if matches!(card.body, CardBody::Legacy(_)) {
        return CardCheck::Legacy;
    }
    if Card::with_digest(r, digest).body != card.body {
        return CardCheck::Mismatch("the card's figures differ from the report's".into());
    }
    CardCheck::Matches
}

/// Signature status line for a card.
pub fn status_text(v: &Verification, trusted_name: Option<&str>) -> String {
    match (v, trusted_name) {
        (Verification::Valid { key_id, .. }, Some(n)) => {
            format!("signature valid · {n} ({})", short(key_id))
        }
        (Verification::Valid { key_id, .. }, None) => {
            format!("signature valid · unknown key {}", short(key_id))
        }
        (Verification::Unsigned, _) => "unsigned".into(),
        (Verification::Invalid { .. }, _) => "invalid: modified".into(),
    }
}

fn short(key_id: &str) -> &str {
    key_id.get(..23).unwrap_or(key_id)
}

/// Colours of a theme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Theme {
    /// Dark text on white.
    Light,
    /// Light text on dark.
    Dark,
}

/// The card as a standalone 600×200 SVG (for export). All text is escaped.
pub fn card_svg(card: &Card, status: &str, theme: Theme, link: &str) -> String {
    let (bg, fg, muted, accent) = match theme {
        Theme::Light => ("#ffffff", "#0f172a", "#475569", "#2563eb"),
        Theme::Dark => ("#0f172a", "#e2e8f0", "#94a3b8", "#60a5fa"),
    };
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="600" height="200" viewBox="0 0 600 200" role="img" aria-label="pinbench card: {m}"><rect width="600" height="200" rx="8" fill="{bg}" stroke="{muted}"/><text x="14" y="24" font-family="system-ui,sans-serif" font-size="15" font-weight="700" fill="{fg}">{m}</text><text x="586" y="24" font-family="system-ui,sans-serif" font-size="11" text-anchor="end" fill="{accent}">{st}</text>"#,
        m = escape(&card.body.model()),
        st = escape(status),
    );
    let mut y = 44.0;
    for p in card.body.pins().iter().take(8) {
        let v: String = p.value.chars().take(48).collect();
        s.push_str(&format!(
            r#"<text x="14" y="{y}" font-family="system-ui,sans-serif" font-size="10" fill="{muted}">{}: <tspan fill="{fg}">{}</tspan></text>"#,
            escape(&p.label),
            escape(&v)
        ));
        y += 16.0;
    }
    let mut y = 50.0;
    for h in card.body.headline().iter().take(4) {
        s.push_str(&format!(
            r#"<text x="330" y="{y}" font-family="system-ui,sans-serif" font-size="10" fill="{muted}">{}</text><text x="330" y="{}" font-family="system-ui,sans-serif" font-size="14" font-weight="600" fill="{fg}">{} <tspan font-size="9" fill="{muted}">({})</tspan></text>"#,
            escape(&h.label),
            y + 16.0,
            escape(&h.value),
            escape(&h.window)
        ));
        y += 36.0;
    }
    if card.body.client_invalid() {
        s.push_str(
            r##"<text x="14" y="188" font-family="system-ui,sans-serif" font-size="10" fill="#dc2626">INVALID: the client limited this run</text>"##,
        );
    }
    s.push_str(&format!(
        r#"<text x="586" y="188" font-family="system-ui,sans-serif" font-size="9" text-anchor="end" fill="{accent}">{}</text></svg>"#,
        escape(&link.chars().take(80).collect::<String>())
    ));
    s
}
