//! Per-request records: what the client observed for one request, with its own clock
//! (integer µs), and the accumulator that builds a record from timed stream bytes.
//!
//! Token accounting (docs/DEFINITIONS.md): a *token chunk* is a chunk that carries
//! generated text or, with continuous usage, raises `completion_tokens`. Role-only, empty,
//! finish-only and usage-only chunks are not token chunks, with one exception below.
//!
//! Every chunk is kept as an observation while the stream runs; the token chunks are
//! decided once, at the end ([`RequestTimeline::finish`]):
//! - **Continuous usage** is inferred only from usage on a chunk that has choices and no
//!   `finish_reason` (a mid-stream chunk), or from usage on two or more chunks with
//!   different `completion_tokens`. Usage on the final token's chunk (older TGI) or on a
//!   usage-only final chunk is *final* usage. With continuous usage each chunk carries
//!   the increase of `completion_tokens` it brought ([`TokenCounts::ExactContinuousUsage`]).
//! - Otherwise each text delta counts one token, reconciled with the final usage `U`
//!   against the `K` text deltas:
//!   - `U = K`: exact ([`TokenCounts::ExactDeltasMatchUsage`]);
//!   - `U = K + 1` and the stream ended with a choice chunk that has a `finish_reason`
//!     and no text (the EOS token streamed empty, as TGI and vLLM chat do): that chunk is
//!     the place of the last token ([`TokenCounts::ExactFinishToken`]);
//!   - `U > K` with a single text chunk: it carried all `U` tokens, exact;
//!   - `U > K` otherwise (the server coalesces tokens, e.g. speculative decoding): the
//!     first text chunk keeps one token (a prefill yields one), every other text chunk
//!     gets one, and the remaining `U − K` are spread evenly over the chunks after the
//!     first, later chunks taking the remainder ([`TokenCounts::EstimatedCoalesced`]);
//!   - `U < K` (the server split tokens over chunks, or miscounted): every text chunk
//!     keeps one token, since a chunk that carried text is never a zero-token chunk; the
//!     total stays the server's ([`TokenCounts::DeltasExceedUsage`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dialect::{self, Dialect, ServerTimings, StreamEvent, Usage};
use crate::sse::{SseDecoder, SseError};
use crate::vendor::StreamDecoder;

/// One token-carrying chunk: its arrival time and how many tokens it carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenChunk {
    /// Arrival time, client clock, µs.
    pub t_us: u64,
    /// Tokens carried (≥ 1).
    pub tokens: u32,
}

/// How the per-chunk token counts were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenCounts {
    /// Usage in every chunk (vLLM `continuous_usage_stats`): exact.
    ExactContinuousUsage,
    /// One per delta, and the total equals `usage.completion_tokens`: exact.
    ExactDeltasMatchUsage,
    /// One per delta; the server sent no usage to check against.
    UnverifiedNoUsage,
    /// Deltas disagreed with usage (the server coalesces tokens): the total is the
    /// server's, the per-chunk split is estimated (first chunk one token, the rest evenly).
    EstimatedCoalesced,
    /// One per delta plus one token on the trailing empty finish chunk (an EOS token
    /// counted in usage but streamed without text): the total equals usage, exact.
    ExactFinishToken,
    /// More text deltas than `usage.completion_tokens`: one token per delta is kept
    /// (a chunk with text is never a zero-token chunk); the total is the server's.
    DeltasExceedUsage,
    /// A reasoning model whose usage counts reasoning and answer together, and whose
    /// reasoning was not streamed token for token: the answer's tokens are one per delta,
    /// unverified (the server's total holds reasoning the stream did not time).
    UnverifiedReasoningSplit,
}

impl TokenCounts {
    /// The stable name used in reports and CSV (the serde name).
    pub fn name(self) -> &'static str {
        match self {
            TokenCounts::ExactContinuousUsage => "exact_continuous_usage",
            TokenCounts::ExactDeltasMatchUsage => "exact_deltas_match_usage",
            TokenCounts::UnverifiedNoUsage => "unverified_no_usage",
            TokenCounts::EstimatedCoalesced => "estimated_coalesced",
            TokenCounts::ExactFinishToken => "exact_finish_token",
            TokenCounts::DeltasExceedUsage => "deltas_exceed_usage",
            TokenCounts::UnverifiedReasoningSplit => "unverified_reasoning_split",
        }
    }

    /// Whether per-chunk token counts are exact.
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            TokenCounts::ExactContinuousUsage
                | TokenCounts::ExactDeltasMatchUsage
                | TokenCounts::ExactFinishToken
        )
    }
}

/// How a request ended. Written as `{"kind": …}` with the kind's own fields; read
/// through [`OutcomeFields`] (serde's internally tagged reader buffers every field of
/// every record and cost each wasm bundle 16 KB), with the same rule: exactly the kind's
/// fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "OutcomeFields"
)]
pub enum Outcome {
    /// Completed normally.
    Ok {},
    /// A non-2xx HTTP status (e.g. 401, 429, 500).
    Http {
        /// The status code.
        status: u16,
        /// The server's error message, if it sent one.
        message: String,
    },
    /// The request failed below HTTP (unreachable, CORS refusal, connection reset).
    Network {
        /// What the browser said.
        message: String,
    },
    /// The server sent an error object inside the stream.
    StreamError {
        /// The error message.
        message: String,
    },
    /// No byte arrived for longer than the stall timeout.
    Stalled {
        /// The timeout that fired, µs.
        timeout_us: u64,
    },
    /// The user stopped the run while the request was in flight.
    Aborted {},
    /// The stream ended without a finish reason or `[DONE]`.
    Truncated {},
    /// The server replied without streaming (not `text/event-stream`).
    NotStreaming {},
}

/// An outcome as written: its kind and every field any kind has.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeFields {
    kind: String,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    timeout_us: Option<u64>,
}

impl TryFrom<OutcomeFields> for Outcome {
    type Error = String;

    fn try_from(f: OutcomeFields) -> Result<Self, String> {
        let (kind, status, message, timeout) = (f.kind.as_str(), f.status, f.message, f.timeout_us);
        Ok(match (kind, status, message, timeout) {
            ("ok", None, None, None) => Outcome::Ok {},
            ("http", Some(status), Some(message), None) => Outcome::Http { status, message },
            ("network", None, Some(message), None) => Outcome::Network { message },
            ("stream_error", None, Some(message), None) => Outcome::StreamError { message },
            ("stalled", None, None, Some(timeout_us)) => Outcome::Stalled { timeout_us },
            ("aborted", None, None, None) => Outcome::Aborted {},
            ("truncated", None, None, None) => Outcome::Truncated {},
            ("not_streaming", None, None, None) => Outcome::NotStreaming {},
            _ => {
                return Err(crate::json::kind_error(
                    "an outcome",
                    kind,
                    &[
                        ("ok", &[]),
                        ("http", &["status", "message"]),
                        ("network", &["message"]),
                        ("stream_error", &["message"]),
                        ("stalled", &["timeout_us"]),
                        ("aborted", &[]),
                        ("truncated", &[]),
                        ("not_streaming", &[]),
                    ],
                ))
            }
        })
    }
}

impl Outcome {
    /// Short stable name of the outcome kind (used to count errors by kind).
    pub fn kind(&self) -> String {
        match self {
            Outcome::Ok {} => "ok".into(),
            Outcome::Http { status, .. } => format!("http_{status}"),
            Outcome::Network { .. } => "network".into(),
            Outcome::StreamError { .. } => "stream_error".into(),
            Outcome::Stalled { .. } => "stalled".into(),
            Outcome::Aborted {} => "aborted".into(),
            Outcome::Truncated {} => "truncated".into(),
            Outcome::NotStreaming {} => "not_streaming".into(),
        }
    }

    /// Whether the request completed normally.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok {})
    }
}

/// Non-fatal irregularities in one response. None of them is silent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Anomalies {
    /// Chunks whose data was not JSON (their content is lost; usage reconciliation shows
    /// whether tokens were in them).
    pub invalid_json: u32,
    /// Chunks of an unexpected shape.
    pub unexpected_shape: u32,
    /// SSE lines that were not UTF-8.
    pub invalid_utf8_lines: u32,
    /// SSE lines over the length limit (discarded).
    pub line_too_long: u32,
    /// The stream ended without `data: [DONE]`.
    pub missing_done: bool,
    /// Events received after `[DONE]`.
    pub events_after_done: u32,
    /// The stream ended inside an event; its data was still parsed.
    pub truncated_event: bool,
    /// Optional fields of the wrong type (e.g. `timings.predicted_ms: null`, a numeric
    /// `id`): the field is ignored, the chunk's text is kept.
    pub bad_optional_fields: u32,
}

impl Anomalies {
    /// Whether nothing irregular was seen.
    pub fn is_clean(&self) -> bool {
        *self == Anomalies::default()
    }
}

/// Browser Resource Timing for the request, on the same clock as `t_send_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireTiming {
    /// When the browser started connecting (equals `request_start_us` on a reused connection).
    pub connect_start_us: u64,
    /// When the request went on the wire (`requestStart`).
    pub request_start_us: u64,
    /// When the first response byte arrived (`responseStart`).
    pub response_start_us: u64,
    /// When the last response byte arrived in the network stack (`responseEnd`); 0 when
    /// the entry had not completed.
    pub response_end_us: u64,
}

/// How a reasoning model's reasoning reached the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningShown {
    /// Every reasoning token was streamed (its deltas match its count, or no count was
    /// given): the reasoning tokens are the first `in_chunks` token chunks.
    Tokens,
    /// Text about the reasoning was streamed (a summary, or deltas that do not match
    /// the server's count): its times are kept, its tokens are not timed.
    Summary,
    /// Nothing was shown but the stream or usage says the model reasoned.
    Hidden,
}

/// A reasoning model's reasoning in one request: how many tokens, how it was shown, and
/// where it sits among the token chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningRecord {
    /// Reasoning tokens: the server's count, else the stream's when every token was
    /// streamed and the total matches usage; absent when unknown (never guessed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// How the reasoning was shown.
    pub shown: ReasoningShown,
    /// Reasoning text deltas received.
    pub deltas: u32,
    /// Leading token chunks that are reasoning (only when `shown` is `tokens`).
    pub in_chunks: u32,
    /// First reasoning text seen (any form), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_first_us: Option<u64>,
}

/// Everything the client observed for one request. Absent optional fields and clean
/// anomalies are left out of the JSON (a third of a record's size).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    /// Dispatch order within the run (0-based, over all sweep steps).
    pub index: u32,
    /// Sweep step (0 when the run is not a sweep).
    pub step: u32,
    /// Prompt tokens this request was built to have.
    pub prompt_tokens_requested: u32,
    /// Output tokens requested (`max_tokens`).
    pub output_tokens_requested: u32,
    /// Just before `fetch`, µs.
    pub t_send_us: u64,
    /// Open loop: when the request's arrival was due (≤ `t_send_us`). Latency from it
    /// includes the time the client held the request back (no coordinated omission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_intended_us: Option<u64>,
    /// Open loop: the in-flight cap held this arrival back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_by_cap: bool,
    /// Response headers received, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_headers_us: Option<u64>,
    /// Stream ended (or failed), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_done_us: Option<u64>,
    /// HTTP status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Token chunks in arrival order (stored compactly, see [`chunk_codec`]).
    #[serde(with = "chunk_codec")]
    pub chunks: Vec<TokenChunk>,
    /// How exact the per-chunk counts are.
    pub token_counts: TokenCounts,
    /// Answer text deltas received, before any reconciliation (reasoning deltas are
    /// counted in `reasoning.deltas`).
    pub deltas: u32,
    /// Server-reported usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The finish reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The response id the server gave (chunk `id`), to correlate with its logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The server's own timings (llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<ServerTimings>,
    /// `nextHopProtocol` (`h2`, `http/1.1`), when the browser exposes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Resource Timing, when the browser exposes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireTiming>,
    /// How the request ended.
    pub outcome: Outcome,
    /// Irregularities.
    #[serde(default, skip_serializing_if = "Anomalies::is_clean")]
    pub anomalies: Anomalies,
    /// Reasoning, when the model reasoned (absent: no sign of reasoning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningRecord>,
    /// The server refused or cut this request for its rate or load limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<Throttle>,
    /// Where the request sits in its conversation (multi-turn runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnOf>,
}

/// A request's place in a multi-turn conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnOf {
    /// The conversation, numbered from 0 in the order they started.
    pub conversation: u32,
    /// The turn, from 0: turn `k` sent the `k` earlier messages and their answers.
    pub turn: u32,
}

/// Answer text a timeline keeps for the next turn of its conversation, at most (longer
/// answers are cut: the next turn's prompt is then shorter than the history was).
pub const MAX_KEPT_TEXT: usize = 4 << 20;

/// A throttled answer: the server refused or cut a request for its rate or load limits
/// (HTTP 429, 529 or 503, or an overloaded / rate-limit error event in the stream), with
/// what it said about when to come back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throttle {
    /// What said so: `http_429`, `http_529`, `http_503`, or the stream error's type
    /// (`overloaded_error`, `rate_limit_error`, `RESOURCE_EXHAUSTED`, …).
    pub signal: String,
    /// `Retry-After` (seconds; an HTTP date is not read) or `retry-after-ms`, ms, when
    /// the host could read it (a browser reads only the headers a server exposes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The rate-limit headers the host could read (`x-ratelimit-*`,
    /// `anthropic-ratelimit-*`, `ratelimit*`, `retry-after*`), values cut to 128 bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// Stream error types that mean the server's limits, not the request, ended it.
const THROTTLE_ERRORS: &[&str] = &[
    "overloaded_error",
    "rate_limit_error",
    "rate_limit_exceeded",
    "RESOURCE_EXHAUSTED",
    "UNAVAILABLE",
    "insufficient_quota",
];

/// HTTP statuses that mean the server's rate or load limits.
pub const THROTTLE_STATUSES: &[u16] = &[429, 503, 529];

/// Whether a response header is one a throttled answer keeps: `retry-after`,
/// `retry-after-ms`, `x-ratelimit-*`, `anthropic-ratelimit-*`, `ratelimit`, `ratelimit-*`.
pub fn is_limit_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "retry-after"
        || n == "retry-after-ms"
        || n.starts_with("x-ratelimit-")
        || n.starts_with("anthropic-ratelimit-")
        || n == "ratelimit"
        || n.starts_with("ratelimit-")
}

/// Whether a host should hand a response's headers to the timeline
/// ([`RequestTimeline::on_header_pairs`]): only for answers that may be throttled (the
/// run's normal answers cost no header walk).
pub fn wants_headers(status: u16) -> bool {
    THROTTLE_STATUSES.contains(&status)
}

impl RequestRecord {
    /// Generated tokens: the server's count when it gave one, else the chunks' sum.
    pub fn output_tokens(&self) -> u64 {
        self.usage
            .map_or_else(|| self.chunk_tokens(), |u| u.completion_tokens)
    }

    /// Prompt tokens the server says it served from its prefix cache (usage
    /// `cached_tokens` and the vendors' equivalents, or llama.cpp's `timings.cache_n`).
    pub fn cached_tokens(&self) -> Option<u64> {
        self.usage
            .and_then(|u| u.cached_tokens)
            .or_else(|| self.server_timings.and_then(|t| t.cache_n))
    }

    /// Sum of the token chunks' counts.
    pub fn chunk_tokens(&self) -> u64 {
        self.chunks.iter().map(|c| u64::from(c.tokens)).sum()
    }

    /// Generated tokens whose arrival the stream showed: the server's count less the
    /// reasoning tokens that were not streamed (hidden or summarised). When those are
    /// not counted, the chunks' sum. Decode rates (TPOT, ITL) divide by this.
    pub fn timed_tokens(&self) -> u64 {
        match self.reasoning {
            Some(r) if r.shown != ReasoningShown::Tokens => match r.tokens {
                Some(n) => self.output_tokens().saturating_sub(n),
                None => self.chunk_tokens(),
            },
            _ => self.output_tokens(),
        }
    }

    /// The first token chunk of the answer (after the streamed reasoning tokens).
    pub fn first_answer_chunk(&self) -> Option<&TokenChunk> {
        let skip = self.reasoning.map_or(0, |r| r.in_chunks as usize);
        self.chunks.get(skip)
    }

    /// When the first generated text of any kind arrived (reasoning, shown in any form,
    /// or answer), µs.
    pub fn t_first_token_us(&self) -> Option<u64> {
        let answer = self.chunks.first().map(|c| c.t_us);
        match (self.reasoning.and_then(|r| r.t_first_us), answer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the request was really on the wire (Resource Timing), else `t_send_us`.
    pub fn t_active_us(&self) -> u64 {
        self.wire
            .map(|w| w.request_start_us.max(self.t_send_us))
            .unwrap_or(self.t_send_us)
    }

    /// When the request left the wire: Resource Timing `responseEnd` when known (the page
    /// may see the end later, when its event loop is busy), else [`Self::t_end_us`].
    pub fn t_wire_end_us(&self) -> u64 {
        let end = self.t_end_us();
        match self.wire {
            Some(w) if w.response_end_us > 0 => w.response_end_us.min(end).max(self.t_active_us()),
            _ => end,
        }
    }

    /// End of the request's life (`t_done_us`, else its last chunk, else `t_send_us`).
    pub fn t_end_us(&self) -> u64 {
        self.t_done_us
            .or_else(|| self.chunks.last().map(|c| c.t_us))
            .unwrap_or(self.t_send_us)
    }
}

/// Compact storage of token chunks: LEB128 varint pairs of (µs since the previous chunk —
/// the first since 0 — and tokens), written as `~` + base64. A 4,000-token stream takes
/// about 16 KB of text. The first format, base64 of the same varints DEFLATE-compressed
/// (no `~`), is still read: compression saved only ~12% on these short streams and cost
/// a fresh inflater per record, which dominated opening a 10,000-request report.
pub mod chunk_codec {
    use super::*;

    /// Marks the uncompressed form (never a base64 character).
    const RAW_MARKER: char = '~';

    /// Largest decoded size accepted (guards against decompression bombs): 64 MiB.
    const MAX_DECODED: u64 = 64 << 20;

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *bytes.get(*pos).ok_or("chunk data ends inside a number")?;
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("chunk data has an over-long number".into())
    }

    /// The legacy form's DEFLATE data, never inflated past what the document's decode
    /// budget has left.
    fn inflate(data: &[u8]) -> Result<Vec<u8>, String> {
        let limit = crate::budget::bytes_left().map_or(MAX_DECODED, |b| b.min(MAX_DECODED));
        crate::inflate::inflate(data, usize::try_from(limit).unwrap_or(usize::MAX)).map_err(|e| {
            match e {
                crate::inflate::InflateError::TooLarge(_) => {
                    "chunk data decodes to more than the limit".to_owned()
                }
                e => format!("chunk data is not DEFLATE: {e}"),
            }
        })
    }

    /// Encodes chunks as text.
    pub fn encode(chunks: &[TokenChunk]) -> String {
        let mut raw = Vec::with_capacity(chunks.len() * 3);
        let mut prev = 0u64;
        for c in chunks {
            put_varint(&mut raw, c.t_us.saturating_sub(prev));
            put_varint(&mut raw, u64::from(c.tokens));
            prev = c.t_us;
        }
        let mut text = String::with_capacity(raw.len() * 4 / 3 + 4);
        text.push(RAW_MARKER);
        text.push_str(&crate::base64::encode(&raw));
        text
    }

    /// Decodes [`encode`]'s text.
    pub fn decode(text: &str) -> Result<Vec<TokenChunk>, String> {
        let raw = match text.strip_prefix(RAW_MARKER) {
            Some(b64) => {
                crate::base64::decode(b64).map_err(|e| format!("chunk data is not base64: {e}"))?
            }
            None => {
                let compressed = crate::base64::decode(text)
                    .map_err(|e| format!("chunk data is not base64: {e}"))?;
                inflate(&compressed)?
            }
        };
        if raw.len() as u64 > MAX_DECODED {
            return Err("chunk data decodes to more than the limit".into());
        }
        crate::budget::charge_bytes(raw.len() as u64)?;
        let mut out = Vec::new();
        let mut pos = 0;
        let mut t = 0u64;
        let max_chunks = crate::budget::chunks_left().unwrap_or(u64::MAX);
        while pos < raw.len() {
            if out.len() as u64 >= max_chunks {
                return Err(format!(
                    "the records hold more than {} token chunks in all",
                    crate::budget::REPORT.chunks
                ));
            }
            let dt = get_varint(&raw, &mut pos)?;
            let tokens = get_varint(&raw, &mut pos)?;
            t = t.checked_add(dt).ok_or("chunk time overflows")?;
            let tokens = u32::try_from(tokens).map_err(|_| "chunk token count too large")?;
            out.push(TokenChunk { t_us: t, tokens });
        }
        crate::budget::charge_chunks(out.len() as u64)?;
        Ok(out)
    }

    /// serde adapter.
    pub fn serialize<S: serde::Serializer>(chunks: &[TokenChunk], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(chunks))
    }

    /// serde adapter.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<TokenChunk>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

/// How the response body ended, as seen by the browser glue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ended normally (EOF).
    Eof,
    /// The request failed; the outcome says how.
    Failed(Outcome),
}

/// One parsed chunk as the timeline keeps it until the end of the stream.
#[derive(Clone, Copy, Debug)]
struct Observed {
    t_us: u64,
    /// Answer text (or, when reasoning is counted as tokens, reasoning text).
    text: bool,
    /// Reasoning text.
    reasoning: bool,
    finish: bool,
    has_choices: bool,
    /// `completion_tokens` of the chunk's usage.
    usage: Option<u64>,
    /// The reasoning tokens of the chunk's usage.
    usage_reasoning: Option<u64>,
}

/// Builds a [`RequestRecord`] from timed events of one streaming response.
#[derive(Debug)]
pub struct RequestTimeline {
    rec: RequestRecord,
    dialect: Dialect,
    decoder: StreamDecoder,
    sse: SseDecoder,
    /// The stream said the model reasons (shown or not).
    reasoning_seen: bool,
    /// Reasoning text deltas, and the first one's time.
    reasoning_deltas: u32,
    t_first_reasoning_us: Option<u64>,
    streaming: bool,
    /// Every chunk, in arrival order; token chunks are decided at the end.
    observed: Vec<Observed>,
    last_usage_completion: u64,
    first_token_us: Option<u64>,
    done: bool,
    stream_error: Option<String>,
    /// The first stream error's type (`overloaded_error`, …).
    stream_error_kind: Option<String>,
    /// Rate-limit headers of a throttled answer ([`is_limit_header`]).
    limit_headers: BTreeMap<String, String>,
    /// Secrets the host knows (API key, header values): never kept in a message.
    secrets: Vec<String>,
    /// Timed bytes not decoded yet, and their size (see [`RequestTimeline::on_bytes`]).
    held: Vec<(u64, Vec<u8>)>,
    held_bytes: usize,
    /// The answer's text, kept only for a conversation's next turn.
    answer: Option<String>,
}

/// Bytes a timeline holds before it decodes them (64 KiB: a few hundred chunks).
pub const HOLD_BYTES: usize = 64 << 10;

impl RequestTimeline {
    /// Starts a timeline; `t_send_us` is taken just before `fetch`.
    pub fn new(
        index: u32,
        step: u32,
        dialect: Dialect,
        prompt_tokens_requested: u32,
        output_tokens_requested: u32,
        t_send_us: u64,
    ) -> Self {
        Self {
            rec: RequestRecord {
                index,
                step,
                prompt_tokens_requested,
                output_tokens_requested,
                t_send_us,
                t_intended_us: None,
                held_by_cap: false,
                t_headers_us: None,
                t_done_us: None,
                status: None,
                chunks: Vec::new(),
                token_counts: TokenCounts::UnverifiedNoUsage,
                deltas: 0,
                usage: None,
                finish_reason: None,
                response_id: None,
                server_timings: None,
                protocol: None,
                wire: None,
                outcome: Outcome::Ok {},
                anomalies: Anomalies::default(),
                reasoning: None,
                throttle: None,
                turn: None,
            },
            dialect,
            decoder: StreamDecoder::new(dialect),
            sse: SseDecoder::default(),
            reasoning_seen: false,
            reasoning_deltas: 0,
            t_first_reasoning_us: None,
            streaming: true,
            observed: Vec::new(),
            last_usage_completion: 0,
            first_token_us: None,
            done: false,
            stream_error: None,
            stream_error_kind: None,
            limit_headers: BTreeMap::new(),
            secrets: Vec::new(),
            held: Vec::new(),
            held_bytes: 0,
            answer: None,
        }
    }

    /// This request is turn `turn` of a conversation: its answer text is kept (see
    /// [`Self::finish_with_answer`]) for the next turn.
    pub fn set_turn(&mut self, turn: TurnOf) {
        self.rec.turn = Some(turn);
        self.answer = Some(String::new());
    }

    /// The response's headers, when [`wants_headers`] said so: the rate-limit ones are
    /// kept (at most 24, values cut to 128 bytes) for the record's [`Throttle`].
    pub fn on_header_pairs<'a>(&mut self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (name, value) in pairs {
            if self.limit_headers.len() >= 24 || !is_limit_header(name) {
                continue;
            }
            let mut v = value.trim().to_owned();
            if v.len() > 128 {
                let mut cut = 128;
                while !v.is_char_boundary(cut) {
                    cut -= 1;
                }
                v.truncate(cut);
            }
            self.limit_headers.insert(name.to_ascii_lowercase(), v);
        }
    }

    /// Secrets to keep out of the record's messages (the API key, header values).
    pub fn set_secrets(&mut self, secrets: Vec<String>) {
        self.secrets = secrets;
    }

    /// The host handed the request to its network stack at `t_us` (after the session's
    /// stamp, which it replaces: building the request is not the server's time).
    pub fn set_send_time(&mut self, t_us: u64) {
        self.rec.t_send_us = self.rec.t_send_us.max(t_us);
    }

    /// Open loop: the arrival was due at `intended_us`, and the cap held it back or not.
    pub fn set_arrival(&mut self, intended_us: Option<u64>, held_by_cap: bool) {
        self.rec.t_intended_us = intended_us;
        self.rec.held_by_cap = held_by_cap;
    }

    /// Response headers arrived.
    pub fn on_headers(&mut self, t_us: u64, status: u16, content_type: Option<&str>) {
        self.rec.t_headers_us = Some(t_us);
        self.rec.status = Some(status);
        self.streaming = content_type
            .map(|c| c.to_ascii_lowercase().contains("text/event-stream"))
            .unwrap_or(false);
    }

    /// Whether `[DONE]` has been received.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Tokens counted so far (for live views): the larger of the text deltas and the
    /// server's latest `completion_tokens`, of the bytes decoded so far.
    pub fn tokens_so_far(&self) -> u64 {
        u64::from(self.rec.deltas).max(self.last_usage_completion)
    }

    /// Time of the first chunk with text or a usage increase, if any (for live views).
    pub fn first_token_us(&self) -> Option<u64> {
        self.first_token_us
    }

    /// Body bytes arrived at `t_us`. They are kept with their time and decoded later —
    /// at the end of the stream, or once [`HOLD_BYTES`] are held — so a host's loop does
    /// nothing per read but stamp and keep: decoding at once delays the stamp of the next
    /// stream's chunk (at c=8 a batch step hands every stream a token at the same moment).
    /// The record is the same; only the live token count ([`Self::tokens_so_far`]) lags.
    pub fn on_bytes(&mut self, t_us: u64, bytes: &[u8]) {
        if !self.streaming {
            return;
        }
        self.held.push((t_us, bytes.to_vec()));
        self.held_bytes += bytes.len();
        if self.held_bytes >= HOLD_BYTES {
            self.decode_held();
        }
    }

    fn decode_held(&mut self) {
        self.held_bytes = 0;
        for (t_us, bytes) in std::mem::take(&mut self.held) {
            self.decode(t_us, &bytes);
        }
    }

    fn decode(&mut self, t_us: u64, bytes: &[u8]) {
        for item in self.sse.push(bytes) {
            match item {
                Ok(ev) => self.on_event(t_us, &ev.event, &ev.data),
                Err(SseError::LineTooLong { .. }) => self.rec.anomalies.line_too_long += 1,
                Err(SseError::Truncated { .. }) => {}
            }
        }
    }

    fn on_event(&mut self, t_us: u64, event: &str, data: &str) {
        if self.done {
            self.rec.anomalies.events_after_done += 1;
            return;
        }
        match self.decoder.event(event, data) {
            Ok(StreamEvent::Done) => self.done = true,
            Ok(StreamEvent::Error(e)) => {
                if self.stream_error.is_none() {
                    self.stream_error_kind = e.kind.or(e.code);
                }
                self.stream_error.get_or_insert(e.message);
            }
            Ok(StreamEvent::Chunk(c)) => {
                self.rec.anomalies.bad_optional_fields = self
                    .rec
                    .anomalies
                    .bad_optional_fields
                    .saturating_add(c.bad_fields);
                if self.rec.response_id.is_none() {
                    self.rec.response_id.clone_from(&c.id);
                }
                let text = !c.text.is_empty();
                let reasoning = !c.reasoning.is_empty();
                self.reasoning_seen |= c.reasoning_seen || reasoning;
                let usage = c.usage.map(|u| u.completion_tokens);
                if let Some(u) = c.usage {
                    self.rec.usage = Some(u);
                }
                if text {
                    self.rec.deltas += 1;
                    if let Some(a) = &mut self.answer {
                        if a.len() + c.text.len() <= MAX_KEPT_TEXT {
                            a.push_str(&c.text);
                        }
                    }
                }
                if reasoning {
                    self.reasoning_deltas += 1;
                    self.t_first_reasoning_us.get_or_insert(t_us);
                }
                let rose = usage.is_some_and(|u| u > self.last_usage_completion);
                if (text || reasoning || rose) && self.first_token_us.is_none() {
                    self.first_token_us = Some(t_us);
                }
                if let Some(u) = usage {
                    self.last_usage_completion = self.last_usage_completion.max(u);
                }
                self.observed.push(Observed {
                    t_us,
                    text,
                    reasoning,
                    finish: c.finish_reason.is_some(),
                    has_choices: c.has_choices,
                    usage,
                    usage_reasoning: c.usage.and_then(|u| u.reasoning_tokens),
                });
                if c.finish_reason.is_some() {
                    self.rec.finish_reason = c.finish_reason;
                }
                if c.timings.is_some() {
                    self.rec.server_timings = c.timings;
                }
                if c.end {
                    self.done = true;
                }
            }
            Err(dialect::DialectError::InvalidJson(_)) => self.rec.anomalies.invalid_json += 1,
            Err(dialect::DialectError::UnexpectedShape(_)) => {
                self.rec.anomalies.unexpected_shape += 1
            }
        }
    }

    /// Ends the timeline at `t_us` and returns the record.
    pub fn finish(self, t_us: u64, end: StreamEnd) -> RequestRecord {
        self.finish_with_answer(t_us, end).0
    }

    /// [`Self::finish`], and the answer's text when the timeline kept it
    /// ([`Self::set_turn`]).
    pub fn finish_with_answer(
        mut self,
        t_us: u64,
        end: StreamEnd,
    ) -> (RequestRecord, Option<String>) {
        self.decode_held();
        if let Some(SseError::Truncated {
            pending_data,
            partial_line,
        }) = self.sse.finish()
        {
            self.rec.anomalies.truncated_event = true;
            let mut data = pending_data;
            if let Some(rest) = partial_line.strip_prefix("data:") {
                data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            } else if data.ends_with('\n') {
                data.pop();
            }
            if !data.is_empty() {
                self.on_event(t_us, "message", &data);
            }
        }
        self.rec.anomalies.invalid_utf8_lines = self.sse.anomalies().invalid_utf8_lines;
        self.rec.t_done_us = Some(t_us);
        self.rec.outcome = match end {
            StreamEnd::Failed(o) => o,
            StreamEnd::Eof if !self.streaming => Outcome::NotStreaming {},
            StreamEnd::Eof => {
                if let Some(message) = self.stream_error.take() {
                    Outcome::StreamError { message }
                } else if self.done {
                    Outcome::Ok {}
                } else if self.rec.finish_reason.is_some() {
                    // Gemini's stream has no end event: its finish reason is the end.
                    self.rec.anomalies.missing_done = self.dialect.has_end_event();
                    Outcome::Ok {}
                } else {
                    self.rec.anomalies.missing_done = true;
                    Outcome::Truncated {}
                }
            }
        };
        // Whatever the server or the network said is cut and redacted before it is kept.
        match &mut self.rec.outcome {
            Outcome::Http { message, .. }
            | Outcome::Network { message }
            | Outcome::StreamError { message } => *message = redact(message, &self.secrets),
            _ => {}
        }
        self.rec.throttle = self.throttle();
        self.account_tokens();
        (self.rec, self.answer)
    }

    /// The record's [`Throttle`], when its status or stream error says the server's limits
    /// ended it.
    fn throttle(&mut self) -> Option<Throttle> {
        let signal = match (&self.rec.outcome, &self.stream_error_kind) {
            (Outcome::Http { status, .. }, _) if THROTTLE_STATUSES.contains(status) => {
                format!("http_{status}")
            }
            (Outcome::StreamError { .. }, Some(k)) if THROTTLE_ERRORS.contains(&k.as_str()) => {
                k.clone()
            }
            _ => return None,
        };
        let mut headers = std::mem::take(&mut self.limit_headers);
        for v in headers.values_mut() {
            *v = redact(v, &self.secrets);
        }
        // Seconds (`Retry-After`, an HTTP date is not read) or ms (`retry-after-ms`), to
        // the ms; parsed as decimals, never as floats.
        let retry_after_ms = headers
            .get("retry-after-ms")
            .and_then(|v| crate::decimal::parse_milli(v))
            .map(|milli| (milli + 500) / 1000)
            .or_else(|| {
                headers
                    .get("retry-after")
                    .and_then(|v| crate::decimal::parse_milli(v))
            });
        Some(Throttle {
            signal,
            retry_after_ms,
            headers,
        })
    }

    /// Decides the token chunks and the reasoning part (docs/DEFINITIONS.md, reasoning):
    /// reasoning streamed token for token is timed with the answer; reasoning hidden or
    /// summarised is counted (when the server counts it) and never timed.
    fn account_tokens(&mut self) {
        let total = self.rec.usage.map(|u| u.completion_tokens);
        let r_usage = self.rec.usage.and_then(|u| u.reasoning_tokens);
        let k_r = u64::from(self.reasoning_deltas);
        let k_a = u64::from(self.rec.deltas);
        if !self.reasoning_seen && r_usage.unwrap_or(0) == 0 {
            let (chunks, counts) = account(&self.observed, total);
            self.rec.chunks = chunks;
            self.rec.token_counts = counts;
            return;
        }
        let shown = if k_r == 0 {
            ReasoningShown::Hidden
        } else {
            match (r_usage, total) {
                (Some(r), _) if r == k_r => ReasoningShown::Tokens,
                (Some(_), _) => ReasoningShown::Summary,
                // No reasoning count: the deltas are the tokens only if, with the answer's,
                // they make up the server's total (or there is no total to check).
                (None, Some(u)) if u == k_r + k_a => ReasoningShown::Tokens,
                (None, Some(_)) => ReasoningShown::Summary,
                (None, None) => ReasoningShown::Tokens,
            }
        };
        let mut reasoning = ReasoningRecord {
            tokens: r_usage,
            shown,
            deltas: self.reasoning_deltas,
            in_chunks: 0,
            t_first_us: self.t_first_reasoning_us,
        };
        if shown == ReasoningShown::Tokens {
            // Reasoning deltas are token chunks like the answer's.
            let obs: Vec<Observed> = self
                .observed
                .iter()
                .map(|o| Observed {
                    text: o.text || o.reasoning,
                    ..*o
                })
                .collect();
            let (chunks, counts) = account(&obs, total);
            let first_answer = self.observed.iter().position(|o| o.text);
            reasoning.in_chunks = match first_answer {
                None => chunks.len() as u32,
                // Continuous usage: a chunk per rise of the count, before the answer.
                Some(i) if counts == TokenCounts::ExactContinuousUsage => {
                    let mut last = 0u64;
                    let mut n = 0u32;
                    for u in obs[..i].iter().filter_map(|o| o.usage) {
                        if u > last {
                            n += 1;
                            last = u;
                        }
                    }
                    n
                }
                Some(i) => self.observed[..i].iter().filter(|o| o.reasoning).count() as u32,
            };
            if reasoning.tokens.is_none() && counts.is_exact() {
                reasoning.tokens = Some(
                    chunks[..reasoning.in_chunks as usize]
                        .iter()
                        .map(|c| u64::from(c.tokens))
                        .sum(),
                );
            }
            self.rec.chunks = chunks;
            self.rec.token_counts = counts;
        } else {
            // Only the answer is timed: usage less the reasoning it counts.
            let obs: Vec<Observed> = self
                .observed
                .iter()
                .map(|o| Observed {
                    usage: o
                        .usage
                        .map(|u| u.saturating_sub(o.usage_reasoning.or(r_usage).unwrap_or(0))),
                    ..*o
                })
                .collect();
            let answer_total = match (total, r_usage) {
                (Some(u), Some(r)) => Some(u.saturating_sub(r)),
                _ => None,
            };
            let (chunks, counts) = account(&obs, answer_total);
            self.rec.token_counts = match (answer_total, counts) {
                (None, TokenCounts::UnverifiedNoUsage) if total.is_some() => {
                    TokenCounts::UnverifiedReasoningSplit
                }
                (_, c) => c,
            };
            self.rec.chunks = chunks;
        }
        self.rec.reasoning = Some(reasoning);
    }
}

/// The token chunks of a stream known only by the times of its text chunks, an optional
/// trailing finish-only chunk, and the server's `completion_tokens` (another tool's
/// per-request file): the same rules as a live stream ([`RequestTimeline::finish`]).
pub fn account_text_chunks(
    text_times: &[u64],
    trailing_finish_us: Option<u64>,
    usage_completion: Option<u64>,
) -> (Vec<TokenChunk>, TokenCounts) {
    let mut obs: Vec<Observed> = text_times
        .iter()
        .map(|&t_us| Observed {
            t_us,
            text: true,
            reasoning: false,
            finish: false,
            has_choices: true,
            usage: None,
            usage_reasoning: None,
        })
        .collect();
    if let Some(t_us) = trailing_finish_us {
        obs.push(Observed {
            t_us,
            text: false,
            reasoning: false,
            finish: true,
            has_choices: true,
            usage: None,
            usage_reasoning: None,
        });
    }
    account(&obs, usage_completion)
}

fn chunk(t_us: u64, tokens: u64) -> TokenChunk {
    TokenChunk {
        t_us,
        tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
    }
}

/// Decides the token chunks of one stream from its observed chunks and the server's final
/// `completion_tokens` (the module documentation states the rules).
fn account(obs: &[Observed], usage: Option<u64>) -> (Vec<TokenChunk>, TokenCounts) {
    let with_usage: Vec<u64> = obs.iter().filter_map(|o| o.usage).collect();
    let mid_stream_usage = obs
        .iter()
        .any(|o| o.usage.is_some() && o.has_choices && !o.finish);
    let differing = with_usage.windows(2).any(|w| w[0] != w[1]);
    if mid_stream_usage || differing {
        let mut out = Vec::new();
        let mut last = 0u64;
        for o in obs {
            if let Some(u) = o.usage {
                if u > last {
                    out.push(chunk(o.t_us, u - last));
                    last = u;
                }
            }
        }
        return (out, TokenCounts::ExactContinuousUsage);
    }
    let texts: Vec<u64> = obs.iter().filter(|o| o.text).map(|o| o.t_us).collect();
    let k = texts.len() as u64;
    let ones = || texts.iter().map(|&t| chunk(t, 1)).collect::<Vec<_>>();
    let Some(total) = usage else {
        return (ones(), TokenCounts::UnverifiedNoUsage);
    };
    if total == k {
        return (ones(), TokenCounts::ExactDeltasMatchUsage);
    }
    if total < k {
        return (ones(), TokenCounts::DeltasExceedUsage);
    }
    // A trailing choice chunk with a finish reason and no text, after the last text.
    let last_text = obs.iter().rposition(|o| o.text);
    let finish_chunk = obs
        .iter()
        .enumerate()
        .rev()
        .find(|(i, o)| o.has_choices && o.finish && !o.text && last_text.is_none_or(|l| *i > l))
        .map(|(_, o)| o.t_us);
    if let (true, Some(t)) = (total == k + 1, finish_chunk) {
        let mut out = ones();
        out.push(chunk(t, 1));
        return (out, TokenCounts::ExactFinishToken);
    }
    if k == 0 {
        return (Vec::new(), TokenCounts::EstimatedCoalesced);
    }
    if k == 1 {
        // One text chunk carried every token the server counted: exact.
        return (
            vec![chunk(texts[0], total)],
            TokenCounts::ExactDeltasMatchUsage,
        );
    }
    // First text chunk: one token. The other K-1 chunks: one each plus an even share of
    // the U-K extra tokens, later chunks taking the remainder.
    let extra = total - k;
    let rest = k - 1;
    let mut out = Vec::with_capacity(texts.len());
    for (i, &t) in texts.iter().enumerate() {
        if i == 0 {
            out.push(chunk(t, 1));
            continue;
        }
        let (j, extra, rest) = (i as u128 - 1, u128::from(extra), u128::from(rest));
        let share = (j + 1) * extra / rest - j * extra / rest;
        out.push(chunk(
            t,
            u64::try_from(share).unwrap_or(u64::MAX).saturating_add(1),
        ));
    }
    (out, TokenCounts::EstimatedCoalesced)
}

/// Longest server message kept in a record.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// The most of an error response's body a host reads, bytes (a server may answer an error
/// with megabytes; its message is in the first few hundred).
pub const MAX_ERROR_BODY: usize = 64 << 10;

/// Whether a word looks like a credential: an `sk-…` key, or a long run of letters and
/// digits mixed (≥ 24 characters of `[A-Za-z0-9_-]`, both letters and digits).
pub fn looks_like_secret(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-');
    if w.starts_with("sk-") && w.len() >= 12 {
        return true;
    }
    w.len() >= 24
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && w.chars().any(|c| c.is_ascii_digit())
        && w.chars().any(|c| c.is_ascii_alphabetic())
}

/// A server's message made safe to share: every known secret (the API key, header
/// values) and anything that looks like a credential (`Bearer …`, `sk-…`, long mixed
/// tokens, `key=…`) replaced by `[redacted]`, and cut to [`MAX_MESSAGE_CHARS`].
pub fn redact(text: &str, known: &[String]) -> String {
    let mut t = text.to_owned();
    for k in known.iter().filter(|k| k.len() >= 6) {
        t = t.replace(k.as_str(), "[redacted]");
    }
    let mut out = String::with_capacity(t.len());
    let mut after_bearer = false;
    for (i, word) in t.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let lower = word.to_ascii_lowercase();
        let keyed = ["key=", "token=", "api_key=", "apikey=", "secret="]
            .iter()
            .find_map(|p| lower.find(p).map(|at| at + p.len()));
        if after_bearer || looks_like_secret(word) {
            out.push_str("[redacted]");
        } else if let Some(at) = keyed.filter(|&at| at < word.len()) {
            out.push_str(&word[..at]);
            out.push_str("[redacted]");
        } else {
            out.push_str(word);
        }
        after_bearer = lower.ends_with("bearer") && !word.is_empty();
    }
    let cut: String = out.chars().take(MAX_MESSAGE_CHARS).collect();
    if cut.len() < out.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// The message of an OpenAI-style error body (`{"error":{"message":…}}`), else the text.
pub fn error_message_from_body(body: &str) -> String {
    // Not cut here: the record's redaction runs on the whole text and cuts after it, so a
    // secret is never cut in two (half of it would escape the redaction). Hosts read at
    // most [`MAX_ERROR_BODY`] bytes of an error body.
    let trimmed = body.to_owned();
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => match v.get("error") {
            Some(serde_json::Value::Object(o)) => o
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or(trimmed),
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => trimmed,
        },
        Err(_) => trimmed,
    }
}

/// Puts records in dispatch order (their `index`): the one ordering of a run's records,
/// shared by every place that gathers them.
pub fn sort_by_index(records: &mut [RequestRecord]) {
    crate::sort::sort_by_key(records, |r| r.index);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every outcome reads back what it writes (the tags match serde's `rename_all`).
    #[test]
    fn outcomes_round_trip() {
        for o in [
            Outcome::Ok {},
            Outcome::Http {
                status: 429,
                message: "slow down".into(),
            },
            Outcome::Network {
                message: "reset".into(),
            },
            Outcome::StreamError {
                message: "e".into(),
            },
            Outcome::Stalled { timeout_us: 30 },
            Outcome::Aborted {},
            Outcome::Truncated {},
            Outcome::NotStreaming {},
        ] {
            let text = serde_json::to_string(&o).expect("ser");
            assert_eq!(serde_json::from_str::<Outcome>(&text).expect(&text), o);
        }
        for bad in [
            r#"{"kind":"ok","status":1}"#,
            r#"{"kind":"http","status":500}"#,
            r#"{"kind":"stalled","timeout_us":1,"message":"x"}"#,
            r#"{"kind":"network","message":"x","extra":1}"#,
            r#"{"kind":"teapot"}"#,
            r#"{"status":500,"message":"x"}"#,
        ] {
            assert!(serde_json::from_str::<Outcome>(bad).is_err(), "{bad}");
        }
    }
    use proptest::prelude::*;

    fn run(dialect: Dialect, events: &[(u64, &str)], end_t: u64) -> RequestRecord {
        let mut tl = RequestTimeline::new(0, 0, dialect, 8, 4, 1_000);
        tl.on_headers(1_500, 200, Some("text/event-stream; charset=utf-8"));
        for (t, bytes) in events {
            tl.on_bytes(*t, bytes.as_bytes());
        }
        tl.finish(end_t, StreamEnd::Eof)
    }

    fn ts(rec: &RequestRecord) -> Vec<(u64, u32)> {
        rec.chunks.iter().map(|c| (c.t_us, c.tokens)).collect()
    }

    #[test]
    fn one_token_per_delta_reconciled_with_final_usage() {
        let rec = run(
            Dialect::Chat,
            &[
                (2_000, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"),
                (3_000, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"),
                (4_000, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"}}]}\n\n"),
                (5_000, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"),
                (5_100, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"),
            ],
            5_200,
        );
        assert_eq!(ts(&rec), vec![(3_000, 1), (4_000, 1), (4_000, 1)]);
        assert_eq!(rec.token_counts, TokenCounts::ExactDeltasMatchUsage);
        assert_eq!(rec.outcome, Outcome::Ok {});
        assert_eq!(rec.output_tokens(), 3);
        assert!(rec.anomalies.is_clean(), "{:?}", rec.anomalies);
        assert_eq!(rec.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn continuous_usage_gives_exact_multi_token_chunks() {
        let rec = run(
            Dialect::Completions,
            &[
                (2_000, "data: {\"choices\":[{\"index\":0,\"text\":\"ab\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\n"),
                (3_000, "data: {\"choices\":[{\"index\":0,\"text\":\"\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\n"),
                (4_000, "data: {\"choices\":[{\"index\":0,\"text\":\"cdef\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":7}}\n\n"),
                (4_100, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n"),
            ],
            4_200,
        );
        assert_eq!(ts(&rec), vec![(2_000, 2), (3_000, 1), (4_000, 4)]);
        assert_eq!(rec.token_counts, TokenCounts::ExactContinuousUsage);
        assert_eq!(rec.output_tokens(), 7);
    }

    #[test]
    fn continuous_usage_with_a_text_less_first_token() {
        let rec = run(
            Dialect::Completions,
            &[
                (1_900, "data: {\"choices\":[{\"index\":0,\"text\":\"\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":0}}\n\n"),
                (2_000, "data: {\"choices\":[{\"index\":0,\"text\":\"\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":1}}\n\n"),
                (3_000, "data: {\"choices\":[{\"index\":0,\"text\":\"\u{e9}\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\n"),
                (3_100, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"),
            ],
            3_200,
        );
        assert_eq!(ts(&rec), vec![(2_000, 1), (3_000, 1)]);
        assert_eq!(rec.token_counts, TokenCounts::ExactContinuousUsage);
    }

    #[test]
    fn llama_style_usage_in_final_choice_chunk() {
        let rec = run(
            Dialect::Completions,
            &[
                (2_000, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":null}]}\n\n"),
                (3_000, "data: {\"choices\":[{\"index\":0,\"text\":\"y\",\"finish_reason\":null}]}\n\n"),
                (4_000, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2},\"timings\":{\"prompt_n\":8,\"prompt_ms\":1.0,\"predicted_n\":2,\"predicted_ms\":2.5}}\n\ndata: [DONE]\n\n"),
            ],
            4_100,
        );
        assert_eq!(ts(&rec), vec![(2_000, 1), (3_000, 1)]);
        assert_eq!(rec.token_counts, TokenCounts::ExactDeltasMatchUsage);
        assert_eq!(rec.server_timings.map(|t| t.predicted_us), Some(2_500));
    }

    #[test]
    fn coalescing_server_is_flagged_and_spread() {
        let rec = run(
            Dialect::Completions,
            &[
                (2_000, "data: {\"choices\":[{\"index\":0,\"text\":\"abcd\"}]}\n\n"),
                (3_000, "data: {\"choices\":[{\"index\":0,\"text\":\"efgh\"}]}\n\n"),
                (4_000, "data: {\"choices\":[{\"index\":0,\"text\":\"ij\",\"finish_reason\":\"length\"}]}\n\n"),
                (4_100, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":10}}\n\ndata: [DONE]\n\n"),
            ],
            4_200,
        );
        assert_eq!(rec.token_counts, TokenCounts::EstimatedCoalesced);
        assert_eq!(ts(&rec), vec![(2_000, 1), (3_000, 4), (4_000, 5)]);
        assert_eq!(rec.chunk_tokens(), 10);
        assert_eq!(rec.deltas, 3);
    }

    #[test]
    fn malformed_and_truncated_streams_are_recorded_not_dropped() {
        let rec = run(
            Dialect::Completions,
            &[
                (
                    2_000,
                    "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n",
                ),
                (3_000, "data: {oops\n\n"),
                (4_000, "data: {\"choices\":[{\"index\":0,\"text\":\"y\"}]}"),
            ],
            5_000,
        );
        assert_eq!(rec.anomalies.invalid_json, 1);
        assert!(rec.anomalies.truncated_event && rec.anomalies.missing_done);
        assert_eq!(ts(&rec), vec![(2_000, 1), (5_000, 1)]);
        assert_eq!(rec.outcome, Outcome::Truncated {});
        assert_eq!(rec.token_counts, TokenCounts::UnverifiedNoUsage);
    }

    #[test]
    fn error_event_and_missing_done() {
        let rec = run(
            Dialect::Chat,
            &[(2_000, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n")],
            3_000,
        );
        assert_eq!(
            rec.outcome,
            Outcome::StreamError {
                message: "overloaded".into()
            }
        );
        assert_eq!(rec.outcome.kind(), "stream_error");
        let ok_no_done = run(
            Dialect::Chat,
            &[(2_000, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n")],
            3_000,
        );
        assert_eq!(ok_no_done.outcome, Outcome::Ok {});
        assert!(ok_no_done.anomalies.missing_done);
    }

    #[test]
    fn events_after_done_and_non_streaming() {
        let rec = run(
            Dialect::Completions,
            &[(
                2_000,
                "data: [DONE]\n\ndata: {\"choices\":[{\"text\":\"late\"}]}\n\n",
            )],
            3_000,
        );
        assert_eq!(rec.anomalies.events_after_done, 1);
        assert!(rec.chunks.is_empty());
        let mut tl = RequestTimeline::new(3, 0, Dialect::Chat, 8, 4, 10);
        tl.on_headers(20, 200, Some("application/json"));
        tl.on_bytes(30, b"{\"choices\":[]}");
        let rec = tl.finish(40, StreamEnd::Eof);
        assert_eq!(rec.outcome, Outcome::NotStreaming {});
        let tl = RequestTimeline::new(4, 0, Dialect::Chat, 8, 4, 10);
        let rec = tl.finish(
            50,
            StreamEnd::Failed(Outcome::Http {
                status: 429,
                message: "slow down".into(),
            }),
        );
        assert_eq!(rec.outcome.kind(), "http_429");
    }

    #[test]
    fn error_bodies_give_their_message() {
        assert_eq!(
            error_message_from_body(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(error_message_from_body("plain text"), "plain text");
    }

    #[test]
    fn record_serde_round_trip_with_compact_chunks() {
        let rec = run(
            Dialect::Completions,
            &[
                (
                    2_000,
                    "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n",
                ),
                (
                    2_345,
                    "data: {\"choices\":[{\"index\":0,\"text\":\"y\"}]}\n\ndata: [DONE]\n\n",
                ),
            ],
            2_400,
        );
        let json = serde_json::to_string(&rec).expect("ser");
        let back: RequestRecord = serde_json::from_str(&json).expect("de");
        assert_eq!(back, rec);
        let mut v: serde_json::Value = serde_json::from_str(&json).expect("v");
        v["surprise"] = serde_json::json!(1);
        assert!(
            serde_json::from_value::<RequestRecord>(v).is_err(),
            "unknown fields are rejected"
        );
    }

    #[test]
    fn chunk_codec_reads_the_first_deflate_form() {
        // Record 0 of the signed fixture as the first release wrote it.
        let chunks =
            chunk_codec::decode("WzCHkXGBPOMlecYWBcZtCowvFBhnKTKeUWQEAA==").expect("decodes");
        let times: Vec<u64> = chunks.iter().map(|c| c.t_us).collect();
        assert_eq!(
            times,
            [20_000, 24_000, 28_050, 32_150, 36_300, 40_500, 44_750, 49_050]
        );
        assert!(chunks.iter().all(|c| c.tokens == 1));
        assert!(chunk_codec::encode(&chunks).starts_with('~'));
    }

    #[test]
    fn chunk_codec_rejects_garbage() {
        assert!(chunk_codec::decode("~@@").is_err());
        assert!(chunk_codec::decode("~gA==").is_err());
        assert!(chunk_codec::decode("@@").is_err());
        assert!(chunk_codec::decode("AAAA").is_err());
    }

    proptest! {
        #[test]
        fn chunk_codec_round_trips(deltas in proptest::collection::vec((0u64..10_000_000, 1u32..5000), 0..300)) {
            let mut t = 0;
            let chunks: Vec<TokenChunk> = deltas.into_iter().map(|(d, n)| { t += d; TokenChunk { t_us: t, tokens: n } }).collect();
            prop_assert_eq!(chunk_codec::decode(&chunk_codec::encode(&chunks)).expect("decodes"), chunks);
        }

        #[test]
        fn timeline_is_independent_of_byte_split(cut in 0usize..400) {
            let body = "data: {\"choices\":[{\"index\":0,\"text\":\"\u{e9}\"}]}\r\n\r\ndata: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":\"length\"}]}\r\n\r\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\r\n\r\ndata: [DONE]\r\n\r\n";
            let bytes = body.as_bytes();
            let cut = cut % bytes.len();
            let mut tl = RequestTimeline::new(0, 0, Dialect::Completions, 1, 2, 0);
            tl.on_headers(1, 200, Some("text/event-stream"));
            tl.on_bytes(10, &bytes[..cut]);
            tl.on_bytes(10, &bytes[cut..]);
            let rec = tl.finish(20, StreamEnd::Eof);
            prop_assert_eq!(rec.chunk_tokens(), 2);
            prop_assert_eq!(rec.outcome, Outcome::Ok {});
            prop_assert!(rec.anomalies.is_clean());
        }
    }
}
