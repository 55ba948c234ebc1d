"""What the checkpoint is (TQ201) and its turbo_quant_config hint (TQ202): read only ctx.model (ModelFacts)."""

from __future__ import annotations

from tqdeploy.doctor.registry import ModelInputs, Verdicts, error, info, model_check, passed, warn
from tqdeploy.findings import Severity
from tqdeploy.units import GiB


@model_check("TQ201", "model", "checkpoint architecture")
def architecture(ctx: ModelInputs) -> Verdicts:
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


@model_check("TQ202", "model", "turbo_quant_config in config.json")
def turbo_quant_config(ctx: ModelInputs) -> Verdicts:
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
    for p in f.turbo_quant_config_problems:  # Findings of model.tqhint, already TQ202's
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
