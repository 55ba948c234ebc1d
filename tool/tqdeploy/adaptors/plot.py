"""matplotlib behind one module: the only importer of the SDK, when a command draws its PNG (profile, tune)."""

from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend: files only, no display (a server has none)."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot's import: it picks its backend then
    import matplotlib.pyplot as plt

    return plt
