//! Leptos views: thin, over core types. The shell holds the title and the navigation
//! between the Run, Reports, Compare and Claims screens. The embeddable card is a page of
//! its own (`card/`, `src/bin/pinbench-card.rs`); `www/index.html` sends the old card
//! addresses (`?view=card`, `#card=`) there before this app loads.

use leptos::prelude::*;

pub mod claim;
pub mod compare;
pub mod form;
pub mod run;
pub mod viewer;

/// The app's top-level sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Configure and run a benchmark.
    Run,
    /// Open and verify report files.
    Reports,
    /// Compare reports side by side.
    Compare,
    /// Check a vendor's claim.
    Claims,
}

impl Section {
    /// Every section, in navigation order.
    pub const ALL: [Section; 4] = [
        Section::Run,
        Section::Reports,
        Section::Compare,
        Section::Claims,
    ];

    /// Visible label.
    pub fn label(self) -> &'static str {
        match self {
            Section::Run => "Run",
            Section::Reports => "Reports",
            Section::Compare => "Compare",
            Section::Claims => "Claims",
        }
    }

    /// Stable id used in `data-testid`s and CSS classes.
    pub fn id(self) -> &'static str {
        match self {
            Section::Run => "run",
            Section::Reports => "reports",
            Section::Compare => "compare",
            Section::Claims => "claims",
        }
    }

    /// What the section will hold.
    pub fn blurb(self) -> &'static str {
        match self {
            Section::Run => "Pin every parameter, then benchmark an endpoint from this tab.",
            Section::Reports => "Open a signed report, verify it and recompute its numbers.",
            Section::Compare => "Put reports side by side and see whether they are comparable.",
            Section::Claims => "Paste a vendor's headline: what it pins, what it leaves free, and which metric its number can be.",
        }
    }
}

/// A re-run of a received report's workload pins, asked for on the Reports screen.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The report's workload pins as form text (`pins::workload_form`).
    pub form: crate::core::pins::RawConfig,
    /// The report's title in the library.
    pub title: String,
    /// Its index in the library (Compare opens with it and the re-run).
    pub source: usize,
}

/// Navigation the screens share: the section shown, and a re-run on its way to the Run
/// screen.
#[derive(Clone, Copy)]
pub struct Nav {
    /// The section shown.
    pub section: RwSignal<Section>,
    /// A re-run asked for, taken by the Run screen.
    pub rerun: RwSignal<Option<Rerun>>,
}

/// The application: the shell, which never runs inside another site's frame (it holds keys and sends requests; a frame could dress it
/// up and steer clicks). Hosts should also send `Content-Security-Policy:
/// frame-ancestors 'self'` for every path but `card/` (README, "Hosting").
#[component]
pub fn App() -> impl IntoView {
    if framed_by_another_site() {
        return view! {
            <p class="run__error" role="alert" data-testid="framed">
                "pinbench does not run inside another page's frame. Open it in its own tab; only the card (card/) can be embedded."
            </p>
        }
        .into_any();
    }
    view! { <Shell /> }.into_any()
}

/// Whether this page is in a frame of another origin (same-origin frames, e.g. tests,
/// are allowed).
fn framed_by_another_site() -> bool {
    let Some(w) = web_sys::window() else {
        return false;
    };
    let Ok(Some(top)) = w.top() else {
        return false;
    };
    if top == *w.as_ref() {
        return false;
    }
    // Reading a cross-origin parent's location throws.
    top.location().href().is_err()
}

/// The shell: title, navigation and the three screens.
#[component]
fn Shell() -> impl IntoView {
    let lib = viewer::Library::new();
    provide_context(lib);
    let src = crate::web::files::query_param("src");
    let section = RwSignal::new(if src.is_some() {
        Section::Reports
    } else {
        Section::Run
    });
    provide_context(Nav {
        section,
        rerun: RwSignal::new(None),
    });
    let (src_error, set_src_error) = signal(String::new());
    if let Some(url) = src {
        viewer::open_url(lib, url, set_src_error);
    }
    view! {
        <header class="shell__header">
            <h1 class="shell__title" data-testid="app-title">"pinbench"</h1>
            <p class="shell__tagline">"LLM endpoint benchmarks with every parameter pinned."</p>
            <nav class="shell__nav" aria-label="Sections" data-testid="nav">
                {Section::ALL
                    .into_iter()
                    .map(|s| {
                        view! {
                            <button
                                class="shell__nav-item"
                                class:shell__nav-item--active=move || section.get() == s
                                aria-current=move || (section.get() == s).then_some("page")
                                data-testid=format!("nav-{}", s.id())
                                on:click=move |_| section.set(s)
                            >
                                {s.label()}
                            </button>
                        }
                    })
                    .collect_view()}
            </nav>
        </header>
        <main class="shell__main" data-testid="section">
            <h2 data-testid="section-title">{move || section.get().label()}</h2>
            <p>{move || section.get().blurb()}</p>
            // Always mounted: switching screens never stops a run or loses its report.
            <div hidden=move || section.get() != Section::Run>
                <run::RunPage />
            </div>
            <p role="alert" data-testid="src-error">{move || src_error.get()}</p>
            <div hidden=move || section.get() != Section::Reports>
                <viewer::ReportsPage />
            </div>
            <Show when=move || section.get() == Section::Compare>
                <compare::ComparePage />
            </Show>
            <div hidden=move || section.get() != Section::Claims>
                <claim::ClaimPage />
            </div>
        </main>
    }
}
