"""`tqdeploy profile`: start-up timeline, KV capacity against the plan, and KV usage under a bounded load."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.buildfolder import BuildFolder
from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.output import emit, make_console
from tqdeploy.profile.lifecycle import profile_build
from tqdeploy.profile.load import check_loopback, load_spec
from tqdeploy.profile.run import Inputs, write_outputs
from tqdeploy.profile.run import profile as run_profile


def profile(
    build: Path | None = typer.Argument(None, help="Build folder to start through `tqdeploy up` (--start)."),
    log: Path | None = typer.Option(None, "--log", help="Build the timeline from this saved vLLM log."),
    url: str | None = typer.Option(None, "--url", help="A running server on this machine, e.g. http://127.0.0.1:8000"),
    api_key_file: Path | None = typer.Option(
        None, "--api-key-file", help="File holding the server's API key (default with BUILD: server.api_key_file)."
    ),
    model: str | None = typer.Option(None, "--model", help="Checkpoint folder, for the planned KV capacity."),
    start: str = typer.Option("warm", "--start", help="cold | warm | both (with BUILD)."),
    load: bool = typer.Option(False, "--load", help="Run a bounded load and sample /metrics."),
    concurrency: str = typer.Option("1,4", "--concurrency", help="Concurrency steps, e.g. 1,4,8."),
    prompt_tokens: int = typer.Option(64, "--prompt-tokens", help="Prompt length in tokens."),
    output_tokens: int = typer.Option(32, "--output-tokens", help="Output length in tokens."),
    requests: int = typer.Option(16, "--requests", help="Requests per concurrency step."),
    duration: float | None = typer.Option(None, "--duration", help="Seconds per step (stops earlier if reached)."),
    sample_interval: float = typer.Option(1.0, "--sample-interval", help="Seconds between /metrics scrapes."),
    warmup: float = typer.Option(0.0, "--warmup", help="Untimed seconds of load before each step, e.g. 5."),
    out: Path | None = typer.Option(None, "--out", help="Folder for profile.json and profile.png."),
    chart: bool = typer.Option(True, "--chart/--no-chart", help="Write profile.png (matplotlib)."),
    as_json: bool = options.as_json("tqdeploy.profile/1", what="the profile (profile.json)"),
) -> int:
    """Where a start goes, what KV cache vLLM really built (TurboQuant in effect?), and KV usage under load.

    Exit 0 when no error finding, 1 when one (a failed start, a refused key, failed requests), 2 bad input."""
    if build is None and log is None and url is None:
        raise TQError("nothing to profile", "pass a BUILD folder, --log FILE, or --url http://127.0.0.1:PORT")
    if start not in ("cold", "warm", "both"):
        raise TQError(f"--start {start!r} is not cold, warm or both", "e.g. --start cold")
    spec = load_spec(concurrency, prompt_tokens, output_tokens, requests, duration, sample_interval, warmup)
    if log is not None and not log.is_file():
        raise TQError(f"--log {log}: no such file", "pass the path of a saved vLLM log")
    if load and url is None and build is None:
        raise TQError("--load needs a server", "pass --url http://127.0.0.1:PORT or a BUILD folder")
    if out is not None and (out.is_symlink() or (out.exists() and not out.is_dir())):
        # Before anything is profiled (a start can take minutes): --out is a folder, never a file to replace.
        raise TQError(
            f"--out {out} is {'a symlink' if out.is_symlink() else 'an existing file'}, not a folder",
            "pass a folder for profile.json and profile.png (a new or existing one), e.g. --out profile-run",
        )
    inputs = Inputs(
        log=log,
        url=check_loopback(url) if url else None,
        model=model,
        load=spec if load else None,
        chart=chart,
        key_file=api_key_file,
        build_dir=build,
    )
    if build is not None and url is None:
        result = profile_build(build, start, inputs)

        out = out or BuildFolder(build).profile
    else:
        result = run_profile(inputs, "log" if url is None else "running")
        out = out or Path("tqdeploy-profile")
    path = write_outputs(result, out, chart)
    emit(result, as_json)
    if not as_json:
        make_console().print(f"wrote {path}")
    return result.exit_code  # README's exit codes: 1 when an error finding was reported


def register(app: typer.Typer) -> None:
    app.command("profile")(profile)
