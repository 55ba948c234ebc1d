"""Rules that need the checkpoint (and the host): delegated to tqdeploy.model.compat, never duplicated.

TQ340  tensor parallel size vs attention / KV / linear-attention heads
TQ341  --max-model-len vs what config.json supports
TQ342  TurboQuant vs model, vLLM version and GPU compute capability
TQ343  weights per GPU vs GPU memory x --gpu-memory-utilization (needs a host: --snapshot or --gpu)
"""

from __future__ import annotations

from tqdeploy.findings import Severity
from tqdeploy.lint.report import LintFinding
from tqdeploy.lint.schema import VllmSchema
from tqdeploy.lint.validate import ParsedArgs, _human_int


def _int(value: str | None) -> int | None:
    """An integer the way vLLM's human_readable_int reads it (32k = 32000, 32K = 32768)."""
    if value is None or not _human_int(value):
        return None
    v = value.strip()
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    if v and v[-1] in mult:
        return int(float(v[:-1]) * mult[v[-1]])
    return int(v)


def _convert(problems, finding_id: str, token: int) -> list[LintFinding]:
    return [LintFinding(finding_id, p.severity, p.flag or "", p.message, p.fix, None, token) for p in problems]


def _compute_capability(host) -> tuple[int, int] | None:
    for gpu in getattr(host, "gpus", None) or []:
        if gpu.compute_capability:
            return tuple(gpu.compute_capability[:2])  # type: ignore[return-value]
    return None


def _gpu_memory(host) -> int | None:
    sizes = [g.memory_total for g in getattr(host, "gpus", None) or [] if g.memory_total]
    return min(sizes) if sizes else None


def model_rules(parsed: ParsedArgs, schema: VllmSchema, model, host) -> list[LintFinding]:
    from tqdeploy.model import compat

    out: list[LintFinding] = []
    tp_occ = parsed.last("tensor_parallel_size")
    tp = _int(tp_occ.value) if tp_occ else schema.options["tensor_parallel_size"].default
    if tp is not None:
        out += _convert(compat.tensor_parallel_problems(model, int(tp)), "TQ340", tp_occ.start if tp_occ else -1)
    mml_occ = parsed.last("max_model_len")
    mml = _int(mml_occ.value) if mml_occ else None
    if mml is not None and mml > 0:
        out += _convert(compat.max_model_len_problems(model, mml), "TQ341", mml_occ.start)
    dtype_occ = parsed.last("kv_cache_dtype")
    if dtype_occ and dtype_occ.value:
        problems = compat.turboquant_problems(
            model,
            dtype_occ.value,
            schema.version,
            compute_capability=_compute_capability(host),
            attention_backend=None,  # TQ320 covers the backend
            serving_dtype=parsed.value("dtype"),
        )
        out += _convert(problems, "TQ342", dtype_occ.start)
    memory = _gpu_memory(host)
    if memory is not None:  # compat estimates the weights from config.json when no safetensors are at hand
        util_occ = parsed.last("gpu_memory_utilization")
        try:
            util = float(util_occ.value) if util_occ and util_occ.value else schema.default("gpu_memory_utilization")
        except ValueError:
            util = None
        if util is not None:
            problems = compat.weights_fit_problems(model, int(tp or 1), memory, float(util))
            out += _convert(problems, "TQ343", util_occ.start if util_occ else -1)
    for f in out:
        if f.severity not in (Severity.ERROR, Severity.WARN, Severity.INFO):
            f.severity = Severity.INFO
    return out
