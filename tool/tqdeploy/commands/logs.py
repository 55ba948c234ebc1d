"""`tqdeploy logs`: the deployment's server log (stamped by `up` as it read each line)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.runtime.logs import parse_since, read_lines, read_records

SCHEMA = "tqdeploy.logs/1"


def logs(
    build_dir: Path = typer.Argument(Path("build"), help="Build directory of the deployment."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines while the server runs."),
    since: str | None = typer.Option(None, "--since", help="Only lines since: 30s, 5m, 2h, or an epoch time."),
    stamps: bool = typer.Option(False, "--stamps", help="Prefix each line with the time tqdeploy read it (UTC)."),
    as_json: bool = options.as_json(
        SCHEMA, what="each line", note='one object a line: {"schema", "time" (epoch s or null), "line"}'
    ),
) -> int:
    """Print the server log of BUILD_DIR's current (or last) run; earlier runs stay in .tqdeploy/logs/."""

    start = parse_since(since) if since else None
    lines: Iterator[str]
    if as_json:
        lines = (
            json.dumps({"schema": SCHEMA, "time": when, "line": text})
            for when, text in read_records(build_dir, start, follow)
        )
    else:
        lines = read_lines(build_dir, start, stamps, follow)
    try:
        for line in lines:
            sys.stdout.write(line + "\n")
            if follow:
                sys.stdout.flush()
    except BrokenPipeError:  # `tqdeploy logs | head`
        pass
    return 0


def register(app: typer.Typer) -> None:
    app.command("logs")(logs)
