//! The embeddable card page (`card/` in the bundle), its own small wasm without Leptos:
//! `card/?src=URL` for a hosted report, `card/?series=URL` for `pinbench watch`'s series
//! file (the latest card and a trend line), or `card/#card=…` where the card's signed data
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
        // A series (`pinbench watch`'s file: the latest card and the trend line), a hosted
        // report, or the link's own card. One fetch for either file.
        let series = files::query_param("series");
        let url = series.clone().or_else(|| files::query_param("src"));
        let fetched = match &url {
            Some(u) => Some(files::fetch_text(u).await),
            None => None,
        };
        let html = match (fetched, url) {
            (Some(Err(e)), _) => card::error_html(&e),
            (Some(Ok(text)), Some(url)) if series.is_some() => {
                // The reports sit beside the series file.
                let dir = url.rfind('/').map_or("", |i| &url[..=i]);
                match pinbench::core::series::view_of_series(&text, &trusted, |report| {
                    format!(
                        "{app}?src={}",
                        files::encode_component(&format!("{dir}{report}"))
                    )
                }) {
                    Ok(v) => pinbench::core::series::series_html(&v),
                    Err(e) => card::error_html(&e),
                }
            }
            (Some(Ok(text)), url) => page_or_error(card::view_of_report(
                &text,
                &trusted,
                format!(
                    "{app}?src={}",
                    files::encode_component(url.as_deref().unwrap_or_default())
                ),
            )),
            // A link's own card: a series of one.
            (None, _) => match pinbench::core::series::view_of_cards(
                [("", fragment.as_str())].into_iter(),
                &trusted,
                |_| app.clone(),
                "card only: the report's records travel separately",
            ) {
                Ok(v) => pinbench::core::series::series_html(&v),
                Err(e) => card::error_html(&e),
            },
        };
        main.set_inner_html(&html);
    });
}

/// The card page's markup, or the error's.
#[cfg(target_arch = "wasm32")]
fn page_or_error(shown: Result<pinbench::core::card::CardView, String>) -> String {
    use pinbench::core::card;
    match shown {
        Ok(v) => card::page_html(&v),
        Err(e) => card::error_html(&e),
    }
}

/// Natively there is no card page: it is built for the browser by `trunk build`.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("pinbench-card is the browser's card page (built by `trunk build`, see README.md)");
    std::process::exit(2);
}
