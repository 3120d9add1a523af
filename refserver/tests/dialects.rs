//! `pinbench run` in every API dialect (chat completions, OpenAI Responses, Anthropic
//! Messages, Gemini) against the reference server emulating a model that does not reason,
//! reasons visibly, or reasons hidden: every request's tokens — reasoning and answer apart —
//! are accounted for against the server's truth, hidden reasoning never enters a decode
//! rate, and TTFT and the time to the first answer token agree with the server's.

mod common;

use common::{get, native_run as run, Server, Tmp};
use pinbench::core::metrics::request_metrics;
use pinbench::core::pins::Pins;
use pinbench::core::record::ReasoningShown;

/// Runs take turns (two cores shared by client and server).
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A client's TTFT may trail the server's by the loopback transfer and the scheduling of
/// two processes on two shared cores; it never leads it.
const TTFT_TOLERANCE_US: u64 = 50_000;

fn check(mode: &str) {
    let _turn = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::start(&["--reasoning", mode, "--reasoning-tokens", "6..20"]);
    let base = format!("http://127.0.0.1:{}", server.port);
    for dialect in ["chat", "responses", "messages", "gemini"] {
        let pins = Pins::reference()
            .endpoint(&base)
            .with(&[
                ("dialect", dialect),
                ("prompt_exactness", "server_tokenizer"),
                ("output_enforcement", "none"),
                ("stall_timeout_s", "30"),
                ("phases", "colocated"),
                ("reasoning", mode),
            ])
            .lengths(48, 64)
            .concurrency(2)
            .windows("2", "10", "2")
            .share_json()
            .expect("pins");
        let tmp = Tmp::new(&format!("dialect-{dialect}-{mode}"));
        let report = run(&tmp, &pins, &[]);
        let truths: serde_json::Value =
            serde_json::from_slice(&get(server.port, "/truth").body).expect("truth");
        let truths = truths.as_array().expect("a list");
        let at = |what: &str| format!("{dialect}, reasoning {mode}: {what}");
        assert_eq!(report.body.records.len(), 14, "{}", at("one record each"));
        // The step's figures and headline say what the reasoning was.
        let figures = report.body.figures().expect("figures");
        let step = &figures.steps[0];
        let head = pinbench::core::view::headline(step);
        let has = |k: &str| head.iter().any(|f| f.key == k);
        match (mode, &step.reasoning) {
            ("none", None) => assert!(!has("ttfa"), "{}", at("no first-answer figure")),
            (_, Some(r)) if mode != "none" => {
                assert_eq!(
                    r.shown.values().sum::<u32>(),
                    step.requests.measured_ok,
                    "{}",
                    at("every measured request reasoned")
                );
                assert!(
                    r.ttfa_us.is_some() && has("ttfa"),
                    "{}",
                    at("time to first answer token")
                );
                // The card says the same: the first answer token, and what TPOT holds.
                let card = pinbench::core::card::Card::of(&report, &figures).expect("card");
                let items = card.body.headline();
                assert!(
                    items
                        .iter()
                        .any(|i| i.label.starts_with("time to first answer token"))
                        && items.iter().any(|i| i.label.starts_with("TPOT")
                            && i.window.contains("reasoning: ")
                            && i.window.contains("never timed (outside TPOT)")),
                    "{}: {items:?}",
                    at("the card's headline")
                );
                // A comparison's numbers too.
                let subject =
                    pinbench::core::compare::Subject::from_report("r", &report, Some(&figures));
                let num = |k: &str| subject.numbers.iter().find(|n| n.key == k);
                assert!(
                    num("ttfa_p50_ms").is_some()
                        && num("tpot_p50_ms")
                            .is_some_and(|n| n.window.contains("reasoning shown as")),
                    "{}: {:?}",
                    at("the comparison's numbers"),
                    subject.numbers
                );
                let tpot = head.iter().find(|f| f.key == "tpot").expect("TPOT figure");
                assert!(
                    tpot.window.contains("reasoning shown as"),
                    "{}: {}",
                    at("TPOT says what reasoning it holds"),
                    tpot.window
                );
                if mode == "hidden" && dialect != "messages" {
                    assert!(
                        r.untimed_tokens > 0 && r.untimed_tokens == r.tokens,
                        "{}",
                        at("hidden reasoning never timed")
                    );
                }
            }
            (_, other) => panic!("{}: {other:?}", at("step reasoning")),
        }
        for r in &report.body.records {
            let id = r.response_id.as_deref().expect("a response id");
            let t = truths
                .iter()
                .find(|t| t["response_id"] == id)
                .unwrap_or_else(|| panic!("{}", at(&format!("no truth for {id}"))));
            let n = |k: &str| t[k].as_u64().expect("a count");
            let what = at(&format!("request {id}"));
            assert!(r.outcome.is_ok(), "{what}: {:?}", r.outcome);
            assert!(r.anomalies.is_clean(), "{what}: {:?}", r.anomalies);
            let usage = r.usage.expect("usage");
            assert_eq!(usage.prompt_tokens, n("prompt_tokens"), "{what}: prompt");
            assert_eq!(usage.completion_tokens, n("completion_tokens"), "{what}");
            let (reasoning, sent_chunks) = (n("reasoning_tokens"), n("reasoning_chunks"));
            match (mode, r.reasoning) {
                ("none", None) => {
                    assert_eq!(r.chunk_tokens(), n("completion_tokens"), "{what}");
                }
                ("visible", Some(rr)) => {
                    assert_eq!(rr.shown, ReasoningShown::Tokens, "{what}");
                    assert_eq!(rr.tokens, Some(reasoning), "{what}: reasoning tokens");
                    assert_eq!(u64::from(rr.in_chunks), sent_chunks, "{what}: chunks");
                    assert_eq!(r.chunk_tokens(), n("completion_tokens"), "{what}");
                    assert_eq!(r.timed_tokens(), n("completion_tokens"), "{what}");
                }
                ("hidden", Some(rr)) => {
                    assert_eq!(rr.shown, ReasoningShown::Hidden, "{what}");
                    assert_eq!(rr.in_chunks, 0, "{what}");
                    // Anthropic does not count thinking apart from the answer.
                    let counted = (dialect != "messages").then_some(reasoning);
                    assert_eq!(rr.tokens, counted, "{what}: reasoning tokens");
                    let answer = n("completion_tokens") - reasoning;
                    assert_eq!(r.chunk_tokens(), answer, "{what}: answer tokens timed");
                    assert_eq!(r.timed_tokens(), answer, "{what}: hidden tokens untimed");
                }
                (_, other) => panic!("{what}: reasoning {other:?}"),
            }
            // TTFT (any kind) and the first answer token, against the server's own.
            let m = request_metrics(r);
            let server_ttft = n("first_token_us") - n("received_us");
            let ttft = m.ttft_us.expect("TTFT");
            assert!(
                ttft + 2_000 >= server_ttft && ttft <= server_ttft + TTFT_TOLERANCE_US,
                "{what}: TTFT {ttft} µs, server {server_ttft} µs"
            );
            if mode != "none" {
                let server_ttfa = n("first_answer_us") - n("received_us");
                let ttfa = m.ttfa_us.expect("time to first answer token");
                assert!(
                    ttfa + 2_000 >= server_ttfa && ttfa <= server_ttfa + TTFT_TOLERANCE_US,
                    "{what}: first answer {ttfa} µs, server {server_ttfa} µs"
                );
                if mode == "hidden" {
                    // The hidden reasoning's time is before the first visible token.
                    assert_eq!(ttft, ttfa, "{what}");
                }
            }
            // TPOT divides the answer's (and shown reasoning's) time by its own tokens.
            if let (Some(tpot), Some(first), Some(last)) =
                (m.tpot_us, r.chunks.first(), r.chunks.last())
            {
                let timed = r.timed_tokens() - u64::from(first.tokens);
                let expect = (last.t_us - first.t_us + timed / 2) / timed;
                assert_eq!(tpot, expect, "{what}: TPOT");
            }
        }
    }
}

#[test]
fn every_dialect_without_reasoning() {
    check("none");
}

#[test]
fn every_dialect_with_visible_reasoning() {
    check("visible");
}

#[test]
fn every_dialect_with_hidden_reasoning() {
    check("hidden");
}
