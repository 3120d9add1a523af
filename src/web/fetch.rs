//! Streaming `fetch` into a [`RequestTimeline`]: timestamps every body chunk as it
//! arrives, aborts on Stop or on a stall (one watchdog timer per request, not one per
//! read), and attaches Resource Timing after the run.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::core::record::{
    error_message_from_body, Outcome, RequestRecord, RequestTimeline, StreamEnd, WireTiming,
};
use crate::web::now_us;

/// Errors of this module (all become a request's [`Outcome`]).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The browser refused or failed the request (CORS, unreachable, mixed content, abort).
    #[error("network error: {0}")]
    Network(String),
}

fn js_err(v: JsValue) -> String {
    v.as_string()
        .or_else(|| {
            v.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{v:?}"))
}

/// A streaming POST with a JSON body.
pub struct StreamRequest<'a> {
    /// Full URL.
    pub url: &'a str,
    /// JSON body.
    pub body: &'a str,
    /// Bearer token, if any (never stored).
    pub api_key: Option<&'a str>,
    /// Extra header (e.g. `x-pinbench-fault`), if any.
    pub extra_header: Option<(&'a str, &'a str)>,
    /// Abandon the request after this long without a byte, ms.
    pub stall_timeout_ms: u64,
    /// Aborted by Stop.
    pub signal: &'a web_sys::AbortSignal,
}

/// Aborts a request when no byte arrived for the stall timeout, or when the run stops.
struct Watchdog {
    controller: web_sys::AbortController,
    last_byte_us: Rc<Cell<u64>>,
    stalled: Rc<Cell<bool>>,
    handle: i32,
    _tick: Closure<dyn FnMut()>,
    on_stop: Closure<dyn FnMut()>,
}

impl Watchdog {
    fn start(stall_ms: u64, run_signal: &web_sys::AbortSignal) -> Result<Self, String> {
        let controller = web_sys::AbortController::new().map_err(js_err)?;
        let last_byte_us = Rc::new(Cell::new(now_us()));
        let stalled = Rc::new(Cell::new(false));
        let (c, l, st) = (controller.clone(), last_byte_us.clone(), stalled.clone());
        let tick = Closure::<dyn FnMut()>::new(move || {
            if !st.get() && now_us().saturating_sub(l.get()) > stall_ms * 1000 {
                st.set(true);
                c.abort();
            }
        });
        let c2 = controller.clone();
        let on_stop = Closure::<dyn FnMut()>::new(move || c2.abort());
        if run_signal.aborted() {
            controller.abort();
        }
        let _ =
            run_signal.add_event_listener_with_callback("abort", on_stop.as_ref().unchecked_ref());
        let period = (stall_ms / 4).clamp(10, 1000) as i32;
        let window = web_sys::window().ok_or("no window")?;
        let handle = window
            .set_interval_with_callback_and_timeout_and_arguments_0(
                tick.as_ref().unchecked_ref(),
                period,
            )
            .map_err(js_err)?;
        Ok(Self {
            controller,
            last_byte_us,
            stalled,
            handle,
            _tick: tick,
            on_stop,
        })
    }

    fn touch(&self, t_us: u64) {
        self.last_byte_us.set(t_us);
    }

    fn stop(&self, run_signal: &web_sys::AbortSignal) {
        if let Some(w) = web_sys::window() {
            w.clear_interval_with_handle(self.handle);
        }
        let _ = run_signal
            .remove_event_listener_with_callback("abort", self.on_stop.as_ref().unchecked_ref());
    }
}

/// Runs one streaming request to completion and returns its record.
pub async fn run(req: StreamRequest<'_>, mut tl: RequestTimeline) -> RequestRecord {
    let dog = match Watchdog::start(req.stall_timeout_ms, req.signal) {
        Ok(d) => d,
        Err(m) => return tl.finish(now_us(), StreamEnd::Failed(Outcome::Network { message: m })),
    };
    let end = match run_inner(&req, &mut tl, &dog).await {
        Ok(end) => end,
        Err(FetchError::Network(m)) => StreamEnd::Failed(if dog.stalled.get() {
            Outcome::Stalled {
                timeout_us: req.stall_timeout_ms * 1000,
            }
        } else if req.signal.aborted() {
            Outcome::Aborted
        } else {
            Outcome::Network { message: m }
        }),
    };
    dog.stop(req.signal);
    tl.finish(now_us(), end)
}

async fn run_inner(
    req: &StreamRequest<'_>,
    tl: &mut RequestTimeline,
    dog: &Watchdog,
) -> Result<StreamEnd, FetchError> {
    let net = |e: JsValue| FetchError::Network(js_err(e));
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_mode(web_sys::RequestMode::Cors);
    init.set_body(&JsValue::from_str(req.body));
    init.set_signal(Some(&dog.controller.signal()));
    let headers = web_sys::Headers::new().map_err(net)?;
    let _ = headers.set("Content-Type", "application/json");
    if let Some(k) = req.api_key.filter(|k| !k.is_empty()) {
        let _ = headers.set("Authorization", &format!("Bearer {k}"));
    }
    if let Some((k, v)) = req.extra_header {
        let _ = headers.set(k, v);
    }
    init.set_headers(&headers);
    let request = web_sys::Request::new_with_str_and_init(req.url, &init).map_err(net)?;
    let window = web_sys::window().ok_or_else(|| FetchError::Network("no window".into()))?;
    let resp: web_sys::Response = JsFuture::from(window.fetch_with_request(&request))
        .await
        .map_err(net)?
        .dyn_into()
        .map_err(|_| FetchError::Network("not a Response".into()))?;
    let t = now_us();
    dog.touch(t);
    let status = resp.status();
    let ctype = resp.headers().get("content-type").ok().flatten();
    tl.on_headers(t, status, ctype.as_deref());
    if !(200..300).contains(&status) {
        let text = match JsFuture::from(resp.text().map_err(net)?).await {
            Ok(t) => t.as_string().unwrap_or_default(),
            Err(_) => String::new(),
        };
        return Ok(StreamEnd::Failed(Outcome::Http {
            status,
            message: error_message_from_body(&text),
        }));
    }
    let Some(body) = resp.body() else {
        return Ok(StreamEnd::Eof);
    };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(net)?;
        let t = now_us();
        dog.touch(t);
        if Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            return Ok(StreamEnd::Eof);
        }
        if let Ok(v) = Reflect::get(&chunk, &"value".into()) {
            tl.on_bytes(t, &Uint8Array::new(&v).to_vec());
        }
    }
}

/// Starts a fresh Resource Timing buffer large enough for a run.
pub fn reset_resource_timing() {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        p.clear_resource_timings();
        p.set_resource_timing_buffer_size(1_000_000);
    }
}

/// Attaches Resource Timing to records of requests to `url`: each record (in send order)
/// takes the unused entry whose start is nearest its `t_send`, so concurrent requests to
/// the same URL each get their own entry. Cross-origin entries are only detailed when the
/// server sends `Timing-Allow-Origin`.
pub fn attach_resource_timing(records: &mut [RequestRecord], url: &str) {
    let Some(perf) = web_sys::window().and_then(|w| w.performance()) else {
        return;
    };
    let mut entries: Vec<web_sys::PerformanceResourceTiming> = perf
        .get_entries_by_name_with_entry_type(url, "resource")
        .iter()
        .filter_map(|e| e.dyn_into().ok())
        .collect();
    entries.sort_by(|a, b| a.start_time().total_cmp(&b.start_time()));
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&i| records[i].t_send_us);
    let us = |ms: f64| (ms * 1000.0).round().max(0.0) as u64;
    let starts: Vec<u64> = entries.iter().map(|e| us(e.start_time())).collect();
    let mut used = vec![false; entries.len()];
    for i in order {
        let rec = &mut records[i];
        // The unused entry whose start is nearest this request's send, within 50 ms.
        let pos = starts.partition_point(|&s| s < rec.t_send_us);
        let mut best: Option<(u64, usize)> = None;
        for k in (pos.saturating_sub(64)..(pos + 64).min(starts.len())).filter(|&k| !used[k]) {
            let d = starts[k].abs_diff(rec.t_send_us);
            if d <= 50_000 && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, k));
            }
        }
        let Some((_, k)) = best else { continue };
        used[k] = true;
        let e = &entries[k];
        let proto = e.next_hop_protocol();
        if !proto.is_empty() {
            rec.protocol = Some(proto);
        }
        if e.request_start() > 0.0 {
            rec.wire = Some(WireTiming {
                connect_start_us: us(e.connect_start()),
                request_start_us: us(e.request_start()),
                response_start_us: us(e.response_start()),
                response_end_us: us(e.response_end()),
            });
        }
    }
}

/// A plain (non-streaming) request; returns status and body text.
pub async fn request_text(
    method: &str,
    url: &str,
    body: Option<&str>,
) -> Result<(u16, String), String> {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_mode(web_sys::RequestMode::Cors);
    if let Some(b) = body {
        init.set_body(&JsValue::from_str(b));
        let headers = web_sys::Headers::new().map_err(js_err)?;
        let _ = headers.set("Content-Type", "application/json");
        init.set_headers(&headers);
    }
    let request = web_sys::Request::new_with_str_and_init(url, &init).map_err(js_err)?;
    let window = web_sys::window().ok_or("no window")?;
    let resp: web_sys::Response = JsFuture::from(window.fetch_with_request(&request))
        .await
        .map_err(js_err)?
        .dyn_into()
        .map_err(|_| "not a Response")?;
    let text = JsFuture::from(resp.text().map_err(js_err)?)
        .await
        .map_err(js_err)?
        .as_string()
        .unwrap_or_default();
    Ok((resp.status(), text))
}

/// POSTs JSON; returns status and body text.
pub async fn post_json(url: &str, body: &str) -> Result<(u16, String), String> {
    request_text("POST", url, Some(body)).await
}
