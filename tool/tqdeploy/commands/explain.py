"""`tqdeploy explain ID`: print the documentation page of a check."""

from __future__ import annotations

import typer

from tqdeploy.commands import options

ORDER = 90
SCHEMA = "tqdeploy.explain/1"


def explain(
    check_id: str = typer.Argument(..., help="Check id, e.g. TQ101."),
    as_json: bool = options.as_json(SCHEMA, what="the page"),
) -> None:
    """Show what a check looks at, why it matters and how to fix it."""
    import re

    from tqdeploy.errors import TQError
    from tqdeploy.resources import data_dir, doc_path

    path = doc_path(check_id) if re.fullmatch(r"(?i)TQ\d{3}", check_id) else None  # never a path of its own
    if path is None or not path.is_file():
        known = sorted(p.stem for p in (data_dir("checks") / "docs").glob("TQ*.md"))
        raise TQError(
            f"no check named {check_id!r}",
            f"use one of: {', '.join(known) if known else '(none documented)'}",
        )
    markdown = path.read_text(encoding="utf-8")
    if not as_json:
        typer.echo(markdown, nl=False)
        return
    from tqdeploy.output import dumps

    first = markdown.splitlines()[0] if markdown else ""
    title = first.lstrip("# ").split(":", 1)[-1].strip()  # "# TQ101: NVIDIA driver" -> "NVIDIA driver"
    typer.echo(dumps({"schema": SCHEMA, "id": path.stem, "title": title, "markdown": markdown}))


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
