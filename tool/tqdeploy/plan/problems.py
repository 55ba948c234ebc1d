"""A plan's problems in the one finding shape: model.compat's rules under the ids of the checks that run them.

Read by the plan result (result.py) and its table (table.py) alike, so neither imports the other for them.
"""

from __future__ import annotations

from dataclasses import replace
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
