//! Imports of real result files of other tools (`tests/fixtures/imports/real/`, produced
//! by `scripts/capture_tool_fixtures.sh` running each tool against the reference server,
//! with the server's ground truth beside each): every pin the file states is read, the
//! per-request data becomes records, and pinbench's recomputed figures agree with the
//! tool's own where the definitions match — and with the server's truth.

use std::path::Path;

use pinbench::core::import::{ChunkTimes, Imported};
use pinbench::core::view::PinStatus;
use pinbench::core::viewer::{open, Opened, TrustedKeys};
use serde_json::Value;

fn fixture(dir: &str, file: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/imports/real")
        .join(dir)
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn import(dir: &str, file: &str) -> Imported {
    match open(file, &fixture(dir, file), &TrustedKeys::default()) {
        Ok(Opened::Imported(i)) => *i,
        other => panic!("{dir}/{file}: expected an import, got {other:?}"),
    }
}

/// The server's truth: (prompt tokens, completion tokens, token events) per request.
fn truth(dir: &str) -> Vec<(u64, u64, usize)> {
    let v: Value = serde_json::from_str(&fixture(dir, "truth.json")).expect("truth JSON");
    let list = v.as_array().expect("truth is a list");
    list.iter()
        .map(|r| {
            let chunks = r["chunks"].as_array().expect("chunks");
            let completion: u64 = chunks.iter().map(|c| c[1].as_u64().unwrap_or(0)).sum();
            (
                r["prompt_tokens"].as_u64().expect("prompt_tokens"),
                completion,
                chunks.len(),
            )
        })
        .collect()
}

fn pin<'a>(i: &'a Imported, key: &str) -> (&'a str, PinStatus) {
    let p = i.subject.pin(key).unwrap_or_else(|| panic!("no pin {key}"));
    (p.value.as_str(), p.status)
}

fn side(i: &Imported, key: &str) -> (Option<f64>, Option<f64>, bool) {
    let r = i.requests.as_ref().expect("per-request data");
    let s = r
        .side_by_side
        .iter()
        .find(|s| s.key == key)
        .unwrap_or_else(|| panic!("no side-by-side {key}"));
    (s.tool, s.pinbench, s.same_definition)
}

/// Where definitions match, the values agree to within a microsecond per request's
/// rounding (pinbench keeps integer µs; the tools keep floats).
fn assert_agree(i: &Imported, key: &str) {
    let (tool, pb, same) = side(i, key);
    assert!(same, "{key} is not a same-definition figure");
    let (tool, pb) = (tool.expect("tool value"), pb.expect("pinbench value"));
    assert!(
        (tool - pb).abs() <= 0.002,
        "{key}: tool {tool} vs pinbench {pb}"
    );
}

#[test]
fn vllm_bench_serve_0_33_detailed_result() {
    let dir = "vllm-bench-serve-0.33.0";
    let i = import(dir, "vllm_bench_serve.json");
    assert_eq!(i.subject.tool, "vLLM bench serve");
    assert_eq!(pin(&i, "model.id"), ("pinbench-tiny", PinStatus::Pinned));
    assert_eq!(pin(&i, "load"), ("closed loop, c=4", PinStatus::Pinned));
    assert_eq!(pin(&i, "prompt_len").1, PinStatus::Pinned);
    assert!(
        pin(&i, "output_len").0.starts_with("32 "),
        "{:?}",
        pin(&i, "output_len")
    );
    assert_eq!(pin(&i, "window").1, PinStatus::Pinned);
    let r = i.requests.as_ref().expect("detailed file has requests");
    assert_eq!(r.chunk_times, ChunkTimes::Every);
    assert_eq!(r.records.len(), 24);
    assert_eq!(r.summary.requests.measured_ok, 24);
    // Every request: 32 token chunks (the 33rd, finish-only chunk vLLM timed is not one),
    // as the server wrote them.
    let t = truth(dir);
    let measured: Vec<&(u64, u64, usize)> = t.iter().skip(t.len() - 24).collect();
    for rec in &r.records {
        assert_eq!(rec.chunks.len(), 32);
        assert_eq!(rec.output_tokens(), 32);
        assert!(rec.token_counts.is_exact(), "{:?}", rec.token_counts);
    }
    assert!(measured.iter().all(|(_, c, n)| *c == 32 && *n == 32));
    assert_agree(&i, "ttft_mean_ms");
    assert_agree(&i, "e2e_mean_ms");
    // vLLM's TPOT counts the gap to the final finish-only chunk: pinbench's is smaller.
    let (tool, pb, same) = side(&i, "tpot_mean_ms");
    assert!(!same);
    assert!(pb.expect("pb") < tool.expect("tool"), "{pb:?} vs {tool:?}");
}

#[test]
fn aiperf_0_13_summary_export() {
    let dir = "aiperf-0.13.0";
    let i = import(dir, "profile_export_aiperf.json");
    assert_eq!(i.subject.tool, "AIPerf 0.13.0 (schema 1.4)");
    assert_eq!(pin(&i, "model.id"), ("pinbench-tiny", PinStatus::Pinned));
    assert_eq!(pin(&i, "load"), ("closed loop, c=4", PinStatus::Pinned));
    assert_eq!(pin(&i, "prompt_len"), ("128", PinStatus::Pinned));
    assert_eq!(
        pin(&i, "output_len"),
        ("32 (ignore_eos / min_tokens sent)", PinStatus::Pinned)
    );
    assert_eq!(
        pin(&i, "window"),
        (
            "warm-up 2 requests (excluded), measured 24 requests, no cool-down",
            PinStatus::Pinned
        )
    );
    assert!(i.requests.is_none(), "the summary has no per-request data");
}

#[test]
fn aiperf_0_13_records_export() {
    let dir = "aiperf-0.13.0";
    let i = import(dir, "profile_export.jsonl");
    assert_eq!(pin(&i, "prompt_len"), ("128", PinStatus::Pinned));
    assert_eq!(pin(&i, "output_len"), ("32", PinStatus::Pinned));
    assert_eq!(
        pin(&i, "window"),
        (
            "warm-up 2 requests (excluded), measured 24 requests",
            PinStatus::Pinned
        )
    );
    let r = i.requests.as_ref().expect("records");
    assert_eq!(r.records.len(), 26);
    assert_eq!(r.summary.requests.measured, 24);
    assert_eq!(r.summary.requests.warmup.len(), 2);
    for rec in &r.records {
        assert_eq!((rec.chunks.len(), rec.output_tokens()), (32, 32));
    }
    // The summary file's figures are the tool's: pinbench's from the records agree.
    let summary: Value =
        serde_json::from_str(&fixture(dir, "profile_export_aiperf.json")).expect("json");
    let ttft = summary["time_to_first_token"]["avg"].as_f64().expect("avg");
    let e2e = summary["request_latency"]["avg"].as_f64().expect("avg");
    let pb = |k| side(&i, k).1.expect("pinbench");
    assert!(
        (pb("ttft_mean_ms") - ttft).abs() <= 0.002,
        "{} vs {ttft}",
        pb("ttft_mean_ms")
    );
    assert!(
        (pb("e2e_mean_ms") - e2e).abs() <= 0.002,
        "{} vs {e2e}",
        pb("e2e_mean_ms")
    );
    assert!(truth(dir)
        .iter()
        .all(|(p, c, n)| (*p, *c, *n) == (128, 32, 32)));
}

#[test]
fn guidellm_0_8_benchmarks() {
    let dir = "guidellm-0.8.1";
    let i = import(dir, "benchmarks.json");
    assert_eq!(i.subject.tool, "guidellm 0.8.1");
    assert_eq!(pin(&i, "model.id"), ("pinbench-tiny", PinStatus::Pinned));
    assert_eq!(pin(&i, "load"), ("closed loop, c=4", PinStatus::Pinned));
    assert_eq!(pin(&i, "prompt_len"), ("128", PinStatus::Pinned));
    assert_eq!(
        pin(&i, "output_len"),
        ("32 (ignore_eos / min_tokens sent)", PinStatus::Pinned)
    );
    let (window, status) = pin(&i, "window");
    assert_eq!(status, PinStatus::Pinned);
    assert!(
        window.starts_with("warm-up configured 2 requests"),
        "{window}"
    );
    let r = i.requests.as_ref().expect("requests");
    assert_eq!(r.chunk_times, ChunkTimes::FirstAndLast);
    assert_eq!(r.records.len(), 26);
    // Its metrics leave out the two warm-up requests (started before start_time).
    assert_eq!(
        (r.summary.requests.warmup.len(), r.summary.requests.measured),
        (2, 24)
    );
    assert_agree(&i, "ttft_mean_ms");
    // Its request_latency covers all 26 requests (warm-up included), unlike its TTFT:
    // not the same window, and the mean over every record is the tool's.
    let (tool, _, same) = side(&i, "e2e_mean_ms");
    assert!(!same);
    let all: f64 = r
        .records
        .iter()
        .map(|x| (x.t_end_us() - x.t_send_us) as f64 / 1000.0)
        .sum::<f64>()
        / 26.0;
    assert!(
        (tool.expect("tool") - all).abs() <= 0.002,
        "{tool:?} vs {all}"
    );
    // guidellm's inter-token latency is pinbench's TPOT, token-weighted; over its
    // warm-up too (806 = 26 × 31 gaps), so not the same requests either.
    let (tool, _, same) = side(&i, "tpot_mean_ms");
    assert!(!same);
    let all: f64 = r
        .records
        .iter()
        .map(|x| (x.chunks[31].t_us - x.chunks[0].t_us) as f64 / 1000.0)
        .sum::<f64>()
        / (26.0 * 31.0);
    assert!(
        (tool.expect("tool") - all).abs() <= 0.002,
        "{tool:?} vs {all}"
    );
    let t = truth(dir);
    for rec in &r.records {
        assert_eq!(rec.output_tokens(), 32);
    }
    assert!(t.iter().all(|(_, c, _)| *c == 32));
}

/// Files of other releases differ: every field of the real files, removed, nulled, made a
/// string or a huge number, still imports or fails with a message — never a panic.
#[test]
fn mutated_real_files_never_panic() {
    fn paths(v: &Value, prefix: &str, depth: usize, out: &mut Vec<String>) {
        if depth == 0 {
            return;
        }
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    let p = format!("{prefix}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(p.clone());
                    paths(x, &p, depth - 1, out);
                }
            }
            Value::Array(a) => {
                if let Some(x) = a.first() {
                    let p = format!("{prefix}/0");
                    out.push(p.clone());
                    paths(x, &p, depth - 1, out);
                }
            }
            _ => {}
        }
    }
    let mut tried = 0;
    for (dir, file, depth) in [
        ("vllm-bench-serve-0.33.0", "vllm_bench_serve.json", 3),
        ("aiperf-0.13.0", "profile_export_aiperf.json", 4),
        ("guidellm-0.8.1", "benchmarks.json", 6),
    ] {
        let doc: Value = serde_json::from_str(&fixture(dir, file)).expect("json");
        let mut ps = Vec::new();
        paths(&doc, "", depth, &mut ps);
        // guidellm's metric blocks (hundreds of statistics) are read at one level only.
        ps.retain(|p| !p.starts_with("/benchmarks/0/metrics/") || p.matches('/').count() <= 5);
        let kinds = [
            Value::String("x".into()),
            serde_json::json!(1e300),
            serde_json::json!(u64::MAX),
            serde_json::json!(-1),
        ];
        for (i, p) in ps.iter().enumerate() {
            // Every path nulled (a field a release dropped), and one other change each,
            // in turn.
            for replacement in [Value::Null, kinds[i % kinds.len()].clone()] {
                let mut m = doc.clone();
                if let Some(slot) = m.pointer_mut(p) {
                    *slot = replacement.clone();
                }
                let _ = pinbench::core::import::import(file, &m);
                tried += 1;
            }
        }
    }
    // The records export, line by line mutated the same way.
    let text = fixture("aiperf-0.13.0", "profile_export.jsonl");
    let first: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("json");
    let mut ps = Vec::new();
    paths(&first, "", 4, &mut ps);
    for p in &ps {
        for replacement in [Value::Null, serde_json::json!(1e300), serde_json::json!(-1)] {
            let mut m = first.clone();
            if let Some(slot) = m.pointer_mut(p) {
                *slot = replacement.clone();
            }
            let t = format!("{}\n{}", m, text);
            let _ = open("x.jsonl", &t, &TrustedKeys::default());
            tried += 1;
        }
    }
    assert!(tried > 2000, "{tried} mutations tried");
}

/// guidellm run with its own defaults only (no extra body): it adds `ignore_eos` to every
/// synthetic request by itself and records it only in each request's `request_args`. The
/// output length is pinned from there (the file's config says nothing), and the records
/// match the server's truth as for the run with our extras.
#[test]
fn guidellm_0_8_defaults_pin_the_length_from_request_args() {
    let dir = "guidellm-0.8.1-defaults";
    let i = import(dir, "benchmarks.json");
    assert_eq!(
        pin(&i, "output_len"),
        ("32 (ignore_eos / min_tokens sent)", PinStatus::Pinned)
    );
    let p = i.subject.pin("output_len").expect("pin");
    assert!(p.provenance.contains("request_args"), "{}", p.provenance);
    let r = i.requests.as_ref().expect("requests");
    assert_eq!(r.records.len(), 26);
    assert_eq!(truth(dir).len(), 26);
    assert!(truth(dir)
        .iter()
        .all(|&(_, completion, _)| completion == 32));
}
