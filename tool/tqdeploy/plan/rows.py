"""A plan's rows, one per KV dtype, and their problems in the one finding shape: model.compat's rules under the
ids of the checks that run them.

Read by the plan result (result.py) and its table (table.py) alike, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.model.checkcodes import check_for_code


def problem_dict(finding: Finding) -> dict[str, Any]:
    """A problem in the one finding shape (findings.Finding.to_dict): a model.compat rule under the id of the
    doctor check that runs it (checkids.py), its code and the flag it is about in the evidence."""
    return as_finding(finding).to_dict()


def as_finding(finding: Finding) -> Finding:
    code = finding.evidence.get("code", "")
    check_id, area = check_for_code(code) or (finding.id, finding.area or "model")
    evidence = dict(finding.evidence, **({"flag": finding.location} if finding.location else {}))
    return replace(finding, id=finding.id or check_id, area=finding.area or area, evidence=evidence)


def flagged(problems: list[Finding]) -> list[Finding]:
    return [p for p in problems if p.severity in (Severity.ERROR, Severity.WARN)]


@dataclass
class PlanRow:
    kv_cache_dtype: str
    status: str  # "ok" | "does_not_fit" | "not_applicable"
    kv_bytes_per_token: int | None = None  # per GPU, all KV layers (vLLM's formula)
    kv_tokens: int | None = None  # what vLLM would log as "KV cache size"
    max_concurrency: float | None = None  # sequences of max_model_len at once (KV-limited)
    fixed_state_bytes_per_seq: int = 0  # linear-attention state per sequence (hybrids)
    block_size: int | None = None
    skip_layers: list[int] = field(default_factory=list)
    exact: bool = True
    reason: str = ""
    availability: str = ""  # backend/platform limits of this dtype
    problems: list[Finding] = field(default_factory=list)  # model.compat's TurboQuant rules for this dtype

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["skip_layers"] = list(self.skip_layers)
        data["problems"] = [problem_dict(p) for p in self.problems]
        return data
