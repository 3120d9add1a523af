//! Entry point of the browser app (built by Trunk for wasm32).

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(pinbench::ui::App);
}

/// The app only runs in a browser; natively this binary explains where to find it.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("pinbench is a browser app: build it with `trunk build --release` (see README.md).");
}
