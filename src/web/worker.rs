//! The run in a dedicated Web Worker, so the loop that takes the timestamps never shares
//! a thread with rendering.
//!
//! The worker loads the app's own wasm module (`www/worker.js` imports the JS glue and
//! the `.wasm` the page loaded, then calls [`worker_main`]); `main` does not mount the UI
//! when there is no `window`. Page and worker exchange JSON text messages:
//! page → worker [`ToWorker`], worker → page [`FromWorker`] (progress 4 times a second,
//! a note for each part of the checkpoint the worker wrote, the run's end). The worker
//! writes the checkpoint's parts to IndexedDB itself and lets go of each record once it
//! is written: the page's main thread never handles the records while the run goes, and
//! at the end reads them back from storage to build the report.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::metrics::RunHost;
use crate::core::session::Progress;
use crate::web::host::{BrowserHost, HostSink, RunRequest, RunResult};
use crate::web::keystore::checkpoint_writes_settled;
use crate::web::store::PartWriter;

/// Page → worker. Externally tagged (serde's default): an internally tagged enum buffers
/// its content and compiles every pin type's parser a second time, in a bundle that
/// already has one.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// Start this run.
    Start {
        /// What to run.
        run: Box<RunRequest>,
    },
    /// Stop the run (requests in flight are aborted and recorded).
    Stop,
}

/// Worker → page (externally tagged, as [`ToWorker`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// The worker's wasm is initialised and it listens.
    Ready,
    /// Live progress.
    Progress {
        /// The session's progress.
        progress: Progress,
    },
    /// The worker wrote a part of the run's checkpoint (`count` completed records), or
    /// the browser's storage refused it (`error`).
    Checkpointed {
        /// Records in the part.
        count: u32,
        /// Why storage refused the part, if it did.
        error: Option<String>,
    },
    /// The run is over (after every checkpoint write settled).
    Done {
        /// What the checkpoint does not hold, and the environment.
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
            match crate::core::json::from_str::<ToWorker>(&text) {
                Ok(ToWorker::Start { run }) => {
                    let (a, b, c) = (s.clone(), s.clone(), s.clone());
                    // The worker stores its completed records itself: they never pass
                    // through the page's main thread while the run goes.
                    let writer = run.checkpoint_key.clone().map(PartWriter::new);
                    let held = writer.clone();
                    let sink = HostSink {
                        progress: Box::new(move |progress| {
                            post(&a, &FromWorker::Progress { progress })
                        }),
                        checkpoint: Box::new(move |text, count| {
                            if let Some(w) = &writer {
                                let b = b.clone();
                                w.write(text, count, move |count, stored| {
                                    let error = stored.err();
                                    post(&b, &FromWorker::Checkpointed { count, error });
                                });
                            }
                        }),
                        done: Box::new(move |mut result| {
                            let (c, held) = (c.clone(), held.clone());
                            // The page reads the records back from the checkpoint (and
                            // removes it once it has the report): every write of this
                            // worker settles first.
                            wasm_bindgen_futures::spawn_local(async move {
                                checkpoint_writes_settled().await;
                                result.held = held.map(|w| w.take_held()).unwrap_or_default();
                                post(
                                    &c,
                                    &FromWorker::Done {
                                        result: Box::new(result),
                                    },
                                );
                            });
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
    /// The worker wrote a part of the checkpoint (how many records), or storage refused it.
    pub checkpoint_written: Box<dyn Fn(u32, Result<(), String>)>,
    /// The run is over.
    pub done: Box<dyn Fn(RunResult)>,
    /// The worker failed; `started` says whether the run had begun (if not, the page
    /// may run it on its main thread instead).
    pub failed: Box<dyn Fn(String, bool)>,
}

/// A run in a dedicated worker, seen from the page.
pub struct WorkerRun {
    worker: web_sys::Worker,
    stop_requested: Rc<std::cell::Cell<bool>>,
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
        let stop_requested = Rc::new(std::cell::Cell::new(false));
        let (w, sk, st, stop) = (
            worker.clone(),
            sink.clone(),
            started.clone(),
            stop_requested.clone(),
        );
        let on_message =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                let text = ev.data().as_string().unwrap_or_default();
                match crate::core::json::from_str::<FromWorker>(&text) {
                    Ok(FromWorker::Ready) => {
                        if let Some(run) = pending.borrow_mut().take() {
                            match send(&w, &ToWorker::Start { run: Box::new(run) }) {
                                Ok(()) => {
                                    st.set(true);
                                    // Stop pressed before the worker was ready.
                                    if stop.get() {
                                        let _ = send(&w, &ToWorker::Stop);
                                    }
                                }
                                Err(e) => (sk.failed)(
                                    format!("could not start the worker's run: {e}"),
                                    false,
                                ),
                            }
                        }
                    }
                    Ok(FromWorker::Progress { progress }) => (sk.progress)(progress),
                    Ok(FromWorker::Checkpointed { count, error }) => {
                        (sk.checkpoint_written)(count, error.map_or(Ok(()), Err))
                    }
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
            stop_requested,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Asks the worker to stop the run (at once, or as soon as it has started it).
    pub fn stop(&self) {
        self.stop_requested.set(true);
        let _ = send(&self.worker, &ToWorker::Stop);
    }
}

impl Drop for WorkerRun {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
