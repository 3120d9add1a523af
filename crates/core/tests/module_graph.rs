//! The core's modules import each other without cycles, file by file and group by group
//! (`measure`, `config`, `run`, `stats`, `share`, `present` and the loose modules): a
//! layer may use the layers below it, never the reverse. The graph is read from the
//! program's sources (test modules left out): every `crate::a[::b]` path, resolved through
//! the flat re-exports of `lib.rs` (`crate::pins` is `config::pins`), and every
//! `super::name` that names a sibling file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The program part of a file: before its test module, without line comments.
fn program(text: &str) -> String {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

fn files(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(base).expect("under src");
            let mut name = rel.with_extension("").to_string_lossy().replace('/', "::");
            if let Some(parent) = name.strip_suffix("::mod") {
                name = parent.to_owned();
            }
            if name == "lib" || name.ends_with("_tests") {
                continue;
            }
            out.insert(name, std::fs::read_to_string(&path).expect("readable"));
        }
    }
}

/// The file-level import graph of the core.
fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeMap::new();
    files(&src, &src, &mut modules);
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    // `pub use group::{a, b};` — the flat names.
    let mut flat = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("pub use ") else {
            continue;
        };
        let Some((group, names)) = rest.split_once("::{") else {
            continue;
        };
        for n in names.trim_end_matches("};").split(',') {
            flat.insert(n.trim().to_owned(), format!("{group}::{}", n.trim()));
        }
    }
    let mut g = Graph::new();
    for (name, text) in &modules {
        let text = program(text);
        let edges = g.entry(name.clone()).or_default();
        let mut add = |target: String| {
            if modules.contains_key(&target)
                && target != *name
                && !name.starts_with(&format!("{target}::"))
            {
                edges.insert(target);
            }
        };
        for (i, _) in text.match_indices("crate::") {
            let a = ident_at(&text[i + 7..]);
            let after = &text[i + 7 + a.len()..];
            let b = after.strip_prefix("::").map(ident_at).unwrap_or("");
            let target = match flat.get(a) {
                Some(t) => t.clone(),
                None if !b.is_empty() && modules.contains_key(&format!("{a}::{b}")) => {
                    format!("{a}::{b}")
                }
                None => a.to_owned(),
            };
            add(target);
        }
        let parent = name.rsplit_once("::").map(|(p, _)| p).unwrap_or("");
        for (i, _) in text.match_indices("super::") {
            let s = ident_at(&text[i + 7..]);
            add(if parent.is_empty() {
                s.to_owned()
            } else {
                format!("{parent}::{s}")
            });
        }
    }
    g
}

/// The groups' graph: an edge wherever a file of one group imports a file of another.
fn groups(g: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
    let mut out = Graph::new();
    for (a, bs) in g {
        for b in bs {
            if top(a) != top(b) {
                out.entry(top(a)).or_default().insert(top(b));
            }
        }
    }
    out
}

/// Strongly connected components of more than one node (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(lw));
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_file_imports_itself_through_others() {
    let g = graph();
    assert!(g.len() > 30, "the core's files: {:?}", g.keys());
    // The reading resolves flat names and sibling paths.
    assert!(
        g["share::compare"].contains("share::rows"),
        "{:?}",
        g["share::compare"]
    );
    assert!(
        g["run::lifecycle"].contains("config::probe"),
        "{:?}",
        g["run::lifecycle"]
    );
    // No file imports itself through others: the document types (`report`, `card_doc`,
    // `sign`'s signature block, `trust`) sit below what builds, checks and shows them.
    let c = cycles(&g);
    assert!(c.is_empty(), "import cycles among the core's files: {c:?}");
}

#[test]
fn the_groups_are_layers() {
    let g = groups(&graph());
    let c = cycles(&g);
    assert!(
        c.is_empty(),
        "import cycles among the core's groups: {c:?}\ngroups: {g:#?}"
    );
}

#[test]
fn a_cycle_is_found() {
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(cycles(&g), [vec!["a", "b", "c"]]);
    assert!(program("use crate::x; // crate::y\n#[cfg(test)]\nuse crate::z;").contains("crate::x"));
    assert!(!program("// crate::y").contains("crate::y"));
}
