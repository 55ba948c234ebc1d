"""Read the KV figures out of a vLLM start-up log and compare them with the planner (calibration).

Log lines (docs/facts.md, "vLLM: cold start, logs, metrics"; vLLM 0.25.0 and 0.32.0 logs in tests/fixtures/vllm-logs/):
  GPU: "Available KV cache memory: 125.15 GiB" (v1/worker/gpu_worker.py)
  CPU: "Auto set (1.72/7.96) GiB for KV cache" or "Explicitly set (...)" (v1/worker/cpu_worker.py)
  "GPU|CPU KV cache size: 16,403,232 tokens" + "Maximum concurrency for 32,768 tokens per request:
  500.59x" on the same or the next line (v1/core/kv_cache_utils.py)
  "Setting attention block size to N tokens" (platforms/interface.py), "non-default args: {...}".
The patterns, each beside the vLLM source that prints it, are in tqdeploy.vllmfacts.logpatterns.
The memory figure is printed with two decimals, so a plan from it is exact only to +-0.005 GiB.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from typing import Any

from tqdeploy.model.facts import ModelFacts
from tqdeploy.plan.allocator import KvCapacity, kv_capacity
from tqdeploy.units import GiB
from tqdeploy.vllmfacts.logpatterns import (
    BLOCK_SIZE,
    CPU_KV_GIB,
    KV_MEMORY_GIB,
    KV_TOKENS,
    MAX_CONCURRENCY,
    NON_DEFAULT_ARGS_DICT,
)


@dataclass
class LoggedKv:
    device: str  # "GPU" | "CPU" ...
    kv_memory_gib: float
    kv_tokens: int
    max_model_len: int
    max_concurrency: float
    block_size: int | None
    kv_cache_dtype: str
    args: dict[str, Any]

    @property
    def kv_memory_bytes(self) -> int:
        return round(self.kv_memory_gib * GiB)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_kv_log(text: str) -> LoggedKv:
    """The KV figures of one vLLM start; ValueError naming what is missing."""
    mem = KV_MEMORY_GIB.search(text) or CPU_KV_GIB.search(text)
    size = KV_TOKENS.search(text)
    conc = MAX_CONCURRENCY.search(text)
    missing = [
        n for n, m in (("KV cache memory", mem), ("KV cache size", size), ("maximum concurrency", conc)) if not m
    ]
    if mem is None or size is None or conc is None:
        raise ValueError(f"log has no {', '.join(missing)} line (did the engine reach KV cache allocation?)")
    args: dict[str, Any] = {}
    if (a := NON_DEFAULT_ARGS_DICT.search(text)) is not None:
        try:
            args = ast.literal_eval(a.group(1))
        except (ValueError, SyntaxError):
            args = {}
    blocks = BLOCK_SIZE.findall(text)
    return LoggedKv(
        device=size.group(1),
        kv_memory_gib=float(mem.group(1)),
        kv_tokens=int(size.group(2).replace(",", "")),
        max_model_len=int(conc.group(1).replace(",", "")),
        max_concurrency=float(conc.group(2)),
        block_size=int(blocks[-1]) if blocks else None,
        kv_cache_dtype=str(args.get("kv_cache_dtype", "auto")),
        args=args,
    )


@dataclass
class Calibration:
    logged: LoggedKv
    planned_tokens: int
    planned_low: int  # for the low end of the printed memory's rounding interval
    planned_high: int
    block_size: int

    @property
    def error(self) -> float:
        return (self.planned_tokens - self.logged.kv_tokens) / self.logged.kv_tokens

    @property
    def within_rounding(self) -> bool:
        return self.planned_low <= self.logged.kv_tokens <= self.planned_high

    def to_dict(self) -> dict[str, Any]:
        return {
            "logged": self.logged.to_dict(),
            "planned_tokens": self.planned_tokens,
            "error": self.error,
            "planned_range": [self.planned_low, self.planned_high],
            "within_rounding": self.within_rounding,
            "block_size": self.block_size,
        }


def calibrate(
    facts: ModelFacts, text: str, *, tp: int = 1, kv_cache_dtype: str | None = None, prefix_caching: bool | None = None
) -> Calibration:
    """Plan KV tokens for the KV memory a log reports and set them beside the logged token count."""
    logged = parse_kv_log(text)
    dtype = kv_cache_dtype or logged.kv_cache_dtype
    platform = "cpu" if logged.device == "CPU" else "cuda"
    if prefix_caching is None:
        prefix_caching = "enable_prefix_caching=False" not in text and not logged.args.get("no_enable_prefix_caching")

    def plan(gib: float) -> KvCapacity:
        return kv_capacity(
            facts,
            dtype,
            round(gib * GiB),
            logged.max_model_len,
            tp=tp,
            platform=platform,
            prefix_caching=prefix_caching,
        )

    mid = plan(logged.kv_memory_gib)
    return Calibration(
        logged,
        mid.tokens,
        plan(logged.kv_memory_gib - 0.005).tokens,
        plan(logged.kv_memory_gib + 0.005).tokens,
        mid.block_size,
    )
