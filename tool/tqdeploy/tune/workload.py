"""The user's workload shape (prompt and output tokens, the concurrency sweep, the context each sequence needs)
and the time a tune will take, shown before anything starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.profile.load import LIMITS, MAX_STEPS

MAX = "max"  # a sweep step: the largest concurrency the candidate's KV cache holds at the context length
# A CPU start of the demo here took 40-90 s alone and 2-4 min beside other work (ENVIRONMENT.md): until this
# build has a measured start, the estimate assumes the slower figure rather than promise a short run.
DEFAULT_START_S = 180.0
STOP_S = 15.0  # `down`: SIGTERM to the process group and the wait for it
MAX_STEP_S = 3600.0


@dataclass(frozen=True)
class Workload:
    prompt_tokens: int
    output_tokens: int
    sweep: tuple[int | str, ...]  # concurrency steps; MAX resolves per dtype
    requests: int  # per step (a step also ends after step_s)
    step_s: float
    context: int  # tokens one sequence needs: capacity is counted in sequences of this length
    max_concurrency: int  # the most MAX may resolve to (the client runs one thread per stream)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"sweep": list(self.sweep)}


def parse_sweep(text: str) -> tuple[int | str, ...]:
    """`1,8,max` -> (1, 8, "max"); one line naming --concurrency for anything else."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    out: list[int | str] = []
    for item in items:
        if item == MAX:
            out.append(MAX)
            continue
        try:
            value = int(item)
        except ValueError:
            value = 0
        if not 1 <= value <= LIMITS["--concurrency"]:
            out = []
            break
        out.append(value)
    if not out or len(out) > MAX_STEPS:
        raise TQError(
            f"--concurrency {text[:80]!r} is not a list of 1 to {MAX_STEPS} positive integers or 'max'",
            "e.g. --concurrency 1,8,max",
        )
    return tuple(dict.fromkeys(out))


def steps_for(workload: Workload, holds: int | None) -> list[int]:
    """The concurrencies one dtype runs: MAX is what its KV cache holds (at most max_concurrency), and no step
    goes above what it holds (beyond it vLLM queues or preempts: the cache, not the dtype's speed, would be
    measured). Unknown capacity: MAX is max_concurrency."""
    cap = workload.max_concurrency if holds is None else max(1, min(holds, workload.max_concurrency))
    wanted = [cap if s == MAX else int(s) for s in workload.sweep]
    return sorted({min(s, cap) for s in wanted})


def estimate_s(dtypes: int, workload: Workload, start_s: float, check_s: float) -> float:
    """Seconds for `dtypes` measurements at most: a start, each step to its time bound, the check, the stop."""
    per_dtype = start_s + len(workload.sweep) * workload.step_s + check_s + STOP_S
    return dtypes * per_dtype


def check_workload(w: Workload) -> None:
    for flag, value in (("--prompt-tokens", w.prompt_tokens), ("--output-tokens", w.output_tokens)):
        if not 1 <= value <= LIMITS[flag]:
            raise TQError(f"{flag} {value} is outside 1..{LIMITS[flag]}", f"e.g. {flag} 128")
    if not 1 <= w.requests <= LIMITS["--requests"]:
        raise TQError(f"--requests {w.requests} is outside 1..{LIMITS['--requests']}", "e.g. --requests 32")
    if not 0 < w.step_s <= MAX_STEP_S:  # nan fails too
        raise TQError(f"--step-seconds {w.step_s} is outside 0..{MAX_STEP_S:g}", "e.g. --step-seconds 30")
    if not 1 <= w.max_concurrency <= LIMITS["--concurrency"]:
        raise TQError(
            f"--max-concurrency {w.max_concurrency} is outside 1..{LIMITS['--concurrency']}",
            "e.g. --max-concurrency 64",
        )
    if w.prompt_tokens + w.output_tokens > w.context:
        raise TQError(
            f"--prompt-tokens {w.prompt_tokens} + --output-tokens {w.output_tokens} exceed the context {w.context}",
            f"keep the two under {w.context} together, or pass a longer --context",
        )
