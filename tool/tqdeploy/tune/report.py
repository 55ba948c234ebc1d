"""The output of `tqdeploy tune` (schema tqdeploy.tune/1): one row per candidate, the findings (TQ490-TQ493) and
the recommendation. The human view is one table that fits 80 columns, then the findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdeploy.findings import Finding, exit_code_for, summarize
from tqdeploy.output import render_findings
from tqdeploy.tune.goodput import Targets, num
from tqdeploy.tune.verdict import Row, recommended

if TYPE_CHECKING:  # rich is loaded where the table is drawn
    from rich.console import Console
    from rich.table import Table

SCHEMA = "tqdeploy.tune/1"
WIDTH = 80


@dataclass
class TuneResult:
    build: str
    workload: dict[str, Any]
    targets: Targets
    fingerprint_sha256: str
    rows: list[Row] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    estimate_s: float = 0.0
    seconds: float = 0.0
    chart: str | None = None
    applied: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "build": self.build,
            "workload": self.workload,
            "targets": self.targets.to_dict(),
            "fingerprint_sha256": self.fingerprint_sha256,
            "estimate_s": round(self.estimate_s, 1),
            "seconds": round(self.seconds, 2),
            "recommended": recommended(self.findings),
            "candidates": [_row_dict(r) for r in self.rows],
            "chart": self.chart,
            "applied": self.applied,
            "findings": [f.to_dict() for f in self.findings],
            "summary": summarize(self.findings),
        }

    def render(self, console: Console) -> None:
        console.print(table(self.rows, self.workload.get("context")))
        for line in notes(self):
            console.print(line, markup=False)  # wrapped at the console width, as the table is; a path is no markup
        render_findings(console, self.findings, "tqdeploy tune")


def _row_dict(r: Row) -> dict[str, Any]:
    status = "excluded" if r.excluded else "failed" if r.failed else "reused" if r.reused else "measured"
    good = {k: v for k, v in r.good.items() if k != "step"} if r.result is not None else None
    return {"dtype": r.dtype, "status": status, "excluded": r.excluded, "failed": r.failed, "goodput": good} | {
        "result": r.result
    }


def _si(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}"


def _ms(value: Any) -> str:
    v = num(value)
    return "-" if v is None else f"{v * 1000:.0f}" if v < 10 else f"{v:.0f}s"


def cells(r: Row) -> list[str]:
    """dtype, KV tokens, sequences held, concurrency, goodput, TTFT p99 ms, ITL p99 ms, perplexity ratio."""
    if r.excluded or r.failed:
        return [r.dtype, "-", "-", "-", "-", "-", "-", "excluded" if r.excluded else "failed"]
    res = r.result or {}
    kv, q = res.get("kv") or {}, res.get("quality") or {}
    step = r.good.get("step") or {}
    ratio = num(q.get("ratio"))
    quality = "-" if ratio is None else f"{ratio:.3f}"
    quality += "" if r.quality_problem() is None else " !"
    tps = r.good.get("tokens_per_s")
    return [
        r.dtype + (" *" if r.reused else ""),
        _si(num(kv.get("real_tokens"))),
        _si(num(kv.get("holds"))),
        str(step.get("concurrency", "-")),
        f"{tps:.1f}" if tps else "none",
        _ms(step.get("ttft_p99_s")),
        _ms(step.get("itl_p99_s")),
        quality,
    ]


def table(rows: list[Row], context: Any) -> Table:
    from rich import box
    from rich.table import Table

    # no edges, one space of padding each side of a separator: eight columns and an 18-character dtype in 80
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    t.title, t.title_justify = f"KV dtypes at context {context}", "left"
    heads = ["dtype", "KV tok", "seqs", "conc", "goodput", "TTFT99", "ITL99", "ppl x"]
    for i, head in enumerate(heads):
        t.add_column(head, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        t.add_row(*cells(r))
    return t


def notes(result: TuneResult) -> list[str]:
    w, tg = result.workload, result.targets
    target = ", ".join(
        f"{n} p99 <= {v:g} s" for n, v in (("TTFT", tg.ttft_p99_s), ("ITL", tg.itl_p99_s)) if v is not None
    )
    out = [
        f"workload: {w.get('prompt_tokens')} prompt + {w.get('output_tokens')} output tokens, concurrency "
        f"{','.join(str(s) for s in w.get('sweep', []))}; target: {target or 'none stated (goodput = throughput)'}",
        "goodput in output tok/s; TTFT99/ITL99 in ms at that step; seqs: sequences of the context the KV cache "
        "holds; ppl x: perplexity over the reference's (! outside its floor); * reused from an earlier run",
    ]
    if result.chart:
        out.append(f"chart: {result.chart}")
    if result.applied:
        out.append(f"applied: {result.applied.get('summary')}")
    return out
