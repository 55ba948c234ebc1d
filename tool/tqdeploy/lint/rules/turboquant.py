"""TurboQuant KV dtypes with other options (TQ320, TQ321).

- TQ320: a turboquant_* KV dtype with --attention-backend TRITON_ATTN/FLASHINFER fails
  ("kv_cache_dtype not supported"); left alone, vLLM's backend priority list ends in TURBOQUANT
  (vllm/platforms/cuda.py), which is picked for these dtypes.
- TQ321: TurboQuant + speculative decoding is an error, with or without --enforce-eager. vLLM 0.32's
  TurboQuant backend builds its metadata with ``_init_reorder_batch_threshold(1,
  supports_spec_as_decode=False)`` (vllm/v1/attention/backends/turboquant_attn.py,
  TurboQuantMetadataBuilder.__init__; vllm/v1/attention/backend.py only raises the decode threshold for
  backends that support spec-as-decode): a verify batch of 1+k tokens is never a decode there. The
  degenerate output of #40831/#40880 was closed by downstream patches, not upstream; #52475 and #53180
  (stock releases) are open and the fix (PR #53406) is not in 0.32. --enforce-eager, #40831's workaround,
  is not a known fix on 0.32.
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


@rule("TQ321", "turboquant", "TurboQuant with speculative decoding")
def speculative_decoding(ctx: LintContext) -> list[Finding]:
    dtype = _turboquant_dtype(ctx)
    spec = ctx.parsed.last("speculative_config")
    if dtype is None or spec is None:
        return []
    eager = " (--enforce-eager does not fix it there)" if ctx.parsed.flag_on("enforce_eager") else ""
    return [
        lint_finding(
            "TQ321",
            Severity.ERROR,
            spec.name,
            f"TurboQuant ({dtype}) with speculative decoding gives silently degenerate output on vLLM "
            f"{ctx.schema.version}{eager}: its TurboQuant backend does not run speculative verify batches as "
            "decodes (turboquant_attn.py: supports_spec_as_decode=False; vLLM issues #52475, #53180 open)",
            "choose one: drop --speculative-config and keep TurboQuant, or keep speculative decoding with "
            "--kv-cache-dtype fp8 (or auto); re-check when a vLLM release includes PR #53406",
            None,
            spec.start,
        )
    ]
