"""The launch command in a doctor run: its lint findings (TQ3xx) and the values the checkpoint checks need.

The model-aware rules stay with the checkpoint checks (TQ203-TQ206, fed the command's own values),
so the linter runs here without the model and no problem is reported twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, Severity

# vLLM option dest -> CheckContext.options key, and how to read its value.
_SERVING_VALUES = {
    "tensor_parallel_size": int,
    "max_model_len": int,
    "kv_cache_dtype": str,
    "attention_backend": str,
    "gpu_memory_utilization": float,
    "dtype": str,
}


def serving_values(flag_values: dict[str, str]) -> dict[str, Any]:
    """The values TQ2xx checks read; a value the shell only knows at run time ($VAR) is left out."""
    out: dict[str, Any] = {}
    for dest, kind in _SERVING_VALUES.items():
        raw = flag_values.get(dest)
        if raw is None or "$" in raw:
            continue
        try:
            out[dest] = kind(raw)
        except ValueError:  # the linter already reports a value of the wrong type
            continue
    return out


def lint_launch(
    command: list[str] | None, command_file: Path | None, vllm_version: str, host
) -> tuple[dict[str, Any], list[Finding]]:
    from tqdeploy.lint import lint_source

    report = lint_source(command, command_file, vllm_version=vllm_version, host=host, live=False)
    findings = []
    for f in report.to_dict()["findings"]:  # to_dict() redacts secrets in messages and fixes
        findings.append(
            Finding(
                id=f["id"],
                severity=Severity(f["severity"]),
                title=f["message"],
                evidence={"flag": f["flag"], "command": report.command_text},
                remediation=f["fix"],
                area="flags",
            )
        )
    if not findings:
        findings.append(
            Finding(
                id="TQ300",
                severity=Severity.OK,
                area="flags",
                title=f"launch command valid for vLLM {report.vllm_version}",
                evidence={"command": report.command_text},
            )
        )
    elif report.changed:
        for f in findings:
            f.evidence["corrected_command"] = report.fixed_command_text
    return serving_values(report.flag_values), findings
