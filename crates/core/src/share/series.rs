//! A series of runs of the same pins, as a card shows it: `pinbench watch` keeps the signed
//! cards of its last runs in `pinbench-series.txt` beside their reports (a line of
//! [`SERIES_SCHEMA`], then a line per run, oldest first: the report's file name, a space,
//! its card in link form), and the card page
//! (`card/?series=URL`) shows the latest card with a small trend line of TTFT p50 and p99
//! over the runs. Each card is kept in its link form (`card=…`, as a card link carries it)
//! and verified on its own as a card link is; a card whose pins differ from the latest's,
//! whose signature fails or whose key is not the latest's is left out of the line and
//! counted.

use std::fmt::Write as _;

use crate::card::{Card, CardBody, CardView};
use crate::markup::escape;
use crate::report::Verification;
use crate::share::trust::TrustedKeys;

/// Schema id of a series file.
pub const SERIES_SCHEMA: &str = "pinbench.series/v1";

/// The file `pinbench watch` keeps in its folder.
pub const SERIES_FILE: &str = "pinbench-series.txt";

/// Runs a series file keeps (the oldest leave first).
pub const SERIES_KEEP: usize = 30;

/// Largest series file a card page reads, bytes.
pub const MAX_SERIES_BYTES: usize = 2 << 20;

/// One point of the trend line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrendPoint {
    /// When the run started.
    pub created: String,
    /// TTFT p50 of its first step's measured window, µs.
    pub p50_us: Option<u64>,
    /// TTFT p99, µs.
    pub p99_us: Option<u64>,
    /// The client verdict said the client limited the run.
    pub invalid: bool,
}

/// A series checked and ready to render.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesView {
    /// The latest run's card.
    pub latest: CardView,
    /// The runs with the latest's pins and a valid signature, oldest first (the latest
    /// last).
    pub points: Vec<TrendPoint>,
    /// Why runs were left out of the line (one line per reason, with a count).
    pub left_out: Vec<String>,
    /// Cards read, readable or not (a link's own card: one).
    pub runs: usize,
}

/// Reads a series file: every card verified, the latest shown, the line drawn from the
/// runs whose cards are validly signed, by the latest's key, with the latest's pins.
/// `full_link` makes the full view's link of a report file name.
pub fn view_of_series(
    text: &str,
    trusted: &TrustedKeys,
    full_link: impl Fn(&str) -> String,
) -> Result<SeriesView, String> {
    if text.len() > MAX_SERIES_BYTES {
        return Err(format!(
            "the series file is {} bytes; a card reads series up to {MAX_SERIES_BYTES} bytes",
            text.len()
        ));
    }
    let mut lines = text.lines();
    let schema = lines.next().unwrap_or_default().trim();
    if schema != SERIES_SCHEMA {
        return Err(format!(
            "not a series file: its first line is {schema:?}, expected {SERIES_SCHEMA:?}"
        ));
    }
    let runs: Vec<(&str, &str)> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().split_once(' ').unwrap_or(("", l)))
        .collect();
    view_of_cards(
        runs.into_iter(),
        trusted,
        full_link,
        "latest run of a series: the card's figures are not recomputed here",
    )
}

/// The view of cards in link form (`card=…`), oldest first, each with its report's
/// name: [`view_of_series`] for a series file, and a card link's own card (a series of
/// one, whose view is its card alone).
pub fn view_of_cards<'a>(
    cards: impl Iterator<Item = (&'a str, &'a str)>,
    trusted: &TrustedKeys,
    full_link: impl Fn(&str) -> String,
    note: &str,
) -> Result<SeriesView, String> {
    let mut opened: Vec<(&str, Card, Verification)> = Vec::new();
    let mut last_error = String::from("no card");
    let mut unreadable = 0;
    for (report, fragment) in cards {
        match Card::open_fragment(fragment) {
            Ok((card, v)) => opened.push((report, card, v)),
            Err(e) => {
                unreadable += 1;
                last_error = e.to_string();
            }
        }
    }
    let runs = opened.len() + unreadable;
    let Some((report, latest, latest_v)) = opened.pop() else {
        return Err(last_error);
    };
    fn key(v: &Verification) -> Option<&str> {
        match v {
            Verification::Valid { key_id, .. } => Some(key_id),
            _ => None,
        }
    }
    // Every pin's value and where it came from (all of them, as the full view lists
    // them): a series never mixes runs whose pins differ in anything.
    let pins = |b: &CardBody| match b {
        CardBody::Typed(t) => crate::rows::pin_rows(&t.config)
            .into_iter()
            .map(|r| (r.value, r.provenance))
            .collect(),
        CardBody::Legacy(_) => Vec::new(),
    };
    let latest_pins = pins(&latest.body);
    let (mut bad_sig, mut other_key, mut other_pins) = (0, 0, 0);
    let mut points = Vec::new();
    for (card, v) in opened
        .iter()
        .map(|(_, c, v)| (c, v))
        .chain([(&latest, &latest_v)])
    {
        let Some(k) = key(v) else {
            bad_sig += 1;
            continue;
        };
        if Some(k) != key(&latest_v) {
            other_key += 1;
            continue;
        }
        let CardBody::Typed(t) = &card.body else {
            other_pins += 1;
            continue;
        };
        if pins(&card.body) != latest_pins {
            other_pins += 1;
            continue;
        }
        points.push(TrendPoint {
            created: t.created.clone(),
            p50_us: t.step.ttft_us.map(|d| d.p50),
            p99_us: t.step.ttft_us.map(|d| d.p99),
            invalid: t.client_invalid,
        });
    }
    let mut left_out = Vec::new();
    for (n, why) in [
        (unreadable, "unreadable"),
        (bad_sig, "not validly signed"),
        (other_key, "signed by another key than the latest"),
        (other_pins, "with other pins than the latest"),
    ] {
        if n > 0 {
            left_out.push(format!("{n} run{} {why}", if n == 1 { "" } else { "s" }));
        }
    }
    Ok(SeriesView {
        latest: CardView::of(latest, &latest_v, trusted, full_link(report), note),
        points,
        left_out,
        runs,
    })
}

/// The card page's markup for a series: the latest card, then (when more than one run was
/// read) the trend line of TTFT p50 and p99 over the runs (a run the client limited is a
/// hollow red point).
pub fn series_html(v: &SeriesView) -> String {
    let mut s = crate::card::page_html(&v.latest);
    if v.runs < 2 {
        return s;
    }
    let n = v.points.len();
    let values: Vec<u64> = v
        .points
        .iter()
        .flat_map(|p| [p.p50_us, p.p99_us])
        .flatten()
        .collect();
    let (lo, hi) = (
        values.iter().copied().min().unwrap_or(0),
        values.iter().copied().max().unwrap_or(0),
    );
    let ms = |us: u64| crate::decimal::fixed(us as f64 / 1000.0, 1);
    let label = match n {
        0 => "no run with the latest's pins to draw".to_owned(),
        _ => format!(
            "TTFT p50 and p99 over the last {n} run{} with these pins: {} to {} ms",
            if n == 1 { "" } else { "s" },
            ms(lo),
            ms(hi)
        ),
    };
    // The line's box (the SVG below is 240 × 44 units), a 4-unit margin, whole units.
    let x = |i: usize| match n {
        0 | 1 => 120,
        _ => 4 + 232 * i / (n - 1),
    };
    let y = |us: u64| match hi > lo {
        true => 40 - 36 * (us - lo) / (hi - lo),
        false => 22,
    };
    let _ = write!(
        s,
        r#"<div class="card__trend" data-testid="card-trend" data-runs="{n}"><svg width="240" height="44" viewBox="0 0 240 44" role="img" aria-label="{l}"><title>{l}</title>"#,
        l = escape(&label)
    );
    for (pick, class) in [(0usize, "card__trend-p50"), (1, "card__trend-p99")] {
        let pts: Vec<String> = v
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| [p.p50_us, p.p99_us][pick].map(|us| format!("{},{}", x(i), y(us))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="{class}" fill="none" stroke="currentColor" stroke-width="{}" points="{}"/>"#,
            if pick == 0 { "1.5" } else { "1" },
            pts.join(" ")
        );
    }
    for (i, p) in v.points.iter().enumerate() {
        if let (true, Some(us)) = (p.invalid, p.p99_us) {
            let _ = write!(
                s,
                r##"<circle class="card__trend-invalid" cx="{}" cy="{}" r="2.5" fill="none" stroke="#dc2626"><title>{}: INVALID (the client limited the run)</title></circle>"##,
                x(i),
                y(us),
                escape(&p.created)
            );
        }
    }
    let _ = write!(s, r#"</svg><small>{}"#, escape(&label));
    if !v.left_out.is_empty() {
        let _ = write!(
            s,
            r#" · <span data-testid="card-trend-left-out">left out: {}</span>"#,
            escape(&v.left_out.join(", "))
        );
    }
    s.push_str("</small></div>");
    s
}

/// A series file's text with `card` (the signed card of `report`, a file name beside the
/// series file, without spaces) added as its latest run, keeping the last
/// [`SERIES_KEEP`]; `existing` is the file's text so far (a file that does not start with
/// [`SERIES_SCHEMA`] starts a new one).
pub fn append(existing: Option<&str>, report: &str, card: &Card) -> Result<String, String> {
    if report.is_empty() || report.contains(char::is_whitespace) {
        return Err(format!(
            "a series names its reports without spaces: {report:?}"
        ));
    }
    let mut runs: Vec<String> = match existing.and_then(|t| t.split_once('\n')) {
        Some((head, rest)) if head.trim() == SERIES_SCHEMA => rest
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let card = card.to_fragment().map_err(|e| e.to_string())?;
    runs.push(format!("{report} {card}"));
    let skip = runs.len().saturating_sub(SERIES_KEEP);
    let mut out = format!("{SERIES_SCHEMA}\n");
    for r in &runs[skip..] {
        out.push_str(r);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::TypedBody;
    use crate::sign::KeyPair;

    /// The signed fixture's card, made `created` with TTFT p50/p99 as given, signed by `key`.
    fn card(
        created: &str,
        p50: u64,
        p99: u64,
        key: &KeyPair,
        edit: impl Fn(&mut TypedBody),
    ) -> Card {
        let text = include_str!("../../../../tests/fixtures/report_signed.json");
        let opened = crate::report::open(text).expect("opens");
        let figures = opened.report.body.figures().expect("figures");
        let mut c = Card::of(&opened.report, &figures).expect("card");
        if let CardBody::Typed(t) = &mut c.body {
            t.created = created.into();
            if let Some(d) = t.step.ttft_us.as_mut() {
                d.p50 = p50;
                d.p99 = p99;
            }
            edit(t);
        }
        c.sign(key).expect("signs");
        c
    }

    /// Five runs appended one by one: the card page shows the latest, draws the runs
    /// signed by its key with its pins (oldest first), and counts what it left out — a
    /// run of other pins, one signed by another key, one whose card was changed after
    /// signing; `append` keeps the last [`SERIES_KEEP`].
    #[test]
    fn a_series_draws_the_runs_of_the_latest_pins_and_key() {
        let (k, other) = (KeyPair::from_secret([1; 32]), KeyPair::from_secret([2; 32]));
        let mut text: Option<String> = None;
        let mut add = |name: &str, c: &Card| {
            text = Some(append(text.as_deref(), name, c).expect("appends"));
        };
        add("a.json", &card("t1", 10_000, 20_000, &k, |_| {}));
        add(
            "b.json",
            &card("t2", 11_000, 25_000, &k, |t| t.client_invalid = true),
        );
        add(
            "c.json",
            &card("t3", 50_000, 90_000, &k, |t| {
                t.config.model.id.value = "another-model".into()
            }),
        );
        add("d.json", &card("t4", 12_000, 22_000, &other, |_| {}));
        let mut forged = card("t5", 13_000, 23_000, &k, |_| {});
        if let CardBody::Typed(t) = &mut forged.body {
            t.created = "t5-forged".into();
        }
        add("e.json", &forged);
        add("f.json", &card("t6", 9_000, 30_000, &k, |_| {}));
        let text = text.expect("a series");
        let v = view_of_series(&text, &TrustedKeys::default(), |r| format!("app/?src={r}"))
            .expect("reads");
        assert_eq!(v.latest.full_link, "app/?src=f.json");
        let created: Vec<&str> = v.points.iter().map(|p| p.created.as_str()).collect();
        assert_eq!(created, ["t1", "t2", "t6"]);
        assert_eq!(
            v.points
                .iter()
                .map(|p| (p.p50_us, p.p99_us, p.invalid))
                .collect::<Vec<_>>(),
            [
                (Some(10_000), Some(20_000), false),
                (Some(11_000), Some(25_000), true),
                (Some(9_000), Some(30_000), false)
            ]
        );
        assert_eq!(
            v.left_out,
            [
                "1 run not validly signed",
                "1 run signed by another key than the latest",
                "1 run with other pins than the latest"
            ]
        );
        let html = series_html(&v);
        assert!(
            html.contains(r#"data-runs="3""#) && html.contains("9.0 to 30.0 ms"),
            "{html}"
        );
        assert_eq!(html.matches("card__trend-invalid").count(), 1);
        // The oldest runs leave first.
        let mut long = Some(text);
        for i in 0..SERIES_KEEP {
            let c = card(&format!("u{i}"), 1_000, 2_000, &k, |_| {});
            long = Some(append(long.as_deref(), &format!("u{i}.json"), &c).expect("appends"));
        }
        let v = view_of_series(
            &long.expect("series"),
            &TrustedKeys::default(),
            str::to_owned,
        )
        .expect("reads");
        assert_eq!(v.points.len(), SERIES_KEEP);
        assert_eq!(v.points[0].created, "u0");
        for bad in [
            "{",
            "pinbench.series/v0\na.json card=x",
            "pinbench.series/v1\n",
            "pinbench.series/v1\na.json card=x",
        ] {
            assert!(
                view_of_series(bad, &TrustedKeys::default(), str::to_owned).is_err(),
                "{bad}"
            );
        }
    }
}
