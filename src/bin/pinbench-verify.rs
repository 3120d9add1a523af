//! `pinbench-verify [--trust KEY]… REPORT.json…`: `pinbench verify` under its own name (for
//! scripts that only verify): each report's signature checked, its summary recomputed from
//! its records.
//!
//! Exit status: 0 when every report is signed by a trusted key (`--trust` with its
//! base64 public key or its key id `ed25519:…`), valid and consistent; 3 when every
//! report is valid and consistent but some signer is not in the trust list ("valid
//! signature, unknown signer" — anyone can make a key); 1 when any report is unsigned,
//! modified, inconsistent or unreadable; 2 on usage errors.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use clap::Parser;
    use pinbench::native::cli::{verify, VerifyArgs};
    /// Checks each report's signature and recomputes its summary from its records (exit 0:
    /// trusted and valid; 3: valid, unknown signer; 1: unsigned, modified or inconsistent;
    /// 2: usage).
    #[derive(Parser)]
    #[command(name = "pinbench-verify", version)]
    struct Args {
        #[command(flatten)]
        verify: VerifyArgs,
    }
    std::process::exit(verify(&Args::parse().verify));
}

/// Native only.
#[cfg(target_arch = "wasm32")]
fn main() {}
