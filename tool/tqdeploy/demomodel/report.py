"""The result of `tqdeploy demo-model`: where the checkpoint is, what it was made from, one human and one JSON form."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.demomodel import facts
from tqdeploy.demomodel.facts import source_record

if TYPE_CHECKING:  # rich is loaded where the view is drawn
    from rich.console import Console

SCHEMA = "tqdeploy.demo-model/1"


@dataclass(frozen=True)
class DemoModelResult:
    path: Path  # the verified checkpoint in the per-machine cache
    copied_to: Path | None
    action: str  # "copied", "up to date", or "" without --to
    size_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "path": str(self.path),
            "to": str(self.copied_to) if self.copied_to else None,
            "action": self.action or None,
            "served_name": facts.SERVED_NAME,
            "size_bytes": self.size_bytes,
            "converter_version": facts.CONVERTER_VERSION,
            "source": source_record(),
        }

    def render(self, console: Console) -> None:
        from rich.markup import escape

        src = f"{facts.PACKAGE} {facts.VERSION} ({facts.GGUF_MEMBER}, sha256 {facts.GGUF_SHA256[:12]}…)"
        console.print(f"demo model: {escape(str(self.path))} ({self.size_bytes / 1e6:.0f} MB, bf16, verified)")
        console.print(f"  from {src}, {facts.LICENSE}")
        if self.copied_to is not None:
            console.print(f"  {self.action}: {escape(str(self.copied_to))}")
