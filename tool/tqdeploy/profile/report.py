"""profile.json (schema tqdeploy.profile/1) and the terminal summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tqdeploy.findings import Finding, Severity, exit_code_for
from tqdeploy.output import render_findings
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.timeline import UNATTRIBUTED, Timeline

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA = "tqdeploy.profile/1"
MIN_ATTRIBUTED = 0.95


@dataclass
class ProfileResult:
    start: str  # cold | warm | log | running
    timeline: Timeline | None
    kv: JSONObject = field(default_factory=dict)
    load: JSONObject | None = None
    findings: list[Finding] = field(default_factory=list)
    context: JSONObject = field(default_factory=dict)  # log path, base_url, cache state
    chart: str | None = None

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings)

    def timeline_findings(self) -> list[Finding]:
        t = self.timeline
        if t is None or not t.phases:
            return []
        out: list[Finding] = []
        if t.attributed_fraction < MIN_ATTRIBUTED:
            out.append(
                Finding(
                    "TQ432",
                    Severity.WARN,
                    f"only {t.attributed_fraction:.0%} of the start-up time lands in named phases",
                    {"wall_seconds": round(t.wall_seconds, 3), "attributed_fraction": round(t.attributed_fraction, 4)},
                    "read the log around the unattributed gaps (tqdeploy profile --log FILE --json shows their "
                    "start times) and report the lines there",
                    "start-up",
                )
            )
        if t.clock_backwards:
            out.append(clock_backwards_finding(t.clock_backwards))
        if self.start == "warm" and t.compile_cache in ("miss", "load-failed"):
            out.append(
                Finding(
                    "TQ433",
                    Severity.WARN,
                    f"a warm start still compiled the model (torch.compile cache {t.compile_cache})",
                    {"compile_cache": t.compile_cache},
                    "keep VLLM_CACHE_ROOT on persistent storage and the environment unchanged between starts "
                    "(the cache key includes env factors); 'load-failed' is vLLM failing to load its own AOT "
                    "artefact (the CPU build of 0.32.0 does on every start): VLLM_USE_AOT_COMPILE=0 with "
                    "TORCHINDUCTOR_CACHE_DIR under VLLM_CACHE_ROOT, which `tqdeploy build` renders for the cpu variant",
                    "start-up",
                )
            )
        return out

    def to_dict(self) -> JSONObject:
        t = self.timeline
        findings = [f.to_dict() for f in self.findings]
        return {
            "schema": SCHEMA,
            "start": self.start,
            "wall_seconds": round(t.wall_seconds, 3) if t else None,
            "phases": [p.to_dict() for p in t.phases] if t else [],
            "attributed_fraction": round(t.attributed_fraction, 4) if t else None,
            "untimed": t.untimed if t else [],
            "timeline_origin": t.origin if t else None,
            "stamped": t.stamped if t else None,
            "compile_cache": t.compile_cache if t else None,
            "startup_plan": t.startup_plan if t else None,
            "clock_backwards": t.clock_backwards if t else [],
            "weights": t.weights if t else {},
            "kv": self.kv,
            "load": self.load,
            "findings": findings,
            "context": self.context,
            "chart": self.chart,
        }

    def render(self, console: Console) -> None:
        from rich.table import Table

        t = self.timeline
        if t is not None and t.phases:
            table = Table(title=f"start-up timeline ({self.start}; time 0 = {t.origin})")
            for col in ("phase", "start s", "seconds", "share", "source"):
                table.add_column(col, justify="right" if col in ("start s", "seconds", "share") else "left")
            wall = t.wall_seconds or 1.0
            for p in t.phases:
                style = "yellow" if p.name == UNATTRIBUTED else None
                table.add_row(
                    p.name, f"{p.start_s:.1f}", f"{p.seconds:.2f}", f"{p.seconds / wall:.0%}", p.source, style=style
                )
            console.print(table)
            if self.context.get("start_failed"):
                console.print("[red]the start failed[/red]: the timeline ends where the engine died (see findings)")
            console.print(
                f"wall {t.wall_seconds:.1f} s, {t.attributed_fraction:.1%} attributed; "
                f"torch.compile cache: {t.compile_cache or 'unknown'}; startup plan: {t.startup_plan or 'no plan line'}"
            )
            if line := weights_line(t.weights):
                console.print(line)
            for name in t.untimed:
                console.print(f"[dim]cannot time: {name}[/dim]")
        if self.kv:
            console.print(
                f"KV cache: {self.kv.get('cache_dtype')} real {self.kv.get('real_tokens')} tokens, "
                f"planned {self.kv.get('planned_tokens')}"
            )
        if self.context.get("compare"):
            _render_compare(console, self.context["compare"])
        if self.load:
            _render_load(console, self.load)
        if self.findings:
            render_findings(console, self.findings, "profile findings")
        if self.chart:
            console.print(f"chart: {self.chart}")


def clock_backwards_finding(steps: list[JSONObject]) -> Finding:
    first = steps[0]
    return Finding(
        "TQ440",
        Severity.WARN,
        f"the log's clock goes backwards at {len(steps)} milestone(s) (first: {first['phase']}, line {first['line']}, "
        f"{first['seconds_back']:g} s back): those phases are not measured",
        {"steps": steps[:10]},
        "profile a log of one start as tqdeploy up wrote it (BUILD/.tqdeploy/logs/server.log), not an edited or "
        "merged one; a clock set back during the start (NTP step) makes the figures around it unreliable",
        "start-up",
    )


def weights_line(w: JSONObject) -> str:
    """'weights 2.1 GB in 1.8 s = 1.17 GB/s; disk (O_DIRECT) 1.60 GB/s; page cache 3% resident before start'."""
    if not w:
        return ""
    parts: list[str] = []
    if w.get("bytes") and w.get("seconds"):
        rate = f" = {w['gb_per_s']:.2f} GB/s" if w.get("gb_per_s") else f" ({w.get('note', 'no rate')})"
        size = f"{w['bytes'] / 1e9:.1f} GB" if w["bytes"] >= 1e8 else f"{w['bytes'] / 1e6:.1f} MB"
        parts.append(f"weights {size} in {w['seconds']:.{1 if w['seconds'] >= 1 else 2}f} s{rate}")
    if "disk_read_gb_per_s" in w:
        disk = w["disk_read_gb_per_s"]
        parts.append(f"disk (O_DIRECT) {disk:.2f} GB/s" if disk else f"disk: {w.get('disk_note')}")
    if w.get("page_cache_resident_fraction") is not None:
        parts.append(f"page cache {w['page_cache_resident_fraction']:.0%} resident {w.get('page_cache_measured')}")
    elif w.get("page_cache_note"):
        parts.append(f"page cache: {w['page_cache_note']}")
    if w.get("vs_disk") is not None:
        parts.append(f"load/disk {w['vs_disk']:.2f}x")
    return "; ".join(parts)


def _render_load(console: Console, load: JSONObject) -> None:
    from rich.table import Table

    table = Table(title="bounded load (client-side)")
    for col in ("concurrency", "done/sent", "TTFT p50 ms", "ITL p50 ms", "out tok/s"):
        table.add_column(col, justify="right")
    for step in load.get("steps", []):

        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v * 1000:.1f}"

        table.add_row(
            str(step["concurrency"]),
            f"{step['completed']}/{step['requests']}",
            ms(step["ttft_p50_s"]),
            ms(step["itl_p50_s"]),
            f"{step['output_tokens_per_s']}",
        )
    console.print(table)
    server = load.get("server", {})
    console.print(
        f"server: KV usage max {server.get('kv_usage_max')}, running max {server.get('running_max')}, "
        f"waiting max {server.get('waiting_max')}, preemptions {server.get('preemptions')}"
    )


def _render_compare(console: Console, compare: JSONObject) -> None:
    from rich.table import Table

    table = Table(title=f"cold vs warm (warm/cold = {compare.get('warm_over_cold')})")
    for col in ("phase", "cold s", "warm s"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for row in compare["phases"]:
        table.add_row(row["phase"], f"{row['cold_s']:.2f}", f"{row['warm_s']:.2f}")
    console.print(table)
    spends = ", ".join(f"{r['phase']} {r['warm_s']:.1f} s" for r in compare.get("warm_still_spends", []))
    console.print(f"a warm start still spends: {spends}")
    plan = compare.get("startup_plan") or {}
    if plan.get("saved_s") is not None:
        console.print(
            f"startup plan applied on the warm start: {plan['phase']} {plan['cold_s']:.1f} s -> {plan['warm_s']:.1f} s "
            f"(saved {plan['saved_s']:.1f} s)"
        )
    elif plan:
        console.print(
            f"startup plan: cold {plan.get('cold') or 'no plan line'}, warm {plan.get('warm') or 'no plan line'}"
        )
