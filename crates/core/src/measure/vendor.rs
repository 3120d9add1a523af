//! The vendors' own streaming APIs — OpenAI Responses, Anthropic Messages, Google Gemini —
//! read into the same [`Chunk`]s as the OpenAI-compatible dialects, so every record is
//! built by one timeline whatever the wire said.
//!
//! Each stream has a little state ([`StreamDecoder`]): Anthropic sends the prompt's usage
//! in `message_start` and the output's in `message_delta` (counters that replace earlier
//! values), and says which content block is thinking only when the block starts. The
//! decoders emit usage once per update, merged, so the timeline never mistakes a
//! message's start-of-stream counter for a running count.

use serde_json::{Map, Value};

use crate::dialect::{
    self, Chunk, Dialect, DialectError, StreamErrorObject, StreamEvent, Usage, SERVER_TIME_FIELD,
};

/// One response stream's decoder: the dialect and what earlier events said.
#[derive(Clone, Debug)]
pub struct StreamDecoder {
    dialect: Dialect,
    /// Anthropic: the latest usage counters (`message_start`, then `message_delta`).
    usage: Usage,
    /// Anthropic: whether a `message_delta` brought output usage yet.
    output_seen: bool,
    /// Anthropic: the latest `input_tokens` (uncached prompt tokens).
    anthropic_input: u64,
    /// Anthropic: the latest `cache_creation_input_tokens`.
    anthropic_created: u64,
    /// Anthropic: the kind of each content block by index (`true` = thinking).
    thinking_blocks: Vec<(u64, bool)>,
}

impl StreamDecoder {
    /// A decoder for one response of `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            usage: Usage::default(),
            output_seen: false,
            anthropic_input: 0,
            anthropic_created: 0,
            thinking_blocks: Vec::new(),
        }
    }

    /// Reads one SSE event (`event` type and `data`).
    pub fn event(&mut self, event: &str, data: &str) -> Result<StreamEvent, DialectError> {
        match self.dialect {
            Dialect::Completions | Dialect::Chat => dialect::parse_event(self.dialect, event, data),
            Dialect::Responses => responses(event, data),
            Dialect::Messages => self.messages(event, data),
            Dialect::Gemini => gemini(data),
        }
    }

    fn messages(&mut self, event: &str, data: &str) -> Result<StreamEvent, DialectError> {
        let obj = object(event, data)?;
        let obj = match obj {
            Ok(o) => o,
            Err(e) => return Ok(e),
        };
        let mut chunk = Chunk::default();
        server_time(&obj, &mut chunk);
        let kind = str_field(&obj, "type").unwrap_or_else(|| event.to_owned());
        match kind.as_str() {
            "message_start" => {
                let msg = obj.get("message").and_then(Value::as_object);
                if let Some(m) = msg {
                    chunk.id = str_field(m, "id");
                    if let Some(Value::Object(u)) = m.get("usage") {
                        self.merge_usage(u, &mut chunk);
                    }
                }
            }
            "content_block_start" => {
                let index = u64_field(&obj, "index").unwrap_or(0);
                let block = obj.get("content_block").and_then(Value::as_object);
                let btype = block.and_then(|b| str_field(b, "type")).unwrap_or_default();
                let thinking = matches!(btype.as_str(), "thinking" | "redacted_thinking");
                self.thinking_blocks.retain(|(i, _)| *i != index);
                self.thinking_blocks.push((index, thinking));
                if thinking {
                    chunk.reasoning_seen = true;
                }
                if let Some(b) = block {
                    match btype.as_str() {
                        "text" => chunk.text = str_field(b, "text").unwrap_or_default(),
                        "thinking" => {
                            chunk.reasoning = str_field(b, "thinking").unwrap_or_default()
                        }
                        _ => {}
                    }
                }
            }
            "content_block_delta" => {
                let index = u64_field(&obj, "index").unwrap_or(0);
                let in_thinking = self.thinking_blocks.iter().any(|&(i, t)| i == index && t);
                let delta = obj
                    .get("delta")
                    .and_then(Value::as_object)
                    .ok_or_else(|| shape("content_block_delta without a delta object"))?;
                match str_field(delta, "type").as_deref() {
                    Some("text_delta") => {
                        let t = req_str(delta, "text")?;
                        if in_thinking {
                            chunk.reasoning = t;
                        } else {
                            chunk.text = t;
                        }
                    }
                    Some("thinking_delta") => {
                        chunk.reasoning = req_str(delta, "thinking")?;
                        chunk.reasoning_seen = true;
                    }
                    // Hidden (or redacted) thinking shows only its signature.
                    Some("signature_delta") => chunk.reasoning_seen = true,
                    // A tool call's input is generated as it streams: answer output
                    // (an agent's turn is mostly this).
                    Some("input_json_delta") => chunk.text = req_str(delta, "partial_json")?,
                    // Citations and later kinds: not generated text.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(Value::Object(d)) = obj.get("delta") {
                    chunk.finish_reason = str_field(d, "stop_reason");
                }
                if let Some(Value::Object(u)) = obj.get("usage") {
                    self.output_seen = true;
                    self.merge_usage(u, &mut chunk);
                }
            }
            "message_stop" => {
                chunk.end = true;
            }
            "error" => {
                return Ok(StreamEvent::Error(dialect::parse_error(
                    obj.get("error").unwrap_or(&Value::Object(obj.clone())),
                )))
            }
            // `ping`, `content_block_stop`, and events added later.
            _ => {}
        }
        Ok(StreamEvent::Chunk(chunk))
    }

    /// Anthropic's usage counters replace earlier values (never add to them). Usage is
    /// emitted only once output tokens are known (`message_delta`): the start's
    /// `output_tokens` (often 1) is not a count of streamed tokens.
    fn merge_usage(&mut self, u: &Map<String, Value>, chunk: &mut Chunk) {
        let mut bad = 0;
        let mut get = |k: &str| match opt_count(u.get(k), k) {
            Ok(v) => v,
            Err(_) => {
                bad += 1;
                None
            }
        };
        let input = get("input_tokens");
        let read = get("cache_read_input_tokens");
        let created = get("cache_creation_input_tokens");
        let output = get("output_tokens");
        // Newer streams count thinking apart: `output_tokens_details.thinking_tokens`.
        let thinking = match u.get("output_tokens_details") {
            Some(Value::Object(d)) => {
                match opt_count(d.get("thinking_tokens"), "thinking_tokens") {
                    Ok(v) => v,
                    Err(_) => {
                        bad += 1;
                        None
                    }
                }
            }
            _ => None,
        };
        chunk.bad_fields += bad;
        if thinking.is_some() {
            self.usage.reasoning_tokens = thinking;
        }
        if input.is_some() || read.is_some() || created.is_some() {
            // The prompt is every input token, cached or not: Anthropic counts the three
            // apart (`input_tokens` excludes what was read from or written to the cache).
            let base = input.unwrap_or(self.anthropic_input);
            let r = read.or(self.usage.cached_tokens).unwrap_or(0);
            let c = created.unwrap_or(self.anthropic_created);
            self.anthropic_input = base;
            self.anthropic_created = c;
            self.usage.prompt_tokens = base.saturating_add(r).saturating_add(c);
            if read.is_some() {
                self.usage.cached_tokens = read;
            }
        }
        if let Some(o) = output {
            self.usage.completion_tokens = o;
        }
        if self.output_seen {
            chunk.usage = Some(self.usage);
        }
    }
}

fn shape(msg: impl Into<String>) -> DialectError {
    DialectError::UnexpectedShape(msg.into())
}

/// The event's JSON object; `Err(event)` when the event is an error whatever its data says.
fn object(
    event: &str,
    data: &str,
) -> Result<Result<Map<String, Value>, StreamEvent>, DialectError> {
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        Err(_) if event == "error" => {
            return Ok(Err(StreamEvent::Error(StreamErrorObject {
                message: data.to_owned(),
                kind: None,
                code: None,
            })))
        }
        Err(e) => return Err(DialectError::InvalidJson(e.to_string())),
    };
    match v {
        Value::Object(o) => Ok(Ok(o)),
        _ => Err(shape("event data is not a JSON object")),
    }
}

fn server_time(obj: &Map<String, Value>, chunk: &mut Chunk) {
    match opt_count(obj.get(SERVER_TIME_FIELD), SERVER_TIME_FIELD) {
        Ok(t) => chunk.server_time_us = t,
        Err(_) => chunk.bad_fields += 1,
    }
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn req_str(obj: &Map<String, Value>, key: &str) -> Result<String, DialectError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Ok(String::new()),
        Some(other) => Err(shape(format!("{key} is {other}, expected a string"))),
    }
}

fn u64_field(obj: &Map<String, Value>, key: &str) -> Option<u64> {
    obj.get(key).and_then(Value::as_u64)
}

/// A token count: a non-negative integer a report stores exactly (≤ 2^53 − 1).
fn opt_count(v: Option<&Value>, what: &str) -> Result<Option<u64>, DialectError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(x) if x <= crate::json::MAX_JSON_INTEGER => Ok(Some(x)),
            _ => Err(shape(format!("{what} is {n}, expected a count"))),
        },
        Some(other) => Err(shape(format!("{what} is {other}, expected a count"))),
    }
}

/// OpenAI Responses usage: `input_tokens` (with `input_tokens_details.cached_tokens`),
/// `output_tokens` (reasoning included, `output_tokens_details.reasoning_tokens`).
fn responses_usage(u: &Map<String, Value>, chunk: &mut Chunk) -> Option<Usage> {
    let detail = |outer: &str, inner: &str| match u.get(outer) {
        Some(Value::Object(d)) => opt_count(d.get(inner), inner),
        _ => Ok(None),
    };
    let read = (|| {
        Ok::<_, DialectError>(Usage {
            prompt_tokens: opt_count(u.get("input_tokens"), "input_tokens")?.unwrap_or(0),
            completion_tokens: opt_count(u.get("output_tokens"), "output_tokens")?.unwrap_or(0),
            cached_tokens: detail("input_tokens_details", "cached_tokens")?,
            reasoning_tokens: detail("output_tokens_details", "reasoning_tokens")?,
        })
    })();
    match read {
        Ok(u) => Some(u),
        Err(_) => {
            chunk.bad_fields += 1;
            None
        }
    }
}

/// One event of an OpenAI Responses stream (`POST /v1/responses`, `stream: true`).
fn responses(event: &str, data: &str) -> Result<StreamEvent, DialectError> {
    let obj = match object(event, data)? {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    let mut chunk = Chunk::default();
    server_time(&obj, &mut chunk);
    let kind = str_field(&obj, "type").unwrap_or_else(|| event.to_owned());
    let response = obj.get("response").and_then(Value::as_object);
    match kind.as_str() {
        "response.created" | "response.in_progress" => {
            chunk.id = response.and_then(|r| str_field(r, "id"));
        }
        // Text, and a function call's arguments as they are generated.
        "response.output_text.delta" | "response.function_call_arguments.delta" => {
            chunk.text = req_str(&obj, "delta")?
        }
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
            chunk.reasoning = req_str(&obj, "delta")?;
            chunk.reasoning_seen = true;
        }
        "response.output_item.added" => {
            let item = obj.get("item").and_then(Value::as_object);
            if item.and_then(|i| str_field(i, "type")).as_deref() == Some("reasoning") {
                chunk.reasoning_seen = true;
            }
        }
        "response.completed" | "response.incomplete" => {
            let r = response.ok_or_else(|| shape(format!("{kind} without a response object")))?;
            chunk.id = str_field(r, "id");
            chunk.finish_reason = Some(if kind == "response.incomplete" {
                r.get("incomplete_details")
                    .and_then(Value::as_object)
                    .and_then(|d| str_field(d, "reason"))
                    .unwrap_or_else(|| "incomplete".into())
            } else {
                "completed".into()
            });
            if let Some(Value::Object(u)) = r.get("usage") {
                chunk.usage = responses_usage(u, &mut chunk);
            }
            chunk.end = true;
        }
        "response.failed" => {
            let err = response
                .and_then(|r| r.get("error"))
                .cloned()
                .unwrap_or(Value::Null);
            return Ok(StreamEvent::Error(if err.is_null() {
                StreamErrorObject {
                    message: "response.failed".into(),
                    kind: None,
                    code: None,
                }
            } else {
                dialect::parse_error(&err)
            }));
        }
        // A flat error event: `{"type":"error","code":…,"message":…}`.
        "error" => {
            return Ok(StreamEvent::Error(match obj.get("error") {
                Some(e @ Value::Object(_)) => dialect::parse_error(e),
                _ => dialect::parse_error(&Value::Object(obj.clone())),
            }))
        }
        // `keepalive`, `*.done`, content parts, and events added later.
        _ => {}
    }
    Ok(StreamEvent::Chunk(chunk))
}

/// One chunk of a Gemini stream (`:streamGenerateContent?alt=sse`): a whole
/// `GenerateContentResponse`, no event names and no end sentinel.
fn gemini(data: &str) -> Result<StreamEvent, DialectError> {
    let obj = match object("message", data)? {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    if let Some(err) = obj.get("error") {
        return Ok(StreamEvent::Error(dialect::parse_error(err)));
    }
    let mut chunk = Chunk::default();
    server_time(&obj, &mut chunk);
    chunk.id = str_field(&obj, "responseId");
    if let Some(Value::Object(u)) = obj.get("usageMetadata") {
        let read = (|| {
            let thoughts = opt_count(u.get("thoughtsTokenCount"), "thoughtsTokenCount")?;
            let answer = opt_count(u.get("candidatesTokenCount"), "candidatesTokenCount")?;
            Ok::<_, DialectError>(Usage {
                prompt_tokens: opt_count(u.get("promptTokenCount"), "promptTokenCount")?
                    .unwrap_or(0),
                // Gemini counts thoughts apart from the answer; generated = both.
                completion_tokens: answer.unwrap_or(0).saturating_add(thoughts.unwrap_or(0)),
                cached_tokens: opt_count(
                    u.get("cachedContentTokenCount"),
                    "cachedContentTokenCount",
                )?,
                reasoning_tokens: thoughts,
            })
        })();
        match read {
            Ok(u) => chunk.usage = Some(u),
            Err(_) => chunk.bad_fields += 1,
        }
    }
    let candidates = match obj.get("candidates") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(shape("candidates is not an array")),
    };
    chunk.has_choices = !candidates.is_empty();
    if let Some(c) = candidates.first() {
        let c = c
            .as_object()
            .ok_or_else(|| shape("a candidate is not an object"))?;
        chunk.finish_reason = str_field(c, "finishReason");
        let parts = c
            .get("content")
            .and_then(Value::as_object)
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for p in parts.into_iter().flatten() {
            let Some(p) = p.as_object() else {
                return Err(shape("a part is not an object"));
            };
            // A function call arrives whole in one part: its arguments are generated text.
            let text = match p.get("functionCall") {
                Some(Value::Object(call)) => {
                    call.get("args").map(Value::to_string).unwrap_or_default()
                }
                _ => req_str(p, "text")?,
            };
            if p.contains_key("thoughtSignature") {
                chunk.reasoning_seen = true;
            }
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                chunk.reasoning_seen = true;
                chunk.reasoning.push_str(&text);
            } else {
                chunk.text.push_str(&text);
            }
        }
    }
    Ok(StreamEvent::Chunk(chunk))
}
