//! The browser host of a [`RunSession`]: runs in a dedicated Web Worker (the default) or
//! on the page's main thread (the fallback). It only moves bytes and events: it takes a
//! timestamp for each body read and hands the bytes to the session, sets one timer for
//! the session's next wake-up, and publishes progress at most 10 times a second and
//! the completed records every few seconds (for the checkpoint). Every decision is the
//! session's.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use serde::{Deserialize, Serialize};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::core::histogram::Hist;
use crate::core::http::ApiKey;
use crate::core::metrics::{ClientEnv, RunHost};
use crate::core::pins::RunConfig;
use crate::core::prompt::Calibration;
use crate::core::record::{
    error_message_from_body, Outcome, RequestRecord, StreamEnd, MAX_ERROR_BODY,
};
use crate::core::session::{Outgoing, Progress, RunSession, Transport, Wake};
use crate::web::fetch::{self, js_err};
use crate::web::{self, now_us};

/// How often progress is published, ms (the page renders at most this often; the live
/// charts redraw at 2 Hz, and at 10 Hz the messages and their renders cost the page a
/// measurable share of a core at c=32).
pub const PROGRESS_EVERY_MS: i32 = 250;
/// How often completed records are handed over for the checkpoint, ms.
pub const CHECKPOINT_EVERY_MS: i32 = 1_000;
/// The event-loop lag probe's period, ms.
pub const LAG_PROBE_MS: i32 = 20;

/// What a run needs, as the page sends it to the host.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The pinned configuration.
    pub cfg: RunConfig,
    /// Prompt calibration measured before the run.
    pub calibration: Calibration,
    /// API key, bound to its origin (memory only; never stored or reported).
    pub api_key: Option<ApiKey>,
    /// Extra header for every request (fault injection in tests), if any.
    pub extra_header: Option<(String, String)>,
    /// 32 random bytes for the session.
    pub seed: Vec<u8>,
    /// A replay's trace file (its text; the page has checked that it reads and is the
    /// pinned file), `None` for other runs.
    pub trace: Option<String>,
    /// The lengths a dataset's rows give, in the order they are sent (the page read the
    /// file and had a ShareGPT file's texts counted), `None` for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<crate::core::dataset::DatasetLengths>,
    /// The checkpoint the run's worker writes its completed records to (the page's key
    /// of the run); `None`: the records are not stored while the run goes.
    pub checkpoint_key: Option<String>,
    /// An SLO search's plan, when the run is one (checked on the page against the pins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::core::search::SearchPlan>,
}

/// What a finished run hands back. The records the host handed to its checkpoint
/// ([`HostSink::checkpoint`]) left its memory then: the page reads them back from storage.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// The records not handed to the checkpoint (requests the session still held when
    /// it ended), in dispatch order.
    pub records: Vec<RequestRecord>,
    /// How many records the host handed to the checkpoint.
    pub handed: u32,
    /// Parts of the checkpoint the browser's storage refused (JSON arrays of records):
    /// kept in memory, so the report still has every record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// The run's Resource Timing, to pair with the records once they are together.
    #[serde(default)]
    pub timings: Vec<crate::web::fetch::TimingEntry>,
    /// The measuring loop's environment (its own timer resolution and lag).
    pub env: ClientEnv,
    /// An SLO search's probes and answer, when the run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::core::search::SearchRecord>,
}

/// A callback that receives the records completed since its last call, as the JSON text
/// of an array, and their count.
pub type RecordsFn = Box<dyn Fn(String, u32)>;

/// Where the host reports to (the worker posts messages; the main thread calls the page).
pub struct HostSink {
    /// Live progress, at most every [`PROGRESS_EVERY_MS`].
    pub progress: Box<dyn Fn(Progress)>,
    /// Records completed since the last call, every [`CHECKPOINT_EVERY_MS`].
    pub checkpoint: RecordsFn,
    /// The run is over.
    pub done: Box<dyn Fn(RunResult)>,
}

/// Measures this scope's event-loop lag: a timer due every `interval` ms records how
/// late it fires. A busy loop delays chunk timestamps by as much.
pub struct LagMonitor {
    state: Rc<RefCell<(u64, Hist)>>,
    handle: i32,
    _tick: Closure<dyn FnMut()>,
}

impl LagMonitor {
    /// Starts ticking.
    pub fn start(interval_ms: i32) -> Self {
        let interval_us = u64::try_from(interval_ms).unwrap_or(0) * 1000;
        let state = Rc::new(RefCell::new((now_us(), Hist::new())));
        let st = state.clone();
        let tick = Closure::<dyn FnMut()>::new(move || {
            let now = now_us();
            let mut s = st.borrow_mut();
            let late = now.saturating_sub(s.0).saturating_sub(interval_us);
            s.1.record(late);
            s.0 = now;
        });
        let handle = web::set_interval(tick.as_ref().unchecked_ref(), interval_ms);
        Self {
            state,
            handle,
            _tick: tick,
        }
    }

    /// The lag's p99 and max so far, µs.
    pub fn snapshot(&self) -> (u64, u64) {
        let s = self.state.borrow();
        (s.1.quantile(0.99).unwrap_or(0), s.1.max().unwrap_or(0))
    }
}

impl Drop for LagMonitor {
    fn drop(&mut self) {
        web::clear_interval(self.handle);
    }
}

/// The network side of the session: one streaming `fetch` per request.
struct Net {
    state: Weak<RefCell<State>>,
    /// The in-flight requests' abort handles, by request id (a few hundred at most: a
    /// list, not a hash map, whose code and hasher the wasm would carry for this alone).
    controllers: Vec<(u32, web_sys::AbortController)>,
    extra_header: Option<(String, String)>,
}

impl Transport for Net {
    fn send(&mut self, req: &Outgoing) -> Option<u64> {
        let Ok(controller) = web_sys::AbortController::new() else {
            // No AbortController: the request still gets its record, as a failure.
            let st = self.state.clone();
            let id = req.id;
            wasm_bindgen_futures::spawn_local(async move {
                end_request(&st, id, StreamEnd::Failed(network("no AbortController")));
            });
            return None;
        };
        self.controllers.push((req.id, controller.clone()));
        let request = fetch::web_request(
            &req.request,
            self.extra_header.as_ref(),
            Some(&controller.signal()),
        );
        let (st, id) = (self.state.clone(), req.id);
        // `fetch` is called here, right after the send time is read (not in a later
        // microtask), as a minimal loop does: the record's TTFT starts at the handover.
        let (sent, response) = match request {
            Ok(r) => {
                let t = now_us();
                (Some(t), Ok(web::fetch_request(&r)))
            }
            Err(e) => (None, Err(e)),
        };
        wasm_bindgen_futures::spawn_local(async move {
            let end = match response {
                Ok(p) => read_stream(&st, id, p).await,
                Err(e) => StreamEnd::Failed(network(&e)),
            };
            end_request(&st, id, end);
        });
        sent
    }

    fn abort(&mut self, id: u32) {
        if let Some((_, c)) = self.controllers.iter().find(|(i, _)| *i == id) {
            c.abort();
        }
    }
}

struct State {
    session: Option<RunSession>,
    net: Net,
    sink: Rc<HostSink>,
    host: RunHost,
    timer: Option<i32>,
    wake: Option<Closure<dyn FnMut()>>,
    intervals: Vec<(i32, Closure<dyn FnMut()>)>,
    /// JSON text of the records completed since the last checkpoint, each taken from the
    /// session and written as it completes (one second's records written at once held
    /// the loop for several ms, delaying chunk timestamps), and their count.
    pending: (String, u32),
    /// Records handed to the checkpoint so far.
    handed: u32,
    lag: Option<LagMonitor>,
    timer_resolution_us: u64,
}

/// A run in progress in this scope.
pub struct BrowserHost {
    state: Rc<RefCell<State>>,
}

fn network(message: &str) -> Outcome {
    Outcome::Network {
        message: message.to_owned(),
    }
}

/// Streams one response into the session: a timestamp per read, the bytes handed over
/// at once. Returns how the stream ended.
async fn read_stream(st: &Weak<RefCell<State>>, id: u32, response: js_sys::Promise) -> StreamEnd {
    let resp = match JsFuture::from(response).await {
        Ok(r) => r,
        Err(e) => return StreamEnd::Failed(network(&js_err(e))),
    };
    let t = now_us();
    let Ok(resp) = resp.dyn_into::<web_sys::Response>() else {
        return StreamEnd::Failed(network("not a Response"));
    };
    let status = resp.status();
    let ctype = resp.headers().get("content-type").ok().flatten();
    with_session(st, |s| s.on_headers(id, t, status, ctype.as_deref()));
    if crate::core::record::wants_headers(status) {
        let pairs = fetch::header_pairs(&resp.headers());
        with_session(st, |s| {
            s.on_header_pairs(id, pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        });
    }
    if !(200..300).contains(&status) {
        let text = match resp.body() {
            Some(b) => fetch::read_capped(b, MAX_ERROR_BODY).await,
            None => String::new(),
        };
        return StreamEnd::Failed(Outcome::Http {
            status,
            message: error_message_from_body(&text),
        });
    }
    let Some(body) = resp.body() else {
        return StreamEnd::Eof;
    };
    match fetch::read_body(body, |t, bytes| {
        with_session(st, |s| s.on_bytes(id, t, bytes))
    })
    .await
    {
        Ok(()) => StreamEnd::Eof,
        Err(e) => StreamEnd::Failed(network(&e)),
    }
}

fn with_session(st: &Weak<RefCell<State>>, f: impl FnOnce(&mut RunSession)) {
    if let Some(st) = st.upgrade() {
        if let Some(s) = st.borrow_mut().session.as_mut() {
            f(s);
        }
    }
}

fn end_request(st: &Weak<RefCell<State>>, id: u32, end: StreamEnd) {
    let t = now_us();
    let Some(st) = st.upgrade() else { return };
    {
        let mut s = st.borrow_mut();
        s.net.controllers.retain(|(i, _)| *i != id);
        if let Some(sess) = s.session.as_mut() {
            sess.on_end(id, t, end);
        }
    }
    // The next request first, then the finished record's text.
    pump(&st);
    write_completed(&st);
}

/// Polls the session and carries out what it says.
fn pump(st: &Rc<RefCell<State>>) {
    let now = now_us();
    let wake = {
        let mut guard = st.borrow_mut();
        let s = &mut *guard;
        let Some(sess) = s.session.as_mut() else {
            return;
        };
        sess.poll(now, &mut s.net)
    };
    match wake {
        Wake::At(t) => arm_timer(st, t.saturating_sub(now)),
        Wake::Event => {}
        Wake::Finished => finish(st),
    }
}

fn arm_timer(st: &Rc<RefCell<State>>, in_us: u64) {
    let mut s = st.borrow_mut();
    if let Some(h) = s.timer.take() {
        web::clear_timeout(h);
    }
    let ms = i32::try_from(in_us.div_ceil(1000)).unwrap_or(i32::MAX);
    if let Some(cb) = s.wake.as_ref() {
        let h = web::set_timeout(cb.as_ref().unchecked_ref(), ms);
        s.timer = Some(h);
    }
}

fn publish_progress(st: &Rc<RefCell<State>>) {
    let (p, sink) = {
        let s = st.borrow();
        let Some(sess) = s.session.as_ref() else {
            return;
        };
        (sess.progress(), s.sink.clone())
    };
    (sink.progress)(p);
}

/// Takes the records completed since the last call from the session into the pending
/// checkpoint text: once stored they are nowhere in this scope's memory, so a long run's
/// memory does not grow with its records.
fn write_completed(st: &Rc<RefCell<State>>) {
    let mut guard = st.borrow_mut();
    let s = &mut *guard;
    let Some(sess) = s.session.as_mut() else {
        return;
    };
    // A record always serialises (were one not to, the page's count of what was
    // stored would not match and the run would say so).
    for r in sess.take_completed() {
        if let Ok(text) = serde_json::to_string(&r) {
            s.pending.0.push(if s.pending.1 == 0 { '[' } else { ',' });
            s.pending.0.push_str(&text);
        }
        s.pending.1 += 1;
    }
}

fn publish_checkpoint(st: &Rc<RefCell<State>>) {
    let (mut text, count, sink) = {
        let mut s = st.borrow_mut();
        if s.pending.1 == 0 {
            return;
        }
        let (text, count) = std::mem::take(&mut s.pending);
        s.handed += count;
        (text, count, s.sink.clone())
    };
    text.push(']');
    (sink.checkpoint)(text, count);
}

fn finish(st: &Rc<RefCell<State>>) {
    let now = now_us();
    // The last records go to the checkpoint like every other.
    write_completed(st);
    publish_checkpoint(st);
    let (session, sink, env, handed) = {
        let mut s = st.borrow_mut();
        if let Some(h) = s.timer.take() {
            web::clear_timeout(h);
        }
        for (h, _) in s.intervals.drain(..) {
            web::clear_interval(h);
        }
        let (p99, max) = s.lag.take().map(|l| l.snapshot()).unwrap_or((0, 0));
        let env = ClientEnv {
            timer_resolution_us: s.timer_resolution_us,
            cross_origin_isolated: web::cross_origin_isolated(),
            event_loop_lag_p99_us: p99,
            event_loop_lag_max_us: max,
            host: Some(s.host),
            clock_epoch_us: web::clock_epoch_us(),
            wire_timing_read: None,
        };
        (s.session.take(), s.sink.clone(), env, s.handed)
    };
    let Some(session) = session else { return };
    (sink.progress)(Progress {
        finished: true,
        now_us: now,
        ..session.progress()
    });
    let url = session.url().to_owned();
    let search = session.search();
    let records = session.finish(now);
    wasm_bindgen_futures::spawn_local(async move {
        // Resource Timing entries appear when responses complete; give the last a moment.
        let _ = JsFuture::from(js_sys::Promise::new(&mut |resolve, _| {
            web::set_timeout(&resolve, 100);
        }))
        .await;
        let timings = web::fetch::ResourceTimings::read(&url);
        let mut env = env;
        env.wire_timing_read = timings.read_limit();
        (sink.done)(RunResult {
            records,
            handed,
            held: Vec::new(),
            timings: timings.entries,
            env,
            search,
        });
    });
}

impl BrowserHost {
    /// Starts a run in this scope; `host` says which scope it is.
    pub fn start(req: RunRequest, host: RunHost, sink: HostSink) -> Self {
        let mut seed = [0u8; 32];
        for (d, s) in seed.iter_mut().zip(&req.seed) {
            *d = *s;
        }
        let timer_resolution_us = web::timer_resolution_us();
        web::fetch::reset_resource_timing();
        let mut session = RunSession::new(req.cfg, req.calibration, seed, now_us());
        // Read and matched against its pin on the page already (`ui::run`): a trace that
        // failed here would leave the replay with nothing to send, which its report shows.
        if let Some(Ok(t)) = req
            .trace
            .as_deref()
            .map(|t| crate::core::trace::parse(t.as_bytes()))
        {
            let _ = session.set_trace(&t);
        }
        // Checked against the pin on the page too: lengths that failed here would leave
        // the run with nothing to send, which its report shows.
        if let Some(d) = &req.dataset {
            let _ = session.set_dataset(d);
        }
        // Checked against the pins on the page: a plan refused here would leave a plain
        // run of the pinned load, which its report shows (no search in it).
        if let Some(plan) = req.search {
            let _ = session.set_search(plan);
        }
        let extra: Vec<(String, String)> = req.extra_header.iter().cloned().collect();
        session.set_credentials(req.api_key, &extra);
        let state = Rc::new_cyclic(|weak: &Weak<RefCell<State>>| {
            RefCell::new(State {
                session: Some(session),
                net: Net {
                    state: weak.clone(),
                    controllers: Vec::new(),
                    extra_header: req.extra_header,
                },
                sink: Rc::new(sink),
                host,
                timer: None,
                wake: None,
                intervals: Vec::new(),
                pending: (String::new(), 0),
                handed: 0,
                lag: Some(LagMonitor::start(LAG_PROBE_MS)),
                timer_resolution_us,
            })
        });
        let weak = Rc::downgrade(&state);
        let on_wake = {
            let w = weak.clone();
            Closure::<dyn FnMut()>::new(move || {
                if let Some(st) = w.upgrade() {
                    st.borrow_mut().timer = None;
                    pump(&st);
                }
            })
        };
        let every = |ms: i32, f: fn(&Rc<RefCell<State>>)| {
            let w = weak.clone();
            let cb = Closure::<dyn FnMut()>::new(move || {
                if let Some(st) = w.upgrade() {
                    f(&st);
                }
            });
            (web::set_interval(cb.as_ref().unchecked_ref(), ms), cb)
        };
        {
            let mut s = state.borrow_mut();
            s.wake = Some(on_wake);
            s.intervals.push(every(PROGRESS_EVERY_MS, publish_progress));
            s.intervals
                .push(every(CHECKPOINT_EVERY_MS, publish_checkpoint));
        }
        pump(&state);
        Self { state }
    }

    /// Stops the run: nothing more is sent and requests in flight are aborted (each
    /// still gets its record).
    pub fn stop(&self) {
        let now = now_us();
        {
            let mut guard = self.state.borrow_mut();
            let s = &mut *guard;
            if let Some(sess) = s.session.as_mut() {
                sess.stop(now, &mut s.net);
            }
        }
        pump(&self.state);
    }
}
