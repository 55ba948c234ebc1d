"""How steady the lent machine itself is, window by window: the spread a tokens/s step inherits from the host.

RECORD (kept for provenance, not a tool): run in lease 8 (2026-12-03) on the lent H200; its result is
tests/fixtures/gpu-runs/h200-vllm-0.25.0/startup/jitter-lease8.json, cited by docs/startup.md (the host's own
spread: 10-13% for host-CPU-bound work, 1.2% for memory-bound GPU work).

dense8w's 5 s load steps vary 5-13% (coefficient of variation) for one server at one concurrency, and its decode
steps are short (ITL about 2 ms), so the host CPU's per-step work is a large share of each (docs/startup.md,
lease 8). This times three fixed workloads in alternating windows of the same length:
  cpu       a pure-Python loop (the interpreter's speed: what an EngineCore's scheduling step costs)
  launch    a tiny CUDA kernel launched and synchronised each time (a launch-bound decode step of a small model)
  gemv      a bf16 matrix-vector product reading 117 MB each time (one dense8w-sized MLP weight: memory-bound)
and prints each one's work per window, its coefficient of variation and range. A workload that varies as much as
the load steps do is where their spread comes from; one that does not is not.

Usage: jitter.py [--windows 8] [--seconds 4] [--kinds cpu,launch,gemv] [--out FILE]
Exit codes: 0 done, 2 bad input (one line naming it and the fix).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tool"))

from tqdeploy.errors import TQError, report_error  # noqa: E402

KINDS = ("cpu", "launch", "gemv")


def cpu_work() -> Callable[[], None]:
    def once() -> None:
        total = 0
        for i in range(2000):
            total += i * i

    return once


def cuda_work(kind: str) -> Callable[[], None]:
    import torch

    if kind == "launch":
        x = torch.ones(8, device="cuda")

        def once() -> None:
            x.add_(1.0)
            torch.cuda.synchronize()

        return once
    weight = torch.randn(14336, 4096, device="cuda", dtype=torch.bfloat16)  # 117 MB: one MLP projection
    vec = torch.randn(4096, 1, device="cuda", dtype=torch.bfloat16)

    def once() -> None:
        for _ in range(10):
            torch.mm(weight, vec)
        torch.cuda.synchronize()

    return once


def count_in(once: Callable[[], None], seconds: float) -> float:
    """Calls of once per second over a window of seconds (whole calls only, timed on the monotonic clock)."""
    n, start = 0, time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        once()
        n += 1
    return n / (time.perf_counter() - start)


def spread(values: list[float]) -> dict:
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 and mean else None
    return {"per_s": [round(v, 2) for v in values], "mean": round(mean, 2), "cv": None if cv is None else round(cv, 4),
            "range": round(max(values) / min(values), 4) if min(values) else None}  # fmt: skip


def measure(kinds: list[str], windows: int, seconds: float) -> dict:
    work = {k: cpu_work() if k == "cpu" else cuda_work(k) for k in kinds}
    for once in work.values():
        count_in(once, min(seconds, 0.5))  # untimed: first calls compile, allocate, warm the clocks
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    for w in range(windows):
        order = kinds if w % 2 == 0 else kinds[::-1]  # each kind early and late in a round equally often
        for k in order:
            rates[k].append(count_in(work[k], seconds))
    return {"schema": "tqdeploy.gpu-jitter/1", "windows": windows, "seconds": seconds,
            "kinds": {k: spread(v) for k, v in rates.items()}}  # fmt: skip


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--windows", type=int, default=8)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    try:
        if not kinds or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise TQError(f"--kinds {args.kinds!r} is not a list of {', '.join(KINDS)}", "e.g. --kinds cpu,gemv")
        if not 2 <= args.windows <= 100:
            raise TQError(f"--windows {args.windows} is outside 2..100", "e.g. --windows 8")
        if not 0.05 <= args.seconds <= 60:
            raise TQError(f"--seconds {args.seconds} is outside 0.05..60", "e.g. --seconds 4")
    except TQError as exc:
        return report_error(exc, "jitter")
    result = measure(kinds, args.windows, args.seconds)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
