"""Lookups in checks/cuda_compat.json: the CUDA of a vLLM build and the minimum driver for a CUDA major."""

from __future__ import annotations

import functools
import json
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from tqdeploy.resources import data_dir


@functools.cache
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((data_dir("checks") / "cuda_compat.json").read_text(encoding="utf-8"))
    return data


def cuda_tuple(text: str) -> tuple[int, int]:
    major, _, minor = str(text).partition(".")
    return int(major), int(minor or 0)


def driver_cuda_str(value: int | None) -> str | None:
    """NVML's integer (13000 = 13.0, 12090 = 12.9) as "major.minor"."""
    if value is None:
        return None
    return f"{int(value) // 1000}.{(int(value) % 1000) // 10}"


def build_cuda(vllm_version: str | None, override: str | None = None) -> tuple[str | None, str]:
    """(CUDA of the default build of this vLLM release, where that came from)."""
    if override:
        return str(override), "given by the operator"
    if not vllm_version:
        return None, "no vLLM version given"

    try:
        v = Version(vllm_version)
    except InvalidVersion:
        return None, f"not a version: {vllm_version}"
    for entry in table()["vllm_builds"]:
        if v in SpecifierSet(entry["vllm"]):
            return entry["default_cuda"], f"checks/cuda_compat.json ({entry['vllm']})"
    return None, "not in checks/cuda_compat.json"


def variants_for(vllm_version: str | None) -> dict[str, str]:
    try:
        v = Version(vllm_version or "")
    except InvalidVersion:
        return {}
    for entry in table()["vllm_builds"]:
        if v in SpecifierSet(entry["vllm"]):
            return dict(entry.get("variants", {}))
    return {}


def min_driver_for(cuda: str) -> str | None:
    entry = table()["driver_minimum_by_cuda_major"].get(str(cuda_tuple(cuda)[0]))
    return entry["linux_driver_min"] if entry else None
