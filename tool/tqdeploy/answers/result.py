"""The output of `tqdeploy check` (schema tqdeploy.check/1), and the summary that `up` keeps in state.json and
`status`, `bundle` and `profile` show."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdeploy.findings import Finding, Severity, exit_code_for, summarize
from tqdeploy.output import render_findings

if TYPE_CHECKING:
    from rich.console import Console

    from tqdeploy.answers.probes import ServerFacts
    from tqdeploy.answers.reference import Fingerprint, Reference
    from tqdeploy.answers.verdict import Observed

SCHEMA = "tqdeploy.check/1"


@dataclass
class CheckResult:
    url: str
    model: str
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    facts: ServerFacts | None = None
    fingerprint: Fingerprint | None = None
    reference: Reference | None = None
    observed: Observed | None = None

    @property
    def passed(self) -> bool:
        return not any(f.severity == Severity.ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings)

    def summary(self) -> dict[str, Any]:
        """What state.json keeps (statefields validates it): pass or fail, the problems, the perplexity."""
        problems = [f for f in self.findings if f.severity in (Severity.ERROR, Severity.WARN)]
        obs = self.observed
        return {
            "status": "pass" if self.passed else "fail",
            "checked_at": time.time(),
            "seconds": round(self.seconds, 2),
            "perplexity": round(obs.perplexity, 3) if obs and obs.perplexity is not None else None,
            "kv_cache_dtype": obs.kv_dtype if obs else None,
            "reference": self.reference.source if self.reference else None,
            "findings": [f.to_dict() for f in problems][:10],
        }

    def to_dict(self) -> dict[str, Any]:
        obs = self.observed
        return {
            "schema": SCHEMA,
            "url": self.url,
            "model": self.model,
            "status": "pass" if self.passed else "fail",
            "seconds": round(self.seconds, 2),
            "vllm_version": self.facts.vllm_version if self.facts else None,
            "fingerprint": self.fingerprint.to_dict() if self.fingerprint else None,
            "reference": self.reference.source if self.reference else None,
            "observed": _observed(obs) if obs else None,
            "findings": [f.to_dict() for f in self.findings],
            "summary": summarize(self.findings),
        }

    def render(self, console: Console) -> None:
        verdict = "passed" if self.passed else "FAILED"
        console.print(f"check {verdict}: {self.url} model {self.model!r} in {self.seconds:.1f} s", soft_wrap=True)
        render_findings(console, self.findings, "tqdeploy check")


def _observed(obs: Observed) -> dict[str, Any]:
    return {
        "kv_cache_dtype": obs.kv_dtype,
        "prefix_caching": obs.prefix_caching,
        "perplexity": None if obs.perplexity is None else round(obs.perplexity, 4),
        "tokens": obs.tokens,
        "answers": {pid: a.text for pid, a in obs.answers.items()},
        "recall": {str(d): a.text for d, a in obs.recall.items()},
        "asked_twice": [a.text for a in obs.repeat],
    }
