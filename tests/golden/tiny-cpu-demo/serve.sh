#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo (sha256 675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f).
# Edit the spec and run `tqdeploy build` again; tqdeploy.lock.json records this file's hash.
#
# Starts vLLM 0.32.0 with the flags `tqdeploy build` validated against vLLM's own parser.
# Overrides (environment): TQ_MODEL_DIR, TQ_BIND_HOST, TQ_API_KEY_FILE.
set -eu

MODEL_DIR="${TQ_MODEL_DIR:-/models/smollm2}"
# The spec's address by default. Inside a container compose/k8s set 0.0.0.0 and publish the port on
# the spec's address instead (a container bound to loopback cannot be reached through a published port).
BIND_HOST="${TQ_BIND_HOST:-127.0.0.1}"

# Compile cache and Hugging Face cache on persistent volumes, so a restart reuses compiled graphs
# (vLLM docs/deployment/docker.md). The cache key includes the environment: keep it stable.
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-/cache/vllm}"
export HF_HOME="${HF_HOME:-/cache/huggingface}"
# Every other cache a start writes goes beside it, on the same volume: outside it they land under HOME and TMPDIR
# (~/.triton, /tmp/torchinductor_$USER, ~/.cache/flashinfer, ~/.nv/ComputeCache, ...), which a recreated
# container or pod starts without (measured on an H200: 294.5 s against 51.6 s warm). One variable per library,
# read in its source (docs/facts.md); none of them is part of vLLM's compile-cache key.
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-$VLLM_CACHE_ROOT/triton}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$VLLM_CACHE_ROOT/torchinductor}"
export FLASHINFER_WORKSPACE_BASE="${FLASHINFER_WORKSPACE_BASE:-$VLLM_CACHE_ROOT/flashinfer}"
export CUDA_CACHE_PATH="${CUDA_CACHE_PATH:-$VLLM_CACHE_ROOT/nv-compute-cache}"
export CUTE_DSL_CACHE_DIR="${CUTE_DSL_CACHE_DIR:-$VLLM_CACHE_ROOT/cute-dsl}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$VLLM_CACHE_ROOT/xdg}"
# vLLM 0.32.0's CPU build cannot load the AOT artefact it saves ("Compiling model again due to a load
# failure ... finalize_loading", vllm/compilation/decorators.py) and compiles again on every start. With AOT
# compile off (vllm/envs.py VLLM_USE_AOT_COMPILE) it reuses inductor's own cache (TORCHINDUCTOR_CACHE_DIR above,
# on the cache volume). Measured on the tiny demo: warm compile 7.6 s -> 3.7 s.
export VLLM_USE_AOT_COMPILE="${VLLM_USE_AOT_COMPILE:-0}"
# Serve only what download.sh fetched at the pinned revision; never download at start.
export HF_HUB_OFFLINE=1

if [ ! -f "$MODEL_DIR/config.json" ]; then
  # `<script>: exit <code> (<reason>): ...` is the reason line `tqdeploy up` classifies a failed start by.
  echo "serve.sh: exit 66 (model-missing): $MODEL_DIR has no config.json" >&2
  echo "  fix: run ./download.sh, or mount the model directory at $MODEL_DIR, then start again" >&2
  exit 66
fi

API_KEY_FILE="${TQ_API_KEY_FILE:-/run/secrets/vllm-api-key}"
if [ ! -s "$API_KEY_FILE" ]; then
  echo "serve.sh: exit 67 (key-file): API key file $API_KEY_FILE is missing or empty" >&2
  echo "  fix: put the key in that file (compose secret or Kubernetes Secret); it never goes on the command line" >&2
  exit 67
fi
# launch_vllm.py reads the key from this file into the API server's parsed arguments: never into argv (`ps`),
# the log, or the environment, which every vLLM process inherits and which vLLM 0.25.0 hashes, VLLM_API_KEY
# included, into the compile-cache key and writes to cache_key_factors.json on the cache volume.
export TQ_API_KEY_FILE="$API_KEY_FILE"
unset VLLM_API_KEY
HERE="$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)"

mkdir -p "$VLLM_CACHE_ROOT" "$HF_HOME" \
  "${TRITON_CACHE_DIR}" \
  "${TORCHINDUCTOR_CACHE_DIR}" \
  "${FLASHINFER_WORKSPACE_BASE}" \
  "${CUDA_CACHE_PATH}" \
  "${CUTE_DSL_CACHE_DIR}" \
  "${XDG_CACHE_HOME}"
exec python3 "$HERE/launch_vllm.py" "$MODEL_DIR" \
  --served-model-name smollm2-135m-instruct \
  --tensor-parallel-size 1 \
  --dtype bfloat16 \
  --max-model-len 2048 \
  --gpu-memory-utilization 0.3 \
  --host "$BIND_HOST" \
  --port 8000
