//! The native `pinbench-verify` command: exit 0 only for a trusted signer, 3 for a valid
//! signature by an unknown signer, 1 for a copy with one changed byte.

use std::process::Command;

#[test]
fn verify_cli_accepts_valid_and_rejects_tampered() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report_signed.json"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pinbench-verify"))
        .arg(fixture)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("valid signature, unknown signer"),
        "{stdout}"
    );
    // The fixture's key (its secret is public on purpose), trusted by key id or key.
    for key in [
        "ed25519:3097e2dee2cb4a34b53840cdb705aed7",
        "IVL40Zt5HSRFMkLhXy6rbLfP+ntqXtMAl5YOBpiB2xI=",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_pinbench-verify"))
            .args(["--trust", key, fixture])
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("trusted signer"), "{stdout}");
    }

    let text = std::fs::read_to_string(fixture).expect("fixture");
    let tampered = text.replacen("\"t_send_us\":700", "\"t_send_us\":701", 1);
    assert_ne!(text, tampered);
    let path = std::env::temp_dir().join(format!("pinbench-tampered-{}.json", std::process::id()));
    std::fs::write(&path, tampered).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_pinbench-verify"))
        .arg(&path)
        .output()
        .expect("runs");
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("INVALID"));
}
