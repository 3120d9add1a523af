#!/usr/bin/env bash
# Installs what is missing, and only that: the wasm32 target, Trunk, wasm-bindgen-cli
# matching Cargo.lock, wasm-opt (npm binaryen@132), Chromium + chromedriver, node test
# packages, and the crates (for Trunk's offline build). A second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
log() { echo "[setup] $*" >&2; }
TRUNK_VERSION=0.21.14

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
if ! rustup component list --installed 2>/dev/null | grep -q '^clippy'; then rustup component add clippy; fi
if ! rustup component list --installed 2>/dev/null | grep -q '^rustfmt'; then rustup component add rustfmt; fi

apt_pkgs=()
[ -x /usr/bin/chromium ] || apt_pkgs+=(chromium)
[ -x /usr/bin/chromedriver ] || apt_pkgs+=(chromium-driver)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  log "installing ${apt_pkgs[*]} (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${apt_pkgs[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${apt_pkgs[@]}" >/dev/null; }
fi

if [ "$(trunk --version 2>/dev/null || true)" != "trunk $TRUNK_VERSION" ]; then
  # trunk 0.22 needs a newer Rust than this machine's; 0.21.14 builds (about 6 minutes).
  log "installing trunk $TRUNK_VERSION"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $wb_version" ]; then
  # --locked fails for this crate (a locked dependency is missing from the index).
  log "installing wasm-bindgen-cli $wb_version (matches Cargo.lock)"
  cargo install wasm-bindgen-cli --version "$wb_version"
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing node packages (binaryen@132 for wasm-opt, terser, playwright-core, axe-core)"
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ "$(wasm-opt --version 2>/dev/null | awk '{print $3}')" != "132" ]; then
  log "wasm-opt on PATH is not binaryen 132: $(command -v wasm-opt || echo none)"; exit 1
fi

cargo fetch --locked -q
log "ready"
