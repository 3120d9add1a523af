//! Shape tests: the six pins visibly matter. Every figure comes from the server's truth
//! records (server clock), never from client wall-clock timing.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{get, post, prompt, Server};
use serde_json::{json, Value};

fn run(port: u16, n_prompt: usize, max_tokens: u32) -> Value {
    let body = json!({"model": "pinbench-tiny", "prompt": prompt(n_prompt), "max_tokens": max_tokens, "stream": true, "ignore_eos": true});
    let r = post(port, "/v1/completions", &body, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("x-request-id").expect("id").to_owned();
    get(port, &format!("/truth/{id}")).json()
}

fn chunk_times(t: &Value) -> Vec<u64> {
    t["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c[0].as_u64().expect("t"))
        .collect()
}

/// The mean gap between consecutive chunks, µs (a stream's decode time per token).
fn mean_gap(times: &[u64]) -> f64 {
    (times[times.len() - 1] - times[0]) as f64 / (times.len() - 1) as f64
}

/// The median gap between consecutive chunks, µs: one stall of a shared machine moves a
/// mean, not a median.
fn median_gap(times: &[u64]) -> f64 {
    let mut gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    gaps[gaps.len() / 2] as f64
}

#[test]
fn tpot_rises_with_context_length() {
    let s = Server::start(&[]);
    // One measurement each, no retry: the median gap is robust to a stall of the machine
    // (the llama-server build of CI runs at the lowest priority meanwhile).
    let short = median_gap(&chunk_times(&run(s.port, 10, 100)));
    let long = median_gap(&chunk_times(&run(s.port, 3000, 100)));
    // tiny: 1.5 ms per step + 1 µs per token of context → ~1.5 ms vs ~4.5 ms.
    assert!(
        long > 2.0 * short,
        "TPOT at 3000-token context {long:.0} µs vs at 10 tokens {short:.0} µs"
    );
    // Inside one request: decode slows as the KV cache fills.
    let t = chunk_times(&run(s.port, 10, 2000));
    let (late, early) = (median_gap(&t[t.len() - 100..]), median_gap(&t[1..101]));
    assert!(
        late > 1.5 * early,
        "late gaps {late:.0} µs vs early {early:.0} µs"
    );
}

/// Per-stream decode tok/s (mean over requests) and aggregate tok/s at concurrency `c`.
/// 500-token prompts make each stream's KV read (0.5 ms a step on `tiny`) dominate the
/// step cost, so the effect of concurrency stands far above scheduling noise.
fn speeds_at(port: u16, c: usize) -> (f64, f64) {
    let handles: Vec<_> = (0..c)
        .map(|_| thread::spawn(move || (0..2).map(|_| run(port, 500, 64)).collect::<Vec<_>>()))
        .collect();
    let truths: Vec<Value> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    let per_stream: f64 = truths
        .iter()
        .map(|t| 1e6 / mean_gap(&chunk_times(t)))
        .sum::<f64>()
        / truths.len() as f64;
    let first = truths
        .iter()
        .map(|t| chunk_times(t)[0])
        .min()
        .expect("some");
    let last = truths
        .iter()
        .map(|t| *chunk_times(t).last().expect("chunk"))
        .max()
        .expect("some");
    let tokens = truths
        .iter()
        .map(|t| t["completion_tokens"].as_u64().expect("n"))
        .sum::<u64>();
    (per_stream, tokens as f64 * 1e6 / (last - first) as f64)
}

#[test]
fn aggregate_rises_and_per_stream_falls_with_concurrency() {
    let s = Server::start(&[]);
    let (p1, a1) = speeds_at(s.port, 1);
    let (p4, a4) = speeds_at(s.port, 4);
    let (p16, a16) = speeds_at(s.port, 16);
    let (_, a32) = speeds_at(s.port, 32);
    eprintln!("per-stream tok/s: c1 {p1:.0}, c4 {p4:.0}, c16 {p16:.0}; aggregate tok/s: c1 {a1:.0}, c4 {a4:.0}, c16 {a16:.0}, c32 {a32:.0}");
    assert!(
        a1 < a4 && a4 < a16,
        "aggregate must rise: {a1:.0} {a4:.0} {a16:.0}"
    );
    assert!(
        p1 > p4 && p4 > p16,
        "per-stream must fall: {p1:.0} {p4:.0} {p16:.0}"
    );
    // Beyond max_num_seqs (16) the extra requests queue: aggregate stops rising.
    assert!(
        a32 < 1.25 * a16,
        "aggregate beyond max_num_seqs: c16 {a16:.0}, c32 {a32:.0}"
    );
}

fn arrival_wait(batching: &str) -> (u64, u64) {
    let s = Server::start(&["--batching", batching]);
    let port = s.port;
    let batch: Vec<_> = (0..4)
        .map(|_| thread::spawn(move || run(port, 8, 100)))
        .collect();
    thread::sleep(Duration::from_millis(40));
    let late = run(port, 8, 10);
    let first: Vec<Value> = batch
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let batch_end = first
        .iter()
        .map(|t| t["finished_us"].as_u64().expect("f"))
        .max()
        .expect("some");
    let wait = late["admitted_us"].as_u64().expect("a") - late["received_us"].as_u64().expect("r");
    (
        wait,
        late["admitted_us"]
            .as_u64()
            .expect("a")
            .saturating_sub(batch_end),
    )
}

#[test]
fn static_batching_makes_mid_batch_arrivals_wait() {
    let (wait_static, _) = arrival_wait("static");
    let (wait_cont, _) = arrival_wait("continuous");
    // The batch of 4 × 100 tokens runs ~150 ms; the arrival 40 ms in waits for its end.
    assert!(
        wait_static > 50_000,
        "static: the arrival waited only {wait_static} µs"
    );
    assert!(
        wait_cont < 10_000,
        "continuous: the arrival waited {wait_cont} µs"
    );
}

#[test]
fn kv_overflow_shows_as_waiting_requests() {
    // 1000 KV tokens; each request reserves 10 + 400: two fit, two wait.
    let s = Server::start(&["--kv-capacity", "1000"]);
    let port = s.port;
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let poller = thread::spawn(move || {
        // (running, waiting) samples from /metrics while the requests run.
        let gauge = |m: &str, name: &str| -> u64 {
            m.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let mut samples = Vec::new();
        while !d.load(Ordering::Relaxed) {
            let m = get(port, "/metrics").text();
            samples.push((
                gauge(&m, "vllm:num_requests_running"),
                gauge(&m, "vllm:num_requests_waiting"),
            ));
            thread::sleep(Duration::from_millis(5));
        }
        samples
    });
    let runs: Vec<_> = (0..4)
        .map(|_| thread::spawn(move || run(port, 10, 400)))
        .collect();
    let truths: Vec<Value> = runs
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    done.store(true, Ordering::Relaxed);
    let samples = poller.join().expect("poller");
    assert!(
        samples.contains(&(2, 2)),
        "never saw 2 running and 2 waiting: {samples:?}"
    );
    assert!(
        samples.iter().all(|&(r, _)| r <= 2),
        "more than 2 ran at once with KV for 2: {samples:?}"
    );
    let mut admitted: Vec<u64> = truths
        .iter()
        .map(|t| t["admitted_us"].as_u64().expect("a"))
        .collect();
    admitted.sort_unstable();
    // The first two decode 400 tokens at ≥ 1.5 ms a step (≥ 600 ms) before any KV is
    // freed, so the third is admitted long after the second.
    let wait = admitted[2] - admitted[1];
    assert!(
        wait > 500_000,
        "the third request was admitted {wait} µs after the second: before any KV was freed"
    );
}
