"""Benchmark: a full `tqdeploy doctor --offline --json` against `python -m vllm.collect_env`.

Goals: doctor median wall <= 1.0 s and peak RSS <= 80 MB on the 2-core machine; `tqdeploy
--help` <= 0.25 s. Each child's peak RSS comes from its own rusage (os.wait4), so runs of other
benchmarks in the same process do not leak into the figure.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tqdeploy.bench import Row

RUNS = int(os.environ.get("TQDEPLOY_BENCH_RUNS", "5"))
VLLM_RUNS = int(os.environ.get("TQDEPLOY_BENCH_VLLM_RUNS", "3"))  # collect_env takes ~10 s a run
REPO = Path(__file__).resolve().parents[3]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode  # ru_maxrss is in KiB on Linux


def series(argv: list[str], runs: int) -> tuple[float, float]:
    results = [measure(argv) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def tqdeploy_argv() -> list[str]:
    exe = Path(sys.executable).parent / "tqdeploy"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tqdeploy"]


def run() -> list[Row]:
    doctor_wall, doctor_rss = series(tqdeploy_argv() + ["doctor", "--offline", "--json"], RUNS)
    help_wall, _ = series(tqdeploy_argv() + ["--help"], RUNS)
    vllm_wall = vllm_rss = None
    if VLLM_PYTHON.exists():
        vllm_wall, vllm_rss = series([str(VLLM_PYTHON), "-m", "vllm.collect_env"], VLLM_RUNS)
    theirs = f"python -m vllm.collect_env (median/max of {VLLM_RUNS})" if vllm_wall is not None else ""
    return [
        Row(f"doctor --offline --json wall (median of {RUNS})", doctor_wall, vllm_wall, "s", "<= 1.0 s", theirs),
        Row(f"doctor --offline --json peak RSS (max of {RUNS})", doctor_rss, vllm_rss, "MB", "<= 80 MB", theirs),
        Row(f"tqdeploy --help wall (median of {RUNS})", help_wall, None, "s", "<= 0.25 s"),
    ]
