#!/usr/bin/env bash
# Captures real SSE transcripts from llama-server (Gemma 3 270M) into
# tests/fixtures/transcripts/llama_*.sse. Builds/caches the server and model first
# (scripts/llama.sh). The server listens on 127.0.0.1 and is stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/llama.sh
CACHE="${PINBENCH_CACHE:-$HOME/.cache/pinbench}/llama"
PORT="${PORT:-18181}"
"$CACHE/llama-server" -m "$CACHE/gemma-3-270m-q4_k_m.gguf" --host 127.0.0.1 --port "$PORT" \
  -np 2 -cb -c 4096 -t 1 --alias gemma-3-270m --metrics --slots --no-webui >/tmp/llama-capture.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
out=tests/fixtures/transcripts
curl -sN "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"gemma-3-270m","prompt":"The capital of France is","max_tokens":12,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0,"cache_prompt":false}' \
  > "$out/llama_completions.sse"
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model":"gemma-3-270m","messages":[{"role":"user","content":"Say hello."}],"max_tokens":10,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0,"cache_prompt":false}' \
  > "$out/llama_chat.sse"
curl -sN "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"gemma-3-270m","prompt":"Count: one, two,","max_tokens":40,"stream":true,"temperature":0,"cache_prompt":false,"stop":["five"]}' \
  > "$out/llama_completions_stop_no_usage_option.sse"
echo "captured: $(ls "$out"/llama_*.sse | tr '\n' ' ')"
