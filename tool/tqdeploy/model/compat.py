"""What a checkpoint needs from a deployment: one source of truth for doctor (TQ2xx) and lint.

Each function returns a list of Finding (ids left to the caller, see problem()); an empty list means
nothing to report. Sources are cited at each rule (vLLM 0.32.0 unless stated; FACTS = docs/facts.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from tqdeploy.findings import Finding, Severity
from tqdeploy.model.facts import ModelFacts
from tqdeploy.model.tqdata import turboquant_table
from tqdeploy.model.weights import estimate_weight_bytes
from tqdeploy.units import GiB as gib


def problem(severity: Severity, code: str, message: str, fix: str, flag: str | None = None) -> Finding:
    """A rule's result as a Finding without an id: doctor (TQ2xx) and lint (TQ34x) stamp their own.
    code (e.g. TP_HEADS) names the rule in evidence; flag is the vLLM option it is about."""
    return Finding(
        id="", severity=severity, title=message, evidence={"code": code}, remediation=fix, location=flag or ""
    )


def valid_tp_sizes(facts: ModelFacts, limit: int = 16) -> list[int]:
    return [tp for tp in range(1, limit + 1) if not _tp_errors(facts, tp)]


def _tp_errors(facts: ModelFacts, tp: int) -> list[str]:
    errors = []
    if facts.num_attention_heads % tp:
        errors.append(f"{facts.num_attention_heads} attention heads are not divisible by {tp}")
    kv = facts.num_key_value_heads
    if not facts.mla and kv:
        # QKVParallelLinear: divide(kv, tp) when tp < kv, else divide(tp, kv) replicas.
        if (tp < kv and kv % tp) or (tp >= kv and tp % kv):
            errors.append(f"{kv} KV heads cannot be split or replicated evenly over {tp} GPUs")
    la = facts.linear_attention or {}
    for key in ("num_key_heads", "num_value_heads"):
        n = la.get(key)
        if n and n % tp:  # gated_delta_net_state_shape: divide(heads, tp)
            errors.append(f"{n} linear-attention {key.replace('num_', '').replace('_', ' ')} are not divisible by {tp}")
    return errors


def tensor_parallel_problems(facts: ModelFacts, tp: int) -> list[Finding]:
    flag = "--tensor-parallel-size"
    if tp < 1:
        return [
            problem(
                Severity.ERROR,
                "TP_INVALID",
                f"tensor parallel size {tp} is not a positive integer",
                "use 1 or a divisor of the attention heads",
                flag,
            )
        ]
    errors = _tp_errors(facts, tp)
    if errors:
        valid = ", ".join(str(t) for t in valid_tp_sizes(facts))
        return [
            problem(
                Severity.ERROR,
                "TP_HEADS",
                f"--tensor-parallel-size {tp}: " + "; ".join(errors),
                f"use a tensor parallel size in {{{valid}}}",
                flag,
            )
        ]
    out: list[Finding] = []
    kv = facts.num_key_value_heads
    if not facts.mla and tp > kv:
        out.append(
            problem(
                Severity.INFO,
                "TP_KV_REPLICATED",
                f"{kv} KV heads over {tp} GPUs: each KV head is replicated on {tp // kv} GPUs, so "
                "KV memory per token per GPU stops shrinking beyond TP=" + str(kv),
                "expected with tensor parallelism wider than the KV heads; no action needed",
                flag,
            )
        )
    if facts.mla and tp > 1:
        out.append(
            problem(
                Severity.INFO,
                "TP_MLA_REPLICATED",
                "MLA caches one latent per token that every TP rank holds in full",
                "KV capacity per GPU does not grow with TP for MLA models",
                flag,
            )
        )
    return out


_ROPE_NO_FACTOR = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def config_max_model_len(facts: ModelFacts) -> int | None:
    """vLLM's derived max_model_len: max_position_embeddings x rope factor for rope types that need it
    (vllm/config/model.py _get_and_verify_max_len)."""
    derived = facts.max_position_embeddings
    if derived is None:
        return None
    rope = facts.rope_scaling or {}
    # rope parameters may be nested per layer type (vllm/transformers_utils/config.py iter_rope_parameters);
    # the last factor of a rope type that needs it wins, as in vLLM's loop
    params = (
        [p for p in rope.values() if isinstance(p, dict) and p]
        if rope and all(isinstance(p, dict) for p in rope.values())
        else [rope]
    )
    factor = 1.0
    for p in params:
        rope_type = p.get("rope_type") or p.get("type") or "default"
        if rope_type not in _ROPE_NO_FACTOR and isinstance(p.get("factor"), (int, float)):
            factor = p["factor"]
    if "gemma3" not in (facts.model_type or ""):
        derived = int(derived * factor)
    return derived


def max_model_len_problems(facts: ModelFacts, max_model_len: int) -> list[Finding]:
    flag = "--max-model-len"
    if max_model_len < 1:
        return [
            problem(
                Severity.ERROR,
                "MML_INVALID",
                f"--max-model-len {max_model_len} is not positive",
                "pass a positive token count",
                flag,
            )
        ]
    limit = config_max_model_len(facts)
    if limit is None:
        return [
            problem(
                Severity.WARN,
                "MML_UNKNOWN",
                "config.json names no max_position_embeddings; vLLM "
                "falls back to its default and cannot check --max-model-len",
                "check the model card for the supported context length",
                flag,
            )
        ]
    if max_model_len > limit:
        return [
            problem(
                Severity.ERROR,
                "MML_TOO_LONG",
                f"--max-model-len {max_model_len} exceeds what the config supports ({limit}); vLLM refuses "
                "to start unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and positions past it produce garbage",
                f"use --max-model-len {limit} or less",
                flag,
            )
        ]
    return []


def _version(v: str | None) -> Version | None:
    try:
        return Version(v) if v else None
    except InvalidVersion:
        return None


def _hybrid_problems(t: dict[str, Any], v: Version, vllm_version: str | None, flag: str) -> list[Finding]:
    """TurboQuant on a hybrid model (checks/turboquant.json known_bad and hybrid): crashes and unverified releases."""
    out: list[Finding] = []
    seen = Version(t["hybrid"]["seen_in"])
    for bad in t["known_bad"]:
        if bad["applies_to"] == "hybrid" and v >= Version(bad["from_version"]):
            maybe = bad.get("possibly_fixed_in")
            if maybe and v >= Version(maybe):
                out.append(
                    problem(
                        Severity.WARN,
                        "TQ_HYBRID_BUG",
                        f"hybrid + TurboQuant crashed on vLLM "
                        f"{bad['from_version']} ({bad['issue']}); {bad['possibly_fixed_note']}",
                        "run a short smoke test (start + one request) before production",
                        flag,
                    )
                )
            else:
                out.append(
                    problem(
                        Severity.ERROR,
                        "TQ_HYBRID_BUG",
                        f"vLLM {vllm_version} crashes with "
                        f"TurboQuant on hybrid models after allocating the KV cache ({bad['issue']}: "
                        f"{bad['symptom']})",
                        f"use vLLM {maybe} or later, or --kv-cache-dtype fp8",
                        flag,
                    )
                )
    if v < seen:
        out.append(
            problem(
                Severity.WARN,
                "TQ_HYBRID_SUPPORT",
                f"hybrid TurboQuant support came with "
                f"{t['hybrid']['pr']}; whether vLLM {vllm_version} has it is not verified",
                f"use vLLM >= {t['hybrid']['seen_in']}",
                flag,
            )
        )
    return out


@dataclass(frozen=True)
class TurboQuantAsk:
    """One TurboQuant launch as the rules see it: the model, the preset, the vLLM release and GPU, the flags."""

    facts: ModelFacts
    table: dict[str, Any]  # checks/turboquant.json
    vllm_version: str | None
    version: Version | None  # vllm_version parsed, None where it is not one
    compute_capability: tuple[int, int] | None
    attention_backend: str | None
    serving_dtype: str | None


FLAG = "--kv-cache-dtype"


def _tq_version(ask: TurboQuantAsk) -> list[Finding]:
    least = ask.table["min_vllm_version"]
    if ask.version is None or ask.version >= Version(least):
        return []
    return [
        problem(
            Severity.ERROR,
            "TQ_VERSION",
            f"vLLM {ask.vllm_version} has no TurboQuant (first in {least}, PR #38479)",
            f"use vLLM >= {least}",
            FLAG,
        )
    ]


def _tq_hybrid(ask: TurboQuantAsk) -> list[Finding]:
    if not ask.facts.is_hybrid or ask.version is None or ask.version < Version(ask.table["min_vllm_version"]):
        return []
    return _hybrid_problems(ask.table, ask.version, ask.vllm_version, FLAG)


def _tq_compute_capability(ask: TurboQuantAsk) -> list[Finding]:
    cc = ask.compute_capability
    if cc is None or tuple(cc) >= tuple(ask.table["min_compute_capability"]):
        return []
    shown = ".".join(str(x) for x in cc)
    return [
        problem(
            Severity.ERROR,
            "TQ_COMPUTE_CAPABILITY",
            f"TurboQuant needs compute capability >= 8.0; this GPU has {shown} (T4/Volta fail, issue #43576)",
            "use --kv-cache-dtype fp8 on this GPU, or an Ampere or newer GPU",
            FLAG,
        )
    ]


def _tq_attention_layout(ask: TurboQuantAsk) -> list[Finding]:
    """MLA has no TurboQuant backend; elsewhere the Hadamard rotation needs a power-of-two head size."""
    hs = ask.facts.kv_head_size
    if ask.facts.mla:
        return [
            problem(
                Severity.ERROR,
                "TQ_MLA",
                "TurboQuant has no MLA backend (decoder GQA/MHA attention only)",
                "use --kv-cache-dtype fp8 for MLA models",
                FLAG,
            )
        ]
    if hs & (hs - 1):
        return [
            problem(
                Severity.ERROR,
                "TQ_HEAD_DIM",
                f"head_dim {hs} is not a power of two; the Hadamard rotation needs one (64/128/256 work)",
                "use --kv-cache-dtype fp8 for this model",
                FLAG,
            )
        ]
    return []


def _tq_softcap(ask: TurboQuantAsk) -> list[Finding]:
    # vLLM 0.32.0 v1/attention/backends/turboquant_attn.py: TurboQuantAttentionImpl takes logits_soft_cap
    # and never uses it; its prefill calls flash_attn_varlen_func without softcap, and the unified
    # Triton kernel defers softcap ("Sinks / softcap / ... are deferred to follow-ups").
    cap = ask.facts.attn_logit_softcapping
    if not cap or ask.facts.mla:
        return []
    return [
        problem(
            Severity.WARN,
            "TQ_SOFTCAP",
            f"this model soft-caps attention logits "
            f"(attn_logit_softcapping {cap:g}); vLLM's TurboQuant attention "
            "accepts the cap but does not apply it (turboquant_attn.py, vLLM 0.32.0), so its "
            "TurboQuant layers attend without it",
            "use --kv-cache-dtype fp8 for this model, or "
            "compare outputs with --kv-cache-dtype auto before relying on TurboQuant",
            FLAG,
        )
    ]


def _tq_model_dtype(ask: TurboQuantAsk) -> list[Finding]:
    # TurboQuantAttentionBackend.supported_dtypes is float16/bfloat16. Under --dtype auto (the default)
    # vLLM serves even a float32 checkpoint in bfloat16/float16 (config/model.py _resolve_auto_dtype), so
    # only an explicit --dtype float32 breaks it.
    given = (ask.serving_dtype or "auto").lower()
    asked = {"half": "float16", "float": "float32"}.get(given, given)
    if asked == "auto" or asked in ask.table["model_dtypes"]:
        return []
    return [
        problem(
            Severity.ERROR,
            "TQ_MODEL_DTYPE",
            f"--dtype {ask.serving_dtype}: TurboQuant attention runs float16/bfloat16 models only",
            "drop --dtype (vLLM serves "
            f"{ask.facts.dtype or 'the checkpoint'} as {ask.facts.serving_dtype}) or pass --dtype bfloat16",
            "--dtype",
        )
    ]


def _tq_backend(ask: TurboQuantAsk) -> list[Finding]:
    backend = ask.attention_backend
    if not backend or backend.upper() not in ask.table["incompatible_attention_backends"]:
        return []
    return [
        problem(
            Severity.ERROR,
            "TQ_BACKEND",
            f'--attention-backend {backend} does not support TurboQuant KV dtypes ("kv_cache_dtype not supported")',
            "drop --attention-backend (vLLM picks TURBOQUANT) or set it to TURBOQUANT",
            "--attention-backend",
        )
    ]


# The TurboQuant rules for a known preset, in the order their findings are reported.
TURBOQUANT_RULES: tuple[Callable[[TurboQuantAsk], list[Finding]], ...] = (
    _tq_version,
    _tq_hybrid,
    _tq_compute_capability,
    _tq_attention_layout,
    _tq_softcap,
    _tq_model_dtype,
    _tq_backend,
)


def turboquant_problems(
    facts: ModelFacts,
    kv_cache_dtype: str,
    vllm_version: str | None,
    compute_capability: tuple[int, int] | None = None,
    attention_backend: str | None = None,
    serving_dtype: str | None = None,
) -> list[Finding]:
    """TurboQuant rules (checks/turboquant.json, FACTS TurboQuant section); [] for other dtypes.
    serving_dtype is vLLM's --dtype (None = auto)."""
    if not kv_cache_dtype.startswith("turboquant_"):
        return []
    table = turboquant_table()
    if kv_cache_dtype not in table["presets"]:
        return [
            problem(
                Severity.ERROR,
                "TQ_PRESET",
                f"{kv_cache_dtype} is not a TurboQuant preset",
                f"use one of {', '.join(table['presets'])}",
                FLAG,
            )
        ]
    ask = TurboQuantAsk(
        facts, table, vllm_version, _version(vllm_version), compute_capability, attention_backend, serving_dtype
    )
    return [finding for rule in TURBOQUANT_RULES for finding in rule(ask)]


def weights_fit_problems(
    facts: ModelFacts, tp: int, gpu_memory_bytes: int, gpu_memory_utilization: float
) -> list[Finding]:
    """Weights per GPU against the memory vLLM may use (total x gpu_memory_utilization)."""
    exact = facts.weight_bytes is not None
    total = facts.weight_bytes if facts.weight_bytes is not None else estimate_weight_bytes(facts)
    per_gpu = -(-total // max(tp, 1))
    usable = int(gpu_memory_bytes * gpu_memory_utilization)

    how = "" if exact else " (estimated from config.json)"
    if per_gpu >= usable:
        need = next(
            (t for t in (2, 4, 8, 16) if t > tp and -(-total // t) < usable * 0.8 and not _tp_errors(facts, t)), None
        )
        fix = f"use --tensor-parallel-size {need}" if need else "use a quantized checkpoint or more GPUs"
        return [
            problem(
                Severity.ERROR,
                "WEIGHTS_DONT_FIT",
                f"weights need {per_gpu / gib:.2f} GiB per GPU{how} but "
                f"only {usable / gib:.2f} GiB are usable (x{gpu_memory_utilization})",
                fix,
                "--tensor-parallel-size",
            )
        ]
    if per_gpu >= usable * 0.9:
        return [
            problem(
                Severity.WARN,
                "WEIGHTS_TIGHT",
                f"weights take {per_gpu / gib:.2f} GiB of {usable / gib:.2f} "
                f"GiB usable per GPU{how}: little room is left for the KV cache",
                "add GPUs (tensor parallel) or use an FP8/AWQ checkpoint",
                "--tensor-parallel-size",
            )
        ]
    return []
