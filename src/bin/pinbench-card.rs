//! The embeddable card page (`card/` in the bundle), its own small wasm without Leptos:
//! `card/?src=URL` for a hosted report, or `card/#card=…` where the card's signed data
//! travels in the link itself; `&theme=dark|light` picks the colours. Glue only: the
//! checks and the markup come from `core::card`.

#[cfg(target_arch = "wasm32")]
fn main() {
    use pinbench::core::card;
    use pinbench::web::{files, store};

    let Some(main) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("card"))
    else {
        return;
    };
    let fragment = files::fragment();
    let theme = files::query_param("theme").or_else(|| {
        fragment
            .split('&')
            .find_map(|p| p.strip_prefix("theme="))
            .map(str::to_owned)
    });
    let dark = match theme.as_deref() {
        Some("dark") => true,
        Some("light") => false,
        _ => files::prefers_dark(),
    };
    if dark {
        main.set_class_name("card card--dark");
    }
    // The app sits one level up: `…/pinbench/card/` → `…/pinbench/`.
    let app = card::app_of_card_page(&files::page_base());
    wasm_bindgen_futures::spawn_local(async move {
        let trusted = store::load_trusted();
        let shown = match files::query_param("src") {
            Some(src) => match files::fetch_text(&src).await {
                Ok(text) => card::view_of_report(
                    &text,
                    &trusted,
                    format!("{app}?src={}", files::encode_component(&src)),
                ),
                Err(e) => Err(e),
            },
            None => card::view_of_fragment(&fragment, &trusted, app),
        };
        main.set_inner_html(&match shown {
            Ok(v) => card::page_html(&v),
            Err(e) => card::error_html(&e),
        });
    });
}

/// Natively there is no card page: it is built for the browser by `trunk build`.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("pinbench-card is the browser's card page (built by `trunk build`, see README.md)");
    std::process::exit(2);
}
