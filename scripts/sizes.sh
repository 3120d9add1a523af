#!/usr/bin/env bash
# The bundle's size budgets, measured on the built dist/ (gzip -6, what servers usually
# send; 1 KB = 1000 bytes): the app's wasm + JS, and the card page's wasm + JS (a wiki page
# may hold many cards). Prints a table; exits 1 when a bundle is over its limit.
#   bash scripts/sizes.sh [DIST]
# Each bundle's limit is its budget: 600 KB for the app, 150 KB for the card. Also fails
# when a wasm carries std's float formatter (see below).
set -euo pipefail
dist="${1:-dist}"
APP_BUDGET_KB=600
CARD_BUDGET_KB=150
gz() { gzip -6 -c "$1" | wc -c; }
one() { # a glob that must name exactly one file
  local f=( $1 )
  if [ "${#f[@]}" -ne 1 ] || [ ! -f "${f[0]}" ]; then
    echo "sizes: expected one $1 (run trunk build --release)" >&2
    exit 1
  fi
  echo "${f[0]}"
}
app_wasm=$(one "$dist/pinbench-*_bg.wasm")
app_js=$(one "$dist/pinbench-*[0-9a-f].js")
card_wasm=$(one "$dist/card/pinbench-card_bg.wasm")
card_js=$(one "$dist/card/pinbench-card.js")
status=0
kb() { awk -v t="$1" 'BEGIN { printf "%.1f", t / 1000 }'; }
printf '%-6s %11s %11s %9s %9s   %s\n' bundle "wasm bytes" "wasm gzip" "js gzip" "total KB" "limit"
row() { # name wasm js budget-KB
  local raw w j total verdict
  raw=$(wc -c < "$2"); w=$(gz "$2"); j=$(gz "$3"); total=$((w + j))
  if [ "$total" -gt $(($4 * 1000)) ]; then verdict="OVER"; status=1; else verdict="ok"; fi
  printf '%-6s %11d %11d %9d %9s   %s KB: %s\n' "$1" "$raw" "$w" "$j" "$(kb "$total")" "$4" "$verdict"
}
row app "$app_wasm" "$app_js" "$APP_BUDGET_KB"
row card "$card_wasm" "$card_js" "$CARD_BUDGET_KB"
# std's float formatter (Grisu/Dragon, ~7 KB gzip) must stay out: the program formats floats
# through core::decimal. Its sign is Grisu's power-of-ten table, whose first entry is
# 0xe61acf033d1a45df (little-endian in the data section).
for w in "$app_wasm" "$card_wasm"; do
  if LC_ALL=C grep -q -a -P '\xdf\x45\x1a\x3d\x03\xcf\x1a\xe6' "$w"; then
    echo "sizes: $w carries std's float formatter (a {:.N} or {} of an f64, or f64::clamp);" \
      "format floats with core::decimal::Fixed / Shortest" >&2
    status=1
  fi
done
exit $status
