#!/usr/bin/env bash
# `tqdeploy tune` on the lent H200 (issue 37 item 4): a keyed build of a GPU-bound checkpoint (dense32w:
# make_dense_weights.py --layers 32, Llama-3-8B-shaped random bf16, about 14 GB, so a decode step reads the weights
# and the KV cache rather than waiting on the host) at one context length, every KV dtype measured by the real
# `tqdeploy tune`: capacity, the concurrency sweep, goodput under the targets, and the answer check (random weights:
# the check's verdict means nothing here; docs/turboquant-on-h200.md takes answer quality from answers.sh's run of
# the real demo model).
#
# One device call runs at most 10 minutes, so `run` is stopped by SIGTERM after TQ_TUNE_CALL_S (default 500) and
# exits 75: tune keeps each finished dtype's result with its fingerprint, and the next call resumes where it stopped.
#   tune.sh OUT weights   the checkpoint (~1-2 min), shared by every context
#   tune.sh OUT run       build for TQ_TUNE_CONTEXT (default 8192) and tune it; 75: call again
#   tune.sh OUT table     OUT/tune-CONTEXT.txt and .json again, from the results kept
# Needs: vLLM importable from TQ_VLLM_SITE (default /tmp/site), one free GPU, port 18200 free on 127.0.0.1.
set -u
out=${1:?usage: tune.sh OUT weights|run|table}
phase=${2:?usage: tune.sh OUT weights|run|table}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=${TQ_TUNE_WORK:-/tmp/tq-tune}
site=${TQ_VLLM_SITE:-/tmp/site}
context=${TQ_TUNE_CONTEXT:-8192}
export PYTHONPATH="$repo/tool:$site${PYTHONPATH:+:$PYTHONPATH}"
export TQDEPLOY_VLLM_PYTHON=python3 NO_COLOR=1
tq() { python3 -m tqdeploy "$@"; }
dir=$work/ctx$context
# The workload: prompts of a quarter of the context, 256 tokens out, a sweep up to what each dtype's cache holds at
# the context (at most 128 at once); each step 128 requests or 20 s, whichever ends first. Targets: an interactive
# service (p99 TTFT 5 s, p99 inter-token 100 ms).
sweep=1,32,max
dtypes=${TQ_TUNE_DTYPES:-auto,fp8,turboquant_k8v4,turboquant_4bit_nc,turboquant_k3v4_nc,turboquant_3bit_nc}
tune_args=(--dtypes "$dtypes"
  --prompt-tokens $((context / 4)) --output-tokens 256 --concurrency "$sweep" --max-concurrency 128
  --requests 128 --step-seconds 20 --context "$context" --ttft-p99 5 --itl-p99 0.1 --check-timeout 90)

# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"

phase_weights() {
  mkdir -p "$work/models"
  [ -f "$work/models/dense32w/config.json" ] && return 0
  python3 "$repo/scripts/gpu/tools/make_dense_weights.py" "$work/models/dense32w" --layers 32 | tee "$out/model.txt"
}

phase_run() {
  [ -f "$work/models/dense32w/config.json" ] || { echo "tune: run the weights phase first" >&2; return 2; }
  mkdir -p "$dir"
  if [ ! -d "$dir/build" ]; then
    gpu_spec "tune-ctx$context" dense32w "$context" "" '"--enforce-eager"' \
      'api_key_file = "./secrets/vllm-api-key"' | sed "s/^port = 18000/port = 18200/" > "$dir/tqdeploy.toml"
    (cd "$dir" && tq build tqdeploy.toml --out build > build.out 2>&1) || { tail -3 "$dir/build.out" >&2; return 1; }
  fi
  # spec paths are relative to the build folder: the weights go there as hard links (same disk, no copy)
  [ -e "$dir/build/models/dense32w" ] || { mkdir -p "$dir/build/models" && cp -al "$work/models/dense32w" "$dir/build/models/"; }
  (cd "$dir" && timeout -s TERM "${TQ_TUNE_CALL_S:-500}" python3 -m tqdeploy tune build "${tune_args[@]}" --json \
    > "tune.json" 2> "tune.err")
  local rc=$?
  tail -n 40 "$dir/tune.err" >&2
  phase_table
  case $rc in
    124 | 143) echo "tune: this call's time is spent: run the run phase again" >&2; return 75 ;;
    *) return "$rc" ;;
  esac
}

phase_table() {  # the human table from the kept results (no start: every dtype is reused)
  mkdir -p "$out"
  [ -f "$dir/tune.json" ] && cp "$dir/tune.json" "$out/tune-$context.json"
  [ -f "$dir/build/.tqdeploy/tune/tune.png" ] && cp "$dir/build/.tqdeploy/tune/tune.png" "$out/tune-$context.png"
  (cd "$dir" && tar -czf "$out/tune-$context-results.tar.gz" build/.tqdeploy/tune/results tune.err \
    build/.tqdeploy/tune/*/.tqdeploy/logs 2>/dev/null)
  true
}

mkdir -p "$out"
case $phase in
  weights) phase_weights ;;
  run) phase_run ;;
  table) phase_table ;;
  *)
    echo "tune.sh: unknown phase $phase: give weights, run or table" >&2
    exit 2
    ;;
esac
