//! The behaviour probes' decisions against the real reference server: the batching probe
//! in continuous and static mode, the prefix-cache probe with the cache on and off, and
//! the decode-slowdown sweep. A small streaming HTTP/1.1 client times the bytes (this test
//! is the host: it owns the clock) and the core builds each record and decides.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use common::Server;
use pinbench::core::behaviour::{
    self, batching, batching_verdict, cache_verdict_of, prefix_cache, slowdown, slowdown_of,
    BatchingVerdict, CacheVerdict, Timed,
};
use pinbench::core::dialect::Dialect;
use pinbench::core::record::{RequestTimeline, StreamEnd};
use pinbench::core::report::ProbeSnapshot;

const MODEL: &str = "pinbench-tiny";

/// One probe at a time: each decides from timings, and a probe sharing the machine's two
/// cores with another skews the times it reads (the batching probe's static case has a
/// margin of a few ms).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends one streaming completion and times it into a record (HTTP/1.1, chunked body
/// decoded as it arrives).
fn timed(port: u16, clock: Instant, body: &str, prompt: u32, tokens: u32) -> Timed {
    let now = || clock.elapsed().as_micros() as u64;
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    s.set_nodelay(true).expect("nodelay");
    let t0 = now();
    let mut tl = RequestTimeline::new(0, 0, Dialect::Completions, prompt, tokens, t0);
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("sends");
    let mut raw = Vec::new();
    let mut headers_done = false;
    let mut buf = [0u8; 16384];
    // Chunked decoding state: bytes of the current chunk still to read.
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = s.read(&mut buf).expect("reads");
        let t = now();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if !headers_done {
            let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&raw[..end]).into_owned();
            let status: u16 = head
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse().ok())
                .expect("status");
            tl.on_headers(t, status, Some("text/event-stream"));
            pending = raw[end + 4..].to_vec();
            raw.clear();
            headers_done = true;
        } else {
            pending.extend_from_slice(&raw);
            raw.clear();
        }
        // Hand every complete chunk's data to the timeline.
        while let Some(line_end) = pending.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(String::from_utf8_lossy(&pending[..line_end]).trim(), 16)
                    .expect("chunk size");
            if pending.len() < line_end + 2 + size + 2 {
                break;
            }
            let data = pending[line_end + 2..line_end + 2 + size].to_vec();
            pending.drain(..line_end + 2 + size + 2);
            if size > 0 {
                tl.on_bytes(t, &data);
            }
        }
    }
    let rec = tl.finish(now(), StreamEnd::Eof);
    Timed::of(&rec).unwrap_or_else(|| panic!("a timed record: {:?}", rec.outcome))
}

fn batching_probe(port: u16) -> (BatchingVerdict, String) {
    let clock = Instant::now();
    let [a_body, b_body] = behaviour::batching_requests(Dialect::Completions, MODEL, [None, None]);
    let a = std::thread::spawn(move || {
        timed(
            port,
            clock,
            &a_body,
            batching::PROMPT_TOKENS,
            batching::A_TOKENS,
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(u64::from(
        batching::B_DELAY_MS,
    )));
    let b = timed(
        port,
        clock,
        &b_body,
        batching::PROMPT_TOKENS,
        batching::B_TOKENS,
    );
    let a = a.join().expect("A");
    batching_verdict(&a, &b)
}

fn cache_probe(port: u16) -> (CacheVerdict, String) {
    let clock = Instant::now();
    let nonce = |i| pinbench::core::prompt::nonce(i, 42);
    let bodies = behaviour::cache_requests(Dialect::Completions, MODEL, None, [nonce(1), nonce(2)]);
    let mut ttfts = [0u64; 5];
    for (t, b) in ttfts.iter_mut().zip(bodies) {
        *t = timed(
            port,
            clock,
            &b,
            prefix_cache::PROMPT_TOKENS,
            prefix_cache::OUTPUT_TOKENS,
        )
        .ttft_us();
    }
    cache_verdict_of(ttfts)
}

#[test]
fn batching_probe_tells_continuous_from_static() {
    let _alone = alone();
    let cont = Server::start(&["--batching", "continuous"]);
    let (v, why) = batching_probe(cont.port);
    eprintln!("continuous server: {v:?}: {why}");
    assert_eq!(v, BatchingVerdict::Continuous, "{why}");
    let stat = Server::start(&["--batching", "static"]);
    let (v, why) = batching_probe(stat.port);
    eprintln!("static server: {v:?}: {why}");
    assert_eq!(v, BatchingVerdict::Static, "{why}");
    // The evidence is kept as a probe snapshot in the report.
    let snap = ProbeSnapshot::new(
        "measured by pinbench: batching",
        200,
        &serde_json::json!({ "scheduling": "static", "evidence": why }).to_string(),
    );
    assert!(snap.body.contains("A ended at"), "{}", snap.body);
}

#[test]
fn prefix_cache_probe_sees_the_cache_on_and_off() {
    let _alone = alone();
    let on = Server::start(&["--prefix-cache", "on"]);
    let (v, why) = cache_probe(on.port);
    eprintln!("cache on: {v:?}: {why}");
    assert_eq!(v, CacheVerdict::On, "{why}");
    let off = Server::start(&["--prefix-cache", "off"]);
    let (v, why) = cache_probe(off.port);
    eprintln!("cache off: {v:?}: {why}");
    assert_eq!(v, CacheVerdict::Off, "{why}");
}

#[test]
fn decode_slowdown_grows_with_context() {
    let _alone = alone();
    let srv = Server::start(&[]);
    let clock = Instant::now();
    let points: Vec<(u32, u64)> = slowdown::PROMPTS
        .iter()
        .map(|&p| {
            let body = behaviour::request_body(
                Dialect::Completions,
                MODEL,
                p,
                p,
                Some(pinbench::core::prompt::nonce(p, 7)),
                slowdown::OUTPUT_TOKENS,
            );
            let t = timed(srv.port, clock, &body, p, slowdown::OUTPUT_TOKENS);
            (p, t.tpot_us.expect("a TPOT"))
        })
        .collect();
    let (s, text) = slowdown_of(&points).expect("slowdown");
    // The tiny profile reads 200 KB of KV per context token per step on top of 200 MB of
    // weights at 200 GB/s: TPOT grows about 3× from 128 to 3072 tokens.
    eprintln!("{text}");
    assert!(s.ratio > 1.8, "{text}");
}
