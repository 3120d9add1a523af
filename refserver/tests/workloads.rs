//! Workloads against the reference server's block-level prefix cache, run by the native
//! host (`pinbench run`): every request's prompt length and cached tokens, as the client
//! recorded them from the server's usage, equal the server's own truth, and the shared
//! prefix makes TTFT fall only when the cache is on.

mod common;

use common::{get, native_run as run, Server, Tmp};
use pinbench::core::pins::Pins;
use pinbench::core::report::Report;

/// One run at a time: the TTFT comparison is the machine's to disturb.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The shared-system-prompt preset's shape, smaller: 2176-token prompts whose first 2048
/// are one of `groups` prefixes, 16 output tokens, exact prompts, a nonce after the prefix.
fn pins(base: &str, shared: &str, concurrency: u32, measured: &str) -> String {
    Pins::reference()
        .endpoint(base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("phases", "colocated"),
            ("shared_prefix", shared),
        ])
        .lengths(2176, 16)
        .concurrency(concurrency)
        .windows("0", measured, "0")
        .share_json()
        .expect("pins")
}

/// Each record with the server's truth for it, in dispatch order: index, prompt tokens
/// and cached tokens as the client recorded them (no count: 0), then as the server did.
fn with_truth(port: u16, report: &Report) -> Vec<(u32, u64, u64, u64, u64)> {
    let truths: serde_json::Value =
        serde_json::from_slice(&get(port, "/truth").body).expect("truth");
    let truths = truths.as_array().expect("a list");
    let mut out: Vec<_> = report
        .body
        .records
        .iter()
        .map(|r| {
            let id = r.response_id.as_deref().expect("a response id");
            let t = truths
                .iter()
                .find(|t| t["response_id"] == id)
                .expect("a truth per request");
            let usage = r.usage.expect("usage");
            (
                r.index,
                usage.prompt_tokens,
                r.cached_tokens().unwrap_or(0),
                t["prompt_tokens"].as_u64().expect("prompt tokens"),
                t["cached_tokens"].as_u64().expect("cached tokens"),
            )
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn shared_prefix_cached_tokens_match_the_truth_per_request() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("shared-prefix");
    let server = Server::start(&["--prefix-cache", "on"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    // Two groups at c=2: requests 0 and 1 prefill their group's prefix, every later one
    // finds it (the 2048 shared tokens are 128 whole blocks) and nothing of its own.
    let report = run(&tmp, &pins(&base, "2048x2", 2, "12"), &[]);
    assert!(
        report
            .body
            .records
            .iter()
            .all(|r| r.cached_tokens().is_some()),
        "a server with a prefix cache reports it in every usage"
    );
    let rows = with_truth(server.port, &report);
    assert_eq!(rows.len(), 12, "one record per request");
    for &(i, prompt, cached, truth_prompt, truth_cached) in &rows {
        assert_eq!(
            (prompt, cached),
            (truth_prompt, truth_cached),
            "request {i}: the client's usage against the server's truth"
        );
        assert_eq!(prompt, 2176, "request {i}: exact prompt");
        let expected = if i < 2 { 0 } else { 2048 };
        assert_eq!(cached, expected, "request {i}: cached tokens");
    }
    let v = pinbench::core::server::verdict(&report.body.records, &report.body.config);
    let c = v.cache.clone().expect("cache counts");
    assert_eq!((c.hits, c.beyond_prefix), (10, 0));
    assert!(!v.flags(), "{:?}", v.lines());
}

#[test]
fn a_shared_prefix_lowers_ttft_only_when_the_cache_is_on() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let ttft_p50 = |cache: &str| {
        let tmp = Tmp::new(&format!("shared-ttft-{cache}"));
        let server = Server::start(&["--prefix-cache", cache]);
        let base = format!("http://127.0.0.1:{}", server.port);
        let report = run(&tmp, &pins(&base, "2048", 1, "8"), &[]);
        let rows = with_truth(server.port, &report);
        let cached: u64 = rows.iter().map(|r| r.2).sum();
        assert!(rows.iter().all(|r| r.2 == r.4), "{cache}: {rows:?}");
        let figures = report.body.figures().expect("figures");
        (figures.steps[0].ttft_us.as_ref().expect("TTFT").p50, cached)
    };
    let (off, cached_off) = ttft_p50("off");
    let (on, cached_on) = ttft_p50("on");
    eprintln!("TTFT p50: cache on {on} µs, off {off} µs");
    assert_eq!(cached_off, 0);
    // The first request prefills the prefix; the other 7 find its 2048 tokens.
    assert_eq!(cached_on, 7 * 2048);
    // Prefilling 2048 tokens on the tiny profile costs ~20 ms of compute; 128 cost ~1 ms
    // (plus one 0.5 ms step either way): the median TTFT falls by more than half.
    assert!(
        on * 2 < off,
        "TTFT p50 with the cache {on} µs, without {off} µs"
    );
}
