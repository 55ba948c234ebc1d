"""Benchmark: `tqdeploy profile --load` figures against `vllm bench serve` (vllm/benchmarks/serve.py of
the same CPU vLLM 0.32.0, driven from Python: its `vllm` CLI fails in that venv, docs/facts.md "Machines") on the
same load, and the cost of /metrics sampling (the same load with and without the sampler, one server).

Goals: TTFT p50 and output throughput within 10% of vllm bench serve; sampling overhead <= 1%.

The same comparison runs on a GPU host (scripts/gpu/records/record_bench.sh, vLLM 0.25.0 on the H200) through these
environment variables: TQDEPLOY_BENCH_VLLM_PYTHON (a python that imports vllm), TQDEPLOY_BENCH_MODEL,
TQDEPLOY_BENCH_SERVED (served model name), TQDEPLOY_BENCH_URL (a server already running: none is started),
TQDEPLOY_BENCH_SERVER_ARGS (flags for the server it starts), TQDEPLOY_BENCH_CONCURRENCY / _INPUT / _OUTPUT /
_PROMPTS / _ROUNDS, and TQDEPLOY_BENCH_RAW (a file for every round's figures of both tools, as JSON).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import REPO, Row
from tqdeploy.net import Client
from tqdeploy.profile.load import LoadSpec, run_step
from tqdeploy.profile.run import run_load

_ENV = os.environ.get
VLLM_PYTHON = Path(_ENV("TQDEPLOY_BENCH_VLLM_PYTHON", str(REPO / ".venv-vllm" / "bin" / "python")))
MODEL = Path(_ENV("TQDEPLOY_BENCH_MODEL", str(REPO / ".cache" / "tiny-qwen2")))  # tests/support/make_tiny_model.py
SERVED = _ENV("TQDEPLOY_BENCH_SERVED", "tiny")
URL = _ENV("TQDEPLOY_BENCH_URL")
# Prefix caching off: both tools send the same prompts round after round (fixed seeds), and cached prefills
# would make whichever runs second look faster.
SERVER_ARGS = _ENV(
    "TQDEPLOY_BENCH_SERVER_ARGS",
    f"--max-model-len 1024 --dtype bfloat16 --kv-cache-memory-bytes {256 << 20} --no-enable-prefix-caching",
)
CONCURRENCY = int(_ENV("TQDEPLOY_BENCH_CONCURRENCY", "4"))
PROMPTS = int(_ENV("TQDEPLOY_BENCH_PROMPTS", "32"))
# 448-token prompts: with 64 the prefill takes ~12 ms here and the two clients' own few ms of overhead weigh
# 25% (measured: TTFT ratio 0.77); at 448 the prefill dominates (0.93)
INPUT, OUTPUT = int(_ENV("TQDEPLOY_BENCH_INPUT", "448")), int(_ENV("TQDEPLOY_BENCH_OUTPUT", "64"))
# CPU sets ("0", "1-3"): the server in one, both tools' clients in the other, so neither client competes with
# the spinning CPU worker for a core (on the 2-core machine: TQDEPLOY_BENCH_SERVER_CPUS=0, _CLIENT_CPUS=1).
_TWO = not URL and (os.cpu_count() or 1) >= 2  # a server started here, and a core to spare for the clients
SERVER_CPUS = _ENV("TQDEPLOY_BENCH_SERVER_CPUS", "0" if _TWO else "")
CLIENT_CPUS = _ENV("TQDEPLOY_BENCH_CLIENT_CPUS", "1" if _TWO else "")
# the 2-core machine is shared: one run of each differs from the next by up to 4x, so the three loads are
# interleaved over several rounds and the medians compared
ROUNDS = int(_ENV("TQDEPLOY_BENCH_ROUNDS", "5"))

_DRIVER = """
import json, sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = FlexibleArgumentParser()
add_cli_args(parser)
result = main(parser.parse_args(sys.argv[2:]))
json.dump({k: result.get(k) for k in ("median_ttft_ms", "output_throughput", "completed")}, open(sys.argv[1], "w"))
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(port: int, log: Path) -> subprocess.Popen[bytes]:
    args = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL)]
    args += ["--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port), *shlex.split(SERVER_ARGS)]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.setdefault("VLLM_CACHE_ROOT", str(REPO / ".cache" / "vllm"))
    with open(log, "wb") as out:
        if SERVER_CPUS:
            env["VLLM_CPU_OMP_THREADS_BIND"] = SERVER_CPUS  # vllm/envs.py: the worker's OpenMP threads
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_pin(SERVER_CPUS) if SERVER_CPUS else None,
        )
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(1)
    _stop(proc)
    raise RuntimeError(f"vLLM did not start: {log.read_text()[-2000:]}")


def _cpus(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _pin(spec: str) -> Callable[[], None]:
    cpus = _cpus(spec)
    return lambda: os.sched_setaffinity(0, cpus)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def _vllm_bench(base_url: str, out: Path) -> dict[str, Any]:
    args = ["--backend", "vllm", "--base-url", base_url, "--endpoint", "/v1/completions", "--model", SERVED]
    args += ["--tokenizer", str(MODEL), "--dataset-name", "random", "--random-input-len", str(INPUT)]
    args += ["--random-output-len", str(OUTPUT), "--num-prompts", str(PROMPTS), "--max-concurrency", str(CONCURRENCY)]
    args += ["--ignore-eos", "--request-rate", "inf", "--disable-tqdm"]
    subprocess.run([str(VLLM_PYTHON), "-c", _DRIVER, str(out), *args], check=True, capture_output=True, timeout=600)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def run() -> list[Row]:

    if not (VLLM_PYTHON.exists() or shutil.which(str(VLLM_PYTHON))) or not (MODEL / "config.json").exists():
        print("bench profile: needs .venv-vllm and .cache/tiny-qwen2 (make vllm-cpu; pytest creates the model)")
        return []
    if CLIENT_CPUS:
        os.sched_setaffinity(0, _cpus(CLIENT_CPUS))  # this process runs tqdeploy's client; vllm bench inherits it
    work = Path(tempfile.mkdtemp(prefix="tqbench-profile-"))
    proc = None
    if URL:
        base = URL.rstrip("/")
    else:
        port = _port()
        proc = _start(port, work / "server.log")
        base = f"http://127.0.0.1:{port}"
    theirs, sampled, plain = [], [], []
    try:
        spec = LoadSpec([CONCURRENCY], INPUT, OUTPUT, PROMPTS)
        client = Client(base)
        run_step(client, SERVED, LoadSpec([1], INPUT, OUTPUT, 4), 1)  # warm-up, not measured
        for i in range(ROUNDS):
            theirs.append(_vllm_bench(base, work / f"vllm-bench-{i}.json"))
            load, _ = run_load(client, spec)
            assert load is not None, "the server answered /v1/models without a model"
            sampled.append(load["steps"][0])
            plain.append(run_step(client, SERVED, spec, CONCURRENCY, seed=0))
    finally:
        if proc is not None:
            _stop(proc)
    if _ENV("TQDEPLOY_BENCH_RAW"):
        raw: dict[str, Any] = {
            "load": {"concurrency": CONCURRENCY, "input": INPUT, "output": OUTPUT, "prompts": PROMPTS}
        }
        raw |= {"vllm_bench_serve": theirs, "tqdeploy_sampled": sampled, "tqdeploy_plain": plain}
        Path(_ENV("TQDEPLOY_BENCH_RAW", "")).write_text(json.dumps(raw, indent=1, default=str))
    med = statistics.median
    ours_tput = med(s["output_tokens_per_s"] for s in sampled)
    overhead = 1 - ours_tput / med(p["output_tokens_per_s"] for p in plain)
    return [
        Row(
            f"profile load TTFT p50 (c={CONCURRENCY}, median of {ROUNDS})",
            1000 * med(s["ttft_p50_s"] for s in sampled),
            med(t["median_ttft_ms"] for t in theirs),
            "ms",
            "within 10%",
            "vllm bench serve",
        ),
        Row(
            "profile load output tok/s",
            ours_tput,
            med(t["output_throughput"] for t in theirs),
            "t/s",
            "within 10%",
            "vllm bench serve",
        ),
        Row("profile /metrics sampling overhead", 100 * overhead, None, "%", "<= 1% of throughput (A/B)"),
    ]
