//! A run's outcome: its error, its records unsigned when signing failed, and its signed
//! report (the viewer's rendering) with a download.

use leptos::prelude::*;

use crate::core::report::FiguredReport;
use leptos::task::spawn_local;

use crate::web::{self, keystore};

/// The end of the last run.
#[component]
pub fn RunResults(
    /// The signed report, when the run is over.
    report: RwSignal<Option<FiguredReport>>,
    /// A failed build or sign: the records and the error, as an unsigned document.
    unsigned: RwSignal<Option<String>>,
    /// Why the run stopped, if it failed.
    run_error: RwSignal<String>,
    /// The run id of the report kept in storage until it is downloaded.
    kept: RwSignal<Option<String>>,
    /// What storage said, in words.
    storage_note: RwSignal<String>,
) -> impl IntoView {
    // The kept copy goes once the report is downloaded, or discarded on purpose.
    let forget = move || {
        if let Some(id) = kept.get_untracked() {
            kept.set(None);
            storage_note.set(String::new());
            spawn_local(async move {
                let _ = keystore::forget_report(&id).await;
            });
        }
    };
    let on_dismiss = move |_| {
        if kept.get_untracked().is_some() {
            let sure = web_sys::window()
                .and_then(|w| {
                    w.confirm_with_message(
                        "This report has not been downloaded. Discard it? It cannot be recovered.",
                    )
                    .ok()
                })
                .unwrap_or(false);
            if !sure {
                return;
            }
        }
        forget();
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
                    match web::download("pinbench-report.json", "application/json", &text) {
                        Ok(()) => forget(),
                        Err(e) => run_error.set(format!("Download failed: {e}")),
                    }
                }
                Err(e) => run_error.set(e.to_string()),
            }
        }
    };

    // The live charts redraw at 2 Hz: the run's own worker shares the machine's cores.
    view! {
        <p class="run__error" data-testid="run-error" role="alert">{move || run_error.get()}</p>
        {move || unsigned.get().map(|_| view! {
            <button type="button" class="btn" data-testid="download-unsigned" on:click=on_download_unsigned>"Download the records unsigned, with the error"</button>
        })}
        {move || report.get().map(|r| view! {
            {results_view(&r, on_download)}
            <button type="button" class="btn" data-testid="dismiss-report" on:click=on_dismiss>"Dismiss this report"</button>
        })}
    }
}

fn results_view(
    r: &FiguredReport,
    on_download: impl Fn(leptos::ev::MouseEvent) + 'static,
) -> impl IntoView {
    // The same rendering as the viewer's (one report rendering for both screens).
    view! {
        <section class="results" data-testid="results" aria-label="Results">
            <div data-testid="result-charts">{crate::ui::viewer::report_body(&r.report, Ok(&r.figures))}</div>
            <button data-testid="download-report" on:click=on_download>"Download signed report"</button>
        </section>
    }
}
