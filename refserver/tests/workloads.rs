//! Workloads against the reference server's block-level prefix cache, run by the native
//! host (`pinbench run`): every request's prompt length and cached tokens, as the client
//! recorded them from the server's usage, equal the server's own truth, and the shared
//! prefix makes TTFT fall only when the cache is on; a Mooncake trace slice replays at
//! its rows' times with their lengths.

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

/// The pins of a replay of the built-in Mooncake slice (or of `trace` as written) on the
/// 8B profile, its 60 rows all measured.
fn replay_pins(base: &str, trace: &str, cap: &str) -> String {
    Pins::reference()
        .endpoint(base)
        .with(&[
            ("model_id", "llama-3.1-8b-sim"),
            ("max_model_len", "131072"),
            ("kv_capacity", "430000"),
            ("max_num_seqs", "256"),
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("load_mode", "replay"),
            ("trace", trace),
            ("in_flight_cap", cap),
            ("prompt_tokens", "trace"),
            ("output_tokens", "trace"),
            ("nonce_prefix", "off"),
        ])
        .windows("0", "60", "0")
        .share_json()
        .expect("pins")
}

/// A Mooncake slice replayed at 5× speed (scale 0.2): request i is the trace's row i —
/// its prompt and output lengths exactly, its intended send time the row's time scaled,
/// its cached tokens the server's truth (the slice's rows share their first 512-token
/// block) — and the sends keep to those times. With one request in flight, the rows the
/// cap holds back are sent late and recorded as late: their intended times do not move.
#[test]
fn a_mooncake_slice_replays_its_rows_at_their_times() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let trace = pinbench::core::trace::parse(include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/traces/mooncake_conversation_head60.jsonl"
    )))
    .expect("parses");
    let rows = pinbench::core::pins::replay_rows(&trace, 0);
    assert_eq!(rows.len(), 60);
    let server = Server::start(&[
        "--profile",
        "8b-h100",
        "--prefix-cache",
        "on",
        "--zero-step-cost",
    ]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let tmp = Tmp::new("replay");
    let report = run(
        &tmp,
        &replay_pins(&base, "mooncake-conversation-60 scale=0.2", "64"),
        &[],
    );
    let recs = &report.body.records;
    assert_eq!(recs.len(), 60, "one request per row");
    let truth = with_truth(server.port, &report);
    let t0 = recs[0].t_intended_us.expect("intended");
    let mut delays = Vec::new();
    for (r, row) in recs.iter().zip(&rows) {
        let i = r.index as usize;
        assert_eq!(
            (r.prompt_tokens_requested, r.output_tokens_requested),
            (row.input, row.output),
            "request {i}: the row's lengths"
        );
        let intended = r.t_intended_us.expect("intended") - t0;
        assert_eq!(
            intended,
            row.t_us / 5,
            "request {i}: the row's time, scaled"
        );
        delays.push(r.t_send_us - r.t_intended_us.expect("intended"));
        let (_, prompt, cached, truth_prompt, truth_cached) = truth[i];
        assert_eq!(
            (prompt, cached),
            (truth_prompt, truth_cached),
            "request {i}"
        );
        assert_eq!(prompt, u64::from(row.input), "request {i}: exact prompt");
        assert_eq!(
            r.usage.expect("usage").completion_tokens,
            u64::from(row.output),
            "request {i}: exact output"
        );
    }
    let cached: u64 = truth.iter().map(|t| t.2).sum();
    let hits = truth.iter().filter(|t| t.2 >= 512).count();
    delays.sort_unstable();
    let (p50, max) = (delays[delays.len() / 2], delays[delays.len() - 1]);
    eprintln!(
        "replay: {hits} of 60 requests found ≥ 512 cached tokens ({cached} in all); send − intended p50 {p50} µs, max {max} µs"
    );
    // Every row but the first shares block 0 (the slice's common system prompt); with
    // steps that cost nothing, each finds it prefilled by an earlier one.
    assert!(hits >= 55, "{hits} requests found the shared block");
    let open = report.body.figures().expect("figures").steps[0]
        .open_loop
        .expect("open-loop figures");
    assert_eq!(open.arrivals, 60);
    // Sends keep to the trace: the median row leaves within 5 ms of its time and none
    // more than 25 ms late (a debug build writing up to 87k-token prompts; measured
    // here: p50 1.5 ms, max 1.7 ms).
    assert!(p50 <= 5_000 && max <= 25_000, "p50 {p50} µs, max {max} µs");

    // The file itself, given to `pinbench run --trace`, replayed one request at a time.
    let tmp = Tmp::new("replay-file");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/traces/mooncake_conversation_head60.jsonl"
    );
    let report = run(
        &tmp,
        &replay_pins(&base, "file:conversation_trace.jsonl scale=0.2", "1"),
        &["--trace", file],
    );
    let pin = &report
        .body
        .config
        .trace
        .as_ref()
        .expect("a trace pin")
        .value;
    assert_eq!((pin.builtin, pin.rows), (false, 60));
    assert_eq!(
        pin.sha256, trace.sha256,
        "the pin names the file by its digest"
    );
    let recs = &report.body.records;
    let t0 = recs[0].t_intended_us.expect("intended");
    let mut late = 0;
    for (r, row) in recs.iter().zip(&rows) {
        let intended = r.t_intended_us.expect("intended");
        assert_eq!(
            intended - t0,
            row.t_us / 5,
            "request {}: never shifted",
            r.index
        );
        if r.held_by_cap {
            late += 1;
            assert!(r.t_send_us > intended, "request {}", r.index);
        }
    }
    let open = report.body.figures().expect("figures").steps[0]
        .open_loop
        .expect("open-loop figures");
    eprintln!("replay at c≤1: {late} of 60 sent late (held by the cap)");
    // The slice starts with rows at the same instant: one in flight holds the rest.
    assert!(late >= 4, "{late} late");
    assert_eq!(open.held_by_cap, late);
}

/// The pins of a closed-loop run whose lengths come from a dataset file.
fn dataset_pins(base: &str, prompt: &str, concurrency: u32, measured: &str) -> String {
    Pins::reference()
        .endpoint(base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("prompt_tokens", prompt),
            ("output_tokens", "dataset"),
            // This file's prompts (a few words) are shorter than a nonce.
            ("nonce_prefix", "off"),
        ])
        .concurrency(concurrency)
        .windows("0", measured, "0")
        .share_json()
        .expect("pins")
}

/// A ShareGPT file (`pinbench run --dataset`): its rows' texts are counted by the
/// server's `/tokenize` and request i asks for row order[i]'s lengths exactly — the
/// prompt as the server counts it when sent, the answer's token count as its output — in
/// the file's fixed order, cycling past its rows; a CSV of lengths gives its own.
#[test]
fn a_dataset_gives_each_request_the_lengths_of_its_row() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/datasets/fastchat_dummy_conversation_head40.json"
    );
    let d = pinbench::core::dataset::parse(&std::fs::read(file).expect("fixture")).expect("reads");
    let server = Server::start(&["--prefix-cache", "on"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    // The server's own counts of each row, as the test asks for them.
    let count = |body: serde_json::Value| {
        common::post(server.port, "/tokenize", &body, &[]).json()["count"]
            .as_u64()
            .expect("a count") as u32
    };
    let expected: Vec<(u32, u32)> = d
        .order()
        .into_iter()
        .map(|i| match &d.rows[i] {
            pinbench::core::dataset::DatasetRow::Texts { prompt, completion } => (
                count(serde_json::json!({"model": "pinbench-tiny", "prompt": prompt})),
                count(serde_json::json!({"model": "pinbench-tiny", "prompt": completion})),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(expected.len(), 40);
    let tmp = Tmp::new("dataset");
    let report = run(
        &tmp,
        &dataset_pins(&base, "dataset", 4, "48"),
        &["--dataset", file],
    );
    let pin = &report
        .body
        .config
        .dataset
        .as_ref()
        .expect("a dataset pin")
        .value;
    assert_eq!(
        (pin.sha256.as_str(), pin.rows, pin.sampled, pin.format),
        (
            d.sha256.as_str(),
            40,
            40,
            pinbench::core::dataset::DatasetFormat::ShareGpt
        )
    );
    let recs = &report.body.records;
    assert_eq!(recs.len(), 48);
    let truth = with_truth(server.port, &report);
    for r in recs {
        let i = r.index as usize;
        let (p, o) = expected[i % 40];
        assert_eq!(
            (r.prompt_tokens_requested, r.output_tokens_requested),
            (p, o),
            "request {i}: row {} of the order",
            i % 40
        );
        let usage = r.usage.expect("usage");
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (u64::from(p), u64::from(o)),
            "request {i}: sent as asked"
        );
        assert_eq!(truth[i].1, truth[i].3, "request {i}: the server's prompt");
    }
    let distinct: std::collections::BTreeSet<_> = expected.iter().collect();
    eprintln!(
        "dataset: 48 requests over the 40 rows of {} ({} distinct length pairs, prompts {}–{} tokens)",
        pin.name,
        distinct.len(),
        expected.iter().map(|e| e.0).min().unwrap_or(0),
        expected.iter().map(|e| e.0).max().unwrap_or(0)
    );
    assert!(distinct.len() > 5, "the rows' lengths differ");

    // The dataset's own prompts (`dataset_text`): each is the length the server counted.
    let tmp = Tmp::new("dataset-text");
    let report = run(
        &tmp,
        &dataset_pins(&base, "dataset_text", 4, "40"),
        &["--dataset", file],
    );
    assert_eq!(
        report.body.config.prompt_len.value,
        pinbench::core::pins::LengthDist::DatasetText {}
    );
    for r in &report.body.records {
        let (p, o) = expected[r.index as usize % 40];
        let usage = r.usage.expect("usage");
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (u64::from(p), u64::from(o)),
            "request {}: the row's own prompt, as counted",
            r.index
        );
    }

    // A CSV of lengths: its own, in its fixed order.
    let tmp = Tmp::new("dataset-csv");
    let csv = tmp.path("lengths.csv");
    std::fs::write(&csv, "input_tokens,output_tokens\n40,9\n300,3\n77,21\n").expect("write");
    let d = pinbench::core::dataset::parse(&std::fs::read(&csv).expect("csv")).expect("reads");
    let order = d.known_lengths().expect("lengths").rows;
    let report = run(
        &tmp,
        &dataset_pins(&base, "dataset", 2, "7"),
        &["--dataset", &csv],
    );
    for r in &report.body.records {
        let i = r.index as usize;
        assert_eq!(
            (r.prompt_tokens_requested, r.output_tokens_requested),
            order[i % 3],
            "request {i}"
        );
        let usage = r.usage.expect("usage");
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (u64::from(order[i % 3].0), u64::from(order[i % 3].1))
        );
    }
}
