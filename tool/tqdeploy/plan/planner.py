"""make_plan: budget -> one row per KV dtype -> recommendation."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from packaging.version import InvalidVersion, Version

from tqdeploy.errors import TQError
from tqdeploy.findings import Severity
from tqdeploy.model import compat
from tqdeploy.model.facts import ModelFacts
from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_VLLM_VERSION
from tqdeploy.plan.allocator import kv_capacity
from tqdeploy.plan.budget import Budget, make_budget, scheduler_defaults
from tqdeploy.plan.kvformula import CACHE_DTYPES, NotApplicable, effective_skip_layers, per_layer_token_bytes
from tqdeploy.plan.result import Plan
from tqdeploy.plan.rows import PlanRow
from tqdeploy.suggest import use_hint

# Preference when several dtypes reach the target: full precision is fastest; TurboQuant trades
# throughput (66-80% of BF16 in vLLM's 2026-05-11 measurements) for capacity; k8v4 is no better than
# fp8 (same post), so it is never recommended over fp8.
PREFERENCE = ("auto", "fp8", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")

AVAILABILITY = {
    "fp8_inc": "no attention backend in vLLM 0.32.0's tree lists it (Intel INC, out of tree)",
    "fp8_ds_mla": "DeepSeek sparse-MLA backends only",
    "nvfp4_ds_mla": "DeepSeek sparse-MLA backends only",
    "ultraquant_4bit": "ROCm (AMD) only",
    "int4_per_token_head": "TRITON_ATTN backend only",
    "int8_per_token_head": "TRITON_ATTN backend only",
    "fp8_per_token_head": "TRITON_ATTN backend only",
    "nvfp4": "FlashInfer NVFP4 path (Blackwell TRT-LLM kernels, or FA2 prefill)",
    "nvfp4_4over6": "FlashInfer NVFP4 on Blackwell (TRT-LLM kernels)",
}


def kv_bytes_per_token(facts: ModelFacts, kv_cache_dtype: str, tp: int = 1, skip_layers: tuple[int, ...] = ()) -> int:
    """KV bytes one token costs on one GPU across all KV layers (TurboQuant boundary skips included)."""
    return sum(per_layer_token_bytes(facts, kv_cache_dtype, tp, tuple(skip_layers)).values())


def _hybrid_prefix_caching(vllm_version: str) -> bool:
    """0.32.0 enables prefix caching for hybrids (config/model.py is_prefix_caching_supported), which
    switches mamba state to 'align' mode (two state blocks a sequence); 0.25.0 ran them without it
    (enable_prefix_caching=False in the H200 logs)."""
    try:
        return Version(vllm_version) >= Version("0.32.0")
    except InvalidVersion:
        return True


# Bounds of plan's numeric options: what vLLM and hardware accept (the spec's own, deployspec/validate.py), so inf,
# nan and 10**18 are one usage error instead of an OverflowError or a plan for a machine that cannot exist.
_INT_OPTIONS = {"--gpus": (1, 1024), "--tp": (1, 64), "--max-model-len": (1, 2**31 - 1)}
_FLOAT_OPTIONS = {  # (low, low inclusive, high)
    "--kv-cache-memory-gib": (0.0, False, float(1 << 20)),
    "--reserve-gib": (0.0, True, float(1 << 20)),
    "--min-concurrency": (0.0, False, float(1 << 20)),
}


def check_plan_numbers(ints: dict[str, int | None], floats: dict[str, float | None]) -> None:
    """TQError naming the option for a number outside what vLLM and hardware accept (inf and nan included)."""
    for name, value in ints.items():
        least, most = _INT_OPTIONS[name]
        if value is not None and not least <= value <= most:
            raise TQError(f"{name} {value} is outside {least}..{most}", f"pass {name} between {least} and {most}")
    for name, number in floats.items():
        low, inclusive, high = _FLOAT_OPTIONS[name]
        if number is None:
            continue
        above = number >= low if inclusive else number > low
        if not (math.isfinite(number) and above and number <= high):
            bound = f"{'at least' if inclusive else 'more than'} {low:g} and at most {high:g}"
            raise TQError(f"{name} {number} must be a finite number {bound}", f"pass {name} in that range")


def make_plan(
    facts: ModelFacts,
    *,
    gpu_memory_bytes: int,
    max_model_len: int,
    num_gpus: int | None = None,
    tp: int | None = None,
    gpu_memory_utilization: float | None = None,
    kv_cache_dtypes: list[str] | tuple[str, ...] | None = None,
    skip_layers: tuple[int, ...] = (),
    vllm_version: str | None = None,
    compute_capability: tuple[int, int] | None = None,
    gpu_name: str = "",
    platform: str = "cuda",
    kv_cache_memory_bytes: int | None = None,
    reserve_bytes: int | None = None,
    enforce_eager: bool = False,
    prefix_caching: bool | None = None,
    min_concurrency: float = 1.0,
    attention_backend: str | None = None,
) -> Plan:
    """One row per KV dtype for this model on this host, and the recommendation (TQError: input out of range)."""
    tp = tp or num_gpus or 1
    util = DEFAULT_GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else gpu_memory_utilization
    version = vllm_version or DEFAULT_VLLM_VERSION
    _check_host(tp, num_gpus, gpu_memory_bytes, util, version)
    hint = facts.turbo_quant_config
    skips = _skip_layers(facts, tuple(skip_layers) or tuple((hint or {}).get("skip_layers", ())))
    dtypes = _dtypes(kv_cache_dtypes)
    if prefix_caching is None:
        prefix_caching = _hybrid_prefix_caching(version) if facts.is_hybrid else True

    problems = [*compat.tensor_parallel_problems(facts, tp), *compat.max_model_len_problems(facts, max_model_len)]
    problems += compat.weights_fit_problems(facts, tp, gpu_memory_bytes, util)
    budget = make_budget(
        facts,
        gpu_memory_bytes=gpu_memory_bytes,
        tp=tp,
        gpu_memory_utilization=util,
        gpu_name=gpu_name,
        enforce_eager=enforce_eager,
        platform=platform,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        reserve_bytes=reserve_bytes,
    )
    row_of = (max_model_len, tp, skips, platform, prefix_caching, version, compute_capability, attention_backend)
    rows = [_row(facts, d, budget, *row_of) for d in dtypes]
    plan = Plan(
        model=_model_summary(facts),
        host=_host_summary(gpu_name, gpu_memory_bytes, num_gpus or tp, compute_capability, platform),
        budget=budget.to_dict(),
        rows=rows,
        max_model_len=max_model_len,
        tp=tp,
        vllm_version=version,
        problems=problems,
    )
    plan.notes += _model_notes(facts, prefix_caching)
    _recommend(plan, hint, min_concurrency)
    return plan


def _host_summary(
    gpu_name: str, gpu_memory_bytes: int, num_gpus: int, compute_capability: tuple[int, int] | None, platform: str
) -> dict[str, Any]:
    return {
        "gpu_name": gpu_name,
        "gpu_memory_bytes": gpu_memory_bytes,
        "num_gpus": num_gpus,
        "compute_capability": list(compute_capability) if compute_capability else None,
        "platform": platform,
        "description": f"{num_gpus} x {gpu_name or 'GPU'}",
    }


def _check_host(tp: int, num_gpus: int | None, gpu_memory_bytes: int, util: float, version: str) -> None:
    if num_gpus is not None and tp > num_gpus:
        raise TQError(f"--tp {tp} needs {tp} GPUs but {num_gpus} are given", f"pass --gpus {tp} or a smaller --tp")
    if gpu_memory_bytes <= 0:
        raise TQError("GPU memory is unknown (0 bytes)", "pass --gpu NAME or a snapshot with GPU memory totals")
    if not 0 < util <= 1:
        raise TQError(f"--gpu-memory-utilization {util} is outside (0, 1]", "pass a fraction such as 0.92")
    try:
        Version(version)
    except InvalidVersion:
        raise TQError(f"--vllm-version {version!r} is not a version", "pass a release such as 0.32.0") from None


def _skip_layers(facts: ModelFacts, skips: tuple[int, ...]) -> tuple[int, ...]:
    """The layers TurboQuant leaves at full precision (--skip-layers, else the checkpoint's hint), checked."""
    bad = [i for i in skips if not 0 <= i < facts.num_hidden_layers]
    if bad:
        raise TQError(
            f"--skip-layers {bad} are outside this model's layers 0..{facts.num_hidden_layers - 1}",
            "pass layer indices of this model",
        )
    return skips


def _dtypes(kv_cache_dtypes: list[str] | tuple[str, ...] | None) -> list[str]:
    dtypes = list(kv_cache_dtypes or CACHE_DTYPES)
    unknown = [d for d in dtypes if d not in CACHE_DTYPES]
    if unknown:
        raise TQError(
            f"--kv-cache-dtype {unknown[0]!r} is not a choice of vLLM {DEFAULT_VLLM_VERSION}",
            use_hint(unknown[0], CACHE_DTYPES),
        )
    return dtypes


def _model_notes(facts: ModelFacts, prefix_caching: bool) -> list[str]:
    """What the plan says about the model itself: hybrid state, its TurboQuant hint, estimated weights."""
    notes = []
    if facts.is_hybrid:
        notes.append(
            f"hybrid: only {len(facts.full_attention_layers)} full-attention layers hold per-token KV; "
            f"each sequence also holds fixed linear-attention state (mamba cache mode "
            f"{'align' if prefix_caching else 'none'})"
        )
    notes += [
        f"turbo_quant_config ({p.severity.value}): {p.title}; {p.remediation}"
        for p in facts.turbo_quant_config_problems
    ]
    if not facts.weight_bytes:
        notes.append(
            "weights estimated from config.json (no safetensors headers read): point --model at the "
            "checkpoint folder or REPO@REV for exact bytes"
        )
    return notes


def _row(
    facts: ModelFacts,
    dtype: str,
    budget: Budget,
    max_model_len: int,
    tp: int,
    skips: tuple[int, ...],
    platform: str,
    prefix_caching: bool,
    version: str,
    cc: tuple[int, int] | None,
    backend: str | None,
) -> PlanRow:
    row = PlanRow(kv_cache_dtype=dtype, status="ok", availability=AVAILABILITY.get(dtype, ""))
    try:
        row.kv_bytes_per_token = kv_bytes_per_token(facts, dtype, tp, skips)
        row.skip_layers = effective_skip_layers(facts, dtype, skips) if dtype != "auto" else []
        batched, _ = scheduler_defaults(budget.gpu_memory_bytes, "", platform)
        cap = kv_capacity(
            facts,
            dtype,
            budget.kv_bytes,
            max_model_len,
            tp=tp,
            skip_layers=skips,
            platform=platform,
            prefix_caching=prefix_caching,
            max_in_flight_tokens=batched,
        )
    except NotApplicable as exc:
        return PlanRow(
            kv_cache_dtype=dtype, status="not_applicable", reason=str(exc), availability=AVAILABILITY.get(dtype, "")
        )
    except ValueError as exc:
        return PlanRow(kv_cache_dtype=dtype, status="not_applicable", reason=f"not modelled: {exc}")
    row.kv_tokens, row.max_concurrency, row.block_size = cap.tokens, round(cap.max_concurrency, 4), cap.block_size
    row.fixed_state_bytes_per_seq, row.exact = cap.fixed_state_bytes_per_seq, cap.exact
    if cap.notes:
        row.reason = "; ".join(cap.notes)
    row.problems = compat.turboquant_problems(facts, dtype, version, cc, backend)
    if cap.max_concurrency < 1:
        row.status = "does_not_fit"
        row.reason = (
            f"KV holds {cap.tokens:,} tokens: less than one sequence of {max_model_len:,}"
            if budget.kv_bytes > 0
            else "no memory left for the KV cache"
        )
    return row


def _model_summary(facts: ModelFacts) -> dict[str, Any]:
    keys = (
        "source",
        "architecture",
        "model_type",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "dtype",
        "is_hybrid",
        "full_attention_layers",
        "weight_bytes",
        "weight_source",
        "max_position_embeddings",
        "mla",
        "sliding_window",
        "linear_attention",
        "quantization",
        "turbo_quant_config",
    )
    data = {k: v for k, v in asdict(facts).items() if k in keys}
    data["kv_layers"] = facts.kv_layers
    return data


def _usable(row: PlanRow) -> bool:
    return row.status == "ok" and not any(p.severity is Severity.ERROR for p in row.problems)


def _recommend(plan: Plan, hint: dict[str, Any] | None, min_concurrency: float) -> None:
    rows = {r.kv_cache_dtype: r for r in plan.rows}
    if hint and hint.get("kv_cache_dtype") in rows and _usable(rows[hint["kv_cache_dtype"]]):
        r = rows[hint["kv_cache_dtype"]]
        plan.recommended = r.kv_cache_dtype
        plan.recommendation_reason = (
            f"the checkpoint's turbo_quant_config hint; {r.max_concurrency:.2f} sequences "
            f"of {plan.max_model_len:,} tokens fit"
        )
        return
    usable = [rows[d] for d in PREFERENCE if d in rows and _usable(rows[d])]
    for r in usable:
        if r.max_concurrency is not None and r.max_concurrency >= min_concurrency:
            plan.recommended = r.kv_cache_dtype
            why = {"auto": "full-precision KV is the fastest and", "fp8": "fp8 halves KV memory at little cost and"}
            lead = why.get(r.kv_cache_dtype, "TurboQuant trades throughput for capacity and")
            plan.recommendation_reason = (
                f"{lead} holds {r.max_concurrency:.2f} sequences of "
                f"{plan.max_model_len:,} tokens (target >= {min_concurrency:g})"
            )
            return
    if usable:
        best = max(usable, key=lambda r: r.max_concurrency or 0.0)
        plan.recommended = best.kv_cache_dtype
        plan.recommendation_reason = (
            f"no dtype reaches {min_concurrency:g} sequences; {best.kv_cache_dtype} holds "
            f"the most ({best.max_concurrency:.2f})"
        )
        return
    plan.recommendation_reason = (
        f"no KV dtype holds one sequence of {plan.max_model_len:,} tokens: lower "
        "--max-model-len, raise --gpu-memory-utilization or add GPUs (--tp)"
    )
