"""Is TurboQuant really in effect? The KV cache vLLM built (its log and vllm:cache_config_info) against
tqdeploy's planner (plan/allocator.py kv_capacity, via plan/vllmlog.py calibrate) for the same memory.

Capacity per byte is the tell: KV memory / real tokens. A TurboQuant dtype that is in effect costs well
under the model-dtype bytes per token; the CPU build of 0.32.0 accepts turboquant_4bit_nc, reports it in
cache_config_info, and still keeps a bf16-sized cache (tests/fixtures/vllm-logs/cpu-vllm-0.32.0).
"""

from __future__ import annotations

from tqdeploy.findings import Finding, Severity
from tqdeploy.model import ModelFacts
from tqdeploy.plan import kv_bytes_per_token
from tqdeploy.plan.kvformula import effective_skip_layers
from tqdeploy.plan.vllmlog import calibrate, parse_kv_log
from tqdeploy.profile.jsontypes import JSONObject

AREA = "kv cache"
SAME_SIZE = 0.02  # bytes per token within 2% of the unquantized figure: block rounding, not quantization
PLAN_TOLERANCE = 0.01


def kv_figures(
    log_text: str, cache_config: JSONObject | None = None, facts: ModelFacts | None = None
) -> tuple[JSONObject, list[Finding]]:
    """The `kv` section of profile.json and its findings (TQ430, TQ431)."""
    cache_config = cache_config or {}
    kv: JSONObject = {"cache_dtype": cache_config.get("cache_dtype"), "planned_tokens": None, "real_tokens": None}
    kv["real_tokens"] = cache_config.get("kv_cache_size_tokens")
    kv["num_gpu_blocks"] = cache_config.get("num_gpu_blocks")
    try:
        logged = parse_kv_log(log_text)
    except ValueError as exc:
        kv["note"] = str(exc)
        return kv, []
    kv["real_tokens"] = kv["real_tokens"] or logged.kv_tokens
    kv["cache_dtype"] = kv["cache_dtype"] or logged.kv_cache_dtype
    kv["kv_memory_gib"] = logged.kv_memory_gib
    kv["bytes_per_token_real"] = round(logged.kv_memory_bytes / max(1, kv["real_tokens"]), 2)
    if facts is None:
        kv["note"] = "no model folder given (--model): planned capacity not computed"
        return kv, []
    return kv, _compare(kv, facts, log_text)


def _compare(kv: JSONObject, facts: ModelFacts, log_text: str) -> list[Finding]:
    dtype = kv["cache_dtype"] or "auto"
    planned = calibrate(facts, log_text, kv_cache_dtype=dtype)
    real = kv["real_tokens"]
    kv["planned_tokens"] = planned.planned_tokens
    unquantized = kv_bytes_per_token(facts, "auto")
    kv["bytes_per_token_unquantized"] = unquantized
    kv["bytes_per_token_planned"] = kv_bytes_per_token(facts, dtype)
    findings: list[Finding] = []
    per_byte_same = abs(kv["bytes_per_token_real"] - unquantized) / unquantized <= SAME_SIZE
    if dtype.startswith("turboquant") and per_byte_same:
        findings.append(_not_quantized(kv, facts, dtype))
    # the log prints KV memory with two decimals: a real count inside the plan for that interval agrees
    outside = not (planned.planned_low <= real <= planned.planned_high)
    if real and outside and abs(planned.planned_tokens - real) / real > PLAN_TOLERANCE:
        findings.append(
            Finding(
                "TQ431",
                Severity.WARN,
                f"real KV capacity {real:,} tokens differs from the plan's {planned.planned_tokens:,} by "
                f"{(real - planned.planned_tokens) / planned.planned_tokens:+.1%}",
                {"cache_dtype": dtype, "real_tokens": real, "planned_tokens": planned.planned_tokens},
                "re-plan with the real KV memory (tqdeploy plan --kv-cache-memory-gib) and report the model "
                "if the planner is wrong for it",
                AREA,
            )
        )
    if not findings:
        findings.append(
            Finding(
                "TQ431",
                Severity.OK,
                f"real KV capacity {real:,} tokens matches the plan ({planned.planned_tokens:,}) for {dtype}",
                {"cache_dtype": dtype, "real_tokens": real, "planned_tokens": planned.planned_tokens},
                area=AREA,
            )
        )
    return findings


def _not_quantized(kv: JSONObject, facts: ModelFacts, dtype: str) -> Finding:
    """TQ430: a TurboQuant dtype was asked for and the cache costs the unquantized bytes per token."""
    skips = effective_skip_layers(facts, dtype)
    all_skipped = set(facts.kv_layers) <= set(skips)
    evidence = {
        "requested": dtype,
        "real_tokens": kv["real_tokens"],
        "bytes_per_token_real": kv["bytes_per_token_real"],
        "bytes_per_token_unquantized": kv["bytes_per_token_unquantized"],
        "bytes_per_token_turboquant": kv["bytes_per_token_planned"],
        "layers_kept_at_model_dtype": f"{len(skips)} of {len(facts.kv_layers)}",
    }
    why = (
        "every KV layer is a boundary layer TurboQuant keeps at model dtype"
        if all_skipped
        else "this vLLM build accepted the dtype but did not quantize the cache"
    )
    return Finding(
        "TQ430",
        Severity.ERROR,
        f"TurboQuant ({dtype}) requested but the KV cache costs unquantized bytes per token: {why}",
        evidence,
        "run on a CUDA build whose attention backend is TURBOQUANT (the log says 'Using TURBOQUANT "
        "attention backend'); a model with more than 4 layers; or plan with --kv-cache-dtype auto",
        AREA,
    )
