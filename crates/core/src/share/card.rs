//! The embeddable card: the pins beside the headline numbers, small enough to travel in a
//! URL fragment, signed on its own by the report's key and bound to the report by the
//! SHA-256 of the report body's canonical JSON.

pub use crate::share::card_doc::{Card, CardBody, CardStep, Item, LegacyBody, TypedBody};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::decimal::Shortest;
use crate::markup::escape;
use crate::metrics::{Dist, Summary, Windows};
use crate::pins::{LoadStep, RunConfig};
use crate::report::{self, Report, ReportError, SignatureBlock, Verification};
use crate::rows as view;
use crate::share::card_doc::{CardReasoning, InexactTiming};
use crate::share::trust::{SigState, TrustedKeys};
use crate::sign::{self, KeyPair};

/// Card schema id (typed data).
pub const CARD_SCHEMA: &str = "pinbench.card/v2";

/// The first card schema (display text), still read.
pub const CARD_SCHEMA_V1: &str = "pinbench.card/v1";

/// Largest card accepted from a link (decoded JSON bytes).
pub const MAX_CARD_BYTES: usize = 32 << 10;

/// The fragment key of the link-only form: `#card=<base64url(deflate(json))>`.
pub const FRAGMENT_KEY: &str = "card=";

/// The card's figures of a summary step: the same fields of the typed report's step
/// (`StepSummary`) and of the card page's reading of it from text.
macro_rules! card_step {
    ($s:expr) => {
        CardStep {
            load: $s.load,
            measured: $s.requests.measured,
            windows: $s.windows,
            decode_speed_milli: $s.decode_speed_milli,
            ttft_us: $s.ttft_us,
            tpot_us: $s.tpot_us,
            inexact_timing: match crate::metrics::inexact_timing(&$s.token_counts) {
                0 => None,
                n => Some(InexactTiming {
                    requests: n,
                    of: $s.requests.measured_ok,
                }),
            },
            reasoning: $s.reasoning.as_ref().map(|r| CardReasoning {
                tokens: r.tokens,
                untimed_tokens: r.untimed_tokens,
                unknown: r.unknown,
                ttfa_us: r.ttfa_us,
            }),
        }
    };
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
    let mut items = vec![
        item(
            "model",
            format!(
                "{} · {} params · {}",
                c.model.id.value,
                view::params_text(&c.model.params.value),
                c.model.quantization.value
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
    ];
    // A multi-turn figure is another workload: the card says so.
    if c.conversation().is_multi_turn() {
        items.push(item("conversation", get("conversation")));
    }
    items
}

fn headline_items(s: &CardStep) -> Vec<Item> {
    let measured_w = format!("measured window, {} requests", s.measured);
    let mut out = Vec::new();
    if let Some((w, name)) = s.windows.headline() {
        out.push(Item {
            label: "aggregate output tok/s (all streams)".into(),
            value: view::fmt_rate(w.aggregate_output_milli),
            window: format!(
                "{name}, {} s",
                crate::decimal::Fixed((w.end_us - w.start_us) as f64 / 1e6, 2)
            ),
        });
    }
    if let Some(d) = s.decode_speed_milli {
        out.push(Item {
            label: "per-stream decode tok/s (p50)".into(),
            value: view::fmt_rate(d.p50),
            window: measured_w.clone(),
        });
    }
    // Per-token figures say how exact their timing is and what reasoning they hold.
    let mut per_token_w = measured_w.clone();
    if let Some(t) = s.inexact_timing {
        per_token_w.push_str(&view::inexact_note(t.requests, t.of));
    }
    if let Some(r) = s.reasoning {
        per_token_w.push_str(&format!(
            "; reasoning: {} tokens counted, {} of them never timed (outside TPOT)",
            r.tokens, r.untimed_tokens
        ));
        if r.unknown > 0 {
            per_token_w.push_str(&format!(
                "; {} requests' reasoning tokens unknown",
                r.unknown
            ));
        }
    }
    let ttfa = s.reasoning.as_ref().and_then(|r| r.ttfa_us);
    for (label, d, w) in [
        ("TTFT p50 / p99", s.ttft_us, &measured_w),
        ("time to first answer token p50 / p99", ttfa, &measured_w),
        ("TPOT p50 / p99", s.tpot_us, &per_token_w),
    ] {
        if let Some(d) = d {
            out.push(Item {
                label: label.into(),
                value: format!("{} / {}", view::fmt_ms(d.p50), view::fmt_ms(d.p99)),
                window: w.clone(),
            });
        }
    }
    out
}

/// Signing a report with its card (here, where a card is derived from a report).
impl Report {
    /// Signs (or re-signs) the report, with a freshly signed card of its body.
    pub fn sign(&mut self, key: &KeyPair) -> Result<(), ReportError> {
        let figures = self.body.figures()?;
        self.sign_figured(key, &figures)
    }

    /// [`Self::sign`] with the body's figures at hand ([`ReportBody::figures`], e.g. from
    /// [`ReportBody::build_figured`]): the records are not summarised again.
    pub fn sign_figured(&mut self, key: &KeyPair, figures: &Summary) -> Result<(), ReportError> {
        let pk = key.public_key();
        let card = self.card_to_sign(figures)?;
        self.attach_card_signature(SignatureBlock::ed25519(&pk, &key.sign(&card)));
        let body = self.signed_bytes()?;
        self.attach_signature(SignatureBlock::ed25519(&pk, &key.sign(&body)));
        Ok(())
    }

    /// Signing in two phases, for a signer that answers later (a non-extractable
    /// WebCrypto key): puts a fresh unsigned card of the body in the report and returns
    /// the bytes its signature covers (the card shows `figures`, the body's
    /// [`ReportBody::figures`]). Then [`Self::attach_card_signature`],
    /// [`Self::signed_bytes`] and [`Self::attach_signature`], in that order.
    pub fn card_to_sign(&mut self, figures: &Summary) -> Result<Vec<u8>, ReportError> {
        self.signature = None;
        let card = Card::of(self, figures)?;
        let bytes = card.signing_bytes()?;
        self.card = Some(card);
        Ok(bytes)
    }
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
    crate::base64::encode_url(&Sha256::digest(canonical))
}

/// What binds a card to its report: base64url SHA-256 of the canonical JSON of the
/// report body without its records (`tool`, `created`, `config`, `slo`, `probes`,
/// `client`, `summary`). The records are bound through the summary, which the viewer
/// recomputes from them; leaving them out keeps the card check from hashing megabytes.
pub fn report_digest(r: &Report) -> Result<String, ReportError> {
    /// The digested members, borrowed (serialised to text once, not into a `Value` tree).
    #[derive(Serialize)]
    struct Digested<'a> {
        tool: &'a report::Tool,
        created: &'a str,
        config: &'a RunConfig,
        slo: &'a Option<crate::metrics::Slo>,
        probes: &'a [crate::report::ProbeSnapshot],
        client: &'a crate::metrics::ClientVerdict,
        summary: &'a report::StoredSummary,
    }
    let b = &r.body;
    let v = Digested {
        tool: &b.tool,
        created: &b.created,
        config: &b.config,
        slo: &b.slo,
        probes: &b.probes,
        client: &b.client,
        summary: &b.summary,
    };
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
    /// The card of a report (unsigned), showing `figures`: the report's figures as
    /// computed from its records ([`crate::report::ReportBody::figures`]).
    pub fn of(r: &Report, figures: &Summary) -> Result<Card, ReportError> {
        Ok(Self::with_digest(r, figures, report_digest(r)?))
    }

    /// The card of a report whose [`report_digest`] is already known.
    pub fn with_digest(r: &Report, figures: &Summary, report_digest: String) -> Card {
        let b = &r.body;
        let step = figures.steps.first();
        Card {
            schema: CARD_SCHEMA.into(),
            body: CardBody::Typed(Box::new(TypedBody {
                report_digest,
                created: b.created.clone(),
                config: b.config.clone(),
                step: step.map_or_else(|| CardStep::planned(&b.config), |s| card_step!(s)),
                client_invalid: b.client.invalid,
                steps: figures.steps.len() as u32,
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
        let Some(block) = &self.signature else {
            return Verification::Unsigned;
        };
        match self.signing_bytes() {
            Ok(bytes) => report::verify_block(block, &bytes),
            Err(e) => Verification::Invalid {
                reason: e.to_string(),
            },
        }
    }

    /// The link-only form's fragment value (without `#`), compressed here (raw DEFLATE at
    /// level 9). The browser app compresses with its own `CompressionStream` instead
    /// ([`Card::fragment_json`], then [`Card::fragment_of_deflated`]), so no compressor is
    /// in its wasm; `open_fragment` reads either.
    pub fn to_fragment(&self) -> Result<String, ReportError> {
        let z = miniz_oxide::deflate::compress_to_vec(&self.fragment_json()?, 9);
        Ok(Self::fragment_of_deflated(&z))
    }

    /// The bytes the link-only form compresses: the card's JSON.
    pub fn fragment_json(&self) -> Result<Vec<u8>, ReportError> {
        serde_json::to_vec(self).map_err(|e| ReportError::Json(e.to_string()))
    }

    /// The fragment value (without `#`) of [`Card::fragment_json`] compressed by the caller
    /// as raw DEFLATE (RFC 1951, no zlib or gzip header).
    pub fn fragment_of_deflated(z: &[u8]) -> String {
        format!("{FRAGMENT_KEY}{}", crate::base64::encode_url(z))
    }

    /// Reads a card from a fragment (with or without `#`; other `&`-separated keys are
    /// ignored) and verifies its signature.
    pub fn open_fragment(fragment: &str) -> Result<(Card, Verification), CardError> {
        let f = fragment.trim_start_matches('#');
        let data = f
            .split('&')
            .find_map(|p| p.strip_prefix(FRAGMENT_KEY))
            .ok_or_else(|| CardError::Damaged("no card in the link".into()))?;
        let z = crate::base64::decode_url(data.trim_end_matches('='))
            .map_err(|e| CardError::Damaged(e.to_string()))?;
        let json = crate::inflate::inflate(&z, MAX_CARD_BYTES).map_err(|e| match e {
            crate::inflate::InflateError::TooLarge(_) => CardError::TooLarge,
            e => CardError::Damaged(e.to_string()),
        })?;
        let text = std::str::from_utf8(&json).map_err(|e| CardError::Damaged(e.to_string()))?;
        // The canonicaliser refuses what reports refuse: duplicate keys, unsafe integers.
        let canonical = crate::jcs::canonicalize(text, &["signature"])
            .map_err(|e| CardError::Damaged(e.to_string()))?;
        let schema = report::schema_of(&canonical).unwrap_or_default();
        if schema != CARD_SCHEMA && schema != CARD_SCHEMA_V1 {
            return Err(CardError::WrongSchema(schema));
        }
        let card: Card = crate::json::from_str(text).map_err(CardError::Damaged)?;
        // The signature is checked over the text's own canonical form (what was signed),
        // so a card page needs no serialiser.
        let verification = match &card.signature {
            Some(block) => report::verify_block(block, &canonical.bytes),
            None => Verification::Unsigned,
        };
        Ok((card, verification))
    }

    /// [`Card::open_fragment`] without the verification.
    pub fn from_fragment(fragment: &str) -> Result<Card, CardError> {
        Self::open_fragment(fragment).map(|(card, _)| card)
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

/// Checks a report's card against the report, whose figures computed from its records
/// are `figures` (`None` when they cannot be computed).
pub fn check(r: &Report, figures: Option<&Summary>) -> CardCheck {
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
    let Some(figures) = figures else {
        return CardCheck::Mismatch(
            "the report's figures cannot be computed from its records, so the card's cannot be checked".into(),
        );
    };
    if Card::with_digest(r, figures, digest).body != card.body {
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

/// Signature status of a verification as the card shows it: the sentence, and the
/// state id (`valid`, `unknown-key`, `invalid`, `unsigned`) its colour comes from.
pub fn status(v: &Verification, trusted: &TrustedKeys) -> (String, &'static str) {
    let name = match v {
        Verification::Valid { key_id, .. } => trusted.name_of(key_id),
        _ => None,
    };
    (status_text(v, name), SigState::of(v, trusted).id())
}

/// A card page, checked and ready to render.
#[derive(Clone, Debug, PartialEq)]
pub struct CardView {
    /// The card (derived from a hosted report, or the link's own signed card).
    pub card: Card,
    /// The signature sentence.
    pub status: String,
    /// The signature state id ([`status`]).
    pub state: &'static str,
    /// Link to the full view.
    pub full_link: String,
    /// What the card leaves out (e.g. the records of a link-only card).
    pub note: String,
}

impl CardView {
    /// A card with its signature's state as the card shows it.
    pub fn of(
        card: Card,
        verification: &Verification,
        trusted: &TrustedKeys,
        full_link: String,
        note: &str,
    ) -> Self {
        let (status, state) = status(verification, trusted);
        CardView {
            card,
            status,
            state,
            full_link,
            note: note.into(),
        }
    }
}

/// The card of a hosted report. What is checked: the report's signature, over the
/// canonical form of its text; the card is then derived from the signed body — its pins,
/// its first step's figures, its counts — so it cannot say more than the report. What is
/// not: the recomputation of those figures from the records, which the full view (one
/// click away) does; the card says so. Only the pins and the summary are parsed, never the
/// records, so a card page needs none of the viewer's code. `full_link` opens the report
/// in the full viewer.
pub fn view_of_report(
    text: &str,
    trusted: &TrustedKeys,
    full_link: String,
) -> Result<CardView, String> {
    if text.len() > report::MAX_REPORT_BYTES {
        return Err(format!(
            "the report is {} bytes; a card opens reports up to {} bytes",
            text.len(),
            report::MAX_REPORT_BYTES
        ));
    }
    let doc = crate::jcs::canonicalize(text, &["signature"])
        .map_err(|e| format!("not a readable report: {e}"))?;
    match report::schema_of(&doc) {
        Some(s) if s == report::SCHEMA => {}
        Some(s) if s.starts_with("pinbench.") => {
            return Err(format!(
                "unsupported report schema {s:?}; this card reads {}",
                report::SCHEMA
            ))
        }
        _ => return Err("that file is not a pinbench report; open it in the full viewer".into()),
    }
    /// The signature block alone (the rest of the text is skipped, not parsed).
    #[derive(Deserialize)]
    struct Envelope {
        signature: Option<SignatureBlock>,
    }
    let envelope: Envelope = crate::json::from_str(text)?;
    let verification = match &envelope.signature {
        Some(block) => report::verify_block(block, &doc.bytes),
        None => Verification::Unsigned,
    };
    let body = doc
        .member("body")
        .and_then(|b| std::str::from_utf8(b).ok())
        .ok_or("the report has no body")?;
    let card = Card {
        schema: CARD_SCHEMA.into(),
        body: CardBody::Typed(Box::new(typed_body_of_text(body)?)),
        signature: None,
    };
    Ok(CardView::of(
        card,
        &verification,
        trusted,
        full_link,
        "figures as signed; the full view recomputes them from the records",
    ))
}

/// The card's typed body from a report body's canonical text: what [`Card::of`] derives
/// from the typed report, read without the records' types (they are only counted).
fn typed_body_of_text(body: &str) -> Result<TypedBody, String> {
    use serde::de::IgnoredAny;
    use serde_json::value::RawValue;
    /// The body in one pass: the digest's members as their (canonical) text, the notes,
    /// and the records only counted.
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        client: Option<Box<RawValue>>,
        #[serde(default)]
        config: Option<Box<RawValue>>,
        #[serde(default)]
        created: Option<Box<RawValue>>,
        #[serde(default)]
        probes: Option<Box<RawValue>>,
        #[serde(default)]
        slo: Option<Box<RawValue>>,
        #[serde(default)]
        summary: Option<Box<RawValue>>,
        #[serde(default)]
        tool: Option<Box<RawValue>>,
        #[serde(default)]
        notes: Vec<String>,
        records: Vec<IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct ClientHead {
        invalid: bool,
    }
    #[derive(Deserialize)]
    struct SummaryHead {
        steps: Vec<StepHead>,
    }
    #[derive(Deserialize)]
    struct StepHead {
        load: LoadStep,
        requests: RequestsHead,
        windows: Windows,
        decode_speed_milli: Option<Dist>,
        ttft_us: Option<Dist>,
        tpot_us: Option<Dist>,
        #[serde(default)]
        token_counts: std::collections::BTreeMap<String, u32>,
        #[serde(default)]
        reasoning: Option<CardReasoning>,
    }
    #[derive(Deserialize)]
    struct RequestsHead {
        measured: u32,
        #[serde(default)]
        measured_ok: u32,
    }
    fn typed<T: serde::de::DeserializeOwned>(
        member: &Option<Box<RawValue>>,
        name: &str,
    ) -> Result<T, String> {
        let text = member
            .as_ref()
            .ok_or_else(|| format!("the report body: missing field `{name}`"))?;
        crate::json::from_str(text.get()).map_err(|e| format!("the report body's {name}: {e}"))
    }
    let head: Head = crate::json::from_str(body).map_err(|e| format!("the report body: {e}"))?;
    // The digest's members as the signed text has them (the body is canonical text, so
    // each member's text is its canonical form); absent members are null, as
    // `report_digest` writes a typed `None`.
    let mut digested = Vec::with_capacity(4096);
    digested.push(b'{');
    for (i, (key, member)) in [
        ("client", &head.client),
        ("config", &head.config),
        ("created", &head.created),
        ("probes", &head.probes),
        ("slo", &head.slo),
        ("summary", &head.summary),
        ("tool", &head.tool),
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            digested.push(b',');
        }
        digested.extend_from_slice(format!("\"{key}\":").as_bytes());
        digested.extend_from_slice(member.as_ref().map_or("null", |m| m.get()).as_bytes());
    }
    digested.push(b'}');
    let config: RunConfig = typed(&head.config, "config")?;
    let client: ClientHead = typed(&head.client, "client")?;
    let summary: SummaryHead = typed(&head.summary, "summary")?;
    let first = summary.steps.first();
    Ok(TypedBody {
        report_digest: digest_of(&digested),
        created: typed(&head.created, "created")?,
        step: first.map_or_else(|| CardStep::planned(&config), |s| card_step!(s)),
        client_invalid: client.invalid,
        steps: summary.steps.len() as u32,
        records: head.records.len() as u32,
        config,
        notes: head.notes,
    })
}

impl CardStep {
    /// What a card shows for a report without steps: the first planned load, no figures.
    fn planned(config: &RunConfig) -> Self {
        CardStep {
            load: config
                .load
                .value
                .steps
                .first()
                .copied()
                .unwrap_or(LoadStep::Closed { concurrency: 1 }),
            measured: 0,
            windows: Windows::default(),
            decode_speed_milli: None,
            ttft_us: None,
            tpot_us: None,
            inexact_timing: None,
            reasoning: None,
        }
    }
}

/// The card carried by a link's fragment (`#card=…`), verified on its own.
pub fn view_of_fragment(
    fragment: &str,
    trusted: &TrustedKeys,
    full_link: String,
) -> Result<CardView, String> {
    let (card, verification) = Card::open_fragment(fragment).map_err(|e| e.to_string())?;
    Ok(CardView::of(
        card,
        &verification,
        trusted,
        full_link,
        "card only: the report's records travel separately",
    ))
}

/// The folder of the card page (`…/card/`) for the app page at `page` (origin + path, as
/// the location gives it: `…/pinbench/` or `…/pinbench/index.html`).
pub fn card_page_of_app(page: &str) -> String {
    format!("{}card/", folder(page))
}

/// The app's folder for the card page at `page` (`…/pinbench/card/` or
/// `…/pinbench/card/index.html` → `…/pinbench/`).
pub fn app_of_card_page(page: &str) -> String {
    let dir = folder(page);
    match dir.strip_suffix("card/") {
        Some(app) => app.to_owned(),
        None => dir.to_owned(),
    }
}

/// `page` up to and including its last `/`.
fn folder(page: &str) -> &str {
    match page.rfind('/') {
        Some(i) => &page[..=i],
        None => page,
    }
}

/// The card page's markup (inside its `<main>`), every text escaped.
pub fn page_html(v: &CardView) -> String {
    use std::fmt::Write as _;
    let b = &v.card.body;
    let mut s = format!(
        r#"<div class="card__head"><h1 class="card__model" data-testid="card-model">{}</h1><span class="card__sig card__sig--{st}" data-testid="card-sig" data-state="{st}">{}</span></div><div class="card__body"><dl class="card__pins" data-testid="card-pins">"#,
        escape(&b.model()),
        escape(&v.status),
        st = v.state,
    );
    for p in b.pins() {
        let _ = write!(
            s,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            escape(&p.label),
            escape(&p.value)
        );
    }
    s.push_str(r#"</dl><dl class="card__headline" data-testid="card-headline">"#);
    for h in b.headline() {
        let _ = write!(
            s,
            "<div><dt>{}</dt><dd><strong>{}</strong> <small>({})</small></dd></div>",
            escape(&h.label),
            escape(&h.value),
            escape(&h.window)
        );
    }
    s.push_str(r#"</dl></div><div class="card__foot">"#);
    if b.client_invalid() {
        s.push_str(r#"<span class="card__invalid">INVALID: the client limited this run · </span>"#);
    }
    if b.steps() > 1 {
        let _ = write!(s, "step 1 of {} · ", b.steps());
    }
    let (notes, records) = b.notes();
    if let Some(n) = records {
        let _ = write!(s, "{n} requests · ");
    }
    if !notes.is_empty() {
        let _ = write!(
            s,
            r#"<span data-testid="card-notes">{} · </span>"#,
            escape(&notes.join(" · "))
        );
    }
    let _ = write!(
        s,
        r#"<span>{}</span> <a data-testid="card-full-link" href="{}" target="_blank" rel="noopener">full view</a></div>"#,
        escape(&v.note),
        escape(&v.full_link)
    );
    s
}

/// The card page's markup for an error.
pub fn error_html(message: &str) -> String {
    format!(
        r#"<p class="card__error" role="alert" data-testid="card-error">{}</p>"#,
        escape(message)
    )
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
            r#"<text x="14" y="{}" font-family="system-ui,sans-serif" font-size="10" fill="{muted}">{}: <tspan fill="{fg}">{}</tspan></text>"#,
            Shortest(y),
            escape(&p.label),
            escape(&v)
        ));
        y += 16.0;
    }
    let mut y = 50.0;
    for h in card.body.headline().iter().take(4) {
        s.push_str(&format!(
            r#"<text x="330" y="{}" font-family="system-ui,sans-serif" font-size="10" fill="{muted}">{}</text><text x="330" y="{}" font-family="system-ui,sans-serif" font-size="14" font-weight="600" fill="{fg}">{} <tspan font-size="9" fill="{muted}">({})</tspan></text>"#,
            Shortest(y),
            escape(&h.label),
            Shortest(y + 16.0),
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

#[cfg(test)]
mod tests {
    use super::*;

    const REPORTS: [(&str, &str); 3] = [
        (
            "signed",
            include_str!("../../../../tests/fixtures/report_signed.json"),
        ),
        (
            "frozen",
            include_str!("../../../../tests/fixtures/report_frozen_2026-12-01.json"),
        ),
        (
            "card v1",
            include_str!("../../../../tests/fixtures/report_card_v1.json"),
        ),
    ];

    /// The card page's reading of a hosted report (canonical text, no records parsed) is
    /// the card the viewer derives from the typed report, with the same signature state.
    #[test]
    fn a_hosted_report_gives_the_viewers_card() {
        let none = TrustedKeys::default();
        for (name, text) in REPORTS {
            let opened = report::open(text).expect("opens");
            let view = view_of_report(text, &none, "app/".into()).expect(name);
            let figures = opened.report.body.figures().expect("figures");
            let want = Card::of(&opened.report, &figures).expect("derives");
            assert_eq!(view.card.body, want.body, "{name}");
            assert_eq!(
                view.state,
                SigState::of(&opened.verification, &none).id(),
                "{name}"
            );
            assert_eq!(view.state, "unknown-key", "{name}");
            assert!(view.note.contains("recomputes"), "{name}");
            assert_eq!(
                view.card.body.notes().1,
                Some(opened.report.body.records.len() as u32)
            );
            let html = page_html(&view);
            assert!(html.contains("data-testid=\"card-headline\"") && html.contains("app/"));
        }
    }

    #[test]
    fn a_modified_hosted_report_says_so() {
        let (_, text) = REPORTS[0];
        let opened = report::open(text).expect("opens");
        let ttft = opened.report.body.figures().expect("figures").steps[0]
            .ttft_us
            .expect("ttft")
            .p50;
        let tampered = text.replacen(
            &format!("\"p50\":{ttft}"),
            &format!("\"p50\":{}", ttft + 1),
            1,
        );
        assert_ne!(tampered, text, "the fixture has the figure to change");
        let view = view_of_report(&tampered, &TrustedKeys::default(), String::new())
            .expect("still a report");
        assert_eq!(view.state, "invalid");
        assert_eq!(view.status, "invalid: modified");
    }

    #[test]
    fn what_is_not_a_report_is_refused_plainly() {
        let none = TrustedKeys::default();
        for (text, says) in [
            ("{", "not a readable report"),
            ("{\"schema\":\"x\"}", "not a pinbench report"),
            (
                "{\"schema\":\"pinbench.report/v9\"}",
                "unsupported report schema",
            ),
            ("{\"schema\":\"pinbench.report/v1\"}", "no body"),
            (
                "{\"schema\":\"pinbench.report/v1\",\"body\":{}}",
                "the report body",
            ),
        ] {
            let e = view_of_report(text, &none, String::new()).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_card_page_and_the_app_find_each_other() {
        for app in [
            "https://h/tools/pinbench/",
            "https://h/tools/pinbench/index.html",
        ] {
            assert_eq!(card_page_of_app(app), "https://h/tools/pinbench/card/");
        }
        for card in [
            "https://h/tools/pinbench/card/",
            "https://h/tools/pinbench/card/index.html",
        ] {
            assert_eq!(app_of_card_page(card), "https://h/tools/pinbench/");
        }
        assert_eq!(
            app_of_card_page("http://127.0.0.1:8080/card/"),
            "http://127.0.0.1:8080/"
        );
    }

    /// A link's card verifies from its own text, as `Card::verify` does from the type.
    #[test]
    fn a_fragment_card_verifies_from_its_text() {
        let (_, text) = REPORTS[0];
        let card = report::open(text)
            .expect("opens")
            .report
            .card
            .expect("card");
        let frag = card.to_fragment().expect("encodes");
        let (back, v) = Card::open_fragment(&frag).expect("decodes");
        assert_eq!(back, card);
        assert_eq!(v, card.verify());
        assert!(matches!(v, Verification::Valid { .. }));
        let view = view_of_fragment(&frag, &TrustedKeys::default(), String::new()).expect("view");
        assert_eq!(view.state, "unknown-key");
    }
}
