//! `pinbench-verify REPORT.json…`: checks each report's signature and recomputes its
//! summary from its records. Exit status 0 when every report is signed, valid and
//! consistent; 1 otherwise; 2 on usage errors.

use pinbench::core::report::{self, Verification};

fn check(path: &str) -> Result<bool, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let opened = report::open(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut ok = true;
    match &opened.verification {
        Verification::Valid { key_id, .. } => println!("{path}: signature valid (key {key_id})"),
        Verification::Unsigned => {
            ok = false;
            println!("{path}: unsigned");
        }
        Verification::Invalid { reason } => {
            ok = false;
            println!("{path}: signature INVALID: {reason}");
        }
    }
    let mismatches = report::recompute(&opened.report).map_err(|e| format!("{path}: {e}"))?;
    if mismatches.is_empty() {
        println!("{path}: every summary figure matches its records");
    } else {
        ok = false;
        for m in mismatches {
            println!(
                "{path}: MISMATCH {}: stored {} recomputed {}",
                m.path, m.stored, m.recomputed
            );
        }
    }
    Ok(ok)
}

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() || paths.iter().any(|p| p == "--help" || p == "-h") {
        eprintln!("usage: pinbench-verify REPORT.json…");
        std::process::exit(2);
    }
    let mut all_ok = true;
    for p in &paths {
        match check(p) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                eprintln!("{e}");
                all_ok = false;
            }
        }
    }
    std::process::exit(if all_ok { 0 } else { 1 });
}
