"""`tqdeploy tune BUILD`: which KV-cache dtype is worth it on this host, measured (docs/tune.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.output import emit
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.interrupt import Interrupted, raising
from tqdeploy.tune.candidates import parse_dtypes
from tqdeploy.tune.goodput import Targets
from tqdeploy.tune.run import Options, context_for
from tqdeploy.tune.run import tune as run_tune
from tqdeploy.tune.workload import Workload, parse_sweep


def tune(
    build: Path = typer.Argument(Path("build"), help="Build folder whose model, flags and runtime are tuned."),
    dtypes: str | None = typer.Option(
        None, "--dtypes", help="KV dtypes to measure, e.g. auto,fp8 (default: auto, fp8 and every TurboQuant preset)."
    ),
    prompt_tokens: int = typer.Option(128, "--prompt-tokens", help="Prompt length of the workload, in tokens."),
    output_tokens: int = typer.Option(64, "--output-tokens", help="Output length of the workload, in tokens."),
    concurrency: str = typer.Option(
        "1,8,max", "--concurrency", help="Concurrency sweep; max = what the dtype's KV cache holds at --context."
    ),
    requests: int = typer.Option(32, "--requests", help="Requests per step (a step also ends at --step-seconds)."),
    step_seconds: float = typer.Option(30.0, "--step-seconds", help="Seconds per concurrency step at most."),
    context: int | None = typer.Option(
        None, "--context", help="Tokens one sequence needs, for capacity (default: the build's max_model_len)."
    ),
    max_concurrency: int = typer.Option(64, "--max-concurrency", help="The most a 'max' step may be."),
    ttft_p99: float | None = typer.Option(None, "--ttft-p99", help="Target: p99 time to first token, seconds."),
    itl_p99: float | None = typer.Option(None, "--itl-p99", help="Target: p99 inter-token latency, seconds."),
    check_timeout: float = typer.Option(60.0, "--check-timeout", help="Seconds for each dtype's answer check."),
    fresh: bool = typer.Option(False, "--fresh", help="Measure every dtype again (default: reuse stored results)."),
    apply: bool = typer.Option(
        False, "--apply", help="Write the recommended dtype into the build's spec and rebuild through the lock."
    ),
    chart: bool = typer.Option(True, "--chart/--no-chart", help="Write BUILD/.tqdeploy/tune/tune.png."),
    as_json: bool = options.as_json("tqdeploy.tune/1"),
) -> int:
    """Start each candidate KV dtype through the build's runtime, one at a time; measure capacity, goodput
    under your targets and answer quality; recommend one. Exit codes: 0 done, 1 an error finding, 2 bad input,
    130/143 interrupted by SIGINT/SIGTERM (nothing left running; what was measured is kept)."""
    if not build.is_dir():
        raise TQError(f"build directory {build} not found", "pass the directory `tqdeploy build --out` wrote")
    options.check_seconds("--check-timeout", check_timeout, example="60")
    for flag, value in (("--ttft-p99", ttft_p99), ("--itl-p99", itl_p99)):
        options.check_seconds(flag, value, most=3600, example="2")

    spec = load_deployment(build).spec
    workload = Workload(
        prompt_tokens,
        output_tokens,
        parse_sweep(concurrency),
        requests,
        step_seconds,
        context_for(spec, context),
        max_concurrency,
    )
    opts = Options(workload, Targets(ttft_p99, itl_p99), parse_dtypes(dtypes), check_timeout, fresh, chart, apply)

    try:
        with raising():  # SIGINT and SIGTERM: the candidate running now is stopped (tune/variant.py), then exit
            result = run_tune(build, opts)
    except Interrupted as sig:
        print(
            f"tqdeploy tune: interrupted by {sig.name}: stopped, nothing left running; results measured so far "
            "are kept and a re-run resumes",
            file=sys.stderr,
        )
        return sig.exit_code
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
