"""After "KV cache too small": which KV-cache dtypes would hold max-model-len in the same KV memory.

Uses tqdeploy.plan (vLLM's own per-dtype formulas) with the KV memory vLLM reported as available
(`--kv-cache-memory-bytes` semantics), so the suggestion is exact to the two decimals vLLM prints.
"""

from __future__ import annotations

from tqdeploy.model import load_model_facts
from tqdeploy.plan import make_plan
from tqdeploy.units import GiB


def fitting_dtypes(
    model_dir: str, kv_available_gib: float, max_model_len: int, vllm_version: str | None, current: str | None
) -> list[tuple[str, int]]:
    """[(dtype, kv_tokens)] of the dtypes, other than the current one, whose KV tokens reach max_model_len."""
    if kv_available_gib <= 0:
        return []
    try:
        facts = load_model_facts(model_dir)
        kv = int(kv_available_gib * GiB)
        plan = make_plan(
            facts,
            gpu_memory_bytes=kv * 4,
            max_model_len=max_model_len,
            kv_cache_memory_bytes=kv,
            vllm_version=vllm_version,
            compute_capability=(9, 0),
        )
    except Exception:  # no config to read, a model the planner does not know: no hint, not a crash
        return []
    out = []
    for row in plan.rows:
        if row.kv_cache_dtype == (current or "auto") or row.kv_tokens is None:
            continue
        practical = row.kv_cache_dtype.startswith("turboquant_") or row.kv_cache_dtype == "fp8"
        if practical and row.status == "ok" and row.kv_tokens >= max_model_len:
            out.append((row.kv_cache_dtype, row.kv_tokens))
    # turboquant_4bit_nc first: the practical preset (docs/facts.md: +2.71% PPL for 3.8x); then by capacity.
    return sorted(out, key=lambda item: (item[0] != "turboquant_4bit_nc", item[1]))
