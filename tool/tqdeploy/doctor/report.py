"""The doctor's one result: its findings, where the host facts came from, and the exit code (tqdeploy.doctor/1)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Console

from tqdeploy import __version__
from tqdeploy.findings import Finding, exit_code_for, sort_worst_first, summarize
from tqdeploy.output import render_findings
from tqdeploy.redact import Redactor
from tqdeploy.snapshot import HostSnapshot

SCHEMA = "tqdeploy.doctor/1"


@dataclass
class DoctorResult:
    findings: list[Finding]
    source: str  # "this host" or the snapshot file replayed
    fail_on: str = "error"
    options: dict[str, Any] = field(default_factory=dict)
    # The snapshot the checks judged: the bundle records it beside the verdicts (not in this JSON, which is
    # the verdicts only; `--snapshot-out` writes it on its own).
    host: HostSnapshot | None = field(default=None, repr=False)

    def shown_findings(self) -> list[Finding]:
        """The findings as printed: every text and evidence value through tqdeploy.redact (secrets only;
        hosts and addresses are the doctor's subject), one redactor so a secret keeps one placeholder."""
        r = Redactor(names=False)
        return [
            replace(f, title=r.text(f.title), remediation=r.text(f.remediation), evidence=r.data(f.evidence))
            for f in self.findings
        ]

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings, self.fail_on)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "tool_version": __version__,
            "source": self.source,
            "options": self.options,
            "findings": [f.to_dict() for f in sort_worst_first(self.shown_findings())],
            "summary": summarize(self.findings) | {"fail_on": self.fail_on, "exit_code": self.exit_code},
        }

    def render(self, console: Console) -> None:
        render_findings(console, self.shown_findings(), title=f"tqdeploy doctor: {self.source}")
        s = summarize(self.findings)
        console.print(
            f"{s['error']} error(s), {s['warn']} warning(s), {s['info']} info, {s['ok']} ok, "
            f"{s['skipped']} skipped; `tqdeploy explain ID` explains a check"
        )
