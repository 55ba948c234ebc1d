"""Goodput: the output tokens per second of the highest-throughput concurrency step whose p99 time to first
token and p99 inter-token latency both meet the user's targets and whose requests all succeeded. A step is
judged by its percentiles (what a latency target is stated in), so a step where 1% of the requests miss the
target still counts. No target stated: every error-free step counts (goodput is throughput).

Pure functions over stored step figures; each figure is type-checked here (a result file is input)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Targets:
    ttft_p99_s: float | None = None
    itl_p99_s: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"ttft_p99_s": self.ttft_p99_s, "itl_p99_s": self.itl_p99_s}


def num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def misses(step: dict[str, Any], targets: Targets) -> str | None:
    """Why a step does not count, in words; None when it does."""
    c = step.get("concurrency")
    if not num(step.get("completed")):
        return f"no request completed at concurrency {c}"
    if num(step.get("errors")):
        return f"{int(num(step.get('errors')) or 0)} failed requests at concurrency {c}"
    for key, target, name in (("ttft_p99_s", targets.ttft_p99_s, "TTFT"), ("itl_p99_s", targets.itl_p99_s, "ITL")):
        value = num(step.get(key))
        if target is not None and (value is None or value > target):
            shown = "not measured" if value is None else f"{value:.3g} s"
            return f"{name} p99 {shown} > {target:g} s at concurrency {c}"
    return None


def goodput(steps: list[dict[str, Any]], targets: Targets) -> dict[str, Any]:
    """{"tokens_per_s", "concurrency", "step"} of the best step that meets the targets, or {"tokens_per_s": None,
    "binds": why the lowest step missed} (the lowest: if even it misses, a larger load cannot meet them)."""
    ok = [s for s in steps if misses(s, targets) is None and num(s.get("output_tokens_per_s"))]
    if ok:
        best = max(ok, key=lambda s: num(s.get("output_tokens_per_s")) or 0.0)
        top = max(steps, key=lambda s: num(s.get("concurrency")) or 0)
        out = {"tokens_per_s": num(best["output_tokens_per_s"]), "concurrency": best.get("concurrency"), "step": best}
        if top is not best and misses(top, targets):
            out["above"] = misses(top, targets)  # what stops a larger load
        return out
    if not steps:
        return {"tokens_per_s": None, "binds": "no step ran"}
    lowest = min(steps, key=lambda s: num(s.get("concurrency")) or 0)
    return {"tokens_per_s": None, "binds": misses(lowest, targets) or "no throughput measured", "step": lowest}
