#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec qwen36-multinode (sha256 1c0f35a07cf4c4a6ed052e2fd9137a61836ee771b7f3952c95a9dc0c286e01ee).
# Edit the spec and run `tqdeploy build` again; tqdeploy.lock.json records this file's hash.
#
# Starts vLLM 0.32.0 with the flags `tqdeploy build` validated against vLLM's own parser.
# Overrides (environment): TQ_MODEL_DIR, TQ_BIND_HOST, TQ_API_KEY_FILE, TQ_ROLE (leader|worker), TQ_NODE_RANK, TQ_MASTER_ADDR, TQ_MASTER_PORT.
set -eu

MODEL_DIR="${TQ_MODEL_DIR:-/models/Qwen--Qwen3.6-27B}"
# The spec's address by default. Inside a container compose/k8s set 0.0.0.0 and publish the port on
# the spec's address instead (a container bound to loopback cannot be reached through a published port).
BIND_HOST="${TQ_BIND_HOST:-0.0.0.0}"

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
# Startup plan (vllm/envs.py VLLM_ENABLE_STARTUP_PLAN, vllm/v1/worker/startup_plan.py): each GPU worker saves
# its memory-profiling result under $VLLM_CACHE_ROOT/startup_plan/ and a later boot skips profiling only when
# the fingerprint (vLLM version, config, GPU, torch/CUDA, rank) matches and free memory is at least the
# recorded baseline; otherwise it profiles again. Not part of the compile-cache key. Set it to 0 to turn it off.
export VLLM_ENABLE_STARTUP_PLAN="${VLLM_ENABLE_STARTUP_PLAN:-1}"
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
# This node's rank and the leader's address (multinode.sh, beside this file); every node loads its pipeline
# stage's weights from $MODEL_DIR, checked above. The node flags end the exec line ("$@").
# shellcheck source=/dev/null
. "$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)/multinode.sh"
exec python3 "$HERE/launch_vllm.py" "$MODEL_DIR" \
  --served-model-name qwen3.6-27b \
  --tensor-parallel-size 8 \
  --kv-cache-dtype turboquant_4bit_nc \
  --max-model-len 131072 \
  --max-num-seqs 64 \
  --gpu-memory-utilization 0.9 \
  --pipeline-parallel-size 2 \
  --distributed-executor-backend mp \
  --enable-prefix-caching \
  --host "$BIND_HOST" \
  --port 8100 \
  "$@"
