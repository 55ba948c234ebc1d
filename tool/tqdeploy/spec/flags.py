"""The spec's vLLM command checked by `tqdeploy lint` against the pinned vLLM's own argument schema.

Lint is the one place that knows vLLM's flags, choices and the false claims in circulation; the spec
does not repeat that knowledge. A lint error on the command becomes a spec problem at the spec key
that produced the flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tqdeploy.spec.load import Problem
from tqdeploy.spec.model import Spec

# flag -> the spec key that renders it (the rest come from vllm.extra_args)
FLAG_TO_KEY = {
    "--served-model-name": "model.served_name",
    "--tensor-parallel-size": "vllm.tensor_parallel_size",
    "--dtype": "vllm.dtype",
    "--kv-cache-dtype": "vllm.kv_cache_dtype",
    "--max-model-len": "vllm.max_model_len",
    "--max-num-seqs": "vllm.max_num_seqs",
    "--gpu-memory-utilization": "vllm.gpu_memory_utilization",
    "--load-format": "vllm.load_format",
    "--host": "server.host",
    "--port": "server.port",
}


@dataclass
class FlagCheck:
    problems: list[Problem] = field(default_factory=list)
    findings: list = field(default_factory=list)  # every lint finding, for the build report


def check_flags(spec: Spec, model=None) -> FlagCheck:
    """Lint the spec's vLLM command; with model facts, also against the checkpoint (TP, max-model-len, TQ)."""
    from tqdeploy.lint import lint_command

    report = lint_command(spec.lint_argv(), vllm_version=spec.vllm_version, model=model, live=False)
    out = FlagCheck(findings=list(report.findings))
    for f in report.findings:
        if _severity(f) != "error":
            continue
        flag = f.location
        key = FLAG_TO_KEY.get(flag.split("=", 1)[0], "vllm.extra_args")
        out.problems.append(
            Problem(
                key,
                f"{key}: {f.title} [{f.id}, vLLM {spec.vllm_version}]",
                f.remediation or "see `tqdeploy lint`",
            )
        )
    return out


def _severity(finding) -> str:
    sev = getattr(finding, "severity", "")
    return getattr(sev, "value", sev)
