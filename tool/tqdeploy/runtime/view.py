"""What the human views of up, down and status share (rich); each result renders itself, its JSON is to_dict()."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from tqdeploy.findings import Finding


def problems(findings: list[Finding]) -> list[Finding]:
    """The findings a human view lists: errors and warnings."""
    return [f for f in findings if f.severity.value in ("error", "warn")]


def render_answer_check(console: Console, summary: dict[str, Any]) -> None:
    """One line for the answer check's summary (state.json answer_check): up and status print it."""
    ppl = summary.get("perplexity")
    figure = f", perplexity {ppl:g}" if isinstance(ppl, (int, float)) else ""
    failed = [f"{f['id']} {f['title']}" for f in summary.get("findings") or [] if f.get("severity") == "error"]
    word = "[green]passed[/green]" if summary.get("status") == "pass" else "[bold red]failed[/bold red]"
    console.print(f"answer check {word} in {summary.get('seconds')} s{figure}" + "".join(f"\n  {t}" for t in failed))
