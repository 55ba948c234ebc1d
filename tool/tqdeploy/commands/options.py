"""CLI options that several commands take, defined once: the same flag names, types and wording everywhere.

Each factory returns a ``typer.Option`` to use as a parameter default; a command passes only what is its own
(what the option is for in that command). Typer is the only import, so `tqdeploy --help` stays fast. This
module is not a command: it has no ``register`` and cli.py skips it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

MODEL_REF = "DIR or REPO@REV"


def model(purpose: str = "Checkpoint", *, required: bool = False, short: bool = False) -> Any:
    """--model: a checkpoint folder or a Hub repository at a revision."""
    names = ("--model", "-m") if short else ("--model",)
    return typer.Option(... if required else None, *names, help=f"{purpose}: {MODEL_REF}.")


def snapshot(purpose: str = "Host snapshot (tqdeploy doctor --snapshot-out)") -> Any:
    """--snapshot: a host snapshot JSON written by `tqdeploy doctor --snapshot-out`."""
    return typer.Option(None, "--snapshot", help=f"{purpose}.")


def as_json(schema: str | None = None, what: str = "the result", note: str = "") -> Any:
    """--json: the command's result as JSON on stdout (its schema named when it has one)."""
    text = f"Print {what} as JSON" + (f" (schema {schema})" if schema else "") + "."
    return typer.Option(False, "--json", help=f"{text} {note}".strip())


def vllm_version(default: str = "tqdeploy's pinned release") -> Any:
    """--vllm-version: the vLLM release whose flags and facts apply."""
    return typer.Option(None, "--vllm-version", help=f"vLLM release to check against (default: {default}).")


def tensor_parallel_size(purpose: str) -> Any:
    return typer.Option(None, "--tp", "--tensor-parallel-size", min=1, help=purpose)


def max_model_len(purpose: str) -> Any:
    return typer.Option(None, "--max-model-len", min=1, help=purpose)


def script_file(purpose: str) -> Any:
    """--file/-f: a shell script whose vLLM command is linted."""
    return typer.Option(None, "--file", "-f", help=purpose)


def offline(purpose: str) -> Any:
    return typer.Option(False, "--offline", help=purpose)


def out_path(purpose: str, default: Path | None = None) -> Any:
    return typer.Option(default, "--out", "-o", help=purpose)
