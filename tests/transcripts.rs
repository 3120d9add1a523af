//! Snapshot tests over real and hand-written SSE transcripts (`tests/fixtures/transcripts`).
//!
//! Each `NAME.sse` is fed through [`RequestTimeline`] one event per millisecond; the record
//! (with chunks decoded) must equal `NAME.expected.json`. The name picks the dialect
//! (`anthropic_*` Messages, `openai_responses_*` Responses, `gemini_*` Gemini, `*chat*`
//! chat completions, else completions); `SOURCES.md` says where each file comes from. Run with `UPDATE_SNAPSHOTS=1` to rewrite expectations
//! after an intended change, then read the diff.

use std::path::Path;

use pinbench::core::dialect::Dialect;
use pinbench::core::record::{RequestRecord, RequestTimeline, StreamEnd};
use serde_json::{json, Value};

fn record_of(name: &str, bytes: &[u8]) -> RequestRecord {
    let dialect = if name.starts_with("anthropic_") {
        Dialect::Messages
    } else if name.starts_with("openai_responses_") {
        Dialect::Responses
    } else if name.starts_with("gemini_") {
        Dialect::Gemini
    } else if name.contains("chat") {
        Dialect::Chat
    } else {
        Dialect::Completions
    };
    let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
    tl.on_headers(500, 200, Some("text/event-stream"));
    // One event (up to and including its blank line) per millisecond.
    let mut t = 0;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = if bytes[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if bytes[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        };
        if let Some(e) = end {
            t += 1_000;
            tl.on_bytes(t, &bytes[start..e]);
            start = e;
            i = e;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        t += 1_000;
        tl.on_bytes(t, &bytes[start..]);
    }
    tl.finish(t + 1_000, StreamEnd::Eof)
}

fn snapshot(rec: &RequestRecord) -> Value {
    let mut v = serde_json::to_value(rec).expect("record serialises");
    v["chunks"] = json!(rec
        .chunks
        .iter()
        .map(|c| [c.t_us, u64::from(c.tokens)])
        .collect::<Vec<_>>());
    for k in [
        "index",
        "step",
        "prompt_tokens_requested",
        "output_tokens_requested",
        "t_send_us",
        "t_headers_us",
        "status",
        "protocol",
        "wire",
    ] {
        if let Value::Object(o) = &mut v {
            o.remove(k);
        }
    }
    v
}

#[test]
fn transcripts_match_their_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sse"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 6,
        "expected the transcript fixtures, found {names:?}"
    );
    let mut failures = Vec::new();
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).expect("readable");
        let got = snapshot(&record_of(name, &bytes));
        let expected_path = dir.join(name.replace(".sse", ".expected.json"));
        if update {
            let text = serde_json::to_string_pretty(&got).expect("json") + "\n";
            std::fs::write(&expected_path, text).expect("writable");
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(text) => {
                let want: Value = serde_json::from_str(&text).expect("expected file is JSON");
                if want != got {
                    failures.push(format!("{name}:\n  want {want}\n  got  {got}"));
                }
            }
            Err(_) => failures.push(format!(
                "{name}: no {} (run with UPDATE_SNAPSHOTS=1)",
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Split invariance over the real transcripts: any 2-way split gives the same record.
#[test]
fn transcripts_are_split_invariant() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "sse") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("readable");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let dialect = if name.contains("chat") {
            Dialect::Chat
        } else {
            Dialect::Completions
        };
        let whole = {
            let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
            tl.on_headers(1, 200, Some("text/event-stream"));
            tl.on_bytes(2, &bytes);
            tl.finish(3, StreamEnd::Eof)
        };
        for cut in (0..bytes.len()).step_by(7) {
            let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
            tl.on_headers(1, 200, Some("text/event-stream"));
            tl.on_bytes(2, &bytes[..cut]);
            tl.on_bytes(2, &bytes[cut..]);
            assert_eq!(tl.finish(3, StreamEnd::Eof), whole, "{name} split at {cut}");
        }
    }
}

/// Every engine's stream shape through the full record → metrics path, with the answer
/// worked out by hand from the transcript (events one per millisecond from 1 ms, sent at
/// 0): tokens per chunk, how exact they are, output tokens, TTFT and TPOT.
#[test]
fn engines_known_answers() {
    use pinbench::core::metrics::request_metrics;
    /// (file, tokens per chunk, token counts, output tokens, TTFT µs, TPOT µs)
    type Case<'a> = (&'a str, &'a [u32], &'a str, u64, u64, u64);
    let cases: &[Case] = &[
        // vLLM completions, usage only at the end.
        (
            "vllm_completions_final_usage",
            &[1; 8],
            "exact_deltas_match_usage",
            8,
            1_000,
            1_000,
        ),
        // vLLM completions with continuous_usage_stats (a 2-token chunk, exact).
        (
            "vllm_completions_continuous",
            &[1, 2, 1, 1],
            "exact_continuous_usage",
            5,
            1_000,
            750,
        ),
        // vLLM chat with reasoning content and continuous usage.
        (
            "vllm_chat_reasoning_continuous",
            &[1; 4],
            "exact_continuous_usage",
            4,
            2_000,
            1_000,
        ),
        // vLLM chat stopped by its stop token: the empty finish delta is the 7th token.
        (
            "vllm_chat_stop_token",
            &[1; 7],
            "exact_finish_token",
            7,
            2_000,
            1_000,
        ),
        // vLLM speculative decoding [1,3,1,4,2]: exact with continuous usage …
        (
            "vllm_completions_speculative_continuous",
            &[1, 3, 1, 4, 2],
            "exact_continuous_usage",
            11,
            1_000,
            400,
        ),
        // … estimated without it, first chunk one token, TPOT still the true 0.4 ms.
        (
            "vllm_completions_speculative_final_usage",
            &[1, 2, 3, 2, 3],
            "estimated_coalesced",
            11,
            1_000,
            400,
        ),
        // SGLang chat: nulls in every delta, a finish chunk with null content.
        (
            "sglang_chat",
            &[1; 5],
            "exact_deltas_match_usage",
            5,
            1_000,
            1_000,
        ),
        // TGI, usage on the final token's event: not continuous usage (was 15 tokens).
        (
            "tgi_chat_usage_on_last_token",
            &[1; 8],
            "exact_deltas_match_usage",
            8,
            1_000,
            1_000,
        ),
        // TGI, EOS streamed as an empty delta and counted by usage.
        (
            "tgi_chat_eos_empty_delta",
            &[1; 7],
            "exact_finish_token",
            7,
            1_000,
            1_000,
        ),
        // llama.cpp (real captures): usage in the final choice chunk.
        (
            "llama_completions",
            &[1; 12],
            "exact_deltas_match_usage",
            12,
            1_000,
            1_000,
        ),
        (
            "llama_chat",
            &[1; 10],
            "exact_deltas_match_usage",
            10,
            2_000,
            1_000,
        ),
        // Ollama's OpenAI-compatible chat: an empty finish delta not counted by usage.
        (
            "ollama_chat",
            &[1; 4],
            "exact_deltas_match_usage",
            4,
            1_000,
            1_000,
        ),
        // A hosted OpenAI-style API: role chunk first, usage only at the end.
        (
            "openai_chat",
            &[1; 3],
            "exact_deltas_match_usage",
            3,
            2_000,
            1_000,
        ),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    for &(name, tokens, counts, output, ttft, tpot) in cases {
        let file = format!("{name}.sse");
        let bytes = std::fs::read(dir.join(&file)).expect("fixture");
        let rec = record_of(&file, &bytes);
        let got: Vec<u32> = rec.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(got, tokens, "{name}: tokens per chunk");
        assert_eq!(rec.token_counts.name(), counts, "{name}");
        assert_eq!(rec.output_tokens(), output, "{name}");
        let m = request_metrics(&rec);
        assert_eq!(m.ttft_us, Some(ttft), "{name}: TTFT");
        assert_eq!(m.tpot_us, Some(tpot), "{name}: TPOT");
        assert!(rec.outcome.is_ok(), "{name}: {:?}", rec.outcome);
        assert!(rec.anomalies.is_clean(), "{name}: {:?}", rec.anomalies);
    }
}
