"""The process runtime's own section of state.json, state["backend"]: the vLLM python `up` ran."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tqdeploy.runtime.folderid import deployment_marker
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.statefields import Check, SectionState, path_text


@dataclass(frozen=True)
class ProcessState(SectionState):
    """state["backend"] of the process runtime: the interpreter `up` ran serve.sh's vLLM with."""

    python: str | None = None
    legacy_fields: ClassVar[frozenset[str]] = frozenset({"python"})  # written flat before the section existed
    checks: ClassVar[Mapping[str, Check]] = {"python": path_text}


def previous_python(record: StateRecord | None, build_dir: Path) -> str | None:
    """The interpreter this folder's own last `up` recorded (a copied state is another folder's: None)."""
    if record is None or record.marker != deployment_marker(build_dir):
        return None
    own = record.backend
    return own.python if isinstance(own, ProcessState) else None
