"""The checkpoint against how it will be served (TQ203-TQ206): read ctx.model (ModelFacts), ctx.host and
ctx.options.

Options they honour when a caller sets them: vllm_version, tensor_parallel_size, max_model_len,
kv_cache_dtype, gpu_memory_utilization, attention_backend, dtype (vLLM's --dtype). The rules live in
tqdeploy.model.compat (shared with lint's TQ340-TQ343); these checks give them the host's and the
options' values and add the evidence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tqdeploy.doctor.registry import (
    ModelInputs,
    ModelOnHostInputs,
    Verdicts,
    error,
    info,
    model_check,
    model_on_host_check,
    passed,
    skipped,
    warn,
)
from tqdeploy.findings import Finding, Severity
from tqdeploy.model.compat import (
    config_max_model_len,
    max_model_len_problems,
    tensor_parallel_problems,
    turboquant_problems,
    valid_tp_sizes,
    weights_fit_problems,
)
from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_VLLM_VERSION
from tqdeploy.snapshot import GPU, HostSnapshot
from tqdeploy.units import GiB


def _results(problems: list[Finding], ok_title: str, ok_evidence: dict[str, Any]) -> list[Finding]:
    """compat's findings with this check's evidence (each keeps its rule's code), or one pass."""
    if not problems:
        return [passed(ok_evidence, title=ok_title)]
    return [replace(p, evidence=dict(ok_evidence, **p.evidence)) for p in problems]


def _gpus(host: HostSnapshot | None) -> list[GPU]:
    return host.gpus if host is not None else []


def _tp(ctx: ModelInputs | ModelOnHostInputs) -> tuple[int | None, str]:
    tp = ctx.options.get("tensor_parallel_size")
    if tp:
        return int(tp), "--tensor-parallel-size"
    gpus = _gpus(ctx.host)
    if gpus:
        return len(gpus), f"{len(gpus)} GPU(s) on the host"
    return None, ""


def _cc(ctx: ModelInputs) -> tuple[int, int] | None:
    ccs = [(g.compute_capability[0], g.compute_capability[1]) for g in _gpus(ctx.host) if g.compute_capability]
    return min(ccs) if ccs else None


@model_check("TQ203", "model", "tensor parallel size fits the heads")
def tensor_parallel(ctx: ModelInputs) -> Verdicts:
    f = ctx.model
    tp, why = _tp(ctx)
    valid = valid_tp_sizes(f)
    ev = {"attention_heads": f.num_attention_heads, "kv_heads": f.num_key_value_heads, "valid_tp": valid}
    if f.linear_attention:
        ev["linear_key_heads"] = f.linear_attention.get("num_key_heads")
    if tp is None:
        return info(ev, "", title=f"valid tensor parallel sizes: {', '.join(map(str, valid))}")
    ev["tp"], ev["tp_from"] = tp, why
    results = _results(tensor_parallel_problems(f, tp), f"TP={tp} divides the heads ({why})", ev)
    gpus = len(_gpus(ctx.host))
    if gpus and tp > gpus:  # one GPU per rank on a single node: vLLM waits for ranks that never come
        ev = dict(ev, gpus_on_host=gpus)
        results = [v for v in results if v.severity is not Severity.OK]
        fits = [s for s in valid if s <= gpus]
        fix = "add GPUs or nodes (multi-node: --nnodes or Ray)"
        if fits:
            fix = f"use --tensor-parallel-size {max(fits)} on this host, or {fix}"
        results.append(error(ev, fix, title=f"TP={tp} needs {tp} GPUs; the host has {gpus}"))
    return results


@model_check("TQ204", "model", "max-model-len within the config's context")
def max_model_len(ctx: ModelInputs) -> Verdicts:
    f = ctx.model
    limit = config_max_model_len(f)
    ev = {
        "max_position_embeddings": f.max_position_embeddings,
        "rope_scaling": f.rope_scaling,
        "supported_max_model_len": limit,
    }
    mml = ctx.options.get("max_model_len")
    if not mml:
        if limit is None:
            return warn(
                ev,
                "check the model card for the context length and pass --max-model-len",
                title="config.json names no context length",
            )
        return info(ev, "", title=f"the config supports --max-model-len up to {limit:,}")
    ev["max_model_len"] = int(mml)
    return _results(max_model_len_problems(f, int(mml)), f"--max-model-len {int(mml):,} <= {limit:,}", ev)


@model_check("TQ205", "model", "TurboQuant compatibility")
def turboquant(ctx: ModelInputs) -> Verdicts:
    f = ctx.model
    dtype = (
        ctx.options.get("kv_cache_dtype") or (f.turbo_quant_config or {}).get("kv_cache_dtype") or "turboquant_4bit_nc"
    )
    version = ctx.options.get("vllm_version") or DEFAULT_VLLM_VERSION
    cc = _cc(ctx)
    ev = {
        "kv_cache_dtype": dtype,
        "vllm_version": version,
        "compute_capability": ".".join(map(str, cc)) if cc else None,
        "head_dim": f.kv_head_size,
        "dtype": f.dtype,
        "hybrid": f.is_hybrid,
    }
    if not dtype.startswith("turboquant_"):
        return passed(ev, title=f"--kv-cache-dtype {dtype}: TurboQuant rules do not apply")
    problems = turboquant_problems(
        f, dtype, version, cc, ctx.options.get("attention_backend"), ctx.options.get("dtype")
    )
    return _results(problems, f"{dtype} works with this checkpoint on vLLM {version}", ev)


@model_on_host_check("TQ206", "model", "weights fit per GPU")
def weights_fit(ctx: ModelOnHostInputs) -> Verdicts:
    f = ctx.model
    memories = [g.memory_total for g in ctx.host.gpus if g.memory_total]
    if not memories:
        return skipped("no GPU memory in the host snapshot")
    tp, why = _tp(ctx)
    assert tp is not None  # the host has GPUs here, so _tp gives at least their count
    memory = min(memories)
    util = float(ctx.options.get("gpu_memory_utilization") or DEFAULT_GPU_MEMORY_UTILIZATION)
    total = f.weight_bytes or 0
    ev = {
        "tp": tp,
        "tp_from": why,
        "gpu_memory_gib": round(memory / GiB, 2),
        "gpu_memory_utilization": util,
        "weights_gib": round(total / GiB, 2) if total else None,
        "weights_from": f.weight_source or "estimate",
    }
    return _results(
        weights_fit_problems(f, tp, memory, util), f"weights fit: TP={tp} on {memory / GiB:.1f} GiB GPUs", ev
    )
