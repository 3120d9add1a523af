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

/// Natively: `pinbench run --pins pins.json` (the native host of the run session).
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => {
            if let Err(e) = pinbench::native::cli::run(&args[1..]) {
                eprintln!("pinbench run: {e}");
                std::process::exit(2);
            }
        }
        Some("merge") => {
            if let Err(e) = pinbench::native::cli::merge(&args[1..]) {
                eprintln!("pinbench merge: {e}");
                std::process::exit(2);
            }
        }
        _ => {
            eprintln!("pinbench is a browser app (build it with `trunk build --release`, see README.md);\nnatively it runs the same benchmark from the command line:\n\n{}", pinbench::native::cli::USAGE);
            std::process::exit(if args.is_empty() { 0 } else { 2 });
        }
    }
}
