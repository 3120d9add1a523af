//! Entry point of the browser app (built by Trunk for wasm32).

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    // In the run worker there is no page to mount: it waits for `pinbench_worker_main`.
    if pinbench::web::in_worker() {
        return;
    }
    leptos::mount::mount_to_body(pinbench::ui::App);
}

/// Entry point of the run worker (`www/worker.js` calls it once the module is loaded).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn pinbench_worker_main() {
    pinbench::web::worker::worker_main();
}

/// Natively: the `pinbench` command (probe, behaviour, run, verify, merge, view).
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use clap::Parser;
    let cli = pinbench::native::cli::Cli::parse();
    std::process::exit(pinbench::native::cli::main(cli));
}
