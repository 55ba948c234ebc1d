"""`tqdeploy connect CLIENT [BUILD_DIR]`: a client's settings for the deployment, and --check to prove them."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.connect import connect as make_settings
from tqdeploy.connect import resolve_endpoint
from tqdeploy.connect.clients import CLIENTS
from tqdeploy.errors import TQError
from tqdeploy.idents import check_no_control
from tqdeploy.output import emit


def connect(
    client: str = typer.Argument(..., help="openai, claude-code or comfyui."),
    build_dir: Path = typer.Argument(
        Path("build"), help="The directory `tqdeploy build --out` wrote (default: build, as for up, status and down)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="The address clients use, e.g. http://10.0.0.5:8000 (default: from the build)."
    ),
    api_key_file: Path | None = options.api_key_file("the spec's server.api_key_file"),
    served_model_name: str | None = options.served_model_name(
        "The name the server serves, as vLLM's flag", "model.served_name"
    ),
    check: bool = typer.Option(False, "--check/--no-check", help="Prove the settings against the running server."),
    request_timeout: float = typer.Option(
        60.0, "--request-timeout", help="Seconds per request with --check (kubectl's name for it)."
    ),
    as_json: bool = options.as_json("tqdeploy.connect/1"),
) -> int:
    """Print the settings a client needs for this deployment (never the key itself)."""
    if client not in CLIENTS:
        raise TQError(f"unknown client {client!r}", f"pick one of: {', '.join(CLIENTS)}")
    if not build_dir.is_dir():
        raise TQError(f"build directory {build_dir} not found", "pass the directory `tqdeploy build --out` wrote")
    options.check_seconds("--request-timeout", request_timeout)
    if served_model_name is not None:
        check_no_control(
            "--served-model-name", served_model_name, "pass the served model name as the server lists it in /v1/models"
        )
    endpoint = resolve_endpoint(build_dir, base_url=base_url, api_key_file=api_key_file, model=served_model_name)
    result = make_settings(client, endpoint, check=check, timeout=request_timeout)
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("connect")(connect)
