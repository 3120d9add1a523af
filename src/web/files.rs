//! Getting a shared file's text into the page: a picked or dropped `File`, or a URL
//! fetched with CORS; plus the clipboard and the page's own location. Sizes are checked
//! before anything is read.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::core::viewer::{check_size, ViewerError};

/// Reads a `File` as text, refusing it before reading when it is over the size limit.
pub async fn read_file(file: &web_sys::File) -> Result<String, String> {
    check_size(file.size() as u64).map_err(|e: ViewerError| e.to_string())?;
    // Bytes, not `File.text()`: a JS string would be decoded to UTF-16 and re-encoded.
    let buf = JsFuture::from(file.array_buffer())
        .await
        .map_err(|e| format!("could not read {}: {e:?}", file.name()))?;
    String::from_utf8(js_sys::Uint8Array::new(&buf).to_vec())
        .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

/// Fetches a report from a URL (CORS). The size is checked from `Content-Length`
/// before the body is read, and while it is read (a body without one, or gzip, is
/// stopped at the limit). An `http://` file from an `https://` page is refused with a
/// clear message (the browser would block it as mixed content).
pub async fn fetch_text(url: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let page_https = window
        .location()
        .protocol()
        .ok()
        .is_some_and(|p| p == "https:");
    if page_https && url.trim_start().to_ascii_lowercase().starts_with("http://") {
        return Err(format!(
            "Mixed content: this page is HTTPS and the browser will not read {url} over plain http://. Host the file over HTTPS, or download it and open it here."
        ));
    }
    let init = web_sys::RequestInit::new();
    init.set_mode(web_sys::RequestMode::Cors);
    let req = web_sys::Request::new_with_str_and_init(url, &init)
        .map_err(|_| format!("{url} is not a URL the browser can fetch"))?;
    let resp: web_sys::Response = JsFuture::from(window.fetch_with_request(&req))
        .await
        .map_err(|_| {
            format!(
                "could not fetch {url}: the host does not allow cross-origin reads (no CORS header \
                 Access-Control-Allow-Origin for this page) or is unreachable. Download the file \
                 and open it here instead."
            )
        })?
        .dyn_into()
        .map_err(|_| "not a response".to_owned())?;
    if !resp.ok() {
        return Err(format!("{url} answered HTTP {}", resp.status()));
    }
    if let Some(len) = resp
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|l| l.parse::<u64>().ok())
    {
        check_size(len).map_err(|e| e.to_string())?;
    }
    // Read the body in parts and stop at the limit: without Content-Length (chunked, or
    // gzip, where the header counts compressed bytes) the size is only known by reading.
    let Some(body) = resp.body() else {
        return Ok(String::new());
    };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let (done_key, value_key) = (JsValue::from_str("done"), JsValue::from_str("value"));
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| format!("reading {url} failed: {e:?}"))?;
        let done = js_sys::Reflect::get(&chunk, &done_key)
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        if let Ok(v) = js_sys::Reflect::get(&chunk, &value_key) {
            bytes.extend(js_sys::Uint8Array::new(&v).to_vec());
        }
        if let Err(e) = check_size(bytes.len() as u64) {
            let _ = reader.cancel();
            return Err(e.to_string());
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("{url} is not UTF-8 text"))
}

/// Copies text to the clipboard.
pub async fn copy(text: &str) -> Result<(), String> {
    let nav = web_sys::window().ok_or("no window")?.navigator();
    JsFuture::from(nav.clipboard().write_text(text))
        .await
        .map(|_| ())
        .map_err(|_| "the browser refused clipboard access; copy the text below by hand".into())
}

/// The page's origin + path (no query, no fragment).
pub fn page_base() -> String {
    web_sys::window()
        .and_then(|w| {
            let l = w.location();
            Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
        })
        .unwrap_or_default()
}

/// A query parameter of the page URL.
pub fn query_param(name: &str) -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
    params.get(name)
}

/// The page's fragment (without `#`).
pub fn fragment() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|h| h.trim_start_matches('#').to_owned())
        .unwrap_or_default()
}

/// `encodeURIComponent`.
pub fn encode_component(s: &str) -> String {
    js_sys::encode_uri_component(s).into()
}

/// Raw DEFLATE (RFC 1951) of `bytes`, by the browser's `CompressionStream("deflate-raw")`
/// (so the wasm carries no compressor).
pub async fn deflate_raw(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let fail = |_: JsValue| {
        "this browser cannot compress the card link (CompressionStream \"deflate-raw\")".to_owned()
    };
    let ctor: js_sys::Function =
        js_sys::Reflect::get(&js_sys::global(), &"CompressionStream".into())
            .map_err(fail)?
            .dyn_into()
            .map_err(fail)?;
    let stream = js_sys::Reflect::construct(&ctor, &js_sys::Array::of1(&"deflate-raw".into()))
        .map_err(fail)?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(fail)?;
    let piped = blob.stream().pipe_through(stream.unchecked_ref());
    let response = web_sys::Response::new_with_opt_readable_stream(Some(&piped)).map_err(fail)?;
    let buffer = JsFuture::from(response.array_buffer().map_err(fail)?)
        .await
        .map_err(fail)?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Whether the user prefers a dark colour scheme.
pub fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}
