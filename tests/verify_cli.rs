//! The native `pinbench-verify` command accepts the signed fixture and rejects a copy with
//! one changed byte.

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
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("signature valid"));

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
