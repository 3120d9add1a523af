//! The native host (`pinbench run`) against the real reference server, over HTTP/2 (TLS,
//! the server's own certificate trusted with `--ca-cert`) and HTTP/1.1: the report is
//! signed and recomputes, every request yields one record with the exact requested
//! lengths, and the client's TTFT and aggregate agree with the server's truth.

mod common;

use common::{get, native_run as run, Server, Tmp};
use pinbench::core::pins::Pins;

/// Every run that loads the machine takes its turn (tests of one binary run in parallel;
/// two cores shared by client and server are already contended, and a second run beside
/// the timing comparison shows up as its error).
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn pins(base: &str, concurrency: u32, windows: (&str, &str, &str)) -> String {
    Pins::reference()
        .endpoint(base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("phases", "colocated"),
        ])
        .lengths(64, 32)
        .concurrency(concurrency)
        .windows(windows.0, windows.1, windows.2)
        .share_json()
        .expect("pins")
}

#[test]
fn native_run_over_h2_matches_the_truth() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("h2");
    let server = Server::start(&["--cert-out", &tmp.path("cert.der")]);
    // One run, no retry (the llama-server build of CI runs at the lowest priority).
    let within = |d: &[u64]| d[15] < 5_000 && d[28] < 15_000 && d[31] < 100_000;
    let diffs = h2_ttft_differences(&tmp, &server, "first");
    let (median, p90, worst) = (diffs[15], diffs[28], diffs[31]);
    assert!(
        within(&diffs),
        "client TTFT against the server's: median {median} µs, p90 {p90} µs, worst {worst} µs \
         (all: {diffs:?})"
    );
}

/// One native run of 48 requests at c=8 over HTTP/2 (TLS): checks its records, then
/// returns each measured request's client TTFT against the server's own, sorted (µs).
/// The difference is the loopback transfer both ways plus the scheduling delay of two
/// processes on a shared 2-core machine: the median within 5 ms, 90 % within 15 ms, and
/// none beyond 100 ms (a single preempted wake-up on a loaded CI machine was measured at
/// 37 ms).
fn h2_ttft_differences(tmp: &Tmp, server: &Server, name: &str) -> Vec<u64> {
    let base = format!("https://127.0.0.1:{}", server.tls_port);
    let r = run(
        &Tmp::new(&format!("h2-{name}")),
        &pins(&base, 8, ("8", "32", "8")),
        &["--ca-cert", &tmp.path("cert.der")],
    );
    let b = &r.body;
    assert_eq!(b.records.len(), 48, "one record per dispatched request");
    assert!(b
        .records
        .iter()
        .all(|x| x.outcome.is_ok() && x.protocol.as_deref() == Some("h2")));
    assert!(b
        .records
        .iter()
        .all(|x| x.output_tokens() == 32 && x.chunk_tokens() == 32));
    let figures = b.figures().expect("figures");
    let step = &figures.steps[0];
    assert_eq!(
        step.prompt_len.exact, step.prompt_len.known,
        "exact prompt lengths: {:?}",
        step.prompt_len
    );
    assert_eq!(
        b.client.env.host,
        Some(pinbench::core::metrics::RunHost::Native)
    );
    assert!(!b.client.invalid, "{:?}", b.client.findings);
    let truth: Vec<serde_json::Value> =
        serde_json::from_slice(&get(server.port, "/truth").body).expect("truth JSON");
    let mut diffs: Vec<u64> = b
        .records
        .iter()
        .filter(|x| {
            !step.requests.warmup.contains(&x.index) && !step.requests.cooldown.contains(&x.index)
        })
        .map(|rec| {
            let id = rec
                .response_id
                .as_deref()
                .and_then(|s| s.strip_prefix("cmpl-"))
                .expect("response id");
            let t = truth
                .iter()
                .find(|t| t["id"].as_u64().map(|n| n.to_string()).as_deref() == Some(id))
                .expect("a truth record per request");
            let server_ttft = t["first_token_us"].as_u64().expect("first token")
                - t["received_us"].as_u64().expect("received");
            let client_ttft = rec.chunks[0].t_us - rec.t_send_us;
            client_ttft.abs_diff(server_ttft)
        })
        .collect();
    diffs.sort_unstable();
    assert_eq!(diffs.len(), 32, "one difference per measured request");
    diffs
}

#[test]
fn native_run_over_http1_opens_a_connection_per_stream() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("h1");
    let server = Server::start(&[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let r = run(&tmp, &pins(&base, 4, ("0", "16", "0")), &[]);
    let b = &r.body;
    assert_eq!(b.records.len(), 16);
    assert!(b
        .records
        .iter()
        .all(|x| x.outcome.is_ok() && x.protocol.as_deref() == Some("http/1.1")));
    let figures = b.figures().expect("figures");
    let c = &figures.steps[0].concurrency;
    assert_eq!(c.achieved_max, 4, "4 streams on the wire at once: {c:?}");
}

#[test]
fn an_unpinned_file_is_refused_with_every_missing_pin() {
    let tmp = Tmp::new("unpinned");
    std::fs::write(
        tmp.path("pins.json"),
        r#"{"endpoint_url": "http://127.0.0.1:9"}"#,
    )
    .expect("written");
    let args: Vec<String> = [
        "--pins",
        &tmp.path("pins.json"),
        "--key",
        &tmp.path("key.json"),
        "--no-probe",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let err = pinbench::native::cli::run_args(&args)
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("not every pin is set")
            && err.contains("model id is missing")
            && err.contains("load mode is missing"),
        "{err}"
    );
}

/// Prompt lengths are exact under the server's own count (BOS and, for chat, its
/// template included): every request's `usage.prompt_tokens` equals the requested length,
/// at 128, 4096 and 8192 tokens, on both APIs.
#[test]
fn prompt_lengths_are_exact_with_bos_and_chat_template() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("attainment");
    let server = Server::start(&["--profile", "70b-8xh100", "--zero-step-cost"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    for dialect in ["completions", "chat"] {
        for tokens in [128u32, 4096, 8192] {
            let mut p: serde_json::Value =
                serde_json::from_str(&pins(&base, 1, ("0", "3", "0"))).expect("pins");
            p["dialect"] = dialect.into();
            p["model_id"] = "llama-3.1-70b-sim".into();
            p["prompt_tokens"] = tokens.to_string().into();
            p["output_tokens"] = "4".into();
            p["max_model_len"] = "16384".into();
            let r = run(&tmp, &p.to_string(), &[]);
            let got: Vec<u64> = r
                .body
                .records
                .iter()
                .map(|x| x.usage.map_or(0, |u| u.prompt_tokens))
                .collect();
            assert_eq!(got, vec![u64::from(tokens); 3], "{dialect} {tokens}");
            let figures = r.body.figures().expect("figures");
            let step = &figures.steps[0];
            assert_eq!((step.prompt_len.exact, step.prompt_len.known), (3, 3));
        }
    }
}

#[test]
fn throttled_answers_reach_the_server_verdict() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("server-verdict");
    // Every 4th request is refused with 429 (Retry-After and OpenAI's rate-limit headers).
    let server = Server::start(&[
        "--prefix-cache",
        "on",
        "--fault",
        "status=429",
        "--fault-every",
        "4",
    ]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let pins = Pins::reference()
        .endpoint(&base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("phases", "colocated"),
            ("nonce_prefix", "off"),
        ])
        .lengths(64, 16)
        .concurrency(2)
        .windows("2", "12", "2")
        .share_json()
        .expect("pins");
    let report = run(&tmp, &pins, &[]);
    let truths: serde_json::Value =
        serde_json::from_slice(&get(server.port, "/truth").body).expect("truth");
    let truths = truths.as_array().expect("a list");
    let refused = truths.iter().filter(|t| t["status"] == 429).count();
    assert!(refused >= 3, "the server refused {refused}");
    let throttled: Vec<_> = report
        .body
        .records
        .iter()
        .filter_map(|r| r.throttle.as_ref())
        .collect();
    assert_eq!(
        throttled.len(),
        refused,
        "every refusal recorded as throttled"
    );
    for t in &throttled {
        assert_eq!(
            (t.signal.as_str(), t.retry_after_ms),
            ("http_429", Some(1000))
        );
        assert_eq!(
            t.headers
                .get("x-ratelimit-remaining-requests")
                .map(String::as_str),
            Some("0")
        );
    }
    let v = pinbench::core::server::verdict(&report.body.records, &report.body.config);
    let t = v.throttling.clone().expect("throttling");
    assert_eq!(t.throttled as usize, refused);
    // The prompts differ from their first word (nonce off, but each prompt's words start
    // at its own offset): the server's block cache never hits, and says so in every answer.
    let c = v.cache.clone().expect("a server with a cache reports it");
    assert!(
        truths.iter().all(|t| t["cached_tokens"] == 0) && (c.cached_tokens, c.hits) == (0, 0),
        "no cached tokens: {c:?}"
    );
    let text = pinbench::core::view::report_text(&report, &report.body.figures().expect("figures"));
    assert!(
        text.contains("server verdict: the server shaped this run")
            && text.contains(&format!("refused or cut {refused} of")),
        "{text}"
    );
}

/// `pinbench watch --every 3s --count 3`: three signed reports in the directory, each
/// named by its start, all of the same pins, each recomputing; no run starts before its
/// time (the schedule is fixed from the first start).
#[test]
fn watch_writes_a_signed_report_per_scheduled_run() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("watch");
    let server = Server::start(&[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    std::fs::write(tmp.path("pins.json"), pins(&base, 2, ("0", "4", "0"))).expect("pins");
    let dir = tmp.path("reports");
    let args: Vec<String> = [
        "--every",
        "3s",
        "--dir",
        &dir,
        "--count",
        "3",
        "--pins",
        &tmp.path("pins.json"),
        "--key",
        &tmp.path("key.json"),
        "--new-key",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    pinbench::native::cli::watch_args(&args).expect("every run wrote its report");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    // Three reports, and the series of their cards (the card page's trend line).
    let series = files
        .pop()
        .filter(|f| f.ends_with(pinbench::core::series::SERIES_FILE))
        .expect("the series file");
    assert_eq!(files.len(), 3, "{files:?}");
    let view = pinbench::core::series::view_of_series(
        &std::fs::read_to_string(&series).expect("series"),
        &Default::default(),
        str::to_owned,
    )
    .expect("the series reads");
    assert_eq!(view.points.len(), 3, "{:?}", view.left_out);
    assert_eq!(
        Some(view.latest.full_link.as_str()),
        files[2].file_name().and_then(|n| n.to_str())
    );
    let mut configs = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(
            name.starts_with("pinbench-") && name.ends_with("Z.json"),
            "{name}"
        );
        let opened = pinbench::core::report::open(&std::fs::read_to_string(f).expect("report"))
            .expect("opens");
        assert!(matches!(
            opened.verification,
            pinbench::core::report::Verification::Valid { .. }
        ));
        assert!(pinbench::core::report::recompute(&opened.report)
            .expect("recomputes")
            .is_empty());
        assert_eq!(opened.report.body.records.len(), 4);
        configs.push(serde_json::to_string(&opened.report.body.config).expect("json"));
        let created = &opened.report.body.created;
        assert!(created.ends_with('Z'), "{created}");
    }
    assert!(configs.windows(2).all(|c| c[0] == c[1]), "the same pins");
    // The reports' creation instants, in order, at least the interval apart.
    let created: Vec<u64> = files
        .iter()
        .map(|f| {
            let name = f.file_name().and_then(|n| n.to_str()).expect("name");
            let t = &name["pinbench-".len().."pinbench-".len() + 15];
            let (h, m, s) = (&t[9..11], &t[11..13], &t[13..15]);
            [h, m, s]
                .iter()
                .map(|v| v.parse::<u64>().expect("digits"))
                .fold(0, |a, v| a * 60 + v)
        })
        .collect();
    for w in created.windows(2) {
        // Whole seconds in the names: a start 3 s after the last is 2–4 named seconds on.
        let d = (w[1] + 86_400 - w[0]) % 86_400;
        assert!(
            d >= 2,
            "runs started {d} s apart, every 3 s asked: {created:?}"
        );
    }
}

/// The pins of the SLO searches against a server of 4 sequences (`--max-num-seqs 4`),
/// with `load` (the loop and its load): 128 output tokens, so a request holds its slot
/// long enough that each request past the fourth waits tens of ms for one, against TTFTs
/// of a few ms below the knee; 4 warm-up and 24 measured requests per probe.
fn knee_pins(base: &str, load: &[(&str, &str)]) -> String {
    Pins::reference()
        .endpoint(base)
        .with(&[
            ("prompt_exactness", "server_tokenizer"),
            ("stall_timeout_s", "30"),
            ("phases", "colocated"),
        ])
        .with(load)
        .lengths(64, 128)
        .windows("4", "24", "0")
        .share_json()
        .expect("pins")
}

/// An SLO search (`pinbench run --search`) against a server that runs at most 4 sequences
/// at once (`--max-num-seqs 4`; a fifth request waits for a slot to free): TTFT p99 ≤
/// 35 ms holds up to concurrency 4 and breaks past it. The search finds 4 to within its
/// resolution of 1, the report's load steps are its probes in order, and verification
/// judges the probes again from the records.
#[test]
fn an_slo_search_finds_the_servers_knee() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("search");
    let server = Server::start(&["--max-num-seqs", "4"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let search_pins = knee_pins(&base, &[("concurrency", "1")]);
    let report = run(
        &tmp,
        &search_pins,
        &["--search", "ttft:p99<=35ms", "--search-max", "32"],
    );
    let search = report.body.search.as_ref().expect("the search is kept");
    let probes: Vec<(u32, Option<u64>, bool)> = search
        .probes
        .iter()
        .map(|p| (p.load, p.values_us[0], p.met))
        .collect();
    eprintln!(
        "search probes (concurrency, TTFT p99 µs, met): {probes:?}; found {:?}",
        search.found
    );
    assert_eq!(search.found, Some(4), "{probes:?}");
    let loads: Vec<u32> = report
        .body
        .config
        .load
        .value
        .steps
        .iter()
        .map(|s| s.max_concurrency())
        .collect();
    assert_eq!(
        loads,
        search.probes.iter().map(|p| p.load).collect::<Vec<_>>()
    );
    // The report says what the search found and lists its probes; the answer's step has
    // its goodput under the search's own limit (every measured request met it there).
    let figures = report.body.figures().expect("figures");
    let at = search
        .probes
        .iter()
        .position(|p| p.load == 4)
        .expect("a probe at 4");
    let goodput = figures.steps[at].goodput.as_ref().expect("goodput");
    assert_eq!(goodput.slo.ttft_us, Some(35_000));
    assert!(
        goodput.rps_milli > 0 && goodput.met == goodput.judged,
        "{goodput:?}"
    );
    let html = pinbench::core::html::report_body(&report, Ok(&figures));
    assert!(
        html.contains("the largest load meeting every SLO is concurrency 4")
            && html.contains("data-testid=\"search-probes\""),
        "the viewer shows the search"
    );
    // A probe's verdict changed after signing is caught by the recomputation.
    let mut forged = report.clone();
    if let Some(s) = forged.body.search.as_mut() {
        s.found = Some(8);
    }
    let m = pinbench::core::report::recompute(&forged).expect("recomputes");
    assert!(m.iter().any(|m| m.path == "search.found"), "{m:?}");
}

/// An SLO search by request rate (an open loop's `rate_rps`; its arrivals and in-flight
/// cap kept): each probe is an open-loop step at its rate, the search ends, the answer met
/// the SLO and the next rate above it did not, and the answer agrees with the server's
/// capacity as measured at the lowest probe (4 slots ÷ a lone request's time).
///
/// The arrivals are near-constant (gamma, shape 400: inter-arrival CV 5 %) so a rate well
/// below capacity never finds the 4 slots full. Poisson arrivals made this test flaky: a
/// burst of five arrivals inside one request's time queues the fifth, and TTFT p99 over 24
/// requests is their maximum (CI saw 134 ms at 4 req/s for a 100 ms target).
#[test]
fn an_slo_search_by_rate_probes_open_loop_steps() {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Tmp::new("search-rate");
    let server = Server::start(&["--max-num-seqs", "4"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let pins = knee_pins(
        &base,
        &[
            ("load_mode", "open"),
            ("rate_rps", "1"),
            ("arrival", "gamma(400)"),
            ("in_flight_cap", "64"),
        ],
    );
    let report = run(
        &tmp,
        &pins,
        &[
            "--search",
            "ttft:p99<=100ms",
            "--search-min",
            "4",
            "--search-max",
            "64",
            "--search-resolution",
            "2",
        ],
    );
    let search = report.body.search.as_ref().expect("the search is kept");
    let probes: Vec<(u32, Option<u64>, bool)> = search
        .probes
        .iter()
        .map(|p| (p.load, p.values_us[0], p.met))
        .collect();
    eprintln!(
        "rate search probes (req/s × 1000, TTFT p99 µs, met): {probes:?}; found {:?}",
        search.found
    );
    let figures = report.body.figures().expect("figures");
    let e2e_mean_us: Vec<u64> = figures
        .steps
        .iter()
        .map(|s| s.e2e_us.as_ref().map_or(0, |d| d.mean))
        .collect();
    eprintln!("E2E mean per probe (µs): {e2e_mean_us:?}");
    assert_eq!(
        search.plan.dimension,
        pinbench::core::search::SearchDimension::RateMilliRps
    );
    for (step, p) in report
        .body
        .config
        .load
        .value
        .steps
        .iter()
        .zip(&search.probes)
    {
        assert!(
            matches!(step, pinbench::core::pins::LoadStep::Open { rate_milli_rps, in_flight_cap: 64, .. } if *rate_milli_rps == u64::from(p.load)),
            "{step:?}"
        );
    }
    let found = search.found.expect("a rate meets it");
    let above = search
        .probes
        .iter()
        .filter(|p| !p.met)
        .map(|p| p.load)
        .min()
        .expect("a rate past the server's capacity misses");
    assert!(above > found && above - found <= 2000, "{probes:?}");
    // Capacity from the lowest probe, where each request ran alone: 4 slots ÷ its E2E.
    // It is an upper bound (a fuller batch makes each step slower), so no rate above it
    // can keep TTFT low: the queue grows through the whole step.
    let lone_us = e2e_mean_us[0];
    assert!(lone_us > 0, "{e2e_mean_us:?}");
    let capacity_milli = 4 * 1_000_000_000 / lone_us;
    assert!(
        u64::from(found) <= capacity_milli,
        "found {found} milli-req/s above the server's capacity {capacity_milli}: {probes:?}"
    );
    // A rate that fills at most half the slots (rate × lone E2E ≤ 2) never waits for one
    // with near-constant arrivals: every such probe meets the SLO.
    for p in &search.probes {
        if u64::from(p.load) * lone_us <= 2 * 1_000_000_000 {
            assert!(
                p.met,
                "{} milli-req/s fills at most 2 of 4 slots: {probes:?}",
                p.load
            );
        }
    }
}
