"""jinja2 behind one module: the only importer of the SDK, when a build renders (render/env.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for annotations only: the SDK itself loads in sandbox_classes, when a build renders
    from jinja2.sandbox import SandboxedEnvironment as SandboxedEnvironment


def sandbox_classes() -> tuple[Any, Any, Any]:
    """(SandboxedEnvironment, FileSystemLoader, StrictUndefined): what render/env.py builds its environment of."""
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment, FileSystemLoader, StrictUndefined
