//! The signed sample report in `tests/fixtures/report_signed.json` (also used by the
//! browser tests) is exactly what the current code produces, verifies, and recomputes
//! without mismatch. `UPDATE_SNAPSHOTS=1` rewrites it after an intended schema change.

use std::path::Path;

use pinbench::core::dialect::Dialect;
use pinbench::core::metrics::{ClientEnv, Slo};
use pinbench::core::pins::{Pins, RunConfig};
use pinbench::core::record::{Outcome, RequestRecord, RequestTimeline, StreamEnd};
use pinbench::core::report::{self, Report, ReportBody, Verification};
use pinbench::core::sign::KeyPair;

/// The fixture's signing key (a test key: its secret is public on purpose).
const FIXTURE_SECRET: [u8; 32] = [0x42; 32];

fn config() -> RunConfig {
    Pins::reference()
        .with(&[
            ("model_params", "270M"),
            ("model_engine", "pinbench-ref 0.1.0"),
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "10"),
            ("max_model_len", "2048"),
            ("max_num_seqs", "8"),
            ("phases", "colocated"),
        ])
        .lengths(32, 8)
        .windows("2", "6", "2")
        .build()
        .expect("fully pinned")
}

/// Ten requests, two streams, one 429 in the measured window.
fn records() -> Vec<RequestRecord> {
    let mut out = Vec::new();
    let mut t_stream = [0u64, 700];
    for i in 0..10u32 {
        let s = (i % 2) as usize;
        let t0 = t_stream[s];
        let mut tl = RequestTimeline::new(i, 0, Dialect::Completions, 32, 8, t0);
        if i == 5 {
            let rec = tl.finish(
                t0 + 2_000,
                StreamEnd::Failed(Outcome::Http {
                    status: 429,
                    message: "rate limited".into(),
                }),
            );
            t_stream[s] = t0 + 2_100;
            out.push(rec);
            continue;
        }
        tl.on_headers(t0 + 1_000, 200, Some("text/event-stream"));
        let mut t = t0 + 20_000 + u64::from(i) * 13;
        for k in 0..8u64 {
            tl.on_bytes(
                t,
                format!("data: {{\"choices\":[{{\"index\":0,\"text\":\" w{k}\"}}]}}\n\n")
                    .as_bytes(),
            );
            t += 4_000 + k * 50;
        }
        tl.on_bytes(t, b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":32,\"completion_tokens\":8}}\n\ndata: [DONE]\n\n");
        out.push(tl.finish(t + 100, StreamEnd::Eof));
        t_stream[s] = t + 150;
    }
    out
}

/// Builds the signed fixture report.
fn fixture() -> String {
    let env = ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 400,
        event_loop_lag_max_us: 1_200,
        host: None,
        clock_epoch_us: None,
        ..Default::default()
    };
    let slo = Some(Slo {
        ttft_us: Some(25_000),
        tpot_us: Some(5_000),
        e2e_us: None,
    });
    let body = ReportBody::build(
        "2026-11-29T15:00:00.000Z".into(),
        config(),
        slo,
        vec![],
        env,
        records(),
    )
    .expect("builds");
    let mut rep = Report::new(body);
    rep.sign(&KeyPair::from_secret(FIXTURE_SECRET))
        .expect("signs");
    rep.to_json().expect("serialises") + "\n"
}

#[test]
fn signed_fixture_is_current_and_verifies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report_signed.json");
    let text = fixture();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &text).expect("writable");
    }
    let stored =
        std::fs::read_to_string(&path).expect("fixture exists (UPDATE_SNAPSHOTS=1 creates it)");
    assert_eq!(
        stored, text,
        "fixture is stale: rerun with UPDATE_SNAPSHOTS=1 and review the diff"
    );

    let opened = report::open(&stored).expect("opens");
    let key = KeyPair::from_secret(FIXTURE_SECRET);
    assert_eq!(
        opened.verification,
        Verification::Valid {
            key_id: key.key_id(),
            public_key: key.public_key_base64()
        }
    );
    assert_eq!(
        report::recompute(&opened.report).expect("recomputes"),
        vec![]
    );
    let figures = opened.report.body.figures().expect("figures");
    let step = &figures.steps[0];
    assert_eq!(step.requests.warmup, vec![0, 1]);
    assert_eq!(step.requests.cooldown, vec![8, 9]);
    assert_eq!(step.errors_by_kind.get("http_429"), Some(&1));
    assert_eq!(step.output_len.exact, step.requests.measured_ok);
}

#[test]
fn one_changed_value_in_the_fixture_fails_verification() {
    let text = fixture();
    // Change one digit of the first request's send time.
    let needle = "\"t_send_us\":700";
    assert!(text.contains(needle));
    let tampered = text.replacen(needle, "\"t_send_us\":701", 1);
    let opened = report::open(&tampered).expect("still a report");
    assert!(
        matches!(opened.verification, Verification::Invalid { .. }),
        "{:?}",
        opened.verification
    );
}

/// A report signed by the code of 2026-12-01 and never regenerated: every later version
/// must open it as validly signed, with its card signed, bound and equal to the card
/// derived from its body. (`report_card_v1.json`, from before cards were typed data,
/// keeps its first-format card: signed and bound, its text not recomputed.)
#[test]
fn frozen_reports_stay_valid_with_their_cards() {
    use pinbench::core::card::{self, CardCheck};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (file, want) in [
        ("report_frozen_2026-12-01.json", CardCheck::Matches),
        ("report_card_v1.json", CardCheck::Legacy),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).expect("fixture");
        let opened = report::open(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            matches!(opened.verification, Verification::Valid { .. }),
            "{file}: {:?}",
            opened.verification
        );
        let figures = opened.report.body.figures().expect("figures");
        assert_eq!(card::check(&opened.report, Some(&figures)), want, "{file}");
        let c = opened.report.card.expect("card");
        assert!(matches!(c.verify(), Verification::Valid { .. }), "{file}");
        assert!(
            !c.body.pins().is_empty() && !c.body.headline().is_empty(),
            "{file}"
        );
    }
}

/// Signing in two phases (for a WebCrypto key that answers later) gives exactly what
/// signing at once gives (Ed25519 is deterministic).
#[test]
fn two_phase_signing_equals_signing_at_once() {
    use pinbench::core::report::SignatureBlock;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(dir.join("report_signed.json")).expect("fixture");
    let base = report::open(&text).expect("opens").report;
    let key = KeyPair::from_secret([9; 32]);
    let mut once = base.clone();
    once.sign(&key).expect("signs");
    let mut twice = base;
    let figures = twice.body.figures().expect("figures");
    let card = twice.card_to_sign(&figures).expect("card bytes");
    twice.attach_card_signature(SignatureBlock::ed25519(&key.public_key(), &key.sign(&card)));
    let body = twice.signed_bytes().expect("bytes");
    twice.attach_signature(SignatureBlock::ed25519(&key.public_key(), &key.sign(&body)));
    assert_eq!(
        once.to_json().expect("json"),
        twice.to_json().expect("json")
    );
    assert!(matches!(
        report::open(&twice.to_json().expect("json"))
            .expect("opens")
            .verification,
        Verification::Valid { .. }
    ));
}
