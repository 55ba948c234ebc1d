"""`tqdeploy down`: stop a deployment gracefully, then forcibly; check nothing is left."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.output import emit
from tqdeploy.runtime import down as stop

MAX_TIMEOUT_S = 3600


def down(
    build_dir: Path = typer.Argument(Path("build"), help="Build directory of the deployment."),
    grace_period: float = typer.Option(
        30.0, "--grace-period", help="Seconds between SIGTERM and SIGKILL (kubectl delete's name for it)."
    ),
    force: bool = typer.Option(False, "--force", help="Also with a corrupt or missing state file (finds by marker)."),
    as_json: bool = options.as_json("tqdeploy.down/1"),
) -> int:
    """Stop the deployment in BUILD_DIR (its whole process group) and prove nothing is left."""

    if not (math.isfinite(grace_period) and 0 <= grace_period <= MAX_TIMEOUT_S):  # nan compares false
        raise TQError(
            f"--grace-period {grace_period} must be a number of seconds from 0 to {MAX_TIMEOUT_S}",
            "pass the grace period between SIGTERM and SIGKILL in seconds, e.g. 30",
        )
    if not Path(build_dir).is_dir():
        raise TQError(f"{build_dir} is not a directory", "pass the build directory `tqdeploy up` started")
    result = stop(build_dir, timeout=grace_period, force=force)
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("down")(down)
