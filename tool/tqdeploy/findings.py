"""Findings: the one result type of every check (doctor, checkpoint audit, lint)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"
    WARN = "warn"
    INFO = "info"
    OK = "ok"
    SKIPPED = "skipped"

    @property
    def rank(self) -> int:
        """Higher is worse; used to sort worst first."""
        return _RANK[self]


_RANK = {Severity.ERROR: 4, Severity.WARN: 3, Severity.INFO: 2, Severity.OK: 1, Severity.SKIPPED: 0}


@dataclass
class Finding:
    id: str
    severity: Severity
    title: str
    evidence: dict[str, Any] = field(default_factory=dict)
    remediation: str = ""
    area: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "evidence": self.evidence,
            "remediation": self.remediation,
            "area": self.area,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            id=data["id"],
            severity=Severity(data["severity"]),
            title=data["title"],
            evidence=dict(data.get("evidence") or {}),
            remediation=data.get("remediation", ""),
            area=data.get("area", ""),
        )


def sort_worst_first(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, f.area, f.id))


def group_by_area(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """Areas ordered by their worst finding, each area's findings worst first."""
    areas: dict[str, list[Finding]] = {}
    for f in sort_worst_first(findings):
        areas.setdefault(f.area, []).append(f)
    return sorted(areas.items(), key=lambda item: (-item[1][0].severity.rank, item[0]))


def summarize(findings: list[Finding]) -> dict[str, int]:
    counts = {s.value: 0 for s in Severity}
    for f in findings:
        counts[f.severity.value] += 1
    counts["total"] = len(findings)
    return counts


def exit_code_for(findings: list[Finding], fail_on: str = "error") -> int:
    """0 when nothing at or above the threshold, else 1."""
    threshold = Severity(fail_on).rank
    return 1 if any(f.severity.rank >= threshold for f in findings) else 0
