//! The Reports screen: open a file (picker, drop, paste, URL), see whether to believe it,
//! and read every number with its pins; trusted keys; CSV, embed snippet, card link and
//! card SVG. Thin: everything it shows comes from `core::viewer`, `view`, `chart`, `card`.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;

use crate::core::card::{self, Card, CardCheck, Theme};
use crate::core::chart;
use crate::core::compare::Subject;
use crate::core::decimal::Fixed;
use crate::core::html;
use crate::core::import::Imported;
use crate::core::view;
use crate::core::viewer::{self, Opened, OpenedReport, SigState, TrustedKeys};
use crate::web::store::{load_trusted, save_trusted, OWN_KEY_FORGOTTEN};
use crate::web::{self, files};

/// One opened file.
#[derive(Clone)]
pub struct Entry {
    /// Display name.
    pub title: String,
    /// Where it came from, when it has a URL (for the hosted embed form).
    pub url: Option<String>,
    /// What was opened.
    pub opened: Arc<Opened>,
    /// How long opening took, by stage (µs).
    pub timings: viewer::Timings,
}

impl Entry {
    /// As a comparison subject.
    pub fn subject(&self) -> Subject {
        match &*self.opened {
            Opened::Report(r) => Subject::from_report(&self.title, &r.report, r.figures().ok())
                .with_integrity(viewer::integrity(r)),
            Opened::Imported(i) => i.subject.clone(),
        }
    }
}

/// Files opened in this tab, shared by the Reports and Compare screens.
#[derive(Clone, Copy)]
pub struct Library {
    /// Opened entries.
    pub entries: RwSignal<Vec<Entry>>,
    /// The one shown on the Reports screen.
    pub selected: RwSignal<usize>,
    /// The user's trusted keys.
    pub trusted: RwSignal<TrustedKeys>,
    /// The entries picked on the Compare screen (none picked: all are compared).
    pub compare_picks: RwSignal<Vec<usize>>,
}

impl Library {
    /// A new library with the stored trusted keys.
    pub fn new() -> Self {
        let lib = Self {
            entries: RwSignal::new(Vec::new()),
            selected: RwSignal::new(0),
            trusted: RwSignal::new(load_trusted()),
            compare_picks: RwSignal::new(Vec::new()),
        };
        // A first visit makes its WebCrypto key asynchronously: trust it once it exists.
        spawn_local(async move {
            if crate::web::keystore::signer().await.is_ok() {
                let t = load_trusted();
                if t != lib.trusted.get_untracked() {
                    lib.trusted.set(t);
                    lib.retrust();
                }
            }
        });
        lib
    }

    /// Opens text as a new entry and selects it.
    pub fn open_text(&self, title: String, url: Option<String>, text: &str) -> Result<(), String> {
        self.open_text_read(title, url, text, 0)
    }

    /// [`Self::open_text`] of a file that took `read_us` to read (shown with the timings).
    pub fn open_text_read(
        &self,
        title: String,
        url: Option<String>,
        text: &str,
        read_us: u64,
    ) -> Result<(), String> {
        let (opened, timings) = self
            .trusted
            .with_untracked(|t| viewer::open_timed(&title, text, t, &mut web::now_us));
        let opened = opened.map_err(|e| format!("{title}: {e}"))?;
        let mut timings = timings;
        if read_us > 0 {
            timings.insert(0, ("read file", read_us));
        }
        let entry = Entry {
            title,
            url,
            opened: Arc::new(opened),
            timings,
        };
        self.entries.update(|v| v.push(entry));
        self.selected
            .set(self.entries.with_untracked(|v| v.len().saturating_sub(1)));
        Ok(())
    }

    /// Re-judges signatures after the trusted list changed.
    fn retrust(&self) {
        let t = self.trusted.get_untracked();
        self.entries.update(|v| {
            for e in v.iter_mut() {
                if let Opened::Report(r) = &*e.opened {
                    let mut r: OpenedReport = (**r).clone();
                    r.sig = SigState::of(&r.verification, &t);
                    e.opened = Arc::new(Opened::Report(Box::new(r)));
                }
            }
        });
    }
}

impl Default for Library {
    fn default() -> Self {
        Self::new()
    }
}

/// Fetches `url` and opens it (for `?src=`).
pub fn open_url(lib: Library, url: String, error: WriteSignal<String>) {
    spawn_local(async move {
        match files::fetch_text(&url).await {
            Ok(text) => {
                let title = url.rsplit('/').next().unwrap_or(&url).to_owned();
                match lib.open_text(title, Some(url.clone()), &text) {
                    Ok(()) => error.set(String::new()),
                    Err(e) => error.set(e),
                }
            }
            Err(e) => error.set(e),
        }
    });
}

/// The Reports screen.
#[component]
pub fn ReportsPage() -> impl IntoView {
    let lib = expect_context::<Library>();
    let (error, set_error) = signal(String::new());
    let (paste, set_paste) = signal(String::new());
    let (url, set_url) = signal(String::new());
    let (dragging, set_dragging) = signal(false);
    // A folder's files: only its JSON ones (a folder may hold other files).
    let open_files = move |list: Option<web_sys::FileList>, folder: bool| {
        let Some(list) = list else { return };
        for i in 0..list.length() {
            if let Some(f) = list
                .item(i)
                .filter(|f| !folder || f.name().to_ascii_lowercase().ends_with(".json"))
            {
                spawn_local(async move {
                    let t0 = web::now_us();
                    match files::read_file(&f).await {
                        Ok(text) => match lib.open_text_read(
                            f.name(),
                            None,
                            &text,
                            web::now_us().saturating_sub(t0),
                        ) {
                            Ok(()) => set_error.set(String::new()),
                            Err(e) => set_error.set(e),
                        },
                        Err(e) => set_error.set(format!("{}: {e}", f.name())),
                    }
                });
            }
        }
    };
    let pick = move |ev: leptos::ev::Event, folder: bool| {
        let input: Option<web_sys::HtmlInputElement> = ev.target().and_then(|t| t.dyn_into().ok());
        if let Some(i) = input {
            open_files(i.files(), folder);
            i.set_value("");
        }
    };
    let on_pick = move |ev| pick(ev, false);
    let on_folder = move |ev| pick(ev, true);
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        set_dragging.set(false);
        open_files(ev.data_transfer().and_then(|d| d.files()), false);
    };
    let on_paste = move |_| {
        let text = paste.get_untracked();
        match lib.open_text("pasted report".into(), None, &text) {
            Ok(()) => {
                set_error.set(String::new());
                set_paste.set(String::new());
            }
            Err(e) => set_error.set(e),
        }
    };
    let on_url = move |_| open_url(lib, url.get_untracked(), set_error);
    view! {
        <section class="viewer" aria-label="Open a report">
            <div
                class="viewer__drop"
                class:viewer__drop--active=move || dragging.get()
                data-testid="drop-zone"
                on:dragover=move |ev: leptos::ev::DragEvent| { ev.prevent_default(); set_dragging.set(true); }
                on:dragleave=move |_| set_dragging.set(false)
                on:drop=on_drop
            >
                <label>
                    "Open report or result files (pinbench, vLLM bench, AIPerf, guidellm): "
                    <input type="file" accept=".json,application/json" multiple data-testid="open-file" aria-label="Report file" on:change=on_pick />
                </label>
                <span>" or drop them here. "</span>
                <label>
                    "A folder of reports (e.g. pinbench watch's): "
                    <input type="file" prop:webkitdirectory=true multiple data-testid="open-folder" aria-label="Folder of reports" on:change=on_folder />
                </label>
            </div>
            <div class="viewer__row">
                <label>"Paste JSON "
                    <textarea data-testid="paste-input" aria-label="Report JSON" rows="2" prop:value=move || paste.get() on:input=move |ev| set_paste.set(event_target_value(&ev))></textarea>
                </label>
                <button data-testid="open-paste" on:click=on_paste>"Open pasted"</button>
            </div>
            <div class="viewer__row">
                <label>"URL "
                    <input type="url" data-testid="url-input" aria-label="Report URL" placeholder="https://…/report.json" prop:value=move || url.get() on:input=move |ev| set_url.set(event_target_value(&ev)) />
                </label>
                <button data-testid="open-url" on:click=on_url>"Open URL"</button>
            </div>
            <p class="viewer__error" role="alert" data-testid="open-error">{move || error.get()}</p>
            <TrustedKeysPanel />
            <EntryList />
            {move || {
                let entries = lib.entries.get();
                let i = lib.selected.get();
                entries.get(i).cloned().map(|e| entry_view(e, lib))
            }}
        </section>
    }
}

#[component]
fn EntryList() -> impl IntoView {
    let lib = expect_context::<Library>();
    view! {
        <ul class="viewer__entries" data-testid="entries" aria-label="Opened files">
            {move || lib.entries.get().into_iter().enumerate().map(|(i, e)| {
                let kind = match &*e.opened {
                    Opened::Report(r) => format!("pinbench report · {}", r.sig.id()),
                    Opened::Imported(i) => i.subject.tool.clone(),
                };
                view! {
                    <li>
                        <button
                            data-testid=format!("entry-{i}")
                            aria-current=move || (lib.selected.get() == i).then_some("true")
                            on:click=move |_| lib.selected.set(i)
                        >{format!("{} ({kind})", e.title)}</button>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}

#[component]
fn TrustedKeysPanel() -> impl IntoView {
    let lib = expect_context::<Library>();
    let (name, set_name) = signal(String::new());
    let (key, set_key) = signal(String::new());
    let (err, set_err) = signal(String::new());
    let add = move |_| {
        let mut t = lib.trusted.get_untracked();
        match t.add(&name.get_untracked(), &key.get_untracked()) {
            Ok(_) => {
                save_trusted(&t);
                lib.trusted.set(t);
                lib.retrust();
                set_err.set(String::new());
                set_key.set(String::new());
                set_name.set(String::new());
            }
            Err(e) => set_err.set(e),
        }
    };
    view! {
        <details class="viewer__trust" data-testid="trusted-keys">
            <summary>"Trusted keys"</summary>
            <ul>
                {move || lib.trusted.get().keys.into_iter().map(|k| {
                    let id = k.key_id.clone();
                    view! {
                        <li data-testid="trusted-key">
                            {format!("{} — {}", k.name, k.key_id)}
                            " "
                            <button aria-label=format!("Forget {}", k.name) on:click=move |_| {
                                let mut t = lib.trusted.get_untracked();
                                t.remove(&id);
                                // Forgetting this browser's own key sticks across reloads.
                                if let Some(s) = web::storage() {
                                    let _ = s.set_item(OWN_KEY_FORGOTTEN, &id);
                                }
                                save_trusted(&t);
                                lib.trusted.set(t);
                                lib.retrust();
                            }>"forget"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <label>"Name " <input data-testid="trust-name-input" aria-label="Key name" prop:value=move || name.get() on:input=move |ev| set_name.set(event_target_value(&ev)) /></label>
            <label>" Public key (base64) " <input data-testid="trust-key-input" aria-label="Public key" prop:value=move || key.get() on:input=move |ev| set_key.set(event_target_value(&ev)) /></label>
            <button data-testid="trust-add" on:click=add>"Trust"</button>
            <p role="alert" data-testid="trust-error">{move || err.get()}</p>
        </details>
    }
}

fn entry_view(e: Entry, lib: Library) -> AnyView {
    match &*e.opened {
        Opened::Report(r) => report_view(&e, r, lib).into_any(),
        Opened::Imported(i) => import_view(i).into_any(),
    }
}

fn import_view(i: &Imported) -> impl IntoView {
    view! { <article class="report" data-testid="import-view" aria-label="Imported result" inner_html=html::imported(i)></article> }
}

fn sig_class(s: &SigState) -> &'static str {
    match s {
        SigState::Trusted { .. } => "sig sig--valid",
        SigState::UnknownKey { .. } => "sig sig--unknown",
        SigState::InvalidModified { .. } => "sig sig--invalid",
        SigState::Unsigned => "sig sig--unsigned",
    }
}

fn report_view(e: &Entry, o: &OpenedReport, lib: Library) -> impl IntoView {
    let t_render = web::now_us();
    let r = &o.report;
    let b = &r.body;
    let sig = o.sig.clone();
    let unknown_pk = match &sig {
        SigState::UnknownKey { public_key, .. } => Some(public_key.clone()),
        _ => None,
    };
    let (trust_name, set_trust_name) = signal(String::new());
    let trust_this = move |_| {
        if let Some(pk) = unknown_pk.clone() {
            let mut t = lib.trusted.get_untracked();
            if t.add(&trust_name.get_untracked(), &pk).is_ok() {
                save_trusted(&t);
                lib.trusted.set(t);
                lib.retrust();
            }
        }
    };
    let recompute = match o.mismatches() {
        Ok([]) => (
            "match".to_owned(),
            format!(
                "Every summary figure recomputed from the {} request records: all match.",
                b.records.len()
            ),
            vec![],
        ),
        Ok(m) => (
            "mismatch".to_owned(),
            format!(
                "{} figures do not match their records — the file carries numbers its data does not support:",
                m.len()
            ),
            m.iter()
                .take(50)
                .map(|x| format!("{}: stored {} · recomputed {}", x.path, x.stored, x.recomputed))
                .collect(),
        ),
        Err(err) => ("error".into(), format!("Could not recompute: {err}"), vec![]),
    };
    let card_text = match &o.card {
        CardCheck::Matches => "Embeddable card: signed, and matches this report.".to_owned(),
        CardCheck::Absent => {
            "This report carries no signed card; the link-only card form is unavailable.".to_owned()
        }
        CardCheck::Legacy => "Embeddable card (first format, display text): signed by this report's key and bound to it; its text is shown as signed, not recomputed.".to_owned(),
        CardCheck::Mismatch(m) => format!("Embeddable card does not match: {m}"),
    };
    // Embed: the hosted form when the report has a URL, else the link-only form.
    let base = card::card_page_of_app(&files::page_base());
    // The link-only form is compressed by the browser (no compressor in the wasm), so it
    // appears a moment after the page.
    let card_link = RwSignal::new(None::<String>);
    let (copy_msg, set_copy_msg) = signal(String::new());
    if let Some(json) = r.card.as_ref().and_then(|c| c.fragment_json().ok()) {
        let base = base.clone();
        spawn_local(async move {
            match files::deflate_raw(&json).await {
                Ok(z) => {
                    card_link.try_set(Some(format!("{base}#{}", Card::fragment_of_deflated(&z))));
                }
                Err(err) => {
                    set_copy_msg.try_set(err);
                }
            }
        });
    }
    let hosted = e
        .url
        .as_ref()
        .map(|u| format!("{base}?src={}", files::encode_component(u)));
    let (theme, set_theme) = signal("light".to_owned());
    let embed_src = {
        let hosted = hosted.clone();
        move || {
            let t = theme.get();
            match (&hosted, card_link.get()) {
                (Some(h), _) => Some(format!("{h}&theme={t}")),
                (None, Some(l)) => Some(format!("{l}&theme={t}")),
                _ => None,
            }
        }
    };
    let snippet = Memo::new(move |_| {
        embed_src().map(|src| {
            format!(
                "<iframe src=\"{}\" width=\"600\" height=\"200\" style=\"border:0\" title=\"pinbench result card\" loading=\"lazy\"></iframe>",
                chart::escape(&src)
            )
        })
    });
    let copy_snippet = move |_| {
        if let Some(s) = snippet.get_untracked() {
            spawn_local(async move {
                match files::copy(&s).await {
                    Ok(()) => set_copy_msg.set("Embed snippet copied.".into()),
                    Err(err) => set_copy_msg.set(err),
                }
            });
        }
    };
    let opened_for_csv = e.opened.clone();
    let csv = move |_| {
        let Opened::Report(o) = &*opened_for_csv else {
            return;
        };
        let text = view::records_csv(&o.report);
        if let Err(err) = web::download("pinbench-records.csv", "text/csv", &text) {
            set_copy_msg.set(err);
        }
    };
    let card_for_svg = r.card.clone().or_else(|| {
        let figures = o.figures().ok()?;
        Card::of(r, figures).ok()
    });
    let verification = o.verification.clone();
    let trusted_name = match &sig {
        SigState::Trusted { name, .. } => Some(name.clone()),
        _ => None,
    };
    let hosted_for_svg = hosted.clone();
    let export_svg = move |_| {
        if let Some(c) = &card_for_svg {
            let link_for_svg = card_link
                .get_untracked()
                .or(hosted_for_svg.clone())
                .unwrap_or_default();
            let t = if theme.get_untracked() == "dark" {
                Theme::Dark
            } else {
                Theme::Light
            };
            let status = card::status_text(&verification, trusted_name.as_deref());
            let svg = card::card_svg(c, &status, t, &link_for_svg);
            if let Err(err) = web::download("pinbench-card.svg", "image/svg+xml", &svg) {
                set_copy_msg.set(err);
            }
        }
    };
    let sig_is_unknown = matches!(sig, SigState::UnknownKey { .. });
    // "Run these pins against my endpoint": the workload pins go to the Run screen.
    let nav = use_context::<super::Nav>();
    let source = lib.selected.get_untracked();
    let rerun_cfg = b.config.clone();
    let rerun_title = e.title.clone();
    let rerun = move |_| {
        if let Some(nav) = nav {
            nav.rerun.set(Some(super::Rerun {
                form: crate::core::pins::workload_form(&rerun_cfg),
                title: rerun_title.clone(),
                source,
            }));
            nav.section.set(super::Section::Run);
        }
    };
    // The body's markup (charts and tables) is built here, before the time is read.
    let body = report_body(r, o.figures());
    // A sweep's frontier, with a claim placed on it as typed.
    let frontier = o
        .figures()
        .ok()
        .filter(|f| f.steps.len() > 1)
        .map(|f| (b.config.clone(), f.clone()))
        .map(|(cfg, f)| {
            let claim = RwSignal::new(String::new());
            view! {
                <section class="frontier" aria-label="Place a claim on the frontier">
                    <label>"Place a claim on this sweep's frontier (e.g. “2,100 tok/s per user, Llama 3.1 8B, 1000 in / 100 out”): "
                        <input class="field__input" data-testid="frontier-claim" aria-label="Claim to place" prop:value=move || claim.get() on:change=move |ev| claim.set(event_target_value(&ev)) />
                    </label>
                    <div data-testid="frontier-placement" inner_html=move || html::frontier_claim(&cfg, &f, &claim.get())></div>
                </section>
            }
        });
    let timing = format!(
        "Opened in {} ms ({}); charts and tables built in {} ms.",
        Fixed(
            e.timings.iter().map(|(_, us)| *us).sum::<u64>() as f64 / 1000.0,
            0
        ),
        e.timings
            .iter()
            .map(|(k, us)| format!("{k} {} ms", Fixed(*us as f64 / 1000.0, 0)))
            .collect::<Vec<_>>()
            .join(", "),
        Fixed(web::now_us().saturating_sub(t_render) as f64 / 1000.0, 0)
    );
    view! {
        <article class="report" data-testid="report-view" aria-label="Report">
            <h3>{format!("{} — {} {}, {}", e.title, b.tool.name, b.tool.version, b.created)}</h3>
            <p class=sig_class(&sig) data-testid="sig-state" data-state=sig.id() role="status">{sig.text()}</p>
            <Show when=move || sig_is_unknown>
                <p>
                    <label>"Name this key to trust it: " <input data-testid="trust-this-name" aria-label="Name for this key" on:input=move |ev| set_trust_name.set(event_target_value(&ev)) /></label>
                    <button data-testid="trust-this-key" on:click=trust_this.clone()>"Trust this key"</button>
                </p>
            </Show>
            <p data-testid="recompute-state" data-state=recompute.0>{recompute.1}</p>
            <p class="report__timing" data-testid="open-timing">{timing}</p>
            <ul data-testid="mismatches">{recompute.2.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul>
            <p data-testid="card-state">{card_text}</p>
            <p>
                <button type="button" class="btn btn--primary" data-testid="rerun" on:click=rerun>"Run these pins against my endpoint"</button>
                " The Run screen opens with this report's workload pins; your endpoint, key and its server pins are yours to probe or type. When the run ends, Compare opens with both."
            </p>
            {body}
            {frontier}
            <section class="share" aria-label="Share">
                <button data-testid="download-csv" on:click=csv>"Download records as CSV"</button>
                <label>" Card theme "
                    <select data-testid="embed-theme" aria-label="Card theme" on:change=move |ev| set_theme.set(event_target_value(&ev))>
                        <option value="light">"light"</option>
                        <option value="dark">"dark"</option>
                    </select>
                </label>
                <button data-testid="copy-embed" on:click=copy_snippet disabled=move || snippet.get().is_none()>"Copy embed snippet"</button>
                <button data-testid="export-card-svg" on:click=export_svg>"Export card as SVG"</button>
                {move || card_link.get().map(|l| view! { <a data-testid="card-link" href=l target="_blank" rel="noopener">"Card link (no hosting needed)"</a> })}
                <pre data-testid="embed-snippet">{move || snippet.get().unwrap_or_else(|| "No embed available: the report has no signed card and no URL.".into())}</pre>
                <p role="status" data-testid="share-status">{move || copy_msg.get()}</p>
            </section>
        </article>
    }
}

/// A report's body below its header (markup built in `core::html`).
pub fn report_body(
    r: &crate::core::report::Report,
    figures: Result<&crate::core::metrics::Summary, &str>,
) -> impl IntoView {
    view! { <div class="report__body" data-testid="report-body" inner_html=html::report_body(r, figures)></div> }
}
