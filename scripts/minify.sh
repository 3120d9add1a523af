#!/usr/bin/env bash
# Minifies the wasm-bindgen JS glue of the app and of the card page (terser: compress and
# mangle local names; property names, which the wasm's imports use, stay), then writes the
# app's new SRI hash into index.html (Trunk preloads the glue with an `integrity`
# attribute). Release builds only. Trunk runs it after scripts/card.sh (scripts/post_build.sh,
# Trunk.toml's post_build hook); by hand:
#   TRUNK_STAGING_DIR=dist TRUNK_PROFILE=release bash scripts/minify.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
[ "${TRUNK_PROFILE:-release}" = release ] || exit 0
stage="${TRUNK_STAGING_DIR:-dist}"
app_js=( "$stage"/pinbench-*[0-9a-f].js )
if [ "${#app_js[@]}" -ne 1 ] || [ ! -f "${app_js[0]}" ]; then
  echo "minify: expected one $stage/pinbench-<hash>.js" >&2
  exit 1
fi
for js in "${app_js[0]}" "$stage/card/pinbench-card.js"; do
  terser "$js" --module --compress --mangle --output "$js.min"
  mv "$js.min" "$js"
done
# The preload's integrity must be the minified file's, or the browser refuses to run it.
node - "$stage/index.html" "${app_js[0]}" <<'EOF'
const fs = require("fs");
const crypto = require("crypto");
const path = require("path");
const [html, js] = process.argv.slice(2);
const name = path.basename(js);
const sri = "sha384-" + crypto.createHash("sha384").update(fs.readFileSync(js)).digest("base64");
const text = fs.readFileSync(html, "utf8");
const re = new RegExp(`(href="[^"]*${name.replace(/\./g, "\\.")}"[^>]*integrity=")sha384-[^"]*"`, "g");
let n = 0;
const out = text.replace(re, (_, head) => (n++, `${head}${sri}"`));
if (n !== 1) {
  console.error(`minify: expected one integrity attribute for ${name} in ${html}, found ${n}`);
  process.exit(1);
}
fs.writeFileSync(html, out);
EOF
