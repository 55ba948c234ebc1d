"""Benchmark: a full `tqdeploy doctor --offline --json` against `python -m vllm.collect_env`.

Goals: doctor median wall <= 1.0 s and peak RSS <= 80 MB on the 2-core machine; `tqdeploy --help`
<= 0.25 s; the doctor at least 20x faster than collect_env in the same run. The two run in alternated
pairs (doctor, collect_env, doctor, ...), so load from other work on shared cores falls on both alike;
the speed-up is the median of the per-pair ratios. Each child's peak RSS comes from its own rusage
(os.wait4), so runs of other benchmarks in the same process do not leak into it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import REPO, Row

RUNS = int(os.environ.get("TQDEPLOY_BENCH_RUNS", "5"))
VLLM_RUNS = int(os.environ.get("TQDEPLOY_BENCH_VLLM_RUNS", "3"))  # collect_env takes ~10 s a run
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


def pairs(ours: list[str], theirs: list[str], runs: int) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """runs alternated pairs of ((wall, rss) of ours, (wall, rss) of theirs)."""
    out = []
    for _ in range(runs):
        a = measure(ours)
        b = measure(theirs)
        out.append(((a[0], a[1]), (b[0], b[1])))
    return out


def run() -> list[Row]:
    doctor = tqdeploy_argv() + ["doctor", "--offline", "--json"]
    doctor_wall, doctor_rss = series(doctor, RUNS)
    help_wall, _ = series(tqdeploy_argv() + ["--help"], RUNS)
    rows = []
    if VLLM_PYTHON.exists():
        measured = pairs(doctor, [str(VLLM_PYTHON), "-m", "vllm.collect_env"], VLLM_RUNS)
        theirs = f"python -m vllm.collect_env ({VLLM_RUNS} alternated pairs)"
        ours_wall = statistics.median(a[0] for a, _ in measured)
        vllm_wall = statistics.median(b[0] for _, b in measured)
        speedup = statistics.median(b[0] / a[0] for a, b in measured)
        rows = [
            Row("doctor wall, paired with collect_env (median)", ours_wall, vllm_wall, "s", "", theirs),
            Row(
                "doctor peak RSS, paired (max)",
                max(a[1] for a, _ in measured),
                max(b[1] for _, b in measured),
                "MB",
                "",
                theirs,
            ),
            Row("collect_env / doctor wall, per pair (median)", speedup, None, "x", ">= 20x", theirs),
        ]
    return [
        Row(f"doctor --offline --json wall (median of {RUNS})", doctor_wall, None, "s", "<= 1.0 s"),
        Row(f"doctor --offline --json peak RSS (max of {RUNS})", doctor_rss, None, "MB", "<= 80 MB"),
        Row(f"tqdeploy --help wall (median of {RUNS})", help_wall, None, "s", "<= 0.25 s"),
        *rows,
    ]
