#!/usr/bin/env bash
# Measures start-up on a GPU host (vLLM 0.25.0 on the H200) for issue 18, one phase per device call (each well
# under 9 minutes; a call is at most 10): a keyed tqdeploy build of "dense8w" (make_dense_weights.py: real bf16
# weights; DENSE_LAYERS below) with turboquant_k8v4, max_model_len 16384, gpu_memory_utilization 0.9, started through
# `tqdeploy up`.
#   build       spec, build, weights, API key file (untimed)
#   cold        every cache empty: fresh HOME and TMPDIR, the build's cache volume removed
#   recreated   fresh HOME and TMPDIR, the cache volume kept: what a recreated container or pod sees
#   warm        HOME, TMPDIR and the cache volume kept
#   recreated-pair  one recreated start, then one warm start (run it 3 times: the 1.1x goal over alternated pairs)
#   rotate      a new API key, then a warm start: the compile cache must still hit, the key stay off the volume
#   plain-prime one plain `vllm serve` start (python3 -m vllm.entrypoints.cli.main serve), its own VLLM_CACHE_ROOT
#   pair        one plain warm start, then one tqdeploy warm start (run it 3 times: alternated pairs); each
#               ready server then gets the same load (profile --url --load: concurrency 1, 8, 64) for tokens/s
#   repeat-pair a pair whose servers each get the load twice: one server's own spread, a minute apart
#   ab          both servers up at once (build with GPU_MEMORY_UTILIZATION=0.45), tokens/s interleaved step by step
#               (paired_load.py): the within-2% verdict with its 95% interval; AB_FIRST=plain starts plain's first
#   ab-start, ab-load  ab in two calls: both servers started and left running, then loaded and stopped
#   spawn       a tqdeploy warm start with TQ_ENGINE_START=spawn (the EngineCore spawned, as vLLM's CLI does):
#               the forkserver lever switched off, with the same load
# TQ_ENGINE_START=forkserver|spawn in the environment picks how launch_vllm.py starts the EngineCore (recorded).
#   importtime  python -X importtime of what the API server and the EngineCore import (no GPU start)
#   report      OUT/startup.json + OUT/startup.md from the phases' records
#   save-volume the build's cache volume packed into VOLUME_OUT (volume_carry.py); CACHE_FROM=that folder on a
#               later lease unpacks it into the new build's empty volume, so its first start need not be cold
# Each timed start: seconds to ready (/health 200 and the served model in /v1/models), the sizes of what it left
# under HOME, TMPDIR and the cache volume, whether any file on the volume holds the key, the compile-cache lines.
# Needs: vLLM 0.25.0 importable by python3 (PYTHONPATH), torch with CUDA, safetensors, tokenizers, one free GPU.
# Usage: startup.sh OUT_DIR PHASE...   e.g. startup.sh /tmp/su build cold; then recreated warm; rotate; ...
set -u
out=${1:?usage: startup.sh OUT_DIR PHASE...}; shift
repo=$(cd "$(dirname "$0")/../../.." && pwd)
export PYTHONPATH="$repo/tool${PYTHONPATH:+:$PYTHONPATH}" TQDEPLOY_VLLM_PYTHON=python3 PYTHONUNBUFFERED=1
tq() { python3 -m tqdeploy "$@"; }
# shellcheck source=scripts/gpu/tools/spec.sh
. "$repo/scripts/gpu/tools/spec.sh"
work=/tmp/tq-startup
b=$work/build
# DENSE_LAYERS (default 8) picks the checkpoint: dense8w, or e.g. dense32w (make_dense_weights.py --layers 32, about
# 14 GB), whose decode steps leave the host CPU a smaller share (dense8w's EngineCore used a core per loaded second)
layers=${DENSE_LAYERS:-8}
model=dense${layers}w
plain_port=18001
# As acceptance.sh, so the figures compare; LOAD_SECONDS per step and LOAD_WARMUP untimed seconds before each step
# (two plain starts of one server differed 26% at concurrency 1 with 6-8 s steps and no warm-up: docs/startup.md).
# LOAD_CPUS (a CPU list as taskset takes it, e.g. 12-15) pins the load client to cores of its own, off the server's busiest ones.
load_args=(--load --concurrency "1,8,64" --requests 4096 --duration "${LOAD_SECONDS:-8}" --warmup "${LOAD_WARMUP:-0}"
  --prompt-tokens 256 --output-tokens 128 --sample-interval 0.5 --no-chart --json)
mkdir -p "$out" "$work"
records=$out/records.jsonl

fresh_dirs() {  # an empty HOME and TMPDIR, as a recreated container has
  rm -rf "${work:?}/home" "${work:?}/tmp"
  mkdir -p "$work/home" "$work/tmp"
}

build() {
  if [ -f "$b/tqdeploy.lock.json" ]; then
    [ -d "$b/models/$model" ] && return
    echo "build: $b serves another checkpoint than $model: one DENSE_LAYERS per machine" >&2
    exit 1
  fi
  gpu_spec "$model-keyed" "$model" 16384 'kv_cache_dtype = "turboquant_k8v4"' '' \
    'api_key_file = "./secrets/vllm-api-key"' > "$work/spec.toml"
  tq build "$work/spec.toml" --out "$b" > "$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
  [ -s "$b/secrets/vllm-api-key" ] || { echo "build created no API key file" >&2; exit 1; }  # build makes it
  python3 "$repo/scripts/gpu/tools/make_dense_weights.py" "$b/models/$model" --layers "$layers" | tee "$out/model.txt"
  fresh_dirs
  if [ -n "${CACHE_FROM:-}" ]; then  # a previous lease's volume (save-volume): the first start is then a recreated one
    python3 "$repo/scripts/gpu/tools/volume_carry.py" unpack "$CACHE_FROM" "$b/.tqdeploy/cache" | tee "$out/volume-restored.json"
  fi
}

save-volume() {  # the build's cache volume packed into VOLUME_OUT (parts of 15 MiB), for CACHE_FROM on the next lease
  build
  python3 "$repo/scripts/gpu/tools/volume_carry.py" pack "$b/.tqdeploy/cache" "${VOLUME_OUT:?save-volume: set VOLUME_OUT}" \
    --key-file "$b/secrets/vllm-api-key" \
    --gpu "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
}

# What a start left where: bytes per folder (du), for the record.
sizes() {
  python3 - "$work/home" "$work/tmp" "$b/.tqdeploy/cache" <<'PY'
import json, os, sys
def du(p):
    n = 0
    for root, dirs, files in os.walk(p):
        for f in files:
            try:
                n += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return n
out = {}
for top in sys.argv[1:]:
    if os.path.isdir(top):
        for name in sorted(os.listdir(top)):
            out[os.path.join(top, name)] = du(os.path.join(top, name))
print(json.dumps(out))
PY
}

key_on_volume() {  # files under the cache volume holding the key (0 is the goal)
  grep -rlF -f "$b/secrets/vllm-api-key" "$b/.tqdeploy/cache" 2>/dev/null | wc -l
}

record() {  # $1 phase, $2 runner, $3 seconds, $4 extra JSON object
  python3 - "$1" "$2" "$3" "$4" "$(sizes)" "$(key_on_volume)" >> "$records" <<'PY'
import json, sys
phase, runner, seconds, extra, sizes, key_files = sys.argv[1:]
row = {"phase": phase, "runner": runner, "seconds_to_ready": float(seconds) if seconds else None,
       "sizes": json.loads(sizes), "files_with_key_on_volume": int(key_files)}
row.update(json.loads(extra or "{}"))
print(json.dumps(row))
PY
  tail -1 "$records"
}

up_timed() {  # $1 phase: `tqdeploy up` with HOME/TMPDIR of $work, to ready, then down
  local t0 t1 log
  t0=$(date +%s.%N)
  HOME=$work/home TMPDIR=$work/tmp tq up "$b" --json --timeout 540 > "$out/$1-up.json" 2> "$out/$1-up.stderr"
  t1=$(date +%s.%N)
  log=$(readlink -f "$b/.tqdeploy/logs/server.log")
  ps -eo pid,ppid,pgid,args --no-headers | awk '/VLLM|forkserver|launch_vllm/ && !/awk/' | cut -c1-200 > "$out/$1-ps.txt"
  [ -n "${LOAD:-}" ] && load_on 18000 "$1" "$log"
  [ "${LOAD:-}" = 2 ] && load_on 18000 "$1-again" "$log"  # the same load again on the same server: its own spread
  cp "$log" "$out/$1-server.log" 2>/dev/null
  tq down "$b" --json > "$out/$1-down.json" 2>&1
  local compile
  compile=$(grep -cE "Directly load (the compiled graph|AOT compilation)" "$out/$1-server.log")
  record "$1" tqdeploy "$(python3 -c "print(round($t1 - $t0, 2))")" \
    "{$(load_figures "$1")\"engine_start\": \"${TQ_ENGINE_START:-rendered}\", \"up_status\": \"$(python3 -c "import json;print(json.load(open('$out/$1-up.json')).get('status'))" 2>/dev/null)\", \"compile_cache_hit_lines\": $compile, \"torch_compile_cache_dirs\": $(find "$b/.tqdeploy/cache/vllm/torch_compile_cache" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)}"
  # an exited EngineCore whose parent (the forkserver) went first waits for pid 1 to reap it: not a leftover
  ps -eo stat=,pid=,args= | awk '$1 !~ /^Z/ && /VLLM::/ && !/awk/' | grep . && echo "LEFTOVER VLLM processes"
}

cold() { build; fresh_dirs; rm -rf "${b:?}/.tqdeploy/cache"; up_timed cold; }
recreated() { build; fresh_dirs; up_timed recreated; }
warm() { build; up_timed warm; }
rotate() {
  build
  python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$b/secrets/vllm-api-key"
  up_timed rotate
}

plain_flags() {  # the build's vLLM flags, one per line (spec.vllm_flags, what serve.sh passes)
  python3 - "$work/spec.toml" <<'PY'
import sys
from tqdeploy.deployspec import load_spec
print("\n".join(load_spec(sys.argv[1]).vllm_flags()))
PY
}

plain_start() {  # $1 phase: plain `vllm serve` in a session of its own; sets plain_pid and plain_ready (s or "")
  # The same cache folders as the build's serve.sh (its cache exports; VLLM_WORKER_MULTIPROC_METHOD left to vLLM)
  # and the same HOME/TMPDIR, so one cold start of either warms both: the compile-cache key is the same (no VLLM_*
  # variable differs; the key goes in argv, as `vllm serve --api-key` users do, not in VLLM_API_KEY).
  local flags t0
  mapfile -t flags < <(plain_flags)
  t0=$(date +%s.%N)
  (
    export VLLM_CACHE_ROOT=$b/.tqdeploy/cache/vllm HF_HOME=$b/.tqdeploy/cache/huggingface HOME=$work/home TMPDIR=$work/tmp
    eval "$(grep -E '^export (TRITON|TORCHINDUCTOR|FLASHINFER|CUDA_CACHE|CUTE_DSL|XDG|HF_HUB_OFFLINE)' "$b/serve.sh")"
    unset VLLM_WORKER_MULTIPROC_METHOD VLLM_API_KEY
    exec setsid python3 -m vllm.entrypoints.cli.main serve "$b/models/$model" "${flags[@]}" \
      --api-key "$(cat "$b/secrets/vllm-api-key")" --host 127.0.0.1 --port $plain_port > "$out/$1-plain.log" 2>&1
  ) &
  plain_pid=$!
  # PLAIN_WAIT_S (default 520, at most 570: a call is 600 s) bounds the wait; a start not ready by then is stopped by
  # the caller, and what its cold start had cached by then stays on the volume for the next start
  plain_ready=$(python3 - "$plain_port" "$t0" "$plain_pid" "${PLAIN_WAIT_S:-520}" <<'PY'
import os, sys, time, urllib.request
port, t0, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
wait_s = min(max(float(sys.argv[4]), 10.0), 570.0)
while time.time() - t0 < wait_s:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
            print(round(time.time() - t0, 2))
            break
    except OSError:
        pass
    time.sleep(0.5)
PY
)
}

plain_stop() {  # the plain server's whole session: TERM, up to 60 s, then KILL
  kill -TERM -- -"$plain_pid" 2>/dev/null
  for _ in $(seq 60); do kill -0 "$plain_pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$plain_pid" 2>/dev/null
}

plain_timed() {  # $1 phase: plain `vllm serve` to ready, its loads (LOAD), stopped, recorded
  plain_start "$1"
  [ -n "$plain_ready" ] && [ -n "${LOAD:-}" ] && load_on $plain_port "$1" "$out/$1-plain.log"
  [ -n "$plain_ready" ] && [ "${LOAD:-}" = 2 ] && load_on $plain_port "$1-again" "$out/$1-plain.log"
  plain_stop
  local extra
  extra=$(load_figures "$1")
  record "$1" plain "$plain_ready" "{${extra%, }}"
}

pinned() {  # the command on LOAD_CPUS when set (sched_setaffinity, then exec: taskset without util-linux)
  if [ -z "${LOAD_CPUS:-}" ]; then "$@"; return; fi
  python3 -c 'import os, sys
cpus = set()
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    cpus.update(range(int(lo), int(hi or lo) + 1))
os.sched_setaffinity(0, cpus)
os.execvp(sys.argv[2], sys.argv[2:])' "$LOAD_CPUS" "$@"
}

load_on() {  # $1 port, $2 phase, $3 server log: the same load on a ready server, its profile.json kept
  pinned python3 -m tqdeploy profile --url "http://127.0.0.1:$1" --api-key-file "$b/secrets/vllm-api-key" --log "$3" \
    --model "$b/models/$model" "${load_args[@]}" --out "$work/load-$2" > "$out/$2-load.json" 2> "$out/$2-load.err"
}

load_figures() {  # $1 phase: '"tok_s": {...}, ' from its load (nothing when it had none)
  python3 - "$work/load-$1/profile.json" "${LOAD_CPUS:-}" <<'PY'
import json, sys
try:
    load = json.load(open(sys.argv[1]))["load"]
    steps, spec = load["steps"], load["spec"]
except (OSError, KeyError, TypeError, ValueError):
    sys.exit(0)
tok = {str(s["concurrency"]): s["output_tokens_per_s"] for s in steps}
errors = sum(s.get("errors") or 0 for s in steps)
shape = {"step_s": spec.get("duration_s"), "warmup_s": spec.get("warmup_s")}
shape["client_cpus"] = sys.argv[2] or None
print(f'"tok_s": {json.dumps(tok)}, "load_errors": {errors}, "load": {json.dumps(shape)}, ', end="")
PY
}

plain-prime() { build; plain_timed plain-prime; }
pair() { build; LOAD=1 plain_timed pair-plain; LOAD=1 up_timed pair-tqdeploy; }
recreated-pair() { build; recreated; warm; }

# tqdeploy's server and plain vLLM's up at once on the one GPU (build with GPU_MEMORY_UTILIZATION=0.45), the same
# load interleaved step by step (paired_load.py): tokens/s compared seconds apart, not a start apart (one server's
# own 15 s steps differed up to 34% a minute apart on the H200). AB_ROUNDS, AB_STEP and AB_WARMUP shape it;
# AB_FIRST (tqdeploy or plain) is whose server starts first (lease 6 started tqdeploy's first in both runs and saw it
# 3.7% faster: alternate it); AB_SECONDS bounds the load (paired_load.py --max-seconds) so the call ends in time.
# Beside each ab-N.json: ab-N-cpu.json, each server's CPU seconds per process name during the load, and the GPU's
# clocks before and after (what could make one server faster than the other).
ab() { ab-start; ab-load; }

# ab in two device calls: ab-start leaves both servers running (each in a session of its own, which outlives the
# call) and ab-load, the next call, loads them and stops them. With AB_FIRST=plain and no prime before it, the plain
# start is the cold one that fills the shared caches: one call less than plain-prime, ab.
ab-start() {
  build
  if ! grep -qE '^gpu_memory_utilization = 0\.4' "$work/spec.toml"; then
    echo "ab: build with GPU_MEMORY_UTILIZATION=0.45 (two servers share the GPU)" >&2
    return 1
  fi
  local n=1 first=${AB_FIRST:-tqdeploy}  # each ab run has its own ab-N files: the report pools them
  case $first in tqdeploy|plain) ;; *) echo "ab: AB_FIRST=$first: tqdeploy or plain" >&2; return 1 ;; esac
  while [ -e "$out/ab-$n.json" ] || [ -e "$out/ab-$n-up.json" ]; do n=$((n + 1)); done
  [ "$first" = plain ] && plain_start "ab-$n"
  HOME=$work/home TMPDIR=$work/tmp tq up "$b" --json --timeout 540 > "$out/ab-$n-up.json" 2> "$out/ab-$n-up.stderr"
  [ "$first" = tqdeploy ] && plain_start "ab-$n"
  record "ab-$n-start" plain "$plain_ready" "{\"started_first\": \"$first\"}"
  printf '%s %s %s %s\n' "$n" "$first" "$plain_pid" "${plain_ready:-none}" > "$work/ab-running"
}

ab-load() {
  local n first plain_ready tq_sid
  read -r n first plain_pid plain_ready < "$work/ab-running" || { echo "ab-load: no ab-start before it" >&2; return 1; }
  rm -f "$work/ab-running"
  # the deployment's session is its process group's (the supervisor's, state.json pgid), not the server's pid: lease 7
  # took pid and found no process of tqdeploy's in that session
  tq_sid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("pgid") or "")' \
    "$b/.tqdeploy/state.json" 2>/dev/null)
  if [ "$plain_ready" != none ] && [ -n "$tq_sid" ]; then
    cpu_snapshot "$tq_sid" "$plain_pid" > "$work/cpu-before.json"
    pinned python3 "$repo/scripts/gpu/tools/paired_load.py" http://127.0.0.1:18000 "http://127.0.0.1:$plain_port" \
      --labels tqdeploy,plain --api-key-file "$b/secrets/vllm-api-key" --rounds "${AB_ROUNDS:-6}" \
      --duration "${AB_STEP:-5}" --warmup "${AB_WARMUP:-1}" --started-first "$first" \
      ${AB_SECONDS:+--max-seconds "$AB_SECONDS"} --out "$out/ab-$n.json" | tee "$out/ab-$n.txt"
    cpu_snapshot "$tq_sid" "$plain_pid" > "$work/cpu-after.json"
    python3 - "$work/cpu-before.json" "$work/cpu-after.json" "$tq_sid" "$plain_pid" > "$out/ab-$n-cpu.json" <<'PY'
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
sides = {"tqdeploy": sys.argv[3], "plain": sys.argv[4]}
out = {"gpu_before": before["gpu"], "gpu_after": after["gpu"]}
for label, sid in sides.items():
    b, a = before["sessions"].get(sid, {}), after["sessions"].get(sid, {})
    out[label] = {name: {"cpu_s": round(a[name]["cpu_s"] - b.get(name, {}).get("cpu_s", 0), 2),
                         "threads": a[name]["threads"], "processes": a[name]["processes"]} for name in sorted(a)}
print(json.dumps(out, indent=1))
PY
  fi
  plain_stop
  cp "$(readlink -f "$b/.tqdeploy/logs/server.log")" "$out/ab-$n-server.log" 2>/dev/null
  tq down "$b" --json > "$out/ab-$n-down.json" 2>&1
  ps -eo stat=,pid=,args= | awk '$1 !~ /^Z/ && /VLLM::/ && !/awk/' | grep . && echo "LEFTOVER VLLM processes"
}

cpu_snapshot() {  # $@ session ids: per session and process name (comm, never argv: plain's holds the key) the CPU
  # seconds used so far, threads and processes; and the GPU's SM clock, temperature and power draw
  python3 - "$@" <<'PY'
import json, os, subprocess, sys
tick = os.sysconf("SC_CLK_TCK")
wanted = set(sys.argv[1:])
sessions = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        raw = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()  # from field 3 (state) on
    if fields[3] not in wanted:  # field 6: session id
        continue
    row = sessions.setdefault(fields[3], {}).setdefault(comm, {"cpu_s": 0.0, "threads": 0, "processes": 0})
    row["cpu_s"] += (int(fields[11]) + int(fields[12])) / tick  # fields 14, 15: utime, stime
    row["threads"] += int(fields[17])  # field 20: num_threads
    row["processes"] += 1
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
except (OSError, subprocess.SubprocessError):
    gpu = None
print(json.dumps({"sessions": sessions, "gpu": gpu}))
PY
}
repeat-pair() { build; LOAD=2 plain_timed repeat-plain; LOAD=2 up_timed repeat-tqdeploy; }
spawn() { build; TQ_ENGINE_START=spawn LOAD=1 up_timed spawn; }

importtime() {  # where the seconds before the first log line go: the API server's and the EngineCore's imports
  local mods='import vllm.entrypoints.openai.api_server, vllm.v1.engine.core, vllm.v1.worker.gpu_worker'
  python3 -c "$mods" 2>/dev/null  # bytecode written once, as after the first start
  local t0 t1
  t0=$(date +%s.%N)
  python3 -X importtime -c "$mods" 2> "$work/importtime.txt"
  t1=$(date +%s.%N)
  python3 - "$work/importtime.txt" "$(python3 -c "print(round($t1 - $t0, 2))")" > "$out/importtime.json" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):  # "import time:  SELF_US |  CUMULATIVE_US | <2 spaces per depth>module"
    parts = line[len("import time:"):].split("|") if line.startswith("import time:") else []
    if len(parts) != 3 or not parts[0].strip().isdigit():
        continue
    name = parts[2].rstrip("\n")[1:]
    rows.append({"module": name.strip(), "self_s": int(parts[0]) / 1e6, "cumulative_s": int(parts[1]) / 1e6,
                 "depth": (len(name) - len(name.lstrip())) // 2})
top = [r for r in rows if r["depth"] <= 1]
print(json.dumps({"wall_s": float(sys.argv[2]), "modules": len(rows),
                  "top_level": sorted(top, key=lambda r: -r["cumulative_s"])[:25]}, indent=1))
PY
  cat "$out/importtime.json" | head -40
}

report() {
  python3 "$repo/scripts/gpu/tools/startup_report.py" "$records" "$out"
}

for step in "$@"; do "$step"; done
