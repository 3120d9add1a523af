//! The Run screen: the pinned config form (with presets, probe, checklist and fit check),
//! the live view, and the results with a signed report download.

use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::core::chart;
use crate::core::decimal::{fixed, Fixed};
use crate::core::html;
use crate::core::lifecycle::{self, ApiKey, FillPolicy, Host};
use crate::core::live::LiveSeries;
use crate::core::metrics::{ClientEnv, RunHost, Slo};
use crate::core::pins::{self, wire_name, FitInputs, RawConfig, RawField, RunConfig};
use crate::core::report::{Checkpoint, FiguredReport, ProbeSnapshot, Report, ReportBody};
use crate::core::session::Progress;
use crate::core::sign::KeyPair;
use crate::core::view;
use crate::web::fetch::PageHost;
use crate::web::host::{BrowserHost, HostSink, LagMonitor, RunRequest, RunResult, LAG_PROBE_MS};
use crate::web::store::{
    self, remove_checkpoint, save_checkpoint, stored_checkpoints, CHECKPOINT_PREFIX,
};
use crate::web::worker::{PageSink, WorkerRun};
use crate::web::{self, keystore};

use super::form;

/// The default endpoint: the reference server's HTTP/2 address (`scripts/serve.sh`), on
/// which every preset can run (over http:// a browser keeps at most 6 requests in flight).
const DEFAULT_ENDPOINT: &str = "https://127.0.0.1:8443";

/// How often the live view shows progress, µs (the host publishes at 10 Hz).
const PROGRESS_SHOWN_US: u64 = 250_000;

/// How often the live charts redraw, µs.
const LIVE_REDRAW_US: u64 = 500_000;

/// The URL fragment that carries shared pins.
const SHARE_PREFIX: &str = "#pins=";

/// The form to start with, and whether its pins came from a link (`#pins=`).
fn initial_form() -> (RawConfig, bool) {
    let shared = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .and_then(|h| h.strip_prefix(SHARE_PREFIX).map(str::to_owned))
        .and_then(|enc| js_sys::decode_uri_component(&enc).ok())
        .and_then(|s| s.as_string())
        .and_then(|text| RawConfig::from_share_json(&text));
    if let Some(r) = shared {
        return (r, true);
    }
    let mut r = RawConfig::default();
    for (name, text) in [
        ("endpoint_url", DEFAULT_ENDPOINT),
        ("dialect", "completions"),
        ("load_mode", "closed"),
    ] {
        if let Some(f) = r.field_mut(name) {
            *f = RawField::declared(text);
        }
    }
    (r, false)
}

/// A run in progress: in a dedicated worker, or on this page where workers are
/// unavailable.
enum RunHandle {
    Worker(WorkerRun),
    Page(BrowserHost),
}

impl RunHandle {
    fn stop(&self) {
        match self {
            RunHandle::Worker(w) => w.stop(),
            RunHandle::Page(h) => h.stop(),
        }
    }
}

/// What the page keeps about a run while it goes: what the report needs besides the
/// records, and the checkpoint (keyed by run id, so a second run or tab never
/// overwrites an interrupted one).
struct RunContext {
    created: String,
    cfg: RunConfig,
    slo: Option<Slo>,
    probes: Vec<ProbeSnapshot>,
    key: String,
    /// Parts of the records written so far, and parts that did not fit in storage.
    parts: std::cell::Cell<(u32, u32)>,
    /// Host time of the progress last shown, µs.
    progress_shown_us: std::cell::Cell<u64>,
    listener: wasm_bindgen::closure::Closure<dyn FnMut()>,
}

impl RunContext {
    /// A run's context, already listening for the page being hidden or unloaded.
    fn new(
        created: String,
        cfg: RunConfig,
        slo: Option<Slo>,
        probes: Vec<ProbeSnapshot>,
    ) -> Rc<Self> {
        // The caller checked the generator when it drew the run's seed.
        let id: String = web::random_seed().unwrap_or_default()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let key = format!("{CHECKPOINT_PREFIX}{id}");
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
                key,
                parts: std::cell::Cell::new((0, 0)),
                progress_shown_us: std::cell::Cell::new(0),
                listener,
            }
        });
        ctx.listen(true);
        ctx
    }

    /// Written every few seconds and when the page is hidden or unloaded.
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

    fn write_checkpoint(&self) {
        save_checkpoint(
            &self.key,
            Checkpoint {
                created: self.created.clone(),
                config: self.cfg.clone(),
                env: ClientEnv {
                    timer_resolution_us: 0,
                    cross_origin_isolated: web::cross_origin_isolated(),
                    event_loop_lag_p99_us: 0,
                    event_loop_lag_max_us: 0,
                    host: None,
                    clock_epoch_us: web::clock_epoch_us(),
                },
                planned: None,
                records: Vec::new(),
                dropped: self.parts.get().1,
            },
        );
    }
}

/// The page's signals a run reports to.
#[derive(Clone)]
struct RunSinks {
    ctx: Rc<RunContext>,
    progress: RwSignal<Progress>,
    report: RwSignal<Option<FiguredReport>>,
    unsigned: RwSignal<Option<String>>,
    run_error: RwSignal<String>,
    running: RwSignal<bool>,
    handle: StoredValue<Option<RunHandle>, LocalStorage>,
    page_lag: StoredValue<Option<LagMonitor>, LocalStorage>,
    page_lag_text: RwSignal<String>,
    /// A loopback URL the finished report is posted to (a run started by a link).
    collect: Option<String>,
}

/// Posts `body` to a loopback collector (a run started by a link, e.g. the fidelity
/// bench); anything else is refused.
fn post_to_collector(url: &str, body: String) {
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

    /// New completed records (`count` of them) as JSON text: stored as they are, never
    /// parsed or re-serialised here while the run goes.
    fn on_checkpoint(&self, records_json: &str, count: u32) {
        let ctx = &self.ctx;
        let (n, dropped) = ctx.parts.get();
        let kept = store::append_checkpoint_records(&ctx.key, n, records_json);
        let dropped = if kept { dropped } else { dropped + count };
        ctx.parts.set((n + 1, dropped));
        if n == 0 || !kept {
            ctx.write_checkpoint();
        }
    }

    fn on_done(&self, result: RunResult) {
        let ctx = &self.ctx;
        ctx.listen(false);
        let page_lag = self.show_page_lag();
        self.page_lag.set_value(None);
        let built = ReportBody::build_figured(
            ctx.created.clone(),
            ctx.cfg.clone(),
            ctx.slo,
            ctx.probes.clone(),
            result.env,
            result.records.clone(),
        )
        .map_err(|e| format!("Could not build the report: {e}"))
        .map(|(body, figures)| FiguredReport {
            report: Report::new(body),
            figures,
        });
        // Signing may wait on WebCrypto: the rest happens when it answers.
        let me = self.clone();
        spawn_local(async move {
            let signed = match built {
                Ok(mut r) => match keystore::signer().await {
                    Ok(s) => s
                        .sign_report(&mut r.report, &r.figures)
                        .await
                        .map(|()| r)
                        .map_err(|e| format!("Could not sign the report: {e}")),
                    Err(e) => Err(format!("Could not sign the report: {e}")),
                },
                Err(e) => Err(e),
            };
            me.on_signed(signed, result, page_lag);
        });
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
                self.report.set(Some(r));
            }
            Err(e) => {
                // Keep the checkpoint, and offer the records with the error, unsigned.
                // The checkpoint then holds every record of the run.
                remove_checkpoint(&ctx.key);
                ctx.parts.set((0, 0));
                if let Ok(text) = serde_json::to_string(&result.records) {
                    self.on_checkpoint(&text, result.records.len() as u32);
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
                self.run_error.set(format!(
                    "{e} The records are kept (checkpoint) and can be downloaded unsigned."
                ));
            }
        }
        self.running.set(false);
    }

    fn on_failed(&self, message: String) {
        // The checkpoint stays (its records may be all there is); its writer stops.
        self.ctx.listen(false);
        self.run_error.set(message);
        self.running.set(false);
        self.page_lag.set_value(None);
    }

    /// Callbacks for a run on this page's main thread.
    fn page_sink(&self) -> HostSink {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        HostSink {
            progress: Box::new(move |p| a.on_progress(p)),
            checkpoint: Box::new(move |r| {
                if let Ok(text) = serde_json::to_string(r) {
                    b.on_checkpoint(&text, r.len() as u32)
                }
            }),
            done: Box::new(move |r| c.on_done(r)),
        }
    }

    /// Callbacks for a run in a worker; when the worker fails before the run starts,
    /// the run moves to this page's main thread.
    fn worker_sink(&self, req: RunRequest) -> PageSink {
        let (a, b, c, d) = (self.clone(), self.clone(), self.clone(), self.clone());
        PageSink {
            progress: Box::new(move |p| a.on_progress(p)),
            checkpoint: Box::new(move |text, count| b.on_checkpoint(&text, count)),
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

/// The Run screen.
#[component]
pub fn RunPage() -> impl IntoView {
    let (first_form, from_link) = initial_form();
    let form = RwSignal::new(first_form);
    // A run started by a link (`?autorun=1#pins=…`): only against a loopback endpoint,
    // never with a remembered API key; `&collect=URL` (loopback) receives the report.
    let autorun = crate::web::files::query_param("autorun").as_deref() == Some("1");
    let collect = StoredValue::new(
        crate::web::files::query_param("collect").filter(|u| pins::is_loopback_url(u)),
    );
    // The API key lives in memory unless the user ticks "remember" (and a link-started
    // run never sees a remembered one).
    // A key is tied to the endpoint origin it was entered for: a remembered one is used
    // only for that origin, and changing the endpoint (by hand or by a link) clears it.
    let endpoint_origin = move || form.with(|f| pins::origin_of(&f.endpoint_url.text));
    let stored_key = (!autorun).then(store::remembered_api_key).flatten();
    let remember = RwSignal::new(stored_key.is_some());
    let key_note = RwSignal::new(String::new());
    let (first_key, first_origin) = match stored_key {
        Some((o, k)) if Some(&o) == endpoint_origin().as_ref() => (k, Some(o)),
        Some((o, _)) => {
            key_note.set(format!(
                "A key is remembered for {o}; it is not sent to this endpoint. Type a key for it."
            ));
            (String::new(), None)
        }
        None => (String::new(), None),
    };
    let api_key = RwSignal::new(first_key);
    let key_origin = RwSignal::new(first_origin);
    Effect::new(move |_| {
        let now = endpoint_origin();
        let tied = key_origin.get_untracked();
        if tied.is_some() && tied != now && !api_key.get_untracked().is_empty() {
            api_key.set(String::new());
            key_origin.set(None);
            key_note.set(format!(
                "The API key was entered for {}; it is not sent to {}. Type it again to use it there.",
                tied.unwrap_or_default(),
                now.unwrap_or_else(|| "this endpoint".into())
            ));
        } else if api_key.get_untracked().is_empty() && !autorun {
            // Back at the endpoint a key is remembered for: it comes back.
            if let Some((o, k)) =
                store::remembered_api_key().filter(|(o, _)| Some(o) == now.as_ref())
            {
                api_key.set(k);
                key_origin.set(Some(o));
                key_note.set(String::new());
            }
        }
    });
    Effect::new(move |_| {
        let (keep, key, origin) = (remember.get(), api_key.get(), key_origin.get());
        if autorun {
            return;
        }
        match (keep, origin) {
            (true, Some(o)) if !key.is_empty() => store::remember_api_key(Some((&o, &key))),
            (true, _) => {}
            (false, _) => store::remember_api_key(None),
        }
    });
    let probe_msg = RwSignal::new(String::new());
    let cert_help = RwSignal::new(None::<String>);
    let running = RwSignal::new(false);
    let progress = RwSignal::new(Progress::default());
    let report = RwSignal::new(None::<FiguredReport>);
    let slo_fields = RwSignal::new((String::new(), String::new(), String::new()));
    // What the last probe read, kept in the report beside the pins it filled.
    let probes = RwSignal::new(Vec::<ProbeSnapshot>::new());
    let run_error = RwSignal::new(String::new());
    // A failed build or sign: the records and the error, offered as an unsigned download.
    let unsigned = RwSignal::new(None::<String>);
    let handle = StoredValue::new_local(None::<RunHandle>);
    // The page's own event-loop lag during a run (the worker measures its own).
    let page_lag = StoredValue::new_local(None::<LagMonitor>);
    let page_lag_text = RwSignal::new(String::new());
    let key_id = RwSignal::new(String::new());
    let key_where = RwSignal::new(String::new());
    spawn_local(async move {
        match keystore::signer().await {
            Ok(s) => {
                key_id.set(s.key_id());
                key_where.set(s.where_kept().into());
            }
            Err(e) => key_id.set(e),
        }
    });
    let key_import = RwSignal::new(String::new());
    let key_msg = RwSignal::new(String::new());
    let on_key_export = move |_| {
        // Only a software key can be exported: a WebCrypto key's secret cannot be read.
        let k = match store::existing_signing_key() {
            Some(k) if key_id.get_untracked() == k.key_id() => k,
            _ => {
                return key_msg.set(
                    "This browser's key is a non-extractable WebCrypto key: its secret cannot be exported. Import a key to sign with one you can carry.".into(),
                )
            }
        };
        let doc = serde_json::json!({"alg": "Ed25519", "key_id": k.key_id(), "public_key": k.public_key_base64(), "secret_key": k.secret_base64()});
        if let Err(e) = web::download(
            "pinbench-signing-key.json",
            "application/json",
            &doc.to_string(),
        ) {
            key_msg.set(format!("Export failed: {e}"));
        }
    };
    let on_key_import = move |_| {
        let text = key_import.get_untracked();
        // Accept the exported JSON or a bare base64 secret.
        let secret = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["secret_key"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.trim().to_owned());
        match KeyPair::from_secret_base64(&secret) {
            Ok(k) => match store::keep_signing_key(&k) {
                Ok(()) => {
                    key_id.set(k.key_id());
                    key_where.set(keystore::Signer::Software(k.clone()).where_kept().into());
                    key_import.set(String::new());
                    key_msg.set("Key imported. Reports it signs are not trusted by this browser until you add its public key to the trusted keys (Reports screen).".into());
                }
                Err(e) => key_msg.set(e),
            },
            Err(e) => key_msg.set(format!("Not a signing key: {e}")),
        }
    };

    #[allow(clippy::redundant_closure)]
    let pinned = Memo::new(move |_| form.with(|f| RunConfig::try_from(f)));
    let fit = Memo::new(move |_| form.with(|f| pins::fit_check(&FitInputs::from_raw(f))));

    let apply_preset = move |p: &'static pins::Preset| form.update(|f| p.apply(f));
    let on_probe = move |_| {
        let base = form.with_untracked(|f| f.endpoint_url.text.clone());
        probe_msg.set("Probing…".into());
        cert_help.set(None);
        spawn_local(async move {
            match lifecycle::probe(&PageHost, &base).await {
                Ok(p) => {
                    probes.set(p.snapshots);
                    let changed = form
                        .try_update(|f| lifecycle::apply_fills(f, &p.fills, FillPolicy::Replace));
                    probe_msg.set(format!(
                        "Probed: {}",
                        changed.unwrap_or_default().join(", ")
                    ));
                }
                Err(e) => {
                    // An https endpoint that cannot be read may be a self-signed certificate
                    // the browser has not accepted yet (the reference server's is).
                    if let Some(b) =
                        pins::parse_base_url(&base).filter(|b| b.starts_with("https://"))
                    {
                        cert_help.set(Some(format!("{b}/v1/models")));
                    }
                    probe_msg.set(e.to_string());
                }
            }
        });
    };
    let behaviour_msg = RwSignal::new(String::new());
    let on_behaviour = move |_| {
        let target = match form.with_untracked(lifecycle::Target::of_form) {
            Ok(t) => t,
            Err(e) => return behaviour_msg.set(e.to_string()),
        };
        let key = ApiKey::for_endpoint(
            &api_key.get_untracked(),
            &key_origin.get_untracked().unwrap_or_default(),
        )
        .filter(|k| k.for_url(&target.base_url).is_some());
        behaviour_msg.set("Measuring the server's behaviour (a few requests)…".into());
        spawn_local(async move {
            match lifecycle::behaviour(&PageHost, &target, key.as_ref()).await {
                Ok(b) => {
                    form.update(|f| {
                        lifecycle::apply_fills(f, &b.fills, FillPolicy::Replace);
                    });
                    probes.update(|p| lifecycle::replace_behaviour_evidence(p, b.snapshots));
                    behaviour_msg.set(b.lines.join("\n"));
                }
                Err(e) => behaviour_msg.set(format!("The behaviour probes stopped: {e}")),
            }
        });
    };
    let on_start = move |()| {
        let collect = collect.get_value();
        let Ok(cfg) = pinned.get_untracked() else {
            return;
        };
        let slo = match slo_fields.with_untracked(|(a, b, c)| Slo::from_ms_fields(a, b, c)) {
            Ok(s) => s,
            Err(e) => return run_error.set(e),
        };
        running.set(true);
        report.set(None);
        unsigned.set(None);
        run_error.set(String::new());
        progress.set(Progress::default());
        // Only a key entered for this very endpoint is sent.
        let key = if key_origin.get_untracked() == pins::origin_of(&cfg.endpoint.base_url) {
            api_key.get_untracked()
        } else {
            String::new()
        };
        spawn_local(async move {
            let calibration = match lifecycle::calibrate(&PageHost, &cfg).await {
                Ok(c) => c,
                Err(e) => {
                    running.set(false);
                    return run_error.set(e.to_string());
                }
            };
            let created = js_sys::Date::new_0()
                .to_iso_string()
                .as_string()
                .unwrap_or_default();
            // Only what was read from this endpoint (the URL may have changed since).
            let snapshots =
                probes.with_untracked(|p| lifecycle::snapshots_for(p, &cfg.endpoint.base_url));
            // No run without the browser's random generator (arrivals, nonces).
            let seed = match web::random_seed() {
                Ok(s) => s,
                Err(e) => {
                    running.set(false);
                    return run_error.set(e);
                }
            };
            let ctx = RunContext::new(created, cfg.clone(), slo, snapshots);
            let req = RunRequest {
                cfg,
                calibration,
                api_key: Some(key).filter(|k| !k.is_empty()),
                extra_header: None,
                seed: seed.to_vec(),
            };
            let sinks = RunSinks {
                ctx: ctx.clone(),
                progress,
                report,
                unsigned,
                run_error,
                running,
                handle,
                page_lag,
                page_lag_text,
                collect: collect.clone(),
            };
            if let Some(url) = &collect {
                post_to_collector(&format!("{url}?event=start"), "{}".into());
            }
            page_lag.set_value(Some(LagMonitor::start(LAG_PROBE_MS)));
            let h = match WorkerRun::start(req.clone(), sinks.worker_sink(req.clone())) {
                Ok(w) => RunHandle::Worker(w),
                Err(e) => {
                    web_sys::console::warn_1(
                        &format!(
                            "pinbench: no run worker ({e}); running on the page's main thread"
                        )
                        .into(),
                    );
                    RunHandle::Page(BrowserHost::start(
                        req,
                        RunHost::MainThread,
                        sinks.page_sink(),
                    ))
                }
            };
            handle.set_value(Some(h));
        });
    };
    if autorun {
        let ok = pinned.with_untracked(|p| {
            p.as_ref()
                .map(|c| pins::is_loopback_url(&c.endpoint.base_url))
                .unwrap_or(false)
        });
        if ok {
            on_start(());
        } else {
            run_error.set("This link asks to start a run, but a run started by a link must have every pin set and a loopback endpoint (127.0.0.1, localhost or [::1]). Check the pins and press Start yourself.".into());
        }
    }
    let interrupted = RwSignal::new_local(stored_checkpoints().into_iter().next());
    let on_interrupted_discard = move |()| {
        if let Some((key, _)) = interrupted.get_untracked() {
            remove_checkpoint(&key);
        }
        interrupted.set(stored_checkpoints().into_iter().next());
    };
    let on_interrupted_report = move |()| {
        let Some((_, cp)) = interrupted.get_untracked() else {
            return;
        };
        match cp.into_body().and_then(|body| {
            let figures = body.figures()?;
            Ok(FiguredReport {
                report: Report::new(body),
                figures,
            })
        }) {
            Ok(mut r) => {
                spawn_local(async move {
                    let signed = match keystore::signer().await {
                        Ok(s) => s.sign_report(&mut r.report, &r.figures).await,
                        Err(e) => Err(e),
                    };
                    match signed {
                        Ok(()) => {
                            report.set(Some(r));
                            on_interrupted_discard(());
                        }
                        Err(e) => run_error.set(format!("Could not sign the report: {e}")),
                    }
                });
            }
            Err(e) => run_error.set(format!(
                "Could not build a report from the interrupted run: {e}"
            )),
        }
    };
    let on_stop = move |_| {
        handle.with_value(|h| {
            if let Some(h) = h {
                h.stop();
            }
        });
    };
    let on_dismiss = move |_| {
        report.set(None);
        unsigned.set(None);
    };
    let on_download_unsigned = move |_| {
        if let Some(text) = unsigned.get_untracked() {
            if let Err(e) = web::download("pinbench-unsigned-run.json", "application/json", &text) {
                run_error.set(format!("Download failed: {e}"));
            }
        }
    };
    let on_download = move |_| {
        if let Some(r) = report.get_untracked() {
            match r.report.to_json() {
                Ok(text) => {
                    if let Err(e) = web::download("pinbench-report.json", "application/json", &text)
                    {
                        run_error.set(format!("Download failed: {e}"));
                    }
                }
                Err(e) => run_error.set(e.to_string()),
            }
        }
    };

    // The live charts redraw at 2 Hz: the run's own worker shares the machine's cores.
    // A re-run of a received report: its workload pins, everything else cleared; when the
    // run ends, Compare opens with both.
    let nav = use_context::<super::Nav>();
    let lib = use_context::<super::viewer::Library>();
    let rerun_of = RwSignal::new(None::<(String, usize)>);
    if let Some(nav) = nav {
        Effect::new(move |_| {
            let Some(r) = nav.rerun.get() else {
                return;
            };
            form.update(|f| {
                for &(name, _) in RawConfig::FIELDS {
                    if let Some(field) = f.field_mut(name) {
                        *field = r.form.field(name).cloned().unwrap_or_default();
                    }
                }
            });
            report.set(None);
            rerun_of.set(Some((r.title.clone(), r.source)));
            nav.rerun.set(None);
        });
        Effect::new(move |_| {
            let Some(done) = report.get() else {
                return;
            };
            let (Some((title, source)), Some(lib)) = (rerun_of.get_untracked(), lib) else {
                return;
            };
            rerun_of.set(None);
            let Ok(text) = done.report.to_json() else {
                return;
            };
            if lib
                .open_text(format!("re-run of {title}"), None, &text)
                .is_ok()
            {
                let new = lib.entries.with_untracked(Vec::len).saturating_sub(1);
                lib.compare_picks.set(vec![source, new]);
                nav.section.set(super::Section::Compare);
            }
        });
    }
    let live = RwSignal::new(LiveSeries::new());
    let last_drawn = StoredValue::new((0u64, 0u64));
    Effect::new(move |_| {
        let p = progress.get();
        if p.started_us == 0 {
            return;
        }
        let (run, at) = last_drawn.get_value();
        if run != p.started_us || p.now_us >= at + LIVE_REDRAW_US || p.finished {
            last_drawn.set_value((p.started_us, p.now_us));
            live.update(|l| l.push(&p));
        }
    });
    // Status changes, announced to screen readers.
    let status = Memo::new(move |_| {
        if running.get() {
            "A run is in progress.".to_owned()
        } else if report.with(Option::is_some) {
            "The run finished: its signed report is below.".to_owned()
        } else if !run_error.get().is_empty() {
            "The run stopped with an error.".to_owned()
        } else {
            String::new()
        }
    });
    let summary = Memo::new(move |_| {
        pinned.with(|p| {
            p.as_ref()
                .ok()
                .map(|c| (pins::plan_summary(c, None), c.load.value.steps.len()))
        })
    });

    // The checklist's links move the focus to their field (one handler for the list).
    let on_checklist_click = move |ev: leptos::ev::MouseEvent| {
        use wasm_bindgen::JsCast;
        let href = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("a[href^='#pin-']").ok().flatten())
            .and_then(|a| a.get_attribute("href"));
        if let Some(id) = href.as_deref().and_then(|h| h.strip_prefix('#')) {
            ev.prevent_default();
            focus_id(id);
        }
    };

    let api_key_view = view! {
        <div class="field" data-field="api_key">
            <label class="field__label" for="api-key">"API key"</label>
            <div class="field__control">
                <input id="api-key" class="field__input" type="password" data-testid="api-key" autocomplete="off" aria-describedby="api-key-help" prop:value=move || api_key.get() on:input=move |ev| {
                    api_key.set(event_target_value(&ev));
                    key_origin.set(endpoint_origin());
                    key_note.set(String::new());
                } />
            </div>
            <p class="field__help" id="api-key-help">"Kept in memory and sent only to the origin it was typed for; never in reports or links."</p>
            <p class="pin__note" data-testid="api-key-note" role="status">{move || key_note.get()}</p>
            <label class="field__check">
                <input type="checkbox" data-testid="remember-key" prop:checked=move || remember.get() on:change=move |ev| remember.set(event_target_checked(&ev)) />
                " remember in this browser"
            </label>
        </div>
    }
    .into_any();

    view! {
        <section class="run" aria-label="Run a benchmark">
            {move || interrupted.get().map(|(_, cp)| {
                let n = cp.records.len();
                let created = cp.created.clone();
                let model = cp.config.model.id.value.clone();
                view! {
                    <div class="run__interrupted" role="alert" data-testid="interrupted-run">
                        {format!("A run was interrupted when its tab closed ({model}, started {created}): {n} completed requests were kept. ")}
                        <button data-testid="interrupted-report" on:click=move |_| on_interrupted_report(())>"Build a signed report from them"</button>
                        " "
                        <button data-testid="interrupted-discard" on:click=move |_| on_interrupted_discard(())>"Discard"</button>
                    </div>
                }
            })}
            {move || rerun_of.get().map(|(title, _)| view! {
                <p class="notice" data-testid="rerun-banner" role="note">
                    {format!("Re-running the workload pins of “{title}”. Type your endpoint and its API, press Probe endpoint for its server pins, then Start: Compare opens with both reports when the run ends.")}
                </p>
            })}
            {from_link.then(|| view! {
                <p class="report__warn" data-testid="link-pins" role="note">
                    {move || format!(
                        "These pins came from a link: check them before Start. Requests will go to {}.",
                        endpoint_origin().unwrap_or_else(|| "an endpoint that is not set".into())
                    )}
                </p>
            })}
            <div class="run__toolbar">
                <div class="run__presets-all">
                    {preset_groups()
                        .into_iter()
                        .enumerate()
                        .map(|(gi, (group, presets))| {
                            let label_id = format!("presets-label-{gi}");
                            let labelled_by = label_id.clone();
                            view! {
                                <div class="run__presets" role="group" aria-labelledby=labelled_by>
                                    <span class="run__toolbar-label" id=label_id>{if gi == 0 { "Workload presets".to_owned() } else { group.to_owned() }}</span>
                                    {presets
                                        .into_iter()
                                        .map(|p| {
                                            let on = move || form.with(|f| p.all_fills().all(|(n, t)| f.field(n).is_some_and(|x| x.text == t)));
                                            view! {
                                                <button
                                                    type="button"
                                                    class="chip"
                                                    aria-pressed=move || if on() { "true" } else { "false" }
                                                    data-testid=format!("preset-{}", p.id)
                                                    on:click=move |_| {
                                                        apply_preset(p);
                                                        if let Some((ttft, tpot)) = p.slo_ms {
                                                            slo_fields.set((ttft.to_owned(), tpot.to_owned(), String::new()));
                                                        }
                                                    }
                                                >
                                                    {p.label}
                                                </button>
                                            }
                                        })
                                        .collect_view()}
                                </div>
                            }
                        })
                        .collect_view()}
                </div>
                <div class="run__probe">
                    <button type="button" class="btn" data-testid="probe" on:click=on_probe>"Probe endpoint"</button>
                    <span class="run__probe-msg" data-testid="probe-message" role="status">{move || probe_msg.get()}</span>
                    <button type="button" class="btn" data-testid="probe-behaviour" on:click=on_behaviour title="Staggered requests (batching regime), the same prompt twice (prefix cache), TTFT/TPOT at three prompt lengths (decode slowdown)">"Measure server behaviour"</button>
                    <span class="run__probe-msg run__behaviour" data-testid="behaviour-message" role="status">{move || behaviour_msg.get()}</span>
                </div>
                {move || cert_help.get().map(|url| view! {
                    <p class="notice" data-testid="cert-help" role="note">
                        "If this endpoint uses a self-signed certificate (the reference server's does), the browser refuses it until you accept it once: open "
                        <a href=url.clone() target="_blank" rel="noopener" data-testid="cert-link">{url.clone()}</a>
                        ", accept the warning (Advanced → Proceed), then come back and press Probe endpoint again."
                    </p>
                })}
            </div>
            <div class="run__layout">
                <div class="run__form">
                    {form::sections_view(form, pinned, api_key_view)}
                    <fieldset class="pin-section run__more" data-testid="section-slo">
                        <legend class="pin-section__legend"><span class="pin-section__title">"Goodput SLOs"</span><span class="badge badge--optional">"optional"</span></legend>
                        <p class="pin-section__why">"Goodput counts the requests that meet every limit set here (ms): a server fast on average can still miss them."</p>
                        <div class="run__slo">

                            <label>"TTFT ≤ " <input class="field__input field__input--short" data-testid="slo-ttft" aria-label="SLO: TTFT, ms" inputmode="decimal" prop:value=move || slo_fields.get().0 on:input=move |ev| slo_fields.update(|f| f.0 = event_target_value(&ev)) /> " ms"</label>
                            <label>"TPOT ≤ " <input class="field__input field__input--short" data-testid="slo-tpot" aria-label="SLO: TPOT, ms" inputmode="decimal" prop:value=move || slo_fields.get().1 on:input=move |ev| slo_fields.update(|f| f.1 = event_target_value(&ev)) /> " ms"</label>
                            <label>"E2E ≤ " <input class="field__input field__input--short" data-testid="slo-e2e" aria-label="SLO: E2E latency, ms" inputmode="decimal" prop:value=move || slo_fields.get().2 on:input=move |ev| slo_fields.update(|f| f.2 = event_target_value(&ev)) /> " ms"</label>
                        </div>
                    </fieldset>
                </div>
                <div class="run__aside" role="region" aria-label="Before Start">
                    <div class="panel run__checklist" data-testid="checklist" aria-live="polite" on:click=on_checklist_click>
                        <h3 class="panel__title">"Checklist"</h3>
                        <div inner_html=move || pinned.with(|p| html::checklist(p.as_ref().err().map_or(&[], |e| e.problems())))></div>
                    </div>
                    <div class=move || format!("panel run__fit run__fit--{}", wire_name(&fit.get().verdict)) data-testid="fit-check" inner_html=move || fit.with(html::fit_check)></div>
                    <div class="panel" data-testid="plan-summary" inner_html=move || summary.with(|s| html::plan(s.as_ref()))></div>
                    <div class="run__controls">
                        <button type="button" class="btn btn--primary" data-testid="start" disabled=move || pinned.with(|p| p.is_err()) || running.get() on:click=move |_| on_start(())>"Start"</button>
                        <button type="button" class="btn" data-testid="stop" disabled=move || !running.get() on:click=on_stop>"Stop"</button>
                    </div>
                    <div class="panel">
                        <h3 class="panel__title">"Signing key"</h3>
                        <div class="run__key" role="group" aria-label="Signing key">
                            <p>
                                <span data-testid="key-id" title=move || key_where.get()>{move || format!("signing key {}", key_id.get())}</span>
                                " · "
                                <span class="pin__note" data-testid="key-where">{move || key_where.get()}</span>
                            </p>
                            <button type="button" class="btn" data-testid="key-export" on:click=on_key_export>"Export signing key"</button>
                            <label for="key-import">"Import a signing key (exported JSON or base64 secret)"</label>
                            <input id="key-import" class="field__input" type="password" data-testid="key-import" autocomplete="off" prop:value=move || key_import.get() on:input=move |ev| key_import.set(event_target_value(&ev)) />
                            <button type="button" class="btn" data-testid="key-import-button" on:click=on_key_import>"Import"</button>
                            <span data-testid="key-message" role="status">{move || key_msg.get()}</span>
                        </div>
                    </div>
                    <div class="field run__share">
                        <label class="field__label" for="share-link">"Shareable link (pins only, never the API key)"</label>
                        <input id="share-link" class="field__input" data-testid="share-link" readonly prop:value=move || {
                            let loc = web_sys::window().map(|w| w.location());
                            let here = loc.and_then(|l| Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))).unwrap_or_default();
                            let json = form.with(RawConfig::to_share_json);
                            format!("{here}{SHARE_PREFIX}{}", String::from(js_sys::encode_uri_component(&json)))
                        } />
                    </div>
                </div>
            </div>
            <p class="sr-only" role="status" aria-live="polite" data-testid="run-status">{move || status.get()}</p>
            <section class="live" aria-label="Live progress" data-testid="live-view" hidden=move || !running.get() && live.with(|l| l == &LiveSeries::new())>
                <h3 class="live__title">"Live"</h3>
                <div class="live__bars">
                    {move || {
                        let p = progress.get();
                        let planned_ms = pinned.with(|c| c.as_ref().ok().and_then(|c| {
                            let w = c.window.value;
                            let ms = |s: pins::Span| match s { pins::Span::Duration { ms } => Some(ms), pins::Span::Requests { .. } => None };
                            Some((ms(w.warmup)? + ms(w.measured)? + ms(w.cooldown)?) * c.load.value.steps.len() as u64)
                        }));
                        let elapsed_ms = p.now_us.saturating_sub(p.started_us) / 1000;
                        view! {
                            <label>{format!("Requests {} / {}", p.dispatched, p.planned.map_or("?".into(), |n| n.to_string()))}
                                <progress data-testid="progress-requests" max=p.planned.unwrap_or(0).max(1).to_string() value=p.completed.to_string()></progress>
                            </label>
                            {planned_ms.map(|t| view! {
                                <label>{format!("Time {} / {} s", elapsed_ms / 1000, t / 1000)}
                                    <progress data-testid="progress-time" max=t.max(1).to_string() value=elapsed_ms.min(t).to_string()></progress>
                                </label>
                            })}
                        }
                    }}
                </div>
                // A static list whose texts change: a progress tick rewrites a few text
                // nodes, never the elements (the run's worker shares the machine's cores).
                <dl class="live__stats" data-testid="live-stats">
                    <div><dt>"step"</dt><dd>{move || progress.with(|p| format!("{}/{}{}", p.step.0 + 1, p.step.1.max(1), p.phase.as_deref().map(|ph| format!(" · {ph}")).unwrap_or_default()))}</dd></div>
                    <div><dt>"in flight / target"</dt><dd>{move || progress.with(|p| format!("{} / {}", p.in_flight.0, p.in_flight.1))}</dd></div>
                    <div><dt>"aggregate, since start"</dt><dd>{move || progress.with(|p| {
                        let elapsed = (p.now_us.saturating_sub(p.started_us)) as f64 / 1e6;
                        format!("{} tok/s", Fixed(if elapsed > 0.0 { p.tokens as f64 / elapsed } else { 0.0 }, 0))
                    })}{definition("live_aggregate", "aggregate, since start")}</dd></div>
                    <div><dt>"TTFT p50 / p90 / p99 so far"</dt><dd><span data-testid="live-ttft">{move || progress.with(|p| live_q(p.ttft_q))}</span>{definition("live_ttft", "TTFT so far")}</dd></div>
                    <div><dt>"TPOT p50 / p90 / p99 so far"</dt><dd><span data-testid="live-tpot">{move || progress.with(|p| live_q(p.tpot_q))}</span>{definition("live_tpot", "TPOT so far")}</dd></div>
                    <div><dt>"errors"</dt><dd data-testid="live-errors" class:bad=move || progress.with(|p| !p.errors.is_empty())>{move || progress.with(|p| view::errors_text(&p.errors))}</dd></div>
                </dl>
                <div class="live__charts chart-row" data-testid="live-charts">
                    {move || {
                        let target = progress.with(|p| p.in_flight.1);
                        live.with(|l| l.charts(target))
                            .into_iter()
                            .map(|c| view! { <figure class="chart-box" inner_html=chart::render_svg(&c)></figure> })
                            .collect_view()
                    }}
                </div>
                <p class="live__line" data-testid="live">
                {move || {
                    let p = progress.get();
                    let elapsed = (p.now_us.saturating_sub(p.started_us)) as f64 / 1e6;
                    let per_stream = if p.decode.1 > 0 {
                        fixed(p.decode.0 as f64 / f64::from(p.decode.1) / 1000.0, 1)
                    } else {
                        "—".into()
                    };
                    format!(
                        "step {}/{}{} · dispatched {}{} · completed {} · in flight {} of target {} · {} tokens · aggregate {} tok/s (all streams, since start) · per-stream decode {} tok/s (mean of completed requests){} · errors: {}",
                        p.step.0 + 1,
                        p.step.1.max(1),
                        p.phase.as_deref().map(|ph| format!(" ({ph})")).unwrap_or_default(),
                        p.dispatched,
                        p.planned.map(|n| format!(" of {n}")).unwrap_or_default(),
                        p.completed,
                        p.in_flight.0,
                        p.in_flight.1,
                        p.tokens,
                        Fixed(if elapsed > 0.0 { p.tokens as f64 / elapsed } else { 0.0 }, 0),
                        per_stream,
                        if p.held_by_cap > 0 { format!(" · {} arrivals held back by the in-flight cap", p.held_by_cap) } else { String::new() },
                        view::errors_text(&p.errors),
                    )
                }}
                </p>
                <p class="live__line" data-testid="page-lag">{move || page_lag_text.get()}</p>
            </section>
            <p class="run__error" data-testid="run-error" role="alert">{move || run_error.get()}</p>
            {move || unsigned.get().map(|_| view! {
                <button type="button" class="btn" data-testid="download-unsigned" on:click=on_download_unsigned>"Download the records unsigned, with the error"</button>
            })}
            {move || report.get().map(|r| view! {
                {results_view(&r, on_download)}
                <button type="button" class="btn" data-testid="dismiss-report" on:click=on_dismiss>"Dismiss this report"</button>
            })}
        </section>
    }
}

/// The presets by methodology, in order of first appearance.
fn preset_groups() -> Vec<(&'static str, Vec<&'static pins::Preset>)> {
    let mut out: Vec<(&'static str, Vec<&'static pins::Preset>)> = Vec::new();
    for p in pins::PRESETS {
        match out.iter_mut().find(|(g, _)| *g == p.group) {
            Some((_, v)) => v.push(p),
            None => out.push((p.group, vec![p])),
        }
    }
    out
}

/// Moves keyboard focus to the element with this id (a checklist entry's field).
fn focus_id(id: &str) {
    use wasm_bindgen::JsCast;
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = el.focus();
    }
}

/// Live quantiles (µs) as "p50 / p90 / p99 ms", or a dash before any request completed.
fn live_q(v: Option<[u64; 3]>) -> String {
    v.map_or("—".to_owned(), |q| view::fmt_ms_percentiles(&q))
}

/// A number's definition behind its disclosure (the markup of `core::html`, as in reports).
fn definition(key: &str, label: &str) -> impl IntoView {
    let mut d = String::new();
    html::definition(&mut d, key, label);
    view! { <div class="def-slot" inner_html=d></div> }
}

fn results_view(
    r: &FiguredReport,
    on_download: impl Fn(leptos::ev::MouseEvent) + 'static,
) -> impl IntoView {
    // The same rendering as the viewer's (one report rendering for both screens).
    view! {
        <section class="results" data-testid="results" aria-label="Results">
            <div data-testid="result-charts">{super::viewer::report_body(&r.report, Ok(&r.figures))}</div>
            <button data-testid="download-report" on:click=on_download>"Download signed report"</button>
        </section>
    }
}
