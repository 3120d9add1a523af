//! Helpers shared by the reader tests (`config_reader.rs`, `report_reader.rs`): the paths
//! of a JSON tree, and a document's mutations at every value.

use serde_json::{json, Value};

/// Every value of the tree with its path.
pub fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(k.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(i.to_string());
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The value at `path`.
pub fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Array(a) => &mut a[k.parse::<usize>().expect("index")],
        _ => &mut v[k.as_str()],
    })
}

/// Each of `bases`, and its mutations at every value whose path `mutate` accepts: the
/// value replaced by every JSON type and out-of-range numbers, the member (or element)
/// removed, an unknown member (and a `kind`) added beside it, and a `kind` replaced by
/// each of `kinds`.
pub fn mutations(bases: Vec<Value>, kinds: &[&str], mutate: fn(&[String]) -> bool) -> Vec<Value> {
    let replacements = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(65_536),
        json!(4_294_967_296u64),
        json!(u64::MAX),
        json!("x"),
        json!("undisclosed"),
        json!("value"),
        json!([]),
        json!([1, 2]),
        json!({}),
        json!({"kind": "requests"}),
        json!({"value": 1}),
        json!({"undisclosed": null}),
        json!({"undisclosed": 1}),
        json!({"value": 1, "x": 2}),
    ];
    let mut out = Vec::new();
    for base in bases {
        out.push(base.clone());
        let mut all = Vec::new();
        paths(&base, &mut Vec::new(), &mut all);
        for path in all.into_iter().filter(|p| mutate(p)) {
            for r in &replacements {
                let mut v = base.clone();
                *at_mut(&mut v, &path) = r.clone();
                out.push(v);
            }
            let Some((last, parent)) = path.split_last() else {
                continue;
            };
            // The member (or element) removed; an unknown member beside it.
            let mut v = base.clone();
            match at_mut(&mut v, parent) {
                Value::Object(m) => {
                    m.remove(last);
                }
                Value::Array(a) => {
                    a.remove(last.parse::<usize>().expect("index"));
                }
                _ => unreachable!("a parent is an object or an array"),
            }
            out.push(v);
            for unknown in ["zz_unknown", "kind"] {
                let mut v = base.clone();
                if let Value::Object(m) = at_mut(&mut v, parent) {
                    m.entry(unknown).or_insert(json!("requests"));
                }
                out.push(v);
            }
            if last == "kind" {
                for k in kinds {
                    let mut v = base.clone();
                    *at_mut(&mut v, &path) = json!(k);
                    out.push(v);
                }
            }
        }
    }
    out
}
