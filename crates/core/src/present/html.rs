//! Read-only markup as text: a report's body, what the viewer and the Run screen's results
//! show below a report's header (notes, verdict, each step's headline figures and charts,
//! the TTFT split, the probe's responses, the pins, the metric translator, the first
//! requests), an imported result of another tool, a comparison, what the claim checker
//! read from a headline, and the Run screen's checklist, fit check and plan.
//!
//! Nothing in it reacts to input (definitions open with `<details>`), so it is built as
//! one string and set once (`inner_html`), like the card page and the charts' SVG: as
//! Leptos views, element by element, these four took 9.5 KB more of the app (gzip). Every
//! text and attribute value from a file or a user goes through [`escape`]; the tests
//! render a report whose every text field holds markup and find none of it.

use std::fmt::Write as _;

use super::chart::{self, escape};
use super::definitions;
use super::view::{self, Figure, PinRow, PinStatus};
use crate::claim::{ClaimAnalysis, Figure as ClaimFigure};
use crate::compare::{Comparison, Row, Verdict};
use crate::decimal::{fixed, Shortest};
use crate::import::{ChunkTimes, Imported};
use crate::metrics::{request_metrics, Summary};
use crate::pins::{wire_name, FitCheck, PinProblem, PlanSummary, RunConfig};
use crate::record::RequestRecord;
use crate::report::Report;

/// The pins of a run in one line (model, lengths, load, KV, scheduling).
pub fn pins_line(cfg: &RunConfig) -> String {
    format!(
        "{} ({} params, {}) · prompt {} tok · output {} tok ({}) · {} · KV {} · max len {} · max seqs {} · {} batching · {} phases",
        cfg.model.id.value,
        crate::rows::params_text(&cfg.model.params.value),
        cfg.model.quantization.value,
        cfg.prompt_len.value,
        cfg.output_len.value,
        wire_name(&cfg.output_enforcement.value),
        cfg.load.value.steps_text(),
        cfg.kv.capacity.value,
        cfg.kv.max_model_len.value,
        cfg.kv.max_num_seqs.value,
        wire_name(&cfg.scheduling.value),
        wire_name(&cfg.phases.value),
    )
}

/// A number's definition behind a "definition" disclosure (keyboard and pointer).
pub fn definition(out: &mut String, key: &str, label: &str) {
    if let Some(d) = definitions::definition(key) {
        let _ = write!(
            out,
            r#"<details class="def" data-testid="def-{k}"><summary aria-label="What “{l}” means">definition</summary><p>{t}</p></details>"#,
            k = escape(key),
            l = escape(label),
            t = escape(&d.text()),
        );
    }
}

/// The headline figures of one step, each with its scope, window and definition.
pub fn headline(out: &mut String, figures: &[Figure]) {
    out.push_str(r#"<dl class="headline" data-testid="headline">"#);
    for f in figures {
        let _ = write!(
            out,
            r#"<div class="headline__fig headline__fig--{s}" data-testid="figure-{k}"><dt>{l}</dt><dd><strong class="headline__value">{v}</strong><span class="scope" data-testid="scope-{k}">{s}</span> <span class="headline__window">({w})</span>"#,
            s = escape(f.scope),
            k = escape(f.key),
            l = escape(f.label),
            v = escape(&f.value),
            w = escape(&f.window),
        );
        definition(out, f.key, f.label);
        out.push_str("</dd></div>");
    }
    out.push_str("</dl>");
}

/// One chart in its figure box (`figure-chart-<id>`).
fn chart_figure(out: &mut String, c: &chart::Chart) {
    let _ = write!(
        out,
        r#"<figure class="chart-box" data-testid="figure-chart-{}">{}</figure>"#,
        escape(&c.id),
        chart::render_svg(c)
    );
}

/// A claim (as typed) placed on a sweep report's frontier (its pins `cfg`, its figures):
/// the frontier with the claim's lines when its pins match the report's, else "not
/// comparable" with each reason.
pub fn frontier_claim(cfg: &RunConfig, figures: &Summary, text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    let claim = crate::claim::analyse(text);
    match claim.against(cfg) {
        Ok(at) => {
            let mut out = String::from(
                r#"<p class="verdict verdict--ok" data-testid="frontier-verdict" data-state="placed">Placed: every pin the claim states is this report's.</p>"#,
            );
            chart_figure(&mut out, &chart::frontier_with_claim(figures, at));
            out
        }
        Err(why) => {
            let mut out = String::from(
                r#"<p class="verdict verdict--bad" data-testid="frontier-verdict" data-state="not-comparable">Not comparable with this frontier:</p><ul data-testid="frontier-reasons">"#,
            );
            for w in why {
                let _ = write!(out, "<li>{}</li>", escape(&w));
            }
            out.push_str("</ul>");
            out
        }
    }
}

/// An SLO search: its SLOs, its answer and every probe (load step `i` is probe `i`).
fn search_section(out: &mut String, search: &crate::search::SearchRecord) {
    let slos: Vec<String> = search.plan.targets.iter().map(|t| t.to_string()).collect();
    let d = search.plan.dimension;
    let _ = write!(
        out,
        r#"<section class="search" data-testid="search" aria-label="SLO search"><p class="verdict verdict--ok" data-testid="search-found">SLO search ({}; {} to {}, resolution {}): {}</p><div class="table-scroll" tabindex="0" role="region" aria-label="Probes"><table data-testid="search-probes"><caption>Probes, in the order they ran (step i is probe i)</caption><thead><tr><th scope="col">probe</th><th scope="col">load</th>"#,
        escape(&slos.join(", ")),
        d.text(search.plan.min),
        d.text(search.plan.max),
        d.step_text(search.plan.resolution),
        match (search.found, search.ended_early) {
            (Some(c), false) => format!("the largest load meeting every SLO is {}", d.text(c)),
            (None, false) => format!("not even {} meets every SLO", d.text(search.plan.min)),
            (Some(c), true) => format!(
                "stopped before the search ended; the largest load that met every SLO among the {} probes run is {}",
                search.probes.len(),
                d.text(c)
            ),
            (None, true) => format!(
                "stopped before the search ended; none of the {} probes run met every SLO",
                search.probes.len()
            ),
        }
    );
    for t in &slos {
        let _ = write!(out, r#"<th scope="col">{}</th>"#, escape(t));
    }
    out.push_str(r#"<th scope="col">met</th></tr></thead><tbody>"#);
    for (i, p) in search.probes.iter().enumerate() {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{i}</th><td>{}</td>"#,
            escape(&d.text(p.load))
        );
        for v in &p.values_us {
            let _ = write!(
                out,
                "<td>{}</td>",
                v.map_or_else(|| "—".to_owned(), view::fmt_ms)
            );
        }
        let _ = write!(out, "<td>{}</td></tr>", if p.met { "yes" } else { "no" });
    }
    out.push_str("</tbody></table></div></section>");
}

/// The pins table.
pub fn pin_table(out: &mut String, rows: &[PinRow]) {
    out.push_str(r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Pins"><table class="pins" data-testid="pins-table"><caption>Pins</caption><thead><tr><th scope="col">pin</th><th scope="col">value</th><th scope="col">status</th><th scope="col">source</th></tr></thead><tbody>"#);
    for p in rows {
        let open = if p.status == PinStatus::Pinned {
            ""
        } else {
            r#" class="pins--open""#
        };
        let _ = write!(
            out,
            r#"<tr data-testid="pin-row-{}"{open}><th scope="row">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            escape(p.key),
            escape(p.label),
            escape(&p.value),
            p.status.label(),
            escape(&p.provenance),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// A multi-turn step's figures by turn index (measured, answered requests), when its
/// records carry turns.
pub fn by_turn(out: &mut String, r: &Report, step: u32) {
    let recs = crate::report::measured_ok(r, step);
    let rows: Vec<crate::turns::TurnRow> = crate::turns::by_turn(&recs);
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        out,
        r#"<div class="table-scroll" tabindex="0" role="region" aria-label="By turn"><table data-testid="by-turn-{step}"><caption>By turn of the conversation (measured window): the prompt grows with the history; the cached share is the server's own count</caption><thead><tr><th scope="col">turn</th><th scope="col">requests</th><th scope="col">prompt tokens (mean, server)</th><th scope="col">cached</th><th scope="col">TTFT p50</th><th scope="col">TTFT p99</th><th scope="col">decode tok/s p50 (per stream)</th></tr></thead><tbody>"#
    );
    let dash = || "—".to_owned();
    for t in &rows {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            t.turn + 1,
            t.requests,
            t.prompt_mean.map_or_else(dash, |p| p.to_string()),
            t.cached_permille.map_or_else(dash, |c| format!(
                "{} %",
                crate::decimal::fixed(c as f64 / 10.0, 1)
            )),
            t.ttft_us.map_or_else(dash, |q| view::fmt_ms(q.0)),
            t.ttft_us.map_or_else(dash, |q| view::fmt_ms(q.1)),
            t.decode_p50_milli.map_or_else(dash, view::fmt_rate),
        );
    }
    out.push_str(r#"</tbody></table></div><div class="charts">"#);
    for c in chart::turn_charts(&rows) {
        chart_figure(out, &c);
    }
    out.push_str("</div>");
}

/// Where the time to first token went (step 0), when the records carry wire times.
pub fn ttft_split(out: &mut String, r: &Report) {
    let rows = view::ttft_split(r, 0);
    if rows.is_empty() {
        return;
    }
    out.push_str(r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Where TTFT went"><table data-testid="ttft-split"><caption>Where TTFT went (step 0, measured window, Resource Timing)</caption><thead><tr><th scope="col">part</th><th scope="col">p50</th><th scope="col">p99</th><th scope="col">requests</th></tr></thead><tbody>"#);
    for (label, p50, p99, n) in rows {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td>{}</td><td>{}</td><td>{n}</td></tr>"#,
            escape(label),
            view::fmt_ms(p50),
            view::fmt_ms(p99),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// A merged report's sources, each re-verified from the document the merge kept, and
/// whether they merge again into exactly this report's records.
fn merged_sources(out: &mut String, b: &crate::report::ReportBody) {
    let Some((sources, problems)) = crate::merge::check_sources(b) else {
        return;
    };
    let _ = write!(
        out,
        r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Merged sources"><table data-testid="merged-sources"><caption>Merged from {} reports, each re-verified from the copy the merge kept</caption><thead><tr><th scope="col">source</th><th scope="col">signature</th><th scope="col">signer</th><th scope="col">digest</th><th scope="col">started</th><th scope="col">load</th><th scope="col">records</th><th scope="col">measured window (merged clock)</th></tr></thead><tbody>"#,
        sources.len()
    );
    for c in &sources {
        let status = c.problem.as_deref().unwrap_or("valid");
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td class="{}">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}–{} s</td></tr>"#,
            escape(&c.title),
            if c.problem.is_some() { "bad" } else { "ok" },
            escape(status),
            escape(&c.key_id),
            escape(&c.digest),
            escape(&c.created),
            escape(&c.load),
            c.records,
            crate::decimal::Fixed(c.measured_us.0 as f64 / 1e6, 3),
            crate::decimal::Fixed(c.measured_us.1 as f64 / 1e6, 3),
        );
    }
    out.push_str("</tbody></table></div>");
    if problems.is_empty() {
        out.push_str(r#"<p class="verdict verdict--ok" data-testid="merged-check">Every source's signature verifies, and merging them again gives exactly this report's records and pins.</p>"#);
    } else {
        out.push_str(r#"<ul class="verdict verdict--bad" data-testid="merged-check">"#);
        for p in &problems {
            let _ = write!(out, "<li><strong>{}</strong></li>", escape(p));
        }
        out.push_str("</ul>");
    }
}

/// The report's body below its header. `figures` are the ones computed from the records
/// (`Err`: why they cannot be; then no number is shown).
pub fn report_body(r: &Report, figures: Result<&Summary, &str>) -> String {
    let b = &r.body;
    let mut s = String::new();
    s.push_str(r#"<ul data-testid="report-notes">"#);
    for n in &b.notes {
        let _ = write!(s, "<li><strong>{}</strong></li>", escape(n));
    }
    s.push_str("</ul>");
    merged_sources(&mut s, b);
    let (class, verdict) = if b.client.invalid {
        (
            "verdict verdict--bad",
            "INVALID: the client limited this run",
        )
    } else {
        (
            "verdict verdict--ok",
            "valid: the client did not limit this run",
        )
    };
    let host = b
        .client
        .env
        .host
        .map(|h| h.label())
        .unwrap_or("not recorded");
    let _ = write!(
        s,
        r#"<p class="{class}" data-testid="client-verdict">Client verdict: {verdict}</p><p data-testid="run-host">Measured by: {}</p><ul>"#,
        escape(host)
    );
    for f in &b.client.findings {
        let _ = write!(s, "<li>{}</li>", escape(f));
    }
    s.push_str("</ul>");
    let blocked = crate::lifecycle::blocked_requests(&b.records, b.client.env.host);
    if blocked > 0 {
        let _ = write!(
            s,
            r#"<p class="run__error" data-testid="blocked" role="alert">{blocked} of {} requests got no answer the page could read. {}</p>"#,
            b.records.len(),
            escape(&crate::lifecycle::blocked_text(
                &crate::lifecycle::native_form(&b.config)
            ))
        );
    }
    let server = crate::server::verdict(&b.records, &b.config);
    let lines = server.lines();
    if !lines.is_empty() {
        let (class, said) = if server.flags() {
            ("verdict verdict--bad", "the server shaped this run")
        } else {
            ("verdict verdict--ok", "what the server reported")
        };
        let _ = write!(
            s,
            r#"<p class="{class}" data-testid="server-verdict">Server verdict: {said}</p><ul data-testid="server-findings">"#
        );
        for l in &lines {
            let _ = write!(s, "<li>{}</li>", escape(l));
        }
        s.push_str("</ul>");
    }
    let _ = write!(
        s,
        r#"<p class="results__pins" data-testid="report-pins-line">{}</p>"#,
        escape(&pins_line(&b.config))
    );
    if let Some(search) = &b.search {
        search_section(&mut s, search);
    }
    match figures {
        Err(why) => {
            let _ = write!(
                s,
                r#"<p class="run__error" data-testid="no-figures" role="alert">No figures: they cannot be computed from this file's records ({}).</p>"#,
                escape(why)
            );
        }
        Ok(f) => {
            for st in &f.steps {
                let _ = write!(
                    s,
                    r#"<section class="step" data-testid="step-{n}" aria-label="Step {n}"><h4>Step {n}: {}</h4>"#,
                    escape(&st.load.to_string()),
                    n = st.step,
                );
                headline(&mut s, &view::headline(st));
                let errors = view::errors_text(&st.errors_by_kind);
                let _ = write!(
                    s,
                    r#"<p data-testid="errors">Errors by kind: {}</p>"#,
                    escape(&errors)
                );
                if let Some(o) = &st.open_loop {
                    let _ = write!(
                        s,
                        r#"<p data-testid="open-loop">{}</p>"#,
                        escape(&view::open_loop_text(o))
                    );
                }
                by_turn(&mut s, r, st.step);
                s.push_str(r#"<div class="charts">"#);
                for c in chart::report_charts(r, f, st.step) {
                    if c.id != "sweep" {
                        chart_figure(&mut s, &c);
                    }
                }
                s.push_str("</div></section>");
            }
            if f.steps.len() > 1 {
                chart_figure(&mut s, &chart::sweep_chart(f));
            }
        }
    }
    ttft_split(&mut s, r);
    let _ = write!(
        s,
        r#"<details data-testid="probes"><summary>What the probe read ({} responses)</summary>"#,
        b.probes.len()
    );
    for p in &b.probes {
        let body: String = p.body.chars().take(4000).collect();
        let _ = write!(
            s,
            r#"<p>{} → HTTP {}</p><pre class="probe-body">{}</pre>"#,
            escape(&p.url),
            p.status,
            escape(&body)
        );
    }
    s.push_str("</details>");
    pin_table(&mut s, &view::pin_rows(&b.config));
    translator(&mut s, r, figures.ok());
    records(&mut s, r);
    s
}

/// The metric translator (step 0): the same run under each peer's definitions.
fn translator(s: &mut String, r: &Report, figures: Option<&Summary>) {
    s.push_str(r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Metric translator"><table class="translator" data-testid="translator"><caption>The same run under other tools' and methodologies' definitions (step 0). Sources: <span data-testid="translator-sources">"#);
    for (i, (name, url)) in definitions::PEER_SOURCES.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(
            s,
            r#"<a href="{}" target="_blank" rel="noopener">{}</a>"#,
            escape(url),
            escape(name)
        );
    }
    s.push_str(r#"</span></caption><thead><tr><th scope="col">concept</th><th scope="col">pinbench</th><th scope="col">vLLM bench serve</th><th scope="col">AIPerf</th><th scope="col">guidellm</th><th scope="col">llmperf</th><th scope="col">Artificial Analysis</th><th scope="col">MLPerf (server)</th></tr></thead><tbody>"#);
    for row in figures
        .map(|f| view::translator(r, f, 0))
        .unwrap_or_default()
    {
        let _ = write!(
            s,
            r#"<tr><th scope="row">{} ({})</th>"#,
            escape(row.concept),
            escape(row.unit)
        );
        for c in row.cells {
            let _ = write!(
                s,
                r#"<td title="{d}"><code>{}</code> <strong>{}</strong><br><small>{d}</small></td>"#,
                escape(c.name),
                c.value.map_or_else(|| "—".to_owned(), |v| fixed(v, 2)),
                d = escape(c.definition),
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
}

/// The first 50 requests (the CSV has all); for a reasoning model, each request's
/// reasoning (tokens, and how it was shown) and its time to first answer token.
fn records(s: &mut String, r: &Report) {
    let total = r.body.records.len();
    let reasoning = r.body.records.iter().any(|x| x.reasoning.is_some());
    let _ = write!(
        s,
        r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Requests"><table data-testid="records-table"><caption>Requests (first {} of {total}; the CSV has all)</caption><thead><tr><th>#</th><th>step</th><th>outcome</th><th>protocol</th><th>prompt</th><th>output</th>{}<th>TTFT</th>{}<th>E2E</th></tr></thead><tbody>"#,
        total.min(50),
        if reasoning { "<th>reasoning</th>" } else { "" },
        if reasoning {
            "<th>first answer</th>"
        } else {
            ""
        },
    );
    for rec in r.body.records.iter().take(50) {
        let m = request_metrics(rec);
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            rec.index,
            rec.step,
            escape(&rec.outcome.kind()),
            escape(rec.protocol.as_deref().unwrap_or_default()),
            rec.usage
                .map(|u| u.prompt_tokens.to_string())
                .unwrap_or_default(),
            rec.output_tokens(),
        );
        if reasoning {
            let text = rec.reasoning.map(|x| {
                let n = x
                    .tokens
                    .map_or_else(|| "? tokens".to_owned(), |n| format!("{n} tokens"));
                format!("{n}, {}", crate::pins::wire_name(&x.shown))
            });
            let _ = write!(s, "<td>{}</td>", escape(&text.unwrap_or_default()));
        }
        let _ = write!(
            s,
            "<td>{}</td>",
            m.ttft_us.map(view::fmt_ms).unwrap_or_default()
        );
        if reasoning {
            let _ = write!(
                s,
                "<td>{}</td>",
                m.ttfa_us.map(view::fmt_ms).unwrap_or_default()
            );
        }
        let _ = write!(
            s,
            "<td>{}</td></tr>",
            m.e2e_us.map(view::fmt_ms).unwrap_or_default()
        );
    }
    s.push_str("</tbody></table></div>");
}

/// An imported result (another tool's file): the pins it states and leaves open, its
/// numbers as the tool reported them, and what pinbench recomputes from its requests.
pub fn imported(i: &Imported) -> String {
    let s = &i.subject;
    let open: Vec<&str> = s.open_pins().iter().map(|p| p.label).collect();
    let mut out = format!(
        r#"<h3>{} — imported from {}</h3><p class="report__warn" data-testid="open-pins">Leaves unpinned or undisclosed: {}. Its numbers cannot be compared with a pinned run until these are known.</p>"#,
        escape(&s.title),
        escape(&s.tool),
        escape(&open.join(", "))
    );
    pin_table(&mut out, &s.pins);
    out.push_str(r#"<div class="table-scroll" tabindex="0" role="region" aria-label="Numbers as the tool reported them"><table data-testid="import-numbers"><caption>Numbers as the tool reported them</caption><tbody>"#);
    for n in s
        .numbers
        .iter()
        .filter(|n| !n.key.starts_with("recomputed."))
    {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td>{}</td><td>{}</td></tr>"#,
            escape(&n.label),
            fixed(n.value, 2),
            escape(&n.window)
        );
    }
    out.push_str("</tbody></table></div>");
    if let Some(r) = &i.requests {
        let recs: Vec<&RequestRecord> = r.records.iter().collect();
        let chunk_note = match r.chunk_times {
            ChunkTimes::Every => "Every chunk's time is in the file.",
            ChunkTimes::FirstAndLast => "The file has only the first and last token times of each request: chunks in between are spread evenly, so chunk-gap charts are left out.",
        };
        let _ = write!(
            out,
            r#"<section class="step" data-testid="import-recomputed" aria-label="Recomputed by pinbench"><h4>Recomputed by pinbench from the file's {} requests ({} measured)</h4><p>{chunk_note}</p><div class="table-scroll" tabindex="0" role="region" aria-label="Tool and pinbench side by side"><table data-testid="import-side-by-side"><caption>The same requests under the tool's definition and pinbench's</caption><thead><tr><th scope="col">figure</th><th scope="col">tool</th><th scope="col">pinbench</th><th scope="col">tool's definition</th><th scope="col">same definition?</th></tr></thead><tbody>"#,
            r.records.len(),
            r.summary.requests.measured
        );
        let num = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| fixed(v, 3));
        for x in &r.side_by_side {
            let _ = write!(
                out,
                r#"<tr data-testid="sbs-{}"><th scope="row">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                escape(x.key),
                escape(x.label),
                num(x.tool),
                num(x.pinbench),
                escape(x.tool_definition),
                if x.same_definition {
                    "yes: must agree"
                } else {
                    "no"
                }
            );
        }
        out.push_str("</tbody></table></div>");
        headline(&mut out, &view::headline(&r.summary));
        out.push_str(r#"<div class="charts">"#);
        for c in chart::step_charts(&r.summary, &recs) {
            if r.chunk_times == ChunkTimes::Every
                || !matches!(c.id.as_str(), "inter-chunk" | "tokens-per-chunk")
            {
                chart_figure(&mut out, &c);
            }
        }
        out.push_str("</div></section>");
    }
    out
}

/// A comparison of reports titled `titles`: the verdict, then the pins and the numbers
/// side by side, each differing pin marked.
pub fn comparison(titles: &[String], c: &Comparison) -> String {
    let state = if c.verdict == Verdict::Comparable {
        "comparable"
    } else {
        "not-comparable"
    };
    let mut out = format!(
        r#"<p class="compare__verdict" data-testid="compare-verdict" data-state="{state}" role="status">{}</p><div class="table-scroll" tabindex="0" role="region" aria-label="Pins compared"><table class="compare__table" data-testid="compare-table"><thead><tr><th scope="col">pin</th>"#,
        escape(&c.verdict.sentence())
    );
    for t in titles {
        let _ = write!(out, r#"<th scope="col">{}</th>"#, escape(t));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &c.pins {
        compare_row(&mut out, r, "compare-row");
    }
    out.push_str(r#"</tbody></table></div><div class="table-scroll" tabindex="0" role="region" aria-label="Numbers compared"><table class="compare__table" data-testid="compare-numbers"><caption>Numbers (each with its window; shown, never judged)</caption><tbody>"#);
    for r in &c.numbers {
        compare_row(&mut out, r, "compare-number");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The compared runs' headline figures over time ([`chart::over_time_charts`]) when they
/// are comparable (the same pins) pinbench runs; empty otherwise.
pub fn over_time(subjects: &[crate::compare::Subject], c: &Comparison) -> String {
    if c.verdict != Verdict::Comparable {
        return String::new();
    }
    let charts = chart::over_time_charts(subjects);
    if charts.is_empty() {
        return String::new();
    }
    let mut out = format!(
        r#"<section class="over-time" data-testid="over-time" aria-label="Over time"><h3>The same pins over time: {} runs</h3><div class="charts">"#,
        subjects.len()
    );
    for c in &charts {
        chart_figure(&mut out, c);
    }
    out.push_str("</div></section>");
    out
}

fn compare_row(out: &mut String, r: &Row, prefix: &str) {
    let class = if r.differs {
        "compare__row compare__row--differs"
    } else if r.informational {
        "compare__row compare__row--info"
    } else {
        "compare__row"
    };
    let _ = write!(
        out,
        r#"<tr class="{class}" data-testid="{prefix}-{}" data-differs="{}"><th scope="row">{}{}</th>"#,
        escape(&r.key),
        r.differs,
        escape(&r.label),
        if r.differs { " ≠" } else { "" }
    );
    for c in &r.cells {
        let _ = write!(out, "<td>{}</td>", escape(c));
    }
    out.push_str("</tr>");
}

/// A figure a claim states, as its text ("2100 tok/s", "TTFT 200 ms", "3× relative to vLLM").
pub fn figure_text(f: &ClaimFigure) -> String {
    match f {
        ClaimFigure::Throughput { value, .. } => format!("{} tok/s", Shortest(*value)),
        ClaimFigure::Latency { what, ms } => {
            format!("{} {} ms", what.to_ascii_uppercase(), Shortest(*ms))
        }
        ClaimFigure::Relative { factor, baseline } => format!(
            "{}× relative to {}",
            Shortest(*factor),
            baseline.as_deref().unwrap_or("an unnamed baseline")
        ),
    }
}

/// What the claim checker read from a headline: whether it is checkable (and why not),
/// which metric its number can be, what it pins and leaves free, and `link`, which opens
/// the Run screen with its pins declared.
pub fn claim(a: &ClaimAnalysis, link: &str) -> String {
    let (class, verdict) = if a.checkable {
        (
            "verdict verdict--ok",
            "Checkable: it pins enough to be run as stated.",
        )
    } else {
        ("verdict verdict--bad", "Not checkable as stated.")
    };
    let mut out =
        format!(r#"<p class="{class}" data-testid="claim-verdict" role="status">{verdict}</p>"#);
    if !a.reasons.is_empty() {
        out.push_str(r#"<ul data-testid="claim-reasons">"#);
        for r in &a.reasons {
            let _ = write!(out, "<li>{}</li>", escape(r));
        }
        out.push_str("</ul>");
    }
    let figures = if a.figures.is_empty() {
        "No figure with a unit.".to_owned()
    } else {
        a.figures
            .iter()
            .map(figure_text)
            .collect::<Vec<_>>()
            .join(" · ")
    };
    let _ = write!(
        out,
        r#"<h3>What the number can be</h3><p data-testid="claim-figures">{}</p><ul data-testid="claim-metric">"#,
        escape(&figures)
    );
    for m in &a.metric {
        let _ = write!(out, "<li>{}</li>", escape(m));
    }
    out.push_str(r#"</ul><h3>What it pins</h3><div class="table-scroll" tabindex="0" role="region" aria-label="Stated pins"><table data-testid="claim-pins"><thead><tr><th scope="col">field</th><th scope="col">value (declared)</th><th scope="col">read from</th></tr></thead><tbody>"#);
    for s in &a.pins {
        let _ = write!(
            out,
            r#"<tr data-testid="claim-pin-{f}"><th scope="row">{f}</th><td>{}</td><td>“{}”</td></tr>"#,
            escape(&s.value),
            escape(&s.evidence),
            f = escape(s.field),
        );
    }
    out.push_str("</tbody></table></div>");
    if !a.context.is_empty() {
        let context: Vec<String> = a
            .context
            .iter()
            .map(|s| format!("{}: {}", s.field.replace('_', " "), s.value))
            .collect();
        let _ = write!(
            out,
            r#"<p>Also stated (not pins): <span data-testid="claim-context">{}</span></p>"#,
            escape(&context.join(" · "))
        );
    }
    let open = if a.open.is_empty() {
        "Nothing.".to_owned()
    } else {
        a.open
            .iter()
            .map(|p| p.label())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        out,
        r#"<h3>What it leaves free</h3><p data-testid="claim-open">{}</p><p><a class="btn" href="{l}" data-testid="claim-link">Open these pins on the Run screen</a> — every stated value is declared; the rest stays open for the vendor or you to pin.</p><label class="field__label" for="claim-link-text">Share link</label><input id="claim-link-text" class="field__input" readonly value="{l}" data-testid="claim-link-text">"#,
        escape(&open),
        l = escape(link),
    );
    out
}

/// The Run screen's checklist: every pin set, or the problems, each a link to its field
/// (`#pin-<field>`; the page moves the focus there).
pub fn checklist(problems: &[PinProblem]) -> String {
    if problems.is_empty() {
        return r#"<p class="ok" data-testid="all-pinned">Every pin is set.</p>"#.to_owned();
    }
    let mut s = format!(
        r#"<p>Start is disabled until every pin is set. Missing or invalid ({}):</p><ul class="checklist">"#,
        problems.len()
    );
    for p in problems {
        let field = escape(&p.field);
        let _ = write!(
            s,
            r##"<li data-testid="missing-{field}"><a href="#pin-{field}">{}</a></li>"##,
            escape(&p.to_string())
        );
    }
    s.push_str("</ul>");
    s
}

/// The fit check's title and findings.
pub fn fit_check(f: &FitCheck) -> String {
    let mut s = format!(
        r#"<h3 class="panel__title">Fit check: {}</h3><ul>"#,
        f.verdict.label()
    );
    for l in &f.lines {
        let _ = write!(s, "<li>{}</li>", escape(l));
    }
    s.push_str("</ul>");
    s
}

/// "What will run": where requests go, how many over how many steps, the tokens, and a
/// rough duration.
pub fn plan(summary: Option<&(PlanSummary, usize)>) -> String {
    let mut s = r#"<h3 class="panel__title">What will run</h3>"#.to_owned();
    let Some((p, steps)) = summary else {
        s.push_str("<p>Set every pin to see what will run.</p>");
        return s;
    };
    let plural = if *steps == 1 { "" } else { "s" };
    let _ = write!(
        s,
        r#"<ul><li data-testid="plan-origin">Requests go to {}.</li><li data-testid="plan-requests">"#,
        escape(&p.origin)
    );
    let _ = match p.requests {
        Some(n) => write!(s, "{n} requests over {steps} step{plural}."),
        None => write!(s, "{steps} step{plural} of timed windows."),
    };
    s.push_str("</li>");
    if let Some((pt, ot)) = p.tokens {
        let _ = write!(
            s,
            r#"<li data-testid="plan-tokens">≈ {} prompt tokens and {} output tokens.</li>"#,
            group(pt),
            group(ot)
        );
    }
    let _ = if p.duration.0 > 0 {
        write!(
            s,
            r#"<li data-testid="plan-duration">Roughly {} ({}).</li></ul>"#,
            duration_text(p.duration.0),
            escape(&p.duration.1)
        )
    } else {
        write!(
            s,
            r#"<li data-testid="plan-duration">Duration: {}.</li></ul>"#,
            escape(&p.duration.1)
        )
    };
    s
}

/// 12345678 → "12,345,678".
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds as "45 s", "3 min 20 s" or "2 h 5 min".
pub fn duration_text(s: u64) -> String {
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}
