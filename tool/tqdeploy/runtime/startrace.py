"""TQ426: another vLLM on the same GPU may still be starting, and two starts on one GPU can fail each other.

vLLM's GPU worker measures free memory before and after its profiling run and asserts that it did not grow
(v1/worker/gpu_worker.py determine_available_memory: "Error in memory profiling. Initial free memory ... This
happens when other processes sharing the same container release GPU memory while vLLM is profiling"; 0.25.0 line
511, 0.32.0 line 720). Another process that frees memory meanwhile, as a second vLLM does during its own start,
breaks that: on the H200 (0.25.0) the later of two servers started within seconds failed so, and starts 35 s
apart worked (docs/facts.md, "TurboQuant faults measured").

What this can know, from NVML and /proc only: which compute processes hold memory on the GPUs the build uses,
which of them are vLLM's (setproctitle's `VLLM::EngineCore` / `VLLM::Worker_*`, or `vllm` on the command line),
and when each started. It cannot see whether that start is over (the log belongs to whoever started it), so
every vLLM process younger than STARTING_WINDOW_S counts as possibly starting; and a pid from another pid
namespace (NVML inside a container) is not in this /proc, so it is not judged. Hence a warning, not a refusal.
"""

from __future__ import annotations

import time
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.procs import PROC, Proc, read_proc

# vLLM's API server waits this long for its engine to start before it gives up (vllm/envs.py
# VLLM_ENGINE_READY_TIMEOUT_S, default 600 in 0.25.0 and 0.32.0): an engine older than this has started or failed.
STARTING_WINDOW_S = 600.0


def _vllm_title(proc: Proc) -> str | None:
    """The process's title when it is vLLM's, else None."""
    if proc.is_vllm:
        return proc.title
    try:
        argv = (PROC / str(proc.pid) / "cmdline").read_bytes()[:4096].split(b"\0")
    except OSError:
        return None
    words = [w.decode(errors="replace") for w in argv if w]
    return " ".join(words)[:160] if any("vllm" in w for w in words) else None


def starting_neighbours(
    gpus: list[dict[str, Any]], wanted: list[int], own_pids: set[int], now: float | None = None
) -> list[dict[str, Any]]:
    """vLLM processes on the wanted GPUs (NVML's compute processes) that started within STARTING_WINDOW_S."""
    now = time.time() if now is None else now
    out = []
    for g in gpus:
        if g["index"] not in wanted:
            continue
        for p in g["processes"]:
            proc = read_proc(p["pid"]) if p["pid"] not in own_pids else None
            title = _vllm_title(proc) if proc is not None else None
            age = now - proc.started if proc is not None else None
            if title is not None and age is not None and age < STARTING_WINDOW_S:
                out.append({"gpu": g["index"], "pid": p["pid"], "title": title, "age_s": round(max(age, 0.0), 1)})
    return out


def start_race_finding(neighbours: list[dict[str, Any]]) -> Finding | None:
    if not neighbours:
        return None
    youngest = min(n["age_s"] for n in neighbours)
    gpus = sorted({n["gpu"] for n in neighbours})
    return Finding(
        "TQ426",
        Severity.WARN,
        f"another vLLM on GPU {', '.join(map(str, gpus))} started {youngest:.0f} s ago and may still be starting: "
        "two starts on one GPU can fail in vLLM's memory profiling",
        {"neighbours": neighbours, "window_s": STARTING_WINDOW_S},
        "start servers on one GPU one at a time: if that one is still starting, stop this start (`tqdeploy down`) "
        "and run `tqdeploy up` once it answers GET /health with 200 (on the H200, starts 35 s apart worked); "
        "if it answers already, nothing to do",
        AREA,
    )
