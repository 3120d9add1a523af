//! The card document's types: what a card signs (typed since v2, display text in v1) and
//! the document that carries it. Kept apart from `share::card` (which derives a card from
//! a report, checks and renders it) because a report carries its card: the report's types
//! need these, and `share::card` needs the report's.

use serde::{Deserialize, Serialize};

use crate::metrics::{Dist, Windows};
use crate::pins::{LoadStep, RunConfig};
use crate::sign::SignatureBlock;

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
    /// Measured requests whose per-token timing was estimated or unverified, when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inexact_timing: Option<InexactTiming>,
    /// The step's reasoning, when the model reasoned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<CardReasoning>,
}

/// What a card says of a step's reasoning (how it was shown is the reasoning pin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardReasoning {
    /// Reasoning tokens counted.
    pub tokens: u64,
    /// Of those, never timed (outside TPOT).
    pub untimed_tokens: u64,
    /// Requests whose reasoning tokens are unknown.
    pub unknown: u32,
    /// Time to the first answer token, µs.
    pub ttfa_us: Option<Dist>,
}

/// How many of a step's completed measured requests had their per-token timing estimated
/// or unverified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InexactTiming {
    /// Requests with inexact per-token timing.
    pub requests: u32,
    /// Completed measured requests.
    pub of: u32,
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

/// A card's signed content, typed (v2) or legacy text (v1): read as the typed form when it
/// parses as one, else as the legacy form; when neither does, the refusal gives both
/// forms' reasons.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CardBody {
    /// `pinbench.card/v2`.
    Typed(Box<TypedBody>),
    /// `pinbench.card/v1`.
    Legacy(LegacyBody),
}

impl<'de> Deserialize<'de> for CardBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Box::<serde_json::value::RawValue>::deserialize(d)?;
        match crate::json::from_str::<TypedBody>(text.get()) {
            Ok(t) => Ok(CardBody::Typed(Box::new(t))),
            Err(typed) => crate::json::from_str::<LegacyBody>(text.get())
                .map(CardBody::Legacy)
                .map_err(|legacy| {
                    serde::de::Error::custom(format_args!(
                        "not a card body: as v2, {typed}; as v1, {legacy}"
                    ))
                }),
        }
    }
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
