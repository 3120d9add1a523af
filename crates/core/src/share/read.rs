//! Reading the documents that carry request records — a report, a checkpoint, the run
//! worker's result — through JSON trees, with one small reader per type (as
//! `core::pins::read` reads a configuration).
//!
//! Why not `#[derive(Deserialize)]`: serde's derived readers of a report's types were
//! about 25 KB of the app's wasm after gzip; these readers are a few. A document is read
//! member by member ([`Members`]): its `records` one record at a time, each through its
//! own small tree, so a 10,000-request report never becomes one tree; the other members
//! are trees. The JSON accepted is the same as serde's derived readers accept, and so are
//! the refusals — a missing or unknown field, an unknown `kind` or variant, a value of the
//! wrong type or out of range — each named with its path (`records: [3]: outcome: unknown
//! variant …`, `body: merged: common_us: invalid length 1, …`). `tests/report_reader.rs` checks
//! this against serde's derived readers over the fixtures' documents, valid and mutated.
//!
//! Two differences, as for the configuration: inside a record or a tree member, a `Value`
//! keeps the last of two equal keys, where serde refuses them (reports are refused for
//! duplicate keys before they are read — their canonical form is taken first; checkpoints
//! and worker messages are written by this program); and a struct written as an array of
//! its fields in order (serde's positional form, which nothing writes) is refused.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::card::{self, Card};
use crate::dialect::{ServerTimings, Usage};
use crate::merge::{MergeInfo, MergeSource};
use crate::metrics::{ClientEnv, ClientVerdict, RunHost, Slo};
use crate::pins::read::{
    self as r, boolean, defaulted, field, integers, invalid, list, object, optional, pair, string,
    uint32, uint64, R,
};
use crate::record::{chunk_codec, Anomalies, Outcome, RequestRecord, TokenCounts, WireTiming};
use crate::report::{
    Checkpoint, ProbeSnapshot, Report, ReportBody, SignatureBlock, StoredSummary, Tool,
};
use crate::viewer::{TrustedKey, TrustedKeys};

/// A JSON object read member by member: `records` streamed record by record, `body` (a
/// report's) read the same way, `summary` kept as the file's text, every other member kept
/// as a tree. Duplicate members are refused.
#[derive(Debug, Default)]
pub struct Members {
    /// The `records` member, read.
    pub records: Option<Vec<RequestRecord>>,
    /// The `body` member, read the same way.
    pub body: Option<Box<Members>>,
    /// The `summary` member's text.
    pub summary: Option<Box<serde_json::value::RawValue>>,
    /// Every other member.
    pub rest: Map<String, Value>,
}

impl Members {
    /// Refuses a member not in `fields`.
    pub fn only(&self, fields: &[&str]) -> R<()> {
        let streamed = [
            ("records", self.records.is_some()),
            ("body", self.body.is_some()),
            ("summary", self.summary.is_some()),
        ];
        let extra = streamed
            .iter()
            .filter(|(_, present)| *present)
            .map(|(k, _)| *k)
            .chain(self.rest.keys().map(String::as_str))
            .find(|k| !fields.contains(k));
        match extra {
            Some(k) => Err(r::unknown_field(k, fields)),
            None => Ok(()),
        }
    }

    /// The `records` member.
    pub fn take_records(&mut self) -> R<Vec<RequestRecord>> {
        self.records
            .take()
            .ok_or_else(|| "missing field `records`".to_owned())
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut m = Members::default();
        while let Some(key) = map.next_key::<String>()? {
            let dup = match key.as_str() {
                "records" => m.records.is_some(),
                "body" => m.body.is_some(),
                "summary" => m.summary.is_some(),
                k => m.rest.contains_key(k),
            };
            if dup {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            match key.as_str() {
                "records" => m.records = Some(map.next_value::<Records>()?.0),
                "body" => m.body = Some(Box::new(map.next_value::<Members>()?)),
                "summary" => m.summary = Some(map.next_value()?),
                _ => {
                    let v = map.next_value::<Value>()?;
                    m.rest.insert(key, v);
                }
            }
        }
        Ok(m)
    }
}

/// A `records` array, each element read through its own tree by [`record`].
struct Records(Vec<RequestRecord>);

impl<'de> Deserialize<'de> for Records {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(RecordsVisitor)
    }
}

struct RecordsVisitor;

impl<'de> Visitor<'de> for RecordsVisitor {
    type Value = Records;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Records, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element::<Value>()? {
            let rec = record(&v)
                .map_err(|e| de::Error::custom(format_args!("records: [{}]: {e}", out.len())))?;
            out.push(rec);
        }
        Ok(Records(out))
    }
}

/// A JSON array of records (a stored checkpoint's part).
pub fn records_json(text: &str) -> R<Vec<RequestRecord>> {
    serde_json::from_str::<Records>(text)
        .map(|r| r.0)
        .map_err(|e| e.to_string())
}

/// A report document.
pub fn report(mut m: Members) -> R<Report> {
    m.only(&["schema", "body", "card", "signature"])?;
    let b = m.body.take().ok_or("missing field `body`")?;
    Ok(Report {
        schema: field(&m.rest, "schema", string)?,
        body: body(*b).map_err(|e| format!("body: {e}"))?,
        card: optional(&m.rest, "card", card)?,
        signature: optional(&m.rest, "signature", signature_block)?,
    })
}

fn body(mut m: Members) -> R<ReportBody> {
    m.only(&[
        "tool", "created", "config", "slo", "probes", "client", "records", "summary", "notes",
        "merged",
    ])?;
    let records = m.take_records()?;
    let summary = m.summary.take().ok_or("missing field `summary`")?;
    let m = &m.rest;
    Ok(ReportBody {
        tool: field(m, "tool", |v| {
            let m = object(v, &["name", "version"])?;
            Ok(Tool {
                name: field(m, "name", string)?,
                version: field(m, "version", string)?,
            })
        })?,
        created: field(m, "created", string)?,
        config: field(m, "config", r::run_config)?,
        slo: optional(m, "slo", slo)?,
        probes: field(m, "probes", |v| list(v, probe))?,
        client: field(m, "client", client_verdict)?,
        records,
        summary: StoredSummary::from_raw(summary),
        notes: defaulted(m, "notes", |v| list(v, string))?,
        merged: optional(m, "merged", merge_info)?,
    })
}

/// A checkpoint document.
pub fn checkpoint(mut m: Members) -> R<Checkpoint> {
    m.only(&["created", "config", "env", "planned", "records", "dropped"])?;
    let records = m.take_records()?;
    let m = &m.rest;
    Ok(Checkpoint {
        created: field(m, "created", string)?,
        config: field(m, "config", r::run_config)?,
        env: field(m, "env", client_env)?,
        planned: optional(m, "planned", uint32)?,
        records,
        dropped: defaulted(m, "dropped", uint32)?,
    })
}

fn uint16(v: &Value) -> R<u16> {
    v.as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| invalid(v, "u16"))
}

fn slo(v: &Value) -> R<Slo> {
    let m = object(v, &["ttft_us", "tpot_us", "e2e_us"])?;
    Ok(Slo {
        ttft_us: optional(m, "ttft_us", uint64)?,
        tpot_us: optional(m, "tpot_us", uint64)?,
        e2e_us: optional(m, "e2e_us", uint64)?,
    })
}

fn probe(v: &Value) -> R<ProbeSnapshot> {
    let m = object(v, &["url", "status", "body"])?;
    Ok(ProbeSnapshot {
        url: field(m, "url", string)?,
        status: field(m, "status", uint16)?,
        body: field(m, "body", string)?,
    })
}

fn client_verdict(v: &Value) -> R<ClientVerdict> {
    let m = object(v, &["env", "protocols", "invalid", "findings"])?;
    Ok(ClientVerdict {
        env: field(m, "env", client_env)?,
        protocols: field(m, "protocols", |v| {
            let o = v.as_object().ok_or_else(|| invalid(v, "a map"))?;
            let mut out = BTreeMap::new();
            for (k, x) in o {
                out.insert(k.clone(), uint32(x).map_err(|e| format!("{k}: {e}"))?);
            }
            Ok(out)
        })?,
        invalid: field(m, "invalid", boolean)?,
        findings: field(m, "findings", |v| list(v, string))?,
    })
}

/// A client environment (`ClientEnv`).
pub fn client_env(v: &Value) -> R<ClientEnv> {
    let m = object(
        v,
        &[
            "timer_resolution_us",
            "cross_origin_isolated",
            "event_loop_lag_p99_us",
            "event_loop_lag_max_us",
            "host",
            "clock_epoch_us",
        ],
    )?;
    Ok(ClientEnv {
        timer_resolution_us: field(m, "timer_resolution_us", uint64)?,
        cross_origin_isolated: field(m, "cross_origin_isolated", boolean)?,
        event_loop_lag_p99_us: field(m, "event_loop_lag_p99_us", uint64)?,
        event_loop_lag_max_us: field(m, "event_loop_lag_max_us", uint64)?,
        host: optional(m, "host", |v| {
            r::unit(
                v,
                &[
                    ("worker", RunHost::Worker),
                    ("main_thread", RunHost::MainThread),
                    ("native", RunHost::Native),
                ],
            )
        })?,
        clock_epoch_us: optional(m, "clock_epoch_us", uint64)?,
    })
}

fn merge_info(v: &Value) -> R<MergeInfo> {
    let m = object(
        v,
        &[
            "sources",
            "common_us",
            "common_output_tokens",
            "common_aggregate_output_milli",
        ],
    )?;
    Ok(MergeInfo {
        sources: field(m, "sources", |v| list(v, merge_source))?,
        common_us: field(m, "common_us", |v| pair(v, uint64))?,
        common_output_tokens: field(m, "common_output_tokens", uint64)?,
        common_aggregate_output_milli: field(m, "common_aggregate_output_milli", uint64)?,
    })
}

fn merge_source(v: &Value) -> R<MergeSource> {
    let m = object(
        v,
        &[
            "title",
            "digest",
            "key_id",
            "created",
            "records",
            "measured_us",
        ],
    )?;
    Ok(MergeSource {
        title: field(m, "title", string)?,
        digest: field(m, "digest", string)?,
        key_id: field(m, "key_id", string)?,
        created: field(m, "created", string)?,
        records: field(m, "records", uint32)?,
        measured_us: field(m, "measured_us", |v| pair(v, uint64))?,
    })
}

/// A card document (a report's, or a link's).
pub fn card(v: &Value) -> R<Card> {
    let m = object(v, &["schema", "body", "signature"])?;
    Ok(Card {
        schema: field(m, "schema", string)?,
        body: field(m, "body", card::card_body)?,
        signature: optional(m, "signature", signature_block)?,
    })
}

/// A signature block.
pub fn signature_block(v: &Value) -> R<SignatureBlock> {
    let m = object(v, &["alg", "key_id", "public_key", "signature"])?;
    Ok(SignatureBlock {
        alg: field(m, "alg", string)?,
        key_id: field(m, "key_id", string)?,
        public_key: field(m, "public_key", string)?,
        signature: field(m, "signature", string)?,
    })
}

/// One request record.
pub fn record(v: &Value) -> R<RequestRecord> {
    let m = object(
        v,
        &[
            "index",
            "step",
            "prompt_tokens_requested",
            "output_tokens_requested",
            "t_send_us",
            "t_intended_us",
            "held_by_cap",
            "t_headers_us",
            "t_done_us",
            "status",
            "chunks",
            "token_counts",
            "deltas",
            "usage",
            "finish_reason",
            "response_id",
            "server_timings",
            "protocol",
            "wire",
            "outcome",
            "anomalies",
        ],
    )?;
    Ok(RequestRecord {
        index: field(m, "index", uint32)?,
        step: field(m, "step", uint32)?,
        prompt_tokens_requested: field(m, "prompt_tokens_requested", uint32)?,
        output_tokens_requested: field(m, "output_tokens_requested", uint32)?,
        t_send_us: field(m, "t_send_us", uint64)?,
        t_intended_us: optional(m, "t_intended_us", uint64)?,
        held_by_cap: defaulted(m, "held_by_cap", boolean)?,
        t_headers_us: optional(m, "t_headers_us", uint64)?,
        t_done_us: optional(m, "t_done_us", uint64)?,
        status: optional(m, "status", uint16)?,
        chunks: field(m, "chunks", |v| {
            chunk_codec::decode(v.as_str().ok_or_else(|| invalid(v, "a string"))?)
        })?,
        token_counts: field(m, "token_counts", |v| {
            r::unit(
                v,
                &[
                    ("exact_continuous_usage", TokenCounts::ExactContinuousUsage),
                    (
                        "exact_deltas_match_usage",
                        TokenCounts::ExactDeltasMatchUsage,
                    ),
                    ("unverified_no_usage", TokenCounts::UnverifiedNoUsage),
                    ("estimated_coalesced", TokenCounts::EstimatedCoalesced),
                    ("exact_finish_token", TokenCounts::ExactFinishToken),
                    ("deltas_exceed_usage", TokenCounts::DeltasExceedUsage),
                ],
            )
        })?,
        deltas: field(m, "deltas", uint32)?,
        usage: optional(m, "usage", |v| {
            let m = object(v, &["prompt_tokens", "completion_tokens", "cached_tokens"])?;
            Ok(Usage {
                prompt_tokens: field(m, "prompt_tokens", uint64)?,
                completion_tokens: field(m, "completion_tokens", uint64)?,
                cached_tokens: optional(m, "cached_tokens", uint64)?,
            })
        })?,
        finish_reason: optional(m, "finish_reason", string)?,
        response_id: optional(m, "response_id", string)?,
        server_timings: optional(m, "server_timings", |v| {
            let n = integers(v, &["prompt_n", "prompt_us", "predicted_n", "predicted_us"])?;
            Ok(ServerTimings {
                prompt_n: n[0],
                prompt_us: n[1],
                predicted_n: n[2],
                predicted_us: n[3],
            })
        })?,
        protocol: optional(m, "protocol", string)?,
        wire: optional(m, "wire", |v| {
            let n = integers(
                v,
                &[
                    "connect_start_us",
                    "request_start_us",
                    "response_start_us",
                    "response_end_us",
                ],
            )?;
            Ok(WireTiming {
                connect_start_us: n[0],
                request_start_us: n[1],
                response_start_us: n[2],
                response_end_us: n[3],
            })
        })?,
        outcome: field(m, "outcome", outcome)?,
        anomalies: defaulted(m, "anomalies", anomalies)?,
    })
}

fn outcome(v: &Value) -> R<Outcome> {
    let (kind, m) = r::tagged(
        v,
        &[
            "ok",
            "http",
            "network",
            "stream_error",
            "stalled",
            "aborted",
            "truncated",
            "not_streaming",
        ],
    )?;
    let message = |m: &Map<String, Value>| field(m, "message", string);
    Ok(match kind {
        1 => {
            let m = r::variant(m, &["status", "message"])?;
            Outcome::Http {
                status: field(m, "status", uint16)?,
                message: message(m)?,
            }
        }
        2 => Outcome::Network {
            message: message(r::variant(m, &["message"])?)?,
        },
        3 => Outcome::StreamError {
            message: message(r::variant(m, &["message"])?)?,
        },
        4 => Outcome::Stalled {
            timeout_us: field(r::variant(m, &["timeout_us"])?, "timeout_us", uint64)?,
        },
        k => {
            r::variant(m, &[])?;
            match k {
                0 => Outcome::Ok,
                5 => Outcome::Aborted,
                6 => Outcome::Truncated,
                _ => Outcome::NotStreaming,
            }
        }
    })
}

fn anomalies(v: &Value) -> R<Anomalies> {
    let m = object(
        v,
        &[
            "invalid_json",
            "unexpected_shape",
            "invalid_utf8_lines",
            "line_too_long",
            "missing_done",
            "events_after_done",
            "truncated_event",
            "bad_optional_fields",
        ],
    )?;
    Ok(Anomalies {
        invalid_json: defaulted(m, "invalid_json", uint32)?,
        unexpected_shape: defaulted(m, "unexpected_shape", uint32)?,
        invalid_utf8_lines: defaulted(m, "invalid_utf8_lines", uint32)?,
        line_too_long: defaulted(m, "line_too_long", uint32)?,
        missing_done: defaulted(m, "missing_done", boolean)?,
        events_after_done: defaulted(m, "events_after_done", uint32)?,
        truncated_event: defaulted(m, "truncated_event", boolean)?,
        bad_optional_fields: defaulted(m, "bad_optional_fields", uint32)?,
    })
}

/// The user's trusted keys, as this browser stores them.
pub fn trusted_keys(v: &Value) -> R<TrustedKeys> {
    // `TrustedKeys` denies no unknown member; each key does.
    let m = v.as_object().ok_or_else(|| invalid(v, "an object"))?;
    Ok(TrustedKeys {
        keys: field(m, "keys", |v| {
            list(v, |v| {
                let m = object(v, &["name", "public_key", "key_id"])?;
                Ok(TrustedKey {
                    name: field(m, "name", string)?,
                    public_key: field(m, "public_key", string)?,
                    key_id: field(m, "key_id", string)?,
                })
            })
        })?,
    })
}
