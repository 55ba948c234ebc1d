"""GPU names -> memory and compute capability (checks/gpus.json: only figures read from a real device)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tqdeploy.errors import TQError


@lru_cache(maxsize=1)
def gpu_catalog() -> dict[str, dict[str, Any]]:
    from tqdeploy.resources import data_dir

    return json.loads((data_dir("checks") / "gpus.json").read_text(encoding="utf-8"))["gpus"]


def gpu_by_name(name: str) -> dict[str, Any]:
    """Catalog entry for "H200" or "NVIDIA H200" (case-insensitive)."""
    wanted = name.strip().lower().removeprefix("nvidia ").strip()
    for key, entry in gpu_catalog().items():
        if wanted in (key.lower(), entry["name"].lower().removeprefix("nvidia ").strip()):
            return dict(entry, key=key)
    raise TQError(
        f"no GPU named {name!r} in tqdeploy's catalog (checks/gpus.json)",
        f"use one of {', '.join(gpu_catalog())}, or pass --snapshot FILE recorded on the host",
    )
