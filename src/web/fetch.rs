//! The page's network for the core's lifecycle ([`PageHost`]: probes, `/tokenize`, the
//! behaviour probes' timed streams) and Resource Timing: the scope's buffer is reset before a
//! run (sized to keep its first requests' entries) and its entries are paired to the
//! records after it. The streaming requests of a run are in [`crate::web::host`].

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::core::record::{RequestRecord, WireTiming};

/// A JS error value as text (its message, or its string form).
pub(crate) fn js_err(v: JsValue) -> String {
    v.as_string()
        .or_else(|| {
            v.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{v:?}"))
}

/// How many Resource Timing entries a run keeps: the scope's buffer holds the run's first
/// this many requests' entries and drops the rest, so later requests get no wire timing
/// and no protocol (the report says so,
/// [`crate::core::metrics::ClientEnv::wire_timing_read`]). A buffer sized for a whole run
/// (it was 1,000,000 entries) keeps a DOM object per request to the run's end; this one
/// holds at most this many. Long-run memory is measured by `tests/e2e/soak_bench.mjs`
/// (docs/MEASUREMENTS.md).
pub const WIRE_TIMING_READ_MAX: u32 = 4_096;

/// Starts a fresh Resource Timing buffer for a run (read once, at its end:
/// [`ResourceTimings::read`]).
pub fn reset_resource_timing() {
    if let Some(p) = crate::web::performance() {
        p.clear_resource_timings();
        p.set_resource_timing_buffer_size(WIRE_TIMING_READ_MAX);
    }
}

/// What a run keeps of one Resource Timing entry of its requests: its start, µs, its
/// protocol and its wire timing. A tuple: the worker sends it to the page as a JSON array
/// (a struct's field names would cost the bundle their readers).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct TimingEntry(u64, Option<String>, Option<WireTiming>);

/// A run's Resource Timing, read from the scope's buffer when the run ends (in the run's
/// worker; the page pairs it to the records it reads back from storage).
#[derive(Debug, Default)]
pub struct ResourceTimings {
    /// The entries of the run's requests.
    pub entries: Vec<TimingEntry>,
    /// The buffer was full: entries of later requests were dropped.
    full: bool,
}

impl ResourceTimings {
    /// Reads the buffer's entries of requests to `url` and clears the buffer.
    pub fn read(url: &str) -> Self {
        let mut out = Self::default();
        let Some(perf) = crate::web::performance() else {
            return out;
        };
        let all = perf.get_entries_by_type("resource");
        out.full = all.length() >= WIRE_TIMING_READ_MAX;
        let us = |ms: f64| (ms * 1000.0).round().max(0.0) as u64;
        for e in all
            .iter()
            .filter_map(|e| e.dyn_into::<web_sys::PerformanceResourceTiming>().ok())
            .filter(|e| e.name() == url)
        {
            let proto = e.next_hop_protocol();
            out.entries.push(TimingEntry(
                us(e.start_time()),
                (!proto.is_empty()).then_some(proto),
                (e.request_start() > 0.0).then(|| WireTiming {
                    connect_start_us: us(e.connect_start()),
                    request_start_us: us(e.request_start()),
                    response_start_us: us(e.response_start()),
                    response_end_us: us(e.response_end()),
                }),
            ));
        }
        perf.clear_resource_timings();
        out
    }

    /// How many entries were read, when the buffer was full (later requests have none);
    /// `None`: the buffer held every request's entry.
    pub fn read_limit(&self) -> Option<u32> {
        self.full
            .then(|| u32::try_from(self.entries.len()).unwrap_or(u32::MAX))
    }

    /// Attaches the entries to the records: each record (in send order) takes the unused
    /// entry whose start is nearest its `t_send`, within 50 ms, so concurrent requests to
    /// the same URL each get their own entry. Cross-origin entries are only detailed when
    /// the server sends `Timing-Allow-Origin`.
    pub fn attach(mut entries: Vec<TimingEntry>, records: &mut [RequestRecord]) {
        crate::core::sort::sort_by_key(&mut entries, |e| e.0);
        let mut order: Vec<usize> = (0..records.len()).collect();
        crate::core::sort::sort_by_key(&mut order, |&i| (records[i].t_send_us, i));
        let mut used = vec![false; entries.len()];
        for i in order {
            let rec = &mut records[i];
            let pos = entries.partition_point(|e| e.0 < rec.t_send_us);
            let mut best: Option<(u64, usize)> = None;
            let window = pos.saturating_sub(64)..(pos + 64).min(entries.len());
            for k in window.filter(|&k| !used[k]) {
                let d = entries[k].0.abs_diff(rec.t_send_us);
                if d <= 50_000 && best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, k));
                }
            }
            let Some((_, k)) = best else { continue };
            used[k] = true;
            let e = &mut entries[k];
            if let Some(p) = e.1.take() {
                rec.protocol = Some(p);
            }
            if e.2.is_some() {
                rec.wire = e.2;
            }
        }
    }
}

/// The browser host of the core's lifecycle ([`crate::core::lifecycle::Host`]): `fetch`,
/// `performance.now()`, `crypto.getRandomValues` and timers. It decides nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageHost;

/// How long a plain request (not a stream) may go unanswered, ms.
pub const PLAIN_REQUEST_TIMEOUT_MS: u32 = 30_000;

/// A `web_sys::Request` of the core's request, with a test's extra header and an abort
/// signal when given.
pub(crate) fn web_request(
    req: &crate::core::lifecycle::HttpRequest,
    extra: Option<&(String, String)>,
    signal: Option<&web_sys::AbortSignal>,
) -> Result<web_sys::Request, String> {
    let init = web_sys::RequestInit::new();
    init.set_method(req.method);
    init.set_mode(web_sys::RequestMode::Cors);
    let headers = web_sys::Headers::new().map_err(js_err)?;
    for (k, v) in req.headers.iter().chain(extra) {
        headers.set(k, v).map_err(js_err)?;
    }
    init.set_headers(&headers);
    if let Some(b) = &req.body {
        init.set_body(&JsValue::from_str(b));
    }
    init.set_signal(signal);
    web_sys::Request::new_with_str_and_init(&req.url, &init).map_err(js_err)
}

async fn send(request: &web_sys::Request) -> Result<web_sys::Response, String> {
    JsFuture::from(crate::web::fetch_request(request))
        .await
        .map_err(js_err)?
        .dyn_into()
        .map_err(|_| "not a Response".to_owned())
}

impl crate::core::lifecycle::Host for PageHost {
    fn run_host(&self) -> crate::core::metrics::RunHost {
        if crate::web::in_worker() {
            crate::core::metrics::RunHost::Worker
        } else {
            crate::core::metrics::RunHost::MainThread
        }
    }

    fn now_us(&self) -> u64 {
        crate::web::now_us()
    }

    fn random_seed(&self) -> Result<[u8; 32], String> {
        crate::web::random_seed()
    }

    fn page_is_https(&self) -> bool {
        web_sys::window()
            .and_then(|w| w.location().protocol().ok())
            .is_some_and(|p| p == "https:")
    }

    async fn request(
        &self,
        req: crate::core::lifecycle::HttpRequest,
    ) -> Result<(u16, String), String> {
        // A plain request (a probe's read, the calibration) that never answers must not
        // leave the page waiting forever.
        let signal = web_sys::AbortSignal::timeout_with_u32(PLAIN_REQUEST_TIMEOUT_MS);
        let resp = send(&web_request(&req, None, Some(&signal))?)
            .await
            .map_err(|e| {
                if signal.aborted() {
                    format!("no answer in {} s", PLAIN_REQUEST_TIMEOUT_MS / 1000)
                } else {
                    e
                }
            })?;
        let text = JsFuture::from(resp.text().map_err(js_err)?)
            .await
            .map_err(js_err)?
            .as_string()
            .unwrap_or_default();
        Ok((resp.status(), text))
    }

    async fn stream(
        &self,
        req: crate::core::lifecycle::HttpRequest,
        sink: &mut dyn crate::core::lifecycle::StreamSink,
    ) -> Result<u64, String> {
        let resp = send(&web_request(&req, None, None)?).await?;
        let ctype = resp.headers().get("content-type").ok().flatten();
        sink.on_headers(crate::web::now_us(), resp.status(), ctype.as_deref());
        let body = resp.body().ok_or("no response body")?;
        read_body(body, |t, bytes| sink.on_bytes(t, bytes)).await?;
        Ok(crate::web::now_us())
    }

    async fn sleep_ms(&self, ms: u32) {
        let p = js_sys::Promise::new(&mut |resolve, _| {
            crate::web::set_timeout(&resolve, i32::try_from(ms).unwrap_or(i32::MAX));
        });
        let _ = JsFuture::from(p).await;
    }
}

/// Reads a response body to its end, handing over each read's bytes with the time the read
/// resolved (`now_us`, taken first thing). The one read loop of runs and probes.
pub(crate) async fn read_body(
    body: web_sys::ReadableStream,
    mut on_bytes: impl FnMut(u64, &[u8]),
) -> Result<(), String> {
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let (done_key, value_key) = (JsValue::from_str("done"), JsValue::from_str("value"));
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(js_err)?;
        let t = crate::web::now_us();
        if js_sys::Reflect::get(&chunk, &done_key)
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            return Ok(());
        }
        if let Ok(v) = js_sys::Reflect::get(&chunk, &value_key) {
            on_bytes(t, &js_sys::Uint8Array::new(&v).to_vec());
        }
    }
}

/// Reads at most `cap` bytes of a body (then cancels the rest), as text.
pub(crate) async fn read_capped(body: web_sys::ReadableStream, cap: usize) -> String {
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let (done_key, value_key) = (JsValue::from_str("done"), JsValue::from_str("value"));
    let mut out = Vec::new();
    while out.len() < cap {
        let Ok(chunk) = JsFuture::from(reader.read()).await else {
            break;
        };
        if js_sys::Reflect::get(&chunk, &done_key)
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            break;
        }
        if let Ok(v) = js_sys::Reflect::get(&chunk, &value_key) {
            out.extend_from_slice(&js_sys::Uint8Array::new(&v).to_vec());
        }
    }
    if out.len() >= cap {
        let _ = reader.cancel();
        out.truncate(cap);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every header of a response the page may read (a cross-origin answer shows only the
/// CORS-safelisted ones and those the server lists in `Access-Control-Expose-Headers`).
pub fn header_pairs(headers: &web_sys::Headers) -> Vec<(String, String)> {
    let Ok(Some(iter)) = js_sys::try_iter(headers) else {
        return Vec::new();
    };
    iter.filter_map(|entry| {
        let pair = js_sys::Array::from(&entry.ok()?);
        Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
    })
    .collect()
}
