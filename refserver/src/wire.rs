//! The four APIs' streamed events, as each vendor shapes them: OpenAI-compatible
//! completions and chat (vLLM's shape), OpenAI Responses, Anthropic Messages and Google
//! Gemini. One [`Writer`] per response renders what happened (start, reasoning and answer
//! text, the end with usage, an error) as that API's SSE text.

use serde_json::{json, Value};

/// Which API a request spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// `POST /v1/completions`.
    Completions,
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/responses`.
    Responses,
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1beta/models/{model}:streamGenerateContent`.
    Gemini,
}

impl Wire {
    /// The API of a request path (Gemini's names the model: returned beside it).
    pub fn of_path(path: &str) -> Option<(Wire, Option<String>)> {
        match path {
            "/v1/completions" => Some((Wire::Completions, None)),
            "/v1/chat/completions" => Some((Wire::Chat, None)),
            "/v1/responses" => Some((Wire::Responses, None)),
            "/v1/messages" => Some((Wire::Messages, None)),
            p => {
                // Gemini serves both API versions.
                let model = p
                    .strip_prefix("/v1beta/models/")
                    .or_else(|| p.strip_prefix("/v1/models/"))?
                    .strip_suffix(":streamGenerateContent")?;
                Some((Wire::Gemini, Some(model.to_owned())))
            }
        }
    }

    /// The response id as this API writes it (the truth's `id` inside).
    pub fn response_id(self, id: u64) -> String {
        match self {
            Wire::Completions => format!("cmpl-{id}"),
            Wire::Chat => format!("chatcmpl-{id}"),
            Wire::Responses => format!("resp_{id}"),
            Wire::Messages => format!("msg_{id}"),
            Wire::Gemini => format!("gem-{id}"),
        }
    }
}

/// Why generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The model stopped by itself.
    Stop,
    /// The token cap was reached.
    Length,
}

/// Token counts at the end (or so far) of one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Prompt tokens.
    pub prompt: u32,
    /// Of those, served from the prefix cache.
    pub cached: u32,
    /// The server has a prefix cache: OpenAI-shaped usage then says how many tokens it
    /// served, 0 included (as OpenAI's API does); without one it says nothing.
    pub cache_on: bool,
    /// Generated tokens (reasoning included).
    pub completion: u32,
    /// Of those, reasoning.
    pub reasoning: u32,
}

/// Renders one response's events.
pub struct Writer {
    wire: Wire,
    id: u64,
    model: String,
    created: u64,
    /// Chat and completions: the client asked for usage (`stream_options`).
    include_usage: bool,
    /// Chat and completions: usage on every chunk.
    continuous_usage: bool,
    /// Responses: the next `sequence_number`.
    seq: u64,
    /// Messages and Responses: the open content block (`true` = reasoning), and the
    /// index of the next one.
    open: Option<bool>,
    next_block: u64,
}

fn sse(event: Option<&str>, v: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {v}\n\n"),
        None => format!("data: {v}\n\n"),
    }
}

impl Writer {
    /// A writer for response `id` of `model`.
    pub fn new(
        wire: Wire,
        id: u64,
        model: &str,
        created: u64,
        include_usage: bool,
        continuous_usage: bool,
    ) -> Self {
        Self {
            wire,
            id,
            model: model.to_owned(),
            created,
            include_usage,
            continuous_usage,
            seq: 0,
            open: None,
            next_block: 0,
        }
    }

    fn responses(&mut self, kind: &str, mut v: Value) -> String {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(self.seq);
        self.seq += 1;
        sse(Some(kind), &v)
    }

    fn usage_openai(c: Counts) -> Value {
        let mut u = json!({"prompt_tokens": c.prompt, "completion_tokens": c.completion, "total_tokens": c.prompt + c.completion});
        if c.cache_on || c.cached > 0 {
            u["prompt_tokens_details"] = json!({"cached_tokens": c.cached});
        }
        if c.reasoning > 0 {
            u["completion_tokens_details"] = json!({"reasoning_tokens": c.reasoning});
        }
        u
    }

    fn usage_gemini(c: Counts) -> Value {
        let mut u = json!({"promptTokenCount": c.prompt, "candidatesTokenCount": c.completion - c.reasoning,
            "totalTokenCount": c.prompt + c.completion});
        if c.reasoning > 0 {
            u["thoughtsTokenCount"] = json!(c.reasoning);
        }
        if c.cached > 0 {
            u["cachedContentTokenCount"] = json!(c.cached);
        }
        u
    }

    fn chat_chunk(
        &self,
        delta: Value,
        text: Option<&str>,
        finish: Option<&str>,
        usage: Option<Value>,
        emit_us: u64,
    ) -> Value {
        let choice = if self.wire == Wire::Chat {
            json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
        } else {
            json!({"index": 0, "text": text.unwrap_or(""), "logprobs": null, "finish_reason": finish, "stop_reason": null})
        };
        let object = if self.wire == Wire::Chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let mut v = json!({"id": self.wire.response_id(self.id), "object": object, "created": self.created,
            "model": self.model, "choices": [choice], "pinbench_emit_us": emit_us});
        if let Some(u) = usage {
            v["usage"] = u;
        }
        v
    }

    /// The events before the first token.
    pub fn start(&mut self, c: Counts, emit_us: u64) -> String {
        let rid = self.wire.response_id(self.id);
        match self.wire {
            Wire::Completions => String::new(),
            Wire::Chat => {
                let u = self.continuous_usage.then(|| Self::usage_openai(c));
                sse(
                    None,
                    &self.chat_chunk(
                        json!({"role": "assistant", "content": ""}),
                        None,
                        None,
                        u,
                        emit_us,
                    ),
                )
            }
            Wire::Responses => {
                let r = json!({"id": rid, "object": "response", "created_at": self.created, "status": "in_progress",
                    "model": self.model, "output": [], "usage": null});
                let mut out = self.responses("response.created", json!({"response": r.clone()}));
                out.push_str(&self.responses("response.in_progress", json!({"response": r})));
                out
            }
            Wire::Messages => {
                let mut out = sse(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {
                    "id": rid, "type": "message", "role": "assistant", "content": [], "model": self.model,
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": c.prompt - c.cached, "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": c.cached, "output_tokens": 1}}}),
                );
                out.push_str(&sse(Some("ping"), &json!({"type": "ping"})));
                out
            }
            Wire::Gemini => String::new(),
        }
    }

    /// Opens a block of the kind (`reasoning` or answer) if another is open; returns
    /// the events that close the old block and open the new one.
    fn block(&mut self, reasoning: bool, c: Counts) -> String {
        if self.open == Some(reasoning) {
            return String::new();
        }
        let mut out = self.close_block();
        let index = self.next_block;
        self.next_block += 1;
        self.open = Some(reasoning);
        let _ = c;
        match self.wire {
            Wire::Messages => {
                let block = if reasoning {
                    json!({"type": "thinking", "thinking": "", "signature": ""})
                } else {
                    json!({"type": "text", "text": ""})
                };
                out.push_str(&sse(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": index, "content_block": block}),
                ));
            }
            Wire::Responses => {
                let item = if reasoning {
                    json!({"id": format!("rs_{}_{index}", self.id), "type": "reasoning", "summary": []})
                } else {
                    json!({"id": format!("msg_{}_{index}", self.id), "type": "message", "status": "in_progress", "role": "assistant", "content": []})
                };
                out.push_str(&self.responses(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                ));
                if !reasoning {
                    out.push_str(&self.responses("response.content_part.added", json!({"item_id": format!("msg_{}_{index}", self.id),
                        "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
                }
            }
            _ => {}
        }
        out
    }

    fn close_block(&mut self) -> String {
        let Some(reasoning) = self.open.take() else {
            return String::new();
        };
        let index = self.next_block - 1;
        match self.wire {
            Wire::Messages => {
                let mut out = String::new();
                if reasoning {
                    out.push_str(&sse(Some("content_block_delta"), &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": format!("sig-{}", self.id)}})));
                }
                out.push_str(&sse(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": index}),
                ));
                out
            }
            Wire::Responses => {
                let kind = if reasoning { "reasoning" } else { "message" };
                self.responses(
                    "response.output_item.done",
                    json!({"output_index": index, "item": {"type": kind, "status": "completed"}}),
                )
            }
            _ => String::new(),
        }
    }

    /// Reasoning that is generated but not sent: the APIs that say so (Anthropic's
    /// empty thinking block with its signature, Responses' reasoning item) say it here.
    pub fn hidden_reasoning(&mut self, c: Counts) -> String {
        match self.wire {
            Wire::Messages | Wire::Responses => {
                let mut out = self.block(true, c);
                out.push_str(&self.close_block());
                out
            }
            _ => String::new(),
        }
    }

    /// One event with `text`: reasoning or answer; `c` counts every token so far.
    pub fn text(&mut self, reasoning: bool, text: &str, c: Counts, emit_us: u64) -> String {
        let mut out = self.block(reasoning, c);
        let index = self.next_block.saturating_sub(1);
        let e = match self.wire {
            Wire::Completions | Wire::Chat => {
                let u = self.continuous_usage.then(|| Self::usage_openai(c));
                let delta = if reasoning {
                    json!({"reasoning_content": text})
                } else {
                    json!({"content": text})
                };
                sse(None, &self.chat_chunk(delta, Some(text), None, u, emit_us))
            }
            Wire::Responses => {
                let (kind, item) = if reasoning {
                    (
                        "response.reasoning_text.delta",
                        format!("rs_{}_{index}", self.id),
                    )
                } else {
                    (
                        "response.output_text.delta",
                        format!("msg_{}_{index}", self.id),
                    )
                };
                self.responses(kind, json!({"item_id": item, "output_index": index, "content_index": 0, "delta": text, "pinbench_emit_us": emit_us}))
            }
            Wire::Messages => {
                let delta = if reasoning {
                    json!({"type": "thinking_delta", "thinking": text})
                } else {
                    json!({"type": "text_delta", "text": text})
                };
                sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": delta, "pinbench_emit_us": emit_us}),
                )
            }
            Wire::Gemini => {
                let part = if reasoning {
                    json!({"text": text, "thought": true})
                } else {
                    json!({"text": text})
                };
                sse(
                    None,
                    &json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}],
                    "usageMetadata": Self::usage_gemini(c), "modelVersion": self.model,
                    "responseId": self.wire.response_id(self.id), "pinbench_emit_us": emit_us}),
                )
            }
        };
        out.push_str(&e);
        out
    }

    /// The events of a normal end; `done` adds chat's `[DONE]`.
    pub fn finish(&mut self, end: End, c: Counts, done: bool, emit_us: u64) -> String {
        let mut out = self.close_block();
        let rid = self.wire.response_id(self.id);
        match self.wire {
            Wire::Completions | Wire::Chat => {
                let reason = if end == End::Stop { "stop" } else { "length" };
                let u = self.continuous_usage.then(|| Self::usage_openai(c));
                let text = (self.wire == Wire::Completions).then_some("");
                out.push_str(&sse(
                    None,
                    &self.chat_chunk(json!({}), text, Some(reason), u, emit_us),
                ));
                if self.include_usage {
                    let mut v = self.chat_chunk(
                        json!({}),
                        None,
                        None,
                        Some(Self::usage_openai(c)),
                        emit_us,
                    );
                    v["choices"] = json!([]);
                    out.push_str(&sse(None, &v));
                }
                if done {
                    out.push_str("data: [DONE]\n\n");
                }
            }
            Wire::Responses => {
                let mut usage = json!({"input_tokens": c.prompt, "input_tokens_details": {"cached_tokens": c.cached},
                    "output_tokens": c.completion, "output_tokens_details": {"reasoning_tokens": c.reasoning},
                    "total_tokens": c.prompt + c.completion});
                if c.reasoning == 0 {
                    usage["output_tokens_details"] = json!({"reasoning_tokens": 0});
                }
                let (kind, status, details) = match end {
                    End::Stop => ("response.completed", "completed", Value::Null),
                    End::Length => (
                        "response.incomplete",
                        "incomplete",
                        json!({"reason": "max_output_tokens"}),
                    ),
                };
                let r = json!({"id": rid, "object": "response", "created_at": self.created, "status": status,
                    "incomplete_details": details, "model": self.model, "usage": usage});
                out.push_str(
                    &self.responses(kind, json!({"response": r, "pinbench_emit_us": emit_us})),
                );
            }
            Wire::Messages => {
                let reason = if end == End::Stop {
                    "end_turn"
                } else {
                    "max_tokens"
                };
                out.push_str(&sse(
                    Some("message_delta"),
                    &json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": null},
                    "usage": {"output_tokens": c.completion}}),
                ));
                out.push_str(&sse(Some("message_stop"), &json!({"type": "message_stop"})));
            }
            Wire::Gemini => {
                let reason = if end == End::Stop {
                    "STOP"
                } else {
                    "MAX_TOKENS"
                };
                out.push_str(&sse(
                    None,
                    &json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": reason, "index": 0}], "usageMetadata": Self::usage_gemini(c),
                    "modelVersion": self.model, "responseId": rid}),
                ));
            }
        }
        out
    }

    /// An error in the middle of the stream, as the API sends one.
    pub fn error(&mut self, message: &str) -> String {
        match self.wire {
            Wire::Completions | Wire::Chat => sse(
                None,
                &json!({"error": {"message": message, "type": "server_error", "param": null, "code": 500}}),
            ),
            Wire::Responses => self.responses(
                "error",
                json!({"code": "server_error", "message": message, "param": null}),
            ),
            Wire::Messages => sse(
                Some("error"),
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            ),
            Wire::Gemini => sse(
                None,
                &json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}}),
            ),
        }
    }
}
