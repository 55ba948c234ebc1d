"""GPU names -> memory and compute capability (checks/gpus.json: only figures read from a real device, each
with where it was read).

A name matches an entry's key, its NVML name (with or without "NVIDIA "), or one of its aliases, ignoring
case, spaces, '-' and '_'. A family name that several entries share (H100: SXM, NVL and PCIe) is refused with the
choices, not answered with the first one or with an unrelated GPU.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.resources import data_dir
from tqdeploy.suggest import closest

# Families whose members differ in memory; what a bare family name could mean, for the message.
NOT_LISTED = {"A100": "A100 PCIe 40GB", "H200NVL": "H200 NVL"}


@lru_cache(maxsize=1)
def gpu_catalog() -> dict[str, dict[str, Any]]:
    text = (data_dir("checks") / "gpus.json").read_text(encoding="utf-8")
    catalog: dict[str, dict[str, Any]] = json.loads(text)["gpus"]
    return catalog


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.strip().lower().removeprefix("nvidia ").removeprefix("geforce "))


def _names(key: str, entry: dict[str, Any]) -> set[str]:
    return {_norm(n) for n in (key, entry["name"], *entry.get("aliases", ()))}


def gpu_by_name(name: str) -> dict[str, Any]:
    """Catalog entry for "H200", "NVIDIA H200", "h100-sxm" or "RTX 4090"."""
    wanted = _norm(name)
    catalog = gpu_catalog()
    for key, entry in catalog.items():
        if wanted and wanted in _names(key, entry):
            return dict(entry, key=key)
    family = [key for key, entry in catalog.items() if wanted and any(n.startswith(wanted) for n in _names(key, entry))]
    missing = NOT_LISTED.get(wanted.upper())
    listed = ", ".join(f"{k} ({catalog[k]['memory_bytes'] / (1 << 30):.1f} GiB)" for k in family)
    not_here = f"{missing} is not in the catalog (no device reading to cite)" if missing else ""
    if len(family) > 1 or (family and missing):
        raise TQError(
            f"{name!r} is more than one GPU: the catalog has {listed}" + (f"; {not_here}" if missing else ""),
            f"pass --gpu {family[0]} (or another of those)" + (", or --snapshot FILE for another" if missing else ""),
        )
    snapshot_hint = "pass --snapshot FILE recorded on the host (tqdeploy doctor --snapshot-out)"
    if missing:
        raise TQError(f"{name!r}: {not_here}", snapshot_hint)

    near = closest(name.strip(), list(catalog))
    raise TQError(
        f"no GPU named {name!r} in tqdeploy's catalog (checks/gpus.json: GPUs read on a real device)",
        (f"did you mean {near}? " if near else "") + f"the catalog has {', '.join(catalog)}; else {snapshot_hint}",
    )
