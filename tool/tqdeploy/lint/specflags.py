"""The spec's vLLM command checked by `tqdeploy lint` against the pinned vLLM's own argument schema.

Lint is the one place that knows vLLM's flags, choices and the false claims in circulation; the spec
does not repeat that knowledge, and loading a spec (tqdeploy.deployspec.load_spec) runs no linter: the build
(render/build.py) makes the spec's one VllmCommand (deployspec/command.py) and lints it here, once. A lint error
on the command becomes a spec problem at the spec key that produced the flag (deployspec/flagtable.py
FLAG_TO_KEY). The result is a value the build carries forward; nothing is set on the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from tqdeploy.deployspec.command import VllmCommand
from tqdeploy.deployspec.flagtable import FLAG_TO_KEY
from tqdeploy.deployspec.load import Problem, raise_problems
from tqdeploy.deployspec.model import Spec
from tqdeploy.findings import Finding, Severity
from tqdeploy.lint import lint_command
from tqdeploy.model.facts import ModelFacts


@dataclass(frozen=True)
class FlagCheck:
    """What lint said about a spec's command: the errors as spec problems, every finding for the build's notes."""

    problems: tuple[Problem, ...]
    findings: tuple[Finding, ...]

    @property
    def advice(self) -> tuple[Finding, ...]:
        """The warnings and notes a build reports (errors refused the spec already)."""
        return tuple(f for f in self.findings if f.severity in (Severity.WARN, Severity.INFO))


def _problem(spec: Spec, finding: Finding) -> Problem:
    key = FLAG_TO_KEY.get(finding.location.split("=", 1)[0], "vllm.extra_args")
    return Problem(
        key,
        f"{key}: {finding.title} [{finding.id}, vLLM {spec.vllm_version}]",
        finding.remediation or "see `tqdeploy lint`",
    )


def check_flags(spec: Spec, command: VllmCommand, model: ModelFacts | None = None) -> FlagCheck:
    """Lint the spec's vLLM command; with model facts, also against the checkpoint (TP, max-model-len, TQ)."""
    report = lint_command(command.argv, vllm_version=spec.vllm_version, model=model, live=False, variant=spec.variant)
    findings = tuple(report.findings)
    problems = tuple(_problem(spec, f) for f in findings if f.severity == Severity.ERROR)
    return FlagCheck(problems=problems, findings=findings)


def lint_vllm_command(spec: Spec, command: VllmCommand, model: ModelFacts | None = None) -> FlagCheck:
    """The lint of the spec's command, or the TQError of the first lint error, named at the spec key that renders
    the flag (file:line, as for every other spec problem)."""
    check = check_flags(spec, command, model)
    raise_problems(list(check.problems), spec.source, spec.text)
    return check
