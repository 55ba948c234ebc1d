#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo (sha256 675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f).
# One-shot warm-up: fills the cache volume once, before the first production start, so that start and every
# recreated container or pod after it find the compiled graphs, autotune results and kernel caches there
# (serve.sh keeps all of them under VLLM_CACHE_ROOT). compose: `docker compose run --rm warmup` before
# `docker compose up -d`; Kubernetes: `kubectl apply -f k8s/warmup-job.yaml`, wait for it, then the Deployment.
# It starts serve.sh bound to loopback (nothing outside reaches it), waits until /health answers 200 (weights
# loaded, graphs compiled, kernels autotuned, CUDA graphs captured), records this build's cache fingerprint on the
# volume (`tqdeploy profile` compares it with tqdeploy.lock.json) and stops vLLM.
set -eu

HERE="$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)"
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-/cache/vllm}"
TIMEOUT_S="${TQ_WARMUP_TIMEOUT_S:-3600}"
FINGERPRINT="$VLLM_CACHE_ROOT/tqdeploy-fingerprint.json"

TQ_BIND_HOST=127.0.0.1 "$HERE/serve.sh" &
SERVER=$!
trap 'kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" || true; exit 143' INT TERM

START=$(date +%s)
until "$HERE/healthcheck.sh" >/dev/null 2>&1; do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    RC=0
    wait "$SERVER" || RC=$?
    echo "warmup.sh: vLLM exited with status $RC before it was ready; no fingerprint recorded" >&2
    exit 1
  fi
  if [ $(($(date +%s) - START)) -ge "$TIMEOUT_S" ]; then
    echo "warmup.sh: not ready after $TIMEOUT_S s (TQ_WARMUP_TIMEOUT_S); stopping it, no fingerprint recorded" >&2
    kill -TERM "$SERVER" 2>/dev/null || true
    wait "$SERVER" || true
    exit 1
  fi
  sleep 5
done
READY_S=$(($(date +%s) - START))

# The GPU is part of what the caches depend on and not in the spec: read it here (letters, digits, " ._-" only).
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -cd 'A-Za-z0-9 ._-' || true)"
mkdir -p "$VLLM_CACHE_ROOT"
printf '{"schema": "%s", "sha256": "%s", "vllm_version": "%s", "gpu": "%s", "seconds_to_ready": %s}\n' \
  'tqdeploy.cache-fingerprint/1' '00c6b7898cd06880c6f002b084d3a4b9409a781f06d22f9506a87ca7a1a72d94' '0.32.0' "$GPU" "$READY_S" > "$FINGERPRINT.tmp.$$"
mv -f "$FINGERPRINT.tmp.$$" "$FINGERPRINT"
echo "warmup.sh: ready after $READY_S s; the cache volume now holds this build's caches ($FINGERPRINT)"

kill -TERM "$SERVER" 2>/dev/null || true
wait "$SERVER" || true
