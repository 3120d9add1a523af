//! Every JSON shape pinbench reads — a configuration, a report, a checkpoint and its parts,
//! a card's body, a prompt calibration, the trusted keys — is read by its type's derived
//! reader through one function, `core::json::from_str`. The corpus: the fixtures and
//! varied valid documents, each mutated at every value (the value replaced by every JSON
//! type and out-of-range numbers, the member removed, an unknown member added, a `kind`
//! replaced) — about 15,000 documents. What is read writes back to what reads the same
//! (nothing is lost or invented on the way in); what is refused is refused with a message
//! that names where (the member the mutation is under), and the exact messages of a few
//! refusals are pinned.

use pinbench::core::card::CardBody;
use pinbench::core::json::from_str;
use pinbench::core::pins::RunConfig;
use pinbench::core::prompt::Calibration;
use pinbench::core::record::RequestRecord;
use pinbench::core::report::{Checkpoint, Report};
use pinbench::core::viewer::TrustedKeys;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use std::fmt::Debug;

/// Every value of the tree with its path.
fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(k.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(i.to_string());
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The value at `path`.
fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Array(a) => &mut a[k.parse::<usize>().expect("index")],
        _ => &mut v[k.as_str()],
    })
}

/// Each of `bases` (with an empty path), and its mutations at every value whose path
/// `mutate` accepts, each with the path it was made at.
fn mutations(
    bases: Vec<Value>,
    kinds: &[&str],
    mutate: fn(&[String]) -> bool,
) -> Vec<(Vec<String>, Value)> {
    let replacements = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(65_536),
        json!(4_294_967_296u64),
        json!(u64::MAX),
        json!("x"),
        json!("undisclosed"),
        json!("value"),
        json!([]),
        json!([1, 2]),
        json!({}),
        json!({"kind": "requests"}),
        json!({"value": 1}),
        json!({"undisclosed": null}),
        json!({"undisclosed": 1}),
        json!({"value": 1, "x": 2}),
    ];
    let mut out = Vec::new();
    for base in bases {
        out.push((Vec::new(), base.clone()));
        let mut all = Vec::new();
        paths(&base, &mut Vec::new(), &mut all);
        for path in all.into_iter().filter(|p| !p.is_empty() && mutate(p)) {
            for r in &replacements {
                let mut v = base.clone();
                *at_mut(&mut v, &path) = r.clone();
                out.push((path.clone(), v));
            }
            let (last, parent) = path.split_last().expect("not the root");
            let mut v = base.clone();
            match at_mut(&mut v, parent) {
                Value::Object(m) => {
                    m.remove(last);
                }
                Value::Array(a) => {
                    a.remove(last.parse::<usize>().expect("index"));
                }
                _ => unreachable!("a parent is an object or an array"),
            }
            out.push((path.clone(), v));
            for unknown in ["zz_unknown", "kind"] {
                let mut v = base.clone();
                if let Value::Object(m) = at_mut(&mut v, parent) {
                    m.entry(unknown).or_insert(json!("requests"));
                }
                out.push((path.clone(), v));
            }
            if last == "kind" {
                for k in kinds {
                    let mut v = base.clone();
                    *at_mut(&mut v, &path) = json!(k);
                    out.push((path.clone(), v));
                }
            }
        }
    }
    out
}

const KINDS: [&str; 22] = [
    "fixed",
    "uniform",
    "normal_clipped",
    "closed",
    "open",
    "poisson",
    "gamma",
    "requests",
    "duration",
    "tokens",
    "declared",
    "probed",
    "measured",
    "ok",
    "http",
    "network",
    "stream_error",
    "stalled",
    "aborted",
    "truncated",
    "not_streaming",
    "nope",
];

/// Reads every document as a `T`: what is read writes back to JSON that reads as the same
/// value; what is refused names the top-level member the mutation is under. Returns
/// (accepted, refused).
fn read_all<T: DeserializeOwned + Serialize + PartialEq + Debug>(
    docs: &[(Vec<String>, Value)],
) -> (usize, usize) {
    let (mut accepted, mut refused) = (0, 0);
    for (path, doc) in docs {
        let text = doc.to_string();
        match from_str::<T>(&text) {
            Ok(v) => {
                let again = serde_json::to_string(&v).expect("writes");
                let back = from_str::<T>(&again).unwrap_or_else(|e| panic!("{again}: {e}"));
                assert_eq!(back, v, "{text}");
                accepted += 1;
            }
            Err(e) => {
                assert!(!e.is_empty(), "{text}");
                if let Some(first) = path.first() {
                    assert!(
                        e.contains(first.as_str()),
                        "a refusal under `{}` does not say where: {e}",
                        path.join(".")
                    );
                }
                refused += 1;
            }
        }
    }
    (accepted, refused)
}

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/report_signed.json")).expect("fixture")
}

/// A fixture report's configuration, and a variant that reaches every type and variant.
fn valid_configs() -> Vec<Value> {
    let base = fixture()["body"]["config"].clone();
    let mut v = base.clone();
    v["endpoint"]["dialect"] = json!("chat");
    v["prompt_len"]["value"] =
        json!({"kind": "normal_clipped", "mean": 500, "std": 100, "min": 10, "max": 900});
    v["output_len"]["value"] = json!({"kind": "uniform", "min": 1, "max": 64});
    v["load"]["value"]["steps"] = json!([
        {"kind": "closed", "concurrency": 4},
        {"kind": "open", "rate_milli_rps": 2500, "arrival": {"kind": "gamma", "shape_milli": 700}, "in_flight_cap": 64},
        {"kind": "open", "rate_milli_rps": 1000, "arrival": {"kind": "poisson"}, "in_flight_cap": 8}
    ]);
    v["kv"]["capacity"]["value"] =
        json!({"value": {"kind": "gpu_memory_utilization", "milli": 900}});
    v["kv"]["max_num_seqs"]["value"] = json!("undisclosed");
    v["model"]["engine"] = json!({"value": "undisclosed", "provenance": {"kind": "probed", "url": "http://h/v1/models", "field": "data[0].owned_by"}});
    v["model"]["params"]["provenance"] = json!({"kind": "measured", "what": "usage"});
    v["window"]["value"] = json!({"warmup": {"kind": "duration", "ms": 2000}, "measured": {"kind": "requests", "count": 9}, "cooldown": {"kind": "duration", "ms": 0}});
    v["sampling"]["value"] =
        json!({"temperature": 0.7, "extra": {"top_p": 0.9, "seed": 4, "stop": ["\n"]}});
    v["phases"]["value"] = json!("chunked_prefill");
    v["scheduling"]["value"] = json!("static");
    v["prompt_exactness"]["value"] = json!("usage_calibrated");
    v["output_enforcement"]["value"] = json!("both");
    v["cache"]["value"] = json!({"nonce_prefix": false});
    vec![base, v]
}

/// Records with every optional member and every outcome.
fn varied_records(chunks: &Value) -> Value {
    let base = |i: u32, outcome: Value, counts: Value| {
        json!({
            "index": i, "step": 0, "prompt_tokens_requested": 16,
            "output_tokens_requested": 4, "t_send_us": 1000 * i, "chunks": chunks,
            "token_counts": counts, "deltas": 4, "outcome": outcome
        })
    };
    let mut full = base(0, json!({"kind": "ok"}), json!("exact_continuous_usage"));
    let m = full.as_object_mut().expect("object");
    for (k, v) in [
        ("t_intended_us", json!(900)),
        ("held_by_cap", json!(true)),
        ("t_headers_us", json!(1800)),
        ("t_done_us", json!(31_000)),
        ("status", json!(200)),
        (
            "usage",
            json!({"prompt_tokens": 16, "completion_tokens": 4, "cached_tokens": 8}),
        ),
        ("finish_reason", json!("length")),
        ("response_id", json!("cmpl-1")),
        (
            "server_timings",
            json!({"prompt_n": 16, "prompt_us": 900, "predicted_n": 4, "predicted_us": 20_000, "cache_n": 8}),
        ),
        ("protocol", json!("h2")),
        (
            "wire",
            json!({"connect_start_us": 1000, "request_start_us": 1100, "response_start_us": 1700, "response_end_us": 31_000}),
        ),
        (
            "anomalies",
            json!({"invalid_json": 1, "unexpected_shape": 2, "invalid_utf8_lines": 3, "line_too_long": 4, "missing_done": true, "events_after_done": 5, "truncated_event": true, "bad_optional_fields": 6}),
        ),
    ] {
        m.insert(k.into(), v);
    }
    let mut partial = base(8, json!({"kind": "ok"}), json!("exact_finish_token"));
    partial["anomalies"] = json!({"missing_done": true});
    partial["usage"] = json!({"prompt_tokens": 16, "completion_tokens": 4});
    let mut throttled = base(
        1,
        json!({"kind": "http", "status": 429, "message": "slow down"}),
        json!("unverified_no_usage"),
    );
    throttled["throttle"] = json!({"signal": "http_429", "retry_after_ms": 2000, "headers": {"retry-after": "2", "x-ratelimit-remaining-requests": "0"}});
    json!([
        full,
        throttled,
        base(
            2,
            json!({"kind": "network", "message": "reset"}),
            json!("estimated_coalesced")
        ),
        base(
            3,
            json!({"kind": "stream_error", "message": "oops"}),
            json!("exact_deltas_match_usage")
        ),
        base(
            4,
            json!({"kind": "stalled", "timeout_us": 10_000_000}),
            json!("deltas_exceed_usage")
        ),
        base(5, json!({"kind": "aborted"}), json!("unverified_no_usage")),
        base(
            6,
            json!({"kind": "truncated"}),
            json!("unverified_no_usage")
        ),
        base(
            7,
            json!({"kind": "not_streaming"}),
            json!("unverified_no_usage")
        ),
        partial,
    ])
}

/// The fixture (two records), and a report with every optional member filled.
fn valid_reports() -> Vec<Value> {
    let mut small = fixture();
    small["body"]["records"]
        .as_array_mut()
        .expect("records")
        .truncate(2);
    let mut full = fixture();
    let chunks = full["body"]["records"][0]["chunks"].clone();
    let b = &mut full["body"];
    b["records"] = varied_records(&chunks);
    b["slo"] = json!({"ttft_us": 20_000, "tpot_us": 50_000, "e2e_us": 900_000});
    b["probes"] = json!([{"url": "http://h/v1/models", "status": 200, "body": "{\"id\":\"m\"}"}]);
    b["client"]["env"]["host"] = json!("worker");
    b["client"]["env"]["clock_epoch_us"] = json!(1_764_000_000_000_000u64);
    b["client"]["protocols"] = json!({"h2": 7, "http/1.1": 2});
    b["notes"] = json!(["interrupted"]);
    b["merged"] = json!({
        "sources": [{"title": "a.json", "digest": "sha256:x", "key_id": "ed25519:1", "created": "2026-01-01T00:00:00Z", "records": 9, "measured_us": [10, 90]}],
        "common_us": [20, 80], "common_output_tokens": 400, "common_aggregate_output_milli": 6_666_667
    });
    full.as_object_mut().expect("object").remove("card");
    vec![small, full]
}

/// Report paths mutated here: not inside the configuration or the card's body (read by
/// their own tests below), nor the stored summary (kept as the file's text, never read).
fn mutated_in_report(p: &[String]) -> bool {
    let under = |a: &str, b: &str| p.len() > 2 && p[0] == a && p[1] == b;
    !(under("body", "config") || under("body", "summary") || under("card", "body"))
}

#[test]
fn configurations_are_read_or_refused_saying_where() {
    let docs = mutations(valid_configs(), &KINDS, |_| true);
    let (accepted, refused) = read_all::<RunConfig>(&docs);
    eprintln!(
        "{} configurations: {accepted} accepted, {refused} refused",
        docs.len()
    );
    assert!(
        docs.len() > 5_000 && accepted >= 20 && refused >= 4_000,
        "{accepted} / {refused}"
    );
}

#[test]
fn reports_are_read_or_refused_saying_where() {
    let docs = mutations(valid_reports(), &KINDS, mutated_in_report);
    let (accepted, refused) = read_all::<Report>(&docs);
    eprintln!(
        "{} reports: {accepted} accepted, {refused} refused",
        docs.len()
    );
    assert!(
        docs.len() > 5_000 && accepted >= 300 && refused >= 4_000,
        "{accepted} / {refused}"
    );
}

#[test]
fn checkpoints_and_their_parts_are_read_or_refused_saying_where() {
    let full = valid_reports().remove(1);
    let b = &full["body"];
    let checkpoint = json!({
        "created": b["created"], "config": b["config"], "env": b["client"]["env"],
        "planned": 40, "records": b["records"], "dropped": 3
    });
    let docs = mutations(vec![checkpoint], &KINDS, |p| p[0] != "config");
    let (accepted, refused) = read_all::<Checkpoint>(&docs);
    assert!(
        accepted >= 100 && refused >= 1_500,
        "{accepted} / {refused}"
    );
    // A stored part of a checkpoint: a bare array of records.
    let parts = mutations(vec![b["records"].clone()], &KINDS, |_| true);
    let (accepted, refused) = read_all::<Vec<RequestRecord>>(&parts);
    assert!(
        accepted >= 100 && refused >= 1_500,
        "{accepted} / {refused}"
    );
}

#[test]
fn card_bodies_are_read_typed_then_legacy_or_refused() {
    let doc = |text: &str| serde_json::from_str::<Value>(text).expect("fixture");
    let typed = doc(include_str!("fixtures/report_signed.json"))["card"]["body"].clone();
    let legacy = doc(include_str!("fixtures/report_card_v1.json"))["card"]["body"].clone();
    let mut other = typed.clone();
    other["step"]["windows"] = json!({"measured": null});
    other["step"]["ttft_us"] = json!(null);
    other["step"]["load"] = json!({"kind": "open", "rate_milli_rps": 1500, "arrival": {"kind": "poisson"}, "in_flight_cap": 4});
    other["notes"] = json!(["a note", ""]);
    let docs = mutations(vec![typed, legacy, other], &KINDS, |_| true);
    let (mut typed_n, mut legacy_n) = (0, 0);
    for (_, d) in &docs {
        match from_str::<CardBody>(&d.to_string()) {
            Ok(CardBody::Typed(_)) => typed_n += 1,
            Ok(CardBody::Legacy(_)) => legacy_n += 1,
            Err(e) => assert!(e.starts_with("not a card body: "), "{e}"),
        }
    }
    let (accepted, refused) = read_all::<CardBody>(&docs);
    assert!(
        typed_n >= 20 && legacy_n >= 10 && accepted == typed_n + legacy_n && refused >= 1_000,
        "{typed_n} typed, {legacy_n} legacy, {refused} refused"
    );
}

#[test]
fn calibrations_and_trusted_keys_are_read_or_refused() {
    let calibrations = vec![
        json!({"intercept_milli": -1500, "tokens_per_word_milli": 1333, "verified": [[128, 96], [512, 384]]}),
        json!({"intercept_milli": 0, "tokens_per_word_milli": 1000}),
    ];
    let (accepted, refused) = read_all::<Calibration>(&mutations(calibrations, &[], |_| true));
    assert!(accepted >= 10 && refused >= 100, "{accepted} / {refused}");
    let keys = vec![json!({"keys": [
        {"name": "ci", "public_key": "/RckOFqgx1tk+3jNYC+h2ZH96/drE8WO1wLqyDXp9hg=", "key_id": "ed25519:dbc2"},
        {"name": "laptop", "public_key": "AAAA", "key_id": "ed25519:0000"}
    ]})];
    let docs = mutations(keys, &[], |_| true);
    let (accepted, refused) = read_all::<TrustedKeys>(&docs);
    assert!(accepted >= 10 && refused >= 50, "{accepted} / {refused}");
    // The store reads anything unreadable as no trusted keys.
    for (_, d) in &docs {
        let text = d.to_string();
        assert_eq!(
            TrustedKeys::from_json(&text),
            from_str::<TrustedKeys>(&text).unwrap_or_default()
        );
    }
}

/// Reports of earlier releases (compressed histograms, the first card form) still read,
/// and write back to what reads the same.
#[test]
fn earlier_reports_read() {
    let docs: Vec<(Vec<String>, Value)> = [
        include_str!("fixtures/report_frozen_2026-12-01.json"),
        include_str!("fixtures/report_card_v1.json"),
        include_str!("fixtures/report_signed.json"),
    ]
    .iter()
    .map(|t| (Vec::new(), serde_json::from_str(t).expect("json")))
    .collect();
    assert_eq!(read_all::<Report>(&docs), (3, 0));
}

/// The exact words of a few refusals: the path of the value, then what is wrong with it.
/// Inside a pin the path stops at the pin (`kv.capacity: value: …`): a pin's value is read
/// by its own reader (`Pinned`'s one reader of the wrapper keeps each wasm smaller), whose
/// refusal says what is wrong and where in the value.
#[test]
fn a_refusal_names_the_value_and_what_is_wrong() {
    let config = valid_configs().remove(1);
    let report = valid_reports().remove(1);
    let cases: [(&Value, &[&str], Option<Value>, &str); 10] = [
        (&config, &["kv", "capacity", "value"], Some(json!({"value": {"kind": "litres"}})), "kv.capacity: value: unknown kind `litres` of a KV capacity, expected one of `tokens`, `gpu_memory_utilization`"),
        (&config, &["load", "value", "steps", "1", "arrival"], Some(json!({"kind": "gamma"})), "load: value: an arrival of kind `gamma` has exactly the members `shape_milli`"),
        (&config, &["window", "value", "measured"], Some(json!({"kind": "requests", "count": 3, "ms": 4})), "window: value: a window span of kind `requests` has exactly the members `count`"),
        (&config, &["prompt_len", "value"], Some(json!({"kind": "fixed", "tokens": -5})), "prompt_len: value: invalid value: integer `-5`, expected u32"),
        (&config, &["scheduling", "value"], Some(json!("eager"))
, "scheduling: value: unknown variant `eager`, expected one of `continuous`, `static`, `undisclosed`"),
        (&config, &["endpoint"], Some(json!({"base_url": "http://h"})), "endpoint: missing field `dialect`"),
        (&report, &["body", "records", "1", "outcome", "kind"], Some(json!("nope")), "body.records[1].outcome: unknown kind `nope` of an outcome, expected one of `ok`, `http`"),
        (&report, &["body", "records", "0", "wire", "request_start_us"], Some(json!(-1)), "body.records[0].wire.request_start_us: invalid value: integer `-1`, expected u64"),
        (&report, &["body", "records", "4", "status"], Some(json!(65_536)), "body.records[4].status: invalid value: integer `65536`, expected u16"),
        (&report, &["body", "client"], None, "body: missing field `client`"),
    ];
    for (base, path, value, says) in cases {
        let mut v = base.clone();
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        match value {
            Some(x) => *at_mut(&mut v, &path) = x,
            None => {
                let (last, parent) = path.split_last().expect("path");
                at_mut(&mut v, parent)
                    .as_object_mut()
                    .expect("object")
                    .remove(last);
            }
        }
        let text = v.to_string();
        let e = if base == &config {
            from_str::<RunConfig>(&text).map(|_| ())
        } else {
            from_str::<Report>(&text).map(|_| ())
        }
        .expect_err(says);
        assert!(e.starts_with(says), "{e}\n  wanted: {says}");
    }
    let e = from_str::<Report>(r#"{"schema":"pinbench.report/v1","schema":"x"}"#).expect_err("dup");
    assert!(e.contains("duplicate field `schema`"), "{e}");
}
