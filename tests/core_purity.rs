//! `src/core` stays pure: no browser bindings, UI framework, clocks or randomness.

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "web_sys",
    "wasm_bindgen",
    "js_sys",
    "leptos",
    "Instant::now",
    "SystemTime",
    "getrandom",
    "thread_rng",
    "OsRng",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/core is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn core_mentions_no_browser_clock_or_randomness() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut files = Vec::new();
    rust_files(&core, &mut files);
    assert!(
        files.len() >= 8,
        "expected the core modules, found {files:?}"
    );
    let mut hits = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (n, line) in text.lines().enumerate() {
            for word in FORBIDDEN {
                if line.contains(word) {
                    hits.push(format!("{}:{}: {word}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "src/core must stay pure:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_purity_check_itself_detects_a_mention() {
    let sample = "let t = std::time::Instant::now();";
    assert!(FORBIDDEN.iter().any(|w| sample.contains(w)));
}
