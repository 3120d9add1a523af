//! The same content streamed with every framing a server may legally use (SSE, WHATWG
//! rules) gives the same record: multi-token events, LF / CRLF / CR line ends, comment
//! lines, `data:` with or without a space, `event:` and `id:` lines, events cut anywhere
//! (mid-JSON, mid-UTF-8) with the rest arriving later, a role-only first chunk, a
//! usage-only final chunk, and stalls. Token counts are exact, tokens per chunk as sent,
//! and TTFT and gaps depend only on when each event completed.

use pinbench::core::dialect::Dialect;
use pinbench::core::metrics::request_metrics;
use pinbench::core::record::{RequestTimeline, StreamEnd, TokenCounts};
use proptest::prelude::*;

/// One logical event: completion time (µs) and the tokens it carries.
#[derive(Clone, Debug)]
struct Ev {
    t_us: u64,
    tokens: u32,
}

/// How the stream is written.
#[derive(Clone, Debug)]
struct Framing {
    eol: &'static str,
    space_after_colon: bool,
    comments: bool,
    event_lines: bool,
    role_first: bool,
    continuous: bool,
    /// Byte cut points inside each event: a prefix of the *next* event arrives with the
    /// current one (fraction of its length, 0 = none).
    carry: Vec<u8>,
}

const PIECES: [&str; 6] = [" w", " é", "日本", " \u{1F600}", "x", " ∂"];

fn chunk_json(dialect: Dialect, text: &str, usage: Option<u64>, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    let usage = usage.map_or("null".to_owned(), |u| {
        format!(r#"{{"prompt_tokens":3,"completion_tokens":{u}}}"#)
    });
    match dialect {
        Dialect::Chat => format!(
            r#"{{"id":"c1","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{finish}}}],"usage":{usage}}}"#
        ),
        Dialect::Completions => format!(
            r#"{{"id":"c1","choices":[{{"index":0,"text":"{text}","finish_reason":{finish}}}],"usage":{usage}}}"#
        ),
        // The vendors' streams have their own framing test (tests/vendor_streams.rs).
        other => panic!("framing covers the OpenAI-compatible dialects, not {other:?}"),
    }
}

/// The events' wire text, one string per event (the last ones carry no tokens).
fn render(dialect: Dialect, evs: &[Ev], f: &Framing) -> Vec<(u64, String)> {
    let data = |json: &str| {
        let mut s = String::new();
        if f.comments {
            s.push_str(": keep-alive");
            s.push_str(f.eol);
        }
        if f.event_lines {
            s.push_str("event: message");
            s.push_str(f.eol);
            s.push_str("id: 7");
            s.push_str(f.eol);
        }
        s.push_str(if f.space_after_colon {
            "data: "
        } else {
            "data:"
        });
        s.push_str(json);
        s.push_str(f.eol);
        s.push_str(f.eol);
        s
    };
    let mut out = Vec::new();
    let t0 = evs.first().map_or(1_000, |e| e.t_us);
    if f.role_first && dialect == Dialect::Chat {
        out.push((
            t0 - 100,
            data(r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#),
        ));
    }
    let mut total = 0u64;
    let n = evs.len();
    for (i, e) in evs.iter().enumerate() {
        total += u64::from(e.tokens);
        let text: String = (0..e.tokens)
            .map(|k| PIECES[(i + k as usize) % PIECES.len()])
            .collect();
        let finish = (i + 1 == n).then_some("length");
        out.push((
            e.t_us,
            data(&chunk_json(
                dialect,
                &text,
                f.continuous.then_some(total),
                finish,
            )),
        ));
    }
    let t_end = evs.last().map_or(2_000, |e| e.t_us);
    out.push((
        t_end + 50,
        data(&format!(
            r#"{{"id":"c1","choices":[],"usage":{{"prompt_tokens":3,"completion_tokens":{total}}}}}"#
        )),
    ));
    out.push((t_end + 60, data("[DONE]")));
    out
}

/// Delivers the rendered events: event i's bytes (minus any prefix sent early) at its
/// time, plus a prefix of event i+1 cut at an arbitrary byte (mid-UTF-8 included).
fn deliver(
    dialect: Dialect,
    events: &[(u64, String)],
    carry: &[u8],
    eol: &str,
) -> pinbench::core::record::RequestRecord {
    let mut tl = RequestTimeline::new(0, 0, dialect, 3, 64, 0);
    tl.on_headers(500, 200, Some("text/event-stream"));
    let mut sent_early = 0usize;
    let mut end = 0;
    for (i, (t, text)) in events.iter().enumerate() {
        let bytes = text.as_bytes();
        let mut chunk = bytes[sent_early..].to_vec();
        sent_early = 0;
        if let Some(next) = events.get(i + 1) {
            let frac = carry.get(i).copied().unwrap_or(0);
            let nb = next.1.as_bytes();
            // Never the whole next event: its final line end stays back (a CR alone
            // already ends a line, so a CRLF cut after its CR completes the event).
            let cut = (nb.len().saturating_sub(eol.len())) * usize::from(frac) / 255;
            chunk.extend_from_slice(&nb[..cut]);
            sent_early = cut;
        }
        tl.on_bytes(*t, &chunk);
        end = *t;
    }
    tl.finish(end + 10, StreamEnd::Eof)
}

fn framing() -> impl Strategy<Value = Framing> {
    (
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(
            |(eol, space_after_colon, comments, event_lines, role_first, continuous, carry)| {
                Framing {
                    eol,
                    space_after_colon,
                    comments,
                    event_lines,
                    role_first,
                    continuous,
                    carry,
                }
            },
        )
}

fn events(multi: bool) -> impl Strategy<Value = Vec<Ev>> {
    let max_tokens: u32 = if multi { 4 } else { 1 };
    // Gaps from 0.2 ms up to a 3 s stall.
    proptest::collection::vec(
        (
            prop_oneof![200u64..5_000, Just(3_000_000u64)],
            1u32..=max_tokens,
        ),
        1..30,
    )
    .prop_map(|v| {
        let mut t = 10_000;
        v.into_iter()
            .map(|(gap, tokens)| {
                t += gap;
                Ev { t_us: t, tokens }
            })
            .collect()
    })
}

fn check(dialect: Dialect, evs: &[Ev], f: &Framing) -> Result<(), TestCaseError> {
    let rec = deliver(dialect, &render(dialect, evs, f), &f.carry, f.eol);
    let want: Vec<(u64, u32)> = evs.iter().map(|e| (e.t_us, e.tokens)).collect();
    let got: Vec<(u64, u32)> = rec.chunks.iter().map(|c| (c.t_us, c.tokens)).collect();
    prop_assert_eq!(&got, &want, "{:?}", f);
    prop_assert!(rec.token_counts.is_exact(), "{:?}", rec.token_counts);
    let total: u64 = evs.iter().map(|e| u64::from(e.tokens)).sum();
    prop_assert_eq!(rec.output_tokens(), total);
    prop_assert!(rec.outcome.is_ok(), "{:?}", rec.outcome);
    prop_assert!(rec.anomalies.is_clean(), "{:?}", rec.anomalies);
    let m = request_metrics(&rec);
    prop_assert_eq!(m.ttft_us, Some(evs[0].t_us));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// One token per event, usage at the end: exact under any framing.
    #[test]
    fn one_token_events_under_any_framing(evs in events(false), mut f in framing(), chat in any::<bool>()) {
        f.continuous = f.continuous && chat; // either usage form
        let dialect = if chat { Dialect::Chat } else { Dialect::Completions };
        check(dialect, &evs, &f)?;
    }

    /// Multi-token events with usage in every chunk: tokens per chunk as sent.
    #[test]
    fn multi_token_events_with_continuous_usage(evs in events(true), mut f in framing(), chat in any::<bool>()) {
        f.continuous = true;
        let dialect = if chat { Dialect::Chat } else { Dialect::Completions };
        check(dialect, &evs, &f)?;
        // Usage on more than one chunk marks it continuous (one event alone is exact
        // either way).
        if evs.len() > 1 {
            let rec = deliver(dialect, &render(dialect, &evs, &f), &f.carry, f.eol);
            prop_assert_eq!(rec.token_counts, TokenCounts::ExactContinuousUsage);
        }
    }
}
