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

/// Multi-turn conversations (completions API, so the history is the earlier prompt and
/// answer run together): each turn's prompt, as the server counted it, is the previous
/// turn's prompt, its answer and a new 64-token message; the cache holds the previous
/// prompt and answer's full blocks, and the client's usage equals the truth throughout.
#[test]
fn conversations_resend_their_history_and_find_it_cached() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("turns");
    let server = Server::start(&["--prefix-cache", "on"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let pins = Pins::reference()
        .endpoint(&base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("phases", "colocated"),
            ("turns", "4 think=0.05"),
        ])
        .lengths(64, 16)
        .concurrency(2)
        .windows("0", "16", "0")
        .share_json()
        .expect("pins");
    let report = run(&tmp, &pins, &[]);
    let rows = with_truth(server.port, &report);
    assert_eq!(rows.len(), 16);
    for &(i, prompt, cached, truth_prompt, truth_cached) in &rows {
        assert_eq!(
            (prompt, cached),
            (truth_prompt, truth_cached),
            "request {i}"
        );
    }
    let by_index: std::collections::BTreeMap<u32, _> =
        report.body.records.iter().map(|r| (r.index, r)).collect();
    let mut conversations: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for r in by_index.values() {
        let t = r.turn.expect("a turn");
        conversations
            .entry(t.conversation)
            .or_default()
            .push(r.index);
    }
    assert_eq!(
        conversations.len(),
        4,
        "two slots, four turns each: {conversations:?}"
    );
    for (c, idx) in &conversations {
        for (k, i) in idx.iter().enumerate() {
            let r = by_index[i];
            assert_eq!(r.turn.map(|t| t.turn), Some(k as u32));
            let usage = r.usage.expect("usage");
            if k == 0 {
                assert_eq!(
                    usage.prompt_tokens, 64,
                    "conversation {c}: exact first prompt"
                );
                assert_eq!(r.cached_tokens(), Some(0));
                continue;
            }
            let prev = by_index[&idx[k - 1]];
            let pu = prev.usage.expect("usage");
            let history = pu.prompt_tokens + pu.completion_tokens;
            assert_eq!(
                usage.prompt_tokens,
                history + 64,
                "conversation {c} turn {k}: the history and a new message"
            );
            assert_eq!(
                r.cached_tokens(),
                Some(history / 16 * 16),
                "conversation {c} turn {k}: the history's full blocks"
            );
            assert!(
                r.t_send_us >= prev.t_done_us.expect("ended") + 50_000,
                "think time"
            );
        }
    }
    let figures = report.body.figures().expect("figures");
    let step = &figures.steps[0];
    assert_eq!(
        (step.prompt_len.known, step.prompt_len.exact),
        (4, 4),
        "first turns are held to their length, later ones are the server's count"
    );
    let measured = pinbench::core::report::measured_ok(&report, 0);
    let by_turn = pinbench::core::turns::by_turn(&measured);
    assert_eq!(by_turn.len(), 4);
    assert!(by_turn
        .windows(2)
        .all(|w| w[0].prompt_mean < w[1].prompt_mean));
    assert_eq!(by_turn[0].cached_permille, Some(0));
    assert!(by_turn[3].cached_permille > Some(700), "{:?}", by_turn[3]);
}

/// Per-turn TTFT: with the cache on, a later turn prefills only its new message and its
/// TTFT stays near the first turn's; with it off, each turn prefills the whole history
/// and TTFT grows with the turn (tiny profile: ~10 µs of prefill per token, so the sixth
/// turn's ~3,150 tokens cost ~31 ms against the first's ~5 ms).
#[test]
fn per_turn_ttft_grows_with_the_history_only_without_the_cache() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let ttft_by_turn = |cache: &str| {
        let tmp = Tmp::new(&format!("turn-ttft-{cache}"));
        let server = Server::start(&["--prefix-cache", cache]);
        let base = format!("http://127.0.0.1:{}", server.port);
        let pins = Pins::reference()
            .endpoint(&base)
            .with(&[
                ("prompt_exactness", "server_tokenizer"),
                ("stall_timeout_s", "30"),
                ("phases", "colocated"),
                ("turns", "6"),
            ])
            .lengths(512, 16)
            .concurrency(1)
            .windows("0", "12", "0")
            .share_json()
            .expect("pins");
        let report = run(&tmp, &pins, &[]);
        let measured = pinbench::core::report::measured_ok(&report, 0);
        let rows = pinbench::core::turns::by_turn(&measured);
        assert_eq!(rows.len(), 6, "{cache}");
        rows.iter()
            .map(|r| r.ttft_us.expect("TTFT").0)
            .collect::<Vec<u64>>()
    };
    let off = ttft_by_turn("off");
    let on = ttft_by_turn("on");
    eprintln!("TTFT p50 by turn (µs): cache off {off:?}, on {on:?}");
    assert!(off[5] > 3 * off[0], "without the cache TTFT grows: {off:?}");
    assert!(
        2 * on[5] < 3 * on[0],
        "with it, the last turn near the first: {on:?}"
    );
    assert!(
        3 * on[5] < off[5],
        "the cache saves the history's prefill: {on:?} {off:?}"
    );
}
