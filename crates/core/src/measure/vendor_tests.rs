//! The vendors' streams through the one timeline: each shape's text, reasoning, usage and
//! end, whatever the byte splits, with pings, empty deltas, usage only at the end and
//! errors mid-stream.

use crate::dialect::Dialect;
use crate::record::{
    Outcome, ReasoningShown, RequestRecord, RequestTimeline, StreamEnd, TokenCounts,
};

/// Runs `wire` through a timeline, split into pieces of `step` bytes, one ms apart.
fn record(dialect: Dialect, wire: &str, step: usize) -> RequestRecord {
    let mut tl = RequestTimeline::new(0, 0, dialect, 10, 64, 1_000);
    tl.on_headers(2_000, 200, Some("text/event-stream"));
    let bytes = wire.as_bytes();
    let mut t = 3_000;
    for piece in bytes.chunks(step.max(1)) {
        tl.on_bytes(t, piece);
        t += 1_000;
    }
    tl.finish(t, StreamEnd::Eof)
}

/// The same record however the bytes are split.
fn same_however_split(dialect: Dialect, wire: &str) -> RequestRecord {
    let whole = record(dialect, wire, usize::MAX);
    for step in [1, 2, 3, 7, 64] {
        let r = record(dialect, wire, step);
        assert_eq!(r.usage, whole.usage, "split {step}");
        assert_eq!(
            r.reasoning.map(|x| (x.shown, x.tokens, x.deltas)),
            whole.reasoning.map(|x| (x.shown, x.tokens, x.deltas)),
            "split {step}"
        );
        assert_eq!(r.chunk_tokens(), whole.chunk_tokens(), "split {step}");
        assert_eq!(r.outcome, whole.outcome, "split {step}");
        assert_eq!(r.response_id, whole.response_id, "split {step}");
    }
    whole
}

const MESSAGES_THINKING: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":4,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":6,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" Let\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" me\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":4}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

#[test]
fn anthropic_visible_thinking_is_timed_with_the_answer() {
    let r = same_however_split(Dialect::Messages, MESSAGES_THINKING);
    assert_eq!(r.outcome, Outcome::Ok {});
    assert!(r.anomalies.is_clean(), "{:?}", r.anomalies);
    let u = r.usage.expect("usage");
    // The prompt is every input token, cached or not; output replaces the start's 1.
    assert_eq!(
        (u.prompt_tokens, u.cached_tokens, u.completion_tokens),
        (10, Some(6), 4)
    );
    let rr = r.reasoning.expect("reasoning");
    assert_eq!(
        (rr.shown, rr.tokens, rr.in_chunks, rr.deltas),
        (ReasoningShown::Tokens, Some(2), 2, 2)
    );
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(r.response_id.as_deref(), Some("msg_1"));
}

#[test]
fn anthropic_hidden_thinking_is_never_timed() {
    let wire = MESSAGES_THINKING
        .replace("\"thinking\":\" Let\"", "\"thinking\":\"\"")
        .replace("\"thinking\":\" me\"", "\"thinking\":\"\"")
        .replace("\"output_tokens\":4}", "\"output_tokens\":40}");
    let r = same_however_split(Dialect::Messages, &wire);
    let rr = r.reasoning.expect("reasoning");
    assert_eq!(
        (rr.shown, rr.tokens),
        (ReasoningShown::Hidden, None),
        "never guessed"
    );
    // Two answer deltas timed; the 40 output tokens hold thinking the stream did not time.
    assert_eq!(r.chunk_tokens(), 2);
    assert_eq!(r.timed_tokens(), 2);
    assert_eq!(r.token_counts, TokenCounts::UnverifiedReasoningSplit);
    // With the thinking count the API may give, the answer is exact.
    let counted = wire.replace(
        "\"usage\":{\"output_tokens\":40}",
        "\"usage\":{\"output_tokens\":40,\"output_tokens_details\":{\"thinking_tokens\":38}}",
    );
    let r = same_however_split(Dialect::Messages, &counted);
    assert_eq!(r.reasoning.map(|x| x.tokens), Some(Some(38)));
    assert_eq!(r.timed_tokens(), 2);
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
}

#[test]
fn anthropic_error_mid_stream_is_a_stream_error() {
    let cut = MESSAGES_THINKING
        .find("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}")
        .expect("cut");
    let wire = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n",
        &MESSAGES_THINKING[..cut]
    );
    let r = same_however_split(Dialect::Messages, &wire);
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "Overloaded".into()
        }
    );
    // Overloaded is the server's limit, not the request's fault: a throttled answer.
    assert_eq!(
        r.throttle.map(|t| t.signal),
        Some("overloaded_error".into())
    );
}

#[test]
fn a_429_keeps_retry_after_and_the_rate_limit_headers_only() {
    let mut tl = RequestTimeline::new(0, 0, Dialect::Responses, 10, 64, 1_000);
    tl.set_secrets(vec!["sk-secret".into()]);
    tl.on_headers(2_000, 429, Some("application/json"));
    assert!(crate::record::wants_headers(429) && !crate::record::wants_headers(200));
    tl.on_header_pairs([
        ("Retry-After", "20"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-tokens", "6m0s"),
        ("anthropic-ratelimit-tokens-remaining", "sk-secret"),
        ("set-cookie", "a=b"),
        ("content-type", "application/json"),
    ]);
    let r = tl.finish(
        3_000,
        StreamEnd::Failed(Outcome::Http {
            status: 429,
            message: "Rate limit reached".into(),
        }),
    );
    let t = r.throttle.expect("throttled");
    assert_eq!(
        (t.signal.as_str(), t.retry_after_ms),
        ("http_429", Some(20_000))
    );
    assert_eq!(
        t.headers.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "anthropic-ratelimit-tokens-remaining",
            "retry-after",
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-tokens"
        ]
    );
    assert!(
        !t.headers.values().any(|v| v.contains("sk-secret")),
        "secrets redacted"
    );
    // retry-after-ms wins over retry-after; a 500 is no throttle.
    let mut tl = RequestTimeline::new(0, 0, Dialect::Chat, 10, 64, 1_000);
    tl.on_header_pairs([("retry-after", "2"), ("retry-after-ms", "1500.4")]);
    let r = tl.finish(
        2_000,
        StreamEnd::Failed(Outcome::Http {
            status: 529,
            message: String::new(),
        }),
    );
    assert_eq!(
        r.throttle.map(|t| (t.signal, t.retry_after_ms)),
        Some(("http_529".into(), Some(1500)))
    );
    let r = RequestTimeline::new(0, 0, Dialect::Chat, 10, 64, 1_000).finish(
        2_000,
        StreamEnd::Failed(Outcome::Http {
            status: 500,
            message: String::new(),
        }),
    );
    assert_eq!(r.throttle, None);
}

fn responses_event(kind: &str, rest: &str) -> String {
    format!("event: {kind}\ndata: {{\"type\":\"{kind}\",{rest}}}\n\n")
}

fn responses_wire(reasoning: &[&str], answer: &[&str], end: &str) -> String {
    let mut w = responses_event("response.created", "\"sequence_number\":0,\"response\":{\"id\":\"resp_7\",\"status\":\"in_progress\",\"output\":[]}");
    w.push_str(&responses_event(
        "response.output_item.added",
        "\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}",
    ));
    for d in reasoning {
        w.push_str(&responses_event(
            "response.reasoning_summary_text.delta",
            &format!(
                "\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"{d}\""
            ),
        ));
    }
    w.push_str("event: keepalive\ndata: {\"type\":\"keepalive\",\"sequence_number\":3}\n\n");
    for d in answer {
        w.push_str(&responses_event(
            "response.output_text.delta",
            &format!(
                "\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"{d}\""
            ),
        ));
    }
    w.push_str(end);
    w
}

#[test]
fn openai_responses_summary_is_not_the_reasoning_tokens() {
    let end = responses_event("response.completed", "\"response\":{\"id\":\"resp_7\",\"status\":\"completed\",\"usage\":{\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":53,\"output_tokens_details\":{\"reasoning_tokens\":50},\"total_tokens\":65}}");
    let r = same_however_split(
        Dialect::Responses,
        &responses_wire(&["**Plan**"], &["A", "", "B", "C"], &end),
    );
    assert_eq!(r.outcome, Outcome::Ok {});
    assert!(r.anomalies.is_clean(), "{:?}", r.anomalies);
    let rr = r.reasoning.expect("reasoning");
    assert_eq!(
        (rr.shown, rr.tokens, rr.in_chunks),
        (ReasoningShown::Summary, Some(50), 0)
    );
    assert!(rr.t_first_us.is_some());
    // Three answer deltas, three answer tokens: exact, and only they are timed.
    assert_eq!(r.chunk_tokens(), 3);
    assert_eq!(r.timed_tokens(), 3);
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
    // TTFT is the summary's first text; the first answer token comes later.
    let r = record(
        Dialect::Responses,
        &responses_wire(&["**Plan**"], &["A", "", "B", "C"], &end),
        40,
    );
    let first_answer = r.first_answer_chunk().expect("answer").t_us;
    assert!(r.t_first_token_us().expect("ttft") < first_answer);
}

#[test]
fn openai_responses_incomplete_is_a_normal_end_and_errors_are_errors() {
    let end = responses_event("response.incomplete", "\"response\":{\"id\":\"resp_7\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":12,\"output_tokens\":2}}");
    let r = same_however_split(Dialect::Responses, &responses_wire(&[], &["A", "B"], &end));
    assert_eq!(r.outcome, Outcome::Ok {});
    assert_eq!(r.finish_reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(r.chunk_tokens(), 2);
    let failed = responses_event("response.failed", "\"response\":{\"id\":\"resp_7\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed\"}}");
    let r = same_however_split(Dialect::Responses, &responses_wire(&[], &["A"], &failed));
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "The model failed".into()
        }
    );
    let flat = responses_event(
        "error",
        "\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\",\"param\":null",
    );
    let r = same_however_split(Dialect::Responses, &responses_wire(&[], &["A"], &flat));
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "Slow down".into()
        }
    );
    // No end event at all: truncated.
    let r = same_however_split(Dialect::Responses, &responses_wire(&[], &["A"], ""));
    assert_eq!(r.outcome, Outcome::Truncated {});
}

fn gemini_chunk(parts: &str, usage: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or(String::new(), |f| format!(",\"finishReason\":\"{f}\""));
    format!("data: {{\"candidates\":[{{\"content\":{{\"parts\":[{parts}],\"role\":\"model\"}},\"index\":0{finish}}}],\"usageMetadata\":{{{usage}}},\"responseId\":\"g1\"}}\r\n\r\n")
}

#[test]
fn gemini_running_usage_without_thoughts_times_only_the_answer() {
    // Thoughts hidden: the first chunk's usage already counts them (the latest wins).
    let mut w = gemini_chunk("{\"text\":\"Hel\"}", "\"promptTokenCount\":9,\"candidatesTokenCount\":1,\"thoughtsTokenCount\":30,\"totalTokenCount\":40", None);
    w.push_str(&gemini_chunk("{\"text\":\"lo\"}", "\"promptTokenCount\":9,\"candidatesTokenCount\":3,\"thoughtsTokenCount\":30,\"totalTokenCount\":42", None));
    w.push_str(&gemini_chunk("{\"text\":\"!\"}", "\"promptTokenCount\":9,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":30,\"cachedContentTokenCount\":8,\"totalTokenCount\":43", Some("STOP")));
    let r = same_however_split(Dialect::Gemini, &w);
    assert_eq!(r.outcome, Outcome::Ok {});
    assert!(
        r.anomalies.is_clean(),
        "no end event is Gemini's normal end: {:?}",
        r.anomalies
    );
    let u = r.usage.expect("usage");
    assert_eq!(
        (
            u.prompt_tokens,
            u.completion_tokens,
            u.reasoning_tokens,
            u.cached_tokens
        ),
        (9, 34, Some(30), Some(8))
    );
    let rr = r.reasoning.expect("reasoning");
    assert_eq!((rr.shown, rr.tokens), (ReasoningShown::Hidden, Some(30)));
    let tokens: Vec<u32> = r.chunks.iter().map(|c| c.tokens).collect();
    assert_eq!(
        tokens,
        vec![1, 2, 1],
        "answer tokens by usage rises, thoughts left out"
    );
    assert_eq!(r.timed_tokens(), 4);
}

#[test]
fn gemini_thought_parts_and_errors() {
    let mut w = gemini_chunk(
        "{\"text\":\"think\",\"thought\":true}",
        "\"promptTokenCount\":9,\"candidatesTokenCount\":0,\"thoughtsTokenCount\":1",
        None,
    );
    w.push_str(&gemini_chunk(
        "{\"text\":\"A\"}",
        "\"promptTokenCount\":9,\"candidatesTokenCount\":1,\"thoughtsTokenCount\":1",
        Some("MAX_TOKENS"),
    ));
    let r = same_however_split(Dialect::Gemini, &w);
    let rr = r.reasoning.expect("reasoning");
    assert_eq!(
        (rr.shown, rr.tokens, rr.in_chunks),
        (ReasoningShown::Tokens, Some(1), 1)
    );
    assert_eq!(r.finish_reason.as_deref(), Some("MAX_TOKENS"));
    let err = format!("{}data: {{\"error\":{{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}}}\n\n", gemini_chunk("{\"text\":\"A\"}", "\"promptTokenCount\":9,\"candidatesTokenCount\":1", None));
    let r = same_however_split(Dialect::Gemini, &err);
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "The model is overloaded.".into()
        }
    );
    assert_eq!(r.throttle.map(|t| t.signal), Some("UNAVAILABLE".into()));
}

#[test]
fn openai_chat_hidden_reasoning_keeps_tpot_honest() {
    // 32 hidden reasoning tokens, 4 answer deltas: the hidden ones are not spread over
    // the answer's chunks (which would halve the TPOT).
    let mut w = String::new();
    for t in ["a", "b", "c", "d"] {
        w.push_str(&format!("data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\n"));
    }
    w.push_str("data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":36,\"completion_tokens_details\":{\"reasoning_tokens\":32}}}\n\ndata: [DONE]\n\n");
    let r = same_however_split(Dialect::Chat, &w);
    let rr = r.reasoning.expect("reasoning");
    assert_eq!((rr.shown, rr.tokens), (ReasoningShown::Hidden, Some(32)));
    assert_eq!(r.chunk_tokens(), 4);
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
    // Each delta in its own read, 1 ms apart.
    let r = record(Dialect::Chat, &w, 80);
    let m = crate::metrics::request_metrics(&r);
    let (first, last) = (r.chunks[0].t_us, r.chunks[3].t_us);
    assert!(last > first);
    assert_eq!(m.tpot_us, Some((last - first + 1) / 3));
}

/// A tool call's arguments are generated output: each dialect's argument deltas are timed
/// answer chunks (an agent's turn is mostly this), not tokens piled onto the text chunks.
#[test]
fn tool_call_arguments_are_timed_answer_output() {
    // Chat completions: `delta.tool_calls[].function.arguments`.
    let mut chat = String::new();
    for args in ["{\\\"city\\\"", ":\\\"Paris\\\"}"] {
        chat.push_str(&format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{args}\"}}}}]}}}}]}}\n\n"));
    }
    chat.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
    let r = same_however_split(Dialect::Chat, &chat);
    assert_eq!((r.deltas, r.chunk_tokens()), (2, 2));
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
    // OpenAI Responses: `response.function_call_arguments.delta`.
    let mut w = responses_event("response.created", "\"sequence_number\":0,\"response\":{\"id\":\"resp_9\",\"status\":\"in_progress\",\"output\":[]}");
    for d in ["{\\\"city\\\"", ":\\\"Paris\\\"}"] {
        w.push_str(&responses_event(
            "response.function_call_arguments.delta",
            &format!("\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{d}\""),
        ));
    }
    w.push_str(&responses_event("response.completed", "\"response\":{\"id\":\"resp_9\",\"status\":\"completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7}}"));
    let r = same_however_split(Dialect::Responses, &w);
    assert_eq!(
        (r.outcome.clone(), r.deltas, r.chunk_tokens()),
        (Outcome::Ok {}, 2, 2)
    );
    // Gemini: a `functionCall` part arrives whole; its arguments are the chunk's text.
    let g = gemini_chunk(
        "{\"functionCall\":{\"name\":\"weather\",\"args\":{\"city\":\"Paris\"}}}",
        "\"promptTokenCount\":5,\"candidatesTokenCount\":6",
        Some("STOP"),
    );
    let r = same_however_split(Dialect::Gemini, &g);
    assert_eq!(
        (r.outcome.clone(), r.deltas, r.chunk_tokens()),
        (Outcome::Ok {}, 1, 6)
    );
}
