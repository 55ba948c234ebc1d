"""CLI options that several commands take, defined once: the same flag names, types and wording everywhere.

Each factory returns a ``typer.Option`` to use as a parameter default; a command passes only what is its own
(what the option is for there). This module is not a command: it has no line in cli.COMMANDS.
"""

from __future__ import annotations

import math
from typing import Any

import typer

from tqdeploy.errors import TQError
from tqdeploy.suggest import use_hint

MODEL_REF = "DIR or REPO@REV"
SNAPSHOT = "Host snapshot (tqdeploy doctor --snapshot-out)"


def model(purpose: str = "Checkpoint", *, note: str = "", required: bool = False, short: bool = False) -> Any:
    """--model: a checkpoint folder or a Hub repository at a revision."""
    names = ("--model", "-m") if short else ("--model",)
    text = f"{purpose}: {MODEL_REF}" + (f" ({note})" if note else "") + "."
    return typer.Option(... if required else None, *names, help=text)


def snapshot(use: str = "") -> Any:
    """--snapshot: a host snapshot JSON written by `tqdeploy doctor --snapshot-out`, instead of this host."""
    return typer.Option(None, "--snapshot", help=f"{SNAPSHOT} {use}".rstrip() + ".")


def as_json(schema: str = "", *, what: str = "the result", note: str = "") -> Any:
    """--json: the command's result as JSON on stdout, with its schema named when it has one."""
    text = f"Print {what} as JSON" + (f" (schema {schema})" if schema else "") + (f"; {note}" if note else "")
    return typer.Option(False, "--json", help=text + ".")


def vllm_version(purpose: str = "vLLM release to check against", default: str = "tqdeploy's pinned release") -> Any:
    """--vllm-version: the vLLM release whose flags, formulas and facts apply."""
    return typer.Option(None, "--vllm-version", help=f"{purpose} (default: {default}).")


def tensor_parallel_size(purpose: str, *, minimum: int | None = 1) -> Any:
    """--tp/--tensor-parallel-size (vLLM's own spelling is the long one)."""
    return typer.Option(None, "--tp", "--tensor-parallel-size", min=minimum, help=purpose)


def max_model_len(purpose: str, *, minimum: int | None = 1) -> Any:
    return typer.Option(None, "--max-model-len", min=minimum, help=purpose)


def api_key_file(default: str) -> Any:
    """--api-key-file: the file holding a deployment's API key (read bounded, sent only to its origin)."""
    return typer.Option(None, "--api-key-file", help=f"File holding the API key (default: {default}).")


def served_model_name(use: str, default: str) -> Any:
    """--served-model-name: vLLM's own flag name for the name a server serves its model under."""
    return typer.Option(None, "--served-model-name", help=f"{use} (default: {default}).")


def script_file(purpose: str) -> Any:
    """--file: a shell script that holds the vLLM command.

    No short form: `-f` is `logs --follow` (tail, docker logs, kubectl logs, journalctl), one meaning only."""
    return typer.Option(None, "--file", help=purpose)


WEEK_S = 7 * 86_400.0  # the longest wait any command takes: beyond it a number is a typo, and inf overflows


def check_seconds(flag: str, value: float | None, *, most: float = WEEK_S, example: str = "60") -> None:
    """A duration option must be a finite number of seconds above 0 and at most ``most``.

    `nan` passes every `> 0` test and `inf` overflows time_t in a deadline (an internal error once): both are
    refused here with one line, before anything runs. None (the option not given) passes.
    """
    if value is None:
        return
    if not math.isfinite(value) or not 0 < value <= most:
        raise TQError(
            f"{flag} {value:g} is not a number of seconds above 0 and at most {most:.0f}",
            f"pass {flag} in seconds, e.g. {flag} {example}",
        )


FAIL_ON = ("error", "warn")


def _check_fail_on(value: str) -> str:
    if value not in FAIL_ON:
        err = typer.BadParameter(f"{value!r} is not one of {', '.join(FAIL_ON)}")
        err.remediation = use_hint(value, FAIL_ON)  # type: ignore[attr-defined]  # clihelp.usage_error shows it
        raise err
    return value


def fail_on(what: str = "findings") -> Any:
    """--fail-on: the lowest severity that makes the exit code 1 (doctor, lint)."""
    return typer.Option(
        "error", "--fail-on", callback=_check_fail_on, help=f"Exit 1 on {what} at or above: error | warn."
    )
