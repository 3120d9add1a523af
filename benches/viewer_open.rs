//! Where the viewer's time goes on a large report, stage by stage, natively (the browser
//! runs the same code as wasm, about twice as slow here; `tests/e2e/viewer_bench.mjs`
//! measures it there). Prints a table.
//! `cargo bench --bench viewer_open -- PATH/report_big.json` (default
//! `target/e2e-fixtures/report_big.json`, written by `pinbench-fixtures`).
// A bench measures wall time on the host; the clock ban is for code that runs in wasm.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use pinbench::core::{card, chart, report, view, viewer};

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".json"))
        .unwrap_or_else(|| "target/e2e-fixtures/report_big.json".into());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e} (run pinbench-fixtures first)");
            std::process::exit(2);
        }
    };
    let mut rows: Vec<(&str, f64)> = Vec::new();
    let mut t = Instant::now();
    let mut lap = |name: &'static str, rows: &mut Vec<(&str, f64)>| {
        rows.push((name, t.elapsed().as_secs_f64() * 1000.0));
        t = Instant::now();
    };
    let doc = report::parse_json(&text).expect("json");
    lap("parse JSON", &mut rows);
    let v = report::verify_value(&doc);
    lap("verify signature (JCS + Ed25519)", &mut rows);
    let opened = report::open_value(doc).expect("opens");
    lap("open: verify again + strict typed parse", &mut rows);
    let (figures, mismatches) = report::recompute_figured(&opened.report).expect("recomputes");
    lap("recompute every summary figure", &mut rows);
    let c = card::check(&opened.report, Some(&figures));
    lap("card check", &mut rows);
    let charts: Vec<String> = chart::report_charts(&opened.report, &figures, 0)
        .iter()
        .map(chart::render_svg)
        .collect();
    lap("charts (geometry + SVG)", &mut rows);
    let tr = view::translator(&opened.report, &figures, 0);
    lap("metric translator", &mut rows);
    let origin = Instant::now();
    let mut clock = || origin.elapsed().as_micros() as u64;
    let (o, stages) = viewer::open_timed("big", &text, &viewer::TrustedKeys::default(), &mut clock);
    let o = o.expect("opens");
    let open_ms = origin.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{path}: {} requests, {:.1} MB; signature valid {}, {} mismatches, card {:?}, {} charts, {} translator rows",
        opened.report.body.records.len(),
        text.len() as f64 / 1e6,
        matches!(v, report::Verification::Valid { .. }),
        mismatches.len(),
        c,
        charts.len(),
        tr.len()
    );
    println!("Stages of the Value-based (fallback) path:\n| stage | ms |\n|---|---:|");
    for (name, ms) in rows {
        println!("| {name} | {ms:.1} |");
    }
    println!("\nThe viewer's own path (`viewer::open_timed`):\n| stage | ms |\n|---|---:|");
    for (name, us) in stages {
        println!("| {name} | {:.1} |", us as f64 / 1000.0);
    }
    println!("| total | {open_ms:.1} |");
    drop(o);
}
