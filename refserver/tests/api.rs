//! Integration tests: a real HTTP client against the running binary.

mod common;

use common::{events, get, post, prompt, request, Server};
use pinbench::core::dialect::Dialect;
use pinbench::core::record::{Outcome, RequestTimeline, StreamEnd};
use serde_json::{json, Value};

fn completion(n_prompt: usize, max_tokens: u32) -> Value {
    json!({"model": "pinbench-tiny", "prompt": prompt(n_prompt), "max_tokens": max_tokens, "stream": true,
           "stream_options": {"include_usage": true}, "ignore_eos": true})
}

fn truth(port: u16, resp: &common::Resp) -> Value {
    let id = resp.header("x-request-id").expect("x-request-id");
    get(port, &format!("/truth/{id}")).json()
}

/// Feeds an SSE body through pinbench's own record builder.
fn record(dialect: Dialect, body: &[u8]) -> pinbench::core::record::RequestRecord {
    let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
    tl.on_headers(1, 200, Some("text/event-stream"));
    tl.on_bytes(2, body);
    tl.finish(3, StreamEnd::Eof)
}

#[test]
fn completions_stream_format_usage_and_truth_agree() {
    let s = Server::start(&[]);
    let r = post(s.port, "/v1/completions", &completion(20, 12), &[]);
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream")));
    let evs = events(&r.text());
    assert_eq!(evs.last().map(String::as_str), Some("[DONE]"));
    let rec = record(Dialect::Completions, &r.body);
    assert_eq!(rec.outcome, Outcome::Ok {});
    assert_eq!(rec.chunk_tokens(), 12);
    assert_eq!(
        rec.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((21, 12)),
        "20 prompt tokens and a BOS token"
    );
    assert!(rec.anomalies.is_clean(), "{:?}", rec.anomalies);
    // The truth record matches the stream event for event.
    let t = truth(s.port, &r);
    let emitted: Vec<u64> = evs
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter(|v| {
            v["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .map(|v| v["pinbench_emit_us"].as_u64().expect("emit time"))
        .collect();
    let truth_times: Vec<u64> = t["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c[0].as_u64().expect("t"))
        .collect();
    assert_eq!(emitted, truth_times);
    assert_eq!(t["completion_tokens"], 12);
    assert_eq!(t["prompt_tokens"], 21);
    assert_eq!(t["finish_reason"], "length");
    assert!(t["first_token_us"].as_u64() > t["received_us"].as_u64());
}

#[test]
fn chat_stream_continuous_usage_and_coalesced_events() {
    let s = Server::start(&["--tokens-per-event", "4"]);
    let body = json!({"model": "pinbench-tiny", "messages": [{"role": "user", "content": prompt(9)}], "max_tokens": 10,
                      "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "ignore_eos": true});
    let r = post(s.port, "/v1/chat/completions", &body, &[]);
    let rec = record(Dialect::Chat, &r.body);
    // 10 tokens in events of 4, 4, 2: exact thanks to continuous usage.
    let per_chunk: Vec<u32> = rec.chunks.iter().map(|c| c.tokens).collect();
    assert_eq!(per_chunk, vec![4, 4, 2]);
    assert_eq!(
        rec.token_counts,
        pinbench::core::record::TokenCounts::ExactContinuousUsage
    );
    // 9 content tokens, 13 of the chat template, 1 BOS.
    assert_eq!(rec.usage.map(|u| u.prompt_tokens), Some(23));
    // Without continuous usage the client sees coalescing and says so.
    let mut plain = body.clone();
    plain["stream_options"] = json!({"include_usage": true});
    let r = post(s.port, "/v1/chat/completions", &plain, &[]);
    let rec = record(Dialect::Chat, &r.body);
    assert_eq!(
        rec.token_counts,
        pinbench::core::record::TokenCounts::EstimatedCoalesced
    );
    assert_eq!(rec.chunk_tokens(), 10);
    assert_eq!(
        truth(s.port, &r)["chunks"].as_array().map(Vec::len),
        Some(3)
    );
}

#[test]
fn non_streaming_and_early_stop_without_ignore_eos() {
    let s = Server::start(&[]);
    let r = post(
        s.port,
        "/v1/completions",
        &json!({"model": "pinbench-tiny", "prompt": "hello there", "max_tokens": 400}),
        &[],
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    let n = v["usage"]["completion_tokens"].as_u64().expect("usage");
    assert!((16..256).contains(&n), "natural length {n}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // min_tokens holds the length.
    let r = post(
        s.port,
        "/v1/completions",
        &json!({"model": "pinbench-tiny", "prompt": "hello there", "max_tokens": 300, "min_tokens": 300}),
        &[],
    );
    assert_eq!(r.json()["usage"]["completion_tokens"], 300);
}

#[test]
fn tokenizer_is_exact() {
    let s = Server::start(&[]);
    for n in [1usize, 7, 128, 1000] {
        let t = post(
            s.port,
            "/tokenize",
            &json!({"model": "pinbench-tiny", "prompt": prompt(n)}),
            &[],
        )
        .json();
        // vLLM's form counts the BOS token, as usage does.
        assert_eq!(t["count"], n + 1);
        assert_eq!(t["tokens"].as_array().map(Vec::len), Some(n + 1));
        assert_eq!(t["max_model_len"], 4096);
        let r = post(s.port, "/v1/completions", &completion(n, 2), &[]);
        assert_eq!(
            record(Dialect::Completions, &r.body)
                .usage
                .map(|u| u.prompt_tokens),
            Some(n as u64 + 1)
        );
        // llama.cpp's form adds BOS only when asked.
        for (special, want) in [(false, n), (true, n + 1)] {
            let t = post(
                s.port,
                "/tokenize",
                &json!({"content": prompt(n), "add_special": special}),
                &[],
            )
            .json();
            assert_eq!(t["tokens"].as_array().map(Vec::len), Some(want));
        }
    }
    let chat = post(
        s.port,
        "/tokenize",
        &json!({"model": "pinbench-tiny", "messages": [{"role": "user", "content": "a b c"}]}),
        &[],
    )
    .json();
    // "<|user|>\n" (6) + "a b c" (3) + "\n" (1) + "<|assistant|>\n" (6) + BOS.
    assert_eq!(chat["count"], 17);
}

#[test]
fn introspection_endpoints() {
    let s = Server::start(&[]);
    let m = get(s.port, "/v1/models").json();
    assert_eq!(m["data"][0]["id"], "pinbench-tiny");
    assert_eq!(m["data"][0]["max_model_len"], 4096);
    assert_eq!(m["data"][0]["pinbench"]["max_num_seqs"], 16);
    let metrics = get(s.port, "/metrics").text();
    for name in [
        "vllm:cache_config_info{",
        "vllm:num_requests_running{",
        "vllm:num_requests_waiting{",
        "vllm:kv_cache_usage_perc{",
        "vllm:num_preemptions_total{",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }
    assert!(metrics.contains("kv_cache_size_tokens=\"16384\""));
    assert_eq!(get(s.port, "/health").status, 200);
}

#[test]
fn cors_preflight_and_headers() {
    let s = Server::start(&["--allow-origin", "http://127.0.0.1:8080"]);
    let r = request(
        s.port,
        "OPTIONS",
        "/v1/chat/completions",
        &[
            ("Origin", "http://127.0.0.1:8080"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization, content-type",
            ),
        ],
        b"",
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://127.0.0.1:8080")
    );
    assert!(r
        .header("access-control-allow-methods")
        .is_some_and(|m| m.contains("POST")));
    assert!(r
        .header("access-control-allow-headers")
        .is_some_and(|h| h.contains("authorization")));
    let r = post(
        s.port,
        "/v1/completions",
        &completion(4, 2),
        &[("Origin", "http://127.0.0.1:8080")],
    );
    assert_eq!(
        r.header("timing-allow-origin"),
        Some("http://127.0.0.1:8080")
    );
    // What a throttled answer says about its limits is readable from a page.
    assert_eq!(
        r.header("access-control-expose-headers"),
        Some("x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests")
    );
}

#[test]
fn bad_input_gets_openai_errors() {
    let s = Server::start(&[]);
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"{not json".to_vec(), 400),
        (
            json!({"model": "nope", "prompt": "x"})
                .to_string()
                .into_bytes(),
            404,
        ),
        (
            json!({"model": "pinbench-tiny", "prompt": prompt(5000)})
                .to_string()
                .into_bytes(),
            400,
        ),
        (
            json!({"model": "pinbench-tiny", "prompt": "x", "max_tokens": 100000000})
                .to_string()
                .into_bytes(),
            400,
        ),
        (
            json!({"model": "pinbench-tiny", "prompt": "x", "max_tokens": -1})
                .to_string()
                .into_bytes(),
            400,
        ),
        (
            json!({"model": "pinbench-tiny", "prompt": 7})
                .to_string()
                .into_bytes(),
            400,
        ),
        (vec![b' '; 2 << 20], 413),
    ];
    for (body, status) in cases {
        let r = request(
            s.port,
            "POST",
            "/v1/completions",
            &[("Content-Type", "application/json")],
            &body,
        );
        assert_eq!(
            r.status,
            status,
            "{}",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        );
        let e = r.json();
        assert!(
            e["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{e}"
        );
        assert!(e["error"]["type"].is_string());
    }
    // Still serving.
    assert_eq!(
        post(s.port, "/v1/completions", &completion(4, 2), &[]).status,
        200
    );
}

#[test]
fn every_fault_mode() {
    let s = Server::start(&[]);
    let fault = |spec: &str| {
        post(
            s.port,
            "/v1/completions",
            &completion(8, 10),
            &[("x-pinbench-fault", spec)],
        )
    };
    for status in [429u16, 500, 503] {
        let r = fault(&format!("status={status}"));
        assert_eq!(r.status, status);
        assert!(r.json()["error"]["message"].is_string());
        if status != 500 {
            assert_eq!(r.header("retry-after"), Some("1"));
        }
    }
    let r = fault("reset_after=3");
    assert!(!r.complete, "the connection must be cut mid-stream");
    assert_eq!(record(Dialect::Completions, &r.body).chunk_tokens(), 3);

    let r = fault("stall_ms=300@4");
    let t = truth(s.port, &r);
    let c: Vec<u64> = t["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c[0].as_u64().expect("t"))
        .collect();
    assert!(c[4] - c[3] >= 300_000, "stall gap {} µs", c[4] - c[3]);

    let rec = record(Dialect::Completions, &fault("malformed@2").body);
    assert_eq!(rec.anomalies.invalid_json, 1);
    assert_eq!(rec.chunk_tokens(), 10);

    let rec = record(Dialect::Completions, &fault("no_done").body);
    assert!(rec.anomalies.missing_done);
    assert_eq!(rec.outcome, Outcome::Ok {});

    let rec = record(Dialect::Completions, &fault("eos_at=4").body);
    assert_eq!(
        (rec.chunk_tokens(), rec.finish_reason.as_deref()),
        (4, Some("stop"))
    );

    let rec = record(Dialect::Completions, &fault("error_event@5").body);
    assert!(matches!(rec.outcome, Outcome::StreamError { .. }));
    assert_eq!(rec.chunk_tokens(), 5);

    let r = fault("slow_headers_ms=250");
    let t = truth(s.port, &r);
    assert!(
        t["headers_us"].as_u64().expect("headers") - t["received_us"].as_u64().expect("rx")
            >= 250_000
    );
    assert_eq!(t["faults"], "slow_headers_ms=250");

    assert_eq!(fault("explode").status, 400);
}

#[test]
fn several_server_wide_faults_apply_in_turn() {
    let s = Server::start(&[
        "--fault",
        "status=429",
        "--fault",
        "status=500",
        "--fault-every",
        "2",
    ]);
    let statuses: Vec<u16> = (0..6)
        .map(|_| post(s.port, "/v1/completions", &completion(4, 2), &[]).status)
        .collect();
    assert_eq!(statuses, vec![200, 429, 200, 500, 200, 429]);
}

#[test]
fn server_wide_faults_every_nth_request() {
    let s = Server::start(&["--fault", "status=503", "--fault-every", "2"]);
    let statuses: Vec<u16> = (0..4)
        .map(|_| post(s.port, "/v1/completions", &completion(4, 2), &[]).status)
        .collect();
    assert_eq!(statuses, vec![200, 503, 200, 503]);
}
