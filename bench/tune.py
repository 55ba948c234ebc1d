"""Benchmark: `tqdeploy tune`'s own overhead (issue 37, item 5) against the work it runs: the sum of the vLLM
starts (up's seconds to ready), the load steps and the answer checks of every candidate it measured.

One run: the embedded demo spec built (bench/up.py make_build) serving the real demo model, tuned over auto and
fp8 (fp8 only where this CPU runs it: AVX-512 or AMX) with a tiny workload, wall clock of the CLI. What is left is
tune's own: rendering and building each copy, `up` and `down` around vLLM, reading /metrics and the log, the
fingerprint (a sha256 of the model files), the verdict, table and chart. A second run reuses every result (no
start): its wall is the overhead of a resumed tune. TQDEPLOY_VLLM_PYTHON names the vLLM interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import Row
from bench.doctor import VLLM_PYTHON, tqdeploy_argv
from bench.up import make_build
from tqdeploy.demomodel import ensure_demo_model
from tqdeploy.runtime.deployment import load_deployment

WORKLOAD = ["--prompt-tokens", "16", "--output-tokens", "8", "--concurrency", "1,2", "--requests", "4"]


def _tune(build: Path, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    argv = tqdeploy_argv() + ["tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--json"]
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"tune failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return took, json.loads(proc.stdout)


def work_s(doc: dict[str, Any]) -> tuple[float, int]:
    """Seconds of vLLM starts, load steps and checks in a tune's JSON, and how many candidates were measured."""
    total, measured = 0.0, 0
    for cand in doc.get("candidates", []):
        res = cand.get("result") or {}
        if cand.get("status") != "measured" or not res:
            continue
        measured += 1
        total += float(res.get("ready_s") or 0.0) + float(res.get("check_s") or 0.0)
        total += sum(float(s.get("seconds") or 0.0) for s in res.get("steps", []))
    return total, measured


def _serve_real_model(build: Path) -> None:
    """The real demo model where the build's spec looks for it (answers that pass the check, as a user's would)."""

    target = load_deployment(build).model_dir
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(ensure_demo_model(), target_is_directory=True)


def run() -> list[Row]:
    python = os.environ.get("TQDEPLOY_VLLM_PYTHON", str(VLLM_PYTHON))
    with tempfile.TemporaryDirectory(prefix="tq-bench-tune-") as tmp:
        build, _ = make_build(Path(tmp), python)
        _serve_real_model(build)
        env = dict(os.environ) | {"TQDEPLOY_VLLM_PYTHON": python}
        wall, doc = _tune(build, env)
        resumed, _ = _tune(build, env)
    work, measured = work_s(doc)
    return [
        Row(f"tune wall ({measured} dtypes measured)", wall, work, "s", "", "sum of vLLM starts, loads, checks"),
        Row("tune's own overhead", wall - work, None, "s", "< 25% of the wall"),
        Row("tune re-run, every result reused", resumed, None, "s", "no vLLM start"),
    ]
