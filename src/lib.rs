//! pinbench: benchmarks LLM inference endpoints from a browser tab and refuses to
//! produce a number whose configuration is not fully pinned.
//!
//! * [`core`] is pure Rust: no browser APIs, clocks or randomness. Time (integer µs)
//!   and random bytes are passed in. It builds and is tested on the host.
//! * `web` is the browser glue (wasm32 only).
//! * `ui` holds the Leptos views (wasm32 only): thin, over core types.
//! * `native` is the native host of the same run session (`pinbench run`).

pub use pinbench_core as core;

/// The native host: `pinbench run` over a native HTTP client (not in the wasm build).
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(all(target_arch = "wasm32", feature = "app"))]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod web;
