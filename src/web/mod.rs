//! Browser glue (wasm32 only): the clock. Fetch, storage, keys and downloads come with
//! the run and viewer screens.

/// Microseconds since the page's time origin (`performance.now()`), as an integer.
/// Returns 0 when no `Performance` object exists (e.g. a worklet).
pub fn now_us() -> u64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| (p.now() * 1000.0).round().max(0.0) as u64)
        .unwrap_or(0)
}
