//! Snapshot tests over real and hand-written SSE transcripts (`tests/fixtures/transcripts`).
//!
//! Each `NAME.sse` is fed through [`RequestTimeline`] one event per millisecond; the record
//! (with chunks decoded) must equal `NAME.expected.json`. `*chat*` files use the chat
//! dialect, the others completions. Run with `UPDATE_SNAPSHOTS=1` to rewrite expectations
//! after an intended change, then read the diff.

use std::path::Path;

use pinbench::core::dialect::Dialect;
use pinbench::core::record::{RequestRecord, RequestTimeline, StreamEnd};
use serde_json::{json, Value};

fn record_of(name: &str, bytes: &[u8]) -> RequestRecord {
    let dialect = if name.contains("chat") {
        Dialect::Chat
    } else {
        Dialect::Completions
    };
    let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
    tl.on_headers(500, 200, Some("text/event-stream"));
    // One event (up to and including its blank line) per millisecond.
    let mut t = 0;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = if bytes[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if bytes[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        };
        if let Some(e) = end {
            t += 1_000;
            tl.on_bytes(t, &bytes[start..e]);
            start = e;
            i = e;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        t += 1_000;
        tl.on_bytes(t, &bytes[start..]);
    }
    tl.finish(t + 1_000, StreamEnd::Eof)
}

fn snapshot(rec: &RequestRecord) -> Value {
    let mut v = serde_json::to_value(rec).expect("record serialises");
    v["chunks"] = json!(rec
        .chunks
        .iter()
        .map(|c| [c.t_us, u64::from(c.tokens)])
        .collect::<Vec<_>>());
    for k in [
        "index",
        "step",
        "prompt_tokens_requested",
        "output_tokens_requested",
        "t_send_us",
        "t_headers_us",
        "status",
        "protocol",
        "wire",
    ] {
        if let Value::Object(o) = &mut v {
            o.remove(k);
        }
    }
    v
}

#[test]
fn transcripts_match_their_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sse"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 6,
        "expected the transcript fixtures, found {names:?}"
    );
    let mut failures = Vec::new();
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).expect("readable");
        let got = snapshot(&record_of(name, &bytes));
        let expected_path = dir.join(name.replace(".sse", ".expected.json"));
        if update {
            let text = serde_json::to_string_pretty(&got).expect("json") + "\n";
            std::fs::write(&expected_path, text).expect("writable");
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(text) => {
                let want: Value = serde_json::from_str(&text).expect("expected file is JSON");
                if want != got {
                    failures.push(format!("{name}:\n  want {want}\n  got  {got}"));
                }
            }
            Err(_) => failures.push(format!(
                "{name}: no {} (run with UPDATE_SNAPSHOTS=1)",
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Split invariance over the real transcripts: any 2-way split gives the same record.
#[test]
fn transcripts_are_split_invariant() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "sse") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("readable");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let dialect = if name.contains("chat") {
            Dialect::Chat
        } else {
            Dialect::Completions
        };
        let whole = {
            let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
            tl.on_headers(1, 200, Some("text/event-stream"));
            tl.on_bytes(2, &bytes);
            tl.finish(3, StreamEnd::Eof)
        };
        for cut in (0..bytes.len()).step_by(7) {
            let mut tl = RequestTimeline::new(0, 0, dialect, 0, 0, 0);
            tl.on_headers(1, 200, Some("text/event-stream"));
            tl.on_bytes(2, &bytes[..cut]);
            tl.on_bytes(2, &bytes[cut..]);
            assert_eq!(tl.finish(3, StreamEnd::Eof), whole, "{name} split at {cut}");
        }
    }
}
