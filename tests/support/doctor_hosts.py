"""Host snapshots for the doctor tests: the converted H200 recording and degraded variants of it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

HOSTS = Path(__file__).resolve().parent.parent / "fixtures" / "hosts"
GIB = 1024**3


def h200() -> dict:
    return json.loads((HOSTS / "h200-1gpu.json").read_text())


def h200_live() -> dict:
    return json.loads((HOSTS / "h200-1gpu-live.json").read_text())


def two_gpus(data: dict, nvlink: bool) -> dict:
    """A second H200 beside the first; with nvlink, 18 active links between them (NV18)."""
    d = copy.deepcopy(data)
    g0 = d["gpus"][0]
    g1 = copy.deepcopy(g0)
    g1.update(index=1, uuid="GPU-second", pci_bus_id="00000000:00:07.0")
    d["pci"]["0000:00:07.0"] = copy.deepcopy(d["pci"]["0000:00:06.0"])
    if nvlink:
        g0["nvlinks"] = [{"link": i, "active": True, "version": 4, "remote": "00000000:00:07.0"} for i in range(18)]
        g1["nvlinks"] = [{"link": i, "active": True, "version": 4, "remote": "00000000:00:06.0"} for i in range(18)]
        g0["nvlink_error"] = g1["nvlink_error"] = ""
        d["topology"] = [{"a": 0, "b": 1, "level": "NV18", "nvlinks": 18, "p2p_read": "OK", "p2p_nvlink": "OK"}]
    else:
        d["topology"] = [
            {
                "a": 0,
                "b": 1,
                "level": "PHB",
                "nvlinks": 0,
                "p2p_read": "CHIPSET_NOT_SUPPORTED",
                "p2p_nvlink": "NOT_SUPPORTED",
            }
        ]
    d["gpus"].append(g1)
    return d


def variant(name: str) -> dict:
    """Degraded copies of the H200 recording, one fault each."""
    d = h200()
    g = d["gpus"][0]
    sysfs = d["pci"]["0000:00:06.0"]
    if name == "x8":
        g["pcie"]["width_cur"] = 8
        sysfs["current_link_width"] = 8
    elif name == "gen3":  # a gen-3 slot under a gen-5 GPU
        g["pcie"].update(gen_cur=3, gen_max=3)
        sysfs.update(current_link_speed="8.0 GT/s PCIe", max_link_speed="8.0 GT/s PCIe", current_gen=3, max_gen=3)
    elif name == "idle-gen1":
        g["pcie"]["gen_cur"] = 1
        sysfs.update(current_link_speed="2.5 GT/s PCIe", current_gen=1)
    elif name == "shm64":
        d["shm"] = {"path": "/dev/shm", "total_bytes": 64 * 1024**2, "free_bytes": 64 * 1024**2}
        d["container"] = {"in_container": True, "markers": ["/.dockerenv"]}
    elif name == "aspm-powersave":
        d["aspm_policy"] = "powersave"
    elif name == "old-driver":  # a CUDA 12.8 driver (570 branch) under vLLM's CUDA 13.0 build
        d["driver"].update(version="570.86.15", cuda_driver=12080)
    elif name == "busy":
        g["memory_used"] = 40 * GIB
        g["processes"] = [{"pid": 4242, "used_memory": 40 * GIB}]
    elif name == "busy-small":
        g["processes"] = [{"pid": 4242, "used_memory": 512 * 1024**2}]
    elif name == "ecc-pending":
        g["remapped_rows"]["pending"] = 1
    elif name == "mig-on":
        g["mig_mode"] = [1, 1]
    elif name == "no-driver":
        d["driver"] = {"present": False, "error": "NVMLError_LibraryNotFound: NVML Shared Library Not Found"}
        d["gpus"], d["topology"], d["pci"] = [], [], {}
        d["probe_errors"] = {"nvml": "NoDriver: NVMLError_LibraryNotFound: NVML Shared Library Not Found"}
    else:
        raise KeyError(name)
    return d
