#!/usr/bin/env bash
# Sets everything up, starts the reference server (8B-on-H100 profile, its block prefix
# cache on as vLLM's is by default) as the default
# endpoint on http://127.0.0.1:8000 (HTTP/1.1) and https://127.0.0.1:8443 (HTTP/2,
# self-signed), then builds and serves the app at http://127.0.0.1:8080 (cross-origin
# isolated). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cargo build --release --locked -p pinbench-refserver
"$CARGO_TARGET_DIR/release/pinbench-refserver" --profile "${PINBENCH_PROFILE:-8b-h100}" \
  --port "${PINBENCH_REF_PORT:-8000}" --tls-port "${PINBENCH_REF_TLS_PORT:-8443}" --idle-exit-secs 86400 \
  --prefix-cache on &
ref_pid=$!
trap 'kill $ref_pid 2>/dev/null || true' EXIT INT TERM
trunk serve --release --address 127.0.0.1 --port "${PINBENCH_PORT:-8080}"
