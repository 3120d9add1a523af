//! `pinbench-verify [--trust KEY]… REPORT.json…`: checks each report's signature and
//! recomputes its summary from its records.
//!
//! Exit status: 0 when every report is signed by a trusted key (`--trust` with its
//! base64 public key or its key id `ed25519:…`), valid and consistent; 3 when every
//! report is valid and consistent but some signer is not in the trust list ("valid
//! signature, unknown signer" — anyone can make a key); 1 when any report is unsigned,
//! modified, inconsistent or unreadable; 2 on usage errors.

use pinbench::core::report::{self, Verification};

/// What one report came to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Trusted,
    UnknownSigner,
    Bad,
}

fn check(path: &str, trust: &[String]) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let opened = report::open(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut outcome = match &opened.verification {
        Verification::Valid { key_id, public_key } => {
            if trust.iter().any(|t| t == key_id || t == public_key) {
                println!("{path}: signature valid, trusted signer (key {key_id})");
                Outcome::Trusted
            } else {
                println!("{path}: valid signature, unknown signer (key {key_id}, public key {public_key}); pass --trust to accept it");
                Outcome::UnknownSigner
            }
        }
        Verification::Unsigned => {
            println!("{path}: unsigned");
            Outcome::Bad
        }
        Verification::Invalid { reason } => {
            println!("{path}: signature INVALID: {reason}");
            Outcome::Bad
        }
    };
    let mismatches = report::recompute(&opened.report).map_err(|e| format!("{path}: {e}"))?;
    if mismatches.is_empty() {
        println!("{path}: every summary figure matches its records");
    } else {
        outcome = Outcome::Bad;
        for m in mismatches {
            println!(
                "{path}: MISMATCH {}: stored {} recomputed {}",
                m.path, m.stored, m.recomputed
            );
        }
    }
    Ok(outcome)
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
    let mut worst = Outcome::Trusted;
    for p in &paths {
        let o = check(p, &trust).unwrap_or_else(|e| {
            eprintln!("{e}");
            Outcome::Bad
        });
        worst = worst.max(o);
    }
    std::process::exit(match worst {
        Outcome::Trusted => 0,
        Outcome::UnknownSigner => 3,
        Outcome::Bad => 1,
    });
}
