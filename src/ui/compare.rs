//! The Compare screen: the opened files side by side, every differing pin highlighted,
//! and one verdict — "comparable" only when every judged pin matches; runs of the same
//! pins (a folder of `pinbench watch` reports) also drawn over time.

use leptos::prelude::*;

use crate::core::compare::compare;
use crate::core::html;

use super::viewer::Library;

/// The Compare screen.
#[component]
pub fn ComparePage() -> impl IntoView {
    let lib = expect_context::<Library>();
    let picked = lib.compare_picks;
    let chosen = move || {
        let p = picked.get();
        lib.entries
            .get()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| p.is_empty() || p.contains(i))
            .map(|(_, e)| e)
            .collect::<Vec<_>>()
    };
    let result = move || {
        let es = chosen();
        (es.len() >= 2).then(|| {
            let subjects: Vec<_> = es.iter().map(|e| e.subject()).collect();
            let c = compare(&subjects);
            let over_time = html::over_time(&subjects, &c);
            (
                es.iter().map(|e| e.title.clone()).collect::<Vec<_>>(),
                c,
                over_time,
            )
        })
    };
    view! {
        <section class="compare" aria-label="Compare reports">
            <p>"Open two or more files on the Reports screen; all are compared unless you pick some here."</p>
            <ul data-testid="compare-picks">
                {move || lib.entries.get().into_iter().enumerate().map(|(i, e)| view! {
                    <li><label>
                        <input type="checkbox" data-testid=format!("compare-pick-{i}")
                            prop:checked=move || picked.get().contains(&i)
                            on:change=move |_| picked.update(|p| if let Some(k) = p.iter().position(|x| *x == i) { p.remove(k); } else { p.push(i); }) />
                        {e.title.clone()}
                    </label></li>
                }).collect_view()}
            </ul>
            {move || match result() {
                None => view! { <p data-testid="compare-verdict" data-state="none">"Nothing to compare yet: open at least two files."</p> }.into_any(),
                Some((titles, c, over_time)) => view! { <div class="compare__result" inner_html=html::comparison(&titles, &c) + &over_time></div> }.into_any(),
            }}
        </section>
    }
}
