"""The TurboQuant data table (checks/turboquant.json): presets and version support, cited there."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from packaging.version import InvalidVersion, Version

from tqdeploy.resources import data_dir


@lru_cache(maxsize=1)
def turboquant_table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads((data_dir("checks") / "turboquant.json").read_text(encoding="utf-8"))
    return table


def presets() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = turboquant_table()["presets"]
    return found


def preset_for_bits(key_bits: int, value_bits: int) -> str | None:
    for name, p in presets().items():
        if p["key_bits"] == key_bits and p["value_bits"] == value_bits:
            return name
    return None


def known_bad(rule_id: str) -> dict[str, Any]:
    """The checks/turboquant.json known_bad entry a rule (TQ321, TQ348, TQ349) stands on: its release range,
    symptom, measurement and source."""
    return next(b for b in turboquant_table()["known_bad"] if b.get("rule") == rule_id)


def in_release_range(entry: dict[str, Any], vllm_version: str) -> bool:
    """Whether a known_bad entry applies to a release: from the first release it was seen (measured or read) in,
    up to a release where a fix was verified (none verified: every later release, as an unverified fix is no fix)."""
    try:
        v = Version(vllm_version)
    except InvalidVersion:
        return True  # an unknown release: the rule's claim is not ruled out
    fixed = entry.get("verified_fixed_in")
    return v >= Version(entry["from_version"]) and (fixed is None or v < Version(fixed))
