"""The recommendation (TQ492): among the measured dtypes whose answers stay within their floor (TQ493 names the
ones that do not) and whose KV cache holds at least one sequence of the context, the one with the best goodput
at the user's targets; ties go to the larger capacity. None qualifies: "none of them", with what binds each.
Excluded candidates (TQ490) and failed starts (TQ491) are findings of their own. Pure, so its pass and fail
examples run on recorded results (tests/test_tune_verdict.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.tune.goodput import Targets, goodput, num

AREA = "tune"
EXCLUDED, FAILED, CHOICE, QUALITY = "TQ490", "TQ491", "TQ492", "TQ493"


@dataclass
class Row:
    """One candidate as the report shows it."""

    dtype: str
    excluded: str | None = None
    failed: str | None = None  # "did not start: why", or "not measured: why"
    result: dict[str, Any] | None = None
    reused: bool = False  # read from the store, not measured in this run
    good: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> int | None:
        value = num((self.result or {}).get("kv", {}).get("holds"))
        return int(value) if value is not None else None

    def quality_problem(self) -> str | None:
        q = (self.result or {}).get("quality") or {}
        ratio, floor = num(q.get("ratio")), num(q.get("floor"))
        if q.get("status") != "pass":
            titles = [str(f.get("title")) for f in q.get("findings") or [] if isinstance(f, dict)]
            return "answers failed the check" + (f": {titles[0][:160]}" if titles else "")
        if ratio is not None and floor is not None and ratio > floor:
            return f"perplexity {ratio:.3f}x the reference, above its floor {floor:g}x"
        return None


def _f(fid: str, sev: Severity, title: str, fix: str = "", **evidence: Any) -> Finding:
    return Finding(fid, sev, title, evidence, fix, AREA)


def binds(row: Row) -> str | None:
    """What keeps a measured candidate from being recommended; None when nothing does."""
    if row.holds is not None and row.holds < 1:
        return "its KV cache does not hold one sequence of the context"
    return row.quality_problem() or (None if row.good.get("tokens_per_s") else row.good.get("binds", "no goodput"))


def verdict(rows: list[Row], targets: Targets, context: int) -> list[Finding]:
    findings: list[Finding] = []
    for row in rows:
        if row.excluded:
            findings.append(_f(EXCLUDED, Severity.INFO, f"{row.dtype} not measured: {row.excluded}", dtype=row.dtype))
        elif row.failed:
            fix = f"see the copy's log under BUILD/.tqdeploy/tune/{row.dtype}/ (`tqdeploy logs` on its build folder)"
            findings.append(_f(FAILED, Severity.WARN, f"{row.dtype}: {row.failed}", fix, dtype=row.dtype))
        else:
            row.good = goodput(list(row.result["steps"]), targets) if row.result else {}
            problem = row.quality_problem()
            if problem:
                fix = "this dtype costs answer quality on this model: keep a higher-precision KV cache"
                findings.append(_f(QUALITY, Severity.WARN, f"{row.dtype}: {problem}", fix, dtype=row.dtype))
    measured = [r for r in rows if r.result and not r.excluded and not r.failed]
    fit = [r for r in measured if binds(r) is None]
    shown = {"context": context, **targets.to_dict()}
    if not fit:
        why = {r.dtype: binds(r) for r in measured} | {r.dtype: r.failed for r in rows if r.failed}
        title = "none of them: " + ("; ".join(f"{d}: {w}" for d, w in why.items()) or "no candidate was measured")
        fix = "relax --ttft-p99/--itl-p99, lower the load (--concurrency), or shorten --context"
        return [*findings, _f(CHOICE, Severity.WARN, title, fix, recommended=None, binds=why, **shown)]
    best = max(fit, key=lambda r: (r.good["tokens_per_s"], r.holds or 0))
    q = best.result["quality"] if best.result else {}
    title = (
        f"{best.dtype}: best goodput {best.good['tokens_per_s']:.1f} tok/s (concurrency {best.good['concurrency']}), "
        f"holds {best.holds if best.holds is not None else '?'} sequences of {context} tokens, answers within "
        f"its floor (perplexity {_ratio(q)})"
    )
    others = {r.dtype: binds(r) or f"{r.good['tokens_per_s']:.1f} tok/s" for r in measured if r is not best}
    evidence = {"recommended": best.dtype, "others": others, **shown}
    fix = f"`tqdeploy tune BUILD --apply` writes kv_cache_dtype = {best.dtype!r} into the build's spec and rebuilds"
    return [*findings, _f(CHOICE, Severity.OK, title, fix, **evidence)]


def _ratio(q: dict[str, Any]) -> str:
    ratio = num(q.get("ratio"))
    return f"{ratio:.3f}x the reference" if ratio is not None else "no reference ratio"


def recommended(findings: list[Finding]) -> str | None:
    choice = next((f for f in findings if f.id == CHOICE), None)
    value = choice.evidence.get("recommended") if choice else None
    return value if isinstance(value, str) else None
