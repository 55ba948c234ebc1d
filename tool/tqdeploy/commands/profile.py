"""`tqdeploy profile`: start-up timeline, KV capacity against the plan, and KV usage under a bounded load."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options

ORDER = 55


def _ints(text: str, flag: str) -> list[int]:
    from tqdeploy.errors import TQError

    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise TQError(f"{flag} {text!r} is not a list of positive integers", f"e.g. {flag} 1,4,8")
    return values


def profile(
    build: Path | None = typer.Argument(None, help="Build folder to start through `tqdeploy up` (--start)."),
    log: Path | None = typer.Option(None, "--log", help="Build the timeline from this saved vLLM log."),
    url: str | None = typer.Option(None, "--url", help="A running server on this machine, e.g. http://127.0.0.1:8000"),
    model: str | None = typer.Option(None, "--model", help="Checkpoint folder, for the planned KV capacity."),
    start: str = typer.Option("warm", "--start", help="cold | warm | both (with BUILD)."),
    load: bool = typer.Option(False, "--load", help="Run a bounded load and sample /metrics."),
    concurrency: str = typer.Option("1,4", "--concurrency", help="Concurrency steps, e.g. 1,4,8."),
    prompt_tokens: int = typer.Option(64, "--prompt-tokens", help="Prompt length in tokens."),
    output_tokens: int = typer.Option(32, "--output-tokens", help="Output length in tokens."),
    requests: int = typer.Option(16, "--requests", help="Requests per concurrency step."),
    duration: float | None = typer.Option(None, "--duration", help="Seconds per step (stops earlier if reached)."),
    sample_interval: float = typer.Option(1.0, "--sample-interval", help="Seconds between /metrics scrapes."),
    out: Path | None = typer.Option(None, "--out", help="Folder for profile.json and profile.png."),
    chart: bool = typer.Option(True, "--chart/--no-chart", help="Write profile.png (matplotlib)."),
    as_json: bool = options.as_json("tqdeploy.profile/1", what="the profile (profile.json)"),
) -> int:
    """Where a start goes, what KV cache vLLM really built (TurboQuant in effect?), and KV usage under load."""
    from tqdeploy.errors import TQError
    from tqdeploy.output import emit
    from tqdeploy.profile.load import LoadSpec, check_loopback
    from tqdeploy.profile.run import Inputs, write_outputs

    if build is None and log is None and url is None:
        raise TQError("nothing to profile", "pass a BUILD folder, --log FILE, or --url http://127.0.0.1:PORT")
    if start not in ("cold", "warm", "both"):
        raise TQError(f"--start {start!r} is not cold, warm or both", "e.g. --start cold")
    for flag, value in (
        ("--prompt-tokens", prompt_tokens),
        ("--output-tokens", output_tokens),
        ("--requests", requests),
    ):
        if value < 1:
            raise TQError(f"{flag} {value} must be 1 or more", f"e.g. {flag} 16")
    if not 0.05 <= sample_interval <= 60:
        raise TQError(f"--sample-interval {sample_interval} is outside 0.05..60 s", "e.g. --sample-interval 1")
    options.check_seconds("--duration", duration, example="30")
    if log is not None and not log.is_file():
        raise TQError(f"--log {log}: no such file", "pass the path of a saved vLLM log")
    spec = None
    if load:
        if url is None and build is None:
            raise TQError("--load needs a server", "pass --url http://127.0.0.1:PORT or a BUILD folder")
        steps = _ints(concurrency, "--concurrency")
        spec = LoadSpec(steps, prompt_tokens, output_tokens, requests, duration, sample_interval)
    inputs = Inputs(log=log, url=check_loopback(url) if url else None, model=model, load=spec, chart=chart)
    if build is not None and url is None:
        from tqdeploy.profile.lifecycle import profile_build

        result = profile_build(build, start, inputs)
        out = out or build / ".tqdeploy" / "profile"
    else:
        from tqdeploy.profile.run import profile as run_profile

        result = run_profile(inputs, "log" if url is None else "running")
        out = out or Path("tqdeploy-profile")
    path = write_outputs(result, out, chart)
    emit(result, as_json)
    if not as_json:
        from tqdeploy.output import make_console

        make_console().print(f"wrote {path}")
    return 0


def register(app: typer.Typer) -> None:
    app.command("profile")(profile)
