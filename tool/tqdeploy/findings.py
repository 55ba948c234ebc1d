"""Findings: the one result type of every check (doctor host and model checks, lint rules, plan, the
turbo_quant_config hint). A producer that does not know the id it reports under (model.compat's rules,
shared by doctor TQ2xx and lint TQ34x) leaves ``id`` empty; the check or rule that runs it stamps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):  # noqa: UP042  StrEnum changes str(member) from "Severity.WARN" to "warn"
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


@dataclass(frozen=True)
class Edit:
    """Replace argv[start:end] with tokens (start == end inserts): what `tqdeploy lint --fix` applies."""

    start: int
    end: int
    tokens: tuple[str, ...] = ()


@dataclass
class Finding:
    id: str
    severity: Severity
    title: str
    evidence: dict[str, Any] = field(default_factory=dict)
    remediation: str = ""
    area: str = ""
    # Where in the input the finding points: an option as written (lint), a config key; "" when nowhere.
    location: str = ""
    # lint: the change that fixes it, and the argv index it is about (a specific finding, e.g. a
    # false-advice entry, replaces a generic one about the same token). Not part of to_dict().
    edit: Edit | None = None
    token: int = -1

    def to_dict(self) -> dict[str, Any]:
        """The doctor's JSON shape (tqdeploy.doctor/1); lint writes its own (tqdeploy.lint/1)."""
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
