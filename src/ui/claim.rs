//! The claim checker screen: a vendor's headline in, what it pins and leaves free out,
//! with a link that opens the Run screen with every stated value declared.

use leptos::prelude::*;

use crate::core::claim::{self, ClaimAnalysis};
use crate::core::html;

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
            {move || result.get().map(|a| view! {
                <div class="claim__result" data-testid="claim-result" inner_html=html::claim(&a, &run_link(&a))></div>
            })}
        </section>
    }
}
