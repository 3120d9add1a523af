//! The core (`crates/core`) stays pure: no clocks or randomness (the compiler keeps browser
//! crates out: `pinbench-core` does not depend on them), and no mention of browser bindings.

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
    for entry in std::fs::read_dir(dir).expect("source directory is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's program part: what comes before its test module.
fn program_part(text: &str) -> &str {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let code = line.trim_start();
        let code = code.strip_prefix("pub(crate) ").unwrap_or(code);
        if code.starts_with("mod tests") {
            break;
        }
        end += line.len();
    }
    &text[..end]
}

/// The program's source files: the core, the browser glue and the views.
fn program_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["crates/core/src", "src/web", "src/ui"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn core_mentions_no_browser_clock_or_randomness() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
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
        "crates/core must stay pure:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_purity_check_itself_detects_a_mention() {
    let sample = "let t = std::time::Instant::now();";
    assert!(FORBIDDEN.iter().any(|w| sample.contains(w)));
}

/// std's generic sorts compile one copy per element type and comparison into the wasm;
/// the program's code (core, browser glue, views) sorts through `core::sort` instead.
/// Test modules (`mod tests` at a file's end, `*_tests.rs`) may use std's.
const STD_SORTS: &[&str] = &[
    ".sort(",
    ".sort_by(",
    ".sort_by_key(",
    ".sort_by_cached_key(",
    ".sort_unstable",
];

/// Ordered maps and sets (serde_json's `Map` is a `BTreeMap`).
const MAP_TYPES: &[&str] = &["BTreeMap", "BTreeSet", "Map"];

#[test]
fn the_program_sorts_through_core_sort() {
    let files = program_files();
    let mut hits = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with("_tests.rs") || f.ends_with("core/sort.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable");
        let program = program_part(&text);
        for (n, line) in program.lines().enumerate() {
            if STD_SORTS.iter().any(|w| line.contains(w)) {
                hits.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
        // Collecting into an ordered map or set sorts the items with std's stable sort
        // (BTreeMap::from_iter), a second sort in the wasm: such maps are filled by insert.
        for statement in program.split(';') {
            let s: String = statement.split_whitespace().collect::<Vec<_>>().join(" ");
            let into_map = MAP_TYPES.iter().any(|t| {
                // `let x: [path::]Map<…> = ….collect()`: the type is the let's annotation.
                let annotated = s.rfind("let ").and_then(|i| {
                    let (head, rhs) = s[i..].split_once(" = ")?;
                    let ty = head.split_once(": ")?.1;
                    Some(
                        (ty.starts_with(&format!("{t}<")) || ty.contains(&format!("::{t}<")))
                            && rhs.contains(".collect()"),
                    )
                });
                annotated == Some(true)
                    || s.contains(&format!("collect::<{t}"))
                    || s.contains(&format!("{t}::from_iter("))
                    || s.contains(&format!("{t}::from(["))
            });
            if into_map {
                let tail = s.chars().count().saturating_sub(160);
                let shown: String = s.chars().skip(tail).collect();
                hits.push(format!("{}: {shown}", f.display()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "sort through pinbench::core::sort (one copy in the wasm):\n{}",
        hits.join("\n")
    );
}

/// serde_json's reader is generic over its input: reading bytes (`from_slice`,
/// `from_reader`) as well as text compiles a second copy of the whole parser, number
/// parsing included, into the wasm. The program reads JSON from text only (bytes it
/// holds are checked UTF-8 first).
#[test]
fn the_program_reads_json_from_text_only() {
    let files = program_files();
    let mut hits = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (n, line) in text.lines().enumerate() {
            if [
                "serde_json::from_slice",
                "serde_json::from_reader",
                "Deserializer::from_slice",
                "Deserializer::from_reader",
            ]
            .iter()
            .any(|w| line.contains(w))
            {
                hits.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "read JSON with serde_json::from_str (one reader in the wasm):\n{}",
        hits.join("\n")
    );
}

/// A float precision in a format string (`{:.2}`, `{x:.1}`, `{:.prec$}`): true when `line`
/// has `:.` followed by digits or a `name$` and then `}`.
fn has_float_precision(line: &str) -> bool {
    line.match_indices(":.").any(|(i, _)| {
        let rest = &line[i + 2..];
        let n = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        n > 0 && rest[n..].starts_with('}')
    })
}

/// std's float formatter (Grisu and Dragon with their power-of-ten tables, ~7 KB gzip)
/// comes into the wasm with any `{:.N}` or `{}` of an `f64`, and with `f64::clamp`, whose
/// NaN check formats its bounds. The program formats floats through `core::decimal`
/// (`Fixed`, `Shortest`) and bounds them with `decimal::bounded` (clippy.toml disallows
/// `f64::clamp`). This catches the precisions text can show; `scripts/sizes.sh` checks the
/// built wasm for the formatter's table, which catches every way in.
#[test]
fn the_program_formats_floats_through_core_decimal() {
    let mut hits = Vec::new();
    for f in program_files() {
        if f.ends_with("core/decimal.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("readable");
        for (n, line) in program_part(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if has_float_precision(code) {
                hits.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "format floats with core::decimal::Fixed / Shortest:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_float_precision_check_itself_detects_one() {
    for line in [
        r#"format!("{:.2} ms", x)"#,
        r#"format!("{v:.1}")"#,
        r#"write!(f, "{:.prec$}", x)"#,
        r#"format!("{0:.3}", x)"#,
    ] {
        assert!(has_float_precision(line), "{line}");
    }
    for line in [
        r#"format!("{}: {x}", a)"#,
        r#"let s = a.b.c;"#,
        r#"format!("{k}={v}")"#,
        r#"x::y.z"#,
    ] {
        assert!(!has_float_precision(line), "{line}");
    }
}
