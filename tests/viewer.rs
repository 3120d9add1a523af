//! The viewer's core, natively: opening, trust, hostile input, comparison, imports,
//! the card and its link, CSV and charts. Each case is data with one check.

use pinbench::core::card::{self, Card, CardCheck};
use pinbench::core::chart;
use pinbench::core::compare::{compare, Subject, Verdict};
use pinbench::core::pins::LoadStep;
use pinbench::core::report;
use pinbench::core::view::{self, PinStatus};
use pinbench::core::viewer::{self, Opened, SigState, TrustedKeys, ViewerError};

const FIXTURE: &str = include_str!("fixtures/report_signed.json");
/// Public key of the fixture's test key (`[0x42; 32]`).
fn fixture_public_key() -> String {
    pinbench::core::sign::KeyPair::from_secret([0x42; 32]).public_key_base64()
}

fn open(text: &str, trusted: &TrustedKeys) -> Result<Opened, ViewerError> {
    viewer::open("f.json", text, trusted)
}

fn opened_report(text: &str, trusted: &TrustedKeys) -> viewer::OpenedReport {
    match open(text, trusted) {
        Ok(Opened::Report(r)) => *r,
        other => panic!("expected a report, got {other:?}"),
    }
}

#[test]
fn signature_states() {
    let none = TrustedKeys::default();
    let mut trusted = TrustedKeys::default();
    trusted
        .add("CI test key", &fixture_public_key())
        .expect("valid key");
    let mut doc: serde_json::Value = serde_json::from_str(FIXTURE).expect("json");
    let stripped = {
        let mut d = doc.clone();
        d.as_object_mut().expect("object").remove("signature");
        d.to_string()
    };
    // A signature block from another (valid) report: the content no longer matches.
    let swapped = {
        let mut other = doc.clone();
        other["body"]["created"] = "2030-01-01T00:00:00.000Z".into();
        let mut r: report::Report = serde_json::from_value(other).expect("report");
        r.sign(&pinbench::core::sign::KeyPair::from_secret([7; 32]))
            .expect("signs");
        doc["signature"] = serde_json::to_value(&r.signature).expect("block");
        doc.to_string()
    };
    let flipped = FIXTURE.replacen("\"pinbench-tiny\"", "\"pinbench-tinY\"", 1);
    let cases: [(&str, &str, &TrustedKeys, &str); 5] = [
        ("trusted", FIXTURE, &trusted, "valid"),
        ("unknown key", FIXTURE, &none, "unknown-key"),
        ("one byte changed", &flipped, &trusted, "invalid"),
        ("stripped", &stripped, &trusted, "unsigned"),
        ("swapped block", &swapped, &trusted, "invalid"),
    ];
    for (name, text, keys, want) in cases {
        let o = opened_report(text, keys);
        assert_eq!(o.sig.id(), want, "{name}: {}", o.sig.text());
    }
    let o = opened_report(FIXTURE, &trusted);
    assert!(matches!(o.sig, SigState::Trusted { ref name, .. } if name == "CI test key"));
    assert!(o.sig.text().starts_with("valid: signed by CI test key"));
    assert_eq!(o.mismatches(), Ok(&[][..]));
    assert_eq!(o.card, CardCheck::Matches);
    let o = opened_report(&flipped, &trusted);
    assert!(o.sig.text().starts_with("invalid: modified"));
}

/// The figures the viewer shows are computed from the records; the file's stored
/// summary is only compared with them. A signed file whose summary was changed before
/// signing (or is not even a summary) still shows its records' figures, and says which
/// stored figures differ.
#[test]
fn shown_figures_come_from_the_records_not_the_stored_summary() {
    let honest = fixture_report();
    let truth = figures(&honest);
    let o = opened_report(FIXTURE, &TrustedKeys::default());
    assert_eq!(o.figures().expect("figures"), &truth);
    let key = pinbench::core::sign::KeyPair::from_secret([7; 32]);
    let p50 = truth.steps[0].ttft_us.expect("ttft").p50;
    let mut doc: serde_json::Value = serde_json::from_str(FIXTURE).expect("json");
    let inflated = {
        let mut d = doc.clone();
        d["body"]["summary"]["steps"][0]["ttft_us"]["p50"] = (p50 / 2).into();
        d
    };
    doc["body"]["summary"] = serde_json::json!("fast");
    for (name, d, paths) in [
        (
            "a halved TTFT p50",
            inflated,
            vec!["summary.steps[0].ttft_us.p50"],
        ),
        ("a string", doc, vec!["summary"]),
    ] {
        let mut r: report::Report = serde_json::from_value(d).expect("opens");
        r.sign(&key).expect("signs");
        let o = opened_report(&r.to_json().expect("json"), &TrustedKeys::default());
        assert_eq!(o.sig.id(), "unknown-key", "{name}: signed as it is");
        assert_eq!(o.figures().expect("figures"), &truth, "{name}");
        let got: Vec<String> = o
            .mismatches()
            .expect("recomputes")
            .iter()
            .map(|m| m.path.clone())
            .collect();
        assert_eq!(got, paths, "{name}");
        // The card signed with it shows the records' figures too.
        assert_eq!(o.card, CardCheck::Matches, "{name}");
    }
}

#[test]
fn hostile_files_get_clear_errors() {
    let keys = TrustedKeys::default();
    let nested = "[".repeat(10_000) + &"]".repeat(10_000);
    let wrong = FIXTURE.replacen("pinbench.report/v1", "pinbench.report/v9", 1);
    let extra = FIXTURE.replacen("\"schema\":", "\"surprise\": 1, \"schema\":", 1);
    let cases: [(&str, String, &str); 6] = [
        ("malformed", "{\"schema\": ".into(), "not valid JSON"),
        ("nested", nested, "nested too deeply"),
        (
            "wrong version",
            wrong,
            "unsupported report schema \"pinbench.report/v9\"",
        ),
        ("unknown field", extra, "does not match schema"),
        ("not ours", "{\"hello\": 1}".into(), "not a pinbench report"),
        ("array", "[1,2,3]".into(), "not a pinbench report"),
    ];
    for (name, text, want) in cases {
        let e = open(&text, &keys).expect_err(name).to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
    viewer::check_size(200 << 20).expect("a 100,000-request report of 200 MB opens");
    let e = viewer::check_size(300 << 20)
        .expect_err("300 MB")
        .to_string();
    assert!(e.contains("314572800 bytes"), "{e}");
}

#[test]
fn trusted_keys_round_trip_and_reject_junk() {
    let mut k = TrustedKeys::default();
    assert!(k.add("x", "not base64!").is_err());
    assert!(k.add("", &fixture_public_key()).is_err());
    let id = k
        .add("ci", &fixture_public_key())
        .expect("ok")
        .key_id
        .clone();
    k.add("renamed", &fixture_public_key()).expect("ok");
    assert_eq!(k.keys.len(), 1);
    let back = TrustedKeys::from_json(&k.to_json());
    assert_eq!(back.name_of(&id), Some("renamed"));
    assert_eq!(TrustedKeys::from_json("garbage"), TrustedKeys::default());
}

fn fixture_report() -> report::Report {
    report::open(FIXTURE).expect("opens").report
}

/// A report's figures, computed from its records.
fn figures(r: &report::Report) -> pinbench::core::metrics::Summary {
    r.body.figures().expect("figures")
}

/// A subject of a report, with its figures.
fn subject(title: &str, r: &report::Report) -> Subject {
    Subject::from_report(title, r, Some(&figures(r)))
}

/// Runs of the same pins (a `pinbench watch` folder) are drawn over time: each headline
/// figure at its run's start, in hours when the runs span hours, the INVALID run apart;
/// runs of different pins are not.
#[test]
fn runs_of_the_same_pins_are_drawn_over_time() {
    let run = |created: &str, invalid: bool| {
        let mut r = fixture_report();
        r.body.created = created.into();
        r.body.client.invalid = invalid;
        subject(created, &r)
    };
    let runs = [
        run("2026-12-04T06:00:00.000Z", false),
        run("2026-12-04T00:00:00.000Z", false),
        run("2026-12-04T03:00:00.000Z", true),
    ];
    let c = compare(&runs);
    assert_eq!(c.verdict, Verdict::Comparable);
    let charts = chart::over_time_charts(&runs);
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["ttft-over-time", "tpot-over-time", "aggregate-over-time"]
    );
    let ttft = &charts[0];
    assert_eq!(ttft.x_label, "time since the first run, h");
    let p50 = ttft.series.iter().find(|s| s.name == "p50").expect("p50");
    let value = runs[0]
        .numbers
        .iter()
        .find(|n| n.key == "ttft_p50_ms")
        .expect("ttft p50")
        .value;
    assert_eq!(
        p50.points,
        vec![(0.0, value), (6.0, value)],
        "in time order"
    );
    let invalid = ttft
        .series
        .iter()
        .find(|s| s.name == "p50, runs judged INVALID")
        .expect("the invalid run apart");
    assert_eq!(invalid.points, vec![(3.0, value)]);
    let html = pinbench::core::html::over_time(&runs, &c);
    assert!(html.contains("3 runs") && html.contains("figure-chart-aggregate-over-time"));
    // Different pins: compared, not drawn over time.
    let mut other = fixture_report();
    other.body.config.prompt_len.value = pinbench::core::pins::LengthDist::Fixed { tokens: 999 };
    let mixed = [runs[0].clone(), subject("o", &other)];
    let c = compare(&mixed);
    assert_ne!(c.verdict, Verdict::Comparable);
    assert_eq!(pinbench::core::html::over_time(&mixed, &c), "");
    // One run is no series.
    assert!(chart::over_time_charts(&runs[..1]).is_empty());
}

#[test]
fn compare_verdicts() {
    let a = subject("a", &fixture_report());
    let same = compare(&[a.clone(), a.clone()]);
    assert_eq!(
        same.verdict,
        Verdict::Comparable,
        "{}",
        same.verdict.sentence()
    );
    let mut r = fixture_report();
    r.body.config.load.value.steps = vec![LoadStep::Closed { concurrency: 4 }];
    let b = subject("b", &r);
    let c = compare(&[a.clone(), b]);
    let s = c.verdict.sentence();
    assert!(s.starts_with("not comparable: differs in load"), "{s}");
    let load = c.pins.iter().find(|r| r.key == "load").expect("row");
    assert!(load.differs);
    let model = c
        .pins
        .iter()
        .find(|r| r.key == "model.params")
        .expect("row");
    assert!(!model.differs);
    // The endpoint differs between vendors by design: shown, not judged.
    let mut r = fixture_report();
    r.body.config.endpoint.base_url = "https://vendor.example".into();
    let c = compare(&[a.clone(), subject("v", &r)]);
    assert_eq!(c.verdict, Verdict::Comparable);
    // Two replays of one trace at different time scales, or of different traces, are
    // not comparable, and the load row says which trace and scale each replayed.
    let replay = |scale: u32, sha: &str| {
        let mut r = fixture_report();
        let trace = pinbench::core::trace::parse(include_bytes!(
            "fixtures/traces/mooncake_conversation_head60.jsonl"
        ))
        .expect("parses");
        let mut t =
            pinbench::core::pins::TraceRef::of("mooncake-conversation-60", true, &trace, scale, 0);
        if !sha.is_empty() {
            t.sha256 = sha.into();
        }
        r.body.config.trace = Some(pinbench::core::pins::Pinned {
            value: t,
            provenance: Default::default(),
        });
        subject("r", &r)
    };
    let (x, y) = (replay(1000, ""), replay(500, ""));
    assert_eq!(
        compare(&[x.clone(), x.clone()]).verdict,
        Verdict::Comparable
    );
    let c = compare(&[x.clone(), y]);
    assert!(c
        .verdict
        .sentence()
        .starts_with("not comparable: differs in load"));
    let load = c.pins.iter().find(|r| r.key == "load").expect("row");
    assert!(load.cells[0].contains("time scale 1 "), "{:?}", load.cells);
    assert!(
        load.cells[1].contains("time scale 0.5 "),
        "{:?}",
        load.cells
    );
    let other = replay(1000, &"ab".repeat(32));
    let c = compare(&[x, other]);
    let load = c.pins.iter().find(|r| r.key == "load").expect("row");
    assert!(
        load.differs && load.cells[1].contains("sha256 abababababab…"),
        "{:?}",
        load.cells
    );
    // Lengths from two different dataset files are not comparable: the prompt length row
    // names each file by its digest.
    let with_dataset = |csv: &[u8]| {
        let mut r = fixture_report();
        let d = pinbench::core::dataset::parse(csv).expect("reads");
        r.body.config.dataset = Some(pinbench::core::pins::Pinned {
            value: pinbench::core::pins::DatasetRef::of("lengths.csv", &d),
            provenance: Default::default(),
        });
        subject("d", &r)
    };
    let (d1, d2) = (
        with_dataset(b"input_tokens,output_tokens\n100,20\n"),
        with_dataset(b"input_tokens,output_tokens\n100,21\n"),
    );
    assert_eq!(
        compare(&[d1.clone(), d1.clone()]).verdict,
        Verdict::Comparable
    );
    let c = compare(&[d1, d2]);
    assert!(
        c.verdict
            .sentence()
            .starts_with("not comparable: differs in prompt length"),
        "{}",
        c.verdict.sentence()
    );
    let row = c.pins.iter().find(|r| r.key == "prompt_len").expect("row");
    assert!(
        row.differs
            && row.cells[0].starts_with("lengths of dataset lengths.csv (CSV of lengths, sha256 "),
        "{:?}",
        row.cells
    );
    // A vLLM result leaves pins open: never comparable with a pinned report.
    let v = vllm();
    let c = compare(&[a, v]);
    assert!(
        c.verdict
            .sentence()
            .contains("not pinned in every report: parameters"),
        "{}",
        c.verdict.sentence()
    );
}

fn import(text: &str) -> Subject {
    match open(text, &TrustedKeys::default()) {
        Ok(Opened::Imported(i)) => i.subject,
        other => panic!("expected an import, got {other:?}"),
    }
}

fn vllm() -> Subject {
    import(include_str!("fixtures/imports/vllm_bench_serve.json"))
}

#[test]
fn imports_list_their_unpinned_pins() {
    let cases = [
        (
            vllm(),
            "vLLM bench serve",
            "closed loop, c=8",
            vec![
                "model.params",
                "model.quantization",
                "prompt_len",
                "output_len",
                "kv.capacity",
                "kv.max_model_len",
                "kv.max_num_seqs",
                "phases",
                "scheduling",
                "cache",
                "sampling",
                "reasoning",
                "conversation",
            ],
            (128.0, 128.0),
        ),
        (
            import(include_str!(
                "fixtures/imports/aiperf_profile_export_aiperf.json"
            )),
            "AIPerf 0.3.0 (schema 1.1)",
            "closed loop, c=8",
            vec![
                "model.params",
                "model.quantization",
                "output_len",
                "kv.capacity",
                "kv.max_model_len",
                "kv.max_num_seqs",
                "phases",
                "scheduling",
                "cache",
                "sampling",
                "reasoning",
                "conversation",
            ],
            (128.0, 127.6),
        ),
        (
            import(include_str!("fixtures/imports/guidellm_benchmarks.json")),
            "guidellm",
            "closed loop, c=1 → closed loop, c=8",
            vec![
                "model.params",
                "model.quantization",
                "output_len",
                "kv.capacity",
                "kv.max_model_len",
                "kv.max_num_seqs",
                "phases",
                "scheduling",
                "cache",
                "sampling",
                "reasoning",
                "conversation",
            ],
            (256.0, 128.0),
        ),
    ];
    for (s, tool, load, open_keys, (pm, om)) in cases {
        assert_eq!(s.tool, tool);
        assert_eq!(
            s.pin("model.id").map(|p| p.value.as_str()),
            Some("meta-llama/Llama-3.1-8B-Instruct")
        );
        assert_eq!(
            s.pin("load").map(|p| p.value.as_str()),
            Some(load),
            "{tool}"
        );
        let got: Vec<&str> = s.open_pins().iter().map(|p| p.key).collect();
        assert_eq!(got, open_keys, "{tool}");
        assert!(s
            .open_pins()
            .iter()
            .all(|p| p.status == PinStatus::Unpinned));
        assert!((s.prompt_mean.unwrap_or(0.0) - pm).abs() < 1e-9, "{tool}");
        assert!((s.output_mean.unwrap_or(0.0) - om).abs() < 1e-9, "{tool}");
        assert!(
            s.numbers.iter().any(|n| n.key.ends_with("ttft_p99_ms")),
            "{tool}"
        );
    }
}

#[test]
fn card_link_round_trips_and_detects_tampering() {
    let r = fixture_report();
    let c = r.card.clone().expect("signed reports carry a card");
    let frag = c.to_fragment().expect("encodes");
    assert!(frag.len() < 4000, "card link is {} chars", frag.len());
    let back = Card::from_fragment(&format!("#{frag}&theme=dark")).expect("decodes");
    assert_eq!(back, c);
    assert!(matches!(back.verify(), report::Verification::Valid { .. }));
    let mut bad = back.clone();
    match &mut bad.body {
        card::CardBody::Typed(b) => {
            if let Some(d) = b.step.ttft_us.as_mut() {
                d.p50 = 1;
            }
        }
        card::CardBody::Legacy(b) => b.headline[0].value = "999999".into(),
    }
    assert!(matches!(bad.verify(), report::Verification::Invalid { .. }));
    assert_eq!(card::status_text(&bad.verify(), None), "invalid: modified");
    for junk in ["#card=%%%", "#card=AAAA", "#nothing"] {
        assert!(Card::from_fragment(junk).is_err(), "{junk}");
    }
    // A card moved onto another report's body does not match it.
    let mut other = fixture_report();
    other.body.created = "2030-01-01T00:00:00.000Z".into();
    assert!(matches!(
        card::check(&other, Some(&figures(&other))),
        CardCheck::Mismatch(_)
    ));
    let r = fixture_report();
    assert_eq!(card::check(&r, Some(&figures(&r))), CardCheck::Matches);
    // Without figures (records that cannot be summarised) the card is not vouched for.
    assert!(matches!(card::check(&r, None), CardCheck::Mismatch(_)));
    // Changed records are caught through the summary they no longer support.
    let mut other = fixture_report();
    other.body.records[3].chunks[2].t_us += 1;
    assert!(!report::recompute(&other).expect("recomputes").is_empty());
    let svg = card::card_svg(&c, "signature valid", card::Theme::Dark, "https://x/#card=");
    assert!(svg.starts_with("<svg") && svg.contains("pinbench-tiny"));
}

#[test]
fn hostile_text_never_becomes_markup() {
    let mut r = fixture_report();
    r.body.config.model.id.value = "<script>alert(1)</script><img src=x onerror=alert(2)>".into();
    let c = Card::of(&r, &figures(&r)).expect("card");
    let svg = card::card_svg(&c, "<b>x</b>", card::Theme::Light, "javascript:alert(3)");
    assert!(
        !svg.contains("<script") && !svg.contains("<img") && !svg.contains("<b>"),
        "{svg}"
    );
    for ch in chart::report_charts(&r, &figures(&r), 0) {
        let s = chart::render_svg(&ch);
        assert!(!s.contains("<script"), "{}", ch.id);
    }
}

#[test]
fn csv_has_one_row_per_request() {
    let r = fixture_report();
    let csv = view::records_csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], view::CSV_HEADER);
    assert_eq!(lines.len(), r.body.records.len() + 1);
    assert!(
        lines.iter().skip(1).any(|l| l.contains(",http_429,")),
        "{csv}"
    );
    // The throttled answer says so in its own columns.
    let cols = |l: &str| l.split(',').map(str::to_owned).collect::<Vec<_>>();
    let head = cols(lines[0]);
    let at = |name: &str| head.iter().position(|h| h == name).expect(name);
    let throttled = lines
        .iter()
        .skip(1)
        .map(|l| cols(l))
        .find(|c| c[at("outcome")] == "http_429")
        .expect("a 429 row");
    assert_eq!(throttled[at("throttle")], "http_429");
    assert!(
        lines.iter().skip(1).all(|l| cols(l).len() == head.len()),
        "{csv}"
    );
    assert_eq!(lines.iter().filter(|l| l.contains(",measured,")).count(), 6);
}

#[test]
fn charts_and_translator_cover_the_report() {
    let r = fixture_report();
    let ids: Vec<String> = chart::report_charts(&r, &figures(&r), 0)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(
        ids,
        [
            "ttft-cdf",
            "tpot-cdf",
            "e2e-cdf",
            "inter-chunk",
            "tokens-per-chunk",
            "throughput-time",
            "in-flight-time",
            "decode-slowdown"
        ]
    );
    let t = view::translator(&r, &figures(&r), 0);
    assert_eq!(t.len(), 6);
    for row in &t {
        assert_eq!(row.cells.len(), 7);
        assert_eq!(row.cells[0].tool, "pinbench");
        assert_eq!(row.cells[5].tool, "Artificial Analysis");
        assert_eq!(row.cells[6].tool, "MLPerf server");
    }
    // Artificial Analysis' headline figures against an oracle on the sorted values:
    // median TTFT, and median output speed after the first chunk.
    let recs = view::measured_ok(&r, 0);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len().div_ceil(2) - 1]
    };
    let ttfts: Vec<f64> = recs
        .iter()
        .filter_map(|x| pinbench::core::metrics::request_metrics(x).ttft_us)
        .map(|t| t as f64 / 1000.0)
        .collect();
    assert_eq!(t[0].cells[5].value, Some(median(ttfts)));
    let speeds: Vec<f64> = recs
        .iter()
        .filter_map(|x| {
            let (a, b) = (x.chunks.first()?, x.chunks.last()?);
            let n = x.output_tokens() as f64 - f64::from(a.tokens);
            (b.t_us > a.t_us && n > 0.0).then(|| n / ((b.t_us - a.t_us) as f64 / 1e6))
        })
        .collect();
    assert_eq!(t[5].cells[5].value, Some(median(speeds)));
    // MLPerf's p99 TTFT is at least the median.
    assert!(t[0].cells[6].value >= t[0].cells[5].value);
    // TTFT is defined alike everywhere; the measured-window tools agree with pinbench.
    let ttft = &t[0].cells;
    let (p, a) = (ttft[0].value.unwrap_or(0.0), ttft[2].value.unwrap_or(0.0));
    assert!((p - a).abs() < 0.01, "{p} vs {a}");
    let summary = figures(&r);
    let figures = view::headline(&summary.steps[0]);
    assert!(figures.iter().all(|f| !f.window.is_empty()));
    // Every number links to its definition, whose scope is the figure's.
    for f in &figures {
        let d = pinbench::core::definitions::definition(f.key).expect("a definition");
        assert_eq!(d.scope, f.scope, "{}", f.key);
    }
    assert!(figures.iter().any(|f| f.label.contains("per-stream")));
    assert!(figures.iter().any(|f| f.label.contains("aggregate")));
}

/// A claim placed on a report's frontier: placed when every pin it states is the report's
/// (concurrency aside) and it says the model and both lengths; else not comparable, why.
#[test]
fn a_claim_is_placed_on_the_frontier_only_when_its_pins_match() {
    let r = fixture_report();
    let cfg = &r.body.config;
    let place = |t: &str| pinbench::core::claim::analyse(t).against(cfg);
    assert_eq!(
        place("270M model, 32 input tokens and 8 output tokens, 8 concurrent users: 2,100 tok/s per user"),
        Ok((Some(2100.0), None))
    );
    assert_eq!(
        place("270M model, 32 input tokens, 8 output tokens: 9,000 tok/s aggregate throughput"),
        Ok((None, Some(9000.0)))
    );
    let e = place("270M model, 32 input tokens, 512 output tokens: 2,100 tok/s per user")
        .expect_err("another output length");
    assert!(
        e.iter().any(|w| w.starts_with("differs in output_tokens")),
        "{e:?}"
    );
    let e = place("2,100 tok/s per user on an 8B model").expect_err("lengths open");
    assert!(
        e.iter()
            .any(|w| w == "the claim does not say the prompt length")
            && e.iter().any(|w| w.starts_with("differs in model_params")),
        "{e:?}"
    );
    let e = place("270M model, 32 input tokens, 8 output tokens: 2,100 tok/s").expect_err("scope");
    assert!(
        e.iter()
            .any(|w| w.contains("per stream or for all streams")),
        "{e:?}"
    );
    // The placed claim is drawn as a line on the frontier.
    let f = figures(&r);
    let html = pinbench::core::html::frontier_claim(
        cfg,
        &f,
        "270M model, 32 input tokens and 8 output tokens: 2,100 tok/s per user",
    );
    assert!(
        html.contains(r#"data-state="placed""#) && html.contains("claim: 2100 tok/s per stream"),
        "{html}"
    );
    assert!(pinbench::core::html::frontier_claim(cfg, &f, "  ").is_empty());
}
