"""`tqdeploy init`: write a commented tqdeploy.toml from the detected host and model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tqdeploy import probe
from tqdeploy.bundle.replay import load_host_snapshot
from tqdeploy.commands import options
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.output import emit
from tqdeploy.plan.init_spec import make_init_text, write_init

if TYPE_CHECKING:
    from rich.console import Console


class InitResult:
    def __init__(self, out: Path, notes: dict[str, str], text: str):
        self.out, self.notes, self.text = out, notes, text

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "tqdeploy.init/1", "out": str(self.out), "chosen": self.notes}

    def render(self, console: Console) -> None:
        console.print(f"wrote {self.out}", soft_wrap=True)
        for key, why in sorted(self.notes.items()):
            console.print(f"  {key}: {why}", soft_wrap=True)
        console.print(f"next: review it, then `tqdeploy build {self.out}`", soft_wrap=True)


def init(
    model: str | None = options.model("Checkpoint to read defaults from", short=True),
    out: Path = typer.Option(Path(SPEC_FILE_NAME), "--out", "-o", help="Spec file to write."),
    name: str | None = typer.Option(None, "--name", help="Deployment name (default: from the model)."),
    embedded: str = typer.Option("qwen36-27b-tq", "--from", help="Embedded spec to start from."),
    snapshot: Path | None = options.snapshot("instead of probing this host"),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not look at this host's GPUs."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    as_json: bool = options.as_json(),
) -> int:
    """Write a commented deployment spec (defaults from the model's config and this host)."""
    host = None
    if snapshot is not None:
        host = load_host_snapshot(snapshot)
    elif not no_probe:
        host = probe.collect(offline=True)
    text, notes = make_init_text(model=model, snapshot=host, name=name, embedded=embedded)
    write_init(out, text, force)
    emit(InitResult(out, notes, text), as_json)
    return 0


def register(app: typer.Typer) -> None:
    app.command("init")(init)
