#![allow(clippy::disallowed_methods)]
use pinbench::core::{record::RequestRecord, report};
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string("/tmp/fx/report_big.json").unwrap();
    let doc = report::parse_json(&text).unwrap();
    let recs = doc["body"]["records"].clone();
    let t = Instant::now();
    let r: Vec<RequestRecord> = serde_json::from_value(recs.clone()).unwrap();
    println!("records from value {:?} {}", t.elapsed(), r.len());
    let mut nochunks = recs.clone();
    for x in nochunks.as_array_mut().unwrap() {
        x["chunks"] = "~".into();
    }
    let t = Instant::now();
    let r: Vec<RequestRecord> = serde_json::from_value(nochunks).unwrap();
    println!("records w/o chunks {:?} {}", t.elapsed(), r.len());
    let t = Instant::now();
    let s = serde_json::to_string(&recs).unwrap();
    println!("to_string {:?}", t.elapsed());
    let t = Instant::now();
    let r: Vec<RequestRecord> = serde_json::from_str(&s).unwrap();
    println!("records from str {:?} {}", t.elapsed(), r.len());
    let t = Instant::now();
    let mut body = doc["body"].clone();
    body["records"] = serde_json::json!([]);
    println!("clone body {:?}", t.elapsed());
    let t = Instant::now();
    let _d = doc.clone();
    println!("clone doc {:?}", t.elapsed());
}
