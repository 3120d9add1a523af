//! Browser glue (wasm32 only): the clock, streaming fetch, Resource Timing, storage,
//! random bytes and downloads. Everything here is thin; decisions live in `core`.

pub mod fetch;
pub mod files;
pub mod host;
pub mod keystore;
pub mod store;
pub mod worker;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    /// The global `performance` (a page's or a worker's), read once.
    static PERFORMANCE: Option<web_sys::Performance> =
        js_sys::Reflect::get(&js_sys::global(), &"performance".into())
            .ok()
            .and_then(|p| p.dyn_into::<web_sys::Performance>().ok());
}

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (a page's or a worker's).
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &web_sys::Request) -> js_sys::Promise;
    /// The global `setTimeout`.
    #[wasm_bindgen(js_name = setTimeout)]
    fn global_set_timeout(handler: &js_sys::Function, ms: i32) -> i32;
    /// The global `clearTimeout`.
    #[wasm_bindgen(js_name = clearTimeout)]
    fn global_clear_timeout(handle: i32);
    /// The global `setInterval`.
    #[wasm_bindgen(js_name = setInterval)]
    fn global_set_interval(handler: &js_sys::Function, ms: i32) -> i32;
    /// The global `clearInterval`.
    #[wasm_bindgen(js_name = clearInterval)]
    fn global_clear_interval(handle: i32);
}

/// `fetch` in whichever global scope this code runs (page or worker).
pub fn fetch_request(request: &web_sys::Request) -> js_sys::Promise {
    global_fetch(request)
}

/// `setTimeout` in this global scope; returns the handle.
pub fn set_timeout(handler: &js_sys::Function, ms: i32) -> i32 {
    global_set_timeout(handler, ms.max(0))
}

/// `clearTimeout` in this global scope.
pub fn clear_timeout(handle: i32) {
    global_clear_timeout(handle)
}

/// `setInterval` in this global scope; returns the handle.
pub fn set_interval(handler: &js_sys::Function, ms: i32) -> i32 {
    global_set_interval(handler, ms.max(1))
}

/// `clearInterval` in this global scope.
pub fn clear_interval(handle: i32) {
    global_clear_interval(handle)
}

/// This scope's `performance`, when it has one.
pub fn performance() -> Option<web_sys::Performance> {
    PERFORMANCE.with(|p| p.clone())
}

/// Whether this code runs in a worker (no `window`).
pub fn in_worker() -> bool {
    js_sys::global().dyn_ref::<web_sys::Window>().is_none()
}

/// Microseconds since this scope's time origin (`performance.now()`), as an integer.
/// Returns 0 when no `Performance` object exists (e.g. a worklet).
pub fn now_us() -> u64 {
    PERFORMANCE.with(|p| {
        p.as_ref()
            .map(|p| (p.now() * 1000.0).round().max(0.0) as u64)
            .unwrap_or(0)
    })
}

/// The wall clock (Unix µs) at this scope's time origin (`performance.timeOrigin`), the
/// zero of [`now_us`].
pub fn clock_epoch_us() -> Option<u64> {
    let origin = performance()?.time_origin();
    (origin.is_finite() && origin > 0.0).then(|| (origin * 1000.0).round() as u64)
}

/// Smallest step of `performance.now()` observed over a short busy loop, µs.
pub fn timer_resolution_us() -> u64 {
    let Some(p) = performance() else {
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

/// `crossOriginIsolated` of this scope (page or worker).
pub fn cross_origin_isolated() -> bool {
    js_sys::Reflect::get(&js_sys::global(), &"crossOriginIsolated".into())
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// 32 random bytes from this scope's `crypto.getRandomValues`.
pub fn random_seed() -> Result<[u8; 32], String> {
    // Fails closed: keys, nonces and arrivals never come from anything but the
    // browser's cryptographic generator.
    let mut b = [0u8; 32];
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())
        .ok()
        .and_then(|c| c.dyn_into::<web_sys::Crypto>().ok())
        .ok_or("This browser has no crypto.getRandomValues: nothing random can be made, so no key or run is started.")?;
    crypto
        .get_random_values_with_u8_array(&mut b)
        .map_err(|e| {
            format!(
                "crypto.getRandomValues failed ({}): no key or run is started.",
                crate::web::fetch::js_err(e)
            )
        })?;
    Ok(b)
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
