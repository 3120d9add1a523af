//! The claim checker screen: a vendor's headline in, what it pins and leaves free out,
//! with a link that opens the Run screen with every stated value declared.

use leptos::prelude::*;

use crate::core::claim::{self, ClaimAnalysis, Figure};
use crate::core::decimal::Shortest;

/// An example claim, shown as the placeholder.
const EXAMPLE: &str = "Llama 3.1 70B at 2,100 tokens/s per user on 8×H100, 3× faster than vLLM";

/// The link that opens the Run screen with the claim's pins (a page load, so the Run
/// screen starts from them).
fn run_link(a: &ClaimAnalysis) -> String {
    let here = web_sys::window()
        .and_then(|w| {
            let l = w.location();
            Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
        })
        .unwrap_or_default();
    format!(
        "{here}?from=claim#pins={}",
        String::from(js_sys::encode_uri_component(&a.share_json()))
    )
}

fn figure_text(f: &Figure) -> String {
    match f {
        Figure::Throughput { value, .. } => format!("{} tok/s", Shortest(*value)),
        Figure::Latency { what, ms } => {
            format!("{} {} ms", what.to_ascii_uppercase(), Shortest(*ms))
        }
        Figure::Relative { factor, baseline } => format!(
            "{}× relative to {}",
            Shortest(*factor),
            baseline.as_deref().unwrap_or("an unnamed baseline")
        ),
    }
}

/// The Claims screen.
#[component]
pub fn ClaimPage() -> impl IntoView {
    let text = RwSignal::new(String::new());
    let result = RwSignal::new(None::<ClaimAnalysis>);
    let on_check = move |_| {
        let t = text.get_untracked();
        result.set((!t.trim().is_empty()).then(|| claim::analyse(&t)));
    };
    view! {
        <section class="claim" aria-label="Check a claim">
            <div class="field">
                <label class="field__label" for="claim-input">"A vendor's headline"</label>
                <textarea
                    id="claim-input"
                    class="claim__input"
                    data-testid="claim-input"
                    rows="3"
                    placeholder=EXAMPLE
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))
                ></textarea>
            </div>
            <button type="button" class="btn btn--primary" data-testid="claim-check" on:click=on_check>"Check the claim"</button>
            {move || result.get().map(|a| {
                let link = run_link(&a);
                view! {
                    <div class="claim__result" data-testid="claim-result">
                        <p
                            class=if a.checkable { "verdict verdict--ok" } else { "verdict verdict--bad" }
                            data-testid="claim-verdict"
                            role="status"
                        >
                            {if a.checkable { "Checkable: it pins enough to be run as stated.".to_owned() } else { "Not checkable as stated.".to_owned() }}
                        </p>
                        {(!a.reasons.is_empty()).then(|| view! {
                            <ul data-testid="claim-reasons">{a.reasons.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}</ul>
                        })}
                        <h3>"What the number can be"</h3>
                        <p data-testid="claim-figures">{if a.figures.is_empty() { "No figure with a unit.".to_owned() } else { a.figures.iter().map(figure_text).collect::<Vec<_>>().join(" · ") }}</p>
                        <ul data-testid="claim-metric">{a.metric.iter().map(|m| view! { <li>{m.clone()}</li> }).collect_view()}</ul>
                        <h3>"What it pins"</h3>
                        <div class="table-scroll" tabindex="0" role="region" aria-label="Stated pins">
                            <table data-testid="claim-pins">
                                <thead><tr><th scope="col">"field"</th><th scope="col">"value (declared)"</th><th scope="col">"read from"</th></tr></thead>
                                <tbody>
                                    {a.pins.iter().map(|s| view! {
                                        <tr data-testid=format!("claim-pin-{}", s.field)><th scope="row">{s.field}</th><td>{s.value.clone()}</td><td>{format!("“{}”", s.evidence)}</td></tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </div>
                        {(!a.context.is_empty()).then(|| view! {
                            <p>"Also stated (not pins): "
                                <span data-testid="claim-context">{a.context.iter().map(|s| format!("{}: {}", s.field.replace('_', " "), s.value)).collect::<Vec<_>>().join(" · ")}</span>
                            </p>
                        })}
                        <h3>"What it leaves free"</h3>
                        <p data-testid="claim-open">{if a.open.is_empty() { "Nothing.".to_owned() } else { a.open.iter().map(|p| p.label()).collect::<Vec<_>>().join(", ") }}</p>
                        <p>
                            <a class="btn" href=link.clone() data-testid="claim-link">"Open these pins on the Run screen"</a>
                            " — every stated value is declared; the rest stays open for the vendor or you to pin."
                        </p>
                        <label class="field__label" for="claim-link-text">"Share link"</label>
                        <input id="claim-link-text" class="field__input" readonly prop:value=link data-testid="claim-link-text" />
                    </div>
                }
            })}
        </section>
    }
}
