"""The plan result: one row per KV dtype, the budget behind it and the recommendation (tqdeploy.plan/1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdeploy.errors import shown
from tqdeploy.findings import Finding, Severity
from tqdeploy.plan.rows import PlanRow, as_finding, flagged, problem_dict
from tqdeploy.plan.table import render_rows
from tqdeploy.units import GiB

if TYPE_CHECKING:
    from rich.console import Console


def _safe(value: object) -> str:
    """A value from a snapshot, config or model id inside rich markup: control characters escaped and cut
    (idents.shown), and brackets escaped so a GPU named "[blink]" is text, not a style."""
    from rich.markup import escape

    return escape(shown(value, 1000))


SCHEMA = "tqdeploy.plan/1"


@dataclass
class Plan:
    model: dict[str, Any]
    host: dict[str, Any]
    budget: dict[str, Any]
    rows: list[PlanRow]
    max_model_len: int
    tp: int
    vllm_version: str
    recommended: str | None = None
    recommendation_reason: str = ""
    problems: list[Finding] = field(default_factory=list)  # TP, max-model-len and weights rules
    notes: list[str] = field(default_factory=list)

    def row(self, kv_cache_dtype: str) -> PlanRow:
        for r in self.rows:
            if r.kv_cache_dtype == kv_cache_dtype:
                return r
        raise KeyError(kv_cache_dtype)

    def blocking(self) -> list[Finding]:
        """The plan's errors: vLLM would not start as planned, so there is no recommendation to act on."""
        return [p for p in map(as_finding, self.problems) if p.severity is Severity.ERROR]

    def to_dict(self) -> dict[str, Any]:
        blocked = self.blocking()
        data = {
            "schema": SCHEMA,
            "model": self.model,
            "host": self.host,
            "budget": self.budget,
            "vllm_version": self.vllm_version,
            "tensor_parallel_size": self.tp,
            "max_model_len": self.max_model_len,
            "rows": [r.to_dict() for r in self.rows],
            "recommended": self.recommended,
            "recommendation_reason": self.recommendation_reason,
            "problems": [problem_dict(p) for p in self.problems],
            "notes": self.notes,
        }
        if blocked:  # no key to act on: a script reading `recommended` must not deploy a plan that cannot start
            del data["recommended"]
            data["recommendation_reason"] = _no_recommendation(blocked)
        return data

    def render(self, console: Console) -> None:
        m, b = self.model, self.budget
        console.print(
            f"[bold]{_safe(m['source'])}[/] ({_safe(m.get('architecture') or m.get('model_type'))}, "
            f"{len(m['kv_layers'])} KV layers of {m['num_hidden_layers']}"
            f"{', hybrid' if m['is_hybrid'] else ''}) on {_safe(self.host.get('description', ''))}, "
            f"TP={self.tp}, max-model-len {self.max_model_len:,}, vLLM {self.vllm_version}"
        )
        reserve = b["activation_bytes"] + b["cuda_graph_bytes"] + b["nccl_bytes"] + b["context_bytes"]
        console.print(
            f"per GPU: {b['gpu_memory_bytes'] / GiB:.2f} GiB x {b['gpu_memory_utilization']} = "
            f"{b['requested_bytes'] / GiB:.2f} GiB; weights {b['weights_bytes'] / GiB:.2f} GiB "
            f"({b['weights_source']}); reserve {reserve / GiB:.2f} GiB (estimate); "
            f"KV {b['kv_bytes'] / GiB:.2f} GiB ({b['kv_source']})"
        )

        blocked = self.blocking()
        render_rows(console, self.rows, self.max_model_len, None if blocked else self.recommended)
        seen: dict[str, list[str]] = {}
        for r in self.rows:
            for p in flagged(r.problems):
                seen.setdefault(p.evidence["code"], []).append(r.kv_cache_dtype)
        row_problems = {p.evidence["code"]: p for r in self.rows for p in r.problems}
        for code, dtypes in seen.items():
            p = as_finding(row_problems[code])
            console.print(
                f"[{_colour(p)}]{p.severity.value} {p.id}[/] ({', '.join(dtypes)}): {_safe(p.title)}\n"
                f"  fix: {_safe(p.remediation)}"
            )
        for p in map(as_finding, self.problems):
            title, fix = _safe(p.title), _safe(p.remediation)
            console.print(f"[{_colour(p)}]{p.severity.value} {p.id}[/]: {title}\n  fix: {fix}")
        for n in self.notes:
            console.print(f"[dim]note: {_safe(n)}[/]")
        if blocked:  # vLLM would not start as planned: no recommendation to act on yet
            console.print(f"[bold red]no recommendation[/]: {_no_recommendation(blocked)}")
        elif self.recommended:
            console.print(
                f"recommended: [bold green]--kv-cache-dtype {self.recommended}[/] - {self.recommendation_reason}"
            )
        else:
            console.print(f"[bold red]no KV dtype fits[/]: {self.recommendation_reason}")


def _no_recommendation(blocked: list[Finding]) -> str:
    ids = ", ".join(dict.fromkeys(p.id for p in blocked))
    return f"fix the error{'s' if len(blocked) > 1 else ''} above ({ids}) first, then run tqdeploy plan again"


def _colour(p: Finding) -> str:
    return "red" if p.severity is Severity.ERROR else "yellow"
