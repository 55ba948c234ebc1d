#!/usr/bin/env bash
# RECORD (kept for provenance, not a tool): run once, 2026-11-29, on the lent one-GPU H200 with vLLM 0.25.0; it
# made tests/fixtures/vllm-logs/h200-vllm-0.25.0/dense-*-eager.log (that folder's README), whose figures
# docs/plan.md and docs/facts.md cite (bytes per token of each KV dtype, the planner's calibration).
# Records real vLLM start-up logs on a GPU host for the planner's calibration tests
# (tests/fixtures/vllm-logs/h200-vllm-0.25.0/dense-<dtype>-eager.log).
#
# Needs: vLLM 0.25.0 importable (PYTHONPATH), transformers + tokenizers, one free GPU.
# Model: "dense8" (Llama-style, 8 layers, 8 heads, 2 KV heads, head_dim 128, bf16) with dummy weights,
# the same shape as the recorded dense-*.log fixtures. Usage: record_kv_logs.sh OUT_DIR DTYPE...
set -u
out=${1:?usage: record_kv_logs.sh OUT_DIR DTYPE...}; shift
here=$(cd "$(dirname "$0")/../../.." && pwd)
model=/tmp/dense8
python3 "$here/scripts/gpu/tools/make_dense8.py" "$model"
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1" 2>/dev/null; }
for dtype in "$@"; do
  log="$out/dense-$dtype-eager.log"
  setsid python3 -m vllm.entrypoints.openai.api_server --model "$model" --load-format dummy \
    --max-model-len 32768 --gpu-memory-utilization 0.9 --enforce-eager --kv-cache-dtype "$dtype" \
    --host 127.0.0.1 --port 18000 > "$log" 2>&1 &
  pid=$!
  t0=$(date +%s)
  while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt 240 ]; do
    if get http://127.0.0.1:18000/health >/dev/null; then
      echo "healthy after $(( $(date +%s) - t0 )) s" >> "$log.status"; break
    fi
    sleep 2
  done
  get http://127.0.0.1:18000/metrics > "$out/dense-$dtype-eager.metrics.txt"
  # stop the whole process group: the EngineCore child holds the GPU memory
  kill -TERM -- -"$pid" 2>/dev/null; sleep 5; kill -KILL -- -"$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  grep -h -E "KV cache|Maximum concurrency|TQ|backend" "$log" | head -8
done
