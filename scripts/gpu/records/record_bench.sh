#!/usr/bin/env bash
# RECORD (kept for provenance, not a tool): written 2026-12-01 (commit 9b9c675) for the lent H200 with vLLM 0.25.0.
# Its outputs were not committed as fixtures and no doc cites them: docs/profile.md's `make bench` figures are
# the CPU machine's. Kept because bench/profile.py's URL mode (TQDEPLOY_BENCH_URL, ...) exists for it.
# Records two things on a GPU host (vLLM 0.25.0 on the H200), for tests/fixtures/gpu-runs/:
#   weights  `tqdeploy profile BUILD --start both` of "dense8w" (make_dense_weights.py: 3.5 GB of real bf16
#            weights, dropped from the page cache after writing): the weights phase against the disk's own
#            O_DIRECT read rate and the page-cache residency that profile measures, cold then warm.
#   bench    `tqdeploy profile --load` against `vllm bench serve` (vllm/benchmarks/serve.py of the same vLLM) on
#            the same warm server and load, rounds interleaved (python -m bench profile from the checkout, URL mode).
# Needs: vLLM 0.25.0 importable (PYTHONPATH), torch with CUDA, safetensors, tokenizers, one free GPU.
# Usage: record_bench.sh OUT_DIR weights|bench...
set -u
out=${1:?usage: record_bench.sh OUT_DIR weights|bench...}; shift
repo=$(cd "$(dirname "$0")/../../.." && pwd)
export PYTHONPATH="$repo/tool${PYTHONPATH:+:$PYTHONPATH}" TQDEPLOY_VLLM_PYTHON=python3 PYTHONUNBUFFERED=1
tq() { python3 -m tqdeploy "$@"; }
# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"
b=/tmp/tq-gpu/dense8w; mkdir -p "$out" /tmp/tq-gpu

build() {
  [ -f "$b/tqdeploy.lock.json" ] && return
  # the bench sends the same prompts round after round: cached prefills would favour whichever tool runs second
  gpu_spec dense8w dense8w 4096 "" '"--no-enable-prefix-caching"' > /tmp/tq-gpu/dense8w.toml
  tq build /tmp/tq-gpu/dense8w.toml --out "$b" > "$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
  python3 "$repo/scripts/gpu/tools/make_dense_weights.py" "$b/models/dense8w" | tee "$out/model.txt"
}

weights() {
  build
  local t0; t0=$(date +%s.%N)
  tq profile "$b" --start both --model "$b/models/dense8w" --out "$out/weights" --json \
    > "$out/weights/profile.json.stdout" 2> "$out/weights-profile.stderr"
  echo "profile --start both rc=$? wall=$(python3 -c "import time;print(round(time.time()-$t0,1))")"
  cp "$b"/.tqdeploy/logs/server-*.log "$out/weights/" 2>/dev/null
  pgrep -af 'VLLM::' && echo "LEFTOVER VLLM processes"
}

bench() {
  build
  tq up "$b" --json --timeout 400 > "$out/bench-up.json" 2> "$out/bench-up.stderr"; echo "up rc=$?"
  TQDEPLOY_BENCH_URL=http://127.0.0.1:18000 TQDEPLOY_BENCH_VLLM_PYTHON=python3 TQDEPLOY_BENCH_MODEL="$b/models/dense8w" \
    TQDEPLOY_BENCH_SERVED=dense8w TQDEPLOY_BENCH_CONCURRENCY="${BENCH_CONCURRENCY:-8}" TQDEPLOY_BENCH_INPUT=512 \
    TQDEPLOY_BENCH_OUTPUT=128 TQDEPLOY_BENCH_PROMPTS=64 TQDEPLOY_BENCH_ROUNDS=3 TQDEPLOY_BENCH_RAW="$out/bench-raw.json" \
    PYTHONPATH="$repo:$PYTHONPATH" python3 -m bench profile 2>&1 | tee "$out/bench.txt"
  # KV usage under load with enough requests per step for several /metrics samples at a 0.25 s period
  tq profile --url http://127.0.0.1:18000 --model "$b/models/dense8w" --load --concurrency 1,8,32 --requests 256 \
    --prompt-tokens 512 --output-tokens 128 --sample-interval 0.25 --out "$out/load" --json \
    > "$out/load/profile.json.stdout" 2> "$out/load-profile.stderr"; echo "profile --load rc=$?"
  tq down "$b" --json > "$out/bench-down.json" 2>&1; echo "down rc=$?"
  cp "$b"/.tqdeploy/logs/server.log "$out/bench-server.log" 2>/dev/null
  pgrep -af 'VLLM::' && echo "LEFTOVER VLLM processes"
}

mkdir -p "$out/weights" "$out/load"
for step in "$@"; do "$step"; done
