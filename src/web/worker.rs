//! The run in a dedicated Web Worker, so the loop that takes the timestamps never shares
//! a thread with rendering.
//!
//! The worker loads the app's own wasm module (`www/worker.js` imports the JS glue and
//! the `.wasm` the page loaded, then calls [`worker_main`]); `main` does not mount the UI
//! when there is no `window`. Page and worker exchange JSON text messages:
//! page → worker [`ToWorker`], worker → page [`FromWorker`] (progress at most 10 times a
//! second, completed records every few seconds for the checkpoint, all records at the
//! end).

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::metrics::RunHost;
use crate::core::record::RequestRecord;
use crate::core::session::Progress;
use crate::web::host::{BrowserHost, HostSink, RunRequest, RunResult};

/// Page → worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// Start this run.
    Start {
        /// What to run.
        run: Box<RunRequest>,
    },
    /// Stop the run (requests in flight are aborted and recorded).
    Stop,
}

/// Worker → page.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    /// The worker's wasm is initialised and it listens.
    Ready,
    /// Live progress.
    Progress {
        /// The session's progress.
        progress: Progress,
    },
    /// Records completed since the last checkpoint message.
    Checkpoint {
        /// The new records.
        records: Vec<RequestRecord>,
    },
    /// The run is over.
    Done {
        /// Records and environment.
        result: Box<RunResult>,
    },
    /// The worker could not run the request.
    Error {
        /// What went wrong.
        message: String,
    },
}

thread_local! {
    static HOST: RefCell<Option<BrowserHost>> = const { RefCell::new(None) };
}

fn post(scope: &web_sys::DedicatedWorkerGlobalScope, msg: &FromWorker) {
    if let Ok(text) = serde_json::to_string(msg) {
        let _ = scope.post_message(&JsValue::from_str(&text));
    }
}

/// The worker's entry point: listens for [`ToWorker`] messages and runs the session.
pub fn worker_main() {
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let s = scope.clone();
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
            let text = ev.data().as_string().unwrap_or_default();
            match serde_json::from_str::<ToWorker>(&text) {
                Ok(ToWorker::Start { run }) => {
                    let (a, b, c) = (s.clone(), s.clone(), s.clone());
                    let sink = HostSink {
                        progress: Box::new(move |progress| {
                            post(&a, &FromWorker::Progress { progress })
                        }),
                        checkpoint: Box::new(move |records| {
                            post(
                                &b,
                                &FromWorker::Checkpoint {
                                    records: records.to_vec(),
                                },
                            )
                        }),
                        done: Box::new(move |result| {
                            post(
                                &c,
                                &FromWorker::Done {
                                    result: Box::new(result),
                                },
                            );
                        }),
                    };
                    let host = BrowserHost::start(*run, RunHost::Worker, sink);
                    HOST.with(|h| *h.borrow_mut() = Some(host));
                }
                Ok(ToWorker::Stop) => HOST.with(|h| {
                    if let Some(host) = h.borrow().as_ref() {
                        host.stop();
                    }
                }),
                Err(e) => post(
                    &s,
                    &FromWorker::Error {
                        message: format!("unreadable message: {e}"),
                    },
                ),
            }
        });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    post(&scope, &FromWorker::Ready);
}

/// What the page does with a worker's messages.
pub struct PageSink {
    /// Live progress.
    pub progress: Box<dyn Fn(Progress)>,
    /// New completed records (for the checkpoint).
    pub checkpoint: Box<dyn Fn(Vec<RequestRecord>)>,
    /// The run is over.
    pub done: Box<dyn Fn(RunResult)>,
    /// The worker failed; `started` says whether the run had begun (if not, the page
    /// may run it on its main thread instead).
    pub failed: Box<dyn Fn(String, bool)>,
}

/// A run in a dedicated worker, seen from the page.
pub struct WorkerRun {
    worker: web_sys::Worker,
    _on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

/// The URLs of the app's JS glue and wasm, as Trunk linked them in the page.
fn module_urls() -> Result<(String, String), String> {
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let href = |sel: &str| -> Option<String> {
        let el = doc.query_selector(sel).ok()??;
        el.get_attribute("href")
    };
    let js = href("link[rel=modulepreload][href$='.js']").ok_or("the page links no JS module")?;
    let wasm = href("link[rel=preload][href$='.wasm']").ok_or("the page links no wasm")?;
    Ok((js, wasm))
}

fn send(worker: &web_sys::Worker, msg: &ToWorker) -> Result<(), String> {
    let text = serde_json::to_string(msg).map_err(|e| e.to_string())?;
    worker
        .post_message(&JsValue::from_str(&text))
        .map_err(|e| format!("{e:?}"))
}

impl WorkerRun {
    /// Starts a worker and hands it the run once it is ready.
    pub fn start(run: RunRequest, sink: PageSink) -> Result<Self, String> {
        let (js, wasm) = module_urls()?;
        let enc = |s: &str| String::from(js_sys::encode_uri_component(s));
        let url = format!("./worker.js?js={}&wasm={}", enc(&js), enc(&wasm));
        let opts = web_sys::WorkerOptions::new();
        opts.set_type(web_sys::WorkerType::Module);
        let worker =
            web_sys::Worker::new_with_options(&url, &opts).map_err(|e| format!("{e:?}"))?;
        let sink = Rc::new(sink);
        let pending = Rc::new(RefCell::new(Some(run)));
        let started = Rc::new(std::cell::Cell::new(false));
        let (w, sk, st) = (worker.clone(), sink.clone(), started.clone());
        let on_message =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                let text = ev.data().as_string().unwrap_or_default();
                match serde_json::from_str::<FromWorker>(&text) {
                    Ok(FromWorker::Ready) => {
                        if let Some(run) = pending.borrow_mut().take() {
                            match send(&w, &ToWorker::Start { run: Box::new(run) }) {
                                Ok(()) => st.set(true),
                                Err(e) => (sk.failed)(
                                    format!("could not start the worker's run: {e}"),
                                    false,
                                ),
                            }
                        }
                    }
                    Ok(FromWorker::Progress { progress }) => (sk.progress)(progress),
                    Ok(FromWorker::Checkpoint { records }) => (sk.checkpoint)(records),
                    Ok(FromWorker::Done { result }) => {
                        (sk.done)(*result);
                        w.terminate();
                    }
                    Ok(FromWorker::Error { message }) => (sk.failed)(message, st.get()),
                    Err(e) => {
                        (sk.failed)(format!("unreadable message from the worker: {e}"), st.get())
                    }
                }
            });
        let (sk, st) = (sink.clone(), started.clone());
        let on_error =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                (sk.failed)(
                    format!("the run's worker failed: {}", ev.message()),
                    st.get(),
                );
            });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(Self {
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Asks the worker to stop the run.
    pub fn stop(&self) {
        let _ = send(&self.worker, &ToWorker::Stop);
    }
}

impl Drop for WorkerRun {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
