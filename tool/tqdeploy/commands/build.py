"""`tqdeploy build`: one deployment spec in, pinned and reproducible deployment files out."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.output import emit
from tqdeploy.render.build import BuildRequest, build_or_check


def build(
    spec_file: Path | None = typer.Argument(
        None, help="tqdeploy.toml; default: ./tqdeploy.toml when it exists, else the embedded default spec."
    ),
    embedded: str | None = typer.Option(None, "--embedded", help="Use an embedded spec by name (e.g. tiny-cpu-demo)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Build directory to write (default: build)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print a unified diff against --out and write nothing."),
    check: Path | None = typer.Option(
        None,
        "--check",
        help="Verify a build directory against its lock (and, given a spec, against what it renders now); "
        "exit 1 on drift.",
    ),
    image: bool = typer.Option(
        False, "--image", help="Also build the container image (Docker engine), or print the command."
    ),
    resolve_digests: bool = typer.Option(
        False, "--resolve-digests", help="Read the base image digest from its registry and pin it."
    ),
    model: str | None = options.model(
        "Checkpoint to check TP, max-model-len and KV dtype against", note="default: a local model.path"
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace files in --out that tqdeploy did not write or that were edited (a backup is kept).",
    ),
    take_over: bool = typer.Option(
        False,
        "--take-over",
        help="Build into a folder that holds another deployment (its lock names another spec): its files are "
        "replaced or removed, only those the lock proves unchanged.",
    ),
    as_json: bool = options.as_json(),
) -> int:
    """Render Dockerfile, serve.sh, compose, Kubernetes, monitoring and a lock from a spec."""
    result = build_or_check(
        BuildRequest(
            spec_file=spec_file,
            embedded=embedded,
            out=out,
            dry_run=dry_run,
            check=check,
            image=image,
            resolve_digests=resolve_digests,
            model=model,
            force=force,
            take_over=take_over,
        )
    )
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("build")(build)
