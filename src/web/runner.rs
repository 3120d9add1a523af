//! Runs a pinned benchmark from the browser: dispatches requests as the core
//! [`Scheduler`] says, streams each one through [`fetch::run`], and collects records.
//! Event driven: a completion refills the loop at once (no polling), and a timer wakes
//! the open loop at its next arrival.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::core::dialect::{Dialect, RequestSpec};
use crate::core::pins::{PromptExactness, RunConfig};
use crate::core::prompt::{self, Calibration};
use crate::core::record::{RequestRecord, RequestTimeline};
use crate::core::schedule::{Next, Rng, Scheduler};
use crate::web::{fetch, now_us};

/// Live progress, published at most once per completion.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    /// Current step (0-based) and number of steps.
    pub step: (usize, usize),
    /// Requests dispatched in this step.
    pub dispatched: u32,
    /// Requests completed (all steps).
    pub completed: u32,
    /// Planned requests this step, when known.
    pub planned: Option<u32>,
    /// In flight now, and the target.
    pub in_flight: (u32, u32),
    /// Tokens received so far (all steps).
    pub tokens: u64,
    /// Run start, µs.
    pub started_us: u64,
    /// Failed requests so far by kind.
    pub errors: Vec<(String, u32)>,
    /// Sum and count of completed requests' per-stream decode speeds (milli-tok/s).
    pub decode: (u64, u32),
}

struct Shared {
    sched: Scheduler,
    records: Vec<RequestRecord>,
    progress: Progress,
    next_index: u32,
    rng: Rng,
    cal: Calibration,
    calibrate_from_usage: bool,
    done_resolve: Option<js_sys::Function>,
    timer_pending: bool,
}

/// Fixed inputs of a run.
pub struct RunInputs {
    /// The pinned configuration.
    pub cfg: RunConfig,
    /// API key (memory only).
    pub api_key: Option<String>,
    /// Prompt calibration measured before the run.
    pub calibration: Calibration,
    /// Extra header for every request (fault injection in tests), if any.
    pub extra_header: Option<(String, String)>,
    /// Every completed request so far, all steps (for the checkpoint a closed tab keeps).
    pub completed: Rc<RefCell<Vec<RequestRecord>>>,
}

/// Measures event-loop lag while a run is in flight: a timer due every `interval` ms
/// records how late it fires. A busy main thread (rendering, parsing) delays chunk
/// timestamps by as much; the client verdict reports it.
pub struct LagMonitor {
    state: Rc<RefCell<(u64, crate::core::histogram::Hist)>>,
    handle: i32,
    _tick: Closure<dyn FnMut()>,
}

impl LagMonitor {
    /// Starts ticking.
    pub fn start(interval_ms: i32) -> Option<Self> {
        let interval_us = u64::try_from(interval_ms).ok()? * 1000;
        let state = Rc::new(RefCell::new((
            now_us(),
            crate::core::histogram::Hist::new(),
        )));
        let st = state.clone();
        let tick = Closure::<dyn FnMut()>::new(move || {
            let now = now_us();
            let mut s = st.borrow_mut();
            let late = now.saturating_sub(s.0).saturating_sub(interval_us);
            s.1.record(late);
            s.0 = now;
        });
        let handle = web_sys::window()?
            .set_interval_with_callback_and_timeout_and_arguments_0(
                tick.as_ref().unchecked_ref(),
                interval_ms,
            )
            .ok()?;
        Some(Self {
            state,
            handle,
            _tick: tick,
        })
    }

    /// The lag's p99 and max so far, µs.
    pub fn snapshot(&self) -> (u64, u64) {
        let s = self.state.borrow();
        (s.1.quantile(0.99).unwrap_or(0), s.1.max().unwrap_or(0))
    }

    /// Stops; returns the lag's p99 and max, µs.
    pub fn stop(self) -> (u64, u64) {
        if let Some(w) = web_sys::window() {
            w.clear_interval_with_handle(self.handle);
        }
        self.snapshot()
    }
}

/// Measures the prompt calibration with the server's `/tokenize` (vLLM / reference form,
/// then llama.cpp form). `None` when the server has no tokenizer endpoint.
pub async fn calibrate(base_url: &str, model: &str) -> Option<Calibration> {
    let count = |text: String| async move {
        for body in [
            serde_json::json!({"model": model, "prompt": text}),
            serde_json::json!({"content": text, "add_special": false}),
        ] {
            if let Ok((200, t)) =
                fetch::post_json(&format!("{base_url}/tokenize"), &body.to_string()).await
            {
                let v: serde_json::Value = serde_json::from_str(&t).ok()?;
                // A server that ignored this form answers with no tokens: try the next one.
                let n = v.get("count").and_then(|c| c.as_u64()).or_else(|| {
                    v.get("tokens")
                        .and_then(|t| t.as_array())
                        .map(|a| a.len() as u64)
                });
                if let Some(n) = n.filter(|&n| n > 0) {
                    return Some(n);
                }
            }
        }
        None
    };
    let n = 256;
    let tokens = count(prompt::sample_text(n)).await?;
    let nonce_tokens = count(prompt::nonce(12345, 0xfeed_beef)).await?;
    Some(Calibration::from_sample(n, tokens, nonce_tokens as u32))
}

fn sleep_ms(ms: i32) -> js_sys::Promise {
    js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms.max(0));
        }
    })
}

/// Runs every step; `on_progress` is called after each completion. Stop aborts `abort`.
pub async fn run(
    inputs: Rc<RunInputs>,
    abort: web_sys::AbortController,
    on_progress: Rc<dyn Fn(Progress)>,
) -> Vec<RequestRecord> {
    let steps = inputs.cfg.load.value.steps.clone();
    let mut all = Vec::new();
    let started_us = now_us();
    let mut completed = 0;
    let mut tokens = 0;
    let mut errors: Vec<(String, u32)> = Vec::new();
    let mut decode = (0u64, 0u32);
    let mut next_index = 0;
    let mut cal = inputs.calibration;
    fetch::reset_resource_timing();
    let url = format!(
        "{}{}",
        inputs.cfg.endpoint.base_url,
        inputs.cfg.endpoint.dialect.path()
    );
    for (i, step) in steps.iter().enumerate() {
        if abort.signal().aborted() {
            break;
        }
        let seed = super::random_seed();
        let shared = Rc::new(RefCell::new(Shared {
            sched: Scheduler::new(*step, inputs.cfg.window.value, now_us(), seed),
            records: Vec::new(),
            progress: Progress {
                step: (i, steps.len()),
                completed,
                tokens,
                started_us,
                errors: errors.clone(),
                decode,
                ..Progress::default()
            },
            next_index,
            // Lengths and nonces draw from their own stream, not the arrival process's.
            rng: Rng::from_seed(seed.map(|b| b ^ 0x5a)),
            cal,
            calibrate_from_usage: inputs.cfg.prompt_exactness.value
                == PromptExactness::UsageCalibrated,
            done_resolve: None,
            timer_pending: false,
        }));
        let done = js_sys::Promise::new(&mut |resolve, _| {
            shared.borrow_mut().done_resolve = Some(resolve)
        });
        pump(&shared, &inputs, &abort, &on_progress, i as u32);
        let _ = JsFuture::from(done).await;
        {
            let mut s = shared.borrow_mut();
            next_index = s.next_index;
            completed = s.progress.completed;
            tokens = s.progress.tokens;
            errors = s.progress.errors.clone();
            decode = s.progress.decode;
            cal = s.cal;
            all.append(&mut s.records);
        }
        // Let the server drain between steps.
        let _ = JsFuture::from(sleep_ms(50)).await;
    }
    // Entries appear when responses complete; give the last ones a moment.
    let _ = JsFuture::from(sleep_ms(100)).await;
    fetch::attach_resource_timing(&mut all, &url);
    all
}

fn pump(
    shared: &Rc<RefCell<Shared>>,
    inputs: &Rc<RunInputs>,
    abort: &web_sys::AbortController,
    on_progress: &Rc<dyn Fn(Progress)>,
    step: u32,
) {
    loop {
        let now = now_us();
        let next = if abort.signal().aborted() {
            Next::Done
        } else {
            shared.borrow_mut().sched.next(now)
        };
        match next {
            Next::Dispatch => dispatch(shared, inputs, abort, on_progress, step, now),
            Next::WaitUntil(t) => {
                let mut s = shared.borrow_mut();
                if !s.timer_pending {
                    s.timer_pending = true;
                    drop(s);
                    let (sh, inp, ab, op) = (
                        shared.clone(),
                        inputs.clone(),
                        abort.clone(),
                        on_progress.clone(),
                    );
                    let cb = Closure::once_into_js(move || {
                        sh.borrow_mut().timer_pending = false;
                        pump(&sh, &inp, &ab, &op, step);
                    });
                    let ms = t.saturating_sub(now).div_ceil(1000) as i32;
                    if let Some(w) = web_sys::window() {
                        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(
                            cb.unchecked_ref(),
                            ms,
                        );
                    }
                }
                return;
            }
            Next::WaitForCompletion => return,
            Next::Done => {
                let mut s = shared.borrow_mut();
                if s.sched.in_flight() == 0 {
                    if let Some(resolve) = s.done_resolve.take() {
                        let _ = resolve.call0(&JsValue::NULL);
                    }
                }
                return;
            }
        }
    }
}

fn dispatch(
    shared: &Rc<RefCell<Shared>>,
    inputs: &Rc<RunInputs>,
    abort: &web_sys::AbortController,
    on_progress: &Rc<dyn Fn(Progress)>,
    step: u32,
    now: u64,
) {
    let cfg = &inputs.cfg;
    let (index, prompt_tokens, output_tokens, text) = {
        let mut s = shared.borrow_mut();
        let index = s.next_index;
        s.next_index += 1;
        let (u1, z1, u2, z2) = (s.rng.unit(), s.rng.normal(), s.rng.unit(), s.rng.normal());
        let p = cfg.prompt_len.value.sample(u1, z1);
        let o = cfg.output_len.value.sample(u2, z2);
        let seed = s.rng.next_u64();
        let nonce = cfg
            .cache
            .value
            .nonce_prefix
            .then(|| prompt::nonce(index, seed));
        let text = prompt::build(p, s.cal, nonce.as_deref(), index);
        s.sched.on_dispatch(now);
        s.progress.dispatched = s.sched.dispatched();
        s.progress.planned = s.sched.planned_total();
        s.progress.in_flight = (
            s.sched.in_flight(),
            cfg.load.value.steps[step as usize].max_concurrency(),
        );
        (index, p, o, text)
    };
    let spec = RequestSpec {
        model: cfg.model.id.value.clone(),
        prompt: text,
        max_tokens: output_tokens,
        enforcement: cfg.output_enforcement.value,
        temperature: Some(cfg.sampling.value.temperature),
        extra: cfg.sampling.value.extra.clone().into_iter().collect(),
        nonce: None,
        include_usage: true,
        continuous_usage: false,
    };
    let dialect: Dialect = cfg.endpoint.dialect;
    let url = format!("{}{}", cfg.endpoint.base_url, dialect.path());
    let body = spec.body(dialect).to_string();
    let (sh, inp, ab, op) = (
        shared.clone(),
        inputs.clone(),
        abort.clone(),
        on_progress.clone(),
    );
    let stall = cfg.load.value.stall_timeout_ms;
    wasm_bindgen_futures::spawn_local(async move {
        let tl = RequestTimeline::new(index, step, dialect, prompt_tokens, output_tokens, now_us());
        let signal = ab.signal();
        let extra = inp
            .extra_header
            .as_ref()
            .map(|(k, v)| (k.as_str(), v.as_str()));
        let req = fetch::StreamRequest {
            url: &url,
            body: &body,
            api_key: inp.api_key.as_deref(),
            extra_header: extra,
            stall_timeout_ms: stall,
            signal: &signal,
        };
        let rec = fetch::run(req, tl).await;
        let progress = {
            let mut s = sh.borrow_mut();
            s.sched.on_complete(now_us());
            if s.calibrate_from_usage {
                if let Some(u) = rec.usage.filter(|u| u.prompt_tokens > 0) {
                    // Words sent = requested tokens / old ratio; re-derive the ratio.
                    let words = (u64::from(rec.prompt_tokens_requested) * 1000
                        / s.cal.tokens_per_word_milli.max(1))
                    .max(1);
                    s.cal.tokens_per_word_milli = (u.prompt_tokens * 1000 / words).max(1);
                }
            }
            s.progress.completed += 1;
            s.progress.tokens += rec.chunk_tokens();
            if let Some(d) = crate::core::metrics::request_metrics(&rec).decode_milli {
                s.progress.decode.0 += d;
                s.progress.decode.1 += 1;
            }
            if !rec.outcome.is_ok() {
                let kind = rec.outcome.kind();
                match s.progress.errors.iter_mut().find(|(k, _)| *k == kind) {
                    Some(e) => e.1 += 1,
                    None => s.progress.errors.push((kind, 1)),
                }
            }
            s.progress.in_flight.0 = s.sched.in_flight();
            inp.completed.borrow_mut().push(rec.clone());
            s.records.push(rec);
            s.progress.clone()
        };
        op(progress);
        pump(&sh, &inp, &ab, &op, step);
    });
}
