#!/usr/bin/env bash
# RECORD (kept for provenance, not a tool): run once, 2026-12-01, on the lent one-GPU H200 with vLLM 0.25.0; it
# made tests/fixtures/gpu-runs/h200-vllm-0.25.0/{bf16,tq}-warm-load, whose figures (KV bytes per token real
# against planned) that folder's README gives; the profile tests replay them.
# After record_up_profile.sh: a warm `tqdeploy up` of each recorded build, `tqdeploy profile --url ... --load`
# against it (bounded load on 127.0.0.1) and `tqdeploy profile --log` of its stamped log, then `down`.
# Usage: record_load.sh OUT_DIR CASE...   (CASE: bf16 | tq, built by record_up_profile.sh)
set -u
out=${1:?usage: record_load.sh OUT_DIR CASE...}; shift
repo=$(cd "$(dirname "$0")/../../.." && pwd)
export PYTHONPATH="$repo/tool${PYTHONPATH:+:$PYTHONPATH}"
tq() { python3 -m tqdeploy "$@"; }
for c in "$@"; do
  b=/tmp/tq-gpu/$c o="$out/$c-load"; mkdir -p "$o"
  tq up "$b" --python python3 --json --timeout 300 > "$o/up.json" 2> "$o/up.stderr"; echo "$c up rc=$?"
  python3 -c 'import matplotlib' 2>/dev/null && chart=--chart || chart=--no-chart
  tq profile --url http://127.0.0.1:18000 --model "$b/models/dense8" --load --concurrency 1,8,32 \
    --requests 48 --prompt-tokens 256 --output-tokens 64 --out "$o" "$chart" --json > "$o/profile-load.json" \
    2> "$o/profile-load.stderr"; echo "$c profile --load rc=$?"
  tq profile --log "$b/.tqdeploy/logs/server.log" --model "$b/models/dense8" --out "$o/log" "$chart" --json \
    > "$o/profile-log.json" 2> "$o/profile-log.stderr"; echo "$c profile --log rc=$?"
  tq down "$b" --json > "$o/down.json" 2>&1; echo "$c down rc=$?"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits > "$o/gpu-mem-after.txt"
done
