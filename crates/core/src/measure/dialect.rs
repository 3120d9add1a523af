//! API dialects: request bodies for the OpenAI-compatible `/v1/completions` and
//! `/v1/chat/completions`, OpenAI Responses, Anthropic Messages and Google Gemini, and the
//! parser of the OpenAI-compatible streamed chunks (the vendors' own streams are read by
//! [`crate::vendor`]).
//!
//! Chunk parsing is tolerant of fields it does not know (servers add many) and strict
//! about the ones it reads: a field of the wrong type is a [`DialectError`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The extra field in which the pinbench reference server puts each event's emission time
/// (server monotonic µs). OpenAI clients ignore it.
pub const SERVER_TIME_FIELD: &str = "pinbench_emit_us";

/// Which API is spoken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// OpenAI-compatible `POST /v1/completions` with a `prompt`.
    Completions,
    /// OpenAI-compatible `POST /v1/chat/completions` with `messages`.
    Chat,
    /// OpenAI Responses: `POST /v1/responses` with `input`.
    Responses,
    /// Anthropic Messages: `POST /v1/messages`.
    Messages,
    /// Google Gemini: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`.
    Gemini,
}

impl Dialect {
    /// Every dialect, in the order a form offers them.
    pub const ALL: [Dialect; 5] = [
        Dialect::Completions,
        Dialect::Chat,
        Dialect::Responses,
        Dialect::Messages,
        Dialect::Gemini,
    ];

    /// The stable name (pins, reports).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Completions => "completions",
            Dialect::Chat => "chat",
            Dialect::Responses => "responses",
            Dialect::Messages => "messages",
            Dialect::Gemini => "gemini",
        }
    }

    /// Its name for people (`Anthropic Messages`).
    pub fn label(self) -> &'static str {
        match self {
            Dialect::Completions => "OpenAI completions",
            Dialect::Chat => "OpenAI chat completions",
            Dialect::Responses => "OpenAI Responses",
            Dialect::Messages => "Anthropic Messages",
            Dialect::Gemini => "Gemini",
        }
    }

    /// The dialect of a stable name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The request path of a streamed generation, relative to the server's base URL
    /// (which ends before `/v1`); Gemini names the model in its path.
    pub fn path(self, model: &str) -> String {
        match self {
            Dialect::Completions => "/v1/completions".into(),
            Dialect::Chat => "/v1/chat/completions".into(),
            Dialect::Responses => "/v1/responses".into(),
            Dialect::Messages => "/v1/messages".into(),
            Dialect::Gemini => format!(
                "/v1beta/models/{}:streamGenerateContent?alt=sse",
                model.strip_prefix("models/").unwrap_or(model)
            ),
        }
    }

    /// Whether the dialect is OpenAI-compatible (`ignore_eos`, `min_tokens` and the
    /// `stream_options` of vLLM, SGLang and llama.cpp apply).
    pub fn is_openai_compatible(self) -> bool {
        matches!(self, Dialect::Completions | Dialect::Chat)
    }

    /// Whether a normal stream ends with a sentinel event (`[DONE]`, `message_stop`,
    /// `response.completed`); Gemini's simply ends after the chunk with `finishReason`.
    pub fn has_end_event(self) -> bool {
        !matches!(self, Dialect::Gemini)
    }
}

/// How the output length is held at the requested value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthEnforcement {
    /// `ignore_eos: true` (vLLM, SGLang, llama.cpp).
    IgnoreEos,
    /// `min_tokens = max_tokens` (vLLM).
    MinTokens,
    /// Both `ignore_eos` and `min_tokens` (vLLM chat: stop tokens still end generation
    /// under `ignore_eos` alone).
    Both,
    /// Nothing: the server may stop early; attainment is measured and flagged.
    None,
}

/// Whether the model reasons before it answers, and whether the stream shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningMode {
    /// The model does not reason (or reasoning is switched off).
    None,
    /// It reasons and the stream shows the reasoning (or a summary of it).
    Visible,
    /// It reasons and the stream does not show it; only usage (if anything) counts it.
    Hidden,
}

/// What a request asks of a reasoning model: the effort level or the token budget, as
/// sent. Part of the *reasoning* pin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningRequest {
    /// Reasoning, shown, hidden or none.
    pub mode: ReasoningMode,
    /// The effort sent (`reasoning_effort`, Responses `reasoning.effort`, Gemini
    /// `thinkingLevel`): `none`, `minimal`, `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// The token budget sent (Anthropic `thinking.budget_tokens`, Gemini
    /// `thinkingBudget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

impl ReasoningRequest {
    /// No reasoning, nothing sent.
    pub fn none() -> Self {
        Self {
            mode: ReasoningMode::None,
            effort: None,
            budget_tokens: None,
        }
    }
}

/// Everything needed to build one streaming request body.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpec {
    /// API model id.
    pub model: String,
    /// The prompt text (without the nonce).
    pub prompt: String,
    /// Output tokens requested (the cap sent: reasoning included where the API counts it).
    pub max_tokens: u32,
    /// How the output length is enforced.
    pub enforcement: LengthEnforcement,
    /// Sampling temperature, if sent.
    pub temperature: Option<f64>,
    /// Other sampling fields sent verbatim (e.g. `top_p`, `seed`): the sampling pin's map.
    pub extra: BTreeMap<String, Value>,
    /// A unique prefix that defeats prefix caching (prepended to the prompt).
    pub nonce: Option<String>,
    /// Ask for usage at the end of the stream (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Ask for usage in every chunk (vLLM `continuous_usage_stats`).
    pub continuous_usage: bool,
    /// Reasoning asked for (effort or budget), as sent.
    pub reasoning: ReasoningRequest,
    /// Earlier turns of the conversation, oldest first: each user message and the answer
    /// received to it (empty for a single turn).
    pub history: Vec<(String, String)>,
}

impl RequestSpec {
    /// The JSON body for `dialect`, always streaming (Gemini streams by its path).
    pub fn body(&self, dialect: Dialect) -> Value {
        let prompt = match &self.nonce {
            Some(n) => format!("{n}{}", self.prompt),
            None => self.prompt.clone(),
        };
        // Every message of the conversation in the dialect's shape: the earlier turns and
        // their answers, then this turn's message. A completions prompt is the history's
        // text run together (the model continues it).
        let messages = |assistant: &str, shape: &dyn Fn(&str, &str) -> Value| -> Value {
            let mut m: Vec<Value> = Vec::with_capacity(2 * self.history.len() + 1);
            for (user, answer) in &self.history {
                m.push(shape("user", user));
                m.push(shape(assistant, answer));
            }
            m.push(shape("user", &prompt));
            Value::Array(m)
        };
        let role_content = |role: &str, text: &str| json!({ "role": role, "content": text });
        let mut body = Map::new();
        let r = &self.reasoning;
        let reasons = r.mode != ReasoningMode::None;
        match dialect {
            Dialect::Completions | Dialect::Chat => {
                body.insert("model".into(), json!(self.model));
                if dialect == Dialect::Completions {
                    let mut text = String::new();
                    for (user, answer) in &self.history {
                        text.push_str(user);
                        text.push_str(answer);
                    }
                    text.push_str(&prompt);
                    body.insert("prompt".into(), json!(text));
                } else {
                    body.insert("messages".into(), messages("assistant", &role_content));
                }
                // OpenAI's reasoning models refuse `max_tokens`.
                let cap = if reasons && dialect == Dialect::Chat {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                body.insert(cap.into(), json!(self.max_tokens));
                body.insert("stream".into(), json!(true));
                if self.include_usage || self.continuous_usage {
                    let mut so = Map::new();
                    so.insert("include_usage".into(), json!(true));
                    if self.continuous_usage {
                        so.insert("continuous_usage_stats".into(), json!(true));
                    }
                    body.insert("stream_options".into(), Value::Object(so));
                }
                if matches!(
                    self.enforcement,
                    LengthEnforcement::IgnoreEos | LengthEnforcement::Both
                ) {
                    body.insert("ignore_eos".into(), json!(true));
                }
                if matches!(
                    self.enforcement,
                    LengthEnforcement::MinTokens | LengthEnforcement::Both
                ) {
                    body.insert("min_tokens".into(), json!(self.max_tokens));
                }
                if let Some(e) = &r.effort {
                    body.insert("reasoning_effort".into(), json!(e));
                }
            }
            Dialect::Responses => {
                body.insert("model".into(), json!(self.model));
                if self.history.is_empty() {
                    body.insert("input".into(), json!(prompt));
                } else {
                    body.insert("input".into(), messages("assistant", &role_content));
                }
                body.insert("max_output_tokens".into(), json!(self.max_tokens));
                body.insert("stream".into(), json!(true));
                let mut reasoning = Map::new();
                if let Some(e) = &r.effort {
                    reasoning.insert("effort".into(), json!(e));
                }
                if r.mode == ReasoningMode::Visible {
                    reasoning.insert("summary".into(), json!("auto"));
                }
                if !reasoning.is_empty() {
                    body.insert("reasoning".into(), Value::Object(reasoning));
                }
            }
            Dialect::Messages => {
                body.insert("model".into(), json!(self.model));
                body.insert("max_tokens".into(), json!(self.max_tokens));
                body.insert("messages".into(), messages("assistant", &role_content));
                body.insert("stream".into(), json!(true));
                if let (true, Some(b)) = (reasons, r.budget_tokens) {
                    body.insert(
                        "thinking".into(),
                        json!({ "type": "enabled", "budget_tokens": b }),
                    );
                }
            }
            Dialect::Gemini => {
                let part =
                    |role: &str, text: &str| json!({ "role": role, "parts": [{ "text": text }] });
                body.insert("contents".into(), messages("model", &part));
                let mut gc = Map::new();
                gc.insert("maxOutputTokens".into(), json!(self.max_tokens));
                if let Some(t) = self.temperature {
                    gc.insert("temperature".into(), json!(t));
                }
                let mut tc = Map::new();
                if let Some(b) = r.budget_tokens {
                    tc.insert("thinkingBudget".into(), json!(b));
                }
                if let Some(e) = &r.effort {
                    tc.insert("thinkingLevel".into(), json!(e));
                }
                if r.mode == ReasoningMode::Visible {
                    tc.insert("includeThoughts".into(), json!(true));
                }
                if !tc.is_empty() {
                    gc.insert("thinkingConfig".into(), Value::Object(tc));
                }
                for (k, v) in &self.extra {
                    gc.insert(k.clone(), v.clone());
                }
                body.insert("generationConfig".into(), Value::Object(gc));
                return Value::Object(body);
            }
        }
        if let Some(t) = self.temperature {
            body.insert("temperature".into(), json!(t));
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }
}

/// Token counts reported by the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from a prefix cache, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Of the generated tokens, those the model spent reasoning, when the server says
    /// (`completion_tokens_details.reasoning_tokens`, Responses
    /// `output_tokens_details.reasoning_tokens`, Gemini `thoughtsTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// llama.cpp's own per-request timings (final chunk), in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTimings {
    /// Prompt tokens processed (`prompt_n`).
    pub prompt_n: u64,
    /// Prefill time (`prompt_ms`), µs.
    pub prompt_us: u64,
    /// Tokens predicted (`predicted_n`).
    pub predicted_n: u64,
    /// Decode time (`predicted_ms`), µs.
    pub predicted_us: u64,
    /// Prompt tokens served from the slot's cache (`cache_n`), when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u64>,
}

/// An error object sent inside the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamErrorObject {
    /// `error.message`.
    pub message: String,
    /// `error.type`, if any.
    pub kind: Option<String>,
    /// `error.code` as text, if any.
    pub code: Option<String>,
}

/// One parsed streamed chunk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chunk {
    /// Generated text in this chunk (choice 0: `text` or `delta.content`).
    pub text: String,
    /// Reasoning text (`delta.reasoning_content` / `delta.reasoning`).
    pub reasoning: String,
    /// `finish_reason`, when present.
    pub finish_reason: Option<String>,
    /// Usage, when present (final chunk, or every chunk with continuous usage).
    pub usage: Option<Usage>,
    /// Whether the chunk had a non-empty `choices` array.
    pub has_choices: bool,
    /// The reference server's emission time, µs.
    pub server_time_us: Option<u64>,
    /// The response id (`id`), which correlates the request with server logs.
    pub id: Option<String>,
    /// llama.cpp `timings`, when present.
    pub timings: Option<ServerTimings>,
    /// Optional fields of the wrong type that were ignored (the chunk's text is kept).
    pub bad_fields: u32,
    /// The stream says the model reasons here, shown or not (a thinking block, its
    /// signature, a reasoning item): hidden reasoning is known by this alone.
    pub reasoning_seen: bool,
    /// The dialect's normal end of the stream (`message_stop`, `response.completed`).
    pub end: bool,
}

impl Chunk {
    /// Whether the chunk carries generated text (content or reasoning).
    pub fn has_text(&self) -> bool {
        !self.text.is_empty() || !self.reasoning.is_empty()
    }
}

/// One SSE event's meaning.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// A data chunk.
    Chunk(Chunk),
    /// `data: [DONE]`.
    Done,
    /// An error object inside the stream.
    Error(StreamErrorObject),
}

/// Errors from parsing a chunk.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    /// The event's data is not JSON.
    #[error("chunk is not valid JSON: {0}")]
    InvalidJson(String),
    /// The JSON is not a chunk of this dialect (e.g. a field of the wrong type).
    #[error("chunk has an unexpected shape: {0}")]
    UnexpectedShape(String),
}

fn shape(msg: impl Into<String>) -> DialectError {
    DialectError::UnexpectedShape(msg.into())
}

fn opt_str(v: Option<&Value>, what: &str) -> Result<Option<String>, DialectError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(shape(format!("{what} is {other}, expected a string"))),
    }
}

fn opt_u64(v: Option<&Value>, what: &str) -> Result<Option<u64>, DialectError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| shape(format!("{what} is {n}, expected a non-negative integer"))),
        Some(other) => Err(shape(format!("{what} is {other}, expected an integer"))),
    }
}

fn ms_to_us(v: Option<&Value>, what: &str) -> Result<u64, DialectError> {
    match v {
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| (f * 1000.0).round() as u64)
            .ok_or_else(|| shape(format!("{what} is {n}"))),
        _ => Err(shape(format!("{what} missing or not a number"))),
    }
}

fn parse_usage(v: &Value) -> Result<Usage, DialectError> {
    let obj = v
        .as_object()
        .ok_or_else(|| shape("usage is not an object"))?;
    // Counts a report stores exactly (≤ 2^53 − 1); a larger one is not a count.
    let opt_u64 = |v: Option<&Value>, what: &str| {
        opt_u64(v, what)?
            .map(|n| {
                (n <= crate::json::MAX_JSON_INTEGER)
                    .then_some(n)
                    .ok_or_else(|| shape(format!("{what} is {n}, beyond 2^53")))
            })
            .transpose()
    };
    Ok(Usage {
        prompt_tokens: opt_u64(obj.get("prompt_tokens"), "usage.prompt_tokens")?.unwrap_or(0),
        completion_tokens: opt_u64(obj.get("completion_tokens"), "usage.completion_tokens")?
            .unwrap_or(0),
        cached_tokens: match obj.get("prompt_tokens_details") {
            Some(Value::Object(d)) => opt_u64(d.get("cached_tokens"), "cached_tokens")?,
            _ => None,
        },
        reasoning_tokens: match obj.get("completion_tokens_details") {
            Some(Value::Object(d)) => opt_u64(d.get("reasoning_tokens"), "reasoning_tokens")?,
            _ => None,
        },
    })
}

/// An error object of any dialect's stream: `message`, `type` (Gemini: `status`) and
/// `code`; a string is the message; anything else, its JSON text.
pub(crate) fn parse_error(v: &Value) -> StreamErrorObject {
    let text = |x: Option<&Value>| match x {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    match v {
        Value::Object(o) => StreamErrorObject {
            message: text(o.get("message")).unwrap_or_else(|| v.to_string()),
            kind: text(o.get("type")).or_else(|| text(o.get("status"))),
            code: text(o.get("code")),
        },
        Value::String(s) => StreamErrorObject {
            message: s.clone(),
            kind: None,
            code: None,
        },
        other => StreamErrorObject {
            message: other.to_string(),
            kind: None,
            code: None,
        },
    }
}

fn parse_timings(t: &Map<String, Value>) -> Result<ServerTimings, DialectError> {
    Ok(ServerTimings {
        prompt_n: opt_u64(t.get("prompt_n"), "timings.prompt_n")?.unwrap_or(0),
        prompt_us: ms_to_us(t.get("prompt_ms"), "timings.prompt_ms")?,
        predicted_n: opt_u64(t.get("predicted_n"), "timings.predicted_n")?.unwrap_or(0),
        predicted_us: ms_to_us(t.get("predicted_ms"), "timings.predicted_ms")?,
        cache_n: opt_u64(t.get("cache_n"), "timings.cache_n")?,
    })
}

/// Parses one SSE event (`event` type and `data`) of an OpenAI-compatible streamed
/// completion (the vendors' streams: [`crate::vendor::StreamDecoder`]).
pub fn parse_event(dialect: Dialect, event: &str, data: &str) -> Result<StreamEvent, DialectError> {
    if data.trim() == "[DONE]" {
        return Ok(StreamEvent::Done);
    }
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        // An `event: error` is an error whatever its data says.
        Err(_) if event == "error" => {
            return Ok(StreamEvent::Error(StreamErrorObject {
                message: data.to_owned(),
                kind: None,
                code: None,
            }))
        }
        Err(e) => return Err(DialectError::InvalidJson(e.to_string())),
    };
    let obj = v
        .as_object()
        .ok_or_else(|| shape("chunk is not a JSON object"))?;
    if let Some(err) = obj.get("error") {
        return Ok(StreamEvent::Error(parse_error(err)));
    }
    if event == "error" {
        return Ok(StreamEvent::Error(parse_error(&v)));
    }
    let mut chunk = Chunk::default();
    // Optional fields: one of the wrong type is counted and ignored, never a reason to
    // lose the chunk's text (which would move TTFT).
    let mut soft = |r: Result<(), DialectError>| {
        if r.is_err() {
            chunk.bad_fields += 1;
        }
    };
    let mut server_time = None;
    let mut id = None;
    let mut usage = None;
    let mut timings = None;
    soft(opt_u64(obj.get(SERVER_TIME_FIELD), SERVER_TIME_FIELD).map(|v| server_time = v));
    soft(opt_str(obj.get("id"), "id").map(|v| id = v));
    match obj.get("usage") {
        None | Some(Value::Null) => {}
        Some(u) => soft(parse_usage(u).map(|u| usage = Some(u))),
    }
    if let Some(Value::Object(t)) = obj.get("timings") {
        soft(parse_timings(t).map(|t| timings = Some(t)));
    }
    chunk.server_time_us = server_time;
    chunk.id = id;
    chunk.usage = usage;
    chunk.timings = timings;
    let choices = match obj.get("choices") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(shape("choices is not an array")),
    };
    chunk.has_choices = !choices.is_empty();
    for choice in &choices {
        let c = choice
            .as_object()
            .ok_or_else(|| shape("a choice is not an object"))?;
        let index = match opt_u64(c.get("index"), "choices[].index") {
            Ok(i) => i.unwrap_or(0),
            Err(_) => {
                chunk.bad_fields += 1;
                0
            }
        };
        if index != 0 {
            continue;
        }
        match opt_str(c.get("finish_reason"), "finish_reason") {
            Ok(Some(r)) => chunk.finish_reason = Some(r),
            Ok(None) => {}
            // A finish reason of another type still says the choice finished.
            Err(_) => {
                chunk.bad_fields += 1;
                chunk.finish_reason = c.get("finish_reason").map(Value::to_string);
            }
        }
        // A chunk of the other dialect carries no text field of ours: say so rather than
        // drop its tokens silently.
        match dialect {
            Dialect::Completions if c.contains_key("delta") && !c.contains_key("text") => {
                return Err(shape(
                    "a chat chunk (choices[].delta) on the completions dialect",
                ));
            }
            Dialect::Chat if c.contains_key("text") && !c.contains_key("delta") => {
                return Err(shape(
                    "a completions chunk (choices[].text) on the chat dialect",
                ));
            }
            _ => {}
        }
        match dialect {
            Dialect::Completions => {
                if let Some(t) = opt_str(c.get("text"), "choices[].text")? {
                    chunk.text.push_str(&t);
                }
            }
            // The vendors' own dialects never reach here (`vendor::StreamDecoder`).
            _ => {
                if let Some(d) = c.get("delta") {
                    let d = d
                        .as_object()
                        .ok_or_else(|| shape("delta is not an object"))?;
                    if let Some(t) = opt_str(d.get("content"), "delta.content")? {
                        chunk.text.push_str(&t);
                    }
                    // Tool calls' arguments are generated output, streamed as text.
                    if let Some(Value::Array(calls)) = d.get("tool_calls") {
                        for call in calls {
                            let args = call.get("function").and_then(|f| f.get("arguments"));
                            if let Some(t) = opt_str(args, "tool_calls[].function.arguments")? {
                                chunk.text.push_str(&t);
                            }
                        }
                    }
                    for key in ["reasoning_content", "reasoning"] {
                        if let Some(t) = opt_str(d.get(key), key)? {
                            chunk.reasoning_seen |= !t.is_empty();
                            chunk.reasoning.push_str(&t);
                        }
                    }
                }
            }
        }
    }
    Ok(StreamEvent::Chunk(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A later turn carries its history in each API's own shape.
    #[test]
    fn a_later_turn_carries_its_history_in_each_shape() {
        let mut s = spec();
        s.nonce = None;
        s.history = vec![("u1".into(), "a1".into())];
        assert_eq!(s.body(Dialect::Completions)["prompt"], "u1a1hello");
        let chat = json!([
            {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "hello"}
        ]);
        assert_eq!(s.body(Dialect::Chat)["messages"], chat);
        assert_eq!(s.body(Dialect::Messages)["messages"], chat);
        assert_eq!(s.body(Dialect::Responses)["input"], chat);
        assert_eq!(
            s.body(Dialect::Gemini)["contents"],
            json!([
                {"role": "user", "parts": [{"text": "u1"}]},
                {"role": "model", "parts": [{"text": "a1"}]},
                {"role": "user", "parts": [{"text": "hello"}]}
            ])
        );
        // A first turn is sent as before: Responses takes the bare text.
        s.history.clear();
        assert_eq!(s.body(Dialect::Responses)["input"], "hello");
    }

    fn spec() -> RequestSpec {
        RequestSpec {
            model: "m".into(),
            prompt: "hello".into(),
            max_tokens: 64,
            enforcement: LengthEnforcement::IgnoreEos,
            temperature: Some(0.0),
            extra: BTreeMap::new(),
            nonce: Some("[n:1f] ".into()),
            include_usage: true,
            continuous_usage: false,
            reasoning: ReasoningRequest::none(),
            history: Vec::new(),
        }
    }

    #[test]
    fn completions_body() {
        let body = spec().body(Dialect::Completions);
        assert_eq!(
            body,
            json!({"model":"m","prompt":"[n:1f] hello","max_tokens":64,"stream":true,
                   "stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0.0})
        );
    }

    #[test]
    fn chat_body_with_min_tokens_and_continuous_usage() {
        let mut s = spec();
        s.enforcement = LengthEnforcement::Both;
        s.continuous_usage = true;
        s.nonce = None;
        s.temperature = None;
        s.extra.insert("seed".into(), json!(7));
        let body = s.body(Dialect::Chat);
        assert_eq!(
            body,
            json!({"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":64,
                   "stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},
                   "ignore_eos":true,"min_tokens":64,"seed":7})
        );
        assert_eq!(Dialect::Chat.path("m"), "/v1/chat/completions");
    }

    #[test]
    fn no_enforcement_sends_neither_field() {
        let mut s = spec();
        s.enforcement = LengthEnforcement::None;
        s.include_usage = false;
        let body = s.body(Dialect::Completions);
        let o = body.as_object().expect("object");
        assert!(!o.contains_key("ignore_eos") && !o.contains_key("min_tokens"));
        assert!(!o.contains_key("stream_options"));
    }

    fn chunk(d: Dialect, data: &str) -> Chunk {
        match parse_event(d, "message", data).expect("parses") {
            StreamEvent::Chunk(c) => c,
            other => panic!("not a chunk: {other:?}"),
        }
    }

    #[test]
    fn openai_chat_forms() {
        let role = chunk(
            Dialect::Chat,
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert!(!role.has_text() && role.has_choices);
        let c = chunk(
            Dialect::Chat,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}"#,
        );
        assert_eq!(c.text, "Hi");
        let r = chunk(
            Dialect::Chat,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}"#,
        );
        assert_eq!(
            (r.text.as_str(), r.reasoning.as_str(), r.has_text()),
            ("", "hmm", true)
        );
        let fin = chunk(
            Dialect::Chat,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        );
        assert_eq!(fin.finish_reason.as_deref(), Some("length"));
        assert!(!fin.has_text());
        let u = chunk(
            Dialect::Chat,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":8}}}"#,
        );
        assert_eq!(
            u.usage,
            Some(Usage {
                prompt_tokens: 12,
                completion_tokens: 5,
                cached_tokens: Some(8),
                reasoning_tokens: None,
            })
        );
        assert!(!u.has_choices);
    }

    #[test]
    fn vllm_continuous_usage_and_llama_final_chunk() {
        let c = chunk(
            Dialect::Completions,
            r#"{"choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":4,"total_tokens":6,"completion_tokens":2}}"#,
        );
        assert_eq!(
            (c.text.as_str(), c.usage.map(|u| u.completion_tokens)),
            (" the", Some(2))
        );
        let l = chunk(
            Dialect::Completions,
            r#"{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1,"model":"g","object":"text_completion","usage":{"completion_tokens":64,"prompt_tokens":9,"total_tokens":73},"timings":{"cache_n":4,"prompt_n":9,"prompt_ms":12.5,"prompt_per_token_ms":1.3,"prompt_per_second":720.0,"predicted_n":64,"predicted_ms":700.25,"predicted_per_token_ms":10.9,"predicted_per_second":91.4}}"#,
        );
        assert_eq!(l.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            l.timings,
            Some(ServerTimings {
                prompt_n: 9,
                prompt_us: 12_500,
                predicted_n: 64,
                predicted_us: 700_250,
                cache_n: Some(4),
            })
        );
        let t = chunk(
            Dialect::Completions,
            r#"{"choices":[{"index":0,"text":"x"}],"pinbench_emit_us":123}"#,
        );
        assert_eq!(t.server_time_us, Some(123));
    }

    #[test]
    fn done_and_errors() {
        assert_eq!(
            parse_event(Dialect::Chat, "message", "[DONE]"),
            Ok(StreamEvent::Done)
        );
        assert_eq!(
            parse_event(
                Dialect::Chat,
                "message",
                r#"{"error":{"message":"boom","type":"server_error","code":500}}"#
            ),
            Ok(StreamEvent::Error(StreamErrorObject {
                message: "boom".into(),
                kind: Some("server_error".into()),
                code: Some("500".into())
            }))
        );
        assert!(matches!(
            parse_event(Dialect::Chat, "error", r#"{"message":"x"}"#),
            Ok(StreamEvent::Error(_))
        ));
        assert!(matches!(
            parse_event(Dialect::Chat, "message", "{not json"),
            Err(DialectError::InvalidJson(_))
        ));
        assert!(matches!(
            parse_event(Dialect::Chat, "message", "[1,2]"),
            Err(DialectError::UnexpectedShape(_))
        ));
        assert!(matches!(
            parse_event(
                Dialect::Chat,
                "message",
                r#"{"choices":[{"delta":{"content":5}}]}"#
            ),
            Err(DialectError::UnexpectedShape(_))
        ));
        assert!(matches!(
            parse_event(Dialect::Completions, "message", r#"{"choices":{}}"#),
            Err(DialectError::UnexpectedShape(_))
        ));
        // A bad optional field is ignored and counted; the chunk survives.
        let c = chunk(
            Dialect::Completions,
            r#"{"usage":{"completion_tokens":-1}}"#,
        );
        assert_eq!((c.usage, c.bad_fields), (None, 1));
        // `event: error` with data that is not JSON is still a stream error.
        assert_eq!(
            parse_event(Dialect::Chat, "error", "upstream timed out"),
            Ok(StreamEvent::Error(StreamErrorObject {
                message: "upstream timed out".into(),
                kind: None,
                code: None
            }))
        );
    }

    #[test]
    fn bad_optional_fields_keep_the_text() {
        let c = chunk(
            Dialect::Completions,
            r#"{"id":7,"choices":[{"index":0,"text":"hi","finish_reason":null}],"timings":{"prompt_n":3,"prompt_ms":1.0,"predicted_n":1,"predicted_ms":null}}"#,
        );
        assert_eq!(c.text, "hi");
        assert_eq!((c.id, c.timings, c.bad_fields), (None, None, 2));
        let c = chunk(
            Dialect::Chat,
            r#"{"choices":[{"index":"0","delta":{"content":"a"},"finish_reason":5}]}"#,
        );
        assert_eq!(
            (c.text.as_str(), c.finish_reason.as_deref(), c.bad_fields),
            ("a", Some("5"), 2)
        );
    }

    #[test]
    fn the_wrong_dialect_is_an_error_not_silence() {
        assert!(matches!(
            parse_event(
                Dialect::Completions,
                "message",
                r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#
            ),
            Err(DialectError::UnexpectedShape(_))
        ));
        assert!(matches!(
            parse_event(
                Dialect::Chat,
                "message",
                r#"{"choices":[{"index":0,"text":"x"}]}"#
            ),
            Err(DialectError::UnexpectedShape(_))
        ));
    }

    #[test]
    fn other_choices_are_ignored() {
        let c = chunk(
            Dialect::Completions,
            r#"{"choices":[{"index":1,"text":"no"},{"index":0,"text":"yes"}]}"#,
        );
        assert_eq!(c.text, "yes");
    }
}
