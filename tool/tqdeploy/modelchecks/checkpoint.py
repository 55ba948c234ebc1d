"""Checkpoint audit checks (TQ2xx): read only ctx.model (ModelFacts), ctx.host and ctx.options.

Options they honour when a caller sets them: vllm_version, tensor_parallel_size, max_model_len,
kv_cache_dtype, gpu_memory_utilization, attention_backend, dtype (vLLM's --dtype). The rules live in tqdeploy.model.compat
(shared with the linter); these checks only turn Problems into verdicts.
"""

from __future__ import annotations

from tqdeploy.checkbase import Verdict, check, error, info, passed, warn
from tqdeploy.findings import Severity

GiB = 1 << 30


def _verdicts(problems, ok_title: str, ok_evidence: dict) -> list[Verdict]:
    if not problems:
        return [passed(ok_evidence, title=ok_title)]
    make = {Severity.ERROR: error, Severity.WARN: warn, Severity.INFO: info}
    return [make[p.severity](dict(ok_evidence, **p.evidence), p.remediation, title=p.title) for p in problems]


def _tp(ctx) -> tuple[int | None, str]:
    tp = ctx.options.get("tensor_parallel_size")
    if tp:
        return int(tp), "--tensor-parallel-size"
    gpus = getattr(ctx.host, "gpus", None) or []
    if gpus:
        return len(gpus), f"{len(gpus)} GPU(s) on the host"
    return None, ""


def _cc(ctx) -> tuple[int, int] | None:
    ccs = [tuple(g.compute_capability) for g in (getattr(ctx.host, "gpus", None) or []) if g.compute_capability]
    return min(ccs) if ccs else None


@check("TQ201", "model", "checkpoint architecture", needs=("model",))
def architecture(ctx):
    f = ctx.model
    ev = {
        "architecture": f.architecture,
        "layers": f.num_hidden_layers,
        "kv_layers": len(f.kv_layers),
        "attention_heads": f.num_attention_heads,
        "kv_heads": f.num_key_value_heads,
        "head_dim": f.head_dim,
        "dtype": f.dtype,
        "hybrid": f.is_hybrid,
        "mla": bool(f.mla),
        "moe": bool(f.moe),
        "sliding_window_layers": len(f.sliding_window["layers"]) if f.sliding_window else 0,
        "weights_gib": round(f.weight_bytes / GiB, 2) if f.weight_bytes else None,
        "weights_from": f.weight_source,
    }
    if f.quantization:
        ev["quantization"] = ", ".join(f"{k}={v}" for k, v in f.quantization.items() if k != "schemes")
    if f.notes:
        return warn(
            ev,
            "check that vLLM supports this architecture; tqdeploy sizes unknown layer types as full attention",
            title=f"{f.architecture}: {'; '.join(f.notes)}",
        )
    if f.weight_bytes is None:
        return info(
            ev,
            "download the *.safetensors files (or use REPO@REV) for exact weight bytes",
            title=f"{f.architecture}: no safetensors headers read, weight size unknown",
        )
    kind = "hybrid" if f.is_hybrid else "MLA" if f.mla else "MoE" if f.moe else "dense"
    return passed(
        ev,
        title=f"{f.architecture}: {kind}, {f.num_hidden_layers} layers, "
        f"{len(f.kv_layers)} hold KV, {f.weight_bytes / GiB:.2f} GiB of weights",
    )


@check("TQ202", "model", "turbo_quant_config in config.json", needs=("model",))
def turbo_quant_config(ctx):
    f = ctx.model
    if f.turbo_quant_config_raw is None:
        return info(
            {"turbo_quant_config": "absent"},
            "nothing to do: enable TurboQuant at launch with --kv-cache-dtype turboquant_4bit_nc",
            title="no turbo_quant_config: none is needed, vLLM reads no such field; TurboQuant is a "
            "launch flag, not a checkpoint change",
        )
    ev = {"turbo_quant_config": f.turbo_quant_config_raw}
    out = []
    for p in f.turbo_quant_config_problems:
        out.append((error if p.severity is Severity.ERROR else warn)(ev, p.remediation, title=p.title))
    if f.turbo_quant_config:
        hint = f.turbo_quant_config
        out.append(
            info(
                dict(ev, parsed=hint),
                "tqdeploy plan/build use it as the default KV dtype; vLLM itself "
                f"ignores the field, so pass --kv-cache-dtype {hint['kv_cache_dtype']} when launching by hand",
                title=f"turbo_quant_config is a tqdeploy hint: --kv-cache-dtype {hint['kv_cache_dtype']}"
                + (f", skip layers {hint['skip_layers']}" if hint["skip_layers"] else ""),
            )
        )
    return out


@check("TQ203", "model", "tensor parallel size fits the heads", needs=("model",))
def tensor_parallel(ctx):
    from tqdeploy.model.compat import tensor_parallel_problems, valid_tp_sizes

    f = ctx.model
    tp, why = _tp(ctx)
    valid = valid_tp_sizes(f)
    ev = {"attention_heads": f.num_attention_heads, "kv_heads": f.num_key_value_heads, "valid_tp": valid}
    if f.linear_attention:
        ev["linear_key_heads"] = f.linear_attention.get("num_key_heads")
    if tp is None:
        return info(ev, "", title=f"valid tensor parallel sizes: {', '.join(map(str, valid))}")
    ev["tp"], ev["tp_from"] = tp, why
    verdicts = _verdicts(tensor_parallel_problems(f, tp), f"TP={tp} divides the heads ({why})", ev)
    gpus = len(getattr(ctx.host, "gpus", None) or [])
    if gpus and tp > gpus:  # one GPU per rank on a single node: vLLM waits for ranks that never come
        ev = dict(ev, gpus_on_host=gpus)
        verdicts = [v for v in verdicts if v.severity is not Severity.OK]
        fits = [s for s in valid if s <= gpus]
        fix = "add GPUs or nodes (multi-node: --nnodes or Ray)"
        if fits:
            fix = f"use --tensor-parallel-size {max(fits)} on this host, or {fix}"
        verdicts.append(error(ev, fix, title=f"TP={tp} needs {tp} GPUs; the host has {gpus}"))
    return verdicts


@check("TQ204", "model", "max-model-len within the config's context", needs=("model",))
def max_model_len(ctx):
    from tqdeploy.model.compat import config_max_model_len, max_model_len_problems

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
    return _verdicts(max_model_len_problems(f, int(mml)), f"--max-model-len {int(mml):,} <= {limit:,}", ev)


@check("TQ205", "model", "TurboQuant compatibility", needs=("model",))
def turboquant(ctx):
    from tqdeploy.model.compat import turboquant_problems
    from tqdeploy.pins import DEFAULT_VLLM_VERSION

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
    return _verdicts(problems, f"{dtype} works with this checkpoint on vLLM {version}", ev)


@check("TQ206", "model", "weights fit per GPU", needs=("model", "host"))
def weights_fit(ctx):
    from tqdeploy.model.compat import weights_fit_problems
    from tqdeploy.plan import DEFAULT_GPU_MEMORY_UTILIZATION

    f = ctx.model
    gpus = [g for g in (ctx.host.gpus or []) if g.memory_total]
    if not gpus:
        from tqdeploy.checkbase import skipped

        return skipped("no GPU memory in the host snapshot")
    tp, why = _tp(ctx)
    memory = min(g.memory_total for g in gpus)
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
    return _verdicts(
        weights_fit_problems(f, tp, memory, util), f"weights fit: TP={tp} on {memory / GiB:.1f} GiB GPUs", ev
    )
