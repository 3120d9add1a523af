#!/usr/bin/env bash
# Produces the import fixtures of other benchmark tools by running the real tools (from
# PyPI, versions pinned below) against the reference server with known pins, and writes
# their result files to tests/fixtures/imports/real/<tool>-<version>/, with the server's
# ground truth (truth.json) and the exact command (COMMAND). Not part of the test run:
# the committed files are the fixtures; rerun this to refresh them for new releases.
#
# Pins of every run: completions API, model pinbench-tiny, prompt 128 tokens, output 32
# tokens (ignore_eos), closed loop c=4, 24 measured requests after 2 warm-up requests.
# The tools load a Hugging Face tokenizer that counts as the server does
# (scripts/ref_tokenizer.py), offline.
#   bash scripts/capture_tool_fixtures.sh [TOOL...]   (vllm aiperf guidellm guidellm-defaults;
#                                                     default: all)
# guidellm-defaults is guidellm with none of our extras: what it sends by itself (it adds
# ignore_eos to synthetic data's requests, recorded only in each request's request_args).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE="${PINBENCH_CACHE:-$HOME/.cache/pinbench}/pytools"
AIPERF_VERSION=0.13.0
GUIDELLM_VERSION=0.8.1
VLLM_VERSION=0.33.0
PORT="${PORT:-18301}"
mkdir -p "$CACHE"
TOOLS=" ${*:-vllm aiperf guidellm guidellm-defaults} "
want() { [[ "$TOOLS" == *" $1 "* ]]; }
for spec in "aiperf==$AIPERF_VERSION" "guidellm==$GUIDELLM_VERSION" "vllm==$VLLM_VERSION"; do
  name=${spec%%=*}
  want "$name" || { [ "$name" = guidellm ] && want guidellm-defaults; } || continue
  if ! "$CACHE/$name/bin/python" -c "import importlib.metadata as m,sys; sys.exit(m.version('$name')!='${spec##*==}')" 2>/dev/null; then
    python3 -m venv "$CACHE/$name"
    "$CACHE/$name/bin/pip" install -q "$spec"
  fi
done
TOK="$CACHE/reftok"
rm -rf "$TOK" && mkdir -p "$TOK"
"$CACHE/guidellm/bin/python" scripts/ref_tokenizer.py "$TOK" \
  $(ls "$CACHE"/aiperf/lib/python3*/site-packages/aiperf/dataset/generator/assets/shakespeare.txt 2>/dev/null) >/dev/null

source scripts/env.sh
cargo build --release --locked -p pinbench-refserver
start_ref() {
  "$CARGO_TARGET_DIR/release/pinbench-refserver" --profile tiny --port "$PORT" --tls-port -1 \
    --idle-exit-secs 300 >"$CACHE/ref.log" 2>&1 &
  ref_pid=$!
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && return; sleep 0.1; done
  echo "reference server did not start" >&2; exit 1
}
stop_ref() { kill "$ref_pid" 2>/dev/null || true; wait "$ref_pid" 2>/dev/null || true; }
trap 'stop_ref' EXIT
OUT="$ROOT/tests/fixtures/imports/real"
base="http://127.0.0.1:$PORT"

# vLLM bench serve.
if want vllm; then
dir="$OUT/vllm-bench-serve-$VLLM_VERSION"; rm -rf "$dir"; mkdir -p "$dir"
start_ref
cmd=("$CACHE/vllm/bin/vllm" bench serve --backend vllm --base-url "$base" --endpoint /v1/completions
  --model pinbench-tiny --tokenizer "$TOK" --dataset-name random --random-input-len 128
  --random-output-len 32 --num-prompts 24 --max-concurrency 4 --ignore-eos --seed 1
  --num-warmups 2 --save-result --save-detailed --result-dir "$dir"
  --result-filename vllm_bench_serve.json --percentile-metrics ttft,tpot,itl,e2el
  --metric-percentiles 50,90,99 --disable-tqdm)
HF_HUB_OFFLINE=1 "${cmd[@]}" >"$CACHE/vllm-run.log" 2>&1
printf '%q ' "${cmd[@]}" >"$dir/COMMAND"
curl -sf "$base/truth" >"$dir/truth.json"
stop_ref
fi

# AIPerf.
if want aiperf; then
dir="$OUT/aiperf-$AIPERF_VERSION"; rm -rf "$dir"; mkdir -p "$dir"
start_ref
work=$(mktemp -d)
cmd=("$CACHE/aiperf/bin/aiperf" profile --model pinbench-tiny --url "$base" --endpoint-type completions
  --streaming --tokenizer "$TOK" --synthetic-input-tokens-mean 128 --synthetic-input-tokens-stddev 0
  --output-tokens-mean 32 --output-tokens-stddev 0 --concurrency 4 --request-count 24
  --warmup-request-count 2 --extra-inputs ignore_eos:true --random-seed 1 --artifact-dir "$work"
  --export-level records --ui-type none)
"${cmd[@]}" >"$CACHE/aiperf-run.log" 2>&1
printf '%q ' "${cmd[@]}" >"$dir/COMMAND"
cp "$work/profile_export_aiperf.json" "$work/profile_export.jsonl" "$dir/"
rm -rf "$work"
curl -sf "$base/truth" >"$dir/truth.json"
stop_ref
fi

# guidellm: with our extra body, and with its own defaults only.
for variant in guidellm guidellm-defaults; do
want "$variant" || continue
dir="$OUT/guidellm-$GUIDELLM_VERSION"; extras=', "extras": {"body": {"ignore_eos": true}}'
if [ "$variant" = guidellm-defaults ]; then dir="$OUT/guidellm-$GUIDELLM_VERSION-defaults"; extras=""; fi
rm -rf "$dir"; mkdir -p "$dir"
start_ref
scenario="$CACHE/${variant}_scenario.json"
cat >"$scenario" <<EOF
{"spec": {
  "backend": {"kind": "openai_http", "target": "$base", "model": "pinbench-tiny",
              "request_format": "/v1/completions"$extras},
  "profile": {"kind": "concurrent", "streams": [4], "warmup": {"value": 2, "mode": "requests"}},
  "data": [{"kind": "synthetic_text", "prompt_tokens": 128, "output_tokens": 32}],
  "tokenizer": {"kind": "huggingface_auto", "model": "$TOK"},
  "constraints": [{"kind": "max_requests", "count": 26}],
  "outputs": [{"kind": "json", "path": "$dir/benchmarks.json"}]
}}
EOF
cmd=("$CACHE/guidellm/bin/guidellm" run --config "$scenario" --disable-console-interactive)
HF_HUB_OFFLINE=1 "${cmd[@]}" >"$CACHE/guidellm-run.log" 2>&1
printf '%q ' "${cmd[@]}" >"$dir/COMMAND"
cp "$scenario" "$dir/scenario.json"
curl -sf "$base/truth" >"$dir/truth.json"
stop_ref
done

# Paths of this machine are not part of a fixture.
for f in "$OUT"/*/*; do
  sed -i -e "s#$CACHE#PYTOOLS#g" -e "s#$OUT#FIXTURES#g" -e "s#/tmp/tmp\.[A-Za-z0-9]*#ARTIFACTS#g" "$f"
done
echo "captured into $OUT:"; ls -R "$OUT"
