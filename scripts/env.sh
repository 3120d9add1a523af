# Sourced by the other scripts: paths shared by setup, serve and test.
# The build cache lives outside the clone so repeat runs (and CI re-runs) are fast.
export PINBENCH_CACHE="${PINBENCH_CACHE:-$HOME/.cache/pinbench}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PINBENCH_CACHE/target}"
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# Trunk offline: never try to download tools (this machine reaches only package registries).
export TRUNK_OFFLINE=true
