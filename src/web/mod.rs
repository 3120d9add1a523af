//! Browser glue (wasm32 only): the clock, streaming fetch, Resource Timing, storage,
//! random bytes and downloads. Everything here is thin; decisions live in `core`.

pub mod fetch;
pub mod files;
pub mod runner;

use wasm_bindgen::JsCast;

/// Microseconds since the page's time origin (`performance.now()`), as an integer.
/// Returns 0 when no `Performance` object exists (e.g. a worklet).
pub fn now_us() -> u64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| (p.now() * 1000.0).round().max(0.0) as u64)
        .unwrap_or(0)
}

/// Smallest step of `performance.now()` observed over a short busy loop, µs.
pub fn timer_resolution_us() -> u64 {
    let Some(p) = web_sys::window().and_then(|w| w.performance()) else {
        return 0;
    };
    let mut best = f64::MAX;
    let mut last = p.now();
    let mut seen = 0;
    for _ in 0..200_000 {
        let t = p.now();
        if t > last {
            best = best.min(t - last);
            last = t;
            seen += 1;
            if seen > 50 {
                break;
            }
        }
    }
    (best * 1000.0).round() as u64
}

/// `crossOriginIsolated` of the page.
pub fn cross_origin_isolated() -> bool {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"crossOriginIsolated".into()).ok())
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// 32 random bytes from `crypto.getRandomValues`.
pub fn random_seed() -> [u8; 32] {
    let mut b = [0u8; 32];
    if let Some(c) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = c.get_random_values_with_u8_array(&mut b);
    }
    b
}

/// `localStorage`, when available.
pub fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Offers `text` as a file download named `name`.
pub fn download(name: &str, mime: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&text.into());
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts)
        .map_err(|e| format!("{e:?}"))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| format!("{e:?}"))?;
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = doc
        .create_element("a")
        .map_err(|e| format!("{e:?}"))?
        .dyn_into()
        .map_err(|_| "not an anchor")?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}
