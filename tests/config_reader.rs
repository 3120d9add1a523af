//! `RunConfig`'s reader (`core::pins` reads it through a JSON tree, one small function per
//! type) accepts and refuses exactly what serde's derived reader does. The oracle is a
//! struct with the same fields deriving `Deserialize` over the same member types. The
//! corpus: varied valid configurations, and each of them mutated at every value — the
//! member removed, an unknown member added, the value replaced by every JSON type, a
//! number out of range, another `kind` — about 5,000 documents.

use pinbench::core::dialect::{Dialect, LengthEnforcement};
use pinbench::core::pins::{
    CachePolicy, Endpoint, KvPin, LengthDist, Load, ModelPin, PhaseMode, Pinned, PromptExactness,
    RunConfig, Sampling, Scheduling, WindowPlan,
};
use serde::Deserialize;
use serde_json::{json, Value};

mod common;
use common::{at_mut, paths};

/// The derived reader: `RunConfig`'s fields, read by serde.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Derived {
    endpoint: Endpoint,
    model: ModelPin,
    prompt_len: Pinned<LengthDist>,
    prompt_exactness: Pinned<PromptExactness>,
    output_len: Pinned<LengthDist>,
    output_enforcement: Pinned<LengthEnforcement>,
    load: Pinned<Load>,
    kv: KvPin,
    phases: Pinned<PhaseMode>,
    scheduling: Pinned<Scheduling>,
    window: Pinned<WindowPlan>,
    cache: Pinned<CachePolicy>,
    sampling: Pinned<Sampling>,
}

impl From<Derived> for RunConfig {
    fn from(d: Derived) -> Self {
        RunConfig {
            endpoint: d.endpoint,
            model: d.model,
            prompt_len: d.prompt_len,
            prompt_exactness: d.prompt_exactness,
            output_len: d.output_len,
            output_enforcement: d.output_enforcement,
            load: d.load,
            kv: d.kv,
            phases: d.phases,
            scheduling: d.scheduling,
            window: d.window,
            cache: d.cache,
            sampling: d.sampling,
        }
    }
}

/// A fixture report's configuration, and variants that reach every type and variant.
fn valid_configs() -> Vec<Value> {
    let report: Value =
        serde_json::from_str(include_str!("fixtures/report_signed.json")).expect("fixture");
    let base = report["body"]["config"].clone();
    let mut out = vec![base.clone()];
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
    v["scheduling"]["value"] = json!({"static": null});
    v["prompt_exactness"]["value"] = json!("usage_calibrated");
    v["output_enforcement"]["value"] = json!("both");
    v["cache"]["value"] = json!({"nonce_prefix": false});
    out.push(v);
    out
}

/// The documents: each valid configuration, and its mutations.
fn corpus() -> Vec<Value> {
    mutations(valid_configs())
}

/// Each of `bases`, and its mutations at every value (`common::mutations`, with the
/// configuration's `kind`s).
fn mutations(bases: Vec<Value>) -> Vec<Value> {
    const KINDS: [&str; 14] = [
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
        "nope",
    ];
    common::mutations(bases, &KINDS, |_| true)
}

#[test]
fn the_reader_accepts_and_refuses_what_serde_derive_does() {
    let docs = corpus();
    assert!(docs.len() > 4_000, "corpus of {}", docs.len());
    let (mut accepted, mut refused) = (0, 0);
    for doc in &docs {
        let text = doc.to_string();
        let ours = serde_json::from_str::<RunConfig>(&text);
        let derived = serde_json::from_str::<Derived>(&text).map(RunConfig::from);
        match (&ours, &derived) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{text}");
                accepted += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            _ => panic!(
                "the readers disagree on {text}:\n ours: {:?}\n derived: {:?}",
                ours.as_ref().map(|_| ()),
                derived.as_ref().map(|_| ())
            ),
        }
    }
    eprintln!(
        "{} documents: {accepted} accepted, {refused} refused",
        docs.len()
    );
    assert!(
        accepted >= 20 && refused >= 1_000,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn a_refusal_names_the_value_and_what_is_wrong() {
    let base = valid_configs().remove(1);
    let cases: [(&[&str], Value, &str); 6] = [
        (&["kv", "capacity", "value"], json!({"value": {"kind": "litres"}}), "kv: capacity: value: value: unknown variant `litres`, expected one of `tokens`, `gpu_memory_utilization`"),
        (&["load", "value", "steps", "1", "arrival"], json!({"kind": "gamma"}), "load: value: steps: [1].arrival: missing field `shape_milli`"),
        (&["window", "value", "measured"], json!({"kind": "requests", "count": 3, "ms": 4}), "window: value: measured: unknown field `ms`, expected `count`"),
        (&["prompt_len", "value"], json!({"kind": "fixed", "tokens": -5}), "prompt_len: value: tokens: invalid value: number `-5`, expected u32"),
        (&["scheduling", "value"], json!("eager"), "scheduling: value: unknown variant `eager`, expected one of `continuous`, `static`, `undisclosed`"),
        (&["endpoint"], json!({"base_url": "http://h"}), "endpoint: missing field `dialect`"),
    ];
    for (path, value, says) in cases {
        let mut v = base.clone();
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        *at_mut(&mut v, &path) = value;
        let e = serde_json::from_str::<RunConfig>(&v.to_string())
            .expect_err(says)
            .to_string();
        assert!(e.starts_with(says), "{e}\n  wanted: {says}");
    }
    // And what both accept reads the same, for the variants the corpus starts from.
    for v in valid_configs() {
        let cfg: RunConfig = serde_json::from_str(&v.to_string()).expect("valid");
        assert_eq!(
            serde_json::to_value(&cfg).expect("ser")["endpoint"]["dialect"],
            v["endpoint"]["dialect"]
        );
        assert!(matches!(
            cfg.endpoint.dialect,
            Dialect::Completions | Dialect::Chat
        ));
    }
}

/// A load step, as a card's step and the configuration read it (`read::load_step`, through
/// `deserialize_load_step`): it accepts and refuses what `LoadStep`'s serde reader does.
#[test]
fn a_cards_load_step_reads_as_serde_reads_it() {
    use pinbench::core::pins::LoadStep;
    #[derive(Deserialize)]
    struct Ours {
        #[serde(deserialize_with = "pinbench::core::pins::deserialize_load_step")]
        load: LoadStep,
    }
    #[derive(Deserialize)]
    struct Derived {
        load: LoadStep,
    }
    let valid = [
        json!({"kind": "closed", "concurrency": 4}),
        json!({"kind": "open", "rate_milli_rps": 2500, "arrival": {"kind": "gamma", "shape_milli": 700}, "in_flight_cap": 64}),
        json!({"kind": "open", "rate_milli_rps": 1000, "arrival": {"kind": "poisson"}, "in_flight_cap": 8}),
    ];
    let mut docs = Vec::new();
    for base in valid {
        let mut all = Vec::new();
        paths(&base, &mut Vec::new(), &mut all);
        docs.push(base.clone());
        for path in all {
            for r in [
                json!(null),
                json!(-1),
                json!(1.5),
                json!(4_294_967_296u64),
                json!("open"),
                json!({}),
                json!({"kind": "poisson"}),
                json!({"kind": "gamma", "shape_milli": 1, "x": 1}),
            ] {
                let mut v = base.clone();
                *at_mut(&mut v, &path) = r;
                docs.push(v);
            }
        }
    }
    let (mut accepted, mut refused) = (0, 0);
    for d in &docs {
        let text = json!({ "load": d }).to_string();
        match (
            serde_json::from_str::<Ours>(&text),
            serde_json::from_str::<Derived>(&text),
        ) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.load, b.load, "{text}");
                accepted += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            (a, b) => panic!(
                "the readers disagree on {text}: {:?} vs {:?}",
                a.is_ok(),
                b.is_ok()
            ),
        }
    }
    assert!(
        accepted >= 3 && refused >= 40,
        "{accepted} accepted, {refused} refused"
    );
}

/// A card's body (typed, or the first text form) is read by the same readers: it accepts
/// and refuses what serde's derived `TypedBody` and `LegacyBody` readers do, and reads
/// the same card.
#[test]
fn a_card_body_reads_as_serde_reads_it() {
    use pinbench::core::card::{CardBody, LegacyBody, TypedBody};
    let doc = |text: &str| serde_json::from_str::<Value>(text).expect("fixture");
    let typed = doc(include_str!("fixtures/report_signed.json"))["card"]["body"].clone();
    let legacy = doc(include_str!("fixtures/report_card_v1.json"))["card"]["body"].clone();
    let mut other = typed.clone();
    other["step"]["windows"] = json!({"measured": null});
    other["step"]["ttft_us"] = json!(null);
    other["step"]["load"] = json!({"kind": "open", "rate_milli_rps": 1500, "arrival": {"kind": "poisson"}, "in_flight_cap": 4});
    other["notes"] = json!(["a note", ""]);
    let mut other_legacy = legacy.clone();
    other_legacy["pins"] = json!([{"label": "a", "value": "b"}, {"label": "c", "value": "d", "window": "steady window"}]);
    let docs = mutations(vec![typed, legacy, other, other_legacy]);
    let (mut typed_n, mut legacy_n, mut refused) = (0, 0, 0);
    for d in &docs {
        let text = d.to_string();
        let ours = serde_json::from_str::<CardBody>(&text).ok();
        let derived = match serde_json::from_str::<TypedBody>(&text) {
            Ok(t) => Some(CardBody::Typed(Box::new(t))),
            Err(_) => serde_json::from_str::<LegacyBody>(&text)
                .ok()
                .map(CardBody::Legacy),
        };
        assert_eq!(
            ours,
            derived,
            "{text}\n derived: {:?}",
            serde_json::from_str::<TypedBody>(&text).err()
        );
        match ours {
            Some(CardBody::Typed(_)) => typed_n += 1,
            Some(CardBody::Legacy(_)) => legacy_n += 1,
            None => refused += 1,
        }
    }
    assert!(
        typed_n >= 20 && legacy_n >= 10 && refused >= 1_000,
        "{typed_n} typed, {legacy_n} legacy, {refused} refused"
    );
}
