"""`tqdeploy status`: live or not, ready or not, phase, uptime, GPU memory, the last error."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.output import emit
from tqdeploy.runtime import status as read


def status(
    build_dir: Path = typer.Argument(Path("build"), help="Build directory of the deployment."),
    as_json: bool = options.as_json("tqdeploy.status/1"),
) -> int:
    """Show the deployment's state; exit 0 when it is ready, 1 otherwise."""

    if not Path(build_dir).is_dir():
        raise TQError(f"{build_dir} is not a directory", "pass the build directory `tqdeploy up` started")
    result = read(build_dir)
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("status")(status)
