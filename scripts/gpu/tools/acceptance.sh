#!/usr/bin/env bash
# The GPU acceptance run (issue 17.5): README's "The same loop on a GPU host", as written and keyed, on one GPU
# with vLLM 0.25.0 (the newest whose wheel pins the torch the lent H200 has) and a real-weights checkpoint
# written to disk (scripts/gpu/tools/make_dense_weights.py: ~3.5 GB of bf16 in 4 shards; not --load-format dummy),
# served to `tqdeploy download --spec build/default` by the loopback Hub mirror (tests/support/hubmirror.py).
# Steps: doctor, build (creates the API key file), lint, download, up (cold), status, connect openai --check,
# profile --url --api-key-file --load (concurrency 1, 8, 64), bundle (key nowhere in it), down, then
# profile BUILD --start warm --load. Each step's exit code, seconds and output land in WORK/steps/; the summary
# (ready time, KV tokens real vs planned, tokens/s per load step, GPU memory after down) in OUT as
# summary.md + summary.json (scripts/gpu/tools/acceptance_summary.py).
#
# One device command runs at most 10 minutes, so the run is split in phases, each well under 9 minutes and
# resumable from WORK (default /tmp/tq-accept; TQ_ACCEPT_WORK): `up`'s detached supervisor survives between
# calls, as does the `up` this script starts with setsid. To start over: rm -rf WORK (after `tqdeploy down`).
#   acceptance.sh OUT prepare   vLLM check, weights, doctor, build, lint, download            (~2-4 min)
#   acceptance.sh OUT cold      `tqdeploy up` cold; waits up to TQ_ACCEPT_COLD_WAIT_S (480) s, exit 75 when
#                               still starting: call it again, it waits for the same start      (~7 min)
#   acceptance.sh OUT measure   status, connect --check, profile --url --load, bundle, down        (~2 min)
#   acceptance.sh OUT warm      profile BUILD --start warm --load, then the summary               (~3 min)
#   acceptance.sh OUT recreated a new API key, then up with an empty HOME and TMPDIR (issue 18: every cache on the
#                               volume, the key on no file of it, the compile cache still hit)   (~2 min)
#   acceptance.sh OUT summary   the summary alone (also on a checkout, from a copied WORK)
#   acceptance.sh OUT doc       on the checkout: the summary under OUT into docs/gpu-acceptance.md (date + commit)
# Every phase copies what it has (steps, JSON, the summary so far) into OUT, so each device call brings it back.
#
# On the lent H200 (each line one device call, timeout_s 600; vLLM 0.25.0's wheels installed into /tmp/site
# first, ENVIRONMENT.md "A real vLLM on the H200"; ~15 min of device time in all):
#   bash scripts/gpu/tools/acceptance.sh "$OUT" prepare
#   bash scripts/gpu/tools/acceptance.sh "$OUT" cold        # again while it exits 75 (still starting)
#   bash scripts/gpu/tools/acceptance.sh "$OUT" measure
#   bash scripts/gpu/tools/acceptance.sh "$OUT" warm        # OUT then holds summary.md and summary.json
# Then here, with the files of that last call:  scripts/gpu/tools/acceptance.sh FILES_AT doc  (and commit the doc)
# Needs: vLLM 0.25.0 importable from TQ_VLLM_SITE (default /tmp/site, `pip install --target`), torch with CUDA,
# safetensors and tokenizers (vLLM's dependencies), one free GPU, ports 18000 and 18090 free on 127.0.0.1.
set -u
out=${1:?usage: acceptance.sh OUT prepare|cold|measure|warm|summary|doc}
phase=${2:?usage: acceptance.sh OUT prepare|cold|measure|warm|summary|doc}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=${TQ_ACCEPT_WORK:-/tmp/tq-accept}
site=${TQ_VLLM_SITE:-/tmp/site}
export PYTHONPATH="$repo/tool:$site${PYTHONPATH:+:$PYTHONPATH}"
export TQDEPLOY_VLLM_PYTHON=python3 NO_COLOR=1
# The served checkpoint: the real demo model (SmolLM2-135M-Instruct from `tqdeploy demo-model`, its wheel carried as
# .xfer/smol/p*/whl.*), so `up`'s answers check judges real answers; TQ_ACCEPT_MODEL=dense8w serves
# make_dense_weights.py's random bf16 weights instead (start-up figures comparable with leases 1-9; `up --no-check`).
model=${TQ_ACCEPT_MODEL:-smollm2}
case $model in smollm2 | dense8w) ;; *) echo "acceptance: TQ_ACCEPT_MODEL $model: give smollm2 or dense8w" >&2; exit 2 ;; esac
repo_id=tqdeploy/$model mirror_port=${TQ_ACCEPT_MIRROR_PORT:-18090} vllm_want=0.25.0
build=build/default  # the README's folder, relative to $work (every step runs there, as the README does)
model_dir=$build/models/${repo_id/\//--}
load_args=(--load --concurrency "1,8,64" --requests 512 --duration 8 --prompt-tokens 256 --output-tokens 128
  --sample-interval 0.5)  # each step lasts >= ~2 s even at 64-way (H200: 5.8k tok/s at 32-way): >= 3 scrapes
tq() { python3 -m tqdeploy "$@"; }

# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"

summary() { python3 "$repo/scripts/gpu/tools/acceptance_summary.py" "$work" "$out"; }

collect() {  # what this phase has, into OUT (small files only: no weights, logs tailed)
  mkdir -p "$out"
  cp -r "$work/steps" "$out/" 2>/dev/null
  cp "$work"/*.json "$work"/*.txt "$out/" 2>/dev/null
  for p in profile-url profile-warm; do
    [ -d "$work/$p" ] && mkdir -p "$out/$p" && cp "$work/$p"/profile.* "$out/$p/" 2>/dev/null
  done
  local log="$work/$build/.tqdeploy/logs/server.log"
  [ -f "$log" ] && tail -c 300000 "$log" > "$out/server-log-tail.txt"
  [ -f "$work/up.json" ] && summary > /dev/null 2>&1
  true
}

step() {  # step NAME CMD...: run CMD in $work, record its exit code and seconds in steps/NAME.json
  local name=$1 t0 rc
  shift
  t0=$(date +%s.%N)
  (cd "$work" && "$@") > "$work/steps/$name.out" 2> "$work/steps/$name.err"
  rc=$?
  record "$name" "$rc" "$t0" "$(date +%s.%N)"
  if [ "$rc" -eq 0 ]; then echo "$name: exit 0" >&2; else
    echo "$name: exit $rc: $(tail -c 300 "$work/steps/$name.err" | tail -1)" >&2
  fi
  return "$rc"
}

record() {  # record NAME RC T0 T1
  printf '{"step": "%s", "rc": %s, "started_at": %s, "seconds": %s}\n' "$1" "$2" "$3" \
    "$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$3" "$4")" \
    > "$work/steps/$1.json"
}

gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }

leftovers() {  # VLLM:: processes still alive (the EngineCore outliving its API server is the classic leak)
  pgrep -af 'VLLM::' || true
}

start_mirror() {  # the checkpoint as a Hub repository on loopback, so `download --spec` runs for real
  local stub=""
  if ! python3 -c 'import pytest' 2>/dev/null; then  # hubmirror.py defines pytest fixtures; none run here
    stub="$work/stub"
    mkdir -p "$stub"
    printf 'def fixture(*a, **k):\n    return a[0] if a and callable(a[0]) else (lambda f: f)\n' > "$stub/pytest.py"
  fi
  PYTHONPATH="${stub:+$stub:}$PYTHONPATH" setsid python3 "$repo/tests/support/hubmirror.py" --root "$work/src/$model" \
    --repo-id "$repo_id" --port "$mirror_port" > "$work/mirror.log" 2>&1 < /dev/null &
  echo $! > "$work/mirror.pid"
  for _ in $(seq 1 240); do  # it hashes every file before it listens (~3.5 GB)
    grep -q '^PORT ' "$work/mirror.log" 2>/dev/null && return 0
    kill -0 "$(cat "$work/mirror.pid")" 2>/dev/null || break
    sleep 1
  done
  echo "the loopback Hub mirror did not start: $(tail -3 "$work/mirror.log")" >&2
  return 1
}

stop_mirror() {
  [ -f "$work/mirror.pid" ] && kill "$(cat "$work/mirror.pid")" 2>/dev/null
  rm -f "$work/mirror.pid"
}

phase_prepare() {
  mkdir -p "$work/steps"
  local have
  have=$(python3 -c 'import vllm; print(vllm.__version__)' 2>/dev/null | tail -1)
  if [ "$have" != "$vllm_want" ]; then
    echo "acceptance: vLLM $vllm_want is not importable from $site (found: ${have:-none})" >&2
    echo "  fix: install its wheels with pip install --no-index --no-deps --target $site (docs: ENVIRONMENT.md)" >&2
    return 2
  fi
  python3 - "$work/meta.json" "$have" "$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, subprocess, sys, time
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout.strip()
except (OSError, subprocess.SubprocessError) as err:
    gpu = f"unknown ({err})"
json.dump({"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "vllm": sys.argv[2],
           "commit": sys.argv[3], "gpu": gpu}, open(sys.argv[1], "w"), indent=1)
PY
  if [ ! -f "$work/src/$model/config.json" ] && [ "$model" = smollm2 ]; then
    [ -f "$work/smollm2.whl" ] || cat "$repo"/.xfer/smol/p*/whl.* > "$work/smollm2.whl" || return 1
    step weights tq demo-model --wheel "$work/smollm2.whl" --to "$work/src/$model" --json || return 1
  elif [ ! -f "$work/src/$model/config.json" ]; then
    step weights python3 "$repo/scripts/gpu/tools/make_dense_weights.py" "$work/src/$model" || return 1
  fi
  step doctor tq doctor --json  # exit 1 (warnings/errors on this host) is recorded, not fatal
  start_mirror || return 1
  gpu_spec "$model" "$model" 32768 'kv_cache_dtype = "turboquant_k8v4"' "" \
    'api_key_file = "./secrets/vllm-api-key"' \
    "repo = \"$repo_id\"
revision = \"main\"
mirrors = [\"http://127.0.0.1:$mirror_port\"]" > "$work/tqdeploy.toml"
  step build tq build tqdeploy.toml --out "$build" || { stop_mirror; return 1; }
  step lint tq lint --file "$build/serve.sh" --json --no-live
  step download tq download --spec "$build" --json
  local rc=$?
  stop_mirror
  # The download left the shards in the page cache: drop them (files tqdeploy wrote), so the cold start reads disk.
  python3 -c 'import sys, pathlib; from tqdeploy.profile.diskread import drop_own_file_from_page_cache as d
[d(p) for p in pathlib.Path(sys.argv[1]).glob("*.safetensors")]' "$work/$model_dir"
  du -sb "$work/$model_dir" > "$work/model-size.txt" 2>/dev/null
  return "$rc"
}

phase_cold() {
  mkdir -p "$work/steps"
  if [ ! -f "$work/up.t0" ]; then
    gpu_mem > "$work/gpu-mem-before-up.txt"
    du -sh ~/.cache/flashinfer ~/.triton ~/.cache/vllm > "$work/caches-before-cold.txt" 2>&1
    date +%s.%N > "$work/up.t0"
    # setsid: the device call may end before vLLM is ready; the next `cold` call waits for the same start.
    # random weights answer garbage: only the real model's start includes up's answers check
    local check=--check
    [ "$model" = dense8w ] && check=--no-check
    # shellcheck disable=SC2016  # $1 $2 are expanded by the inner bash: the build folder and the check flag
    (cd "$work" && setsid bash -c 'python3 -m tqdeploy up "$1" --python python3 --json --timeout 900 "$2" \
      > up.json 2> up.err; echo $? > up.rc; date +%s.%N > up.t1' _ "$build" "$check" < /dev/null > /dev/null 2>&1 &)
  fi
  local waited=0 limit=${TQ_ACCEPT_COLD_WAIT_S:-480}
  while [ ! -f "$work/up.t1" ] && [ "$waited" -lt "$limit" ]; do
    sleep 10
    waited=$((waited + 10))
    [ $((waited % 60)) -eq 0 ] && echo "cold: ${waited}s, $(tail -c 200 "$work/up.err" | tr '\r' '\n' | tail -1)" >&2
  done
  if [ ! -f "$work/up.t1" ]; then
    echo "cold: still starting after this call's ${limit}s: run the cold phase again" >&2
    return 75
  fi
  cp "$work/up.json" "$work/steps/up-cold.out" 2>/dev/null
  cp "$work/up.err" "$work/steps/up-cold.err" 2>/dev/null
  record up-cold "$(cat "$work/up.rc")" "$(cat "$work/up.t0")" "$(cat "$work/up.t1")"
  echo "up (cold): exit $(cat "$work/up.rc")" >&2
  return "$(cat "$work/up.rc")"
}

phase_measure() {
  local chart=--no-chart log
  python3 -c 'import matplotlib' 2>/dev/null && chart=--chart
  log=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["log_path"])' "$work/up.json")
  step status tq status "$build" --json
  step connect tq connect openai "$build" --check --json
  step check tq check "$build" --json  # the answers again, after up's own check: a second ask of every prompt
  step profile-url tq profile --url http://127.0.0.1:18000 --api-key-file "$build/secrets/vllm-api-key" \
    --log "$log" --model "$model_dir" "${load_args[@]}" --out profile-url "$chart" --json
  step bundle tq bundle "$build" --out bundle.tar.gz --json
  step bundle-key-check python3 -c 'import sys, tarfile
key = open(sys.argv[2], "rb").read().strip()
with tarfile.open(sys.argv[1]) as t:
    leaked = [m.name for m in t.getmembers() if m.isfile() and key in t.extractfile(m).read()]
print("key found in:", leaked) if leaked else print("key in no member of", sys.argv[1])
sys.exit(1 if leaked else 0)' bundle.tar.gz "$build/secrets/vllm-api-key"
  step down tq down "$build" --json
  sleep 2
  gpu_mem > "$work/gpu-mem-after-down.txt"
  leftovers > "$work/leftovers-after-down.txt"
}

phase_warm() {
  local chart=--no-chart
  python3 -c 'import matplotlib' 2>/dev/null && chart=--chart
  step profile-warm tq profile "$build" --start warm "${load_args[@]}" --out profile-warm "$chart" --json
  sleep 2
  gpu_mem > "$work/gpu-mem-after-warm.txt"
  leftovers > "$work/leftovers-after-warm.txt"
  summary
}

phase_recreated() {  # issue 18 on the same build: rotate the key, then start as a recreated container would
  local home="$work/home-empty" tmp="$work/tmp-empty" key="$build/secrets/vllm-api-key" old t0 rc log
  rm -rf "$home" "$tmp" && mkdir -p "$home" "$tmp"
  old=$(cat "$work/$key")
  grep -rlF -- "$old" "$work/$build/.tqdeploy/cache" > "$work/key-files-on-volume-before.txt" 2>/dev/null
  python3 -c 'import secrets, sys; open(sys.argv[1], "w").write(secrets.token_urlsafe(32) + "\n")' "$work/$key"
  t0=$(date +%s.%N)
  (cd "$work" && HOME="$home" TMPDIR="$tmp" python3 -m tqdeploy up "$build" --python python3 --json --timeout 500 \
    > up-recreated.json 2> up-recreated.err)
  rc=$?
  record up-recreated "$rc" "$t0" "$(date +%s.%N)"
  log=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["log_path"])' "$work/up-recreated.json")
  grep -E "torch.compile take|Directly load|Compiling a graph|autotun|Graph capturing finished|init engine" "$log" \
    | cut -d'|' -f2- | cut -c1-220 > "$work/recreated-log-lines.txt"
  (cd "$work" && python3 -m tqdeploy down "$build" --json > down-recreated.json 2>&1)
  grep -rlF -- "$old" "$work/$build/.tqdeploy/cache" > "$work/old-key-files-on-volume.txt" 2>/dev/null
  grep -rlF -- "$(cat "$work/$key")" "$work/$build/.tqdeploy/cache" > "$work/new-key-files-on-volume.txt" 2>/dev/null
  (cd "$home" && find . -type f | head -50; cd "$tmp" && find . -type f | head -50) > "$work/recreated-home-tmp-files.txt"
  du -sh "$work/$build/.tqdeploy/cache"/* > "$work/cache-volume-du.txt" 2>&1
  return "$rc"
}

phase_doc() {  # on the checkout, after the device run: OUT holds summary.md (the files the device sent back)
  python3 "$repo/scripts/gpu/tools/acceptance_summary.py" --doc "$out" "$repo/docs/gpu-acceptance.md" \
    --commit "$(git -C "$repo" rev-parse --short HEAD)"
}

case $phase in
  prepare | cold | measure | warm | recreated)
    mkdir -p "$work/steps"
    "phase_$phase"
    rc=$?
    collect
    exit "$rc"
    ;;
  summary) summary ;;
  doc) phase_doc ;;
  *)
    echo "acceptance: unknown phase $phase (prepare, cold, measure, warm, summary, doc)" >&2
    exit 2
    ;;
esac
