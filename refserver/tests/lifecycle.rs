//! The core's lifecycle driven by the native host (what `pinbench probe`, `pinbench
//! behaviour` and `pinbench run` do) against the real reference server: the probe fills
//! every server pin with its source, a pins file with open pins is probed before it runs,
//! the behaviour probes tell the server's batching and prefix cache, and a native run over
//! http:// at c=32 is judged by the native host's limits (no browser connection cap).

mod common;

use common::{native_run, Server, Tmp};
use pinbench::core::behaviour::{BatchingVerdict, CacheVerdict};
use pinbench::core::dialect::Dialect;
use pinbench::core::lifecycle::{self, Target};
use pinbench::core::pins::{Pins, Provenance};
use pinbench::core::report;
use pinbench::native::host::NativeHost;

/// One lifecycle at a time: the behaviour probes decide from timings.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tokio::task::LocalSet::new().block_on(&rt, f)
}

#[test]
fn the_probe_fills_every_server_pin_with_its_source() {
    let server = Server::start(&[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let host = NativeHost::new(None, None);
    let p = block_on(lifecycle::probe(&host, &base)).expect("probe");
    let mut fields: Vec<&str> = p.fills.iter().map(|f| f.field).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "kv_capacity",
            "max_model_len",
            "max_num_seqs",
            "model_engine",
            "model_id",
            "model_params",
            "model_quant",
            "phases",
            "reasoning",
            "scheduling"
        ]
    );
    let models = format!("{base}/v1/models");
    assert!(p.fills.iter().all(|f| matches!(
        &f.provenance,
        Provenance::Probed { url, .. } if *url == models
    )));
    assert_eq!(p.snapshots.len(), 1);
    assert_eq!(p.snapshots[0].url, models);
    // A server that is not there: the native host's hint, not the browser's CORS one.
    let e = block_on(lifecycle::probe(&host, "http://127.0.0.1:9")).expect_err("down");
    assert!(e.to_string().contains("--ca-cert"), "{e}");
}

#[test]
fn the_behaviour_probes_tell_batching_and_the_prefix_cache() {
    let _turn = alone();
    for (args, batching, cache) in [
        (
            &["--prefix-cache", "on"][..],
            BatchingVerdict::Continuous,
            CacheVerdict::On,
        ),
        (
            &["--batching", "static"][..],
            BatchingVerdict::Static,
            CacheVerdict::Off,
        ),
    ] {
        let server = Server::start(args);
        let target = Target {
            base_url: format!("http://127.0.0.1:{}", server.port),
            dialect: Dialect::Completions,
            model: "pinbench-tiny".into(),
        };
        let host = NativeHost::new(None, None);
        let b = block_on(lifecycle::behaviour(&host, &target, None)).expect("probes");
        assert_eq!(
            (b.batching, b.prefix_cache),
            (batching, cache),
            "{args:?}: {:?}",
            b.lines
        );
        assert_eq!(b.fills.len(), 1, "the scheduling pin: {:?}", b.fills);
        assert!(b.slowdown_ratio.is_some_and(|r| r > 1.0), "{:?}", b.lines);
    }
}

fn run(tmp: &Tmp, pins: &serde_json::Value, extra: &[&str]) -> report::Report {
    native_run(tmp, &pins.to_string(), extra)
}

/// The workload pins only; every server pin is left for the probe.
fn workload(base: &str, concurrency: u32, measured: u32) -> serde_json::Value {
    let mut p = Pins::reference()
        .endpoint(base)
        .concurrency(concurrency)
        .windows("0", &measured.to_string(), "0");
    for server_pin in lifecycle::PROBED_FIELDS {
        p = p.open(server_pin);
    }
    serde_json::from_str(&p.share_json().expect("pins")).expect("JSON")
}

#[test]
fn a_run_probes_the_pins_its_file_leaves_open() {
    let _turn = alone();
    let tmp = Tmp::new("open");
    let server = Server::start(&[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let mut pins = workload(&base, 2, 8);
    // What the file states stays stated, even where the server says otherwise.
    pins["max_num_seqs"] = "8".into();
    let r = run(&tmp, &pins, &[]);
    let c = &r.body.config;
    assert_eq!(c.model.id.value, "pinbench-tiny");
    assert!(matches!(c.model.id.provenance, Provenance::Probed { .. }));
    assert_eq!(
        c.kv.max_num_seqs.value,
        pinbench::core::pins::Disclosure::Value(8)
    );
    assert!(matches!(
        c.kv.max_num_seqs.provenance,
        Provenance::Declared {}
    ));
    assert_eq!(r.body.probes.len(), 1, "the read is kept as evidence");
    assert_eq!(r.body.records.len(), 8);
    // Told not to probe, the same file is refused with what is missing.
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
    let e = pinbench::native::cli::run_args(&args).expect_err("open pins");
    assert!(e.to_string().contains("model id is missing"), "{e}");
}

#[test]
fn a_native_run_over_http_at_c32_is_judged_by_native_limits() {
    let _turn = alone();
    let tmp = Tmp::new("c32");
    let server = Server::start(&[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let r = run(&tmp, &workload(&base, 32, 64), &[]);
    let b = &r.body;
    assert_eq!(b.records.len(), 64);
    assert!(b
        .records
        .iter()
        .all(|x| x.outcome.is_ok() && x.protocol.as_deref() == Some("http/1.1")));
    let figures = b.figures().expect("figures");
    let c = &figures.steps[0].concurrency;
    assert_eq!(c.achieved_max, 32, "32 on the wire at once: {c:?}");
    assert!(!b.client.invalid, "{:?}", b.client.findings);
    assert!(
        b.client
            .findings
            .iter()
            .all(|f| !f.contains("6 connections")),
        "{:?}",
        b.client.findings
    );
}
