//! The Compare screen: the opened files side by side, every differing pin highlighted,
//! and one verdict — "comparable" only when every judged pin matches.

use leptos::prelude::*;

use crate::core::compare::{compare, Comparison, Row, Verdict};

use super::viewer::Library;

fn row_view(r: Row, prefix: &'static str) -> impl IntoView {
    let cls = if r.differs {
        "compare__row compare__row--differs"
    } else if r.informational {
        "compare__row compare__row--info"
    } else {
        "compare__row"
    };
    view! {
        <tr class=cls data-testid=format!("{prefix}-{}", r.key) data-differs=r.differs.to_string()>
            <th scope="row">{r.label}{r.differs.then_some(" ≠")}</th>
            {r.cells.into_iter().map(|c| view! { <td>{c}</td> }).collect_view()}
        </tr>
    }
}

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
            (
                es.iter().map(|e| e.title.clone()).collect::<Vec<_>>(),
                compare(&subjects),
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
                Some((titles, Comparison { pins, numbers, verdict })) => {
                    let state = if verdict == Verdict::Comparable { "comparable" } else { "not-comparable" };
                    view! {
                        <p class="compare__verdict" data-testid="compare-verdict" data-state=state role="status">{verdict.sentence()}</p>
                        <div class="table-scroll" tabindex="0" role="region" aria-label="Pins compared">
                        <table class="compare__table" data-testid="compare-table">
                            <thead><tr><th scope="col">"pin"</th>{titles.iter().map(|t| view! { <th scope="col">{t.clone()}</th> }).collect_view()}</tr></thead>
                            <tbody>
                                {pins.into_iter().map(|r| row_view(r, "compare-row")).collect_view()}
                            </tbody>
                        </table>
                        </div>
                        <div class="table-scroll" tabindex="0" role="region" aria-label="Numbers compared">
                        <table class="compare__table" data-testid="compare-numbers">
                            <caption>"Numbers (each with its window; shown, never judged)"</caption>
                            <tbody>{numbers.into_iter().map(|r| row_view(r, "compare-number")).collect_view()}</tbody>
                        </table>
                        </div>
                    }.into_any()
                }
            }}
        </section>
    }
}
