#!/usr/bin/env bash
# The bundle's size budgets, measured on the built dist/ (gzip -6, what servers usually
# send; 1 KB = 1000 bytes): the app's wasm + JS, and the card page's wasm + JS (a wiki page
# may hold many cards). Prints a table; exits 1 when a budget is exceeded.
#   bash scripts/sizes.sh [DIST]
set -euo pipefail
dist="${1:-dist}"
APP_BUDGET_KB=${APP_BUDGET_KB:-450}
CARD_BUDGET_KB=150
gz() { gzip -6 -c "$1" | wc -c; }
one() { # one FILE-GLOB → the single file it names
  local f=( $1 )
  [ -f "${f[0]}" ] || { echo "sizes: no ${1} in $dist (run trunk build --release)" >&2; exit 1; }
  echo "${f[0]}"
}
app_wasm=$(one "$dist/pinbench-*_bg.wasm")
app_js=$(one "$dist/pinbench-*[0-9a-f].js")
card_wasm=$(one "$dist/card/pinbench-card_bg.wasm")
card_js=$(one "$dist/card/pinbench-card.js")
status=0
printf '%-8s %12s %12s %12s %10s\n' bundle "wasm bytes" "wasm gzip" "js gzip" "total KB"
row() {
  local name=$1 wasm=$2 js=$3 budget=$4
  local raw w j total
  raw=$(wc -c < "$wasm"); w=$(gz "$wasm"); j=$(gz "$js"); total=$((w + j))
  printf '%-8s %12d %12d %12d %10.1f  (budget %d KB)' "$name" "$raw" "$w" "$j" "$(awk -v t="$total" 'BEGIN { printf "%.1f", t / 1000 }')" "$budget"
  if [ "$total" -gt $((budget * 1000)) ]; then echo "  OVER"; status=1; else echo "  ok"; fi
}
row app "$app_wasm" "$app_js" "$APP_BUDGET_KB"
row card "$card_wasm" "$card_js" "$CARD_BUDGET_KB"
exit $status
