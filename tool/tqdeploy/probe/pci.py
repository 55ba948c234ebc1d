"""PCIe link state, AER counters and ASPM from sysfs, for the GPUs NVML reported.

Roots are parameters so tests run against fake trees. Files read per device
(/sys/bus/pci/devices/<BDF>/): current_link_speed, current_link_width, max_link_speed,
max_link_width, aer_dev_correctable / aer_dev_nonfatal / aer_dev_fatal (present when the kernel
has AER for the device), link/l1_aspm (present on kernels >= 5.5 with ASPM control per device).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
AER_FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}
# PCIe transfer rate per lane -> generation (PCI-SIG: 2.5, 5, 8, 16, 32, 64 GT/s for gen 1..6)
GT_PER_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def sysfs_bdf(nvml_bus_id: str) -> str:
    """NVML's "00000000:00:06.0" -> sysfs "0000:00:06.0" (4-digit domain, lower case)."""
    return nvml_bus_id.lower()[-12:]


def speed_to_gen(speed: str | None) -> int | None:
    """ "32.0 GT/s PCIe" -> 5; None when unreadable."""
    if not speed:
        return None
    m = re.match(r"\s*([\d.]+)\s*GT/s", speed)
    return GT_PER_GEN.get(float(m.group(1))) if m else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def parse_aer(text: str) -> dict[str, int]:
    """aer_dev_* files: one "NAME COUNT" per line, with a TOTAL_ERR_* line at the end."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


def probe_pci_device(sys_root: Path, bdf: str) -> dict[str, Any]:
    dev = Path(sys_root) / "bus" / "pci" / "devices" / bdf
    if not dev.exists():
        return {"present": False}
    info: dict[str, Any] = {"present": True}
    for name in LINK_FILES:
        value = _read(dev / name)
        info[name] = int(value) if value is not None and name.endswith("width") and value.isdigit() else value
    info["current_gen"] = speed_to_gen(info.get("current_link_speed"))
    info["max_gen"] = speed_to_gen(info.get("max_link_speed"))
    aer: dict[str, dict[str, int]] = {}
    for kind, fname in AER_FILES.items():
        text = _read(dev / fname)
        if text is not None:
            aer[kind] = parse_aer(text)
    info["aer"] = aer or None  # None: the kernel exposes no AER counters for this device
    l1 = _read(dev / "link" / "l1_aspm")
    info["l1_aspm"] = None if l1 is None else l1 == "1"
    return info


def probe_aspm_policy(sys_root: Path) -> str | None:
    """The bracketed value of /sys/module/pcie_aspm/parameters/policy, e.g. "default"."""
    text = _read(Path(sys_root) / "module" / "pcie_aspm" / "parameters" / "policy")
    if text is None:
        return None
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text
