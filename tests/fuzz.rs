//! Fuzz targets, run on stable by a property-based driver (cargo-fuzz needs a nightly
//! toolchain, which this project does not use): each target gets arbitrary bytes and
//! mutations of its seed corpus (the committed fixtures and transcripts), and must
//! return a value or an error — never panic, never allocate without bound.
//!
//! The test run executes each target `PINBENCH_FUZZ_CASES` times (default 2,000); the
//! long run in the README sets it to 1,000,000 in release mode.

use std::path::Path;

use pinbench::core::dialect::Dialect;
use pinbench::core::record::{RequestTimeline, StreamEnd};
use pinbench::core::viewer::{open, TrustedKeys};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("PINBENCH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// The seed corpus of a target: every file under `dir` with one of `exts`.
fn corpus(dir: &str, exts: &[&str]) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if exts.iter().any(|x| p.to_string_lossy().ends_with(x)) {
                out.extend(std::fs::read(&p).ok());
            }
        }
    }
    assert!(!out.is_empty(), "no seeds in {dir}");
    out
}

/// A seed with a few byte-level mutations (flip, insert, delete, splice a byte run).
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    (
        0..n,
        proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u8>(), 0usize..64), 0..8),
    )
        .prop_map(move |(i, edits)| {
            let mut b = seeds[i].clone();
            for (op, at, byte, len) in edits {
                if b.is_empty() {
                    b.push(byte);
                    continue;
                }
                let at = at % b.len();
                match op % 4 {
                    0 => b[at] ^= byte | 1,
                    1 => b.insert(at, byte),
                    2 => {
                        let end = (at + len).min(b.len());
                        b.drain(at..end);
                    }
                    _ => {
                        let end = (at + len).min(b.len());
                        let run = b[at..end].to_vec();
                        let to = (at + byte as usize) % b.len();
                        b.splice(to..to, run);
                    }
                }
            }
            b
        })
}

/// Arbitrary bytes or a mutated seed.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..4096),
        4 => mutated(seeds),
    ]
}

/// Runs `target` on `cases()` inputs; returns how many it ran.
fn run(name: &str, seeds: Vec<Vec<u8>>, target: impl Fn(&[u8])) -> u32 {
    let n = cases();
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&input(seeds), |b| {
            target(&b);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    println!("fuzz {name}: {n} executions, no crash");
    n
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn fuzz_sse_decoder_and_dialects() {
    run(
        "sse+dialect",
        corpus("tests/fixtures/transcripts", &[".sse"]),
        |b| {
            for dialect in [Dialect::Chat, Dialect::Completions] {
                let mut tl = RequestTimeline::new(0, 0, dialect, 8, 8, 0);
                tl.on_headers(1, 200, Some("text/event-stream"));
                // Split at a point taken from the input itself.
                let cut = b.first().map_or(0, |&x| usize::from(x) % (b.len() + 1));
                tl.on_bytes(2, &b[..cut]);
                tl.on_bytes(3, &b[cut..]);
                let rec = tl.finish(4, StreamEnd::Eof);
                let _ = pinbench::core::metrics::request_metrics(&rec);
            }
        },
    );
}

#[test]
fn fuzz_report_and_viewer_open() {
    run(
        "report::open + viewer::open",
        corpus(
            "tests/fixtures",
            &["report_signed.json", "report_card_v1.json"],
        ),
        |b| {
            let t = text(b);
            let _ = pinbench::core::report::open(&t);
            let _ = open("fuzz.json", &t, &TrustedKeys::default());
        },
    );
}

#[test]
fn fuzz_importers() {
    run(
        "importers",
        corpus("tests/fixtures/imports", &[".json", ".jsonl"]),
        |b| {
            let _ = open("fuzz.json", &text(b), &TrustedKeys::default());
        },
    );
}

#[test]
fn fuzz_histogram_decoder() {
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report_signed.json"
        ))
        .expect("fixture"),
    )
    .expect("json");
    let seeds: Vec<Vec<u8>> = report["body"]["summary"]["steps"][0]["histograms"]
        .as_object()
        .expect("histograms")
        .values()
        .filter_map(|v| v.as_str().map(|s| s.as_bytes().to_vec()))
        .collect();
    run("histogram decode", seeds, |b| {
        if let Ok(h) = pinbench::core::histogram::Hist::decode(&text(b)) {
            let _ = (h.quantile(0.99), h.mean(), h.encode());
        }
        let _ = pinbench::core::chart::cdf_of_histogram(&text(b), 100);
    });
}

#[test]
fn fuzz_card_link() {
    let report = pinbench::core::report::open(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report_signed.json"
        ))
        .expect("fixture"),
    )
    .expect("opens");
    let frag = report
        .report
        .card
        .expect("card")
        .to_fragment()
        .expect("fragment");
    run("card link", vec![frag.into_bytes()], |b| {
        if let Ok(c) = pinbench::core::card::Card::from_fragment(&text(b)) {
            let _ = (c.verify(), c.body.pins(), c.body.headline());
        }
    });
}
