//! A run in this tab, around the core's run engine: where it runs (the worker, or the
//! page's main thread when there is none), its checkpoint in storage while it goes, and
//! the signals it reports to. Its end is the core's (`lifecycle::finish`).

use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::core::lifecycle::{self, Host};
use crate::core::metrics::{ClientEnv, RunHost, Slo};
use crate::core::pins::{self, RunConfig};
use crate::core::report::{Checkpoint, FiguredReport, ProbeSnapshot};
use crate::core::session::Progress;
use crate::web::fetch::PageHost;
use crate::web::host::{BrowserHost, HostSink, LagMonitor, RunRequest, RunResult};
use crate::web::store::{self, remove_checkpoint, save_checkpoint, CHECKPOINT_PREFIX};
use crate::web::worker::{PageSink, WorkerRun};
use crate::web::{self, keystore};

/// Records per stored part when a failed signing keeps every record.
const CHECKPOINT_PART_RECORDS: usize = 500;

/// How often the live view shows progress, µs (the host publishes at 10 Hz).
const PROGRESS_SHOWN_US: u64 = 250_000;

/// A run in progress: in a dedicated worker, or on this page where workers are
/// unavailable.
pub enum RunHandle {
    Worker(WorkerRun),
    Page(BrowserHost),
}

impl RunHandle {
    pub fn stop(&self) {
        match self {
            RunHandle::Worker(w) => w.stop(),
            RunHandle::Page(h) => h.stop(),
        }
    }
}

/// What the page keeps about a run while it goes: what the report needs besides the
/// records, and the checkpoint (keyed by run id, so a second run or tab never
/// overwrites an interrupted one).
pub struct RunContext {
    created: String,
    cfg: RunConfig,
    slo: Option<Slo>,
    probes: Vec<ProbeSnapshot>,
    /// An SLO search's plan, when the run is one (its checkpoint rebuilds the probes).
    search: Option<crate::core::search::SearchPlan>,
    key: String,
    /// Parts of the records written so far, and parts that did not fit in storage.
    parts: std::cell::Cell<(u32, u32)>,
    /// The writer of the checkpoint's parts on this page (a run on the main thread, or
    /// every record again after a failed signing).
    writer: store::PartWriter,
    /// Host time of the progress last shown, µs.
    progress_shown_us: std::cell::Cell<u64>,
    listener: wasm_bindgen::closure::Closure<dyn FnMut()>,
    /// The Web Lock this run holds while it goes (named by its checkpoint key): another
    /// tab sees the run as live, never as interrupted. Released by calling it.
    lock: Option<js_sys::Function>,
}

impl RunContext {
    /// A run's context, already listening for the page being hidden or unloaded.
    pub fn new(
        created: String,
        cfg: RunConfig,
        slo: Option<Slo>,
        probes: Vec<ProbeSnapshot>,
        search: Option<crate::core::search::SearchPlan>,
    ) -> Rc<Self> {
        // The caller checked the generator when it drew the run's seed.
        let id: String = web::random_seed().unwrap_or_default()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let key = format!("{CHECKPOINT_PREFIX}{id}");
        let key_for_lock = key.clone();
        let ctx = Rc::new_cyclic(|me: &std::rc::Weak<RunContext>| {
            let me = me.clone();
            let listener = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
                if let Some(ctx) = me.upgrade() {
                    ctx.write_checkpoint();
                }
            });
            Self {
                created,
                cfg,
                slo,
                probes,
                search,
                key,
                parts: std::cell::Cell::new((0, 0)),
                writer: store::PartWriter::new(key_for_lock.clone()),
                progress_shown_us: std::cell::Cell::new(0),
                listener,
                lock: keystore::hold_lock(&key_for_lock),
            }
        });
        ctx.listen(true);
        ctx
    }

    /// The run's checkpoint key (its head; its parts are `key#n`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Written every few seconds and when the page is hidden or unloaded.
    fn release(&self) {
        if let Some(f) = &self.lock {
            let _ = f.call0(&wasm_bindgen::JsValue::NULL);
        }
    }

    fn listen(&self, on: bool) {
        use wasm_bindgen::JsCast;
        let f = self.listener.as_ref().unchecked_ref();
        if let Some(w) = web_sys::window() {
            for ev in ["pagehide", "visibilitychange"] {
                let _ = if on {
                    w.add_event_listener_with_callback(ev, f)
                } else {
                    w.remove_event_listener_with_callback(ev, f)
                };
            }
        }
    }

    /// Writes the checkpoint's head (the pins, when, what storage dropped) in the
    /// background.
    fn write_checkpoint(&self) {
        let key = self.key.clone();
        let head = Checkpoint {
            created: self.created.clone(),
            config: self.cfg.clone(),
            env: ClientEnv {
                timer_resolution_us: 0,
                cross_origin_isolated: web::cross_origin_isolated(),
                event_loop_lag_p99_us: 0,
                event_loop_lag_max_us: 0,
                host: None,
                clock_epoch_us: web::clock_epoch_us(),
                wire_timing_read: None,
            },
            planned: None,
            records: Vec::new(),
            dropped: self.parts.get().1,
            search: self.search.clone(),
        };
        spawn_local(async move {
            let _ = save_checkpoint(&key, head).await;
        });
    }
}

/// The page's signals a run reports to.
#[derive(Clone)]
pub struct RunSinks {
    /// The run's context.
    pub ctx: Rc<RunContext>,
    /// Live progress.
    pub progress: RwSignal<Progress>,
    /// The signed report, when the run is over.
    pub report: RwSignal<Option<FiguredReport>>,
    /// A failed build or sign: the records and the error, as an unsigned document.
    pub unsigned: RwSignal<Option<String>>,
    /// Why the run stopped, if it failed.
    pub run_error: RwSignal<String>,
    /// Whether a run goes.
    pub running: RwSignal<bool>,
    /// The run, to stop it.
    pub handle: StoredValue<Option<RunHandle>, LocalStorage>,
    /// The page's own event-loop lag during the run (the worker measures its own).
    pub page_lag: StoredValue<Option<LagMonitor>, LocalStorage>,
    /// The page's lag, as the live view shows it.
    pub page_lag_text: RwSignal<String>,
    /// A loopback URL the finished report is posted to (a run started by a link).
    pub collect: Option<String>,
    /// The run id of the finished report kept in storage and not yet downloaded.
    pub kept: RwSignal<Option<String>>,
    /// What the browser's storage refused, in words.
    pub storage_note: RwSignal<String>,
}

/// Posts `body` to a loopback collector (a run started by a link, e.g. the fidelity
/// bench); anything else is refused.
pub fn post_to_collector(url: &str, body: String) {
    if !pins::is_loopback_url(url) {
        return;
    }
    let url = url.to_owned();
    spawn_local(async move {
        let _ = PageHost
            .request(lifecycle::HttpRequest::post_json(url, body))
            .await;
    });
}

impl RunSinks {
    /// Shows the page's event-loop lag so far and returns it (p99, max, µs).
    fn show_page_lag(&self) -> Option<(u64, u64)> {
        let lag = self
            .page_lag
            .with_value(|l| l.as_ref().map(|l| l.snapshot()));
        if let Some((p99, max)) = lag {
            self.page_lag_text.set(format!(
                "page event-loop lag p99 {} ms (max {} ms)",
                pins::milli(p99),
                pins::milli(max)
            ));
        }
        lag
    }

    /// Shows progress at most every [`PROGRESS_SHOWN_US`] (and always the last): the
    /// page's rendering competes for the cores with the worker that measures.
    fn on_progress(&self, p: Progress) {
        let last = self.ctx.progress_shown_us.get();
        if p.finished || last == 0 || p.now_us >= last + PROGRESS_SHOWN_US {
            self.ctx.progress_shown_us.set(p.now_us.max(1));
            self.show_page_lag();
            self.progress.set(p);
        }
    }

    /// A part of the checkpoint was written (`count` records) by the run's host, or the
    /// browser's storage refused it. The head is written with the first part, and again
    /// whenever a part is lost (it says how many records storage dropped).
    fn on_checkpoint_written(&self, count: u32, stored: Result<(), String>) {
        let ctx = &self.ctx;
        let (n, dropped) = ctx.parts.get();
        match stored {
            Ok(()) => {
                ctx.parts.set((n + 1, dropped));
                if n == 0 {
                    ctx.write_checkpoint();
                }
            }
            Err(e) => {
                let dropped = dropped + count;
                ctx.parts.set((n + 1, dropped));
                ctx.write_checkpoint();
                self.storage_note.set(format!(
                    "The browser's storage refused the checkpoint ({e}): {dropped} completed requests are not kept should this tab close (they are in memory until the run ends)."
                ));
            }
        }
    }

    /// A writer of this run's checkpoint parts on the page (a run on the main thread,
    /// or every record again after a failed signing).
    fn page_writer(&self) -> impl Fn(String, u32) {
        let writer = self.ctx.writer.clone();
        let me = self.clone();
        move |text, count| {
            let me = me.clone();
            writer.write(text, count, move |count, stored| {
                me.on_checkpoint_written(count, stored)
            });
        }
    }

    fn on_done(&self, result: RunResult) {
        let ctx = &self.ctx;
        ctx.listen(false);
        ctx.release();
        let page_lag = self.show_page_lag();
        self.page_lag.set_value(None);
        // A link's collector learns the stage, so a run that posts no report says where
        // it stopped (the records are in; what is left is building and signing).
        if let Some(url) = &self.collect {
            post_to_collector(&format!("{url}?event=stage&name=signing"), "{}".into());
        }
        // Reading the records back and signing wait on storage and WebCrypto: the rest
        // happens when they answer.
        let me = self.clone();
        spawn_local(async move {
            let result = match me.gather(result).await {
                Ok(r) => r,
                Err(e) => return me.on_failed(format!("{e} The records stay in this browser's checkpoint: reload the page to sign what it holds.")),
            };
            let ctx = &me.ctx;
            let finished = lifecycle::Finished {
                created: ctx.created.clone(),
                cfg: ctx.cfg.clone(),
                slo: ctx.slo,
                probes: ctx.probes.clone(),
                env: result.env,
                records: result.records.clone(),
                search: result.search.clone(),
            };
            let signed = match keystore::signer().await {
                Ok(s) => lifecycle::finish(finished, &s)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(format!("Could not sign the report: {e}")),
            };
            me.on_signed(signed, result, page_lag);
        });
    }

    /// Every record of a finished run together, in dispatch order: those its host stored
    /// (read back from the checkpoint: they left the host's memory once written), the
    /// parts storage refused (held in memory) and those the host still held at the end;
    /// then paired with the run's Resource Timing.
    async fn gather(&self, mut result: RunResult) -> Result<RunResult, String> {
        // A run on this page: its own writes settle first (a worker's settled before it
        // reported its end).
        keystore::checkpoint_writes_settled().await;
        let mut held = std::mem::take(&mut result.held);
        held.extend(self.ctx.writer.take_held());
        let mut records = Vec::new();
        for part in &held {
            records.extend(
                crate::core::json::from_str::<Vec<crate::core::record::RequestRecord>>(part)
                    .map_err(|e| {
                        format!("A part of the run's records held in memory does not read: {e}.")
                    })?,
            );
        }
        // Storage is read only when it took something (a browser without IndexedDB held
        // every part in memory).
        if records.len() < result.handed as usize {
            records.extend(store::checkpoint_records(&self.ctx.key).await?);
        }
        if records.len() != result.handed as usize {
            return Err(format!(
                "The run's checkpoint gave back {} of the {} records its host stored.",
                records.len(),
                result.handed
            ));
        }
        records.append(&mut result.records);
        crate::core::record::sort_by_index(&mut records);
        crate::web::fetch::ResourceTimings::attach(
            std::mem::take(&mut result.timings),
            &mut records,
        );
        result.records = records;
        Ok(result)
    }

    /// The end of a run once its report is signed (or could not be).
    fn on_signed(
        &self,
        built: Result<FiguredReport, String>,
        result: RunResult,
        page_lag: Option<(u64, u64)>,
    ) {
        let ctx = &self.ctx;
        match built {
            Ok(r) => {
                remove_checkpoint(&ctx.key);
                if let (Some(url), Ok(text)) = (&self.collect, r.report.to_json()) {
                    // The page's own event-loop lag during the run travels beside it.
                    let (p99, max) = page_lag.unwrap_or((0, 0));
                    post_to_collector(
                        &format!("{url}?page_lag_p99_us={p99}&page_lag_max_us={max}"),
                        text,
                    );
                }
                // Kept in this browser until it is downloaded or discarded.
                if let Ok(text) = r.report.to_json() {
                    let (key, kept, note) = (ctx.key.clone(), self.kept, self.storage_note);
                    spawn_local(async move {
                        match keystore::keep_report(&key, &text).await {
                            Ok(()) => kept.set(Some(key)),
                            Err(e) => note.set(format!("The report could not be kept in this browser's storage ({e}): download it before you leave the page.")),
                        }
                    });
                }
                self.report.set(Some(r));
            }
            Err(e) => {
                // Keep the checkpoint, and offer the records with the error, unsigned.
                // The checkpoint then holds every record of the run.
                remove_checkpoint(&ctx.key);
                ctx.parts.set((0, 0));
                // In parts of a bounded size (one item of a long run's records would pass
                // what the browser's storage takes in one piece).
                let write = self.page_writer();
                for part in result.records.chunks(CHECKPOINT_PART_RECORDS) {
                    if let Ok(text) = serde_json::to_string(part) {
                        write(text, part.len() as u32);
                    }
                }
                /// The unsigned document, borrowed (no `Value` tree of the records).
                #[derive(serde::Serialize)]
                struct Unsigned<'a> {
                    error: &'a str,
                    created: &'a str,
                    config: &'a RunConfig,
                    env: &'a ClientEnv,
                    records: &'a [crate::core::record::RequestRecord],
                }
                let doc = Unsigned {
                    error: &e,
                    created: &ctx.created,
                    config: &ctx.cfg,
                    env: &result.env,
                    records: &result.records,
                };
                self.unsigned.set(serde_json::to_string(&doc).ok());
                if let Some(url) = &self.collect {
                    post_to_collector(&format!("{url}?event=stage&name=failed"), e.clone());
                }
                self.run_error.set(format!(
                    "{e} The records are kept (checkpoint) and can be downloaded unsigned."
                ));
            }
        }
        self.running.set(false);
    }

    fn on_failed(&self, message: String) {
        // The checkpoint stays (its records may be all there is); its writer stops.
        if let Some(url) = &self.collect {
            post_to_collector(&format!("{url}?event=stage&name=failed"), message.clone());
        }
        self.ctx.listen(false);
        self.ctx.release();
        self.run_error.set(message);
        self.running.set(false);
        self.page_lag.set_value(None);
    }

    /// Callbacks for a run on this page's main thread.
    pub fn page_sink(&self) -> HostSink {
        let (a, c) = (self.clone(), self.clone());
        HostSink {
            progress: Box::new(move |p| a.on_progress(p)),
            checkpoint: Box::new(self.page_writer()),
            done: Box::new(move |r| c.on_done(r)),
        }
    }

    /// Callbacks for a run in a worker; when the worker fails before the run starts,
    /// the run moves to this page's main thread.
    pub fn worker_sink(&self, req: RunRequest) -> PageSink {
        let (a, b, c, d) = (self.clone(), self.clone(), self.clone(), self.clone());
        PageSink {
            progress: Box::new(move |p| a.on_progress(p)),
            checkpoint_written: Box::new(move |count, stored| {
                b.on_checkpoint_written(count, stored)
            }),
            done: Box::new(move |r| c.on_done(r)),
            failed: Box::new(move |msg, started| {
                if started {
                    return d.on_failed(msg);
                }
                web_sys::console::warn_1(&format!("pinbench: the run worker failed ({msg}); running on the page's main thread").into());
                // Replaced outside the worker's own callback (which the old handle owns).
                let (d, req) = (d.clone(), req.clone());
                spawn_local(async move {
                    let h = BrowserHost::start(req, RunHost::MainThread, d.page_sink());
                    d.handle.set_value(Some(RunHandle::Page(h)));
                });
            }),
        }
    }
}
