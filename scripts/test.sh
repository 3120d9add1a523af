#!/usr/bin/env bash
# Sets everything up, then runs every check CI runs: fmt, clippy (host and wasm32),
# native tests, browser tests (wasm-bindgen-test in headless Chromium), the release
# build and its size budgets, a headless-Chromium load of the built page that fails on any console error,
# end-to-end runs through the app against the reference server and a real llama-server,
# a newcomer's first run and a keyboard-only run, axe-core accessibility checks, the
# screenshots, the viewer end to end, and the fidelity bench (no automation attached; its targets are
# asserted with a margin). Prints each step's duration at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# What CI runs does not depend on the caller's environment: the variables that switch
# assertions off, shorten the fidelity bench, change case counts or test threads are
# cleared before anything runs.
unset ASSERT ASSERT_BROWSER_RATIOS FIDELITY_MEASURED_S FIDELITY_DUMP BASELINE_OUT PINBENCH_FUZZ_CASES PROPTEST_CASES PROPTEST_MAX_SHRINK_ITERS \
  PROPTEST_MAX_GLOBAL_REJECTS PROPTEST_MAX_LOCAL_REJECTS RUST_TEST_THREADS RUST_TEST_SHUFFLE
T0=$(date +%s)
TIMES=()
LAST_NAME="setup"
LAST_T=$T0
step() {
  local now; now=$(date +%s)
  TIMES+=("$(printf '%5ds  %s' $((now - LAST_T)) "$LAST_NAME")")
  LAST_NAME="$*"
  LAST_T=$now
  echo; echo "=== $* ==="
}
report_times() {
  # A background llama-server build does not outlive a failed run.
  if [ -n "${LLAMA_PID:-}" ]; then kill -- "-$LLAMA_PID" 2>/dev/null || true; fi
  local now; now=$(date +%s)
  TIMES+=("$(printf '%5ds  %s' $((now - LAST_T)) "$LAST_NAME")")
  echo; echo "=== step durations ==="
  printf '%s\n' "${TIMES[@]}"
  printf '%5ds  total\n' $((now - T0))
}
trap report_times EXIT

# llama-server (for the real-engine test) builds from source on a fresh machine: start it
# now, in the background, so it overlaps the Rust builds; it is waited for before the first
# timing-sensitive test. Its apt packages are installed first, so apt never runs twice at once.
source scripts/env.sh
mkdir -p "$PINBENCH_CACHE"
bash scripts/llama.sh deps
# It overlaps setup, clippy and the builds only: every timing-sensitive test (the native
# tests' timing bounds, the end-to-end runs) starts after it is done (it once stretched
# the native tests' gaps enough to miss a bound).
setsid bash scripts/llama.sh > "$PINBENCH_CACHE/llama-build.log" 2>&1 &
LLAMA_PID=$!
wait_llama() {
  if [ -n "${LLAMA_PID:-}" ]; then
    if ! wait "$LLAMA_PID"; then cat "$PINBENCH_CACHE/llama-build.log" >&2; echo "llama-server build failed" >&2; exit 1; fi
    LLAMA_PID=""
  fi
}
bash scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all --check

step "clippy (host)"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "clippy (wasm32)"
cargo clippy -p pinbench --target wasm32-unknown-unknown --lib --bins --test web --locked -- -D warnings
# The card page's build (no Leptos).
cargo clippy -p pinbench --target wasm32-unknown-unknown --no-default-features --lib --bins --locked -- -D warnings

step "pinbench-core depends on no browser crate"
# The compiler keeps the core pure of the browser: it cannot name a crate it does not
# depend on. This holds the dependency list itself (every target, normal and build edges).
if cargo tree --locked -p pinbench-core -e normal,build --prefix none --target all | grep -E '^(web-sys|wasm-bindgen|js-sys|leptos|gloo)'; then
  echo "pinbench-core depends on a browser crate (above)" >&2; exit 1
fi

step "browser tests (wasm-bindgen-test, headless Chromium)"
cargo test -p pinbench --target wasm32-unknown-unknown --locked --test web

step "release build (trunk)"
trunk build --release

step "size budgets (gzip): the app, and the card page"
bash scripts/sizes.sh dist

step "native builds for the end-to-end tests and the bench"
cargo build --locked -p pinbench-refserver --bin pinbench-refserver
cargo build --locked -p pinbench --bin pinbench-verify --bin pinbench-fixtures
cargo build --locked -p pinbench --profile native --bin pinbench

step "wait for the llama-server build"
wait_llama

step "native tests"
cargo test --workspace --locked 2>&1 | tee "$PINBENCH_CACHE/native-tests.log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "native tests: %d passed, %d failed\n", p, f }' "$PINBENCH_CACHE/native-tests.log"

step "page load in headless Chromium"
node tests/e2e/page_load.mjs dist

step "end to end: pin gate, probe, runs against the reference server, signed report"
node tests/e2e/run_flow.mjs dist

step "end to end: a newcomer's first run (serve defaults, Probe, first preset, Start), keyboard only"
node tests/e2e/newcomer.mjs dist

step "accessibility: axe-core on Run, Reports, Compare and the card (light and dark)"
node tests/e2e/a11y.mjs dist

step "screenshots: Run form, live run, results, card (1280x800, 390x844, light, dark)"
node tests/e2e/screenshots.mjs dist "$CARGO_TARGET_DIR/screenshots"

step "end to end: a claim becomes a link to the Run screen; a received report is re-run and compared"
node tests/e2e/claims_rerun.mjs dist

step "end to end: three native runners merged into one report, against the server's truth"
node tests/e2e/merge.mjs

step "end to end: the CLI keeps what it measured (a killed run sealed; no overwrite; keys)"
node tests/e2e/cli_keeps.mjs

step "end to end: pinbench watch writes a report per scheduled run; the tab opens the folder and draws them over time"
node tests/e2e/watch.mjs dist

step "end to end in the tab: an SLO search finds the reference server's knee (max_num_seqs 4) and its report verifies natively"
node tests/e2e/search.mjs dist

step "end to end: the bundle from a sub-path, the card embedded in another origin"
node tests/e2e/subpath.mjs dist

step "end to end: the vendors' SDKs (openai, @anthropic-ai/sdk, @google/genai) against the reference server in each dialect"
node tests/e2e/sdks.mjs

step "end to end in the tab: every API dialect with a reasoning model (visible, hidden) against the truth; rate limits, a vendor origin, a blocked run"
node tests/e2e/dialects.mjs dist

step "end to end in the tab: the shared-system-prompt preset against the server's block prefix cache (cached tokens = truth)"
node tests/e2e/workloads.mjs dist

step "end to end: a share link cannot send a remembered key to another origin"
node tests/e2e/link_key.mjs dist

step "end to end: the viewer (signatures, trust, compare, embed, imports, hostile files)"
FIXTURES="$CARGO_TARGET_DIR/e2e-fixtures"
mkdir -p "$FIXTURES"
"$CARGO_TARGET_DIR/debug/pinbench-fixtures" "$FIXTURES" 10000
node tests/e2e/viewer.mjs dist "$FIXTURES"

step "bench (measurement, not a test): the viewer opening a 10,000-request report"
node tests/e2e/viewer_bench.mjs dist "$FIXTURES" 3

step "fidelity bench: native host, node http2, minimal worker loop, pinbench's worker (no automation)"
node tests/e2e/fidelity_bench.mjs dist

step "end to end: a real engine (llama-server + Gemma 3 270M from PyPI, cached)"
node tests/e2e/llama.mjs dist

echo; echo "all checks passed"
