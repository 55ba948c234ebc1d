"""One output object per command, shown either as a rich view or as JSON.

A command builds a result with ``to_dict()`` (the JSON contract, with a "schema" key) and
``render(console)`` (the human view), then calls ``emit``. NO_COLOR is honoured by rich.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

from tqdeploy.errors import shown
from tqdeploy.findings import Finding, sort_worst_first

if TYPE_CHECKING:  # rich is imported where a view is drawn: `--json` and plain echo never load it
    from rich.console import Console

TITLE_LIMIT = 1000  # characters of a finding's title or fix as printed

SEVERITY_STYLE = {
    "error": "bold red",
    "warn": "yellow",
    "info": "cyan",
    "ok": "green",
    "skipped": "dim",
}


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...

    def render(self, console: Console) -> None: ...


def _stop_writing() -> None:
    """The reader of stdout went away (`tqdeploy plan | head`): send the rest to /dev/null, so the command
    ends with its own exit code, as it would have without the pipe, instead of rich's SystemExit(1) or
    Python's "Exception ignored" at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def echo(text: str) -> None:
    """One text on stdout, tolerant of a reader that stops early."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _stop_writing()


def make_console(stderr: bool = False) -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            _stop_writing()

    return _Console(stderr=stderr, highlight=False, soft_wrap=False)


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


def emit(result: Result, as_json: bool) -> None:
    if not as_json:
        result.render(make_console())
        return
    try:
        sys.stdout.write(dumps(result.to_dict()) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _stop_writing()


def format_evidence(evidence: dict[str, Any]) -> str:
    """key=value pairs; each value (a GPU name, a path, a server's answer) escaped and cut (idents.shown)."""
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = f"{value:g}"
        elif isinstance(value, (list, tuple)):
            value = ", ".join(shown(v) for v in value[:50]) + (f", ...({len(value)} items)" if len(value) > 50 else "")
        parts.append(f"{shown(key, 80)}={shown(value, TITLE_LIMIT)}")
    return "; ".join(parts)


def render_findings(console: Console, findings: list[Finding], title: str, show_ok: bool = True) -> None:
    """A table worst first across all areas (an error is never below another area's passes), the area on
    every row, the fix under each problem."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    table = Table(title=escape(shown(title, TITLE_LIMIT)), show_lines=False, expand=False)  # it names a file
    table.add_column("id", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("area", no_wrap=True)
    table.add_column("finding")
    rows = [f for f in sort_worst_first(findings) if show_ok or f.severity.value not in ("ok", "skipped")]
    for i, f in enumerate(rows):
        body = Text(shown(f.title, TITLE_LIMIT))  # titles quote names from outside: escaped, cut
        ev = format_evidence(f.evidence)
        if ev:
            body.append("\n" + ev, style="dim")
        if f.remediation and f.severity.value in ("error", "warn", "info"):
            body.append("\nfix: " + shown(f.remediation, TITLE_LIMIT), style="bold")
        last_of_severity = i == len(rows) - 1 or rows[i + 1].severity is not f.severity
        table.add_row(
            f.id,
            Text(f.severity.value, style=SEVERITY_STYLE[f.severity.value]),
            f.area,
            body,
            end_section=last_of_severity,
        )
    console.print(table)
