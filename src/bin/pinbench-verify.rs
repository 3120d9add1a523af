//! `pinbench-verify [--trust KEY]… REPORT.json…`: checks each report's signature and
//! recomputes its summary from its records.
//!
//! Exit status: 0 when every report is signed by a trusted key (`--trust` with its
//! base64 public key or its key id `ed25519:…`), valid and consistent; 3 when every
//! report is valid and consistent but some signer is not in the trust list ("valid
//! signature, unknown signer" — anyone can make a key); 1 when any report is unsigned,
//! modified, inconsistent or unreadable; 2 on usage errors.

use pinbench::core::lifecycle::{check_report, CheckOutcome};

fn check(path: &str, trust: &[String]) -> CheckOutcome {
    let (outcome, lines) = match std::fs::read_to_string(path) {
        Ok(text) => check_report(&text, trust),
        Err(e) => (CheckOutcome::Bad, vec![e.to_string()]),
    };
    for l in lines {
        println!("{path}: {l}");
    }
    outcome
}

fn main() {
    let mut trust = Vec::new();
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--help" | "-h" => {
                paths.clear();
                break;
            }
            "--trust" => match args.next() {
                Some(k) => trust.push(k),
                None => {
                    eprintln!("--trust needs a public key (base64) or a key id");
                    std::process::exit(2);
                }
            },
            _ => paths.push(a),
        }
    }
    if paths.is_empty() {
        eprintln!("usage: pinbench-verify [--trust KEY]… REPORT.json…\nexit 0: trusted and valid; 3: valid, unknown signer; 1: unsigned, modified or inconsistent; 2: usage");
        std::process::exit(2);
    }
    let worst = paths
        .iter()
        .map(|p| check(p, &trust))
        .max()
        .unwrap_or(CheckOutcome::Bad);
    std::process::exit(worst.exit_code());
}
