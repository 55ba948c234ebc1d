"""The TurboQuant data table (checks/turboquant.json): presets and version support, cited there."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tqdeploy.resources import data_dir


@lru_cache(maxsize=1)
def turboquant_table() -> dict[str, Any]:
    return json.loads((data_dir("checks") / "turboquant.json").read_text(encoding="utf-8"))


def presets() -> dict[str, dict[str, Any]]:
    return turboquant_table()["presets"]


def preset_for_bits(key_bits: int, value_bits: int) -> str | None:
    for name, p in presets().items():
        if p["key_bits"] == key_bits and p["value_bits"] == value_bits:
            return name
    return None
