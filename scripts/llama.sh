#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server (llama-server) for the tests, on a CPU.
#
#   scripts/llama.sh build   # llama-server from the llama-cpp-python sdist (PyPI), cached
#   scripts/llama.sh model   # a tiny random-weight llama model over a real vocabulary, cached
#   scripts/llama.sh start   # build + model if missing, then llama-server on 127.0.0.1
#   scripts/llama.sh env     # export PARLEY_TEST_LLAMA_URL=... (eval it)
#   scripts/llama.sh stop    # stop the server this script started (by its pid file)
#
# Everything is kept under $PARLEY_LLAMA_DIR (default /tmp/parley-llama), in a
# folder keyed by the llama-cpp-python version, so a second CI run on the same
# machine reuses the build (about 11 min on 2 cores from cold, see docs/llama.md)
# and the model. No weights are downloaded: the model is made by
# scripts/llama-model.py with the gguf package, over the vocabulary-only GGUF
# that llama.cpp ships for its tokenizer tests, so tokenization and the chat
# template are real and generation is fast.
set -euo pipefail

VERSION="${PARLEY_LLAMA_VERSION:-0.3.36}"    # llama-cpp-python on PyPI
GGUF_VERSION="${PARLEY_LLAMA_GGUF_VERSION:-0.19.0}"
NUMPY_VERSION="${PARLEY_LLAMA_NUMPY_VERSION:-2.4.6}"
VOCAB="${PARLEY_LLAMA_VOCAB:-qwen2}"          # models/ggml-vocab-$VOCAB.gguf
PORT="${PARLEY_LLAMA_PORT:-18431}"
SLOTS="${PARLEY_LLAMA_SLOTS:-4}"
CTX_PER_SLOT="${PARLEY_LLAMA_CTX_PER_SLOT:-1024}"
JOBS="${PARLEY_LLAMA_JOBS:-2}"
ROOT="${PARLEY_LLAMA_DIR:-/tmp/parley-llama}"
DIR="$ROOT/$VERSION-$(uname -m)"
SRC="$DIR/src"
BIN="$DIR/build/bin/llama-server"
VENV="$DIR/venv"
MODEL="$DIR/tiny-$VOCAB.gguf"
PIDFILE="$DIR/server-$PORT.pid"
LOG="$DIR/server-$PORT.log"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python3}"

say() { printf 'llama.sh: %s\n' "$*" >&2; }

fetch_src() {
  [ -f "$SRC/CMakeLists.txt" ] && return
  mkdir -p "$DIR/dl"
  local tgz="$DIR/dl/llama_cpp_python-$VERSION.tar.gz"
  if [ ! -f "$tgz" ]; then
    say "downloading the llama-cpp-python $VERSION sdist"
    "$PY" -m pip download --quiet --no-binary :all: --no-deps \
      "llama-cpp-python==$VERSION" -d "$DIR/dl"
  fi
  rm -rf "$DIR/unpack"
  mkdir -p "$DIR/unpack"
  tar xzf "$tgz" -C "$DIR/unpack"
  rm -rf "$SRC"
  mv "$DIR/unpack/llama_cpp_python-$VERSION/vendor/llama.cpp" "$SRC"
  rm -rf "$DIR/unpack"
}

build() {
  if [ -x "$BIN" ]; then say "cached: $BIN"; return; fi
  fetch_src
  local t0=$SECONDS
  # CPU only, the server and what it links, nothing fetched at build time (no
  # prebuilt web UI, no npm, no HTTPS client).
  cmake -S "$SRC" -B "$DIR/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
    -DGGML_NATIVE=ON >"$DIR/cmake.log" 2>&1 || { tail -40 "$DIR/cmake.log" >&2; exit 1; }
  ninja -C "$DIR/build" -j "$JOBS" llama-server >"$DIR/build.log" 2>&1 || { tail -40 "$DIR/build.log" >&2; exit 1; }
  echo "$((SECONDS - t0))" >"$DIR/build-seconds"
  say "built $BIN in $((SECONDS - t0)) s (-j$JOBS)"
}

venv() {
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import gguf, numpy' 2>/dev/null; then return; fi
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "gguf==$GGUF_VERSION" "numpy==$NUMPY_VERSION"
}

model() {
  if [ -f "$MODEL" ]; then say "cached: $MODEL"; return; fi
  fetch_src
  venv
  "$VENV/bin/python" "$HERE/llama-model.py" \
    --vocab "$SRC/models/ggml-vocab-$VOCAB.gguf" --out "$MODEL.tmp"
  mv "$MODEL.tmp" "$MODEL"
  say "model: $MODEL"
}

url() { echo "http://127.0.0.1:$PORT"; }

healthy() { curl -fsS -m 2 "$(url)/health" >/dev/null 2>&1; }

start() {
  build
  model
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && healthy; then
    say "already running (pid $(cat "$PIDFILE")) at $(url)"
    return
  fi
  # --parallel slots split --ctx-size (--no-kv-unified): each slot has its own
  # CTX_PER_SLOT tokens, as /slots then reports them.
  # --metrics and --slots turn on the endpoints the openai engine reads load
  # from; --no-webui keeps it an API server.
  nohup "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$PORT" \
    --alias tiny --parallel "$SLOTS" --ctx-size "$((SLOTS * CTX_PER_SLOT))" \
    --threads 1 --threads-http 4 --metrics --slots --jinja --no-webui --no-kv-unified \
    --seed 7 >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  local i
  for i in $(seq 1 120); do
    if healthy; then say "llama-server pid $(cat "$PIDFILE") at $(url) (log $LOG)"; return; fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then tail -30 "$LOG" >&2; exit 1; fi
    sleep 0.5
  done
  tail -30 "$LOG" >&2
  say "llama-server did not become healthy in 60 s"
  exit 1
}

stop() {
  [ -f "$PIDFILE" ] || return 0
  local pid; pid="$(cat "$PIDFILE")"
  kill "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  start) start ;;
  stop) stop ;;
  env)
    echo "export PARLEY_TEST_LLAMA_URL=$(url)"
    echo "export PARLEY_TEST_LLAMA_SLOTS=$SLOTS"
    echo "export PARLEY_TEST_LLAMA_MODEL=tiny"
    ;;
  *) echo "usage: $0 build|model|start|stop|env" >&2; exit 2 ;;
esac
