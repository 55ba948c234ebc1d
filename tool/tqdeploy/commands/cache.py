"""`tqdeploy cache export|import`: the build's start-up caches as one portable, verified artifact (issue 38).

Thin: tqdeploy.startcache does the work. Exit codes: 0 done; 2 bad input or a refusal (one line naming what
differs, or the file holding a secret, and the fix); 3 a bug.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.clihelp import TQCommand
from tqdeploy.commands import options
from tqdeploy.output import emit
from tqdeploy.runtime.backends.process.cachecontext import cache_context
from tqdeploy.startcache.artifact import export_build, import_build

cache_app = typer.Typer(
    help="Carry a build's start-up caches (compile, inductor, Triton) to another host as one artifact.",
    no_args_is_help=True,
)

BUILD = typer.Argument(..., help="Build directory (tqdeploy build --out).")
VOLUME = typer.Option(
    None,
    "--volume",
    help="The build's VLLM_CACHE_ROOT (default: BUILD/.tqdeploy/cache/vllm; /cache/vllm in a container).",
)
PYTHON = typer.Option(
    None, "--python", help="The interpreter that runs the build's vLLM (default: $TQDEPLOY_VLLM_PYTHON, the last up's)."
)


@cache_app.command("export", cls=TQCommand)
def export(
    build_dir: Path = BUILD,
    out: Path = typer.Option(None, "-o", "--out", help="Artifact to write (default: BUILD/startcache.tar.xz)."),
    volume: Path = VOLUME,
    python: str = PYTHON,
    as_json: bool = options.as_json("tqdeploy.cache-export/1"),
) -> int:
    """Pack the build's caches with a manifest of what makes them valid; refuses a file holding a secret."""
    ctx = cache_context(build_dir, volume, python)
    result = export_build(ctx, Path(out) if out else ctx.build / "startcache.tar.xz")
    emit(result, as_json)
    return 0


@cache_app.command("import", cls=TQCommand)
def import_(
    build_dir: Path = BUILD,
    archive: Path = typer.Argument(..., help="Artifact `tqdeploy cache export` wrote."),
    volume: Path = VOLUME,
    python: str = PYTHON,
    force: bool = typer.Option(
        False, "--force", help="Import although the artifact was made for another host or build (those caches miss)."
    ),
    as_json: bool = options.as_json("tqdeploy.cache-import/1"),
) -> int:
    """Check the artifact against this host and build, then extract it safely into the unused cache volume."""
    result = import_build(cache_context(build_dir, volume, python), archive, force)
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
