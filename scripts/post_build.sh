#!/usr/bin/env bash
# Trunk's post_build hook (Trunk.toml): the card page, then the JS minification, in this
# order (Trunk starts the hooks of one stage together, and minify.sh needs the card's JS).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/card.sh
bash scripts/minify.sh
