//! The readers of documents that carry records — a report, a checkpoint, a checkpoint's
//! part (`core::share::read`, through JSON trees, one record at a time) — accept and refuse
//! exactly what serde's derived readers do, and read the same values. The oracles are
//! structs with the same fields deriving `Deserialize` over the same member types (a
//! record, a client verdict … keep their derived readers for this). The corpus: the
//! fixture report, one with every optional member and every outcome, and a checkpoint,
//! each mutated at every value — the member removed, an unknown member added, the value
//! replaced by every JSON type, a number out of range, another `kind`. The configuration
//! and the card's body have readers of their own, checked in `config_reader.rs`; their
//! insides are not mutated here.

use pinbench::core::card::{Card, CardBody};
use pinbench::core::merge::MergeInfo;
use pinbench::core::metrics::{ClientEnv, ClientVerdict, Slo};
use pinbench::core::pins::RunConfig;
use pinbench::core::record::RequestRecord;
use pinbench::core::report::{
    Checkpoint, ProbeSnapshot, Report, ReportBody, SignatureBlock, StoredSummary, Tool,
};
use serde::Deserialize;
use serde_json::{json, Value};

mod common;

/// The derived reader of a report.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedReport {
    schema: String,
    body: DerivedBody,
    #[serde(default)]
    card: Option<DerivedCard>,
    #[serde(default)]
    signature: Option<SignatureBlock>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedCard {
    schema: String,
    body: CardBody,
    #[serde(default)]
    signature: Option<SignatureBlock>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedBody {
    tool: Tool,
    created: String,
    config: RunConfig,
    slo: Option<Slo>,
    probes: Vec<ProbeSnapshot>,
    client: ClientVerdict,
    records: Vec<RequestRecord>,
    summary: StoredSummary,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    merged: Option<MergeInfo>,
}

impl From<DerivedReport> for Report {
    fn from(d: DerivedReport) -> Self {
        let b = d.body;
        Report {
            schema: d.schema,
            body: ReportBody {
                tool: b.tool,
                created: b.created,
                config: b.config,
                slo: b.slo,
                probes: b.probes,
                client: b.client,
                records: b.records,
                summary: b.summary,
                notes: b.notes,
                merged: b.merged,
            },
            card: d.card.map(|c| Card {
                schema: c.schema,
                body: c.body,
                signature: c.signature,
            }),
            signature: d.signature,
        }
    }
}

/// The derived reader of a checkpoint.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedCheckpoint {
    created: String,
    config: RunConfig,
    env: ClientEnv,
    planned: Option<u32>,
    records: Vec<RequestRecord>,
    #[serde(default)]
    dropped: u32,
}

impl From<DerivedCheckpoint> for Checkpoint {
    fn from(d: DerivedCheckpoint) -> Self {
        Checkpoint {
            created: d.created,
            config: d.config,
            env: d.env,
            planned: d.planned,
            records: d.records,
            dropped: d.dropped,
        }
    }
}

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/report_signed.json")).expect("fixture")
}

/// Records with every optional member, every outcome and both forms of a unit variant.
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
            json!({"prompt_n": 16, "prompt_us": 900, "predicted_n": 4, "predicted_us": 20_000}),
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
    json!([
        full,
        base(
            1,
            json!({"kind": "http", "status": 429, "message": "slow down"}),
            json!("unverified_no_usage")
        ),
        base(
            2,
            json!({"kind": "network", "message": "reset"}),
            json!({"estimated_coalesced": null})
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
    let records = small["body"]["records"].as_array_mut().expect("records");
    records.truncate(2);
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

/// Whether a report path is mutated: not inside the configuration, the stored summary
/// (kept as text) or the card's body, which have tests of their own.
fn mutated_in_report(p: &[String]) -> bool {
    let under = |a: &str, b: &str| p.len() > 2 && p[0] == a && p[1] == b;
    !(under("body", "config") || under("body", "summary") || under("card", "body"))
}

/// The one difference from serde's derived readers: they also read a struct from an array
/// of its fields in order (`"usage": [16, 4]`), a form nothing writes; the tree readers
/// refuse it, saying so.
fn positional(e: &str) -> bool {
    e.contains("invalid value: a sequence, expected an object")
}

const OUTCOMES: [&str; 9] = [
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

#[test]
fn the_report_reader_accepts_and_refuses_what_serde_derive_does() {
    let docs = common::mutations(valid_reports(), &OUTCOMES, mutated_in_report);
    assert!(docs.len() > 5_000, "corpus of {}", docs.len());
    let (mut accepted, mut refused, mut positional_n) = (0, 0, 0);
    for doc in &docs {
        let text = doc.to_string();
        let ours = serde_json::from_str::<Report>(&text);
        let derived = serde_json::from_str::<DerivedReport>(&text).map(Report::from);
        match (&ours, &derived) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{text}");
                accepted += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            (Err(e), Ok(_)) if positional(&e.to_string()) => positional_n += 1,
            _ => panic!(
                "the readers disagree on {text}:\n ours: {:?}\n derived: {:?}",
                ours.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                derived.as_ref().map(|_| ()).map_err(|e| e.to_string())
            ),
        }
    }
    eprintln!(
        "{} reports: {accepted} accepted, {refused} refused, {positional_n} in serde's positional form",
        docs.len()
    );
    assert!(
        accepted >= 500 && refused >= 5_000 && positional_n >= 1,
        "{accepted} accepted, {refused} refused, {positional_n} positional"
    );
}

#[test]
fn the_checkpoint_readers_accept_and_refuse_what_serde_derive_does() {
    let full = valid_reports().remove(1);
    let b = &full["body"];
    let checkpoint = json!({
        "created": b["created"], "config": b["config"], "env": b["client"]["env"],
        "planned": 40, "records": b["records"], "dropped": 3
    });
    let under_config = |p: &[String]| !(p.len() > 1 && p[0] == "config");
    let docs = common::mutations(vec![checkpoint], &OUTCOMES, under_config);
    let (mut accepted, mut refused) = (0, 0);
    for doc in &docs {
        let text = doc.to_string();
        let ours = serde_json::from_str::<Checkpoint>(&text).map_err(|e| e.to_string());
        let derived = serde_json::from_str::<DerivedCheckpoint>(&text)
            .map(Checkpoint::from)
            .map_err(|e| e.to_string());
        match (&ours, &derived) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{text}");
                accepted += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            (Err(e), Ok(_)) if positional(e) => {}
            _ => panic!("the readers disagree on {text}:\n{ours:?}\n{derived:?}"),
        }
        // A checkpoint's part: a bare array of records.
        let part = doc["records"].to_string();
        let ours = pinbench::core::share::read::records_json(&part);
        let derived = serde_json::from_str::<Vec<RequestRecord>>(&part);
        match (&ours, &derived) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{part}"),
            (Err(_), Err(_)) => {}
            (Err(e), Ok(_)) if positional(e) => {}
            _ => panic!("the part readers disagree on {part}: {ours:?} vs {derived:?}"),
        }
    }
    eprintln!(
        "{} checkpoints: {accepted} accepted, {refused} refused",
        docs.len()
    );
    assert!(
        accepted >= 200 && refused >= 2_000,
        "{accepted} accepted, {refused} refused"
    );
}

/// The frozen report of an earlier release (compressed histograms, its own card) reads
/// the same through both readers.
#[test]
fn earlier_reports_read_the_same() {
    for text in [
        include_str!("fixtures/report_frozen_2026-12-01.json"),
        include_str!("fixtures/report_card_v1.json"),
    ] {
        let ours: Report = serde_json::from_str(text).expect("reads");
        let derived: DerivedReport = serde_json::from_str(text).expect("derived reads");
        assert_eq!(ours, Report::from(derived));
    }
}

#[test]
fn a_refusal_names_the_value_and_what_is_wrong() {
    let full = valid_reports().remove(1);
    let cases: [(&[&str], Option<Value>, &str); 5] = [
        (
            &["body", "records", "1", "outcome", "kind"],
            Some(json!("nope")),
            "records: [1]: outcome: unknown variant `nope`, expected one of `ok`, `http`",
        ),
        (
            &["body", "records", "0", "wire", "request_start_us"],
            Some(json!(-1)),
            "records: [0]: wire: request_start_us: invalid value: number `-1`, expected u64",
        ),
        (
            &["body", "records", "4", "status"],
            Some(json!(65_536)),
            "records: [4]: status: invalid value: number `65536`, expected u16",
        ),
        (&["body", "client"], None, "body: missing field `client`"),
        (
            &["body", "merged", "common_us"],
            Some(json!([1])),
            "body: merged: common_us: invalid length 1, expected a tuple of size 2",
        ),
    ];
    for (path, value, says) in cases {
        let mut v = full.clone();
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        match value {
            Some(x) => *common::at_mut(&mut v, &path) = x,
            None => {
                let (last, parent) = path.split_last().expect("path");
                common::at_mut(&mut v, parent)
                    .as_object_mut()
                    .expect("object")
                    .remove(last);
            }
        }
        let e = serde_json::from_str::<Report>(&v.to_string())
            .expect_err(says)
            .to_string();
        assert!(e.starts_with(says), "{e}\n  wanted: {says}");
    }
}

/// A prompt calibration (in the run worker's request) reads as serde's derived reader
/// reads it.
#[test]
fn a_calibration_reads_as_serde_reads_it() {
    use pinbench::core::prompt::Calibration;
    let bases = vec![
        json!({"intercept_milli": -1500, "tokens_per_word_milli": 1333, "verified": [[128, 96], [512, 384]]}),
        json!({"intercept_milli": 0, "tokens_per_word_milli": 1000}),
    ];
    let docs = common::mutations(bases, &[], |_| true);
    let (mut accepted, mut refused) = (0, 0);
    for doc in &docs {
        let ours = pinbench::core::prompt::read_calibration(doc);
        let derived = serde_json::from_value::<Calibration>(doc.clone());
        match (&ours, &derived) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{doc}");
                accepted += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            (Err(e), Ok(_)) if positional(e) => {}
            _ => panic!("the readers disagree on {doc}: {ours:?} vs {derived:?}"),
        }
    }
    assert!(
        accepted >= 10 && refused >= 100,
        "{accepted} accepted, {refused} refused"
    );
}

/// The trusted keys this browser stores read as serde's derived reader reads them
/// (anything unreadable is an empty list).
#[test]
fn trusted_keys_read_as_serde_reads_them() {
    use pinbench::core::viewer::TrustedKeys;
    let bases = vec![json!({"keys": [
        {"name": "ci", "public_key": "/RckOFqgx1tk+3jNYC+h2ZH96/drE8WO1wLqyDXp9hg=", "key_id": "ed25519:dbc2"},
        {"name": "laptop", "public_key": "AAAA", "key_id": "ed25519:0000"}
    ]})];
    let docs = common::mutations(bases, &[], |_| true);
    let (mut accepted, mut refused) = (0, 0);
    for doc in &docs {
        let text = doc.to_string();
        let ours = TrustedKeys::from_json(&text);
        let derived = serde_json::from_str::<TrustedKeys>(&text);
        match &derived {
            Ok(d) => {
                assert_eq!(&ours, d, "{text}");
                accepted += 1;
            }
            Err(_) => {
                assert_eq!(ours, TrustedKeys::default(), "{text}");
                refused += 1;
            }
        }
    }
    assert!(
        accepted >= 10 && refused >= 50,
        "{accepted} accepted, {refused} refused"
    );
}
