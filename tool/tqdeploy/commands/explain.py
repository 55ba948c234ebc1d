"""`tqdeploy explain ID`: print the documentation page of a check."""

from __future__ import annotations

import typer

from tqdeploy.checkids import explain_page
from tqdeploy.commands import options
from tqdeploy.output import dumps

SCHEMA = "tqdeploy.explain/1"


def explain(
    check_id: str = typer.Argument(..., help="Check id as a finding shows it, e.g. TQ101, FA001 or TQ_HYBRID_BUG."),
    as_json: bool = options.as_json(SCHEMA, what="the page"),
) -> None:
    """Show what a check looks at, why it matters and how to fix it (TQ ids, false-advice FA ids, rule codes)."""
    check_id, markdown = explain_page(check_id)
    if not as_json:
        typer.echo(markdown, nl=False)
        return
    first = markdown.splitlines()[0] if markdown else ""
    title = first.lstrip("# ").split(":", 1)[-1].strip()  # "# TQ101: NVIDIA driver" -> "NVIDIA driver"
    typer.echo(dumps({"schema": SCHEMA, "id": check_id, "title": title, "markdown": markdown}))


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
