#!/usr/bin/env bash
# gpu-check.sh MODEL_PATH — the openai engine against a real vLLM on a GPU.
#
# For a machine with an NVIDIA GPU when one is lent; nothing in the project
# depends on it (CI runs the same conformance suite against llama.cpp on the
# CPU: scripts/llama.sh). It:
#   1. installs vLLM from PyPI into a venv ($PARLEY_GPU_DIR, default /tmp/parley-gpu),
#   2. serves MODEL_PATH (a local Hugging Face model folder; none is
#      downloaded) on 127.0.0.1 with --max-num-seqs $SLOTS and records its
#      /metrics page,
#   3. runs the engine conformance suite against it (go test -tags gpu, or a
#      test binary built beforehand: go test -c -tags gpu -o bin/openai-gpu.test ./server/worker/openai),
#   4. runs `parley bench` against a `parley worker --engine openai` in front
#      of it, and `parley bench relay` (the relay's own overhead on this machine),
# and writes everything under $OUT (default ./gpu-check-out).
#
# Without MODEL_PATH it looks in the usual places (the Hugging Face cache,
# /models, /data) for a small model and says what it found.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-$PWD/gpu-check-out}"
DIR="${PARLEY_GPU_DIR:-/tmp/parley-gpu}"
VLLM_VERSION="${VLLM_VERSION:-0.33.0}"
PORT="${PARLEY_GPU_PORT:-18500}"
SLOTS="${PARLEY_GPU_SLOTS:-8}"
NAME="gpu-model"
mkdir -p "$OUT" "$DIR"
SUMMARY="$OUT/summary.txt"
note() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$SUMMARY" >&2; }

MODEL="${1:-}"
if [ -z "$MODEL" ]; then
  for d in "$HOME"/.cache/huggingface/hub/models--*/snapshots/* /models/* /data/models/* /data/*; do
    [ -f "$d/config.json" ] || continue
    MODEL="$d"; break
  done
fi
if [ -z "$MODEL" ] || [ ! -f "$MODEL/config.json" ]; then
  note "no model folder (with config.json) given or found: nothing to serve; pass one: $0 /path/to/model"
  exit 0
fi
note "model: $MODEL"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >>"$SUMMARY" 2>&1 || note "nvidia-smi failed"

# 1. vLLM
if [ ! -x "$DIR/venv/bin/vllm" ]; then
  note "installing vllm==$VLLM_VERSION"
  python3 -m venv "$DIR/venv" && "$DIR/venv/bin/pip" install --quiet "vllm==$VLLM_VERSION" >"$OUT/pip.log" 2>&1 \
    || { note "vLLM install failed (see pip.log)"; exit 1; }
fi
"$DIR/venv/bin/python" -c 'import vllm; print("vllm", vllm.__version__)' >>"$SUMMARY" 2>&1

# 2. serve
"$DIR/venv/bin/vllm" serve "$MODEL" --host 127.0.0.1 --port "$PORT" --served-model-name "$NAME" \
  --max-num-seqs "$SLOTS" --max-model-len 4096 --gpu-memory-utilization 0.5 >"$OUT/vllm.log" 2>&1 &
VLLM_PID=$!
trap 'kill $VLLM_PID $WORKER_PID 2>/dev/null' EXIT
WORKER_PID=
for i in $(seq 1 300); do
  curl -fsS -m 2 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 $VLLM_PID 2>/dev/null || { note "vLLM exited (see vllm.log)"; tail -20 "$OUT/vllm.log" >&2; exit 1; }
  sleep 2
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || { note "vLLM not healthy after 10 min"; exit 1; }
note "vLLM serving on 127.0.0.1:$PORT"
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$OUT/vllm-metrics.txt" 2>&1

# 3. conformance
export PARLEY_GPU_UPSTREAM_URL="http://127.0.0.1:$PORT" PARLEY_GPU_UPSTREAM_MODEL="$NAME" PARLEY_GPU_UPSTREAM_SLOTS="$SLOTS"
if command -v go >/dev/null; then
  go test -tags gpu ./server/worker/openai/ -run TestConformanceGPUUpstream -count=1 -v >"$OUT/conformance.log" 2>&1
  rc=$?
elif [ -x bin/openai-gpu.test ]; then
  (cd server/worker/openai && ../../../bin/openai-gpu.test -test.run TestConformanceGPUUpstream -test.count=1 -test.v) >"$OUT/conformance.log" 2>&1
  rc=$?
else
  note "no Go toolchain and no bin/openai-gpu.test: conformance not run"; rc=2
fi
note "conformance suite: exit $rc ($(grep -c -- '--- PASS' "$OUT/conformance.log" 2>/dev/null) passed, $(grep -c -- '--- FAIL' "$OUT/conformance.log" 2>/dev/null) failed)"
grep -E 'enginetest.go:[0-9]+: ' "$OUT/conformance.log" >>"$SUMMARY" 2>/dev/null

# 4. load through a worker, and the relay benchmark
PARLEY=bin/parley
if [ ! -x "$PARLEY" ] && command -v go >/dev/null; then go build -o "$PARLEY" ./server/cmd/parley; fi
if [ -x "$PARLEY" ]; then
  "$PARLEY" worker --engine openai --upstream "http://127.0.0.1:$PORT/v1" --listen 127.0.0.1:18501 >"$OUT/worker.log" 2>&1 &
  WORKER_PID=$!
  sleep 3
  for c in 1 "$SLOTS" $((SLOTS * 4)); do
    "$PARLEY" bench --target worker --url http://127.0.0.1:18501 --model "$NAME" --concurrency "$c" \
      --requests $((c * 20)) --max-tokens 128 --quiet >>"$OUT/bench-worker.txt" 2>&1
  done
  note "parley bench through the worker: bench-worker.txt"
  "$PARLEY" bench relay --answers 2000 --streams 50,200 --trials 3 --quiet >"$OUT/bench-relay.txt" 2>&1
  note "parley bench relay: exit $? (bench-relay.txt)"
else
  note "no parley binary (bin/parley) and no Go toolchain: benchmarks not run"
fi
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$OUT/vllm-metrics-after.txt" 2>&1
note "done; figures in $OUT"
