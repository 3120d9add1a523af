//! Attack inputs against everything that opens a file someone else made: each test holds
//! the input that used to crash, allocate gigabytes or mislead, and asserts the safe
//! outcome.

use pinbench::core::pins::Pins;
use std::io::Write as _;

use base64::Engine as _;
use pinbench::core::histogram::Hist;
use pinbench::core::viewer::{open, Opened, TrustedKeys, ViewerError};
use serde_json::Value;

fn fixture() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report_signed.json"
    ))
    .expect("fixture")
}

/// A 56-character V2 histogram whose header claims a 2 GiB payload.
fn histogram_bomb() -> String {
    let mut b = Vec::new();
    b.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    b.extend_from_slice(&0x8000_0000u32.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&3u32.to_be_bytes());
    b.extend_from_slice(&1u64.to_be_bytes());
    b.extend_from_slice(&2048u64.to_be_bytes());
    b.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[test]
fn the_histogram_bomb_is_refused_before_any_allocation() {
    let bomb = histogram_bomb();
    assert_eq!(bomb.len(), 56);
    let e = Hist::decode(&bomb).expect_err("refused");
    assert!(e.to_string().contains("payload length exceeds"), "{e}");
    // Other lies in the header: digits, bounds, compressed length.
    for (at, value) in [(12usize, 9u32), (8, 1)] {
        let mut b = base64::engine::general_purpose::STANDARD
            .decode(&bomb)
            .expect("b64");
        b[4..8].copy_from_slice(&0u32.to_be_bytes());
        b[at..at + 4].copy_from_slice(&value.to_be_bytes());
        let t = base64::engine::general_purpose::STANDARD.encode(&b);
        assert!(Hist::decode(&t).is_err());
    }
    let mut compressed = 0x1c84_9314u32.to_be_bytes().to_vec();
    compressed.extend_from_slice(&u32::MAX.to_be_bytes());
    compressed.extend_from_slice(&[0x78, 0x9c, 0x03, 0x00]);
    let t = base64::engine::general_purpose::STANDARD.encode(&compressed);
    assert!(Hist::decode(&t).is_err());
    // In a report: it opens, the recompute says what is wrong, nothing panics.
    let mut doc: Value = serde_json::from_str(&fixture()).expect("json");
    doc["body"]["summary"]["steps"][0]["histograms"]["ttft_us"] = bomb.clone().into();
    match open("bomb.json", &doc.to_string(), &TrustedKeys::default()) {
        Ok(Opened::Report(r)) => {
            let mismatches = r.mismatches().expect("recomputes");
            assert!(
                mismatches.iter().any(|m| m.path.contains("ttft_us")),
                "{mismatches:?}"
            );
            assert!(pinbench::core::chart::cdf_of_histogram(&bomb, 100).is_empty());
        }
        other => panic!("{other:?}"),
    }
}

/// Chunk data in the first (DEFLATE) form that inflates to 64 MiB per record: the
/// report's decode budget stops it with a message.
#[test]
fn the_chunk_bomb_breaches_the_report_budget() {
    let mut z = Vec::new();
    {
        let zeros = vec![0u8; 1 << 20];
        let mut w = DeflateRaw::new(&mut z);
        for _ in 0..64 {
            w.write_all(&zeros).expect("deflate");
        }
        w.finish();
    }
    let bomb = base64::engine::general_purpose::STANDARD.encode(&z);
    assert!(bomb.len() < 200_000, "{} bytes of input", bomb.len());
    let mut doc: Value = serde_json::from_str(&fixture()).expect("json");
    for r in doc["body"]["records"].as_array_mut().expect("records") {
        r["chunks"] = bomb.clone().into();
    }
    match open("chunks.json", &doc.to_string(), &TrustedKeys::default()) {
        Err(ViewerError::Schema(m)) => assert!(
            m.contains("token chunks in all") || m.contains("expands to more than"),
            "{m}"
        ),
        other => panic!("expected a budget error, got {other:?}"),
    }
}

/// Raw DEFLATE (the chunk codec's first form), through miniz_oxide.
struct DeflateRaw<'a> {
    out: &'a mut Vec<u8>,
    buf: Vec<u8>,
}

impl<'a> DeflateRaw<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Self {
            out,
            buf: Vec::new(),
        }
    }
    fn finish(self) {
        self.out
            .extend(miniz_oxide::deflate::compress_to_vec(&self.buf, 9));
    }
}

impl std::io::Write for DeflateRaw<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The same key twice has no one meaning: refused everywhere, with a message.
#[test]
fn duplicate_keys_are_refused_with_a_message() {
    let text = fixture();
    // A second "created" inside the signed body: serde_json would keep the last.
    let dup = text.replacen(
        "\"created\":",
        "\"created\":\"1999-01-01T00:00:00.000Z\",\"created\":",
        1,
    );
    assert_ne!(dup, text);
    match open("dup.json", &dup, &TrustedKeys::default()) {
        Err(e) => assert!(e.to_string().contains("duplicate key \"created\""), "{e}"),
        Ok(_) => panic!("a report with a duplicate key opened"),
    }
    let e = pinbench::core::report::open(&dup).expect_err("refused");
    assert!(e.to_string().contains("duplicate key"), "{e}");
    // Another tool's file, and one line of AIPerf's records.
    let e = open(
        "v.json",
        r#"{"model_id":"a","model_id":"b","completed":1,"output_throughput":1}"#,
        &TrustedKeys::default(),
    )
    .expect_err("refused");
    assert!(e.to_string().contains("duplicate key"), "{e}");
    let line = r#"{"metadata":{"request_start_ns":1,"request_start_ns":2},"metrics":{}}"#;
    let e = open("r.jsonl", line, &TrustedKeys::default()).expect_err("refused");
    assert!(e.to_string().contains("duplicate key"), "{e}");
}

/// Values a report could not sign exactly, or extras that override what pinbench sends,
/// are refused at the gate (the run cannot start, so no report is lost at the end).
#[test]
fn unsignable_pins_and_colliding_extras_are_refused_at_the_gate() {
    use pinbench::core::pins::RunConfig;
    let gate = |name: &str, text: &str| {
        RunConfig::try_from(&base().set(name, text).raw().expect("known fields"))
    };
    assert!(gate("sampling_extra", "{\"top_p\":0.9,\"seed\":7}").is_ok());
    for (name, text) in [
        ("model_params", "10000T"),
        ("sampling_extra", "{\"seed\":18446744073709551615}"),
        (
            "sampling_extra",
            "{\"model\":\"other\",\"n\":64,\"max_tokens\":100000}",
        ),
        ("sampling_extra", "{\"n\":64}"),
        ("sampling_extra", "{\"stream_options\":{}}"),
        ("kv_capacity", "90071992547409930"),
        ("stall_timeout_s", "9007199254740993"),
    ] {
        let e = gate(name, text).expect_err(text);
        assert!(
            e.to_string().contains(&name.replace('_', " ")),
            "{name}={text}: {e}"
        );
    }
}

/// The pins these tests start from: the reference pins at 16 → 4 tokens, c=1, 2 requests.
fn base() -> Pins {
    Pins::reference()
        .lengths(16, 4)
        .concurrency(1)
        .windows("0", "2", "0")
}

/// A server's usage beyond 2^53, or a rate that would overflow: the report still builds
/// and signs (the count is ignored as a bad field; figures are clamped).
#[test]
fn server_counts_beyond_2_53_do_not_lose_the_report() {
    use pinbench::core::dialect::Dialect;
    use pinbench::core::metrics::ClientEnv;
    use pinbench::core::record::{RequestTimeline, StreamEnd};
    use pinbench::core::report::{Report, ReportBody};
    let cfg = base().build().expect("pinned");
    let records: Vec<_> = (0..2u32)
        .map(|i| {
            let t0 = u64::from(i) * 10_000;
            let mut tl = RequestTimeline::new(i, 0, Dialect::Completions, 16, 4, t0);
            tl.on_headers(t0 + 10, 200, Some("text/event-stream"));
            tl.on_bytes(t0 + 20, b"data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n");
            tl.on_bytes(t0 + 21, b"data: {\"choices\":[{\"index\":0,\"text\":\"b\"}]}\n\n");
            tl.on_bytes(
                t0 + 22,
                b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":18446744073709551615}}\n\ndata: [DONE]\n\n",
            );
            tl.finish(t0 + 23, StreamEnd::Eof)
        })
        .collect();
    assert!(records
        .iter()
        .all(|r| r.usage.is_none() && r.anomalies.bad_optional_fields == 1));
    let env = ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 0,
        event_loop_lag_max_us: 0,
        host: None,
        clock_epoch_us: None,
        ..Default::default()
    };
    let body = ReportBody::build(
        "2026-12-01T00:00:00.000Z".into(),
        cfg,
        None,
        Vec::new(),
        env,
        records,
    )
    .expect("builds");
    let mut report = Report::new(body);
    report
        .sign(&pinbench::core::sign::KeyPair::from_secret([7; 32]))
        .expect("signs");
}

/// Secrets stay out of shared files: a server that echoes the key (or any credential) in
/// an error, an in-stream error or a network message has it redacted in the record; a
/// key in the endpoint path is refused.
#[test]
fn echoed_secrets_are_redacted_and_keys_in_urls_refused() {
    use pinbench::core::dialect::Dialect;
    use pinbench::core::record::{redact, Outcome, RequestTimeline, StreamEnd};
    let key = "sk-live-0123456789abcdefXYZ".to_owned();
    let known = vec![key.clone()];
    for raw in [
        format!("Incorrect API key provided: {key}. You can find your API key at …"),
        format!("upstream said Authorization: Bearer {key}"),
        "bad token abcdef0123456789ABCDEF0123456789 in header".to_owned(),
        "GET /v1/models?api_key=hunter2hunter2 failed".to_owned(),
    ] {
        let r = redact(&raw, &known);
        assert!(
            !r.contains(&key) && !r.contains("0123456789ABCDEF") && !r.contains("hunter2"),
            "{r}"
        );
        assert!(r.contains("[redacted]"), "{r}");
    }
    assert!(redact(&"x".repeat(2_000), &[]).chars().count() <= 301);
    // Through a timeline: an HTTP error body and an in-stream error.
    let mut tl = RequestTimeline::new(0, 0, Dialect::Chat, 8, 4, 0);
    tl.set_secrets(known.clone());
    let rec = tl.finish(
        10,
        StreamEnd::Failed(Outcome::Http {
            status: 401,
            message: format!("Incorrect API key provided: {key}"),
        }),
    );
    assert!(!serde_json::to_string(&rec).expect("json").contains(&key));
    // A secret wherever the body would once have been cut (500 characters, before the
    // redaction): the key, 17 times, shrinks to "[redacted]" and pulls a key that straddles
    // character 500 into the 300 kept. Redaction runs on the whole text and only then is
    // it cut, so no part of any key gets through.
    for pad in [0, 5, 10, 13, 16, 20, 40] {
        let body = format!(
            "{}{} {key} trailing",
            format!("{key} ").repeat(17),
            "x".repeat(pad)
        );
        let message = pinbench::core::record::error_message_from_body(&body);
        let mut tl = RequestTimeline::new(0, 0, Dialect::Chat, 8, 4, 0);
        tl.set_secrets(known.clone());
        let rec = tl.finish(
            10,
            StreamEnd::Failed(Outcome::Http {
                status: 500,
                message,
            }),
        );
        let json = serde_json::to_string(&rec).expect("json");
        assert!(!json.contains(&key[..6]), "pad {pad}: {json}");
    }
    let mut tl = RequestTimeline::new(0, 0, Dialect::Chat, 8, 4, 0);
    tl.set_secrets(known.clone());
    tl.on_headers(1, 200, Some("text/event-stream"));
    tl.on_bytes(
        2,
        format!("data: {{\"error\":{{\"message\":\"key {key} revoked\"}}}}\n\n").as_bytes(),
    );
    let rec = tl.finish(3, StreamEnd::Eof);
    let json = serde_json::to_string(&rec).expect("json");
    assert!(
        matches!(rec.outcome, Outcome::StreamError { .. }) && !json.contains(&key),
        "{json}"
    );
    // A key in the endpoint path is never accepted as an endpoint.
    assert_eq!(
        pinbench::core::pins::parse_base_url("https://api.example.com/sk-abcdef0123456789/v1"),
        None
    );
    assert_eq!(
        pinbench::core::pins::parse_base_url("https://h/k/a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6/v1"),
        None
    );
    assert!(pinbench::core::pins::parse_base_url(
        "https://h/openai/deployments/meta-llama-3-1-8b-instruct-awq/v1"
    )
    .is_some());
}

/// Compare shows each file's signature and recompute state; a modified file is never
/// compared as an equal, even with identical pins.
#[test]
fn a_modified_file_is_never_compared_as_an_equal() {
    use pinbench::core::compare::{compare, Subject, Verdict};
    use pinbench::core::viewer::integrity;
    let text = fixture();
    let subject = |name: &str, t: &str| match open(name, t, &TrustedKeys::default()) {
        Ok(Opened::Report(r)) => {
            Subject::from_report(name, &r.report, r.figures().ok()).with_integrity(integrity(&r))
        }
        other => panic!("{other:?}"),
    };
    let a = subject("a.json", &text);
    let b = subject("b.json", &text);
    assert_eq!(compare(&[a.clone(), b]).verdict, Verdict::Comparable);
    let tampered = text.replacen("\"t_send_us\":700", "\"t_send_us\":701", 1);
    let c = subject("c.json", &tampered);
    let cmp = compare(&[a, c]);
    assert!(
        cmp.verdict
            .sentence()
            .contains("cannot be believed: c.json (modified after signing)"),
        "{}",
        cmp.verdict.sentence()
    );
    assert_eq!(cmp.pins[0].key, "integrity");
    assert!(cmp.pins[0].cells[0].starts_with("signature valid"));
}

/// A guidellm file (1.4 MB, from a real run's requests) whose every request claims 2^20
/// token iterations and 2^20 output tokens is refused by the decode budget reports are held
/// to, before any chunk is made (it would expand to about a third of a billion chunks).
#[test]
fn an_import_bomb_is_charged_against_the_decode_budget() {
    let mut v: Value = serde_json::from_str(include_str!(
        "fixtures/imports/real/guidellm-0.8.1/benchmarks.json"
    ))
    .expect("json");
    let reqs = &mut v["benchmarks"][0]["requests"]["successful"];
    let one = reqs[0].clone();
    let mut many = Vec::new();
    for i in 0..320 {
        let mut r = one.clone();
        r["info"]["timings"]["token_iterations"] = Value::from(1u64 << 20);
        r["output_tokens"] = Value::from(1u64 << 20);
        r["request_id"] = Value::from(format!("bomb-{i}"));
        many.push(r);
    }
    *reqs = Value::Array(many);
    let text = v.to_string();
    assert!(
        text.len() > 1_400_000 && text.len() < 2_000_000,
        "{} bytes",
        text.len()
    );
    match open("bomb.json", &text, &TrustedKeys::default()) {
        Err(ViewerError::Import(e)) => {
            assert!(e.to_string().contains("token chunks in all"), "{e}")
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("the bomb was imported"),
    }
}
