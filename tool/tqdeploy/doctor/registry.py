"""The doctor's checks: small self-describing units that turn facts into findings.

A check is a plain function registered with ``@host_check``, ``@model_check`` or ``@model_on_host_check``:
the decorator declares what it needs, and the check receives exactly that, typed (HostInputs, ModelInputs,
ModelOnHostInputs); a check whose inputs were not given is skipped before it runs. It returns a Finding (or
a list of them, e.g. one per GPU), made with passed() / skipped() / info() / warn() / error(). The registry
stamps the id, area and default title, and turns an exception into an error finding so the other checks
run. Each check's documentation lives in checks/docs/<ID>.md
(``tqdeploy explain ID``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import wraps
from typing import Any, Literal, TypedDict, TypeVar, cast

from tqdeploy.findings import Finding, Severity
from tqdeploy.model.facts import ModelFacts
from tqdeploy.snapshot import HostSnapshot


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


Verdicts = Finding | Iterable[Finding] | None
Need = Literal["host", "model"]


class CheckOptions(TypedDict, total=False):
    """What the doctor is told about the deployment to come (flags, a launch command, files of this host)."""

    vllm_version: str
    offline: bool
    variant: str
    image_cuda: str  # the vLLM build's CUDA, major.minor
    tensor_parallel_size: int
    max_model_len: int
    kv_cache_dtype: str
    gpu_memory_utilization: float
    attention_backend: str
    dtype: str  # vLLM's --dtype
    api_key_file: dict[str, Any]  # keyfile.KeyFileReport.to_dict(): JSON, shown as evidence
    multinode: dict[str, Any]  # doctor/checks/host/multinode.node_facts: JSON, shown as evidence


# The type each option must have to reach a check; an option of another type (a launch command's value the
# linter could not read as one) is left out here and reported by the lint itself.
OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "vllm_version": str,
    "offline": bool,
    "variant": str,
    "image_cuda": str,
    "tensor_parallel_size": int,
    "max_model_len": int,
    "kv_cache_dtype": str,
    "gpu_memory_utilization": (float, int),
    "attention_backend": str,
    "dtype": str,
    "api_key_file": dict,
    "multinode": dict,
}


def check_options(values: Mapping[str, object]) -> CheckOptions:
    """The options a check may read, each of its declared type (the doctor's JSON keeps them all)."""
    kept = {k: v for k, v in values.items() if k in OPTION_TYPES and isinstance(v, OPTION_TYPES[k])}
    return cast(CheckOptions, kept)  # every key and type checked against OPTION_TYPES just above


@dataclass(frozen=True)
class CheckContext:
    """Everything a check may look at. Only probes touch the machine; checks read this, through the inputs
    their declaration names (HostInputs, ModelInputs... below), so a check never sees an input it may lack."""

    host: HostSnapshot | None = None
    model: ModelFacts | None = None
    options: CheckOptions = field(default_factory=lambda: CheckOptions())


@dataclass(frozen=True)
class HostInputs:
    """A host check's inputs (TQ1xx): the snapshot, always there; the checkpoint when --model names one (the
    cache disk check sizes for its weights)."""

    host: HostSnapshot
    options: CheckOptions
    model: ModelFacts | None = None


@dataclass(frozen=True)
class ModelInputs:
    """A checkpoint check's inputs (TQ2xx with --model): the facts, and the host when one was probed."""

    model: ModelFacts
    host: HostSnapshot | None
    options: CheckOptions


@dataclass(frozen=True)
class ModelOnHostInputs:
    """A checkpoint check that judges the model against this host's GPUs: both are there."""

    model: ModelFacts
    host: HostSnapshot
    options: CheckOptions


@dataclass(frozen=True)
class Check:
    id: str
    area: str
    title: str
    func: Callable[[CheckContext], Verdicts]
    needs: tuple[Need, ...] = ("host",)

    def missing(self, ctx: CheckContext) -> list[Need]:
        return [n for n in self.needs if getattr(ctx, n) is None]

    def run(self, ctx: CheckContext) -> list[Finding]:
        missing = self.missing(ctx)
        if missing:
            return [self._finding(skipped(f"no {', '.join(missing)} given"))]
        try:
            out = self.func(ctx)
        except Exception as exc:  # a broken check must not hide the others
            return [
                Finding(
                    id=self.id,
                    severity=Severity.ERROR,
                    title=f"check {self.id} ({getattr(self.func, '__name__', 'check')}) failed",
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
InputsT = TypeVar("InputsT")


def _register(
    id: str, area: str, title: str, needs: tuple[Need, ...], view: Callable[[CheckContext], InputsT]
) -> Callable[[Callable[[InputsT], Verdicts]], Callable[[InputsT], Verdicts]]:
    """Register a check under a stable id (TQ1xx host, TQ2xx model, TQ3xx flags, TQ4xx runtime); Check.run
    calls it only when every input it needs is there, through the view that hands it exactly those."""

    def deco(func: Callable[[InputsT], Verdicts]) -> Callable[[InputsT], Verdicts]:
        if id in REGISTRY:
            raise RuntimeError(f"duplicate check id {id}")

        @wraps(func)
        def entry(ctx: CheckContext) -> Verdicts:
            return func(view(ctx))

        REGISTRY[id] = Check(id=id, area=area, title=title, func=entry, needs=needs)
        return func

    return deco


ValueT = TypeVar("ValueT")
HostCheck = Callable[[HostInputs], Verdicts]
ModelCheck = Callable[[ModelInputs], Verdicts]
ModelOnHostCheck = Callable[[ModelOnHostInputs], Verdicts]


def _present(value: ValueT | None, name: str) -> ValueT:
    if value is None:  # Check.run skips a check whose needs are missing before its view is made
        raise RuntimeError(f"no {name} given")
    return value


def host_check(id: str, area: str, title: str) -> Callable[[HostCheck], HostCheck]:
    """A check of the host snapshot: @host_check("TQ1nn", "area", "title") over f(inputs: HostInputs)."""
    return _register(id, area, title, ("host",), lambda c: HostInputs(_present(c.host, "host"), c.options, c.model))


def model_check(id: str, area: str, title: str) -> Callable[[ModelCheck], ModelCheck]:
    """A check of the checkpoint (--model), the host's facts when there are some."""
    return _register(id, area, title, ("model",), lambda c: ModelInputs(_present(c.model, "model"), c.host, c.options))


def model_on_host_check(id: str, area: str, title: str) -> Callable[[ModelOnHostCheck], ModelOnHostCheck]:
    """A check of the checkpoint against the host's GPUs: run only when both are given."""

    def view(c: CheckContext) -> ModelOnHostInputs:
        return ModelOnHostInputs(_present(c.model, "model"), _present(c.host, "host"), c.options)

    return _register(id, area, title, ("model", "host"), view)


def run_checks(ctx: CheckContext, ids: Iterable[str] | None = None) -> list[Finding]:
    selected = [REGISTRY[i] for i in ids] if ids is not None else [REGISTRY[k] for k in sorted(REGISTRY)]
    findings: list[Finding] = []
    for c in selected:
        findings.extend(c.run(ctx))
    return findings
