"""TurboQuant KV dtypes with other options (TQ320, TQ321).

- TQ320: a turboquant_* KV dtype with --attention-backend TRITON_ATTN/FLASHINFER fails
  ("kv_cache_dtype not supported"); left alone, vLLM's backend priority list ends in TURBOQUANT
  (vllm/platforms/cuda.py), which is picked for these dtypes.
- TQ321: TurboQuant + speculative decoding under CUDA graphs produced garbage (vLLM issue #40831);
  --enforce-eager fixed it.
"""

from __future__ import annotations

from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.report import lint_finding

INCOMPATIBLE_TQ_BACKENDS = {"TRITON_ATTN", "FLASHINFER"}


def _turboquant_dtype(ctx: LintContext) -> str | None:
    dtype = ctx.parsed.value("kv_cache_dtype") or ""
    return dtype if dtype.startswith("turboquant_") else None


@rule("TQ320", "turboquant", "TurboQuant KV dtype on an attention backend without it")
def incompatible_backend(ctx: LintContext) -> list[Finding]:
    dtype = _turboquant_dtype(ctx)
    backend = ctx.parsed.last("attention_backend")
    if dtype is None or backend is None or (backend.value or "").upper() not in INCOMPATIBLE_TQ_BACKENDS:
        return []
    return [
        lint_finding(
            "TQ320",
            Severity.ERROR,
            backend.name,
            f"--kv-cache-dtype {dtype} cannot run on --attention-backend {backend.value}: that backend does "
            "not support TurboQuant KV dtypes (vLLM fails with 'kv_cache_dtype not supported')",
            "drop --attention-backend (vLLM then selects TURBOQUANT) or set --attention-backend TURBOQUANT",
            Edit(backend.start, backend.end, ()),
            backend.start,
        )
    ]


@rule("TQ321", "turboquant", "TurboQuant with speculative decoding under CUDA graphs")
def speculative_without_eager(ctx: LintContext) -> list[Finding]:
    dtype = _turboquant_dtype(ctx)
    spec = ctx.parsed.last("speculative_config")
    if dtype is None or spec is None or ctx.parsed.flag_on("enforce_eager"):
        return []
    return [
        lint_finding(
            "TQ321",
            Severity.WARN,
            spec.name,
            f"TurboQuant ({dtype}) with speculative decoding under CUDA graphs produced garbage output "
            "(vLLM issue #40831)",
            "add --enforce-eager (it fixed #40831), and compare outputs against a run without TurboQuant",
            Edit(ctx.inv.vllm_end, ctx.inv.vllm_end, ("--enforce-eager",)),
            spec.start,
        )
    ]
