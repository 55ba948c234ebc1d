"""`tqdeploy explain ID`: print the documentation page of a check."""

from __future__ import annotations

import typer

ORDER = 90


def explain(check_id: str = typer.Argument(..., help="Check id, e.g. TQ101.")) -> None:
    """Show what a check looks at, why it matters and how to fix it."""
    from tqdeploy.errors import TQError
    from tqdeploy.resources import data_dir, doc_path

    path = doc_path(check_id)
    if not path.is_file():
        known = sorted(p.stem for p in (data_dir("checks") / "docs").glob("TQ*.md"))
        raise TQError(
            f"no check named {check_id!r}",
            f"use one of: {', '.join(known) if known else '(none documented)'}",
        )
    typer.echo(path.read_text(encoding="utf-8"), nl=False)


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
