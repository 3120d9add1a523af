//! The live view of a run in progress: progress bars, the figures so far, the live charts
//! (redrawn at 2 Hz: the run's own worker shares the machine's cores) and the page's own
//! event-loop lag.

use leptos::prelude::*;

use crate::core::chart;
use crate::core::decimal::{fixed, Fixed};
use crate::core::html;
use crate::core::live::LiveSeries;
use crate::core::session::Progress;
use crate::core::view;

/// How often the live charts redraw, µs.
const LIVE_REDRAW_US: u64 = 500_000;

/// The live view; hidden before the first run.
#[component]
pub fn LiveView(
    /// The run's progress.
    progress: RwSignal<Progress>,
    /// Whether a run goes.
    running: RwSignal<bool>,
    /// The planned duration, ms, when every window is a duration.
    planned_ms: Memo<Option<u64>>,
    /// The page's event-loop lag, as text.
    page_lag_text: RwSignal<String>,
) -> impl IntoView {
    let live = RwSignal::new(LiveSeries::new());
    let last_drawn = StoredValue::new((0u64, 0u64));
    Effect::new(move |_| {
        let p = progress.get();
        if p.started_us == 0 {
            return;
        }
        let (run, at) = last_drawn.get_value();
        if run != p.started_us || p.now_us >= at + LIVE_REDRAW_US || p.finished {
            last_drawn.set_value((p.started_us, p.now_us));
            live.update(|l| l.push(&p));
        }
    });
    // The charts' markup changes only when the series does (at 2 Hz), never with each
    // progress tick.
    let target = Memo::new(move |_| progress.with(|p| p.in_flight.1));
    let svgs = Memo::new(move |_| {
        let t = target.get();
        live.with(|l| l.charts(t).map(|c| chart::render_svg(&c)))
    });
    view! {
        <section class="live" aria-label="Live progress" data-testid="live-view" hidden=move || !running.get() && live.with(|l| l == &LiveSeries::new())>
            <h3 class="live__title">"Live"</h3>
            // Elements made once; a progress tick rewrites their texts and attributes
            // (the run's worker shares the machine's cores with this page).
            <div class="live__bars">
                <label>{move || progress.with(|p| format!("Requests {} / {}", p.dispatched, p.planned.map_or("?".into(), |n| n.to_string())))}
                    <progress data-testid="progress-requests"
                        max=move || progress.with(|p| p.planned.unwrap_or(0).max(1).to_string())
                        value=move || progress.with(|p| p.completed.to_string())></progress>
                </label>
                <label hidden=move || planned_ms.get().is_none()>{move || time_text(&progress.get(), planned_ms.get())}
                    <progress data-testid="progress-time"
                        max=move || planned_ms.get().unwrap_or(0).max(1).to_string()
                        value=move || elapsed_ms(&progress.get()).min(planned_ms.get().unwrap_or(0)).to_string()></progress>
                </label>
            </div>
            // A static list whose texts change: a progress tick rewrites a few text
            // nodes, never the elements (the run's worker shares the machine's cores).
            <dl class="live__stats" data-testid="live-stats">
                <div><dt>"step"</dt><dd>{move || progress.with(|p| format!("{}/{}{}", p.step.0 + 1, p.step.1.max(1), p.phase.as_deref().map(|ph| format!(" · {ph}")).unwrap_or_default()))}</dd></div>
                <div><dt>"in flight / target"</dt><dd>{move || progress.with(|p| format!("{} / {}", p.in_flight.0, p.in_flight.1))}</dd></div>
                <div><dt>"aggregate, since start"</dt><dd>{move || progress.with(|p| format!("{} tok/s", Fixed(p.aggregate_tok_per_s(), 0)))}{definition("live_aggregate", "aggregate, since start")}</dd></div>
                <div><dt>"TTFT p50 / p90 / p99 so far"</dt><dd><span data-testid="live-ttft">{move || progress.with(|p| live_q(p.ttft_q))}</span>{definition("live_ttft", "TTFT so far")}</dd></div>
                <div><dt>"TPOT p50 / p90 / p99 so far"</dt><dd><span data-testid="live-tpot">{move || progress.with(|p| live_q(p.tpot_q))}</span>{definition("live_tpot", "TPOT so far")}</dd></div>
                <div><dt>"errors"</dt><dd data-testid="live-errors" class:bad=move || progress.with(|p| !p.errors.is_empty())>{move || progress.with(|p| view::errors_text(&p.errors))}</dd></div>
            </dl>
            <div class="live__charts chart-row" data-testid="live-charts">
                <figure class="chart-box" inner_html=move || svgs.with(|s| s[0].clone())></figure>
                <figure class="chart-box" inner_html=move || svgs.with(|s| s[1].clone())></figure>
            </div>
            <p class="live__line" data-testid="live">
            {move || {
                let p = progress.get();
                let per_stream = if p.decode.1 > 0 {
                    fixed(p.decode.0 as f64 / f64::from(p.decode.1) / 1000.0, 1)
                } else {
                    "—".into()
                };
                format!(
                    "step {}/{}{} · dispatched {}{} · completed {} · in flight {} of target {} · {} tokens · aggregate {} tok/s (all streams, since start) · per-stream decode {} tok/s (mean of completed requests){} · errors: {}",
                    p.step.0 + 1,
                    p.step.1.max(1),
                    p.phase.as_deref().map(|ph| format!(" ({ph})")).unwrap_or_default(),
                    p.dispatched,
                    p.planned.map(|n| format!(" of {n}")).unwrap_or_default(),
                    p.completed,
                    p.in_flight.0,
                    p.in_flight.1,
                    p.tokens,
                    Fixed(p.aggregate_tok_per_s(), 0),
                    per_stream,
                    if p.held_by_cap > 0 { format!(" · {} arrivals held back by the in-flight cap", p.held_by_cap) } else { String::new() },
                    view::errors_text(&p.errors),
                )
            }}
            </p>
            <p class="live__line" data-testid="page-lag">{move || page_lag_text.get()}</p>
        </section>
    }
}

/// Time since the run's start, ms.
fn elapsed_ms(p: &Progress) -> u64 {
    p.now_us.saturating_sub(p.started_us) / 1000
}

/// "Time 3 / 8 s" against the planned duration (empty when there is none).
fn time_text(p: &Progress, planned_ms: Option<u64>) -> String {
    planned_ms.map_or(String::new(), |t| {
        format!("Time {} / {} s", elapsed_ms(p) / 1000, t / 1000)
    })
}

/// Live quantiles (µs) as "p50 / p90 / p99 ms", or a dash before any request completed.
fn live_q(v: Option<[u64; 3]>) -> String {
    v.map_or("—".to_owned(), |q| view::fmt_ms_percentiles(&q))
}

/// A number's definition behind its disclosure (the markup of `core::html`, as in reports).
fn definition(key: &str, label: &str) -> impl IntoView {
    let mut d = String::new();
    html::definition(&mut d, key, label);
    view! { <div class="def-slot" inner_html=d></div> }
}
