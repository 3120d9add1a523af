#!/usr/bin/env bash
# Sets everything up, then builds and serves the app at http://127.0.0.1:8080
# (cross-origin isolated). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
exec trunk serve --release --address 127.0.0.1 --port "${PINBENCH_PORT:-8080}"
