"""The KV/memory planner: KV bytes per token per KV dtype (vLLM's formulas), KV tokens for a memory
budget (vLLM's block and page rounding), concurrency at max-model-len and a recommendation.

    kv_bytes_per_token(facts, "turboquant_4bit_nc", tp=1)        # 16768 for Qwen3.6-27B
    plan = make_plan(facts, gpu_memory_bytes=..., num_gpus=2, max_model_len=262144)
    plan.to_dict()["rows"], plan.recommended
"""

from __future__ import annotations

from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION
from tqdeploy.plan.gpus import gpu_by_name
from tqdeploy.plan.kvformula import CACHE_DTYPES, TURBOQUANT_DTYPES
from tqdeploy.plan.planner import kv_bytes_per_token, make_plan
from tqdeploy.plan.result import Plan
from tqdeploy.plan.rows import PlanRow

__all__ = [
    "CACHE_DTYPES",
    "TURBOQUANT_DTYPES",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "Plan",
    "PlanRow",
    "gpu_by_name",
    "kv_bytes_per_token",
    "make_plan",
]
