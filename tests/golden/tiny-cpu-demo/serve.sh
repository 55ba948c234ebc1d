#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo (sha256 879c7da8badd1b7e194e1a2998d075b345d674709441bf7eb2ae86ffbd5151c0).
# Edit the spec and run `tqdeploy build` again; tqdeploy.lock.json records this file's hash.
#
# Starts vLLM 0.32.0 with the flags `tqdeploy build` validated against vLLM's own parser.
# Overrides (environment): TQ_MODEL_DIR, TQ_BIND_HOST, TQ_API_KEY_FILE.
set -eu

MODEL_DIR="${TQ_MODEL_DIR:-/models/tiny}"
# The spec's address by default. Inside a container compose/k8s set 0.0.0.0 and publish the port on
# the spec's address instead (a container bound to loopback cannot be reached through a published port).
BIND_HOST="${TQ_BIND_HOST:-127.0.0.1}"

# Compile cache and Hugging Face cache on persistent volumes, so a restart reuses compiled graphs
# (vLLM docs/deployment/docker.md). The cache key includes the environment: keep it stable.
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-/cache/vllm}"
export HF_HOME="${HF_HOME:-/cache/huggingface}"
# vLLM 0.32.0's CPU build cannot load the AOT artefact it saves ("Compiling model again due to a load
# failure ... finalize_loading", vllm/compilation/decorators.py) and compiles again on every start. With AOT
# compile off (vllm/envs.py VLLM_USE_AOT_COMPILE) it reuses inductor's own cache, kept on the cache volume
# (torch's default is /tmp/torchinductor_$USER). Measured on the tiny demo: warm compile 7.6 s -> 3.7 s.
export VLLM_USE_AOT_COMPILE="${VLLM_USE_AOT_COMPILE:-0}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$VLLM_CACHE_ROOT/torchinductor}"
# Serve only what download.sh fetched at the pinned revision; never download at start.
export HF_HUB_OFFLINE=1

if [ ! -f "$MODEL_DIR/config.json" ]; then
  echo "serve.sh: model missing: $MODEL_DIR has no config.json" >&2
  echo "  fix: run ./download.sh, or mount the model directory at $MODEL_DIR, then start again" >&2
  exit 66
fi

API_KEY_FILE="${TQ_API_KEY_FILE:-/run/secrets/vllm-api-key}"
if [ ! -s "$API_KEY_FILE" ]; then
  echo "serve.sh: API key file $API_KEY_FILE is missing or empty" >&2
  echo "  fix: put the key in that file (compose secret or Kubernetes Secret); it never goes on the command line" >&2
  exit 67
fi
# vLLM reads VLLM_API_KEY when --api-key is absent (vllm/entrypoints/serve/middleware/register.py),
# so the key stays out of argv, `ps` and vLLM's "non-default args" log line.
VLLM_API_KEY="$(cat "$API_KEY_FILE")"
export VLLM_API_KEY

mkdir -p "$VLLM_CACHE_ROOT" "$HF_HOME"
exec python3 -m vllm.entrypoints.openai.api_server --model "$MODEL_DIR" \
  --served-model-name tiny \
  --tensor-parallel-size 1 \
  --dtype bfloat16 \
  --max-model-len 512 \
  --gpu-memory-utilization 0.3 \
  --host "$BIND_HOST" \
  --port 8000
