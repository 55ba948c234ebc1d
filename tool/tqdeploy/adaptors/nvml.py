"""NVML (nvidia-ml-py, module pynvml) behind one module: the only importer of the SDK, when a probe asks.

The SDK itself is the adapter probe/nvml.py calls through (NVML's C names: nvmlInit, nvmlDeviceGetCount...),
so tests hand the probe a stand-in with the same names instead."""

from __future__ import annotations

from types import ModuleType
from typing import cast


def load() -> ModuleType:
    """The pynvml module; ImportError when nvidia-ml-py is not installed (the caller says so in words)."""
    import pynvml

    return cast(ModuleType, pynvml)  # nvidia-ml-py ships no types: the module as what it is
