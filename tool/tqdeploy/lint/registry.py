"""Lint rules: one function per finding id, registered with ``@rule`` like the doctor's checks.

A rule receives the LintContext of one command and returns the Findings it reports (an empty list
when the command is fine). The registry stamps the rule's id and area, and runs the rules in id
order, so `lint` and its --fix are the same whichever module a rule lives in. Every id has a page
checks/docs/<ID>.md (`tqdeploy explain ID`) whose Catches / Passes examples the tests run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TypeVar

from tqdeploy.findings import Finding
from tqdeploy.lint import catalogue
from tqdeploy.lint.command import Invocation
from tqdeploy.lint.parsed import ParsedArgs
from tqdeploy.lint.pysnippet import Snippet
from tqdeploy.model.facts import ModelFacts
from tqdeploy.snapshot import HostSnapshot
from tqdeploy.vllmfacts.schema import VllmSchema

T = TypeVar("T")
VLLM_KINDS = ("vllm-serve", "api-server", "docker")  # forms whose arguments are vLLM's own
DOCKER_KINDS = ("docker", "docker-other")
ALL_KINDS = ("vllm-serve", "api-server", "legacy-api-server", "docker", "docker-other", "unknown")


@dataclass
class LintContext:
    """One command under lint: where vLLM's arguments are, how its parser reads them, and what else is known."""

    inv: Invocation
    schema: VllmSchema
    text: str  # the command line or the whole script (comments included)
    parsed: ParsedArgs = field(default_factory=ParsedArgs)
    variables: dict[str, str] = field(default_factory=dict)  # a script's own shell assignments
    model: ModelFacts | None = None  # the checkpoint's facts (--model)
    host: HostSnapshot | None = None  # the host's facts (--snapshot / --gpu)
    live: bool | None = None  # validate with vLLM's own parser: True, False, None = when importable
    target: list[Finding] = field(default_factory=list)  # how the vLLM version was chosen (TQ311)
    text_advice: list[Finding] = field(default_factory=list)  # false advice anywhere in the text (TQ310)
    snippet: Snippet | None = None  # a Python snippet's calls and the API they are checked against (TQ315)
    variant: str | None = None  # the spec's variant ("gpu" or "cpu") when a build lints its own command (TQ348)

    @property
    def model_facts(self) -> ModelFacts:
        """The checkpoint's facts, for a rule registered with needs=("model",): the registry runs it only then."""
        return _needed(self.model, "model")

    @property
    def host_facts(self) -> HostSnapshot:
        """The host's facts, for a rule registered with needs=("host",)."""
        return _needed(self.host, "host")

    @property
    def python_snippet(self) -> Snippet:
        """The Python snippet, for a rule of kind "python" (lint_python sets it)."""
        return _needed(self.snippet, "snippet")

    @cached_property
    def advice(self) -> list[Finding]:
        """False-advice entries about vLLM's arguments (TQ310); they replace generic parser findings. A Python
        snippet's keywords are its arguments."""
        if self.inv.kind == "python" and self.snippet is not None:
            return catalogue.match_keywords(self.python_snippet.calls)
        if self.inv.kind not in VLLM_KINDS:
            return []
        opts = self.schema.options.values()
        aliases = {n: opt.long_name for opt in opts for n in opt.names if not n.startswith("--")}
        return catalogue.match_invocation(self.inv, aliases)


def _needed(value: T | None, name: str) -> T:
    if value is None:  # a rule read a fact it did not declare: a bug in the rule, not the user's input
        raise LookupError(f"a lint rule read ctx.{name} without declaring it: register it with needs=({name!r},)")
    return value


@dataclass(frozen=True)
class Rule:
    id: str
    area: str
    title: str
    func: Callable[[LintContext], Iterable[Finding]]
    kinds: tuple[str, ...] = VLLM_KINDS  # the invocation forms it applies to
    needs: tuple[str, ...] = ()  # LintContext fields it needs set, e.g. ("model",)

    def applies(self, ctx: LintContext) -> bool:
        return ctx.inv.kind in self.kinds and all(getattr(ctx, n) is not None for n in self.needs)

    def run(self, ctx: LintContext) -> list[Finding]:
        return [replace(f, id=self.id, area=self.area) for f in self.func(ctx)]


RULES: dict[str, Rule] = {}


RuleFunc = Callable[[LintContext], Iterable[Finding]]


def rule(
    id: str, area: str, title: str, kinds: tuple[str, ...] = VLLM_KINDS, needs: tuple[str, ...] = ()
) -> Callable[[RuleFunc], RuleFunc]:
    """Register a lint rule under a stable id (TQ30x arguments, TQ31x advice/image, TQ32x TurboQuant and
    exposure, TQ33x docker, TQ34x model)."""

    def deco(func: RuleFunc) -> RuleFunc:
        if id in RULES:
            raise RuntimeError(f"duplicate lint rule id {id}")
        RULES[id] = Rule(id=id, area=area, title=title, func=func, kinds=kinds, needs=needs)
        return func

    return deco
