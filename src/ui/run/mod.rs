//! The Run screen: the pinned config form (with presets, probe, checklist and fit check),
//! the live view, and the results with a signed report download.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::core::html;
use crate::core::lifecycle::{self, FillPolicy};
use crate::core::metrics::{RunHost, Slo};
use crate::core::pins::{self, wire_name, FitInputs, RawConfig, RawField, RunConfig};
use crate::core::report::{Checkpoint, FiguredReport, ProbeSnapshot};
use crate::core::session::Progress;
use crate::web::fetch::PageHost;
use crate::web::host::{BrowserHost, LagMonitor, RunRequest, LAG_PROBE_MS};
use crate::web::store::{remove_checkpoint, stored_checkpoints};
use crate::web::worker::WorkerRun;
use crate::web::{self, keystore};

use super::form;

mod api_key;
mod key;
mod live;
mod results;
mod session;
use session::{post_to_collector, RunContext, RunHandle, RunSinks};

/// The default endpoint: the reference server's HTTP/2 address (`scripts/serve.sh`), on
/// which every preset can run (over http:// a browser keeps at most 6 requests in flight).
const DEFAULT_ENDPOINT: &str = "https://127.0.0.1:8443";

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
    let endpoint_origin = move || form.with(|f| pins::origin_of(&f.endpoint_url.text));
    let key = api_key::ApiKeyField::new(form, autorun);
    let probe_msg = RwSignal::new(String::new());
    let cert_help = RwSignal::new(None::<String>);
    let running = RwSignal::new(false);
    let progress = RwSignal::new(Progress::default());
    let report = RwSignal::new(None::<FiguredReport>);
    // The run id of a finished report kept in storage and not yet downloaded.
    let kept = RwSignal::new(None::<String>);
    // What the browser's storage refused or may do, in words.
    let storage_note = RwSignal::new(String::new());
    let slo_fields = RwSignal::new((String::new(), String::new(), String::new()));
    // What the last probe read, kept in the report beside the pins it filled.
    let probes = RwSignal::new(Vec::<ProbeSnapshot>::new());
    let run_error = RwSignal::new(String::new());
    // A trace file opened for a replay: its SHA-256 and text (handed to the run), and
    // what reading it said.
    let trace_file = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let trace_msg = RwSignal::new(String::new());
    // A dataset file opened for its lengths, and what reading it said.
    let dataset_file = RwSignal::new(None::<crate::core::dataset::Dataset>);
    let dataset_msg = RwSignal::new(String::new());
    // A failed build or sign: the records and the error, offered as an unsigned download.
    let unsigned = RwSignal::new(None::<String>);
    let handle = StoredValue::new_local(None::<RunHandle>);
    // The page's own event-loop lag during a run (the worker measures its own).
    let page_lag = StoredValue::new_local(None::<LagMonitor>);
    let page_lag_text = RwSignal::new(String::new());
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
                    let changed = changed.unwrap_or_default().join(", ");
                    probe_msg.set(match p.vendor {
                        Some(v) => format!(
                            "Probed: {} (pinbench's vendor table; no request sent): {changed}. {}",
                            v.name,
                            v.cors_text()
                        ),
                        None => format!("Probed: {changed}"),
                    });
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
        let key = key.for_url(&target.base_url);
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
        // The SLO search's fields (no SLO: no search).
        let search =
            match crate::core::search::parse_targets(&field_text("search-slos")).and_then(|v| {
                match v.is_empty() {
                    true => Ok(None),
                    false => crate::core::search::SearchPlan::from_text(
                        &cfg,
                        v,
                        (
                            &field_text("search-min"),
                            &field_text("search-max"),
                            &field_text("search-resolution"),
                        ),
                    )
                    .map(Some),
                }
            }) {
                Ok(s) => s,
                Err(e) => return run_error.set(format!("SLO search: {e}")),
            };
        // A search's answer comes with its goodput: without goodput SLOs, its own limits.
        let slo = slo.or_else(|| {
            search
                .as_ref()
                .map(crate::core::search::SearchPlan::goodput_slo)
        });
        // A trace file's rows come from the file opened here, if it is the pinned one.
        let file_text = match cfg.trace.as_ref().filter(|t| !t.value.builtin) {
            Some(t) if trace_file.0.with_untracked(|sha| *sha == t.value.sha256) => {
                Some(trace_file.1.get_untracked())
            }
            Some(t) => {
                return run_error.set(format!(
                    "The pins replay the trace file {} (SHA-256 {}…): open that file with “Trace file” first.",
                    t.value.name,
                    t.value.sha256.get(..12).unwrap_or(&t.value.sha256)
                ))
            }
            None => None,
        };
        // A dataset's lengths come from the file opened here, if it is the pinned one.
        let dataset = match &cfg.dataset {
            Some(d) => match dataset_file.get_untracked().filter(|f| f.sha256 == d.value.sha256) {
                Some(f) => Some(f),
                None => {
                    return run_error.set(format!(
                        "The pins take lengths from the dataset file {} (SHA-256 {}…): open that file with “Dataset file” first.",
                        d.value.name,
                        d.value.sha256.get(..12).unwrap_or(&d.value.sha256)
                    ))
                }
            },
            None => None,
        };
        running.set(true);
        storage_note.set(String::new());
        report.set(None);
        unsigned.set(None);
        run_error.set(String::new());
        progress.set(Progress::default());
        // Only a key entered for this very endpoint is sent.
        let key = key.for_url(&cfg.endpoint.base_url);
        spawn_local(async move {
            // A link's collector hears each stage, so a run that never starts says where.
            if let Some(url) = &collect {
                post_to_collector(&format!("{url}?event=stage&name=calibrating"), "{}".into());
            }
            // A replay's trace: the built-in ones come with the app (`traces/`).
            let trace = match cfg.trace.as_ref() {
                Some(_) if file_text.is_some() => file_text,
                Some(t) => match builtin_trace_text(&t.value).await {
                    Ok(text) => Some(text),
                    Err(e) => {
                        running.set(false);
                        return run_error.set(e);
                    }
                },
                None => None,
            };
            let calibration = match lifecycle::calibrate(&PageHost, &cfg).await {
                Ok(c) => c,
                Err(e) => {
                    running.set(false);
                    return run_error.set(e.to_string());
                }
            };
            // A ShareGPT file's texts are counted by the endpoint's tokenizer.
            let dataset = match &dataset {
                Some(d) => match lifecycle::dataset_lengths(&PageHost, &cfg, d).await {
                    Ok(l) => Some(l),
                    Err(e) => {
                        running.set(false);
                        return run_error.set(e.to_string());
                    }
                },
                None => None,
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
            let ctx = RunContext::new(created, cfg.clone(), slo, snapshots, search.clone());
            let req = RunRequest {
                cfg,
                calibration,
                api_key: key,
                extra_header: None,
                seed: seed.to_vec(),
                trace,
                dataset,
                checkpoint_key: Some(ctx.key().to_owned()),
                search,
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
                kept,
                storage_note,
            };
            // A long run's checkpoint must not be evicted under storage pressure.
            spawn_local(async move {
                let persisted = keystore::ask_persistent_storage().await;
                let room = keystore::storage_estimate().await.map(|(used, quota)| {
                    format!(
                        "This browser's storage for pinbench: {} MB used of {} MB.",
                        crate::core::decimal::Fixed(used / 1e6, 1),
                        crate::core::decimal::Fixed(quota / 1e6, 0)
                    )
                });
                let mut note = room.unwrap_or_default();
                if !persisted {
                    note.push_str(" The browser did not grant persistent storage: under storage pressure it may evict this run's checkpoint. Download the report when the run ends.");
                }
                storage_note.set(note.trim().to_owned());
            });
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
    // Checkpoints of runs that ended without a report: the first is offered. A run still
    // going in another tab holds its Web Lock: it is shown as live there, never offered.
    let interrupted = RwSignal::new_local(None::<(String, Checkpoint)>);
    let live_elsewhere = RwSignal::new_local(Vec::<(String, Checkpoint)>::new());
    let refresh_interrupted = move || {
        spawn_local(async move {
            let held = keystore::held_locks().await;
            let (live, ended): (Vec<_>, Vec<_>) = stored_checkpoints()
                .await
                .into_iter()
                .partition(|(k, _)| held.contains(k));
            interrupted.set(ended.into_iter().next());
            live_elsewhere.set(if running.get_untracked() {
                Vec::new()
            } else {
                live
            });
        });
    };
    refresh_interrupted();
    let on_interrupted_discard = move |()| {
        if let Some((key, _)) = interrupted.get_untracked() {
            remove_checkpoint(&key);
        }
        refresh_interrupted();
    };
    // A finished report not yet downloaded (kept in IndexedDB) comes back after a reload.
    spawn_local(async move {
        let Ok(list) = keystore::kept_reports().await else {
            return;
        };
        if let Some((id, text)) = list.into_iter().next() {
            if report.with_untracked(Option::is_some) || running.get_untracked() {
                return;
            }
            match crate::core::report::open(&text).and_then(|o| {
                let figures = o.report.body.figures()?;
                Ok(FiguredReport {
                    report: o.report,
                    figures,
                })
            }) {
                Ok(r) => {
                    report.set(Some(r));
                    kept.set(Some(id));
                    storage_note.set("This report of an earlier visit has not been downloaded yet: it stays in this browser until you download or discard it.".into());
                }
                Err(e) => storage_note.set(format!("A kept report could not be read ({e}).")),
            }
        }
    });
    // Leaving the page while a run goes or a report is not downloaded asks first.
    Effect::new(move |_| keystore::guard_unload(running.get() || kept.get().is_some()));
    let on_interrupted_report = move |()| {
        let Some((_, cp)) = interrupted.get_untracked() else {
            return;
        };
        match cp.into_body() {
            Ok(body) => spawn_local(async move {
                let signed = match keystore::signer().await {
                    Ok(s) => lifecycle::sign_body(body, &s)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("Could not sign the report: {e}")),
                };
                match signed {
                    Ok(r) => {
                        report.set(Some(r));
                        on_interrupted_discard(());
                    }
                    Err(e) => run_error.set(e),
                }
            }),
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
    // A re-run of a received report: its workload pins, everything else cleared; when the
    // run ends, Compare opens with both.
    let nav = use_context::<crate::ui::Nav>();
    let lib = use_context::<crate::ui::viewer::Library>();
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
                nav.section.set(crate::ui::Section::Compare);
            }
        });
    }
    // The run's planned duration, when every window is a duration.
    let planned_ms = Memo::new(move |_| {
        pinned.with(|c| {
            let c = c.as_ref().ok()?;
            let w = c.window.value;
            let ms = |s: pins::Span| match s {
                pins::Span::Duration { ms } => Some(ms),
                pins::Span::Requests { .. } => None,
            };
            Some(
                (ms(w.warmup)? + ms(w.measured)? + ms(w.cooldown)?)
                    * c.load.value.steps.len() as u64,
            )
        })
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
            {move || live_elsewhere.get().into_iter().map(|(_, cp)| {
                let n = cp.records.len();
                view! {
                    <p class="notice" role="note" data-testid="run-live-elsewhere">
                        {format!("A run is going in another tab ({}, started {}; {n} requests completed so far): its report will appear there.", cp.config.model.id.value, cp.created)}
                    </p>
                }
            }).collect_view()}
            <p class="notice" role="status" data-testid="storage-note">{move || storage_note.get()}</p>
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
                    {form::sections_view(form, pinned, key.view())}
                    <fieldset class="pin-section run__more" data-testid="section-slo">
                        <legend class="pin-section__legend"><span class="pin-section__title">"Goodput SLOs"</span><span class="badge badge--optional">"optional"</span></legend>
                        <p class="pin-section__why">"Goodput counts the requests that meet every limit set here (ms): a server fast on average can still miss them."</p>
                        <div class="run__slo">

                            <label>"TTFT ≤ " <input class="field__input field__input--short" data-testid="slo-ttft" aria-label="SLO: TTFT, ms" inputmode="decimal" prop:value=move || slo_fields.get().0 on:input=move |ev| slo_fields.update(|f| f.0 = event_target_value(&ev)) /> " ms"</label>
                            <label>"TPOT ≤ " <input class="field__input field__input--short" data-testid="slo-tpot" aria-label="SLO: TPOT, ms" inputmode="decimal" prop:value=move || slo_fields.get().1 on:input=move |ev| slo_fields.update(|f| f.1 = event_target_value(&ev)) /> " ms"</label>
                            <label>"E2E ≤ " <input class="field__input field__input--short" data-testid="slo-e2e" aria-label="SLO: E2E latency, ms" inputmode="decimal" prop:value=move || slo_fields.get().2 on:input=move |ev| slo_fields.update(|f| f.2 = event_target_value(&ev)) /> " ms"</label>
                        </div>
                    </fieldset>
                    {search_fieldset()}
                    {move || form.with(|f| f.load_mode.text.trim() == "replay").then(|| file_fieldset(
                        ("Trace file (read here, never uploaded)", "trace-file", "Trace file to replay"),
                        trace_msg,
                        move |file| spawn_local(async move {
                            match open_trace_file(&file, form).await {
                                Ok((sha, text, msg)) => {
                                    trace_file.0.set(sha);
                                    trace_file.1.set(text);
                                    trace_msg.set(msg);
                                }
                                Err(e) => trace_msg.set(e),
                            }
                        }),
                    ))}
                    {move || form.with(|f| pins::applies(f, "dataset")).then(|| file_fieldset(
                        ("Dataset file (read here, never uploaded)", "dataset-file", "Dataset file whose rows give the lengths"),
                        dataset_msg,
                        move |file| spawn_local(async move {
                            match open_dataset_file(&file, form).await {
                                Ok((d, msg)) => {
                                    dataset_file.set(Some(d));
                                    dataset_msg.set(msg);
                                }
                                Err(e) => dataset_msg.set(e),
                            }
                        }),
                    ))}
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
                    <key::SigningKeyPanel />
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
            <live::LiveView progress running planned_ms page_lag_text />
            <results::RunResults report unsigned run_error kept storage_note />
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

/// A built-in trace's file, fetched from the bundle's `traces/` folder and checked: it
/// reads, and it is the file the pin names (same SHA-256).
async fn builtin_trace_text(t: &crate::core::pins::TraceRef) -> Result<String, String> {
    let b = crate::core::trace::builtin(&t.name)
        .filter(|_| t.builtin)
        .ok_or_else(|| format!("{} is not a built-in trace", t.name))?;
    let text = crate::web::files::fetch_text(&format!("traces/{}", b.file)).await?;
    let sha = crate::core::trace::parse(text.as_bytes()).map(|t| t.sha256);
    if sha.as_ref() != Ok(&t.sha256) {
        return Err(format!(
            "The built-in trace {} served with this page is not the pinned file",
            t.name
        ));
    }
    Ok(text)
}

/// The SLO search's fieldset: the SLOs and the loads to search, in the load's unit
/// (streams for a closed loop, req/s for an open one). Its inputs are read at Start
/// ([`field_text`]).
fn search_fieldset() -> impl IntoView {
    view! {
        <fieldset class="pin-section run__more" data-testid="section-search">
            <legend class="pin-section__legend"><span class="pin-section__title">"SLO search"</span><span class="badge badge--optional">"optional"</span></legend>
            <p class="pin-section__why">"The largest load (a closed loop's concurrency, an open loop's req/s) that meets every SLO: each probe a full run at one load with its own warm-up, doubling from the smallest while the SLOs hold, then halving the gap to the resolution. The report keeps every probe."</p>
            <label>"SLOs " <input class="field__input" id="search-slos" data-testid="search-slos" aria-label="SLO search: SLOs" placeholder="ttft:p99<=500ms, tpot:p99<=50ms" /></label>
            <div class="run__slo">
                <label>"from " <input class="field__input field__input--short" id="search-min" data-testid="search-min" aria-label="SLO search: smallest load" inputmode="decimal" value="1" /></label>
                <label>" to " <input class="field__input field__input--short" id="search-max" data-testid="search-max" aria-label="SLO search: largest load" inputmode="decimal" value="64" /></label>
                <label>" within " <input class="field__input field__input--short" id="search-resolution" data-testid="search-resolution" aria-label="SLO search: resolution" inputmode="decimal" value="1" /></label>
            </div>
        </fieldset>
    }
}

/// The text of the input with this id (empty when there is none).
fn field_text(id: &str) -> String {
    use wasm_bindgen::JsCast;
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        .map(|i| i.value())
        .unwrap_or_default()
}

/// A fieldset holding a file input (`title`, its test id and label) and the line `msg`
/// saying what reading the file said; `on_file` gets the picked file.
fn file_fieldset(
    (title, testid, label): (&'static str, &'static str, &'static str),
    msg: RwSignal<String>,
    on_file: impl Fn(web_sys::File) + 'static,
) -> impl IntoView {
    view! {
        <fieldset class="pin-section run__more" data-testid=format!("section-{testid}")>
            <legend class="pin-section__legend"><span class="pin-section__title">{title}</span></legend>
            <input type="file" class="field__input" data-testid=testid aria-label=label on:change=move |ev| {
                use wasm_bindgen::JsCast;
                let input: Option<web_sys::HtmlInputElement> = ev.target().and_then(|t| t.dyn_into().ok());
                if let Some(file) = input.and_then(|i| i.files()).and_then(|l| l.item(0)) {
                    on_file(file);
                }
            } />
            <p class="run__probe-msg" data-testid=format!("{testid}-message") role="status">{move || msg.get()}</p>
        </fieldset>
    }
}

/// Reads a dataset file the user picked and writes its pin into the form: the dataset and
/// a line saying what it holds.
async fn open_dataset_file(
    file: &web_sys::File,
    form: RwSignal<RawConfig>,
) -> Result<(crate::core::dataset::Dataset, String), String> {
    let name = file.name();
    let text = crate::web::files::read_file(file)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let d = crate::core::dataset::parse(text.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
    let pin = pins::DatasetRef::of(&name, &d);
    let msg = format!(
        "Read {name}: {}, {} rows ({} left out), SHA-256 {}…; a run uses {}{}",
        d.format.label(),
        d.rows.len(),
        d.skipped,
        d.sha256.get(..12).unwrap_or(&d.sha256),
        pin.sampled,
        match d.format {
            crate::core::dataset::DatasetFormat::ShareGpt =>
                ", counted by the endpoint's /tokenize when the run starts",
            crate::core::dataset::DatasetFormat::LengthsCsv => "",
        }
    );
    form.update(|f| f.dataset = RawField::declared(pin.form_text()));
    Ok((d, msg))
}

/// Reads a trace file the user picked and writes its pin into the form (keeping the pin's
/// `scale=` and `offset=`): its SHA-256, its text and a line saying what it holds.
async fn open_trace_file(
    file: &web_sys::File,
    form: RwSignal<RawConfig>,
) -> Result<(String, String, String), String> {
    let name = file.name();
    // As large as a report file may be (the viewer's limit).
    let text = crate::web::files::read_file(file)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let trace = crate::core::trace::parse(text.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
    let existing = form.with_untracked(|f| f.trace.text.clone());
    let pin = pins::trace_file_pin(&existing, &name, &trace)
        .ok_or_else(|| format!("the trace pin '{existing}' has a bad scale= or offset="))?;
    let msg = format!(
        "Read {name}: {} rows, SHA-256 {}…",
        trace.rows.len(),
        trace.sha256.get(..12).unwrap_or(&trace.sha256)
    );
    form.update(|f| f.trace = RawField::declared(pin));
    Ok((trace.sha256, text, msg))
}
