"""GPU-to-GPU topology for tensor parallelism: common ancestor level and P2P status per pair.

NVML answers with constants (nvml.h): NVML_TOPOLOGY_INTERNAL 0 (two GPUs on one board), SINGLE 10 (PIX),
MULTIPLE 20 (PXB), HOSTBRIDGE 30 (PHB), NODE 40, SYSTEM 50 (SYS). NVLink-connected pairs are reported as NV#, the
number of active links between the two, as ``nvidia-smi topo -m`` does.
"""

from __future__ import annotations

from typing import Any

from tqdeploy.probe.nvml import NVMLAdapter
from tqdeploy.snapshot import GPU

LEVEL_NAMES = {0: "INTERNAL", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PStatus_t (nvml.h)
P2P_STATUS = {
    0: "OK",
    1: "CHIPSET_NOT_SUPPORTED",
    2: "GPU_NOT_SUPPORTED",
    3: "IOH_TOPOLOGY_NOT_SUPPORTED",
    4: "DISABLED_BY_REGKEY",
    5: "NOT_SUPPORTED",
    6: "UNKNOWN",
}
P2P_CAPS_INDEX_READ = 0  # NVML_P2P_CAPS_INDEX_READ
P2P_CAPS_INDEX_NVLINK = 2  # NVML_P2P_CAPS_INDEX_NVLINK


def _norm_bus(bus_id: str) -> str:
    """NVML bus ids carry an 8-digit domain ("00000000:00:06.0"); compare on the last 12 chars."""
    return bus_id.lower()[-12:]


def probe_topology(nv: NVMLAdapter, handles: list[Any], gpus: list[GPU]) -> list[dict[str, Any]]:
    pairs: list[dict[str, Any]] = []
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            pair: dict[str, Any] = {"a": a, "b": b}
            if handles[a] is None or handles[b] is None:  # a GPU NVML could not open (see its field_errors)
                pairs.append(
                    pair
                    | {
                        "level": None,
                        "nvlinks": 0,
                        "p2p_read": None,
                        "p2p_nvlink": None,
                        "error": "GPU not accessible through NVML",
                    }
                )
                continue
            try:
                level = int(nv.nvmlDeviceGetTopologyCommonAncestor(handles[a], handles[b]))
                pair["level"] = LEVEL_NAMES.get(level, str(level))
            except Exception as exc:
                pair["level"] = None
                pair["error"] = f"{type(exc).__name__}: {exc}"
            nvlinks = sum(
                1
                for link in gpus[a].nvlinks
                if link.get("active")
                and link.get("remote")
                and _norm_bus(link["remote"]) == _norm_bus(gpus[b].pci_bus_id)
            )
            if nvlinks:
                pair["level"] = f"NV{nvlinks}"
            pair["nvlinks"] = nvlinks
            for key, idx in (("p2p_read", P2P_CAPS_INDEX_READ), ("p2p_nvlink", P2P_CAPS_INDEX_NVLINK)):
                try:
                    pair[key] = P2P_STATUS.get(int(nv.nvmlDeviceGetP2PStatus(handles[a], handles[b], idx)), "UNKNOWN")
                except Exception as exc:
                    pair[key] = f"{type(exc).__name__}: {exc}"
            pairs.append(pair)
    return pairs
