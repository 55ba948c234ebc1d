"""The doctor's checks: small self-describing units that turn facts into findings.

A check is a plain function registered with ``@check``. It receives a CheckContext and returns a
Finding (or a list of them, e.g. one per GPU), made with passed() / skipped() / info() / warn() /
error(). The registry stamps the id, area and default title, and turns an exception into an error
finding so the other checks run. Each check's documentation lives in checks/docs/<ID>.md
(``tqdeploy explain ID``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tqdeploy.findings import Finding, Severity


def verdict(severity: Severity, evidence: dict[str, Any], remediation: str = "", title: str = "") -> Finding:
    """A check's result; id and area are stamped by the check that returns it, title defaults to its own."""
    return Finding(id="", severity=severity, title=title, evidence=evidence, remediation=remediation)


def passed(evidence: dict[str, Any] | None = None, title: str = "") -> Finding:
    return verdict(Severity.OK, evidence or {}, "", title)


def skipped(reason: str, evidence: dict[str, Any] | None = None, title: str = "") -> Finding:
    ev = dict(evidence or {})
    ev.setdefault("reason", reason)
    return verdict(Severity.SKIPPED, ev, "", title)


def info(evidence: dict[str, Any] | None = None, remediation: str = "", title: str = "") -> Finding:
    return verdict(Severity.INFO, evidence or {}, remediation, title)


def warn(evidence: dict[str, Any], remediation: str, title: str = "") -> Finding:
    return verdict(Severity.WARN, evidence, remediation, title)


def error(evidence: dict[str, Any], remediation: str, title: str = "") -> Finding:
    return verdict(Severity.ERROR, evidence, remediation, title)


@dataclass(frozen=True)
class Check:
    id: str
    area: str
    title: str
    func: Callable[[CheckContext], Finding | Iterable[Finding] | None]
    needs: tuple[str, ...] = ("host",)

    def run(self, ctx: CheckContext) -> list[Finding]:
        missing = [n for n in self.needs if getattr(ctx, n, None) is None]
        if missing:
            return [self._finding(skipped(f"no {', '.join(missing)} given"))]
        try:
            out = self.func(ctx)
        except Exception as exc:  # a broken check must not hide the others
            return [
                Finding(
                    id=self.id,
                    severity=Severity.ERROR,
                    title=f"check {self.id} ({self.func.__name__}) failed",
                    evidence={"exception": f"{type(exc).__name__}: {exc}"},
                    remediation="report this as a tqdeploy bug with `tqdeploy doctor --snapshot-out` attached",
                    area=self.area,
                )
            ]
        if out is None:
            return []
        results = [out] if isinstance(out, Finding) else list(out)
        return [self._finding(f) for f in results]

    def _finding(self, f: Finding) -> Finding:
        return replace(f, id=self.id, area=self.area, title=f.title or self.title)


REGISTRY: dict[str, Check] = {}


def check(id: str, area: str, title: str, needs: tuple[str, ...] = ("host",)):
    """Register a check function under a stable id (TQ1xx host, TQ2xx model, TQ3xx flags, TQ4xx runtime)."""

    def deco(func):
        if id in REGISTRY:
            raise RuntimeError(f"duplicate check id {id}")
        REGISTRY[id] = Check(id=id, area=area, title=title, func=func, needs=needs)
        return func

    return deco


@dataclass
class CheckContext:
    """Everything a check may look at. Only probes touch the machine; checks read this."""

    host: Any = None  # tqdeploy.snapshot.HostSnapshot
    model: Any = None  # model facts (checkpoint audit)
    options: dict[str, Any] = field(default_factory=dict)  # e.g. target vLLM version, image CUDA


def run_checks(ctx: CheckContext, ids: Iterable[str] | None = None) -> list[Finding]:
    selected = [REGISTRY[i] for i in ids] if ids is not None else [REGISTRY[k] for k in sorted(REGISTRY)]
    findings: list[Finding] = []
    for c in selected:
        findings.extend(c.run(ctx))
    return findings
