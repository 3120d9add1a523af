//! HTTP layer: routes, CORS, OpenAI-shaped streaming and errors, truth and metrics.

use crate::reasoning::Reasoning;
use crate::wire::{Counts, End, Wire, Writer};
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::engine::{Emit, EngineHandle, FinishReason, Job};
use crate::faults::Faults;
use crate::micros_since;
use crate::profile::{Batching, Profile};
use crate::tokenizer;
use crate::truth::{Truth, TruthStore};

/// Largest request body accepted, bytes.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Response body type.
pub type RespBody = BoxBody<Bytes, io::Error>;

/// Shared server state.
#[derive(Debug)]
pub struct AppState {
    /// The engine profile.
    pub profile: Profile,
    /// Server clock origin.
    pub origin: Instant,
    /// The engine.
    pub engine: EngineHandle,
    /// Ground truth.
    pub truth: TruthStore,
    /// `Access-Control-Allow-Origin` value (`*` or one origin).
    pub allow_origin: String,
    /// Server-wide faults (spec text kept for the truth record); several are applied in
    /// turn.
    pub faults: Vec<(Faults, String)>,
    /// Apply server-wide faults to every N-th request (1 = all).
    pub fault_every: u64,
    /// Request ids.
    pub next_id: AtomicU64,
    /// Requests in flight.
    pub in_flight: AtomicU64,
    /// Prompts prefilled so far (hashes of their text), when the profile has a prefix cache.
    pub prefix_cache: std::sync::Mutex<std::collections::HashSet<u64>>,
    /// Last activity, server µs.
    pub last_activity_us: AtomicU64,
    /// Whether (and how) the emulated model reasons.
    pub reasoning: Reasoning,
}

impl AppState {
    /// New state.
    pub fn new(
        profile: Profile,
        engine: EngineHandle,
        origin: Instant,
        allow_origin: String,
        faults: Vec<(Faults, String)>,
        fault_every: u64,
    ) -> Self {
        Self {
            profile,
            origin,
            engine,
            truth: TruthStore::default(),
            allow_origin,
            faults,
            fault_every: fault_every.max(1),
            next_id: AtomicU64::new(1),
            in_flight: AtomicU64::new(0),
            prefix_cache: std::sync::Mutex::new(std::collections::HashSet::new()),
            last_activity_us: AtomicU64::new(0),
            reasoning: Reasoning::None,
        }
    }

    /// The same state with an emulated reasoning model.
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning = reasoning;
        self
    }

    fn now(&self) -> u64 {
        micros_since(self.origin)
    }
}

/// A streaming body fed by a channel; an `Err` item aborts the connection (a reset).
struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, io::Error>>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

fn full(body: impl Into<Bytes>) -> RespBody {
    Full::new(body.into())
        .map_err(|e: Infallible| match e {})
        .boxed()
}

fn cors(state: &AppState, mut resp: Response<RespBody>) -> Response<RespBody> {
    let h = resp.headers_mut();
    if let Ok(v) = state.allow_origin.parse() {
        h.insert("access-control-allow-origin", v);
    }
    if let Ok(v) = state.allow_origin.parse() {
        h.insert("timing-allow-origin", v);
    }
    h.insert(
        "access-control-expose-headers",
        hyper::header::HeaderValue::from_static(
            "x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests",
        ),
    );
    h.insert("vary", hyper::header::HeaderValue::from_static("origin"));
    resp
}

fn json_resp(state: &AppState, status: StatusCode, v: &Value) -> Response<RespBody> {
    let mut r = Response::new(full(v.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    cors(state, r)
}

/// An OpenAI-style error response.
fn error(state: &AppState, status: StatusCode, kind: &str, message: &str) -> Response<RespBody> {
    json_resp(
        state,
        status,
        &json!({"error": {"message": message, "type": kind, "param": null, "code": status.as_u16()}}),
    )
}

/// Handles one request.
pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
) -> Result<Response<RespBody>, Infallible> {
    state.last_activity_us.store(state.now(), Ordering::Relaxed);
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let method = req.method().clone();
    let resp = match (method.clone(), path.as_str()) {
        (Method::OPTIONS, _) => preflight(&state, &req),
        (Method::GET, "/health") => cors(&state, Response::new(full("ok"))),
        (Method::GET, "/v1/models") => models(&state),
        (Method::GET, "/metrics") => metrics(&state),
        (Method::GET, "/truth") => {
            let since = query
                .strip_prefix("since=")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            json_resp(&state, StatusCode::OK, &json!(state.truth.since(since)))
        }
        (Method::GET, p) if p.starts_with("/truth/") => match p["/truth/".len()..]
            .parse::<u64>()
            .ok()
            .and_then(|id| state.truth.get(id))
        {
            Some(t) => json_resp(&state, StatusCode::OK, &json!(t)),
            None => error(
                &state,
                StatusCode::NOT_FOUND,
                "not_found",
                "no truth record with that id",
            ),
        },
        (Method::POST, p) if p == "/tokenize" || Wire::of_path(p).is_some() => {
            let faults_header = req
                .headers()
                .get("x-pinbench-fault")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match read_json(req).await {
                Err(resp) => resp(&state),
                Ok(body) if path == "/tokenize" => tokenize(&state, &body),
                Ok(body) => completion(state.clone(), &path, body, faults_header).await,
            }
        }
        (Method::GET | Method::POST, _) => error(
            &state,
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no route {path}"),
        ),
        _ => error(
            &state,
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request_error",
            "method not allowed",
        ),
    };
    Ok(resp)
}

type ErrFn = Box<dyn FnOnce(&AppState) -> Response<RespBody> + Send>;

async fn read_json(req: Request<Incoming>) -> Result<Value, ErrFn> {
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Err(Box::new(|s: &AppState| {
                error(
                    s,
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request_error",
                    &format!("request body over {MAX_BODY_BYTES} bytes"),
                )
            }));
        }
    };
    serde_json::from_slice::<Value>(&body).map_err(|e| {
        let msg = format!("request body is not valid JSON: {e}");
        Box::new(move |s: &AppState| {
            error(s, StatusCode::BAD_REQUEST, "invalid_request_error", &msg)
        }) as ErrFn
    })
}

fn preflight(state: &AppState, req: &Request<Incoming>) -> Response<RespBody> {
    let mut r = Response::new(full(""));
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(
        "access-control-allow-methods",
        hyper::header::HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    let asked = req.headers().get("access-control-request-headers").cloned();
    h.insert(
        "access-control-allow-headers",
        asked.unwrap_or(hyper::header::HeaderValue::from_static(
            "content-type, authorization, x-pinbench-fault",
        )),
    );
    h.insert(
        "access-control-max-age",
        hyper::header::HeaderValue::from_static("600"),
    );
    cors(state, r)
}

fn models(state: &AppState) -> Response<RespBody> {
    let p = &state.profile;
    json_resp(
        state,
        StatusCode::OK,
        &json!({"object": "list", "data": [{
            "id": p.model_id, "object": "model", "created": 0, "owned_by": "pinbench", "root": p.model_id,
            "max_model_len": p.max_model_len,
            "pinbench": {
                "profile": p.name, "params": p.params, "bytes_per_param": p.bytes_per_param,
                "kv_capacity_tokens": p.kv_capacity_tokens, "max_num_seqs": p.max_num_seqs,
                "batching": p.batching, "prefill_budget_tokens": p.prefill_budget_tokens,
                "tokens_per_event": p.tokens_per_event,
                "prefix_cache": p.prefix_cache,
                // What a request of this server reasons: the probe fills the reasoning pin.
                "reasoning": state.reasoning.pin_text(),
                // Prompts are prefilled in chunks of the prefill budget beside decoding.
                "phases": "chunked_prefill",
                "dtype": if p.bytes_per_param == 2.0 { "bf16".to_owned() } else { format!("{} bytes/param", p.bytes_per_param) },
                "engine": format!("pinbench-refserver {}", env!("CARGO_PKG_VERSION")),
            }
        }]}),
    )
}

fn metrics(state: &AppState) -> Response<RespBody> {
    let p = &state.profile;
    let s = &state.engine.stats;
    let m = &p.model_id;
    let kv_used = s.kv_used_tokens.load(Ordering::Relaxed);
    let text = format!(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n\
         # TYPE vllm:cache_config_info gauge\n\
         vllm:cache_config_info{{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"False\",gpu_memory_utilization=\"0.9\",kv_cache_size_tokens=\"{kv}\",kv_cache_max_concurrency=\"{conc:.2}\",num_gpu_blocks=\"{blocks}\"}} 1.0\n\
         # HELP vllm:num_requests_running Number of requests in model execution batches.\n\
         # TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{{model_name=\"{m}\"}} {run}\n\
         # HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n\
         # TYPE vllm:num_requests_waiting gauge\n\
         vllm:num_requests_waiting{{model_name=\"{m}\"}} {wait}\n\
         # HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n\
         # TYPE vllm:kv_cache_usage_perc gauge\n\
         vllm:kv_cache_usage_perc{{model_name=\"{m}\"}} {usage}\n\
         # HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n\
         # TYPE vllm:num_preemptions_total counter\n\
         vllm:num_preemptions_total{{model_name=\"{m}\"}} {pre}\n\
         # HELP pinbench:tokens_total Tokens generated.\n\
         # TYPE pinbench:tokens_total counter\n\
         pinbench:tokens_total {tok}\n",
        kv = p.kv_capacity_tokens,
        conc = p.kv_capacity_tokens as f64 / f64::from(p.max_model_len),
        blocks = p.kv_capacity_tokens / 16,
        run = s.running.load(Ordering::Relaxed),
        wait = s.waiting.load(Ordering::Relaxed),
        usage = kv_used as f64 / p.kv_capacity_tokens.max(1) as f64,
        pre = s.preemptions.load(Ordering::Relaxed),
        tok = s.tokens_total.load(Ordering::Relaxed),
    );
    let mut r = Response::new(full(text));
    r.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    cors(state, r)
}

/// Token id of the beginning-of-sequence token every text prompt starts with.
const BOS_ID: u32 = 50_000;

/// Prompt text and token count of a request body, as a real server counts it: a `prompt`
/// string gets a BOS token (as vLLM and llama.cpp count it in `usage.prompt_tokens`); a
/// token list is taken as is; `messages` go through a chat template
/// (`<|role|>\ncontent\n` per message, then `<|assistant|>\n`) and get a BOS token.
fn prompt_of(body: &Value, chat: bool) -> Result<(String, u32), String> {
    let text = if chat {
        let msgs = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("`messages` must be an array")?;
        let mut t = String::new();
        for m in msgs {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            t.push_str(&format!("<|{role}|>\n"));
            match m.get("content") {
                Some(Value::String(s)) => t.push_str(s),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        if let Some(s) = p.get("text").and_then(Value::as_str) {
                            t.push_str(s);
                        }
                    }
                }
                _ => return Err("each message needs a string `content`".into()),
            }
            t.push('\n');
        }
        t.push_str("<|assistant|>\n");
        t
    } else {
        match body.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) if a.iter().all(Value::is_u64) => {
                return Ok((
                    String::new(),
                    u32::try_from(a.len()).map_err(|_| "prompt too long")?,
                ));
            }
            _ => return Err("`prompt` must be a string or a list of token ids".into()),
        }
    };
    let n = u32::try_from(tokenizer::count(&text) + 1).map_err(|_| "prompt too long")?;
    Ok((text, n))
}

/// `POST /tokenize`: vLLM's forms (`prompt` or `messages`, BOS and template included, as
/// the server counts the prompt) and llama.cpp's (`content`, BOS only with
/// `add_special: true`).
fn tokenize(state: &AppState, body: &Value) -> Response<RespBody> {
    let chat = body.get("messages").is_some();
    let text = if chat {
        prompt_of(body, true).map(|p| (p.0, true))
    } else if let Some(p) = body.get("prompt").and_then(Value::as_str) {
        Ok((p.to_owned(), true))
    } else {
        body.get("content")
            .and_then(Value::as_str)
            .map(|c| {
                let special = body.get("add_special").and_then(Value::as_bool) == Some(true);
                (c.to_owned(), special)
            })
            .ok_or_else(|| "`prompt` must be a string".to_owned())
    };
    match text {
        Ok((t, bos)) => {
            let mut ids = Vec::new();
            if bos {
                ids.push(BOS_ID);
            }
            ids.extend(tokenizer::ids(&t));
            json_resp(
                state,
                StatusCode::OK,
                &json!({"count": ids.len(), "max_model_len": state.profile.max_model_len, "tokens": ids}),
            )
        }
        Err(e) => error(state, StatusCode::BAD_REQUEST, "invalid_request_error", &e),
    }
}

/// Deterministic natural length when EOS is not ignored: 16..=255 tokens from the prompt.
fn natural_length(prompt: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in prompt.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    16 + h % 240
}

/// The chat messages of a chat-shaped request (`None` for completions): Responses'
/// `input` (text or messages), Anthropic's `system` and `messages`, Gemini's `contents`.
fn messages_of(wire: Wire, body: &Value) -> Result<Option<Value>, String> {
    Ok(match wire {
        Wire::Completions => None,
        Wire::Chat => Some(
            body.get("messages")
                .cloned()
                .ok_or("`messages` must be an array")?,
        ),
        Wire::Responses => Some(match body.get("input") {
            Some(Value::String(s)) => json!([{"role": "user", "content": s}]),
            Some(a @ Value::Array(_)) => a.clone(),
            _ => return Err("`input` must be a string or an array of messages".into()),
        }),
        Wire::Messages => {
            let mut m = Vec::new();
            if let Some(sys) = body.get("system") {
                m.push(json!({"role": "system", "content": sys}));
            }
            m.extend(
                body.get("messages")
                    .and_then(Value::as_array)
                    .ok_or("messages: Field required")?
                    .iter()
                    .cloned(),
            );
            Some(Value::Array(m))
        }
        Wire::Gemini => {
            let contents = body
                .get("contents")
                .and_then(Value::as_array)
                .ok_or("contents must be an array")?;
            Some(Value::Array(
                contents
                    .iter()
                    .map(|c| {
                        json!({"role": c.get("role").and_then(Value::as_str).unwrap_or("user"),
                               "content": c.get("parts").cloned().unwrap_or(json!([]))})
                    })
                    .collect(),
            ))
        }
    })
}

struct Plan {
    wire: Wire,
    chat: bool,
    prompt_tokens: u32,
    /// The prefix cache's keys: one chained hash per full block of the prompt's tokens
    /// (block `k`'s hash covers every token up to the end of block `k`).
    block_hashes: Vec<u64>,
    /// The prompt's text, kept when the prefix cache is on: the blocks the generated
    /// tokens fill are cached after it (a conversation's next turn finds them).
    prompt_text: String,
    max_tokens: u32,
    stop_at: Option<u32>,
    stream: bool,
    include_usage: bool,
    continuous_usage: bool,
    /// Reasoning tokens generated before the answer, and whether they are sent.
    reasoning: u32,
    reasoning_visible: bool,
}

/// Blocks the prefix cache remembers before it starts over.
const PREFIX_CACHE_ENTRIES: usize = 1_000_000;

/// Tokens per block of the prefix cache (vLLM's default block size): a prompt reuses the
/// full blocks it shares, from its start, with a prompt prefilled before.
pub const PREFIX_BLOCK_TOKENS: usize = 16;

/// The chained hashes of the full blocks of [`PREFIX_BLOCK_TOKENS`] tokens of a text
/// prompt as the server counts it: its BOS token, then `text`'s tokens.
pub fn block_hashes(text: &str) -> Vec<u64> {
    use std::hash::{Hash, Hasher};
    let mut pieces = vec!["<bos>"];
    pieces.extend(crate::tokenizer::pieces(text));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pieces
        .chunks_exact(PREFIX_BLOCK_TOKENS)
        .map(|block| {
            block.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// Remembers blocks (starting over when the cache is full).
pub fn remember_blocks(seen: &mut std::collections::HashSet<u64>, blocks: &[u64]) {
    if seen.len() + blocks.len() > PREFIX_CACHE_ENTRIES {
        seen.clear();
    }
    seen.extend(blocks.iter().copied());
}

/// Tokens of a prompt (`prompt_tokens` long, with these block hashes) found in the cache
/// (`seen`): its leading full blocks seen before, leaving at least one token to prefill.
/// Every block of the prompt is then remembered.
pub fn cached_tokens(
    seen: &mut std::collections::HashSet<u64>,
    blocks: &[u64],
    prompt_tokens: u32,
) -> u32 {
    let hits = blocks.iter().take_while(|b| seen.contains(b)).count();
    remember_blocks(seen, blocks);
    let hit_tokens = u32::try_from(hits * PREFIX_BLOCK_TOKENS).unwrap_or(u32::MAX);
    hit_tokens.min(prompt_tokens.saturating_sub(1))
}

fn plan(state: &AppState, path: &str, body: &Value) -> Result<Plan, Box<Response<RespBody>>> {
    let bad = |m: &str| {
        Box::new(error(
            state,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            m,
        ))
    };
    let p = &state.profile;
    let Some((wire, path_model)) = Wire::of_path(path) else {
        return Err(bad("no such API path"));
    };
    let chat = wire != Wire::Completions;
    match path_model
        .as_deref()
        .or_else(|| body.get("model").and_then(Value::as_str))
    {
        Some(m) if m == p.model_id => {}
        Some(m) => {
            return Err(Box::new(error(
                state,
                StatusCode::NOT_FOUND,
                "model_not_found",
                &format!(
                    "The model `{m}` does not exist. This server serves `{}`.",
                    p.model_id
                ),
            )))
        }
        None => return Err(bad("`model` is required")),
    }
    // Every chat-shaped API is counted through the same template as chat messages.
    let messages = messages_of(wire, body).map_err(|e| bad(&e))?;
    let (text, prompt_tokens) = match &messages {
        Some(m) => prompt_of(&json!({ "messages": m }), true),
        None => prompt_of(body, false),
    }
    .map_err(|e| bad(&e))?;
    let (block_hashes, prompt_text) = if p.prefix_cache {
        (block_hashes(&text), text.clone())
    } else {
        (Vec::new(), String::new())
    };
    let cap = match wire {
        Wire::Completions | Wire::Chat => body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens")),
        Wire::Responses => body.get("max_output_tokens"),
        Wire::Messages => body.get("max_tokens"),
        Wire::Gemini => body
            .get("generationConfig")
            .and_then(|g| g.get("maxOutputTokens")),
    };
    if wire == Wire::Messages && cap.is_none() {
        return Err(bad("max_tokens: Field required"));
    }
    let max_tokens = match cap {
        None | Some(Value::Null) => 16,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(p.max_model_len) => n as u32,
            _ => {
                return Err(bad(&format!(
                    "`max_tokens` must be an integer from 1 to {}",
                    p.max_model_len
                )))
            }
        },
    };
    if u64::from(prompt_tokens) + u64::from(max_tokens) > u64::from(p.max_model_len) {
        return Err(bad(&format!(
            "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
            p.max_model_len,
            prompt_tokens + max_tokens
        )));
    }
    if u64::from(prompt_tokens) + u64::from(max_tokens) > p.kv_capacity_tokens {
        return Err(bad("prompt + max_tokens exceed the KV cache capacity"));
    }
    let ignore_eos = body
        .get("ignore_eos")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let min_tokens = body
        .get("min_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(u64::from(max_tokens)) as u32;
    let stop_at = (!ignore_eos)
        .then(|| natural_length(&text).max(min_tokens))
        .filter(|&n| n < max_tokens);
    let so = body.get("stream_options");
    Ok(Plan {
        wire,
        chat,
        prompt_tokens,
        block_hashes,
        prompt_text,
        max_tokens,
        stop_at,
        // Gemini streams by its path.
        stream: wire == Wire::Gemini
            || body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: so
            .and_then(|s| s.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        continuous_usage: so
            .and_then(|s| s.get("continuous_usage_stats"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        reasoning: 0,
        reasoning_visible: false,
    })
}

struct InFlight(Arc<AppState>);
impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0
            .last_activity_us
            .store(self.0.now(), Ordering::Relaxed);
    }
}

async fn completion(
    state: Arc<AppState>,
    path: &str,
    body: Value,
    fault_header: Option<String>,
) -> Response<RespBody> {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let received_us = state.now();
    let (faults, fault_spec) = match fault_header {
        Some(spec) => match Faults::parse(&spec) {
            Ok(f) => (f, Some(spec)),
            Err(e) => {
                return error(
                    &state,
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    &e.to_string(),
                )
            }
        },
        // Every N-th request gets the next server-wide fault, in turn.
        None if !state.faults.is_empty() && id % state.fault_every == 0 => {
            let (f, spec) =
                &state.faults[((id / state.fault_every - 1) % state.faults.len() as u64) as usize];
            (f.clone(), Some(spec.clone()))
        }
        None => (Faults::default(), None),
    };
    let mut truth = Truth {
        id,
        path: path.to_owned(),
        received_us,
        faults: fault_spec,
        ..Truth::default()
    };
    let mut plan = match plan(&state, path, &body) {
        Ok(p) => p,
        Err(resp) => {
            truth.status = resp.status().as_u16();
            truth.finished_us = Some(state.now());
            state.truth.put(truth);
            return with_id(*resp, id);
        }
    };
    truth.prompt_tokens = plan.prompt_tokens;
    truth.response_id = plan.wire.response_id(id);
    // A reasoning model reasons first; the answer's own length follows (capped by the
    // request's token cap, which counts both).
    plan.reasoning = state.reasoning.tokens_for(id);
    plan.reasoning_visible = state.reasoning.visible();
    plan.stop_at = plan
        .stop_at
        .map(|n| n.saturating_add(plan.reasoning))
        .filter(|&n| n < plan.max_tokens);
    if let Some(ms) = faults.slow_headers_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(status) = faults.status {
        let mut resp = error(
            &state,
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            match status {
                429 => "rate_limit_exceeded",
                529 => "overloaded_error",
                _ => "server_error",
            },
            &format!("injected fault: HTTP {status}"),
        );
        if status == 429 || status == 503 || status == 529 {
            let h = resp.headers_mut();
            h.insert("retry-after", hyper::header::HeaderValue::from_static("1"));
            if status == 429 {
                // OpenAI's names for what a rate limit says about itself.
                h.insert(
                    "x-ratelimit-limit-requests",
                    hyper::header::HeaderValue::from_static("60"),
                );
                h.insert(
                    "x-ratelimit-remaining-requests",
                    hyper::header::HeaderValue::from_static("0"),
                );
                h.insert(
                    "x-ratelimit-reset-requests",
                    hyper::header::HeaderValue::from_static("1s"),
                );
            }
        }
        truth.status = status;
        truth.finished_us = Some(state.now());
        state.truth.put(truth);
        return with_id(resp, id);
    }
    if let Some(n) = faults.eos_at {
        plan.stop_at = Some(n.min(plan.stop_at.unwrap_or(u32::MAX)));
    }
    let (etx, erx) = mpsc::unbounded_channel();
    state.in_flight.fetch_add(1, Ordering::Relaxed);
    let guard = InFlight(state.clone());
    // The prefix cache: the full blocks a prompt shares from its start with prompts
    // prefilled before are not prefilled again.
    let cached_tokens = if state.profile.prefix_cache {
        let mut seen = state.prefix_cache.lock().unwrap_or_else(|e| e.into_inner());
        cached_tokens(&mut seen, &plan.block_hashes, plan.prompt_tokens)
    } else {
        0
    };
    truth.cached_tokens = cached_tokens;
    if !state.engine.submit(Job {
        prompt_tokens: plan.prompt_tokens,
        cached_tokens,
        max_tokens: plan.max_tokens,
        stop_at: plan.stop_at,
        out: etx,
    }) {
        return error(
            &state,
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "engine stopped",
        );
    }
    truth.status = 200;
    truth.headers_us = Some(state.now());
    if plan.stream {
        let (btx, brx) = mpsc::channel(256);
        let st = state.clone();
        tokio::spawn(async move {
            stream_events(st, plan, faults, truth, erx, btx).await;
            drop(guard);
        });
        let mut r = Response::new(ChannelBody { rx: brx }.boxed());
        let h = r.headers_mut();
        h.insert(
            "content-type",
            hyper::header::HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        h.insert(
            "cache-control",
            hyper::header::HeaderValue::from_static("no-cache"),
        );
        with_id(cors(&state, r), id)
    } else {
        let resp = non_streaming(&state, plan, truth, erx).await;
        drop(guard);
        with_id(resp, id)
    }
}

fn with_id(mut r: Response<RespBody>, id: u64) -> Response<RespBody> {
    if let Ok(v) = id.to_string().parse() {
        r.headers_mut().insert("x-request-id", v);
    }
    r
}

fn created() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn usage(prompt: u32, completion: u32) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

async fn stream_events(
    state: Arc<AppState>,
    plan: Plan,
    faults: Faults,
    mut truth: Truth,
    mut erx: mpsc::UnboundedReceiver<Emit>,
    btx: mpsc::Sender<Result<Bytes, io::Error>>,
) {
    let id = truth.id;
    let send = |b: String| {
        let btx = btx.clone();
        async move { b.is_empty() || btx.send(Ok(Bytes::from(b))).await.is_ok() }
    };
    let mut w = Writer::new(
        plan.wire,
        id,
        &state.profile.model_id,
        created(),
        plan.include_usage,
        plan.continuous_usage,
    );
    let cached = truth.cached_tokens;
    let counts = |sent: u32| Counts {
        prompt: plan.prompt_tokens,
        cached,
        cache_on: state.profile.prefix_cache,
        completion: sent,
        reasoning: sent.min(plan.reasoning),
    };
    let k = state.profile.tokens_per_event.max(1);
    let mut pending = 0u32;
    // Tokens generated so far (reasoning included, sent or not).
    let mut sent = 0u32;
    let mut alive = send(w.start(counts(0), state.now())).await;
    let mut finish: Option<FinishReason> = None;
    'outer: while alive {
        let Some(ev) = erx.recv().await else { break };
        match ev {
            Emit::Admitted { at_us } => truth.admitted_us = Some(at_us),
            Emit::Token { count, .. } => {
                pending += 1;
                let done_soon =
                    count >= plan.max_tokens || plan.stop_at.is_some_and(|n| count >= n);
                // An event never mixes reasoning and answer: the last reasoning token
                // closes its event.
                let boundary = sent + pending == plan.reasoning;
                if pending < k && !done_soon && !boundary {
                    continue;
                }
                let reasoning = sent < plan.reasoning;
                let now = state.now();
                if reasoning && !plan.reasoning_visible {
                    // Generated, not sent: only the APIs that mark hidden reasoning
                    // say anything, once, when it ends.
                    sent += pending;
                    pending = 0;
                    if sent >= plan.reasoning {
                        alive = send(w.hidden_reasoning(counts(sent))).await;
                    }
                    truth.completion_tokens = sent;
                    continue;
                }
                let text: String = (u64::from(sent)..u64::from(sent + pending))
                    .map(tokenizer::output_piece)
                    .collect();
                let line = w.text(reasoning, &text, counts(sent + pending), now);
                if !send(line).await {
                    alive = false;
                    break;
                }
                truth.first_token_us.get_or_insert(now);
                if reasoning {
                    truth.reasoning_chunks += 1;
                    truth.reasoning_text.push_str(&text);
                } else {
                    truth.first_answer_us.get_or_insert(now);
                    truth.text.push_str(&text);
                }
                truth.chunks.push((now, pending));
                sent += pending;
                truth.completion_tokens = sent;
                pending = 0;
                // Faults keyed on the number of tokens sent.
                if faults.malformed_at == Some(sent) {
                    alive =
                        send("data: {\"choices\":[{\"index\":0,\"text\":\"oops\"\n\n".into()).await;
                }
                if let Some((ms, at)) = faults.stall {
                    if at == sent {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                }
                if faults.error_event_at == Some(sent) {
                    send(w.error("injected fault: error event")).await;
                    truth.finish_reason = Some("error".into());
                    break 'outer;
                }
                if faults.reset_after == Some(sent) {
                    // Let the connection flush what was sent, then cut it.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = btx
                        .send(Err(io::Error::new(
                            io::ErrorKind::ConnectionReset,
                            "injected fault: reset",
                        )))
                        .await;
                    truth.finish_reason = Some("reset".into());
                    break 'outer;
                }
            }
            Emit::Finished { reason, .. } => {
                finish = Some(reason);
                break;
            }
        }
    }
    truth.reasoning_tokens = sent.min(plan.reasoning);
    // As vLLM does, the full blocks the generated tokens filled join the cache: a
    // conversation's next turn, which resends this prompt and its answer, finds them.
    if state.profile.prefix_cache && finish.is_some() && alive {
        let generated = format!("{}{}{}", plan.prompt_text, truth.reasoning_text, truth.text);
        let mut seen = state.prefix_cache.lock().unwrap_or_else(|e| e.into_inner());
        remember_blocks(&mut seen, &block_hashes(&generated));
    }
    if let Some(reason) = finish.filter(|_| alive) {
        let end = match reason {
            FinishReason::Length => End::Length,
            _ => End::Stop,
        };
        send(w.finish(end, counts(sent), !faults.no_done, state.now())).await;
        truth.finish_reason = Some(reason.as_str().into());
    }
    truth.finished_us = Some(state.now());
    state.truth.put(truth);
}

async fn non_streaming(
    state: &AppState,
    plan: Plan,
    mut truth: Truth,
    mut erx: mpsc::UnboundedReceiver<Emit>,
) -> Response<RespBody> {
    let mut count = 0;
    let mut reason = FinishReason::Length;
    while let Some(ev) = erx.recv().await {
        match ev {
            Emit::Admitted { at_us } => truth.admitted_us = Some(at_us),
            Emit::Token { count: c, .. } => count = c,
            Emit::Finished { reason: r, .. } => {
                reason = r;
                break;
            }
        }
    }
    let text: String = (0..u64::from(count)).map(tokenizer::output_piece).collect();
    let now = state.now();
    truth.completion_tokens = count;
    truth.finish_reason = Some(reason.as_str().into());
    truth.finished_us = Some(now);
    truth.chunks.push((now, count));
    truth.first_token_us = Some(now);
    let id = truth.id;
    state.truth.put(truth);
    let body = if plan.chat {
        json!({"id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": created(), "model": state.profile.model_id,
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": reason.as_str()}],
               "usage": usage(plan.prompt_tokens, count)})
    } else {
        json!({"id": format!("cmpl-{id}"), "object": "text_completion", "created": created(), "model": state.profile.model_id,
               "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": reason.as_str()}],
               "usage": usage(plan.prompt_tokens, count)})
    };
    json_resp(state, StatusCode::OK, &body)
}

/// Whether the profile batches statically (for logs).
pub fn batching_name(p: &Profile) -> &'static str {
    match p.batching {
        Batching::Continuous => "continuous",
        Batching::Static => "static",
    }
}

#[cfg(test)]
mod prefix_cache_tests {
    use super::*;

    fn words(n: usize, from: usize) -> String {
        (from..from + n).map(|i| format!(" w{i}")).collect()
    }

    #[test]
    fn full_shared_blocks_from_the_start_are_cached_and_nothing_else() {
        let mut seen = std::collections::HashSet::new();
        // BOS and 100 words: 6 full blocks (96 tokens) and a tail of 5.
        let a = words(100, 0);
        assert_eq!(block_hashes(&a).len(), 6);
        assert_eq!(cached_tokens(&mut seen, &block_hashes(&a), 101), 0);
        // The same prompt again: its 6 full blocks, never the tail.
        assert_eq!(cached_tokens(&mut seen, &block_hashes(&a), 101), 96);
        // A shared 41-token prefix (BOS and 40 words: 2 full blocks), then another suffix.
        let b = format!("{}{}", words(40, 0), words(60, 1000));
        assert_eq!(cached_tokens(&mut seen, &block_hashes(&b), 101), 32);
        // A different first word: the chain differs from block 0, though the rest matches.
        let c = format!(" x{}", words(99, 1));
        assert_eq!(cached_tokens(&mut seen, &block_hashes(&c), 101), 0);
        // A prompt of exactly whole blocks seen before keeps one token to prefill.
        let d = words(31, 0);
        assert_eq!(cached_tokens(&mut seen, &block_hashes(&d), 32), 31);
    }

    #[test]
    fn a_growing_conversation_reuses_its_history() {
        let mut seen = std::collections::HashSet::new();
        let mut history = String::new();
        let mut found = Vec::new();
        for turn in 0..4 {
            history.push_str(&words(50, turn * 50));
            let n = crate::tokenizer::count(&history) as u32 + 1;
            found.push(cached_tokens(&mut seen, &block_hashes(&history), n));
        }
        // Each turn finds the previous turns' full blocks: 0, 48, 96, 144.
        assert_eq!(found, vec![0, 48, 96, 144]);
    }
}
