#!/usr/bin/env bash
# Builds the embeddable card page (src/bin/pinbench-card.rs: its own small wasm, no
# Leptos) into the bundle's card/ folder. Trunk runs it after every build (scripts/post_build.sh,
# Trunk.toml's post_build hook, which gives the staging directory and profile); by hand:
#   TRUNK_STAGING_DIR=dist TRUNK_PROFILE=release bash scripts/card.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out="${TRUNK_STAGING_DIR:-dist}/card"
profile_flag=()
profile_dir=debug
if [ "${TRUNK_PROFILE:-release}" = release ]; then
  profile_flag=(--release)
  profile_dir=release
fi
# Without the `app` feature: no Leptos in this wasm.
cargo build --locked --target wasm32-unknown-unknown --no-default-features --bin pinbench-card "${profile_flag[@]}"
mkdir -p "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name pinbench-card \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/$profile_dir/pinbench-card.wasm"
if [ "$profile_dir" = release ]; then
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals -o "$out/pinbench-card_bg.wasm" "$out/pinbench-card_bg.wasm"
fi
cp www/card/index.html www/card/card.css "$out/"
