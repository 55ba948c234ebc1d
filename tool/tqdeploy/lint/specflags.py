"""The spec's vLLM command checked by `tqdeploy lint` against the pinned vLLM's own argument schema.

Lint is the one place that knows vLLM's flags, choices and the false claims in circulation; the spec
does not repeat that knowledge, and loading a spec (tqdeploy.deployspec.load_spec) runs no linter: the build
(render/build.py) lints the spec it loaded, once. A lint error on the command becomes a spec problem at the
spec key that produced the flag (deployspec/flagtable.py FLAG_TO_KEY).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tqdeploy.deployspec.flagtable import FLAG_TO_KEY
from tqdeploy.deployspec.load import Problem, raise_problems
from tqdeploy.deployspec.model import Spec
from tqdeploy.lint import lint_command


@dataclass
class FlagCheck:
    problems: list[Problem] = field(default_factory=list)
    findings: list = field(default_factory=list)  # every lint finding, for the build report


def check_flags(spec: Spec, model=None) -> FlagCheck:
    """Lint the spec's vLLM command; with model facts, also against the checkpoint (TP, max-model-len, TQ)."""
    report = lint_command(
        spec.lint_argv(), vllm_version=spec.vllm_version, model=model, live=False, variant=spec.variant
    )
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


def lint_spec(spec: Spec, model=None) -> Spec:
    """The spec with its vLLM flags linted (spec.flag_check), or the TQError of the first lint error, named at
    the spec key that renders the flag (file:line, as for every other spec problem)."""
    spec.flag_check = check_flags(spec, model)
    raise_problems(spec.flag_check.problems, spec.source, spec.text)
    return spec


def _severity(finding) -> str:
    sev = getattr(finding, "severity", "")
    return getattr(sev, "value", sev)
