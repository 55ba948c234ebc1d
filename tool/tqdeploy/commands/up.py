"""`tqdeploy up`: start what `tqdeploy build` rendered and wait until it serves."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import typer

from tqdeploy.answers.result import CheckResult
from tqdeploy.answers.run import run_check
from tqdeploy.answers.target import for_build
from tqdeploy.commands import options
from tqdeploy.doctor import run_doctor
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.output import emit
from tqdeploy.runtime import registry
from tqdeploy.runtime import up as start
from tqdeploy.runtime.callerenv import help_text  # the standard library and findings only: --help stays instant
from tqdeploy.runtime.progress import ProgressLine

# The blue-green group (--replace and what it needs), apart so that `up`'s signature stays readable.
REPLACE = typer.Option(
    None, "--replace", help="Blue-green: take over from this running build dir behind nginx, then stop it."
)
NGINX_CONF = typer.Option(
    None, "--nginx-conf", help="--replace: the nginx.conf nginx includes (default: the old build's nginx.conf)."
)
NGINX_PID = typer.Option(
    Path("/run/nginx.pid"),
    "--nginx-pid",
    help="--replace: nginx's pid file; its pid is signalled only when it is the nginx master that wrote it and "
    "includes the conf.",
)
DRAIN_TIMEOUT = typer.Option(60.0, "--drain-timeout", help="--replace: seconds to let old requests end.")


def up(
    build_dir: Path = typer.Argument(Path("build"), help="Build directory `tqdeploy build` wrote."),
    runtime: str = typer.Option("process", "--runtime", help="The runtime: " + " | ".join(registry.names()) + "."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait until ready (default) or return once started."),
    timeout: float = typer.Option(900.0, "--timeout", help="Seconds to wait for ready in all."),
    stall_timeout: float = typer.Option(300.0, "--stall-timeout", help="Fail when no log line came for this long."),
    force: bool = typer.Option(False, "--force", help="Start despite doctor errors or a build that drifted."),
    python: str | None = typer.Option(
        None, "--python", help="Python that has vLLM (default: $TQDEPLOY_VLLM_PYTHON, else python3 on PATH)."
    ),
    image: str | None = typer.Option(None, "--image", help="docker runtime: image to run (default: the lock's tag)."),
    replace: Path | None = REPLACE,
    nginx_conf: Path | None = NGINX_CONF,
    nginx_pid: Path = NGINX_PID,
    drain_timeout: float = DRAIN_TIMEOUT,
    check: bool = typer.Option(
        True, "--check/--no-check", help="After ready, check the answers (tqdeploy check); a failure exits 1."
    ),
    check_timeout: float = typer.Option(30.0, "--check-timeout", help="Seconds for the answer check in all."),
    as_json: bool = options.as_json("tqdeploy.up/1"),
) -> int:
    """Start the deployment in BUILD_DIR, wait for /health and /v1/models, classify a failed start, then check its
    answers (docs/answers.md). A failed check leaves the server running for inspection, not ready: exit 1."""

    _check_runtime(runtime, image)
    seconds = {"--timeout": timeout, "--stall-timeout": stall_timeout, "--drain-timeout": drain_timeout}
    for name, value in (seconds | {"--check-timeout": check_timeout}).items():
        options.check_seconds(name, value, example="600")
    # On stderr; with --json only on a terminal, so a captured stderr holds errors, not progress lines.
    with ProgressLine(enabled=not as_json or sys.stderr.isatty()) as progress:
        result = start(
            build_dir,
            python=python,
            wait=wait,
            timeout=timeout,
            stall_timeout=stall_timeout,
            force=force,
            on_progress=progress.update,
            on_doctor=progress.note,
            doctor=_doctor_findings,
            runtime=runtime,
            image=image,
            replace=replace,
            nginx_conf=nginx_conf,
            nginx_pid=nginx_pid,
            drain_timeout=drain_timeout,
            answer_check=partial(_answer_check, timeout=check_timeout) if check and wait else None,
        )
    emit(result, as_json)
    if result.interrupted_by:  # one line on stderr also with --json: why it stopped and what it stopped
        print(
            f"tqdeploy up: interrupted by {result.interrupted_by}: stopped {len(result.stopped)} process(es) "
            f"of {result.build_dir}, as `tqdeploy down` does",
            file=sys.stderr,
        )
    return result.exit_code


def _doctor_findings(vllm_version: str, serving: Mapping[str, Any]) -> list[Finding]:
    """The pre-flight's doctor (offline) on the build's settings: passed into runtime, which stands below doctor in
    the layers."""

    return run_doctor(vllm_version=vllm_version, offline=True, serving=dict(serving)).findings


def _answer_check(build_dir: Path, *, timeout: float) -> CheckResult:
    """`tqdeploy check BUILD` on the fresh server: passed into runtime, which stands below answers in the layers."""

    return run_check(for_build(build_dir, None, None, None), budget=timeout)


def _check_runtime(runtime: str, image: str | None) -> None:
    """--runtime names a registered runtime (runtime/registry.py), and --image one that takes an image."""

    names = registry.names()
    if runtime not in names:
        raise TQError(f"--runtime {runtime!r} is not a runtime", "use " + " or ".join(f"--runtime {n}" for n in names))
    if image and "image" not in registry.runtime_class(runtime).start_options:
        takers = [n for n in names if "image" in registry.runtime_class(n).start_options]
        add = " or ".join(f"--runtime {n}" for n in takers)
        raise TQError(f"--image is for the {' / '.join(takers)} runtime", f"add {add}, or drop --image")


def register(app: typer.Typer) -> None:

    app.command("up", help=f"{up.__doc__}\n\n{help_text()}")(up)
