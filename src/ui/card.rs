//! The embeddable card route (about 600×200, light or dark): `?view=card&src=URL` for a
//! hosted report, or `#card=…` where the card's signed data travels in the link itself.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::core::card::{self, Card};
use crate::core::viewer::{self, Opened};
use crate::web::files;

use super::viewer::{card_status, load_trusted};

/// What the card shows, once loaded.
#[derive(Clone)]
struct Shown {
    card: Card,
    status: String,
    state: &'static str,
    full_link: String,
    note: String,
}

/// Whether the page was opened as a card.
pub fn is_card_route() -> bool {
    files::query_param("view").as_deref() == Some("card")
        || files::fragment()
            .split('&')
            .any(|p| p.starts_with(card::FRAGMENT_KEY))
}

fn theme_is_dark() -> bool {
    let frag = files::fragment();
    let from_frag = frag.split('&').find_map(|p| p.strip_prefix("theme="));
    match files::query_param("theme").as_deref().or(from_frag) {
        Some("dark") => true,
        Some("light") => false,
        _ => files::prefers_dark(),
    }
}

async fn load() -> Result<Shown, String> {
    let trusted = load_trusted();
    let base = files::page_base();
    if let Some(src) = files::query_param("src") {
        let text = files::fetch_text(&src).await?;
        let opened = viewer::open("report", &text, &trusted).map_err(|e| e.to_string())?;
        let Opened::Report(o) = opened else {
            return Err("that file is not a pinbench report; open it in the full viewer".into());
        };
        // The card is recomputed from the verified body, so it cannot say more than it.
        let card = Card::of(&o.report).map_err(|e| e.to_string())?;
        let (status, state) = card_status(&o.verification, &trusted);
        let mismatch = o.mismatches.as_ref().map(|m| !m.is_empty()).unwrap_or(true);
        return Ok(Shown {
            card,
            status: if mismatch {
                format!("{status} · figures do not match records")
            } else {
                status
            },
            state,
            full_link: format!("{base}?src={}", files::encode_component(&src)),
            note: String::new(),
        });
    }
    let card = Card::from_fragment(&files::fragment()).map_err(|e| e.to_string())?;
    let (status, state) = card_status(&card.verify(), &trusted);
    Ok(Shown {
        card,
        status,
        state,
        full_link: base,
        note: "card only: the report's records travel separately".into(),
    })
}

/// The card page.
#[component]
pub fn CardPage() -> impl IntoView {
    let (shown, set_shown) = signal(None::<Result<Shown, String>>);
    spawn_local(async move { set_shown.set(Some(load().await)) });
    let dark = theme_is_dark();
    view! {
        <main class="card" class:card--dark=dark data-testid="card" aria-label="pinbench result card">
            {move || match shown.get() {
                None => view! { <p data-testid="card-loading">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="card__error" role="alert" data-testid="card-error">{e}</p> }.into_any(),
                Some(Ok(s)) => {
                    let b = s.card.body.clone();
                    let (notes, records) = b.notes();
                    view! {
                        <div class="card__head">
                            <h1 class="card__model" data-testid="card-model">{b.model()}</h1>
                            <span class=format!("card__sig card__sig--{}", s.state) data-testid="card-sig" data-state=s.state>{s.status.clone()}</span>
                        </div>
                        <div class="card__body">
                            <dl class="card__pins" data-testid="card-pins">
                                {b.pins().into_iter().map(|p| view! { <div><dt>{p.label}</dt><dd>{p.value}</dd></div> }).collect_view()}
                            </dl>
                            <dl class="card__headline" data-testid="card-headline">
                                {b.headline().into_iter().map(|h| view! { <div><dt>{h.label}</dt><dd><strong>{h.value}</strong>" "<small>{format!("({})", h.window)}</small></dd></div> }).collect_view()}
                            </dl>
                        </div>
                        <div class="card__foot">
                            {b.client_invalid().then(|| view! { <span class="card__invalid">"INVALID: the client limited this run · "</span> })}
                            {(b.steps() > 1).then(|| format!("step 1 of {} · ", b.steps()))}
                            {records.map(|n| format!("{n} requests · "))}
                            {(!notes.is_empty()).then(|| view! { <span data-testid="card-notes">{notes.join(" · ")}" · "</span> })}
                            <span>{s.note.clone()}</span>
                            " "
                            <a data-testid="card-full-link" href=s.full_link.clone() target="_blank" rel="noopener">"full view"</a>
                        </div>
                    }.into_any()
                }
            }}
        </main>
    }
}
