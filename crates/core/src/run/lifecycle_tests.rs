//! The lifecycle in virtual time over a simulated server: a discrete-event executor (a
//! pending future waits for a timer; the clock jumps to the earliest one), a server with
//! continuous or static batching, a prefix cache or none, and TPOT that grows with the
//! prompt. No clock, no network.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::*;
use crate::pins::RawField;

/// The simulated server and the host's network and clock.
struct Sim {
    now: Cell<u64>,
    /// When pending futures want to be polled again (a set: a future polled twice asks
    /// for its time once).
    timers: RefCell<BTreeSet<u64>>,
    static_batching: bool,
    prefix_cache: bool,
    /// A static batcher is busy with its batch until then.
    busy_until: Cell<u64>,
    /// Prompts already prefilled (the prefix cache).
    seen: RefCell<Vec<String>>,
    /// Plain answers by method and URL.
    answers: Vec<(&'static str, String, u16, String)>,
    /// Every request, in sending order.
    sent: RefCell<Vec<HttpRequest>>,
    page_https: bool,
}

impl Sim {
    fn new(static_batching: bool, prefix_cache: bool) -> Self {
        Self {
            now: Cell::new(1_000_000),
            timers: RefCell::new(BTreeSet::new()),
            static_batching,
            prefix_cache,
            busy_until: Cell::new(0),
            seen: RefCell::new(Vec::new()),
            answers: Vec::new(),
            sent: RefCell::new(Vec::new()),
            page_https: false,
        }
    }

    /// Waits until the virtual clock reads `t`.
    async fn until(&self, t: u64) {
        poll_fn(|_| {
            if self.now.get() >= t {
                Poll::Ready(())
            } else {
                self.timers.borrow_mut().insert(t);
                Poll::Pending
            }
        })
        .await
    }
}

/// Runs `f` to completion in virtual time.
fn block_on<F: Future>(sim: &Sim, f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        let next = sim
            .timers
            .borrow_mut()
            .pop_first()
            .expect("a pending future waits for a timer");
        sim.now.set(sim.now.get().max(next));
    }
}

fn sse(json: serde_json::Value) -> Vec<u8> {
    format!("data: {json}\n\n").into_bytes()
}

impl Host for Sim {
    fn run_host(&self) -> RunHost {
        RunHost::Native
    }
    fn now_us(&self) -> u64 {
        self.now.get()
    }
    fn random_seed(&self) -> Result<[u8; 32], String> {
        Ok([7; 32])
    }
    fn page_is_https(&self) -> bool {
        self.page_https
    }
    async fn request(&self, req: HttpRequest) -> Result<(u16, String), String> {
        self.sent.borrow_mut().push(req.clone());
        self.answers
            .iter()
            .find(|(m, u, _, _)| *m == req.method && *u == req.url)
            .map(|(_, _, s, b)| (*s, b.clone()))
            .ok_or_else(|| "connection refused".to_owned())
    }
    async fn stream(&self, req: HttpRequest, sink: &mut dyn StreamSink) -> Result<u64, String> {
        self.sent.borrow_mut().push(req.clone());
        let body: serde_json::Value =
            serde_json::from_str(req.body.as_deref().unwrap_or("")).map_err(|e| e.to_string())?;
        let prompt = body["prompt"].as_str().unwrap_or("").to_owned();
        let words = prompt.split_whitespace().count() as u64;
        let n = body["max_tokens"].as_u64().unwrap_or(16);
        let send = self.now.get();
        let cached = self.prefix_cache && self.seen.borrow().contains(&prompt);
        self.seen.borrow_mut().push(prompt);
        let prefill = if cached { 2_000 } else { 20_000 + 5 * words };
        let start = if self.static_batching {
            send.max(self.busy_until.get())
        } else {
            send
        };
        let tpot = 1_000 + words / 4;
        let first = start + prefill;
        let end = first + (n - 1) * tpot + 100;
        if self.static_batching {
            self.busy_until.set(self.busy_until.get().max(end));
        }
        self.until(send + 500).await;
        sink.on_headers(self.now.get(), 200, Some("text/event-stream"));
        for i in 0..n {
            self.until(first + i * tpot).await;
            let finish = if i + 1 == n {
                serde_json::json!("length")
            } else {
                serde_json::Value::Null
            };
            sink.on_bytes(
                self.now.get(),
                &sse(serde_json::json!({"choices": [{"index": 0, "text": " tok", "finish_reason": finish}]})),
            );
        }
        self.until(end).await;
        let mut last = sse(
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": words, "completion_tokens": n}}),
        );
        last.extend_from_slice(b"data: [DONE]\n\n");
        sink.on_bytes(self.now.get(), &last);
        Ok(self.now.get())
    }
    async fn sleep_ms(&self, ms: u32) {
        self.until(self.now.get() + u64::from(ms) * 1000).await;
    }
}

fn target() -> Target {
    Target {
        base_url: "http://127.0.0.1:8000".into(),
        dialect: Dialect::Completions,
        model: "sim".into(),
    }
}

#[test]
fn behaviour_tells_continuous_from_static_batching() {
    for (static_batching, want, pin) in [
        (false, BatchingVerdict::Continuous, "continuous"),
        (true, BatchingVerdict::Static, "static"),
    ] {
        let sim = Sim::new(static_batching, false);
        let b = block_on(&sim, behaviour(&sim, &target(), None)).expect("probes");
        assert_eq!(b.batching, want, "{:?}", b.lines);
        assert_eq!(b.fills.len(), 1);
        assert_eq!(
            (b.fills[0].field, b.fills[0].text.as_str()),
            ("scheduling", pin)
        );
        // A then B, 40 ms apart, then 5 cache requests and 3 slowdown requests.
        assert_eq!(sim.sent.borrow().len(), 10);
    }
}

#[test]
fn behaviour_finds_the_prefix_cache_and_the_decode_slowdown() {
    for (cache, want) in [(true, CacheVerdict::On), (false, CacheVerdict::Off)] {
        let sim = Sim::new(false, cache);
        let b = block_on(&sim, behaviour(&sim, &target(), None)).expect("probes");
        assert_eq!(b.prefix_cache, want, "{:?}", b.lines);
        // TPOT = 1 ms + words / 4 µs: 128 → 3072 prompt words is 1.032 → 1.768 ms.
        let ratio = b.slowdown_ratio.expect("slowdown");
        assert!((ratio - 1768.0 / 1032.0).abs() < 0.02, "{ratio}");
        assert_eq!(b.snapshots.len(), 3);
        assert!(b.snapshots.iter().all(|s| s.url.contains(MEASURED_MARK)));
    }
}

#[test]
fn the_api_key_goes_to_its_own_origin_only() {
    let sim = Sim::new(false, false);
    let own = ApiKey::for_endpoint("sk-1", "http://127.0.0.1:8000").expect("key");
    block_on(&sim, behaviour(&sim, &target(), Some(&own))).expect("probes");
    let auth = |r: &HttpRequest| {
        r.headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .map(|(_, v)| v.clone())
    };
    assert!(sim
        .sent
        .borrow()
        .iter()
        .all(|r| auth(r).as_deref() == Some("Bearer sk-1")));
    let other = ApiKey::for_endpoint("sk-1", "https://api.example.com").expect("key");
    let sim = Sim::new(false, false);
    block_on(&sim, behaviour(&sim, &target(), Some(&other))).expect("probes");
    assert!(sim.sent.borrow().iter().all(|r| auth(r).is_none()));
    assert!(!format!("{other:?}").contains("sk-1"));
    assert_eq!(ApiKey::for_endpoint("  ", "http://h:1"), None);
}

#[test]
fn probe_reads_models_then_the_engines_follow_ups() {
    let mut sim = Sim::new(false, false);
    let base = "http://127.0.0.1:8000";
    sim.answers = vec![
        ("GET", format!("{base}/v1/models"), 200, r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","root":"m","max_model_len":4096}]}"#.into()),
        ("GET", format!("{base}/version"), 200, r#"{"version":"0.11.0"}"#.into()),
    ];
    let p = block_on(&sim, probe(&sim, &format!("{base}/"))).expect("probe");
    assert_eq!(p.engine, Some(Engine::Vllm));
    let urls: Vec<String> = sim.sent.borrow().iter().map(|r| r.url.clone()).collect();
    // /metrics is asked but does not answer: it is left out of the snapshots.
    assert_eq!(
        urls,
        [
            format!("{base}/v1/models"),
            format!("{base}/version"),
            format!("{base}/metrics")
        ]
    );
    assert_eq!(p.snapshots.len(), 2);
    assert!(
        p.snapshots[0].body.contains("\"data[0].id\":\"m\""),
        "{}",
        p.snapshots[0].body
    );
    let engine = p
        .fills
        .iter()
        .find(|f| f.field == "model_engine")
        .expect("engine");
    assert_eq!(engine.text, "vLLM 0.11.0");

    // Pins a file states stay; only open ones take probed values.
    let mut raw = RawConfig {
        model_id: RawField::declared("mine"),
        ..RawConfig::default()
    };
    let changed = apply_fills(&mut raw, &p.fills, FillPolicy::OpenOnly);
    assert_eq!(raw.model_id.text, "mine");
    assert!(!changed.contains(&"model_id"));
    assert!(changed.contains(&"max_model_len"));
    assert_eq!(raw.max_model_len.text, "4096");
    assert!(matches!(
        raw.max_model_len.source,
        Provenance::Probed { .. }
    ));
    apply_fills(&mut raw, &p.fills, FillPolicy::Replace);
    assert_eq!(raw.model_id.text, "m");
}

#[test]
fn probe_errors_say_what_to_do_on_this_host() {
    let mut sim = Sim::new(false, false);
    let e = block_on(&sim, probe(&sim, "ftp://x")).expect_err("bad url");
    assert!(matches!(e, LifecycleError::BadUrl(_)));
    let e = block_on(&sim, probe(&sim, "http://127.0.0.1:9")).expect_err("down");
    assert!(e.to_string().contains("--ca-cert"), "{e}");
    sim.page_https = true;
    let e = block_on(&sim, probe(&sim, "http://127.0.0.1:9")).expect_err("mixed");
    assert_eq!(e, LifecycleError::MixedContent);
}

#[test]
fn snapshots_and_evidence_are_kept_per_endpoint() {
    let read = ProbeSnapshot::new("http://a:1/v1/models", 200, "{}");
    let other = ProbeSnapshot::new("http://b:1/v1/models", 200, "{}");
    let old = ProbeSnapshot::new(
        "http://a:1/v1/completions — measured by pinbench: batching",
        200,
        "{}",
    );
    let new = ProbeSnapshot::new(
        "http://a:1/v1/completions — measured by pinbench: prefix cache",
        200,
        "{}",
    );
    let mut kept = vec![read.clone(), other, old];
    replace_behaviour_evidence(&mut kept, vec![new.clone()]);
    assert_eq!(snapshots_for(&kept, "http://a:1"), [read, new]);
    assert_eq!(
        secrets(
            ApiKey::for_endpoint("k", "http://a:1").as_ref(),
            &[("x".into(), "v".into())]
        ),
        ["k", "v"]
    );
}

#[test]
fn only_fields_a_probe_can_fill_make_a_run_probe() {
    let full = crate::pins::Pins::reference().raw().expect("raw");
    assert!(open_probe_fields(&full).is_empty());
    let open = crate::pins::Pins::reference()
        .open("model_id")
        .open("kv_capacity")
        .raw()
        .expect("raw");
    assert_eq!(open_probe_fields(&open), ["model_id", "kv_capacity"]);
    for f in PROBED_FIELDS {
        assert!(RawConfig::default().field(f).is_some(), "{f}");
    }
}

mod vendors {
    use super::super::*;
    use crate::http::{ApiKey, HttpRequest};
    use crate::pins::{RawField, RunConfig};
    use crate::vendors::VENDORS;

    /// The exact request (method, URL, headers, body) each vendor origin gets.
    #[test]
    fn the_exact_request_for_each_vendor_origin() {
        type Headers = &'static [(&'static str, &'static str)];
        let expect: &[(&str, &str, Headers)] = &[
            ("OpenAI", "https://api.openai.com/v1/responses", &[("authorization", "Bearer k-1")]),
            (
                "Anthropic",
                "https://api.anthropic.com/v1/messages",
                &[
                    ("anthropic-version", "2023-06-01"),
                    ("anthropic-dangerous-direct-browser-access", "true"),
                    ("x-api-key", "k-1"),
                ],
            ),
            (
                "Google Gemini",
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                &[("x-goog-api-key", "k-1")],
            ),
            ("Together AI", "https://api.together.xyz/v1/chat/completions", &[("authorization", "Bearer k-1")]),
            ("Fireworks AI", "https://api.fireworks.ai/inference/v1/chat/completions", &[("authorization", "Bearer k-1")]),
            ("Groq", "https://api.groq.com/openai/v1/chat/completions", &[("authorization", "Bearer k-1")]),
            ("OpenRouter", "https://openrouter.ai/api/v1/chat/completions", &[("authorization", "Bearer k-1")]),
            ("DeepSeek", "https://api.deepseek.com/v1/chat/completions", &[("authorization", "Bearer k-1")]),
            ("Mistral AI", "https://api.mistral.ai/v1/chat/completions", &[("authorization", "Bearer k-1")]),
        ];
        assert_eq!(expect.len(), VENDORS.len());
        for (name, url, auth) in expect {
            let v = VENDORS
                .iter()
                .find(|v| v.name == *name)
                .expect("in the table");
            let mut raw = crate::pins::Pins::reference()
                .endpoint(&v.base_url())
                .set("model_id", "gemini-2.5-flash")
                .raw()
                .expect("raw");
            crate::lifecycle::apply_fills(
                &mut raw,
                &crate::probe::vendor_fills(v),
                crate::lifecycle::FillPolicy::Replace,
            );
            let cfg = RunConfig::try_from(&raw).expect("the vendor's fills pin");
            let dialect = cfg.endpoint.dialect;
            let target = format!(
                "{}{}",
                cfg.endpoint.base_url,
                dialect.path("gemini-2.5-flash")
            );
            assert_eq!(target, *url, "{name}");
            let key = ApiKey::for_endpoint("k-1", &v.base_url()).expect("key");
            let req = HttpRequest::stream(dialect, target, "{}".into(), Some(&key));
            let mut want = vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("accept".to_owned(), "text/event-stream".to_owned()),
            ];
            want.extend(auth.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            assert_eq!((req.method, &req.headers), ("POST", &want), "{name}");
            // The vendor's undisclosed pins say so, with why.
            for (field, why) in v.undisclosed {
                let f = raw.field(field).expect("field");
                assert_eq!(f.text, "undisclosed");
                assert_eq!(
                    f.source,
                    Provenance::Vendor {
                        vendor: v.name.into(),
                        why: why.to_string()
                    }
                );
            }
            assert_eq!(
                raw.field("output_enforcement").map(|f| f.text.as_str()),
                Some("none")
            );
        }
    }

    #[test]
    fn a_blocked_request_names_what_the_vendor_allows_and_the_native_command() {
        let mut raw = crate::pins::Pins::reference()
            .endpoint("https://api.anthropic.com")
            .set("dialect", "messages")
            .set("model_id", "claude-x")
            .raw()
            .expect("raw");
        // A quote in a pin is kept intact by the shell quoting.
        if let Some(f) = raw.field_mut("sampling_extra") {
            *f = RawField::declared(r#"{"stop":["it's"]}"#.to_owned());
        }
        let text = blocked_text(&raw);
        assert!(text.starts_with("The browser blocked requests to https://api.anthropic.com. Anthropic answers browsers only with the header anthropic-dangerous-direct-browser-access: true"), "{text}");
        let cmd = native_command(&raw);
        assert!(text.ends_with(&cmd));
        assert!(
            cmd.starts_with("pinbench run --pins <(printf '%s' '{"),
            "{cmd}"
        );
        assert!(
            cmd.ends_with("}') --api-key-env ANTHROPIC_API_KEY --out pinbench-report.json"),
            "{cmd}"
        );
        assert!(cmd.contains(r#"[\"it'\''s\"]"#), "{cmd}");
        // The inline pins are the form's share JSON: read back, they are the same pins.
        let inner = cmd
            .split_once("printf '%s' ")
            .map(|(_, r)| {
                r.rsplit_once(") --api-key-env")
                    .map(|(p, _)| p)
                    .unwrap_or("")
            })
            .unwrap_or("");
        let unquoted = inner
            .trim_start_matches('\'')
            .trim_end_matches('\'')
            .replace(r"'\''", "'");
        assert_eq!(unquoted, raw.to_share_json());
        // An unknown origin gets the servers' flags and a generic key variable.
        let raw = crate::pins::Pins::reference().raw().expect("raw");
        let text = blocked_text(&raw);
        assert!(
            text.contains("vLLM --allowed-origins")
                && text.contains("--api-key-env PINBENCH_API_KEY"),
            "{text}"
        );
    }

    #[test]
    fn the_native_form_runs_the_same_pins() {
        let raw = crate::pins::Pins::reference()
            .set("reasoning", "hidden effort=high")
            .raw()
            .expect("raw");
        let cfg = RunConfig::try_from(&raw).expect("pinned");
        let mut native = native_form(&cfg);
        // What the native run's probe fills: the server pins.
        for name in PROBED_FIELDS
            .iter()
            .filter(|n| **n != "model_id" && **n != "reasoning")
        {
            if let (Some(f), Some(from)) = (native.field_mut(name), raw.field(name)) {
                *f = from.clone();
            }
        }
        let again = RawConfig::from_share_json(&native.to_share_json()).expect("share json");
        assert_eq!(RunConfig::try_from(&again).expect("pinned"), cfg);
    }
}
