#!/usr/bin/env bash
# RECORD (kept for provenance, not a tool): run 2026-12-01 on lent one-GPU H200s (the -2 folders: a second
# machine) with vLLM 0.25.0; it made tests/fixtures/gpu-runs/h200-vllm-0.25.0/{bf16,tq}-{cold,warm}*, kvsmall-cold
# (that folder's README), cited by docs/profile.md and docs/facts.md (bf16-cold, bf16-warm: the H200's start phases).
# Records real `tqdeploy up / status / down` runs on a GPU host (vLLM 0.25.0 on an H200), for the
# fixtures under tests/fixtures/gpu-runs/: the stamped server logs, up/status/down JSON, /metrics and
# nvidia-smi memory before and after. profile's timelines are built from these logs in the tests.
#
# Needs: vLLM 0.25.0 importable (PYTHONPATH, its console scripts on PATH), transformers + tokenizers,
# one free GPU. Model: "dense8" (Llama-style, 8 layers, 8 heads, 2 KV heads, head_dim 128) with dummy
# weights, the shape of the earlier dense-*.log fixtures.
# Usage: record_up_profile.sh OUT_DIR CASE...   CASE: bf16 | tq (turboquant_4bit_nc) | kvsmall
set -u
out=${1:?usage: record_up_profile.sh OUT_DIR CASE...}; shift
repo=$(cd "$(dirname "$0")/../../.." && pwd)
tq() { python3 -m tqdeploy "$@"; }
export PYTHONPATH="$repo/tool${PYTHONPATH:+:$PYTHONPATH}"
work=/tmp/tq-gpu; mkdir -p "$work" "$out"

make_model() {  # $1: model dir
  [ -f "$1/config.json" ] && return
  python3 "$repo/scripts/gpu/tools/make_dense8.py" "$1"
}

# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"

gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }

run_case() {  # $1 case, $2 label (cold|warm)
  local c=$1 b="$work/$1" o="$out/$1-$2"  # $2: cold | warm, the folder name only
  mkdir -p "$o"
  if [ ! -f "$b/tqdeploy.lock.json" ]; then
    case $c in
      bf16) gpu_spec dense8-bf16 dense8 32768 "" '"--load-format", "dummy"' > "$work/$c.toml" ;;
      tq) gpu_spec dense8-tq dense8 32768 'kv_cache_dtype = "turboquant_4bit_nc"' '"--load-format", "dummy"' > "$work/$c.toml" ;;
      kvsmall) gpu_spec dense8-kvsmall dense8 32768 "" '"--load-format", "dummy", "--kv-cache-memory-bytes", "100000000"' \
        > "$work/$c.toml" ;;
    esac
    tq build "$work/$c.toml" --out "$b" > "$o/build.txt" 2>&1
    make_model "$b/models/dense8"
  fi
  gpu_mem > "$o/gpu-mem-before.txt"
  local t0; t0=$(date +%s.%N)
  tq up "$b" --python python3 --json --timeout 540 > "$o/up.json" 2> "$o/up.stderr"
  echo "up rc=$? wall=$(python3 -c "import time;print(round(time.time()-$t0,1))")" | tee "$o/summary.txt"
  if grep -q '"ready"' "$o/up.json"; then
    python3 - "$o" <<'PY' >> "$o/summary.txt"
import json, sys, time, urllib.request
body = json.dumps({"model": "dense8", "prompt": "The quick brown fox", "max_tokens": 16}).encode()
t = time.time()
req = urllib.request.Request("http://127.0.0.1:18000/v1/completions", body, {"Content-Type": "application/json"})
print("completion:", urllib.request.urlopen(req, timeout=60).read()[:300], round(time.time() - t, 2), "s")
open(sys.argv[1] + "/metrics.txt", "wb").write(urllib.request.urlopen("http://127.0.0.1:18000/metrics", timeout=10).read())
PY
  fi
  tq status "$b" --json > "$o/status.json" 2>&1
  tq down "$b" --json > "$o/down.json" 2>&1; echo "down rc=$?" >> "$o/summary.txt"
  sleep 2; gpu_mem > "$o/gpu-mem-after.txt"
  cp -r "$b/.tqdeploy/logs" "$o/logs" 2>/dev/null
  pgrep -af 'VLLM::' >> "$o/summary.txt" && echo "LEFTOVER VLLM processes" >> "$o/summary.txt"
  cat "$o/summary.txt"
}

for arg in "$@"; do
  case $arg in
    *-warm) run_case "${arg%-warm}" warm ;;
    *) run_case "$arg" cold ;;
  esac
done
