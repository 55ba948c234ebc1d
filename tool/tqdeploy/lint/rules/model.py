"""Rules that need the checkpoint (--model) and, for TQ343, the GPUs (--snapshot / --gpu) (TQ340-TQ343).

The rules themselves are tqdeploy.model.compat's, shared with the doctor's TQ203-TQ206: here they are fed
the command's own values, and report at the option they are about.
"""

from __future__ import annotations

from dataclasses import replace

from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.validate import _human_int
from tqdeploy.model import compat
from tqdeploy.snapshot import HostSnapshot

_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_int(value: str | None) -> int | None:
    """An integer the way vLLM's human_readable_int reads it (32k = 32000, 32K = 32768)."""
    if value is None or not _human_int(value):
        return None
    v = value.strip()
    if v and v[-1] in _SUFFIX:
        return int(float(v[:-1]) * _SUFFIX[v[-1]])
    return int(v)


def _at(findings: list[Finding], token: int) -> list[Finding]:
    """compat's findings, pointing at the option's argv index; only error / warn / info are reported."""
    out = []
    for f in findings:
        severity = f.severity if f.severity in (Severity.ERROR, Severity.WARN, Severity.INFO) else Severity.INFO
        out.append(replace(f, severity=severity, token=token))
    return out


def _tp(ctx: LintContext) -> tuple[int | None, int]:
    occ = ctx.parsed.last("tensor_parallel_size")
    if occ is None:
        return ctx.schema.options["tensor_parallel_size"].default, -1
    return human_int(occ.value), occ.start


@rule("TQ340", "model", "tensor parallel size vs the model's heads", needs=("model",))
def tensor_parallel(ctx: LintContext) -> list[Finding]:
    tp, token = _tp(ctx)
    return [] if tp is None else _at(compat.tensor_parallel_problems(ctx.model_facts, int(tp)), token)


@rule("TQ341", "model", "--max-model-len vs the config's context", needs=("model",))
def max_model_len(ctx: LintContext) -> list[Finding]:
    occ = ctx.parsed.last("max_model_len")
    mml = human_int(occ.value) if occ else None
    if occ is None or mml is None or mml <= 0:
        return []
    return _at(compat.max_model_len_problems(ctx.model_facts, mml), occ.start)


def _compute_capability(host: HostSnapshot | None) -> tuple[int, int] | None:
    for gpu in host.gpus if host is not None else []:
        if gpu.compute_capability:
            return (gpu.compute_capability[0], gpu.compute_capability[1])
    return None


@rule("TQ342", "model", "TurboQuant vs model, vLLM release and GPU", needs=("model",))
def turboquant(ctx: LintContext) -> list[Finding]:
    occ = ctx.parsed.last("kv_cache_dtype")
    if occ is None or not occ.value:
        return []
    problems = compat.turboquant_problems(
        ctx.model_facts,
        occ.value,
        ctx.schema.version,
        compute_capability=_compute_capability(ctx.host),
        attention_backend=None,  # TQ320 covers the backend
        serving_dtype=ctx.parsed.value("dtype"),
    )
    return _at(problems, occ.start)


@rule("TQ343", "model", "weights per GPU vs GPU memory", needs=("model", "host"))
def weights_fit(ctx: LintContext) -> list[Finding]:
    """compat estimates the weights from config.json when no safetensors are at hand."""
    sizes = [g.memory_total for g in ctx.host_facts.gpus if g.memory_total]
    if not sizes:
        return []
    occ = ctx.parsed.last("gpu_memory_utilization")
    try:
        util = float(occ.value) if occ and occ.value else ctx.schema.default("gpu_memory_utilization")
    except ValueError:
        return []
    if util is None:
        return []
    tp, _ = _tp(ctx)
    problems = compat.weights_fit_problems(ctx.model_facts, int(tp or 1), min(sizes), float(util))
    return _at(problems, occ.start if occ else -1)
