//! `core::html` builds the viewer's read-only markup as text, set with `inner_html`: every
//! text a file carries must arrive escaped. Each case puts markup into one text of a
//! report (every string of a real report in turn, plus notes, probe responses and
//! provenances), of an imported file, of a comparison and of a claim, and checks that the
//! markup comes out as text: no element or attribute of it survives.

use pinbench::core::claim;
use pinbench::core::compare::{compare, Subject};
use pinbench::core::html;
use pinbench::core::report::Report;
use pinbench::core::viewer::{self, Opened, TrustedKeys};
use serde_json::{json, Value};

const FIXTURE: &str = include_str!("fixtures/report_signed.json");
/// Closes an attribute and a tag, then opens an element with a handler.
const PAYLOAD: &str = r#"x"'><img src=x onerror=alert(1)>&amp;"#;

/// The payload's markup must not be in `out`; its text may be, escaped.
fn assert_inert(out: &str, case: &str) {
    assert!(
        !out.contains("<img"),
        "{case}: an element got through:\n{out}"
    );
    assert!(
        !out.contains(r#"x"'>"#),
        "{case}: an attribute was closed:\n{out}"
    );
}

fn strings(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::String(_) => out.push(path.clone()),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                strings(x, path, out);
                path.pop();
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                path.push(k.clone());
                strings(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Array(a) => &mut a[k.parse::<usize>().expect("index")],
        other => &mut other[k.as_str()],
    })
}

fn body_of(doc: &Value) -> Option<String> {
    let r: Report = serde_json::from_value(doc.clone()).ok()?;
    let figures = r.body.figures().map_err(|e| e.to_string());
    Some(html::report_body(
        &r,
        figures.as_ref().map_err(String::as_str),
    ))
}

#[test]
fn every_text_of_a_report_is_escaped() {
    let doc: Value = serde_json::from_str(FIXTURE).expect("json");
    let mut paths = Vec::new();
    strings(&doc["body"], &mut vec!["body".into()], &mut paths);
    let mut rendered = Vec::new();
    for p in &paths {
        let mut d = doc.clone();
        *at(&mut d, p) = PAYLOAD.into();
        // Typed strings (enum tags, dates, histograms) refuse the payload: nothing to show.
        if let Some(out) = body_of(&d) {
            assert_inert(&out, &p.join("."));
            rendered.push(p.join("."));
        }
    }
    // Free texts the fixture leaves empty: notes, findings, probe responses, provenances.
    let mut d = doc.clone();
    d["body"]["notes"] = json!([PAYLOAD]);
    d["body"]["client"]["findings"] = json!([PAYLOAD]);
    d["body"]["probes"] = json!([{ "url": PAYLOAD, "status": 200, "body": PAYLOAD }]);
    d["body"]["config"]["model"]["id"]["provenance"] =
        json!({ "kind": "probed", "url": PAYLOAD, "field": PAYLOAD });
    d["body"]["config"]["prompt_len"]["provenance"] =
        json!({ "kind": "measured", "what": PAYLOAD });
    let out = body_of(&d).expect("the report with markup in its free texts opens");
    assert_inert(&out, "notes, findings, probes, provenances");
    for shown in ["&lt;img src=x onerror=alert(1)&gt;", "&amp;amp;"] {
        assert!(out.contains(shown), "the texts are shown, escaped: {shown}");
    }
    for free in [
        "body.tool.name",
        "body.config.endpoint.base_url",
        "body.config.model.id.value",
        "body.client.findings.0",
    ] {
        assert!(
            rendered.iter().any(|p| p == free),
            "{free} carried the payload: {rendered:?}"
        );
    }
}

#[test]
fn a_report_without_figures_says_why_escaped() {
    let doc: Value = serde_json::from_str(FIXTURE).expect("json");
    let r: Report = serde_json::from_value(doc).expect("report");
    let out = html::report_body(&r, Err(PAYLOAD));
    assert_inert(&out, "no figures");
    assert!(out.contains(r#"data-testid="no-figures""#));
    assert!(
        !out.contains(r#"data-testid="step-0""#),
        "no step without figures"
    );
}

#[test]
fn imported_files_comparisons_and_claims_are_escaped() {
    // An imported file's title, tool texts and figures' windows.
    let title = format!("{PAYLOAD}.json");
    let text = include_str!("fixtures/imports/vllm_bench_serve.json");
    let opened = viewer::open(&title, text, &TrustedKeys::default()).expect("imports");
    let Opened::Imported(i) = &opened else {
        panic!("expected an import");
    };
    assert_inert(&html::imported(i), "import");
    // A comparison with a report titled with markup.
    let r: Report = serde_json::from_str(FIXTURE).expect("report");
    let figures = r.body.figures().expect("figures");
    let subjects = [
        Subject::from_report(PAYLOAD, &r, Some(&figures)),
        i.subject.clone(),
    ];
    let titles = [PAYLOAD.to_owned(), title];
    assert_inert(
        &html::comparison(&titles, &compare(&subjects)),
        "comparison",
    );
    // A claim whose words carry markup, and a link that tries to close its attribute.
    let a = claim::analyse(&format!(
        "Llama 3.1 8B {PAYLOAD} at 100 tok/s, c=8, {PAYLOAD} 1k in 1k out"
    ));
    assert_inert(&html::claim(&a, PAYLOAD), "claim");
}

#[test]
fn the_run_screens_panels_are_escaped_and_say_what_will_run() {
    use pinbench::core::pins::{self, PinId, PinProblem, Problem};
    // The checklist: a field name carrying markup stays text, in its link too.
    let problems = [PinProblem {
        pin: PinId::Model,
        field: PAYLOAD.to_owned(),
        problem: Problem::Missing,
    }];
    let out = html::checklist(&problems);
    assert_inert(&out, "checklist");
    assert!(out.contains("Missing or invalid (1):"), "{out}");
    assert_eq!(
        html::checklist(&[]),
        r#"<p class="ok" data-testid="all-pinned">Every pin is set.</p>"#
    );
    // The plan of the fixture's run: its origin, requests and tokens, grouped by thousands.
    let r: Report = serde_json::from_str(FIXTURE).expect("report");
    let mut plan = pins::plan_summary(&r.body.config, None);
    let out = html::plan(Some(&(plan.clone(), 1)));
    assert!(
        out.contains(&format!("Requests go to {}.", plan.origin)),
        "{out}"
    );
    plan.origin = PAYLOAD.to_owned();
    plan.duration.1 = PAYLOAD.to_owned();
    assert_inert(&html::plan(Some(&(plan, 2))), "plan");
    assert!(html::plan(None).contains("Set every pin to see what will run."));
    // Known answers of the number and duration texts.
    let grouped: Vec<String> = [0, 999, 1000, 12_345_678].map(html::group).into();
    assert_eq!(grouped, ["0", "999", "1,000", "12,345,678"]);
    let durations: Vec<String> = [45, 200, 7300].map(html::duration_text).into();
    assert_eq!(durations, ["45 s", "3 min 20 s", "2 h 1 min"]);
}
