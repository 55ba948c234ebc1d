"""`tqdeploy bundle`: a redacted support bundle of a deployment and its host, safe for a public bug report."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.bundle import inspect_bundle
from tqdeploy.bundle.build import build_bundle
from tqdeploy.bundle.cli_args import check_keywords, default_out, parse_duration, resolve_build_dir, resolve_out
from tqdeploy.bundle.identity import read_keywords, this_host
from tqdeploy.commands import options
from tqdeploy.output import emit


def bundle(
    build_dir: Path | None = typer.Argument(None, help="Build directory of the deployment (default: ./build)."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Archive to write (default: tqdeploy-bundle-TIME.tar.gz); never overwritten."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing archive and mapping at --out."),
    logs_since: str | None = typer.Option(
        None, "--logs-since", help="Only server log lines of the last DURATION, e.g. 30m, 2h, 1d."
    ),
    keyword: list[str] = typer.Option(
        [],
        "--keyword",
        metavar="WORD",
        help="A word to replace wherever it appears (a project or customer name); repeatable.",
    ),
    keyword_file: Path | None = typer.Option(None, "--keyword-file", help="File of such words, one per line."),
    domain: list[str] = typer.Option(
        [],
        "--domain",
        metavar="DOMAIN",
        help="A domain whose host names are replaced too (beside this host's); repeatable.",
    ),
    no_redact: bool = typer.Option(False, "--no-redact", help="Keep secrets and host names (never share the result)."),
    inspect: Path | None = typer.Option(
        None, "--inspect", help="List a bundle, verify it, scan it again (nested archives too); exit 1 if unclean."
    ),
    as_json: bool = options.as_json(),
) -> int:
    """Collect doctor, plan, spec, state, logs, metrics, versions, GPU/kernel/Docker facts into one tar.gz."""
    words = tuple(keyword) + (tuple(read_keywords(keyword_file)) if keyword_file else ())
    identity = this_host(domains=tuple(domain), keywords=words)
    if inspect is not None:
        checked = inspect_bundle(inspect, identity)
        emit(checked, as_json)
        return checked.exit_code

    check_keywords(words)
    result = build_bundle(
        resolve_build_dir(build_dir),
        resolve_out(out or default_out()),
        logs_since_s=parse_duration(logs_since) if logs_since else None,
        redact=not no_redact,
        identity=identity,
        force=force,
    )
    emit(result, as_json)
    return 0


def register(app: typer.Typer) -> None:
    app.command("bundle")(bundle)
