//! Merging reports of clients that ran the same pins at the same time: histograms merge
//! exactly (the merged report's distributions equal the merge of the sources'), counts
//! are conserved, times land on one clock, and every refusal says why.

use pinbench::core::dialect::Dialect;
use pinbench::core::histogram::Hist;
use pinbench::core::metrics::ClientEnv;
use pinbench::core::pins::{Pins, RunConfig};
use pinbench::core::record::{RequestRecord, RequestTimeline, StreamEnd};
use pinbench::core::report::{self, Report, ReportBody};
use pinbench::core::share::merge::{check_sources, merge, MergeError, Source};
use pinbench::core::sign::KeyPair;

fn config(output: &str) -> RunConfig {
    Pins::reference()
        .endpoint("https://127.0.0.1:8443")
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("output_tokens", output),
            ("max_model_len", "2048"),
        ])
        .build()
        .expect("fully pinned")
}

/// Twelve requests on two streams; `seed` varies TTFT and TPOT so sources differ.
fn records(seed: u64, tokens: u32) -> Vec<RequestRecord> {
    let mut out = Vec::new();
    let mut t_stream = [0u64, 900];
    for i in 0..12u32 {
        let s = (i % 2) as usize;
        let t0 = t_stream[s];
        let mut tl = RequestTimeline::new(i, 0, Dialect::Completions, 32, tokens, t0);
        tl.on_headers(t0 + 1_000, 200, Some("text/event-stream"));
        let mut t = t0 + 15_000 + (u64::from(i) * 977 + seed * 3_001) % 9_000;
        for k in 0..tokens {
            tl.on_bytes(
                t,
                format!("data: {{\"choices\":[{{\"index\":0,\"text\":\" w{k}\"}}]}}\n\n")
                    .as_bytes(),
            );
            t += 3_000 + (u64::from(k) * 37 + seed * 101) % 1_500;
        }
        tl.on_bytes(
            t,
            format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":32,\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n").as_bytes(),
        );
        out.push(tl.finish(t + 100, StreamEnd::Eof));
        t_stream[s] = t + 150;
    }
    out
}

/// A signed source report, opened as the merger opens files.
fn source(seed: u64, epoch_us: Option<u64>, output: &str, sign: bool) -> Source {
    let env = ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 300,
        event_loop_lag_max_us: 900,
        host: None,
        clock_epoch_us: epoch_us,
        ..Default::default()
    };
    let tokens = output.parse().expect("a count");
    let body = ReportBody::build(
        format!("2026-12-01T05:00:00.{seed:03}Z"),
        config(output),
        None,
        vec![],
        env,
        records(seed, tokens),
    )
    .expect("builds");
    let mut rep = Report::new(body);
    if sign {
        rep.sign(&KeyPair::from_secret([seed as u8 + 1; 32]))
            .expect("signs");
    }
    let text = rep.to_json().expect("serialises");
    Source::open(format!("client-{seed}.json"), text).expect("opens")
}

const EPOCH: u64 = 1_796_101_200_000_000;

fn hist(enc: &str) -> Hist {
    Hist::decode(enc).expect("decodes")
}

#[test]
fn three_clients_merge_with_exact_histograms_on_one_clock() {
    // Started 0.4 ms and 1.1 ms apart on the wall clock.
    let sources = vec![
        source(1, Some(EPOCH), "16", true),
        source(2, Some(EPOCH + 400), "16", true),
        source(3, Some(EPOCH + 1_100), "16", true),
    ];
    let body = merge(&sources, "2026-12-01T05:10:00.000Z".into()).expect("merges");
    let info = body.merged.clone().expect("merge info");
    assert_eq!(info.sources.len(), 3);
    assert!(info
        .sources
        .iter()
        .all(|s| s.digest.starts_with("sha256:") && s.key_id.starts_with("ed25519:")));
    assert_eq!(body.records.len(), 36);
    // The load and the request-count windows are the sum of the sources'.
    assert_eq!(body.config.load.value.steps_text(), "closed loop, c=6");
    let merged_figures = body.figures().expect("figures");
    let step = &merged_figures.steps[0];
    assert_eq!(step.requests.measured, 24);
    // Every distribution is the exact merge of the sources' (HDR buckets, count, min,
    // max, mean), and counts are conserved.
    let mut ttft = Hist::new();
    let mut tpot = Hist::new();
    let mut n = 0u64;
    for src in &sources {
        let figures = src.opened.report.body.figures().expect("figures");
        let s = &figures.steps[0];
        ttft.merge(&hist(&s.histograms.ttft_us)).expect("merges");
        tpot.merge(&hist(&s.histograms.tpot_us)).expect("merges");
        n += s.ttft_us.as_ref().expect("ttft").count;
    }
    let merged_ttft = hist(&step.histograms.ttft_us);
    assert_eq!(merged_ttft.count(), n);
    assert_eq!(
        merged_ttft.buckets().collect::<Vec<_>>(),
        ttft.buckets().collect::<Vec<_>>()
    );
    assert_eq!(
        (merged_ttft.min(), merged_ttft.max()),
        (ttft.min(), ttft.max())
    );
    let merged_tpot = hist(&step.histograms.tpot_us);
    assert_eq!(
        merged_tpot.buckets().collect::<Vec<_>>(),
        tpot.buckets().collect::<Vec<_>>()
    );
    // Times are on one clock: source 3's first send moved by 1.1 ms.
    let first3 = sources[2]
        .opened
        .report
        .body
        .records
        .iter()
        .map(|r| r.t_send_us)
        .min()
        .expect("records");
    let moved = body
        .records
        .iter()
        .filter(|r| r.index % 3 == 2)
        .map(|r| r.t_send_us)
        .min()
        .expect("records");
    assert_eq!(moved, first3 + 1_100);
    // The common window is inside every source's measured window, and its aggregate
    // counts exactly the tokens received inside it.
    for s in &info.sources {
        assert!(s.measured_us.0 <= info.common_us.0 && info.common_us.1 <= s.measured_us.1);
    }
    let inside: u64 = body
        .records
        .iter()
        .flat_map(|r| r.chunks.iter())
        .filter(|c| c.t_us >= info.common_us.0 && c.t_us < info.common_us.1)
        .map(|c| u64::from(c.tokens))
        .sum();
    assert_eq!(info.common_output_tokens, inside);
    // The merged report signs, opens and recomputes like any other.
    let mut rep = Report::new(body);
    rep.sign(&KeyPair::from_secret([9; 32])).expect("signs");
    let opened = report::open(&rep.to_json().expect("json")).expect("opens");
    assert!(matches!(
        opened.verification,
        report::Verification::Valid { .. }
    ));
    assert!(report::recompute(&opened.report)
        .expect("recomputes")
        .is_empty());
}

#[test]
fn refusals_say_why() {
    let a = source(1, Some(EPOCH), "16", true);
    assert_eq!(
        merge(std::slice::from_ref(&a), String::new()).err(),
        Some(MergeError::TooFew(1))
    );
    let unsigned = source(2, Some(EPOCH), "16", false);
    assert!(matches!(
        merge(&[a.clone(), unsigned], String::new()),
        Err(MergeError::NotSigned { .. })
    ));
    let other_pins = source(2, Some(EPOCH), "12", true);
    match merge(&[a.clone(), other_pins], String::new()) {
        Err(MergeError::PinsDiffer(why)) => assert!(why.contains("output"), "{why}"),
        other => panic!("{other:?}"),
    }
    let no_clock = source(2, None, "16", true);
    assert!(matches!(
        merge(&[a.clone(), no_clock], String::new()),
        Err(MergeError::NoClock(_))
    ));
    // An hour later: the windows do not overlap.
    let later = source(2, Some(EPOCH + 3_600_000_000), "16", true);
    match merge(&[a, later], String::new()) {
        Err(MergeError::NoOverlap(why)) => assert!(why.contains("client-1.json measured"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// A merge cannot launder: the same report twice, a copy under another name, the same run
/// signed again by another key, or a request in two sources is refused; a merged report
/// keeps its sources, which re-verify and merge again into exactly its records, and a
/// source altered after the merge is found.
#[test]
fn merges_do_not_launder_and_keep_their_sources() {
    let a = source(1, Some(EPOCH), "16", true);
    let b = source(2, Some(EPOCH + 50_000), "16", true);
    let mut copy = a.clone();
    copy.title = "copy-of-client-1.json".into();
    for pair in [[a.clone(), a.clone()], [a.clone(), copy]] {
        match merge(&pair, String::new()) {
            Err(MergeError::SameReport(..)) => {}
            other => panic!("{other:?}"),
        }
    }
    // The same run re-signed by another key: other digest, same start on the same clock.
    let mut resigned = a.opened.report.clone();
    resigned
        .sign(&KeyPair::from_secret([77; 32]))
        .expect("signs");
    let resigned =
        Source::open("resigned.json".into(), resigned.to_json().expect("json")).expect("opens");
    assert!(matches!(
        merge(&[a.clone(), resigned], String::new()),
        Err(MergeError::SameRun(..))
    ));
    let body = merge(&[a.clone(), b.clone()], "2026-12-01T05:10:00.000Z".into()).expect("merges");
    let (checks, problems) = check_sources(&body).expect("a merge");
    assert!(problems.is_empty(), "{problems:?}");
    // The viewer shows each source with its signer, digest and check.
    let shown = pinbench::core::html::report_body(&Report::new(body.clone()), Err("-"));
    assert!(
        shown.contains("merged-sources")
            && shown.contains("client-1.json")
            && shown.contains(&checks[1].digest)
            && shown.contains("merging them again gives exactly"),
        "{shown}"
    );
    assert_eq!(checks.len(), 2);
    assert!(checks
        .iter()
        .all(|c| c.problem.is_none() && c.public_key.is_some()));
    // Tamper with a kept source: its signature no longer verifies.
    let mut text = serde_json::to_value(&body).expect("value");
    let recs = text["merged"]["sources"][1]["document"]["body"]["records"]
        .as_array_mut()
        .expect("records");
    recs.pop();
    let tampered: ReportBody = serde_json::from_value(text).expect("reads");
    let (_, problems) = check_sources(&tampered).expect("a merge");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("client-2.json") && p.contains("signature invalid")),
        "{problems:?}"
    );
    // Drop a merged record: the sources no longer merge into these records.
    let mut short = body.clone();
    short.records.pop();
    let (_, problems) = check_sources(&short).expect("a merge");
    assert!(
        problems.iter().any(|p| p.contains("merged records")),
        "{problems:?}"
    );
    assert!(report::duplicate_records(&body).is_empty());
    let mut dup = body;
    dup.records.push(dup.records[0].clone());
    assert!(!report::duplicate_records(&dup).is_empty());
}
