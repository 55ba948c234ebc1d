"""`tqdeploy check [BUILD | --url URL]`: whether a running server's answers are right (docs/answers.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.answers import target as targets
from tqdeploy.answers.record import Recorded, record_for_build
from tqdeploy.answers.run import run_check
from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.output import emit


def check(
    build_dir: Path | None = typer.Argument(None, help="Build directory of a running deployment (default: build)."),
    url: str | None = typer.Option(None, "--url", help="Check this server instead (e.g. http://127.0.0.1:8000)."),
    api_key_file: Path | None = options.api_key_file("the build's server.api_key_file"),
    served_model_name: str | None = options.served_model_name(
        "The model to ask", "the build's, or the only one --url lists"
    ),
    reference: Path | None = typer.Option(
        None, "--reference", help="Reference JSON to compare with (default: the build's own, else a shipped one)."
    ),
    record_reference: bool = typer.Option(
        False,
        "--record-reference",
        help="Start a copy of BUILD (stopped) with kv_cache_dtype auto, record its answers as the reference, stop it.",
    ),
    check_timeout: float = typer.Option(
        30.0, "--check-timeout", help="Seconds for the whole check (each request gets <= 20), as up's."
    ),
    as_json: bool = options.as_json("tqdeploy.check/1"),
) -> int:
    """Probe the server's answers: perplexity of a fixed text, greedy answers asked twice, recall of a planted
    fact. Exit codes: 0 the answers pass, 1 a finding at error (the check failed), 2 bad input."""
    options.check_seconds("--check-timeout", check_timeout, example="60")
    if url is not None and build_dir is not None and record_reference:
        raise TQError("--record-reference starts BUILD's copy: --url is not used", "drop --url")
    if url is not None and build_dir is None:
        if record_reference:
            raise TQError("--record-reference needs the BUILD to start", "pass the build directory instead of --url")
        target = targets.for_url(url, api_key_file, served_model_name)
    else:
        build = build_dir or Path("build")
        if not build.is_dir():
            raise TQError(f"build directory {build} not found", "pass the directory `tqdeploy build --out` wrote")
        target = targets.for_build(build, url, api_key_file, served_model_name)
        if record_reference:
            recorded = Recorded(record_for_build(build, target))
            emit(recorded, as_json)
            return 0
    if reference is not None and not reference.is_file():
        raise TQError(f"--reference {reference} is not a file", "pass a reference JSON that check recorded")
    result = run_check(target, reference=reference, budget=check_timeout)
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("check")(check)
