//! Known answers for every way a server's stream has misled the numbers: each test feeds
//! the shape a real server sends through the full record → metrics path and checks the
//! right number (not today's wrong one).

use pinbench::core::dialect::Dialect;
use pinbench::core::metrics::{
    self, client_verdict, request_metrics, ClientEnv, MetricsPlan, RunHost, Slo,
};
use pinbench::core::pins::{Arrival, LoadStep, Span, WindowPlan};
use pinbench::core::record::{Outcome, RequestRecord, RequestTimeline, StreamEnd, TokenCounts};

/// A stream of `events` (time µs, SSE text), sent at 0, headers at 500.
fn stream(dialect: Dialect, events: &[(u64, String)]) -> RequestRecord {
    let mut tl = RequestTimeline::new(0, 0, dialect, 8, 64, 0);
    tl.on_headers(500, 200, Some("text/event-stream"));
    let mut end = 600;
    for (t, e) in events {
        tl.on_bytes(*t, e.as_bytes());
        end = *t + 10;
    }
    tl.on_bytes(end, b"data: [DONE]\n\n");
    tl.finish(end, StreamEnd::Eof)
}

fn data(json: &str) -> String {
    format!("data: {json}\n\n")
}

fn text_chunk(dialect: Dialect, text: &str) -> String {
    match dialect {
        Dialect::Chat => data(&format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
        )),
        Dialect::Completions => data(&format!(
            r#"{{"choices":[{{"index":0,"text":"{text}","finish_reason":null}}]}}"#
        )),
        other => panic!("these cases are OpenAI-compatible, not {other:?}"),
    }
}

fn tokens_of(r: &RequestRecord) -> Vec<u32> {
    r.chunks.iter().map(|c| c.tokens).collect()
}

/// Case 1: older TGI puts `usage` on the final token's event, with its text.
#[test]
fn usage_on_the_last_text_chunk_is_final_usage_not_continuous() {
    let mut ev: Vec<(u64, String)> = (0..63)
        .map(|i| (1_000 + i * 1_000, text_chunk(Dialect::Chat, " w")))
        .collect();
    ev.push((
        64_000,
        data(r#"{"choices":[{"index":0,"delta":{"content":" w"},"finish_reason":"length"}],"usage":{"prompt_tokens":8,"completion_tokens":64}}"#),
    ));
    let r = stream(Dialect::Chat, &ev);
    assert_eq!(r.token_counts, TokenCounts::ExactDeltasMatchUsage);
    assert_eq!((r.chunk_tokens(), r.output_tokens()), (64, 64), "not 127");
    // TPOT = span / 63 = 63 ms / 63.
    assert_eq!(request_metrics(&r).tpot_us, Some(1_000));
}

/// Case 2a: fewer tokens than text deltas (a token split over two chunks).
#[test]
fn a_text_chunk_is_never_a_zero_token_chunk() {
    let ev = vec![
        (2_000, text_chunk(Dialect::Completions, "\u{e9}")),
        (3_000, text_chunk(Dialect::Completions, "a")),
        (4_000, text_chunk(Dialect::Completions, "b")),
        (
            4_100,
            data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}"#),
        ),
    ];
    let r = stream(Dialect::Completions, &ev);
    assert_eq!(r.token_counts, TokenCounts::DeltasExceedUsage);
    assert_eq!(
        request_metrics(&r).ttft_us,
        Some(2_000),
        "TTFT at the first text"
    );
    assert_eq!(r.output_tokens(), 2);
    // TPOT over the server's count: (4 − 2) ms / (2 − 1).
    assert_eq!(request_metrics(&r).tpot_us, Some(2_000));
}

/// Case 2b: speculative decoding, true chunks [1, 3, 1, 4, 2] (one per 10 ms).
#[test]
fn speculative_chunks_keep_one_token_in_the_first_chunk() {
    let texts = ["a", "b c d", "e", "f g h i", "j k"];
    let mut ev: Vec<(u64, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (10_000 * (i as u64 + 1), text_chunk(Dialect::Completions, t)))
        .collect();
    ev.push((
        50_100,
        data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":11}}"#),
    ));
    let r = stream(Dialect::Completions, &ev);
    assert_eq!(r.token_counts, TokenCounts::EstimatedCoalesced);
    assert_eq!(tokens_of(&r)[0], 1);
    assert_eq!(r.chunk_tokens(), 11);
    // The true TPOT: 40 ms over 10 tokens after the first (not 40/9, +11%).
    assert_eq!(request_metrics(&r).tpot_us, Some(4_000));
    // With vLLM's continuous usage the split is exact.
    let mut cu = Vec::new();
    let mut total = 0;
    for (i, (n, t)) in [1u32, 3, 1, 4, 2].iter().zip(texts).enumerate() {
        total += n;
        cu.push((
            10_000 * (i as u64 + 1),
            data(&format!(
                r#"{{"choices":[{{"index":0,"text":"{t}","finish_reason":null}}],"usage":{{"prompt_tokens":8,"completion_tokens":{total}}}}}"#
            )),
        ));
    }
    let r = stream(Dialect::Completions, &cu);
    assert_eq!(r.token_counts, TokenCounts::ExactContinuousUsage);
    assert_eq!(tokens_of(&r), vec![1, 3, 1, 4, 2]);
    assert_eq!(request_metrics(&r).tpot_us, Some(4_000));
}

/// Case 3: TGI (and vLLM chat stop tokens) stream the EOS token as an empty finish chunk
/// that usage counts.
#[test]
fn the_trailing_empty_finish_chunk_carries_the_eos_token() {
    let mut ev: Vec<(u64, String)> = (0..10)
        .map(|i| (1_000 * (i + 1), text_chunk(Dialect::Chat, " w")))
        .collect();
    ev.push((
        11_000,
        data(r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}"#),
    ));
    ev.push((
        11_100,
        data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":11}}"#),
    ));
    let r = stream(Dialect::Chat, &ev);
    assert_eq!(
        r.token_counts,
        TokenCounts::ExactFinishToken,
        "not estimated_coalesced"
    );
    assert_eq!(tokens_of(&r), vec![1; 11], "no fake 2-token chunk");
    assert_eq!(request_metrics(&r).tpot_us, Some(1_000), "1.0 ms, not 0.9");
}

fn window(measured: u32) -> WindowPlan {
    WindowPlan {
        warmup: Span::Requests { count: 0 },
        measured: Span::Requests { count: measured },
        cooldown: Span::Requests { count: 0 },
    }
}

fn env() -> ClientEnv {
    ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 100,
        event_loop_lag_max_us: 200,
        host: Some(RunHost::Worker),
        clock_epoch_us: None,
        ..Default::default()
    }
}

/// A plain successful record: sent at `t0`, headers 1 ms later, 4 tokens, ends at `t1`.
fn simple(index: u32, t0: u64, t1: u64, protocol: Option<&str>) -> RequestRecord {
    let mut tl = RequestTimeline::new(index, 0, Dialect::Completions, 8, 4, t0);
    tl.on_headers(t0 + 1_000, 200, Some("text/event-stream"));
    for k in 0..4u64 {
        tl.on_bytes(
            t0 + 2_000 + k * (t1 - t0 - 3_000) / 4,
            text_chunk(Dialect::Completions, " w").as_bytes(),
        );
    }
    tl.on_bytes(
        t1 - 500,
        data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":4}}"#).as_bytes(),
    );
    tl.on_bytes(t1 - 400, b"data: [DONE]\n\n");
    let mut r = tl.finish(t1, StreamEnd::Eof);
    r.protocol = protocol.map(str::to_owned);
    r
}

/// Case 6a: an open loop over HTTP/1.1 at 1 req/s, cap 64, E2E 2 s has about 3
/// requests in flight: the 6-connection limit never binds.
#[test]
fn open_loop_over_http1_is_judged_by_what_was_in_flight() {
    let recs: Vec<RequestRecord> = (0..30u32)
        .map(|i| {
            let t0 = u64::from(i) * 1_000_000;
            let mut r = simple(i, t0, t0 + 2_000_000, Some("http/1.1"));
            r.t_intended_us = Some(t0);
            r
        })
        .collect();
    let plan = MetricsPlan {
        steps: vec![LoadStep::Open {
            rate_milli_rps: 1_000,
            arrival: Arrival::Poisson {},
            in_flight_cap: 64,
        }],
        window: window(30),
        slo: None,
    };
    let s = metrics::summarize(&recs, &plan).expect("summary");
    assert_eq!(s.steps[0].concurrency.offered_max, 2);
    let v = client_verdict(&recs, &s, env(), true);
    assert!(!v.invalid, "{:?}", v.findings);
    // The same loop at 10 req/s has 20 in flight: now the browser limits it.
    let recs: Vec<RequestRecord> = (0..30u32)
        .map(|i| {
            let t0 = u64::from(i) * 100_000;
            let mut r = simple(i, t0, t0 + 2_000_000, Some("http/1.1"));
            r.t_intended_us = Some(t0);
            r
        })
        .collect();
    let s = metrics::summarize(&recs, &plan).expect("summary");
    let v = client_verdict(&recs, &s, env(), true);
    assert!(
        v.invalid && v.findings[0].contains("up to 20 requests in flight"),
        "{:?}",
        v.findings
    );
}

/// Case 6b: an HTTPS HTTP/1.1 server without Timing-Allow-Origin at c = 32: the protocol
/// is hidden, but only 6 requests ever had their headers at once.
#[test]
fn hidden_http1_is_caught_by_the_headers_overlap() {
    let closed = MetricsPlan {
        steps: vec![LoadStep::Closed { concurrency: 32 }],
        window: window(64),
        slo: None,
    };
    // 32 sent at once; the browser runs 6 at a time (headers only when a connection
    // takes the request).
    let recs: Vec<RequestRecord> = (0..64u32)
        .map(|i| {
            let t0 = u64::from(i / 6) * 50_000;
            let mut x = simple(i, t0, t0 + 50_000, None);
            x.t_send_us = u64::from(i / 32) * 1_000;
            x
        })
        .collect();
    let s = metrics::summarize(&recs, &closed).expect("summary");
    assert!(
        s.steps[0].concurrency.headers_max <= 6,
        "{:?}",
        s.steps[0].concurrency
    );
    let v = client_verdict(&recs, &s, env(), false);
    assert!(v.invalid, "{:?}", v.findings);
    assert!(
        v.findings
            .iter()
            .any(|f| f.contains("at most 6 had their response headers")),
        "{:?}",
        v.findings
    );
    // The same run over HTTP/2: all 32 have headers together, and the verdict is clean
    // of that finding.
    let recs: Vec<RequestRecord> = (0..64u32)
        .map(|i| {
            let t0 = u64::from(i / 32) * 60_000;
            simple(i, t0, t0 + 50_000, None)
        })
        .collect();
    let s = metrics::summarize(&recs, &closed).expect("summary");
    assert_eq!(s.steps[0].concurrency.headers_max, 32);
    let v = client_verdict(&recs, &s, env(), false);
    assert!(!v.invalid, "{:?}", v.findings);
}

/// Case 7a: a request with one token chunk has no TPOT: it fails a TPOT SLO, and the
/// report counts it.
#[test]
fn a_request_without_tpot_fails_a_tpot_slo() {
    let one = stream(
        Dialect::Completions,
        &[
            (5_000, text_chunk(Dialect::Completions, "x")),
            (
                5_100,
                data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":1}}"#),
            ),
        ],
    );
    assert_eq!(request_metrics(&one).tpot_us, None);
    let mut other = simple(1, 100_000, 140_000, None);
    other.index = 1;
    let plan = MetricsPlan {
        steps: vec![LoadStep::Closed { concurrency: 1 }],
        window: window(2),
        slo: Some(Slo {
            ttft_us: None,
            tpot_us: Some(1_000_000),
            e2e_us: None,
        }),
    };
    let s = metrics::summarize(&[one, other], &plan).expect("summary");
    let g = s.steps[0].goodput.expect("goodput");
    assert_eq!((g.met, g.judged, g.missing_tpot), (1, 2, 1));
}

/// Case 7b–c: one bad optional field keeps the chunk's text (and TTFT); an error event
/// whose data is not JSON is a stream error.
#[test]
fn bad_optional_fields_and_non_json_error_events() {
    let r = stream(
        Dialect::Completions,
        &[
            (
                3_000,
                data(
                    r#"{"id":17,"choices":[{"index":0,"text":"a","finish_reason":null}],"timings":{"prompt_n":1,"prompt_ms":1.0,"predicted_n":1,"predicted_ms":null}}"#,
                ),
            ),
            (4_000, text_chunk(Dialect::Completions, "b")),
            (
                4_100,
                data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}"#),
            ),
        ],
    );
    assert_eq!(request_metrics(&r).ttft_us, Some(3_000));
    assert_eq!(r.anomalies.bad_optional_fields, 2);
    assert_eq!(r.anomalies.invalid_json + r.anomalies.unexpected_shape, 0);
    let r = stream(
        Dialect::Chat,
        &[
            (3_000, text_chunk(Dialect::Chat, "a")),
            (
                4_000,
                "event: error\ndata: upstream connect error\n\n".into(),
            ),
        ],
    );
    assert_eq!(
        r.outcome,
        Outcome::StreamError {
            message: "upstream connect error".into()
        }
    );
    assert_eq!(r.anomalies.invalid_json, 0);
}

/// Case 7d: min, max and mean are exact, not bucket values.
#[test]
fn distribution_extremes_and_mean_are_exact() {
    let recs: Vec<RequestRecord> = [(0u64, 20_123u64), (100_000, 20_977)]
        .iter()
        .enumerate()
        .map(|(i, &(t0, ttft))| stream_at(i as u32, t0, ttft))
        .collect();
    let plan = MetricsPlan {
        steps: vec![LoadStep::Closed { concurrency: 1 }],
        window: window(2),
        slo: None,
    };
    let s = metrics::summarize(&recs, &plan).expect("summary");
    let d = s.steps[0].ttft_us.expect("ttft");
    assert_eq!((d.min, d.max, d.mean), (20_123, 20_977, 20_550));
}

fn stream_at(index: u32, t0: u64, ttft: u64) -> RequestRecord {
    let mut tl = RequestTimeline::new(index, 0, Dialect::Completions, 8, 2, t0);
    tl.on_headers(t0 + 500, 200, Some("text/event-stream"));
    tl.on_bytes(t0 + ttft, text_chunk(Dialect::Completions, "a").as_bytes());
    tl.on_bytes(
        t0 + ttft + 4_000,
        text_chunk(Dialect::Completions, "b").as_bytes(),
    );
    tl.on_bytes(
        t0 + ttft + 4_100,
        data(r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}"#).as_bytes(),
    );
    tl.on_bytes(t0 + ttft + 4_150, b"data: [DONE]\n\n");
    tl.finish(t0 + ttft + 4_200, StreamEnd::Eof)
}
